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


# Programmatic tool calling: the code a server tool runs calls a client tool, so the server
# tool's call and its result are two assistant turns apart, the client tool's exchange between.
def _code_run(k: int, big: int) -> list[dict[str, object]]:
    run = f"srvtoolu_{k}"
    caller = {"type": "code_execution_20250825", "tool_id": run}
    result = {"type": "code_execution_result", "stdout": f"{k} C", "stderr": "", "return_code": 0}
    return [
        {"role": "user", "content": f"Question {k}. " + "lorem ipsum dolor " * big},
        {
            "role": "assistant",
            "content": [
                {"type": "server_tool_use", "id": run, "name": "code_execution", "input": {}},
                {
                    "type": "tool_use",
                    "id": f"toolu_{k}",
                    "name": "f",
                    "input": {},
                    "caller": caller,
                },
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": "3 C"}],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "code_execution_tool_result", "tool_use_id": run, "content": result},
                {"type": "text", "text": f"It is {k} C. " + "sit amet " * big},
            ],
        },
    ]


def _server_pairs(payload: object) -> tuple[list[str], list[str]]:
    blocks = [
        b
        for m in payload["messages"]  # type: ignore[index]
        if isinstance(m["content"], list)
        for b in m["content"]
    ]
    uses = [b["id"] for b in blocks if b["type"] == "server_tool_use"]
    results = [b["tool_use_id"] for b in blocks if b["type"] == "code_execution_tool_result"]
    return uses, results


@pytest.mark.parametrize("keep_recent", range(6))
def test_compaction_keeps_a_server_tools_call_with_its_result_turns_later(
    keep_recent: int,
) -> None:
    """A tail opening on the code_execution_tool_result (keep_recent 0 and 2) summarised its
    server_tool_use: the request sent the result alone, which the API refuses."""
    history = [m for k in range(6) for m in _code_run(k, 2_500)]
    history.append({"role": "user", "content": "And Paris?"})
    compactor = Compactor(trigger=50_000, keep_recent=keep_recent, summarizer=lambda m, i: "S")
    messages = ctxpack.from_anthropic(history)
    result = ctxpack.pack(messages, budget=1_000_000, pipeline=ctxpack.Pipeline([compactor]))
    assert any(d.stage == "compact" for d in result.decisions)
    payload = result.to_anthropic()
    uses, results = _server_pairs(payload)
    assert uses == results
    ctxpack.adapters.validate_anthropic(payload)


def test_compaction_keeps_a_server_tools_call_still_waiting_for_its_result() -> None:
    """While the code runs (its client tool answered, its result still to come), the call
    stays in the tail: the next turn brings its result."""
    history = [m for k in range(5) for m in _code_run(k, 4_000)][:-1]
    compactor = Compactor(trigger=50_000, keep_recent=0, summarizer=lambda m, i: "S")
    messages = ctxpack.from_anthropic(history)
    result = ctxpack.pack(messages, budget=1_000_000, pipeline=ctxpack.Pipeline([compactor]))
    assert any(d.stage == "compact" for d in result.decisions)
    assert _server_pairs(result.to_anthropic())[0] == ["srvtoolu_4"]


def test_a_pinned_server_tool_result_keeps_its_call() -> None:
    history = [m for k in range(6) for m in _code_run(k, 2_500)]
    history.append({"role": "user", "content": "And Paris?"})
    messages = ctxpack.from_anthropic(history)
    messages[7] = messages[7].model_copy(update={"pinned": True})  # srvtoolu_1's result
    compactor = Compactor(trigger=50_000, keep_recent=2, summarizer=lambda m, i: "S")
    result = ctxpack.pack(messages, budget=1_000_000, pipeline=ctxpack.Pipeline([compactor]))
    payload = result.to_anthropic()
    uses, results = _server_pairs(payload)
    assert "srvtoolu_1" in results and uses == results
    ctxpack.adapters.validate_anthropic(payload)


@pytest.mark.parametrize("keep_recent", [1, 2, 3, 6])
def test_the_managed_window_keeps_a_server_tools_call_with_its_result(keep_recent: int) -> None:
    """A window that opened its tail on a code_execution_tool_result (keep_recent 2 and more)
    summarised its server_tool_use: every request after sent the result alone."""
    from ctxpack.managed import WindowPolicy

    window = WindowPolicy(window=8_000, keep_recent=keep_recent)
    session = ctxpack.Session(counter="cl100k_base", filters=False, window=window)
    for k in range(24):
        for message in _code_run(k, 60):
            session.append(message)
            if message["role"] == "user":
                payload = session.render().to_anthropic()
                uses, results = _server_pairs(payload)
                # The last call may still wait for its result: the next turn brings it.
                assert results == uses or results == uses[:-1], (k, message)
                ctxpack.adapters.validate_anthropic(payload)
    assert session.window_state.compacted
