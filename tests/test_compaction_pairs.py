"""Compaction never splits a tool exchange: a pinned call or result keeps its other half."""

from __future__ import annotations

import pytest

import ctxpack
from ctxpack.editing import Compactor


def _history(pinned: str) -> list[dict[str, object]]:
    history: list[dict[str, object]] = [
        {"role": "system", "content": "You are an agent.", "id": "sys"},
        {"role": "user", "content": "Fix the bug. Never delete files.", "id": "u0"},
    ]
    for k in range(6):
        call = {"id": f"c{k}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        history.append({"role": "assistant", "content": None, "tool_calls": [call], "id": f"a{k}"})
        history.append(
            {"role": "tool", "tool_call_id": f"c{k}", "content": "word " * 12_000, "id": f"t{k}"}
        )
    history += [
        {"role": "assistant", "content": "done", "id": "fin"},
        {"role": "user", "content": "next", "id": "u1"},
    ]
    for message in history:
        if message["id"] == pinned:
            message["pinned"] = True
    return history


@pytest.mark.parametrize("pinned", ["t1", "a1"])
def test_a_pinned_half_of_a_tool_exchange_keeps_the_other(pinned: str) -> None:
    compactor = Compactor(trigger=50_000, keep_recent=2)
    result = ctxpack.pack(
        _history(pinned), budget=1_000_000, pipeline=ctxpack.Pipeline([compactor])
    )
    ids = [m.id for m in result.messages]
    assert ids[:4] == ["sys", "u0", "a1", "t1"]
    assert ids[4].startswith("summary-") and "a0" not in ids and "t2" not in ids
    summary_of = result.messages[4].metadata["ctxpack"]["summary_of"]
    assert "a1" not in summary_of and "t1" not in summary_of
    calls = {c.id for m in result.messages for c in m.tool_calls or ()}
    answered = {m.tool_call_id for m in result.messages if m.role == "tool"}
    assert calls == answered


def _agent_step(k: int, pin: str | None) -> list[dict[str, object]]:
    call = {"id": f"c{k}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    output = "\n".join(f"probe {k} row {j}: value_{k}_{j}" for j in range(25))
    step: list[dict[str, object]] = [
        {"role": "assistant", "content": f"step {k}", "tool_calls": [call], "id": f"a{k}"},
        {"role": "tool", "tool_call_id": f"c{k}", "content": output, "id": f"t{k}"},
    ]
    for message in step:
        message["pinned"] = message["id"] == pin
    return step


@pytest.mark.parametrize("pinned", ["t1", "a1", None])
@pytest.mark.parametrize("keep_recent", [1, 2, 3, 6])
def test_the_managed_window_keeps_a_pinned_half_with_its_exchange(
    pinned: str | None, keep_recent: int
) -> None:
    # The window kept a pinned t1 out of the summary but summarised its call a1: the session's
    # guard then dropped t1 from every request as an orphan (a pinned call lost its calls the
    # same way), so what the caller pinned was neither sent nor summarised.
    from ctxpack.managed import WindowPolicy

    window = WindowPolicy(window=8_000, keep_recent=keep_recent)
    counter = ctxpack.get_counter(counter="cl100k_base")
    session = ctxpack.Session(counter=counter, filters=False, window=window)
    session.extend(_history("none")[:2])
    for k in range(40):
        result = session.render()
        sent = result.to_openai()
        calls = {c["id"] for m in sent for c in m.get("tool_calls") or ()}
        assert calls == {m["tool_call_id"] for m in sent if m["role"] == "tool"}, k
        if pinned is not None and k > 1:
            kept = next(m for m in result.messages if m.id == pinned)
            assert kept.text == session.transcript()[2 + 2 * 1 + (pinned == "t1")].text
            assert kept.tool_calls or pinned == "t1"
        session.extend(_agent_step(k, pinned))
    assert session.window_state.compacted
    assert pinned not in session.window_state.compacted
    ctxpack.adapters.validate_anthropic(result.to_anthropic())
