"""Responses API items of a turn that says something and calls tools, and of the tools the client
runs for computer use and Codex-style local shells (``computer_call``, ``local_shell_call`` and
their outputs): read as a call and its result, counted, packed as a pair, filtered where they
hold text, and written back as they came with only ctxpack's edits. An ``item_reference``
(an item only the server holds) is refused by name."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

import httpx2
import pydantic
import pytest

import ctxpack
from ctxpack import InvalidMessageError, Pipeline, Session
from ctxpack.adapters import from_openai, to_openai, validate_openai
from ctxpack.editing import ToolResultClearer
from ctxpack.managed import WindowPolicy
from tests.sdk_mock import Capture, openai_client
from tests.test_clients_responses import response, text_reply

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


# ------------------------------------------------------------- local shell and computer use

LOCAL_SHELL: Item = {
    "type": "local_shell_call",
    "id": "lsh_1",
    "call_id": "call_ls",
    "status": "completed",
    "action": {
        "type": "exec",
        "command": ["bash", "-lc", "pytest -q tests/test_ledger.py"],
        "env": {"CI": "1"},
        "timeout_ms": 60_000,
        "working_directory": "/repo",
    },
}
# As the SDK types it, the output names its call by "id"; OpenAI's guide writes "call_id".
LOCAL_SHELL_OUTPUT: Item = {
    "type": "local_shell_call_output",
    "id": "call_ls",
    "output": "....F\nFAILED tests/test_ledger.py::test_total - assert 3 == 2\n1 failed, 4 passed",
}
COMPUTER: Item = {
    "type": "computer_call",
    "id": "cu_1",
    "call_id": "call_cu",
    "status": "completed",
    "pending_safety_checks": [],
    "action": {"type": "click", "button": "left", "x": 120, "y": 48},
}
# The computer tool's newer form: a list of actions.
ACTIONLESS: Item = {k: v for k, v in COMPUTER.items() if k != "action"}
SCREENSHOT = "data:image/png;base64," + "iVBORw0KGgo" * 40
COMPUTER_OUTPUT: Item = {
    "type": "computer_call_output",
    "call_id": "call_cu",
    "output": {"type": "computer_screenshot", "image_url": SCREENSHOT},
    "acknowledged_safety_checks": [],
}
AGENT: list[Item] = [USER, LOCAL_SHELL, LOCAL_SHELL_OUTPUT, COMPUTER, COMPUTER_OUTPUT]


@pytest.mark.parametrize(
    "items",
    [
        AGENT,
        [USER, REASONING, LOCAL_SHELL, COMPUTER, LOCAL_SHELL_OUTPUT, COMPUTER_OUTPUT],
        [
            USER,
            LOCAL_SHELL,
            {"type": "local_shell_call_output", **{"call_id": "call_ls"}, "output": "ok"},
        ],
        [
            USER,
            COMPUTER,
            {**COMPUTER_OUTPUT, "output": {"type": "computer_screenshot", "file_id": "file_1"}},
        ],
        [USER, {**ACTIONLESS, "actions": [{"type": "screenshot"}]}, COMPUTER_OUTPUT],
    ],
)
def test_local_shell_and_computer_items_round_trip(items: list[Item]) -> None:
    _round_trips(items)


def test_they_read_as_a_call_and_its_result() -> None:
    messages = from_openai(AGENT)
    shell, result = messages[1], messages[2]
    assert shell.tool_calls is not None and shell.tool_calls[0].function.name == "local_shell"
    assert json.loads(shell.tool_calls[0].function.arguments) == {"action": LOCAL_SHELL["action"]}
    assert result.tool_call_id == "call_ls" and result.text == LOCAL_SHELL_OUTPUT["output"]
    computer, screenshot = messages[3], messages[4]
    assert computer.tool_calls is not None and computer.tool_calls[0].function.name == "computer"
    assert screenshot.tool_call_id == "call_cu"
    assert screenshot.content == [
        {"type": "image_url", "image_url": {"url": SCREENSHOT, "detail": "auto"}}
    ]
    validate_openai(to_openai(messages))


def test_a_screenshot_counts_as_an_image_not_as_its_data_url() -> None:
    counter = ctxpack.get_counter("gpt-5")
    image = {"type": "image_url", "image_url": {"url": SCREENSHOT, "detail": "auto"}}
    as_image = counter.count_message(ctxpack.Message(role="user", content=[image]))
    screenshot = from_openai(AGENT)[4]
    assert counter.count_message(screenshot) - as_image == counter.count_message(
        ctxpack.Message(role="tool", tool_call_id="call_cu", content=[])
    ) - counter.count_message(ctxpack.Message(role="user", content=[]))
    assert as_image != counter.count(SCREENSHOT)


def test_packing_keeps_or_drops_each_call_with_its_result() -> None:
    for budget in range(60, 1500, 40):
        try:
            packed = ctxpack.pack(AGENT, budget=budget, model="gpt-5")
        except ctxpack.BudgetExceededError:
            continue
        sent = packed.to_openai(api="responses")
        calls = [
            i["call_id"] for i in sent if i.get("type") in ("local_shell_call", "computer_call")
        ]
        answered = [
            i.get("call_id", i.get("id"))
            for i in sent
            if i.get("type") in ("local_shell_call_output", "computer_call_output")
        ]
        assert calls == answered, (budget, sent)


def test_a_local_shell_output_is_filtered_and_redacted_in_its_own_shape() -> None:
    secret = "Vq8nT2zLp4Rw"
    output = {**LOCAL_SHELL_OUTPUT, "output": f"DB_PASSWORD={secret}\n" + "ok line\n" * 400}
    session = Session(model="gpt-5")
    session.extend([USER, LOCAL_SHELL, output])
    sent = session.render().to_openai(api="responses")
    assert secret not in json.dumps(sent)
    written = sent[2]
    assert set(written) == set(output) and written["id"] == "call_ls"
    assert written["type"] == "local_shell_call_output" and isinstance(written["output"], str)
    assert len(written["output"]) < len(output["output"])  # filtered


def test_a_cleared_local_shell_call_is_written_with_a_stand_in_command() -> None:
    messages = from_openai(AGENT)
    call = messages[1]
    assert call.tool_calls is not None
    cleared_call = call.tool_calls[0].model_copy(
        update={"function": call.tool_calls[0].function.model_copy(update={"arguments": "{}"})}
    )
    messages[1] = call.model_copy(update={"tool_calls": [cleared_call]})
    written = to_openai(messages, api="responses")[1]
    ITEM.validate_python(written)
    assert written["action"]["command"] == ["# cleared by ctxpack to fit the window"]
    assert {k: v for k, v in written["action"].items() if k != "command"} == {
        k: v for k, v in LOCAL_SHELL["action"].items() if k != "command"
    }


def test_clearing_leaves_a_screenshot_which_has_no_text_form() -> None:
    # A managed session cleared it, and the request could not be written.
    long_output = {**LOCAL_SHELL_OUTPUT, "output": "4 passed\n" * 200}
    history = [USER, LOCAL_SHELL, long_output, COMPUTER, COMPUTER_OUTPUT]
    history.append({"role": "assistant", "content": "Clicked."})
    clearer = ToolResultClearer(trigger=0, keep=0, cache_aware=False)
    packed = ctxpack.pack(history, budget=100_000, model="gpt-5", pipeline=Pipeline([clearer]))
    assert [d.message_id for d in packed.decisions if d.action == "cleared"] == [
        packed.messages[2].id
    ]
    sent = packed.to_openai(api="responses")
    assert sent[4] == COMPUTER_OUTPUT and sent[2]["output"].startswith("[ctxpack:")


def test_a_screenshot_replaced_by_text_is_refused_naming_the_message_and_content() -> None:
    messages = from_openai(AGENT)
    messages[4] = messages[4].model_copy(update={"content": "[a screenshot]"})
    with pytest.raises(InvalidMessageError, match="takes a screenshot only") as info:
        to_openai(messages, api="responses")
    assert (info.value.index, info.value.field) == (4, "content")


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({**LOCAL_SHELL, "action": {"type": "exec", "command": "ls"}}, "action"),
        ({**LOCAL_SHELL, "action": {"type": "exec", "command": []}}, "action"),
        ({**LOCAL_SHELL, "action": "ls"}, "action"),
        ({k: v for k, v in LOCAL_SHELL.items() if k != "id"}, "id"),
        ({**LOCAL_SHELL, "call_id": ""}, "call_id"),
        ({**LOCAL_SHELL_OUTPUT, "output": ["a"]}, "output"),
        ({k: v for k, v in LOCAL_SHELL_OUTPUT.items() if k != "output"}, "output"),
        ({"type": "local_shell_call_output", "output": "x"}, "id"),
        ({**COMPUTER, "action": "click"}, "action"),
        ({**ACTIONLESS, "actions": "click"}, "actions"),
        (ACTIONLESS, "action"),
        ({k: v for k, v in COMPUTER.items() if k != "id"}, "id"),
        ({**COMPUTER_OUTPUT, "output": "a screenshot"}, "output"),
        ({**COMPUTER_OUTPUT, "output": {"type": "computer_screenshot"}}, "output"),
        ({**COMPUTER_OUTPUT, "output": {"type": "input_image", "image_url": "x"}}, "output"),
        ({k: v for k, v in COMPUTER_OUTPUT.items() if k != "call_id"}, "call_id"),
    ],
)
def test_a_malformed_item_is_refused_naming_its_index_and_field(item: Item, field: str) -> None:
    for call in (
        from_openai,
        validate_openai,
        lambda items: Session().extend(items),
        lambda items: ctxpack.pack(items, budget=5000, model="gpt-5"),
    ):
        with pytest.raises(InvalidMessageError) as info:
            call([USER, item])
        assert (info.value.index, info.value.field) == (1, field), info.value


def test_an_item_holding_a_value_that_cannot_be_copied_is_refused_naming_its_field() -> None:
    # A Responses item written as a dict is copied (the caller may edit its own): a value
    # deepcopy cannot copy raised a bare TypeError from inside, where a chat message's is
    # refused naming its index and field.
    annotations = MappingProxyType({"type": "url_citation"})
    part = {"type": "output_text", "text": "Reading.", "annotations": annotations}
    item = {**SAYS, "content": [part]}
    for call in (
        from_openai,
        lambda items: Session().extend(items),
        lambda items: ctxpack.pack(items, budget=5000, model="gpt-5"),
        ctxpack.count_tokens,
    ):
        with pytest.raises(InvalidMessageError, match="cannot be copied") as info:
            call([USER, item])
        assert (info.value.index, info.value.field) == (1, "content"), info.value


# ------------------------------------------------------------------------- item_reference


def test_an_item_reference_is_refused_naming_its_index_and_type() -> None:
    reference = {"type": "item_reference", "id": "fc_1"}
    for call in (
        from_openai,
        validate_openai,
        lambda items: Session().extend(items),
        lambda items: ctxpack.pack(items, budget=5000, model="gpt-5"),
    ):
        with pytest.raises(InvalidMessageError, match="only OpenAI stores") as info:
            call([USER, REASONING, SAYS, reference, READ_OUTPUT])
        assert (info.value.index, info.value.field) == (3, "type")


@pytest.mark.parametrize(
    ("call", "output", "tool"),
    [
        (LOCAL_SHELL, LOCAL_SHELL_OUTPUT, {"type": "local_shell"}),
        (
            COMPUTER,
            COMPUTER_OUTPUT,
            {
                "type": "computer_use_preview",
                "environment": "browser",
                "display_width": 1024,
                "display_height": 768,
            },
        ),
    ],
)
def test_wrap_openai_sends_the_sdk_s_call_and_its_output_back(
    call: Item, output: Item, tool: Item
) -> None:
    replies = iter([response(call), text_reply("Done.")])
    capture = Capture(lambda body: httpx2.Response(200, json=next(replies)))
    client = ctxpack.wrap_openai(openai_client(capture), window=100_000)
    history: list[Any] = [USER]
    first = client.responses.create(model="gpt-5", input=history, tools=[tool])
    history += first.output  # the SDK's object, as OpenAI's guides append it
    history.append(output)
    client.responses.create(model="gpt-5", input=history, tools=[tool])
    sent = capture.body["input"]
    assert sent[0] == USER and sent[2] == output
    assert {k: v for k, v in sent[1].items() if v is not None} == call
    assert capture.body["tools"] == [tool]


def _step(n: int) -> list[Item]:
    """A local shell call and a click, each answered, under call ids of their own."""
    shell = {**LOCAL_SHELL, "id": f"lsh_{n}", "call_id": f"ls_{n}"}
    printed = {**LOCAL_SHELL_OUTPUT, "id": f"ls_{n}", "output": f"{n} passed\n" * 150}
    click = {**COMPUTER, "id": f"cu_{n}", "call_id": f"cu_{n}"}
    shot = {"type": "computer_screenshot", "image_url": f"https://shots.example/{n}.png"}
    return [shell, printed, click, {**COMPUTER_OUTPUT, "call_id": f"cu_{n}", "output": shot}]


def test_a_managed_session_sends_each_screenshot_it_keeps_as_it_came() -> None:
    # A guard: test_responses_soak.py found the window clearing screenshots like any old
    # output, which left a request that could not be written.
    session = Session(model="gpt-5", window=WindowPolicy(window=6000, managed_room=None))
    session.append(USER)
    for n in range(12):
        session.extend(_step(n))
        result = session.render()
        sent = result.to_openai(api="responses")
        shots = {i["call_id"]: i for i in sent if i.get("type") == "computer_call_output"}
        assert all(shot == _step(int(cid[3:]))[3] for cid, shot in shots.items())
        calls = [
            i["call_id"] for i in sent if i.get("type") in ("local_shell_call", "computer_call")
        ]
        outputs = [i.get("call_id", i.get("id")) for i in sent if "output" in i]
        assert calls == outputs
