"""The SDKs' own objects are accepted wherever a dict is, converted losslessly.

Every object here is made by the real SDK parsing a (mocked) API reply, as in the providers'
tutorials; "lossless" is checked against the request the SDK itself sends for the same history.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import anthropic
import pydantic
import pytest

import ctxpack
from tests.sdk_mock import (
    WEATHER_TOOL,
    Capture,
    anthropic_client,
    anthropic_message,
    chat_completion,
    openai_client,
)

TOOL_CALL_REPLY = {
    "role": "assistant",
    "content": None,
    "refusal": None,
    "annotations": [],
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
        }
    ],
}


def openai_tutorial_history() -> list[Any]:
    """OpenAI's function-calling tutorial: the reply's message is appended as it is."""
    client = openai_client(Capture(chat_completion(TOOL_CALL_REPLY)))
    history: list[Any] = [
        {"role": "system", "content": "You are a travel agent."},
        {"role": "user", "content": "Weather in Oslo? " + "Also tell me about fjords. " * 30},
    ]
    response = client.chat.completions.create(model="gpt-4", messages=history, tools=[WEATHER_TOOL])
    history.append(response.choices[0].message)
    history.append({"role": "tool", "tool_call_id": "call_1", "content": "3 C, light snow."})
    return history


def sent_by_sdk(history: list[Any]) -> list[dict[str, Any]]:
    """The ``messages`` the OpenAI SDK itself sends for ``history``."""
    capture = Capture(chat_completion({"role": "assistant", "content": "ok"}))
    openai_client(capture).chat.completions.create(model="gpt-4", messages=history)
    messages: list[dict[str, Any]] = capture.body["messages"]
    return messages


def test_a_chat_completion_message_is_packed_like_a_dict() -> None:
    history = openai_tutorial_history()
    assert type(history[2]).__name__ == "ChatCompletionMessage"
    result = ctxpack.pack(history, budget=10_000, model="gpt-4", tools=[WEATHER_TOOL])
    # Nothing cut: what ctxpack sends is byte for byte what the SDK would have sent.
    assert result.to_openai() == sent_by_sdk(history)
    assert result.messages[2].tool_calls is not None
    assert result.messages[2].tool_calls[0].function.arguments == '{"city": "Oslo"}'


def test_a_chat_completion_message_is_accepted_by_every_openai_entry_point() -> None:
    history = openai_tutorial_history()
    ctxpack.adapters.validate_openai(history)
    assert ctxpack.to_openai(ctxpack.from_openai(history)) == sent_by_sdk(history)
    assert ctxpack.to_openai(history) == sent_by_sdk(history)
    plain = sent_by_sdk(history)
    assert ctxpack.count_tokens(history, model="gpt-4") == ctxpack.count_tokens(
        plain, model="gpt-4"
    )


def test_a_tool_exchange_made_of_sdk_objects_is_dropped_whole() -> None:
    history = openai_tutorial_history()
    history[3] = {**history[3], "content": "Oslo: 3 C, light snow. " * 40}
    history.append({"role": "assistant", "content": "It is 3 C with light snow."})
    history.append({"role": "user", "content": "And tomorrow?"})
    result = ctxpack.pack(history, budget=60, model="gpt-4")
    sent = result.to_openai()
    ctxpack.adapters.validate_openai(sent)
    assert all(m["role"] != "tool" and not m.get("tool_calls") for m in sent)


def test_the_whole_response_is_refused_with_what_to_append_instead() -> None:
    client = openai_client(Capture(chat_completion({"role": "assistant", "content": "Hi"})))
    response = client.chat.completions.create(model="gpt-4", messages=[])
    with pytest.raises(ctxpack.InvalidMessageError, match=r"choices\[0\]\.message") as err:
        ctxpack.pack([{"role": "user", "content": "hi"}, response], budget=100)
    assert err.value.index == 1


def test_a_parsed_message_loses_only_what_the_sdk_parsed_locally() -> None:
    class City(pydantic.BaseModel):
        name: str

    reply = {"role": "assistant", "content": '{"name": "Oslo"}', "refusal": None}
    client = openai_client(Capture(chat_completion(reply)))
    parsed = client.chat.completions.parse(
        model="gpt-4", messages=[{"role": "user", "content": "A city?"}], response_format=City
    )
    message = parsed.choices[0].message
    assert message.parsed == City(name="Oslo")
    [sent] = ctxpack.to_openai([message])
    assert sent == {"role": "assistant", "content": '{"name": "Oslo"}', "refusal": None}


# ----------------------------------------------------------------------------------- Anthropic

CLAUDE_BLOCKS: list[dict[str, Any]] = [
    {"type": "thinking", "thinking": "The user wants weather.", "signature": "sig-1"},
    {"type": "redacted_thinking", "data": "opaque-bytes"},
    {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "web_search",
        "input": {"query": "Oslo weather"},
    },
    {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [
            {
                "type": "web_search_result",
                "url": "https://weather.example/oslo",
                "title": "Oslo weather",
                "encrypted_content": "enc",
                "page_age": None,
            }
        ],
    },
    {"type": "text", "text": "Let me check the station too.", "citations": None},
    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
]


def anthropic_tutorial_history() -> tuple[str, list[Any]]:
    """Anthropic's tool-use tutorial: ``response.content`` is appended as it is."""
    client = anthropic_client(Capture(anthropic_message(CLAUDE_BLOCKS)))
    system = "You are a travel agent."
    history: list[Any] = [
        {"role": "user", "content": "Weather in Oslo? " + "Tell me about fjords too. " * 30}
    ]
    response = client.messages.create(
        model="claude-sonnet-5-5", max_tokens=1024, system=system, messages=history
    )
    history.append({"role": "assistant", "content": response.content})
    history.append(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "3 C"}],
        }
    )
    return system, history


