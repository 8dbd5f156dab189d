"""The converters check dicts as :func:`ctxpack.pack` does: a malformed OpenAI message is
ctxpack's error naming its index and field, never a traceback from inside the converter nor a
request the provider refuses; an Anthropic message is taken as it is by ``to_anthropic`` (its
blocks checked for what the API requires of them) and translated by ``to_openai``."""

from __future__ import annotations

from typing import Any

import pytest

import ctxpack
from ctxpack import InvalidMessageError, Message, from_openai, to_anthropic, to_openai
from tests.api_rules import openai_problems, responses_problems

from .malformed import OPENAI, Case

CONVERTERS = {
    "to_openai": to_openai,
    "to_openai(api='responses')": lambda messages: to_openai(messages, api="responses"),
    "to_anthropic": to_anthropic,
}
# The mistakes of one message (pack() repairs tool pairing and turn order, the converters
# leave them to it); a message holding an Anthropic block is taken as it is, below.
MESSAGE_MISTAKES = [
    c for c in OPENAI if c.index is not None and not c.pairing and c.says != "from_anthropic"
]


@pytest.mark.parametrize("name", CONVERTERS)
@pytest.mark.parametrize("c", MESSAGE_MISTAKES, ids=lambda c: c.name)
def test_a_malformed_message_is_refused_naming_its_index_and_field(c: Case, name: str) -> None:
    with pytest.raises(InvalidMessageError) as info:
        CONVERTERS[name](c.payload)
    assert (info.value.index, info.value.field) == (c.index, c.field), str(info.value)


def test_an_image_part_without_a_url_object_is_not_sent_as_an_image_of_its_repr() -> None:
    messages = [{"role": "user", "content": [{"type": "image_url", "image_url": 5}]}]
    for convert in CONVERTERS.values():
        with pytest.raises(InvalidMessageError, match=r"message 0: content\[0\]\.image_url"):
            convert(messages)


@pytest.mark.parametrize("metadata", [1, 0, "", [], "notes"])
def test_metadata_that_is_not_an_object_beside_tool_calls_is_refused_naming_it(
    metadata: Any,
) -> None:
    # A calling message without content is marked so in its metadata: metadata of another
    # type raised TypeError from inside the reader, and a falsy one (0, "") was replaced.
    calling = {"role": "assistant", "metadata": metadata, "tool_calls": [_CALL]}
    readers = {**CONVERTERS, "from_openai": from_openai, "pack": _pack}
    for name, read in readers.items():
        with pytest.raises(InvalidMessageError) as info:
            read([{"role": "user", "content": "hi"}, calling])
        assert (info.value.index, info.value.field) == (1, "metadata"), (name, str(info.value))


_CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def _pack(messages: list[dict[str, Any]]) -> Any:
    return ctxpack.pack(messages, budget=100, model="gpt-4o")


ANTHROPIC_HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "List the files."},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {"path": "."}}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}]},
]


def test_anthropic_messages_reach_anthropic_as_they_were() -> None:
    assert to_anthropic(ANTHROPIC_HISTORY)["messages"] == ANTHROPIC_HISTORY


# Blocks the API would certainly refuse: each is named by its message index and field.
_REFUSED_BLOCKS = [
    ("user", "not an object", "content[0]"),
    ("user", {"text": "no type"}, "content[0].type"),
    ("user", {"type": 5}, "content[0].type"),
    ("user", {"type": "image"}, "content[0].source"),
    (
        "user",
        {"type": "image", "source": {"type": "base64", "media_type": "image/png"}},
        "content[0].source.data",
    ),
    (
        "user",
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "a b"}},
        "content[0].source.data",
    ),
    ("user", {"type": "image", "source": {"type": "url", "url": 7}}, "content[0].source.url"),
    (
        "user",
        {"type": "document", "source": {"type": "text", "data": None}},
        "content[0].source.data",
    ),
    ("user", {"type": "tool_result", "tool_use_id": 5}, "content[0].tool_use_id"),
    ("user", {"type": "tool_result", "tool_use_id": "t1", "content": 3}, "content[0].content"),
    ("user", {"type": "search_result", "source": "s", "title": "t"}, "content[0].content"),
    ("assistant", {"type": "tool_use", "id": "t1", "name": "f"}, "content[0].input"),
    ("assistant", {"type": "tool_use", "id": "t1", "name": 3, "input": {}}, "content[0].name"),
    ("assistant", {"type": "thinking", "thinking": "hm"}, "content[0].signature"),
    ("assistant", {"type": "redacted_thinking"}, "content[0].data"),
    # A LangChain image block: the Messages API takes an image by its source only.
    ("user", {"type": "image", "url": "https://x.test/a.png"}, "content[0].source"),
]


