"""The Responses API's built-in tools the client runs (``shell``, ``apply_patch``): their call
and output items read as a tool call and its result, counted, packed as pairs, their output
filtered, and written back as they came."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pydantic
import pytest

import ctxpack
from ctxpack.adapters import from_openai, to_openai, validate_openai
from ctxpack.redaction import redact_message
from tests.sdk_mock import Capture, openai_client
from tests.test_clients_responses import response, text_reply

openai_responses = pytest.importorskip("openai.types.responses")
ITEM = pydantic.TypeAdapter(openai_responses.ResponseInputItem)

SHELL_CALL: dict[str, Any] = {
    "type": "shell_call",
    "call_id": "call_sh",
    "action": {"commands": ["pytest -q"], "timeout_ms": 60_000, "max_output_length": 20_000},
    "status": "completed",
}
SHELL_OUTPUT: dict[str, Any] = {
    "type": "shell_call_output",
    "call_id": "call_sh",
    "output": [{"stdout": "3 passed\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}],
}
PATCH_CALL: dict[str, Any] = {
    "type": "apply_patch_call",
    "call_id": "call_ap",
    "status": "completed",
    "operation": {"type": "update_file", "path": "app.py", "diff": "@@\n-hi\n+hello\n"},
}
PATCH_OUTPUT: dict[str, Any] = {
    "type": "apply_patch_call_output",
    "call_id": "call_ap",
    "status": "completed",
    "output": "Updated app.py",
}
HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Say hello, then run the tests."},
    PATCH_CALL,
    PATCH_OUTPUT,
    SHELL_CALL,
    SHELL_OUTPUT,
    {"role": "assistant", "content": "Done; 3 tests pass."},
]


def test_shell_and_apply_patch_items_round_trip() -> None:
    for item in HISTORY:
        ITEM.validate_python(item)
    messages = from_openai(HISTORY)
    assert to_openai(messages, api="responses") == HISTORY
    packed = ctxpack.pack(messages, budget=10_000, model="gpt-5.1")
    assert packed.to_openai(api="responses") == HISTORY
    # For Chat Completions, a call of the tool and its result.
    chat = to_openai(messages)
    validate_openai(chat)
    assert chat[3]["tool_calls"][0]["function"]["name"] == "shell"
    assert chat[4]["content"] == "3 passed\n"


def test_a_response_s_item_ids_go_back_only_with_its_reasoning() -> None:
    given = [HISTORY[0], {**SHELL_CALL, "id": "sh_1"}, SHELL_OUTPUT]
    assert to_openai(from_openai(given), api="responses") == [HISTORY[0], SHELL_CALL, SHELL_OUTPUT]


def test_they_are_counted_by_what_is_sent() -> None:
    diff = "".join(f"+line {i}\n" for i in range(400))
    small = ctxpack.count_tokens(from_openai(HISTORY[:3]), model="gpt-5.1")
    big_call = {**PATCH_CALL, "operation": {**PATCH_CALL["operation"], "diff": diff}}
    big = ctxpack.count_tokens(from_openai([HISTORY[0], big_call, PATCH_OUTPUT]), model="gpt-5.1")
    assert big - small >= ctxpack.count_tokens(json.dumps(diff), model="gpt-5.1") * 0.9


def test_a_call_and_its_output_are_kept_or_dropped_together() -> None:
    old_log = "".join(f"test_{i} PASSED\n" for i in range(300))
    history = [
        {"role": "user", "content": "Run the tests."},
        {**SHELL_CALL, "call_id": "call_old"},
        {
            **SHELL_OUTPUT,
            "call_id": "call_old",
            "output": [{**SHELL_OUTPUT["output"][0], "stdout": old_log}],
        },
        *HISTORY,
    ]
    messages = from_openai(history)
    full = ctxpack.count_tokens(messages, model="gpt-5.1")
    packed = ctxpack.pack(messages, budget=full // 2, model="gpt-5.1")
    sent = packed.to_openai(api="responses")
    assert packed.tokens <= full // 2
    calls = [i["call_id"] for i in sent if i.get("type", "").endswith("_call")]
    outputs = [i["call_id"] for i in sent if i.get("type", "").endswith("_output")]
    assert calls == outputs
    assert sorted(packed.kept_ids + packed.dropped_ids) == sorted(packed.input_ids)
    for item in sent:
        ITEM.validate_python(item)
    # The long log was shortened in its item, its outcome kept.
    old = next(i for i in sent if i.get("call_id") == "call_old" and "output" in i)
    assert len(old["output"][0]["stdout"]) < len(old_log) // 4
    assert old["output"][0]["outcome"] == SHELL_OUTPUT["output"][0]["outcome"]
    assert sent[-len(HISTORY) :] == HISTORY


def test_a_session_filters_a_long_shell_output_and_keeps_its_outcome() -> None:
    log = "".join(f"test_{i} PASSED\n" for i in range(3000)) + "FAILED test_x - boom\n"
    failing = {"stdout": log, "stderr": "", "outcome": {"type": "exit", "exit_code": 1}}
    session = ctxpack.Session(window=20_000, model="gpt-5.1")
    session.extend([HISTORY[0], SHELL_CALL, {**SHELL_OUTPUT, "output": [failing]}])
    sent = session.render().to_openai(api="responses")
    assert sent[1] == SHELL_CALL
    output = sent[2]
    ITEM.validate_python(output)
    assert output["type"] == "shell_call_output" and output["call_id"] == "call_sh"
    [chunk] = output["output"]
    assert chunk["outcome"] == {"type": "exit", "exit_code": 1}
    assert "FAILED test_x - boom" in chunk["stdout"] and len(chunk["stdout"]) < len(log) // 10


def test_a_redacted_secret_in_a_call_is_not_sent_back() -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    call = {**SHELL_CALL, "action": {"commands": [f"git clone https://{secret}@github.com/x/y"]}}
    [message] = from_openai([call])
    redacted, found = redact_message(message)
    assert found
    sent = to_openai([redacted, *from_openai([SHELL_OUTPUT])], api="responses")
    assert secret not in json.dumps(sent)
    assert sent[0]["action"]["commands"][0].startswith("git clone https://[REDACTED")
    assert sent[1] == SHELL_OUTPUT


def test_a_malformed_item_is_refused_under_its_own_field_name() -> None:
    with pytest.raises(ctxpack.InvalidMessageError, match="shell_call item's action") as e:
        from_openai([HISTORY[0], {**SHELL_CALL, "action": "ls"}])
    assert (e.value.index, e.value.field) == (1, "action")
    with pytest.raises(ctxpack.InvalidMessageError, match="apply_patch_call_output item's call_id"):
        from_openai(
            [HISTORY[0], PATCH_CALL, {k: v for k, v in PATCH_OUTPUT.items() if k != "call_id"}]
        )


@pytest.mark.parametrize("kind", ["image_generation_call", "mcp_approval_request"])
def test_items_ctxpack_does_not_carry_are_still_refused_by_type(kind: str) -> None:
    with pytest.raises(ctxpack.InvalidMessageError, match=kind) as e:
        from_openai([HISTORY[0], {"type": kind, "id": "x", "call_id": "c", "status": "completed"}])
    assert (e.value.index, e.value.field) == (1, "type")


def test_wrap_openai_sends_the_sdk_s_shell_call_back() -> None:
    replies = iter([response({**SHELL_CALL, "id": "sh_1"}), text_reply("3 tests pass.")])
    capture = Capture(lambda body: httpx2.Response(200, json=next(replies)))
    client = ctxpack.wrap_openai(openai_client(capture), window=100_000)
    history: list[Any] = [HISTORY[0]]
    first = client.responses.create(model="gpt-5.1", input=history, tools=[{"type": "shell"}])
    assert type(first.output[0]).__name__ == "ResponseFunctionShellToolCall"
    history += first.output
    history.append(SHELL_OUTPUT)
    client.responses.create(model="gpt-5.1", input=history, tools=[{"type": "shell"}])
    sent = capture.body["input"]
    assert sent[0] == HISTORY[0] and sent[2] == SHELL_OUTPUT
    assert {k: v for k, v in sent[1].items() if v is not None} == SHELL_CALL
    assert capture.body["tools"] == [{"type": "shell"}]


# ------------------------------------------------------------- server-side tools' items

SEARCH: dict[str, Any] = {
    "type": "web_search_call",
    "id": "ws_1",
    "status": "completed",
    "action": {"type": "search", "query": "Oslo weather today"},
}
THOUGHT: dict[str, Any] = {"type": "reasoning", "id": "rs_1", "summary": []}
ANSWER: dict[str, Any] = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "3 C and clear.", "annotations": []}],
}
MCP: dict[str, Any] = {
    "type": "mcp_call",
    "id": "mcp_1",
    "server_label": "crm",
    "name": "list_customers",
    "arguments": "{}",
    "output": "Ana, Bo",
}


def test_a_server_side_call_goes_back_verbatim_in_its_turn() -> None:
    given = [{"role": "user", "content": "Weather in Oslo?"}, THOUGHT, SEARCH, MCP, ANSWER]
    for item in given:
        ITEM.validate_python(item)
    messages = from_openai(given)
    assert len(messages) == 2  # the whole turn is one assistant message
    assert to_openai(messages, api="responses") == given
    packed = ctxpack.pack(messages, budget=10_000, model="gpt-5")
    assert packed.to_openai(api="responses") == given
    # Chat Completions has no place for them: the answer alone.
    text = [{"type": "text", "text": "3 C and clear."}]
    assert packed.to_openai()[1] == {"role": "assistant", "content": text}


def test_a_server_side_call_is_counted_and_dropped_with_its_turn() -> None:
    big = {**SEARCH, "action": {"type": "search", "query": "Oslo weather " * 300}}
    turn = [{"role": "user", "content": "Weather in Oslo?"}, big, ANSWER]
    small = ctxpack.count_tokens(from_openai([turn[0], ANSWER]), model="gpt-5")
    full = ctxpack.count_tokens(from_openai(turn), model="gpt-5")
    assert full - small >= 600
    history = [*turn, {"role": "user", "content": "And Bergen?"}]
    packed = ctxpack.pack(from_openai(history), budget=full - 100, model="gpt-5")
    sent = packed.to_openai(api="responses")
    assert big not in sent and ANSWER not in sent
    assert sorted(packed.kept_ids + packed.dropped_ids) == sorted(packed.input_ids)


def test_a_server_side_call_at_the_end_of_a_turn_is_sent() -> None:
    given = [{"role": "user", "content": "Weather in Oslo?"}, ANSWER, SEARCH]
    # The message with nothing before it is written new, as any is (see test_responses.py).
    easy = {"role": "assistant", "content": "3 C and clear."}
    assert to_openai(from_openai(given), api="responses") == [given[0], easy, SEARCH]
    given = [{"role": "user", "content": "Look it up"}, SEARCH, {"role": "user", "content": "and?"}]
    assert to_openai(from_openai(given), api="responses") == given


def test_wrap_openai_sends_a_web_search_turn_back() -> None:
    replies = iter([response(SEARCH, ANSWER), text_reply("Bergen is 6 C.")])
    capture = Capture(lambda body: httpx2.Response(200, json=next(replies)))
    client = ctxpack.wrap_openai(openai_client(capture), window=100_000)
    history: list[Any] = [{"role": "user", "content": "Weather in Oslo?"}]
    first = client.responses.create(model="gpt-5", input=history, tools=[{"type": "web_search"}])
    history += first.output
    history.append({"role": "user", "content": "And Bergen?"})
    client.responses.create(model="gpt-5", input=history, tools=[{"type": "web_search"}])
    sent = capture.body["input"]
    assert [i.get("type") for i in sent] == [None, "web_search_call", "message", None]
    assert {k: v for k, v in sent[1].items() if v is not None} == SEARCH


def test_a_shell_calls_commands_are_its_command() -> None:
    # The session reads a call's command to name what a filter shortened (and which file a
    # view shows); a shell call's commands sit in its action, and were read as no command.
    session = ctxpack.Session(model="gpt-4o")
    passes = (f"tests/test_{i}.py::test_x PASSED" for i in range(400))
    log = "\n".join(["collected 400 items", *passes, "===== 400 passed in 3.21s ====="])
    output = {**SHELL_OUTPUT, "output": [{**SHELL_OUTPUT["output"][0], "stdout": log}]}
    two = {**SHELL_CALL, "action": {**SHELL_CALL["action"], "commands": ["cd app", "pytest -q"]}}
    session.extend(from_openai([HISTORY[0], two, output]))
    (record,) = session.records
    assert record.command == "cd app && pytest -q"
    # Read as a test run, by its command: its totals kept, the passes dropped.
    assert (record.kind, record.shortened) == ("test_run", True)


# ------------------------------------------------- a call cleared to fit a managed window

BIG_FILE = "".join(f"+line {i} of the generated fixture, with some words\n" for i in range(6000))
CLEARED_CALLS = {
    "apply_patch": (
        {**PATCH_CALL, "operation": {"type": "create_file", "path": "f.txt", "diff": BIG_FILE}},
        PATCH_OUTPUT,
    ),
    "shell": (
        {**SHELL_CALL, "action": {"commands": [f"cat > f.txt <<'EOF'\n{BIG_FILE}EOF"]}},
        SHELL_OUTPUT,
    ),
}


@pytest.mark.parametrize("tool", sorted(CLEARED_CALLS))
def test_a_call_cleared_to_fit_the_window_is_sent_cleared(tool: str) -> None:
    call, output = CLEARED_CALLS[tool]
    session = ctxpack.Session(window=32_000, model="gpt-5.1")
    session.extend(from_openai([HISTORY[0], {**call, "id": "x_1"}, output]))
    result = session.render()
    assert session.window_state.events[-1].action == "emergency"
    sent = result.to_openai(api="responses")
    for item in sent:
        ITEM.validate_python(item)
    # What is sent is what was counted: the call's arguments are not sent back whole.
    assert ctxpack.count_tokens(json.dumps(sent), model="gpt-5.1") < 32_000
    assert [i.get("call_id") for i in sent[2:]] == [call["call_id"]] * 2
    cleared, escaped = sent[2], json.dumps(BIG_FILE)[1:-1]
    assert escaped[:200] not in json.dumps(cleared)
    assert {k: v for k, v in cleared.items() if k not in ("action", "operation")} == {
        k: v for k, v in call.items() if k not in ("action", "operation")
    }
    # The original stays retrievable, the whole call with it.
    original = result.original(result.messages[1].id)
    assert original is not None and escaped in json.dumps(original.model_dump())