def anthropic_sent_by_sdk(system: Any, history: list[Any], *, beta: bool = False) -> Any:
    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
    client = anthropic_client(capture)
    messages = client.beta.messages if beta else client.messages
    messages.create(model="claude-sonnet-5-5", max_tokens=10, system=system, messages=history)
    return {"system": capture.body["system"], "messages": capture.body["messages"]}


def test_anthropic_content_blocks_round_trip_as_the_sdk_sends_them() -> None:
    system, history = anthropic_tutorial_history()
    kinds = [type(block).__name__ for block in history[1]["content"]]
    assert kinds == [
        "ThinkingBlock",
        "RedactedThinkingBlock",
        "ServerToolUseBlock",
        "WebSearchToolResultBlock",
        "TextBlock",
        "ToolUseBlock",
    ]
    ctxpack.adapters.validate_anthropic({"system": system, "messages": history})
    msgs = ctxpack.from_anthropic(history, system=system)
    assert ctxpack.to_anthropic(msgs) == anthropic_sent_by_sdk(system, history)
    result = ctxpack.pack(msgs, budget=10_000)
    assert result.to_anthropic() == anthropic_sent_by_sdk(system, history)


def test_an_anthropic_exchange_of_sdk_blocks_is_packed_valid() -> None:
    system, history = anthropic_tutorial_history()
    history.append({"role": "assistant", "content": "It is 3 C."})
    history.append({"role": "user", "content": "And tomorrow?"})
    result = ctxpack.pack(ctxpack.from_anthropic(history, system=system), budget=60)
    payload = result.to_anthropic()
    ctxpack.adapters.validate_anthropic(payload)
    assert payload["messages"][-1] == {"role": "user", "content": "And tomorrow?"}


def test_the_anthropic_response_itself_becomes_its_role_and_content() -> None:
    client = anthropic_client(Capture(anthropic_message(CLAUDE_BLOCKS[-2:])))
    response = client.messages.create(
        model="claude-sonnet-5-5", max_tokens=10, messages=[{"role": "user", "content": "Hi"}]
    )
    history = [{"role": "user", "content": "Hi"}, response]
    payload = ctxpack.to_anthropic(ctxpack.from_anthropic(history))
    assert payload["messages"][1] == {"role": "assistant", "content": CLAUDE_BLOCKS[-2:]}


