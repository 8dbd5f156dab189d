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
