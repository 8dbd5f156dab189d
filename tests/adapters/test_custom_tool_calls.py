"""Custom (freeform) tool calls: Chat Completions' ``{"type": "custom", "custom": {"name",
"input"}}`` and the Responses API's ``custom_tool_call`` / ``custom_tool_call_output`` items,
read, counted, packed as pairs and written back in the form they came."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pydantic
import pytest

import ctxpack
from ctxpack.adapters import from_openai, to_openai, validate_openai
from tests.sdk_mock import Capture, openai_client
from tests.test_clients_responses import response, text_reply

openai_responses = pytest.importorskip("openai.types.responses")
ITEM = pydantic.TypeAdapter(openai_responses.ResponseInputItem)

PATCH = "*** Begin Patch\n*** Update File: app.py\n@@\n-print('hi')\n+print('hello')\n*** End Patch"


def chat_call(call_id: str = "call_1", patch: str = PATCH) -> dict[str, Any]:
    return {"id": call_id, "type": "custom", "custom": {"name": "apply_patch", "input": patch}}


CHAT: list[dict[str, Any]] = [
    {"role": "user", "content": "Say hello instead."},
    {"role": "assistant", "content": None, "tool_calls": [chat_call()]},
    {"role": "tool", "tool_call_id": "call_1", "content": "Done: app.py"},
    {"role": "assistant", "content": "It says hello now."},
]

ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "Say hello instead."},
    {"type": "custom_tool_call", "call_id": "call_1", "name": "apply_patch", "input": PATCH},
    {"type": "custom_tool_call_output", "call_id": "call_1", "output": "Done: app.py"},
]


def test_a_chat_custom_tool_call_is_read_and_written_back_as_it_came() -> None:
    messages = from_openai(CHAT)
    assert to_openai(messages) == CHAT
    validate_openai(CHAT)
    packed = ctxpack.pack(CHAT, budget=10_000, model="gpt-5")
    assert packed.to_openai() == CHAT


def test_a_custom_call_s_input_is_counted() -> None:
    small = ctxpack.count_tokens(from_openai(CHAT[:2]), model="gpt-5")
    big = ctxpack.count_tokens(
        from_openai([CHAT[0], {**CHAT[1], "tool_calls": [chat_call(patch=PATCH * 20)]}]),
        model="gpt-5",
    )
    assert big - small >= 19 * ctxpack.count_tokens(PATCH, model="gpt-5") - 20


def test_a_custom_call_and_its_result_are_kept_or_dropped_together() -> None:
    history = [
        *CHAT[:3],
        {"role": "user", "content": "Now the readme. " * 5},
        {"role": "assistant", "content": None, "tool_calls": [chat_call("call_2", PATCH * 30)]},
        {"role": "tool", "tool_call_id": "call_2", "content": "Done: README.md"},
        {"role": "user", "content": "Thanks."},
    ]
    full = ctxpack.count_tokens(from_openai(history), model="gpt-5")
    packed = ctxpack.pack(history, budget=full - 30, model="gpt-5")
    sent = packed.to_openai()
    validate_openai(sent)  # every call answered, every answer after its call
    calls = {c["id"] for m in sent for c in m.get("tool_calls") or ()}
    answers = {m["tool_call_id"] for m in sent if m["role"] == "tool"}
    assert calls == answers
    assert calls == {"call_2"}  # the older exchange went whole
    assert sorted(packed.kept_ids + packed.dropped_ids) == sorted(packed.input_ids)


def test_a_custom_call_s_fields_are_checked_by_name() -> None:
    bad = {**CHAT[1], "tool_calls": [{"id": "c", "type": "custom", "custom": {"name": "x"}}]}
    with pytest.raises(ctxpack.InvalidMessageError) as error:
        from_openai([CHAT[0], bad])
    assert (error.value.index, error.value.field) == (1, "tool_calls[0].custom.input")


def test_responses_custom_tool_items_round_trip() -> None:
    given = [*ITEMS, {"role": "assistant", "content": "It says hello now."}]
    messages = from_openai(given)
    assert to_openai(messages) == CHAT  # their Chat Completions form
    assert to_openai(messages, api="responses") == given
    packed = ctxpack.pack(messages, budget=10_000, model="gpt-5")
    assert packed.to_openai(api="responses") == given
    for item in given:
        ITEM.validate_python(item)


def test_custom_and_function_calls_made_together_are_one_turn() -> None:
    given: list[dict[str, Any]] = [
        ITEMS[0],
        {"type": "function_call", "call_id": "call_0", "name": "ls", "arguments": "{}"},
        {
            **ITEMS[1],
            "id": "ctc_1",
            "status": "completed",
            "namespace": "edit",
            "caller": {"type": "direct"},
        },
        {"type": "function_call_output", "call_id": "call_0", "output": "app.py"},
        {
            **ITEMS[2],
            "output": [{"type": "input_text", "text": "Done: app.py"}],
            "caller": {"type": "direct"},
        },
    ]
    messages = from_openai(given)
    assert [[c.id for c in m.tool_calls or ()] for m in messages] == [[], ["call_0", "call_1"]] + [
        []
    ] * 2
    written = to_openai(messages, api="responses")
    # Written new, without the response's item id and status, as function calls are.
    assert written == [
        *given[:2],
        {k: v for k, v in given[2].items() if k not in ("id", "status")},
        *given[3:],
    ]


def test_the_sdk_s_custom_tool_call_object_is_read() -> None:
    call = openai_responses.ResponseCustomToolCall(
        type="custom_tool_call", id="ctc_1", call_id="call_1", name="apply_patch", input=PATCH
    )
    messages = from_openai([ITEMS[0], call, ITEMS[2]])
    assert to_openai(messages, api="responses") == ITEMS


def test_a_malformed_custom_tool_call_is_refused_under_its_own_field_name() -> None:
    item = {"type": "custom_tool_call", "call_id": "call_1", "name": "apply_patch"}
    with pytest.raises(ctxpack.InvalidMessageError, match="custom_tool_call item's input") as e:
        from_openai([ITEMS[0], item])
    assert (e.value.index, e.value.field) == (1, "input")


def test_wrap_openai_sends_a_custom_tool_exchange_back() -> None:
    reply = response(
        {
            "type": "custom_tool_call",
            "id": "ctc_1",
            "call_id": "call_1",
            "name": "apply_patch",
            "input": PATCH,
            "status": "completed",
        }
    )
    replies = iter([reply, text_reply("It says hello now.")])
    capture = Capture(lambda body: httpx2.Response(200, json=next(replies)))
    client = ctxpack.wrap_openai(openai_client(capture), window=100_000)
    tool = {"type": "custom", "name": "apply_patch", "description": "Apply a patch."}
    history: list[Any] = [ITEMS[0]]
    first = client.responses.create(model="gpt-5", input=history, tools=[tool])
    history += first.output  # the SDK's ResponseCustomToolCall
    history.append(ITEMS[2])
    client.responses.create(model="gpt-5", input=history, tools=[tool])
    sent = capture.body["input"]
    assert sent == ITEMS
    assert "apply_patch" in json.dumps(capture.body["tools"])


def test_a_session_filters_a_custom_tool_s_long_output_and_answers_in_kind() -> None:
    session = ctxpack.Session(window=20_000, model="gpt-5")
    log = "\n".join(f"line {i}: ok" for i in range(3000)) + "\nERROR: boom at line 7\n"
    session.extend([*ITEMS[:2], {**ITEMS[2], "output": log}])
    sent = session.render().to_openai(api="responses")
    assert [item.get("type") for item in sent] == [
        None,
        "custom_tool_call",
        "custom_tool_call_output",
    ]
    assert sent[1] == ITEMS[1]
    assert "ERROR: boom" in sent[2]["output"] and len(sent[2]["output"]) < len(log) // 10
    assert session.records[0].tool == "apply_patch"