def test_system_blocks_from_the_sdk_are_accepted() -> None:
    system = [anthropic.types.TextBlock(type="text", text="Be brief.")]
    payload = ctxpack.to_anthropic(
        ctxpack.from_anthropic([{"role": "user", "content": "Hi"}], system=system)
    )
    assert payload["system"] == [{"type": "text", "text": "Be brief."}]


def test_a_compaction_block_is_kept_byte_for_byte() -> None:
    compaction = {
        "type": "compaction",
        "content": "Summary: the user plans a trip to Oslo in March.",
        "signature": "sig-compaction",
    }
    reply = anthropic_message([compaction, {"type": "text", "text": "Noted.", "citations": None}])
    client = anthropic_client(Capture(reply))
    response = client.beta.messages.create(
        model="claude-sonnet-5-5", max_tokens=10, messages=[{"role": "user", "content": "Plan"}]
    )
    assert type(response.content[0]).__name__ == "BetaCompactionBlock"
    history = [
        {"role": "user", "content": "Plan"},
        {"role": "assistant", "content": response.content},
        {"role": "user", "content": "Go on."},
    ]
    payload = ctxpack.pack(ctxpack.from_anthropic(history), budget=10_000).to_anthropic()
    ctxpack.adapters.validate_anthropic(payload)
    # What comes before a compaction block is the adapter's business (the API drops it); the
    # block itself goes back exactly as the SDK would send it.
    sent = anthropic_sent_by_sdk(None, history, beta=True)
    assert sent["messages"][1]["content"][0] == compaction
    assert sent_blocks(payload["messages"])[0] == compaction
    assert payload["messages"][-1] == {"role": "user", "content": "Go on."}


def sent_blocks(messages: list[dict[str, Any]]) -> list[Any]:
    return [b for m in messages if isinstance(m["content"], list) for b in m["content"]]


def test_a_content_block_given_as_a_message_is_refused_with_the_fix() -> None:
    block = anthropic.types.TextBlock(type="text", text="hi")
    with pytest.raises(ctxpack.InvalidMessageError, match='"role": "assistant"') as err:
        ctxpack.from_anthropic([{"role": "user", "content": "x"}, block])
    assert err.value.index == 1


# ----------------------------------------------------------------------- OpenAI Responses API


def test_responses_api_items_map_onto_chat_messages() -> None:
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage
    from openai.types.responses.response_input_item import FunctionCallOutput

    said = ResponseOutputMessage.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
        }
    )
    call = ResponseFunctionToolCall.model_validate(
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_9",
            "name": "get_weather",
            "arguments": '{"city": "Oslo"}',
            "status": "completed",
        }
    )
    output = FunctionCallOutput.model_validate(
        {"type": "function_call_output", "call_id": "call_9", "output": "3 C"}
    )
    history = [{"role": "user", "content": "Weather?"}, said, call, output]
    msgs = ctxpack.messages.ensure_messages(history)
    assert [m.role for m in msgs] == ["user", "assistant", "assistant", "tool"]
    assert msgs[1].content == [{"type": "text", "text": "Checking."}]
    assert msgs[2].tool_calls is not None and msgs[2].tool_calls[0].id == "call_9"
    assert msgs[3].tool_call_id == "call_9" and msgs[3].text == "3 C"
    # The items themselves are kept: nothing the API returned is lost.
    assert msgs[2].metadata["openai_responses"] == call.model_dump(
        mode="json", by_alias=True, exclude_unset=True
    )
    ctxpack.adapters.validate_openai(ctxpack.to_openai(msgs))


