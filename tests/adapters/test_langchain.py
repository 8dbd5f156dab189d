"""The LangChain adapter: round trips, PackResult.to_langchain(), the install hint."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import ctxpack
from ctxpack import pack
from ctxpack.adapters import from_langchain, to_langchain

lc = pytest.importorskip("langchain_core.messages")

FIXTURES = Path(__file__).parent / "fixtures"


def _conversation() -> list[object]:
    return [
        lc.SystemMessage("Be brief."),
        lc.HumanMessage(content=["look", {"type": "text", "text": "here"}], name="ana", id="h1"),
        lc.AIMessage(
            content="",
            tool_calls=[{"name": "search", "args": {"q": "oslo", "n": [1, 2]}, "id": "c1"}],
            response_metadata={"model_name": "gpt-4o"},
        ),
        lc.ToolMessage("3 C", tool_call_id="c1", status="success", artifact={"raw": 3}),
        lc.ChatMessage(role="developer", content="Use metric units."),
        lc.AIMessage("It is 3 C in Oslo."),
    ]


def test_langchain_round_trip_is_exact() -> None:
    original = _conversation()
    assert to_langchain(from_langchain(original)) == original


def test_langchain_messages_map_to_roles_and_tool_calls() -> None:
    msgs = from_langchain(_conversation())
    assert [m.role for m in msgs] == [
        "system",
        "user",
        "assistant",
        "tool",
        "developer",
        "assistant",
    ]
    call = (msgs[2].tool_calls or [])[0]
    assert (call.id, json.loads(call.function.arguments)) == ("c1", {"q": "oslo", "n": [1, 2]})
    assert msgs[3].tool_call_id == "c1"


def test_pack_result_converts_to_langchain() -> None:
    messages = json.loads((FIXTURES / "openai_tools.json").read_text(encoding="utf-8"))
    result = pack(messages, budget=120, model="gpt-4")
    converted = result.to_langchain()
    assert len(converted) == len(result.messages)
    called = {c["id"] for m in converted if isinstance(m, lc.AIMessage) for c in m.tool_calls}
    assert all(m.tool_call_id in called for m in converted if isinstance(m, lc.ToolMessage))


def test_missing_langchain_core_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_core.messages", None)
    with pytest.raises(ImportError, match=r"pip install 'ctxpack\[langchain\]'"):
        ctxpack.adapters.to_langchain([{"role": "user", "content": "hi"}])
    with pytest.raises(ImportError, match="langchain-core"):
        from_langchain([])


def test_non_langchain_entries_are_rejected() -> None:
    with pytest.raises(ctxpack.InvalidMessageError) as info:
        from_langchain([lc.HumanMessage("hi"), {"role": "user", "content": "x"}])
    assert info.value.index == 1


def _assigned(message: Any, **fields: Any) -> Any:
    # LangChain's messages do not validate assignment: code that edits one can leave any value.
    for key, value in fields.items():
        setattr(message, key, value)
    return message


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: _assigned(lc.HumanMessage("hi"), content=None), "content"),
        (lambda: _assigned(lc.HumanMessage("hi"), content=5), "content"),
        (lambda: _assigned(lc.HumanMessage("hi"), content=["ok", 5]), "content"),
        (lambda: _assigned(lc.AIMessage("hi"), additional_kwargs=[]), "additional_kwargs"),
        (lambda: _assigned(lc.AIMessage(""), tool_calls=["weather"]), "tool_calls"),
        (lambda: _assigned(lc.AIMessage(""), tool_calls=[{"args": {}, "id": "c1"}]), "tool_calls"),
    ],
    ids=["content None", "content int", "content part int", "kwargs list", "call str", "no name"],
)
def test_a_langchain_message_edited_out_of_shape_is_refused_naming_its_field(
    make: Any, field: str
) -> None:
    # A TypeError, KeyError or AttributeError escaped from the conversion.
    with pytest.raises(ctxpack.InvalidMessageError) as caught:
        from_langchain([lc.HumanMessage("hi"), make()])
    assert (caught.value.index, caught.value.field) == (1, field)


@pytest.mark.parametrize(
    ("block", "field", "says"),
    [
        ({"type": "image", "source_type": "base64", "data": 5}, "data", "got int"),
        ({"type": "image", "source_type": "url", "url": None}, "url", "got null"),
        ({"type": "image", "url": 7}, "url", "got int"),
        ({"type": "image", "base64": None, "mime_type": "image/png"}, "base64", "got null"),
        ({"type": "image", "base64": b"iVBO", "mime_type": "image/png"}, "base64", "got bytes"),
        ({"type": "file", "base64": 1.5, "mime_type": "application/pdf"}, "base64", "got float"),
        ({"type": "image", "base64": "iV BO", "mime_type": "image/png"}, "base64", "base64"),
        ({"type": "image", "source_type": "base64", "data": "%%"}, "data", "base64"),
        ({"type": "image", "url": "data:image/png;base64,@@"}, "url", "base64"),
    ],
    ids=[
        "v0.3 data int",
        "v0.3 url None",
        "v1 url int",
        "v1 base64 None",
        "v1 base64 bytes",
        "file base64 float",
        "base64 with a space",
        "v0.3 data not base64",
        "data URL not base64",
    ],
)
def test_a_langchain_media_block_holding_no_valid_string_is_refused_naming_its_field(
    block: dict[str, Any], field: str, says: str
) -> None:
    """The chat model would send it on for the provider to refuse (or fail far from it)."""
    message = lc.HumanMessage(content=["look", block])
    with pytest.raises(ctxpack.InvalidMessageError, match=says) as caught:
        from_langchain([lc.HumanMessage("hi"), message])
    assert (caught.value.index, caught.value.field) == (1, f"content[1].{field}")
    # The LangChain agent's middleware converts one message at a time: the same error.
    from ctxpack.adapters.langchain import message_from_langchain

    with pytest.raises(ctxpack.InvalidMessageError) as one:
        message_from_langchain(message, 4)
    assert (one.value.index, one.value.field) == (4, f"content[1].{field}")


def test_langchain_media_blocks_holding_strings_pass() -> None:
    blocks = [
        {"type": "image", "url": "https://example.com/cat.png"},
        {"type": "image", "base64": "iVBORw0KGgo", "mime_type": "image/png"},
        {
            "type": "image",
            "source_type": "base64",
            "data": "iVBORw0KGgo=",
            "mime_type": "image/png",
        },
        {"type": "image", "source_type": "url", "url": "data:image/png;base64,iVBORw0KGgo="},
        {"type": "file", "source_type": "id", "id": "file-1"},
    ]
    (message,) = from_langchain([lc.HumanMessage(content=blocks)])
    assert message.content == blocks


@pytest.mark.parametrize("entry_point", ["pack", "Session.extend", "ensure_messages"])
def test_langchain_messages_given_unconverted_say_how_to_convert(entry_point: str) -> None:
    history = [{"role": "user", "content": "x"}, lc.HumanMessage("hi")]
    with pytest.raises(ctxpack.InvalidMessageError, match=r"from_langchain\(messages\)") as info:
        if entry_point == "pack":
            pack(history, budget=100, counter="cl100k_base")
        elif entry_point == "Session.extend":
            ctxpack.Session(counter="cl100k_base").extend(history)
        else:
            ctxpack.messages.ensure_messages(history)
    assert info.value.index == 1 and "LangChain HumanMessage" in str(info.value)
    # Converted, the same history goes through.
    assert pack([history[0], *from_langchain(history[1:])], budget=100).messages


def test_one_message_of_a_history_converts_alone_with_its_index() -> None:
    from ctxpack.adapters.langchain import message_from_langchain

    history = [
        lc.HumanMessage("Hi", id="h"),
        lc.AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": None}]),
    ]
    alone = [message_from_langchain(m, i) for i, m in enumerate(history)]
    together = from_langchain(history)
    assert [m.model_dump(exclude={"id"}) for m in alone] == [
        m.model_dump(exclude={"id"}) for m in together
    ]
    with pytest.raises(ctxpack.InvalidMessageError, match="message 7") as caught:
        message_from_langchain("not a message", 7)
    assert caught.value.index == 7


def test_a_streamed_reply_summed_reads_as_the_message_it_makes() -> None:
    # model.stream()'s chunks summed give an AIMessageChunk, which chat models take in a
    # history; it was refused ("LangChain message type 'AIMessageChunk' has no ctxpack role").
    call = {"name": "search", "args": '{"q": "os', "id": "c1", "index": 0}
    rest = {"name": None, "args": 'lo"}', "id": None, "index": 0}
    reply = lc.AIMessageChunk("Looking.", tool_call_chunks=[call]) + lc.AIMessageChunk(
        "", tool_call_chunks=[rest]
    )
    history = [lc.HumanMessage("Weather?"), reply, lc.ToolMessageChunk("3 C", tool_call_id="c1")]
    msgs = from_langchain(history)
    assert [m.role for m in msgs] == ["user", "assistant", "tool"]
    assert (msgs[1].tool_calls or [])[0].function.arguments == '{"q": "oslo"}'
    assert to_langchain(msgs)[1] == lc.message_chunk_to_message(reply)


def test_a_tool_messages_artifact_keeps_no_secret_in_the_session_or_its_database(
    tmp_path: Path,
) -> None:
    # A tool built with response_format="content_and_artifact" hands LangChain the raw output
    # as the ToolMessage's artifact, which from_langchain keeps (metadata["langchain"]) to give
    # it back: the content was redacted, the artifact went to the transcript and the database.
    token = "ghp_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"
    history = [
        lc.HumanMessage("Which token does CI use?"),
        lc.AIMessage("", tool_calls=[{"name": "env", "args": {}, "id": "c1"}]),
        lc.ToolMessage(
            "1 variable printed (in the artifact)",
            tool_call_id="c1",
            artifact={"stdout": f"GITHUB_TOKEN={token}\n", "exit_code": 0},
        ),
    ]
    session = ctxpack.Session.open("lc", store=f"sqlite:///{tmp_path / 's.db'}", model="gpt-4")
    session.extend(from_langchain(history))
    sent = to_langchain(session.render().messages)
    assert sent[-1].artifact == {"stdout": "GITHUB_TOKEN=[REDACTED github-pat]\n", "exit_code": 0}
    assert token not in repr(session.transcript())
    session.close()
    assert not any(token.encode() in path.read_bytes() for path in tmp_path.iterdir())


def test_a_failed_tool_result_crosses_langchain_and_anthropic() -> None:
    """LangChain says a tool failed with ToolMessage(status="error"), Anthropic with is_error:
    each was lost in the other's format, and the model read the failure as the answer."""
    use = {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}
    history = [
        {"role": "user", "content": "List."},
        {"role": "assistant", "content": [use]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": True}
            ],
        },
    ]
    assert to_langchain(ctxpack.from_anthropic(history))[2].status == "error"
    converted = to_langchain(ctxpack.from_anthropic(history))
    converted[2] = lc.ToolMessage(content="boom", tool_call_id="t1", status="error")
    back = from_langchain(converted)
    assert ctxpack.to_anthropic(back)["messages"][2]["content"][0]["is_error"] is True
    assert ctxpack.to_openai(back)[2]["content"] == "[tool error] boom"
    fine = lc.ToolMessage(content="ok", tool_call_id="t1")
    assert (
        "is_error"
        not in ctxpack.to_anthropic(from_langchain([*converted[:2], fine]))["messages"][2][
            "content"
        ][0]
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("refusal", "I can't help with that."),
        ("function_call", {"name": "weather", "arguments": '{"city": "Oslo"}'}),
    ],
)
def test_the_openai_fields_langchain_keeps_in_additional_kwargs_cross_both_ways(
    key: str, value: Any
) -> None:
    # langchain-openai reads an assistant's refusal and legacy function_call into
    # additional_kwargs (and sends the function_call back): each way they were left out, the
    # refusal's text uncounted and lost to Anthropic, the legacy call lost to Chat Completions.
    history = [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": None, key: value},
    ]
    converted = to_langchain(history)
    assert converted[1].additional_kwargs == {key: value}
    read = from_langchain([lc.HumanMessage("Weather in Oslo?"), converted[1]])
    assert read[1].extras == {key: value}
    assert ctxpack.to_openai(read)[1][key] == value
    spoken = lc.AIMessage("", additional_kwargs={key: value}, id="a1")
    assert to_langchain(from_langchain([spoken]))[0] == spoken