@pytest.mark.parametrize(("role", "block", "field"), _REFUSED_BLOCKS)
@pytest.mark.parametrize("built", [False, True], ids=["dict", "Message"])
def test_to_anthropic_refuses_a_block_the_api_would_refuse_naming_its_field(
    role: str, block: Any, field: str, built: bool
) -> None:
    history: list[Any] = [
        {"role": "user", "content": "hi"},
        {
            "role": role,
            "content": [block, {"type": "tool_use", "id": "t0", "name": "f", "input": {}}],
        },
    ]
    if built:
        try:
            history = [Message(**message) for message in history]
        except InvalidMessageError as exc:  # a part that is no dict is no Message's content
            assert (exc.field or "").startswith("content")
            return
    with pytest.raises(InvalidMessageError) as info:
        to_anthropic(history)
    assert (info.value.index, info.value.field) == (1, field)


def test_to_anthropic_sends_a_well_formed_block_of_a_type_it_does_not_know() -> None:
    # A block type newer than ctxpack: the API judges it.
    future = {"type": "video", "source": {"type": "url", "url": "https://x.test/a.mp4"}}
    image = {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}}
    history = [{"role": "user", "content": [future, image]}]
    assert to_anthropic(history)["messages"] == history
    assert to_anthropic([Message(**history[0])])["messages"] == history


def test_anthropic_messages_reach_chat_completions_as_tool_calls_and_tool_messages() -> None:
    # OpenAI refuses a tool_use or tool_result part: they are read as from_anthropic reads them.
    sent = to_openai(ANTHROPIC_HISTORY)
    assert sent == [
        {"role": "user", "content": "List the files."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "ls", "arguments": '{"path": "."}'},
                }
            ],
        },
        {"role": "tool", "content": "a.py", "tool_call_id": "t1"},
    ]
    assert openai_problems(sent) == []


def test_anthropic_messages_reach_the_responses_api_as_call_items() -> None:
    sent = to_openai(ANTHROPIC_HISTORY, api="responses")
    assert sent == [
        {"role": "user", "content": "List the files."},
        {"type": "function_call", "call_id": "t1", "name": "ls", "arguments": '{"path": "."}'},
        {"type": "function_call_output", "call_id": "t1", "output": "a.py"},
    ]
    assert responses_problems(sent) == []


def test_a_failed_anthropic_result_beside_text_reaches_openai_marked_and_in_order() -> None:
    history = [
        *ANTHROPIC_HISTORY[:2],
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": "no such dir",
                    "is_error": True,
                },
                {"type": "text", "text": "Try again."},
            ],
        },
    ]
    sent = to_openai(history)
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user"]
    assert sent[2]["tool_call_id"] == "t1" and sent[2]["content"].startswith("[tool error]")
    assert sent[3]["content"] == [{"type": "text", "text": "Try again."}]
    assert openai_problems(sent) == []


def test_an_error_after_an_anthropic_message_read_as_several_names_the_caller_s_index() -> None:
    # The user message holding two results is read as two tool messages: the call after it is
    # the caller's message 3, not the fifth message read.
    history = [
        {"role": "user", "content": "Read both."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "ls", "input": {}},
                {"type": "tool_use", "id": "t2", "name": "ls", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "a"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "b"},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t3", "name": "files.read", "input": {}}],
        },
    ]
    for api in ("chat", "responses"):
        with pytest.raises(InvalidMessageError) as info:
            to_openai(history, api=api)  # type: ignore[arg-type]
        assert (info.value.index, info.value.field) == (3, "tool_calls[0].function.name")


AUDIO_REPLY: list[dict[str, Any]] = [
    {"role": "user", "content": "Say hello."},
    {"role": "assistant", "content": None, "audio": {"id": "audio_abc123"}},
    {"role": "user", "content": "Again."},
]