def test_a_responses_item_without_a_chat_message_is_refused_with_index_and_field() -> None:
    from openai.types.responses.response_input_item import ImageGenerationCall

    image = ImageGenerationCall.model_validate(
        {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": "iVBO"}
    )
    with pytest.raises(ctxpack.InvalidMessageError, match="'image_generation_call'") as err:
        ctxpack.pack([{"role": "user", "content": "hi"}, image], budget=100)
    assert (err.value.index, err.value.field) == (1, "type")


@pytest.mark.parametrize(
    "item",
    [
        {"type": "tool_search_call", "arguments": {"query": "crm"}},
        {"type": "tool_search_output", "tools": []},
    ],
    ids=lambda item: item["type"],
)
def test_a_responses_item_of_a_newer_tool_is_refused_by_its_type(item: dict[str, Any]) -> None:
    """Tool search's items were read as chat messages and refused for a missing role, which the
    caller's item never has (the shell and apply_patch tools' items are carried:
    tests/adapters/test_client_tool_items.py; a compaction item too:
    tests/test_openai_compaction_items.py)."""
    history = [{"role": "user", "content": "hi"}, item]
    for read in (ctxpack.from_openai, lambda h: ctxpack.pack(h, budget=1_000)):
        with pytest.raises(ctxpack.InvalidMessageError, match=f"'{item['type']}' item") as err:
            read(history)
        assert (err.value.index, err.value.field) == (1, "type")


# ------------------------------------------------------------------------------ the boundary


def test_an_sdk_object_edited_in_place_is_converted_again() -> None:
    block = anthropic.types.TextBlock(type="text", text="short")
    history = [{"role": "user", "content": "q"}, {"role": "assistant", "content": [block]}]
    first = ctxpack.messages.ensure_messages(history)
    block.text = "a much longer answer than before"
    second = ctxpack.messages.ensure_messages(history)
    assert first[1].text == "short"
    assert second[1].text == "a much longer answer than before"


def test_a_chat_completion_message_edited_in_place_is_converted_again() -> None:
    history = openai_tutorial_history()
    history.append({"role": "assistant", "content": "It is 3 C."})
    message = history[2]
    first = ctxpack.pack(history, budget=10_000, model="gpt-4")
    again = ctxpack.pack(history, budget=10_000, model="gpt-4")
    assert again.to_openai() == first.to_openai()
    message.tool_calls[0].function.arguments = '{"city": "Bergen"}'
    edited = ctxpack.pack(history, budget=10_000, model="gpt-4")
    assert edited.to_openai()[2]["tool_calls"][0]["function"]["arguments"] == ('{"city": "Bergen"}')


def test_the_input_is_never_mutated() -> None:
    system, history = anthropic_tutorial_history()
    before = [json.dumps(m, default=repr, sort_keys=True) for m in history]
    ctxpack.pack(ctxpack.from_anthropic(history, system=system), budget=400)
    assert [json.dumps(m, default=repr, sort_keys=True) for m in history] == before
    assert type(history[1]["content"][0]).__name__ == "ThinkingBlock"


def test_other_objects_are_still_refused() -> None:
    class Note:
        role = "user"
        content = "hi"

    with pytest.raises(ctxpack.InvalidMessageError, match="got Note") as err:
        ctxpack.pack([Note()], budget=100)
    assert err.value.index == 0


def test_ctxpack_does_not_import_the_sdks() -> None:
    code = (
        "import sys, ctxpack\n"
        "ctxpack.pack([{'role': 'user', 'content': [{'type': 'text', 'text': 'hi'}]}],"
        " budget=100)\n"
        "ctxpack.from_anthropic([{'role': 'user', 'content': 'hi'}])\n"
        "print(sorted({'openai', 'anthropic', 'httpx2'} & set(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_a_session_takes_the_sdks_objects_too() -> None:
    _, history = anthropic_tutorial_history()
    session = ctxpack.Session(counter="cl100k_base")
    session.extend(history, provider="anthropic")
    payload = session.render(provider="anthropic").to_anthropic()
    assert payload["messages"][1]["content"] == CLAUDE_BLOCKS
    openai_session = ctxpack.Session(model="gpt-4")
    openai_session.extend(openai_tutorial_history())
    sent = openai_session.render().to_openai()
    assert sent[2]["tool_calls"] == TOOL_CALL_REPLY["tool_calls"]


def test_parallel_responses_function_calls_become_one_assistant_message() -> None:
    from openai.types.responses import ResponseFunctionToolCall
    from openai.types.responses.response_input_item import FunctionCallOutput

    def call(call_id: str, city: str) -> ResponseFunctionToolCall:
        return ResponseFunctionToolCall.model_validate(
            {
                "type": "function_call",
                "call_id": call_id,
                "name": "get_weather",
                "arguments": json.dumps({"city": city}),
            }
        )

    def output(call_id: str, text: str) -> FunctionCallOutput:
        return FunctionCallOutput.model_validate(
            {"type": "function_call_output", "call_id": call_id, "output": text}
        )

    items = [
        {"role": "user", "content": "Weather in Oslo and Bergen?"},
        call("call_a", "Oslo"),
        call("call_b", "Bergen"),
        output("call_a", "3 C"),
        output("call_b", "6 C"),
    ]
    ctxpack.adapters.validate_openai(items)
    msgs = ctxpack.from_openai(items)
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "tool"]
    assert msgs[1].tool_calls is not None
    assert [c.id for c in msgs[1].tool_calls] == ["call_a", "call_b"]
    assert [i["call_id"] for i in msgs[1].metadata["openai_responses"]] == ["call_a", "call_b"]
    sent = ctxpack.pack(msgs, budget=1000).to_openai()
    ctxpack.adapters.validate_openai(sent)


# The same history as OpenAI's guides write it, in dicts: a user turn, a message item and two
# parallel calls, then their outputs.
RESPONSES_DICTS: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather in Oslo and Bergen?"},
    {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Checking both.", "annotations": []}],
    },
    {"type": "function_call", "call_id": "call_a", "name": "get_weather", "arguments": "{}"},
    {"type": "function_call", "call_id": "call_b", "name": "get_weather", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_a", "output": "3 C"},
    {"type": "function_call_output", "call_id": "call_b", "output": "6 C"},
]


def test_responses_api_items_written_as_dicts_are_converted_as_the_sdk_objects_are() -> None:
    # Before, each item but the first was refused: "role: is missing".
    items = json.loads(json.dumps(RESPONSES_DICTS))
    msgs = ctxpack.from_openai(items)
    assert [m.role for m in msgs] == ["user", "assistant", "assistant", "tool", "tool"]
    assert msgs[1].content == [{"type": "text", "text": "Checking both."}]
    assert msgs[2].tool_calls is not None
    assert [c.id for c in msgs[2].tool_calls] == ["call_a", "call_b"]
    assert [m.tool_call_id for m in msgs[3:]] == ["call_a", "call_b"]
    assert msgs[2].metadata["openai_responses"] == RESPONSES_DICTS[2:4]
    ctxpack.adapters.validate_openai(ctxpack.to_openai(msgs))
    # The items are the caller's: neither changed, nor shared with what ctxpack keeps.
    assert items == RESPONSES_DICTS
    items[4]["output"] = "edited"
    assert msgs[3].text == "3 C"
    # pack() converts item by item (as for the SDK's objects): the outputs and calls are there.
    packed = ctxpack.pack(RESPONSES_DICTS, budget=1_000, counter="cl100k_base")
    assert [m.tool_call_id for m in packed.messages if m.role == "tool"] == ["call_a", "call_b"]


@pytest.mark.parametrize("as_objects", [False, True], ids=["dicts", "sdk objects"])
def test_a_session_joins_the_parallel_calls_of_one_batch(as_objects: bool) -> None:
    from openai.types.responses import ResponseFunctionToolCall

    items: list[Any] = json.loads(json.dumps(RESPONSES_DICTS))
    if as_objects:
        items[2:4] = [ResponseFunctionToolCall.model_validate(item) for item in items[2:4]]
    session = ctxpack.Session(counter="cl100k_base")
    session.extend(items[:4])  # response.output, as an agent extends its history
    for output in items[4:]:
        session.append(output)
    assert [m.role for m in session.transcript()] == [
        "user",
        "assistant",
        "assistant",
        "tool",
        "tool",
    ]
    sent = session.render().to_openai()
    # Two assistant messages of one call each would leave call_a unanswered before call_b.
    ctxpack.adapters.validate_openai(sent)
    assert [c["id"] for c in sent[2]["tool_calls"]] == ["call_a", "call_b"]


def test_a_responses_item_dict_without_a_chat_message_is_refused_by_name() -> None:
    reference = {"type": "item_reference", "id": "msg_1"}
    session = ctxpack.Session(counter="cl100k_base")
    session.append({"role": "user", "content": "hi"})
    with pytest.raises(
        ctxpack.InvalidMessageError, match=r"'item_reference' item.*only OpenAI stores"
    ) as err:
        session.extend([{"role": "assistant", "content": "ok"}, reference])
    assert (err.value.index, err.value.field) == (2, "type")
    assert len(session.transcript()) == 1  # nothing of the batch was added
    # A chat message, or Anthropic's response as a dict (a "message" of text blocks), is not
    # a Responses item.
    reply = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "Hi"}]}
    assert ctxpack.from_anthropic([{"role": "user", "content": "Hi"}, reply])[1].text == "Hi"


