"""Responses API items of a turn that says something and calls tools: its reasoning, its
message and its calls read as one assistant message, kept or dropped together and written
back with their ids."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

import ctxpack
from ctxpack import Session
from ctxpack.adapters import from_openai, to_openai, validate_openai

openai_responses = pytest.importorskip("openai.types.responses")
ITEM = pydantic.TypeAdapter(openai_responses.ResponseInputItemParam)

Item = dict[str, Any]
USER: Item = {"role": "user", "content": "Fix the ledger tests."}
REASONING: Item = {"type": "reasoning", "id": "rs_1", "summary": []}
SAYS: Item = {
    "type": "message",
    "role": "assistant",
    "id": "msg_1",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Reading the ledger.", "annotations": []}],
}
READ: Item = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "read",
    "arguments": '{"path": "ledger.py"}',
}
READ_OUTPUT: Item = {"type": "function_call_output", "call_id": "call_1", "output": "total = 2"}


def _round_trips(items: list[Item]) -> None:
    for item in items:
        if item.get("type") != "local_shell_call_output" or "id" in item:  # the guide's form
            ITEM.validate_python(item)
    assert to_openai(from_openai(items), api="responses") == items
    session = Session(model="gpt-5")
    session.extend(items)
    assert session.render().to_openai(api="responses") == items
    packed = ctxpack.pack(items, budget=100_000, model="gpt-5")
    assert packed.to_openai(api="responses") == items


# ----------------------------------------------- reasoning, a message, then the turn's calls


@pytest.mark.parametrize("calls", [1, 2])
def test_a_call_after_its_turns_reasoning_and_message_keeps_its_id(calls: int) -> None:
    # The call became an assistant message of its own, apart from its reasoning: written
    # without its id (and packed apart from the message it followed).
    second = {**READ, "id": "fc_2", "call_id": "call_2"}
    turn = [READ, second][:calls]
    outputs = [READ_OUTPUT, {**READ_OUTPUT, "call_id": "call_2"}][:calls]
    _round_trips([USER, REASONING, SAYS, *turn, *outputs])


def test_the_message_and_the_calls_of_a_turn_are_kept_or_dropped_together() -> None:
    items = [USER, REASONING, SAYS, READ, READ_OUTPUT, {"role": "user", "content": "x" * 4000}]
    messages = from_openai(items)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "user"]
    assert messages[1].text == "Reading the ledger." and messages[1].tool_calls
    validate_openai(to_openai(messages))
    # Packed to leave room for the last message only: the turn goes whole or not at all.
    packed = ctxpack.pack(items, budget=1100, model="gpt-5")
    sent = packed.to_openai(api="responses")
    kinds = [item.get("type") for item in sent]
    assert kinds in (
        [None],
        [None, None],
        [None, "reasoning", "message", "function_call", "function_call_output", None],
    ), kinds