def test_a_legacy_function_call_beside_tool_calls_is_left_out_as_langchain_openai_does() -> None:
    # OpenAI refuses a message with both; langchain-openai sends the tool calls alone.
    call = {"name": "weather", "args": {"city": "Oslo"}, "id": "c1", "type": "tool_call"}
    legacy = {"name": "weather", "arguments": '{"city": "Oslo"}'}
    both = lc.AIMessage("", tool_calls=[call], additional_kwargs={"function_call": legacy})
    read = from_langchain([lc.HumanMessage("Weather in Oslo?"), both])
    assert "function_call" not in ctxpack.to_openai(read)[1]
    assert to_langchain(read)[1] == both


def test_an_assistant_s_audio_reply_crosses_langchain_both_ways() -> None:
    # langchain-openai keeps an audio reply in additional_kwargs["audio"] and sends its id
    # back to Chat Completions: each way the reply was left out, and with it the model's turn
    # (an empty assistant message was sent in its place).
    history = [
        {"role": "user", "content": "Say hello."},
        {"role": "assistant", "content": None, "audio": {"id": "audio_abc123"}},
        {"role": "user", "content": "Again."},
    ]
    converted = to_langchain(history)
    assert converted[1].additional_kwargs == {"audio": {"id": "audio_abc123"}}
    assert ctxpack.to_openai(from_langchain(converted))[1]["audio"] == {"id": "audio_abc123"}
    spoken = lc.AIMessage("", additional_kwargs={"audio": {"id": "audio_abc123"}}, id="a1")
    read = from_langchain([lc.HumanMessage("Say hello."), spoken])
    assert read[1].extras["audio"] == {"id": "audio_abc123"}
    assert to_langchain(read)[1] == spoken
    # Where no input refers to it, it is refused by name, as the dict is.
    with pytest.raises(ctxpack.InvalidMessageError, match="message 1: audio: "):
        ctxpack.to_anthropic(read)