def _retrieve_reply_openai(artifact: str) -> dict[str, Any]:
    arguments = json.dumps({"artifact": artifact, "lines": "2-3"})
    function = {"name": "retrieve_original", "arguments": arguments}
    call = {"id": "call_r", "type": "function", "function": function}
    return chat_completion({**TOOL_CALL_REPLY, "tool_calls": [call]})


def test_session_handle_takes_the_openai_sdk_tool_call() -> None:
    session = ctxpack.Session(model="gpt-4")
    artifact = session.store.put("one\ntwo\nthree")
    client = openai_client(Capture(_retrieve_reply_openai(artifact)))
    response = client.chat.completions.create(
        model="gpt-4", messages=[{"role": "user", "content": "read it"}]
    )
    call = response.choices[0].message.tool_calls[0]  # the SDK's own object
    assert session.handle(call) == session.handle(call.model_dump())
    assert session.handle(call).endswith("two\nthree")


def test_session_handle_takes_the_anthropic_tool_use_block() -> None:
    session = ctxpack.Session(counter="cl100k_base")
    artifact = session.store.put("one\ntwo\nthree")
    block = {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "retrieve_original",
        "input": {"artifact": artifact, "regex": "thr", "context": 0},
    }
    client = anthropic_client(Capture(anthropic_message([block])))
    response = client.messages.create(
        model="claude-sonnet-4-5", max_tokens=100, messages=[{"role": "user", "content": "x"}]
    )
    (tool_use,) = response.content
    assert type(tool_use).__name__ == "ToolUseBlock"
    assert session.handle(tool_use).endswith("3:three")
    # A call to another tool is still the caller's dispatch bug.
    with pytest.raises(ctxpack.ConfigError, match="'bash'"):
        session.handle(tool_use.model_copy(update={"name": "bash"}))


def test_handle_takes_a_responses_function_call_item() -> None:
    from openai.types.responses import ResponseFunctionToolCall

    session = ctxpack.Session(model="gpt-4")
    artifact = session.store.put("one\ntwo\nthree")
    item = ResponseFunctionToolCall(
        type="function_call",
        call_id="c1",
        name="retrieve_original",
        arguments=json.dumps({"artifact": artifact, "lines": "1"}),
    )
    assert session.handle(item).endswith("\none")
    with pytest.raises(ctxpack.ConfigError, match="'bash'"):
        session.handle(item.model_copy(update={"name": "bash"}))
