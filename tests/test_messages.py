"""ensure_messages(): dicts and Message objects in, validated Messages with unique ids out."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import ctxpack
from ctxpack import InvalidMessageError, Message
from ctxpack.messages import ensure_messages


def test_dicts_and_messages_are_accepted_and_keep_their_ids() -> None:
    out = ensure_messages(
        [
            {"role": "system", "content": "Be brief.", "id": "s"},
            Message(role="user", content="Hi", id="u"),
        ]
    )
    assert [(m.role, m.text, m.id) for m in out] == [
        ("system", "Be brief.", "s"),
        ("user", "Hi", "u"),
    ]
    assert all(isinstance(m, Message) for m in out)


def test_generated_ids_are_stable_and_unique() -> None:
    history = [
        {"role": "user", "content": "same"},
        {"role": "user", "content": "same"},
        {"role": "assistant", "content": "answer"},
    ]
    first = [m.id for m in ensure_messages(history)]
    second = [m.id for m in ensure_messages(copy.deepcopy(history))]
    assert first == second
    assert len(set(first)) == 3
    # Identical messages are told apart by their order of occurrence.
    assert first[1] == first[0] + "-2"
    # A generated id depends on the content, not on the position: trimming older messages or
    # appending newer ones leaves it as it was.
    assert [m.id for m in ensure_messages([history[2]])] == [first[2]]
    longer = [*history, {"role": "user", "content": "more"}]
    assert [m.id for m in ensure_messages(longer)][:3] == first
    assert [m.id for m in ensure_messages(history[1:])] == [first[0], first[2]]


def test_message_without_id_gets_one_and_the_input_object_is_untouched() -> None:
    original = Message(role="user", content="Hi")
    (out,) = ensure_messages([original])
    assert out.id
    assert original.id == ""


def test_duplicate_ids_are_an_error_naming_both_positions() -> None:
    with pytest.raises(InvalidMessageError, match="message 2: id 'x' repeats the id of message 0"):
        ensure_messages(
            [
                {"role": "user", "content": "a", "id": "x"},
                {"role": "user", "content": "b", "id": "y"},
                {"role": "assistant", "content": "c", "id": "x"},
            ]
        )


def test_invalid_role_names_index_field_and_valid_roles() -> None:
    with pytest.raises(InvalidMessageError) as info:
        ensure_messages([{"role": "user", "content": "ok"}, {"role": "wizard", "content": "zap"}])
    assert str(info.value) == (
        "message 1: role 'wizard' is not one of system, developer, user, assistant, tool"
    )
    assert info.value.index == 1
    assert info.value.field == "role"
    # Callers that know nothing of ctxpack can still catch it.
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, ctxpack.CtxpackError)


def test_missing_role() -> None:
    with pytest.raises(InvalidMessageError, match="message 0: role is missing") as info:
        ensure_messages([{"content": "hello"}])
    assert info.value.field == "role"


@pytest.mark.parametrize("entry", ["just a string", 42, None, ["role", "user"]])
def test_non_dict_entries_are_rejected(entry: Any) -> None:
    with pytest.raises(
        InvalidMessageError, match="message 1: expected a Message or a dict"
    ) as info:
        ensure_messages([{"role": "user", "content": "ok"}, entry])
    assert info.value.index == 1


@pytest.mark.parametrize("payload", ["hello", {"role": "user", "content": "hi"}])
def test_a_single_string_or_dict_is_not_a_list_of_messages(payload: Any) -> None:
    with pytest.raises(InvalidMessageError, match="expected a list of messages"):
        ensure_messages(payload)


def test_tool_message_needs_tool_call_id() -> None:
    with pytest.raises(InvalidMessageError) as info:
        ensure_messages([{"role": "tool", "content": "42"}])
    assert info.value.index == 0
    assert info.value.field == "tool_call_id"
    assert "tool_call_id" in str(info.value)


def test_only_assistants_call_tools() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    with pytest.raises(InvalidMessageError) as info:
        ensure_messages([{"role": "user", "content": "x", "tool_calls": [call]}])
    assert info.value.field == "tool_calls"


def test_the_calls_of_one_message_need_their_own_ids() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    other = {**call, "id": "c2"}
    with pytest.raises(InvalidMessageError, match=r"'c1' repeats tool_calls\[0\]\.id") as info:
        ensure_messages(
            [
                {"role": "user", "content": "x"},
                {"role": "assistant", "content": None, "tool_calls": [call, other, call]},
            ]
        )
    assert (info.value.index, info.value.field) == (1, "tool_calls[2].id")
    # The same id in two messages is each message's own call (some providers reuse them).
    (a, b) = ensure_messages(
        [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "assistant", "content": None, "tool_calls": [call]},
        ]
    )
    assert a.tool_calls is not None and b.tool_calls is not None


def test_content_may_be_missing_only_beside_tool_calls() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    (ok,) = ensure_messages([{"role": "assistant", "content": None, "tool_calls": [call]}])
    assert ok.tool_calls is not None and ok.tool_calls[0].function.name == "f"
    with pytest.raises(InvalidMessageError) as info:
        ensure_messages([{"role": "user", "content": None}])
    assert info.value.field == "content"


def test_bad_field_type_names_the_field() -> None:
    with pytest.raises(InvalidMessageError) as info:
        ensure_messages([{"role": "user", "content": "x", "priority": "high"}])
    assert info.value.index == 0
    assert info.value.field == "priority"


def test_non_string_id_is_rejected() -> None:
    with pytest.raises(InvalidMessageError, match="id must be a string, got int"):
        ensure_messages([{"role": "user", "content": "x", "id": 3}])


def test_content_parts_text_and_images() -> None:
    (msg,) = ensure_messages(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in"},
                    {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
                    {"type": "text", "text": "this picture?"},
                ],
            }
        ]
    )
    assert msg.text == "What is in\nthis picture?"
    with pytest.raises(InvalidMessageError) as info:
        ensure_messages([{"role": "user", "content": [{"text": "no type"}]}])
    assert info.value.field is not None and info.value.field.startswith("content")
    assert "content[0].type" in str(info.value)


def test_unknown_provider_fields_survive_in_extras() -> None:
    (msg,) = ensure_messages([{"role": "assistant", "content": "x", "refusal": None, "foo": 1}])
    assert msg.extras == {"refusal": None, "foo": 1}


def test_input_is_never_mutated() -> None:
    history: list[Any] = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}], "metadata": {"k": [1]}},
        {"role": "assistant", "content": "hello", "custom": {"nested": True}},
        Message(role="user", content="again"),
    ]
    before = copy.deepcopy(history)
    out = ensure_messages(history)
    assert history == before
    assert history[2].id == ""
    assert len(out) == 3


def test_messages_are_frozen() -> None:
    msg = Message(role="user", content="x", id="a")
    with pytest.raises(ValueError):
        msg.content = "y"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("field", "value"),
    [("pinned", "yes"), ("pinned", "false"), ("pinned", 1), ("priority", "3"), ("priority", True)],
)
def test_a_value_of_the_wrong_type_is_refused_not_converted(field: str, value: Any) -> None:
    # pydantic's lax mode made "yes" and 1 pinned=True and "3" a priority of 3.0: the user's
    # value changed without a word.
    given = {"role": "user", "content": "a"}
    with pytest.raises(InvalidMessageError, match=f"message 1: {field}") as info:
        ensure_messages([given, {**given, field: value}])
    assert (info.value.index, info.value.field) == (1, field)
    with pytest.raises(InvalidMessageError, match=field):
        Message(role="user", content="a", **{field: value})


def test_pinned_and_priority_take_their_own_types() -> None:
    (message,) = ensure_messages([{"role": "user", "content": "a", "pinned": True, "priority": 2}])
    assert (message.pinned, message.priority) == (True, 2.0)
    assert Message.model_validate_json(message.model_dump_json()) == message