@pytest.mark.parametrize("said", [None, "Hello!"])
def test_an_assistant_s_audio_reply_is_refused_for_anthropic_not_dropped(said: str | None) -> None:
    # Anthropic takes no audio, and no input refers to a prior audio response: the reply was
    # left out, and with content None the model's turn with it (the user turns around it
    # merged). Refused as the Responses API refuses it, by the same rule (audio not None).
    history = [AUDIO_REPLY[0], {**AUDIO_REPLY[1], "content": said}, AUDIO_REPLY[2]]
    for given in (history, from_openai(history)):
        with pytest.raises(InvalidMessageError) as info:
            to_anthropic(given)
        assert (info.value.index, info.value.field) == (1, "audio")
        assert "transcript" in str(info.value) and "Anthropic" in str(info.value)
    # A packed history is converted by to_anthropic too (Session, the wrapped clients).
    packed = ctxpack.pack(history, budget=1_000, provider="anthropic", counter="cl100k_base")
    with pytest.raises(InvalidMessageError, match="message 1: audio"):
        packed.to_anthropic()
    session = ctxpack.Session(counter="cl100k_base")
    session.extend(history)
    with pytest.raises(InvalidMessageError, match="message 1: audio"):
        session.render(provider="anthropic").to_anthropic()
    # An SDK reply's audio=None is no audio.
    history[1] = {**history[1], "content": "Hello!", "audio": None}
    assert to_anthropic(history)["messages"][1] == {"role": "assistant", "content": "Hello!"}


def test_an_assistant_s_audio_reply_is_sent_back_and_counted_by_its_id_alone() -> None:
    # The SDK's reply carries the audio whole (base64 data, transcript); Chat Completions takes
    # a prior audio reply back as {"id": ...} only. Sending the data, and counting it (some
    # 28,000 tokens for 30 KB), made a short spoken turn fill the window.
    audio = {"id": "audio_abc", "data": "UklGR" * 6_000, "expires_at": 1, "transcript": "Hi!"}
    spoken = {"role": "assistant", "content": None, "audio": audio}
    by_id = {**spoken, "audio": {"id": "audio_abc"}}
    history = [AUDIO_REPLY[0], spoken, AUDIO_REPLY[2]]
    for given in (history, from_openai(history)):
        assert to_openai(given)[1] == by_id
    counter = ctxpack.get_counter(counter="cl100k_base")
    read = from_openai([spoken])[0]
    assert counter.count_message(read) == counter.count_message(from_openai([by_id])[0])
    # Nothing is lost: the message keeps the reply whole, its transcript among it.
    assert read.extras["audio"] == audio
    packed = ctxpack.pack(history, budget=1_000, counter="cl100k_base")
    assert packed.messages[1].extras["audio"]["transcript"] == "Hi!"
    assert packed.to_openai()[1]["audio"] == {"id": "audio_abc"}


@pytest.mark.parametrize("summary", [False, True], ids=["plain", "after_compaction"])
def test_messages_built_by_hand_with_anthropic_blocks_reach_openai_as_those_dicts_do(
    summary: bool,
) -> None:
    # A Message holding a block only Anthropic has is Anthropic's as a dict holding one is,
    # whoever built it: its tool_use and tool_result blocks went to OpenAI as they were, which
    # it refuses; only the messages from_anthropic marked were translated.
    compaction = [{"type": "compaction", "content": "Summary."}] if summary else []
    history = [
        ANTHROPIC_HISTORY[0],
        {**ANTHROPIC_HISTORY[1], "content": [*compaction, *ANTHROPIC_HISTORY[1]["content"]]},
        ANTHROPIC_HISTORY[2],
    ]
    built = [Message(**message) for message in history]
    for api in ("chat", "responses"):
        assert to_openai(built, api=api) == to_openai(history, api=api)
    sent = to_openai(built)
    assert sent[-2]["tool_calls"][0]["id"] == "t1"
    assert sent[-1] == {"role": "tool", "content": "a.py", "tool_call_id": "t1"}
    assert openai_problems(sent) == []
    assert to_openai(built, api="responses")[-1]["type"] == "function_call_output"
    # The caller's messages are read, not changed.
    assert [m.content for m in built] == [m["content"] for m in history]


def test_a_message_built_by_hand_holding_anthropic_blocks_is_refused_where_a_dict_is() -> None:
    # A tool message holding an Anthropic block is no Anthropic message: refused as its dict.
    image = {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}}
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Look."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": [image]},
    ]
    errors = []
    given: list[Any]
    for given in (history, [Message(**message) for message in history]):
        with pytest.raises(InvalidMessageError) as info:
            to_openai(given)
        errors.append((info.value.index, info.value.field, str(info.value)))
    assert errors[0] == errors[1] and errors[0][:2] == (2, "role")
