"""A packed history written back as OpenAI Responses API input items."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest

import ctxpack
from ctxpack.adapters import from_anthropic, from_openai, to_openai
from tests.api_rules import openai_problems, responses_problems
from tests.sdk_mock import Capture, openai_client
from tests.test_clients_responses import response

openai_responses = pytest.importorskip("openai.types.responses")
ITEM = pydantic.TypeAdapter(openai_responses.ResponseInputItem)


def to_responses(messages: Any) -> list[dict[str, Any]]:
    return to_openai(messages, api="responses")


CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Weather where this photo was taken, and in Bergen?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/oslo.jpg"}},
        ],
    },
    {
        "role": "assistant",
        "content": "Checking both.",
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            },
            {
                "id": "call_b",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Bergen"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_a", "content": "3 C"},
    {"role": "tool", "tool_call_id": "call_b", "content": [{"type": "text", "text": "6 C"}]},
    {"role": "assistant", "content": "Oslo 3 C, Bergen 6 C."},
]


def test_each_chat_message_becomes_its_responses_item() -> None:
    items = to_responses(CHAT)
    assert items == [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": "Weather where this photo was taken, and in Bergen?",
                },
                {
                    "type": "input_image",
                    "image_url": "https://example.com/oslo.jpg",
                    "detail": "auto",
                },
            ],
        },
        {"role": "assistant", "content": "Checking both."},
        {
            "type": "function_call",
            "call_id": "call_a",
            "name": "get_weather",
            "arguments": '{"city": "Oslo"}',
        },
        {
            "type": "function_call",
            "call_id": "call_b",
            "name": "get_weather",
            "arguments": '{"city": "Bergen"}',
        },
        {"type": "function_call_output", "call_id": "call_a", "output": "3 C"},
        {
            "type": "function_call_output",
            "call_id": "call_b",
            "output": [{"type": "input_text", "text": "6 C"}],
        },
        {"role": "assistant", "content": "Oslo 3 C, Bergen 6 C."},
    ]
    # Each item is one the SDK's own model of an input item reads.
    for item in items:
        ITEM.validate_python(item)


def test_the_sdk_sends_them_as_written() -> None:
    capture = Capture(
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 0,
            "model": "gpt-4o",
            "status": "completed",
            "output": [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
    )
    items = ctxpack.pack(CHAT, budget=10_000, counter="cl100k_base").to_openai(api="responses")
    openai_client(capture).responses.create(model="gpt-4o", input=items)  # type: ignore[arg-type]
    assert capture.paths[-1].endswith("/responses")
    assert capture.body["input"] == items == to_responses(CHAT)


def test_responses_items_read_then_written_come_back_without_their_ids() -> None:
    given = [
        {"role": "user", "content": "Weather in Oslo?"},
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_a",
            "name": "get_weather",
            "arguments": "{}",
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": "call_a", "output": "3 C"},
    ]
    items = to_responses(from_openai(given))
    # A function_call sent with its id needs the reasoning item before it: written new.
    assert items == [
        given[0],
        {k: v for k, v in given[1].items() if k not in {"id", "status"}},
        given[2],
    ]


@pytest.mark.parametrize(
    "part",
    [
        {"type": "input_image", "file_id": "file-abc", "detail": "auto"},
        {"type": "input_file", "file_url": "https://example.com/report.pdf"},
    ],
)
def test_a_part_by_id_or_url_reads_the_same_with_or_without_the_message_type(
    part: dict[str, Any],
) -> None:
    plain = from_openai([{"role": "user", "content": [part]}])
    typed = from_openai([{"type": "message", "role": "user", "content": [part]}])
    assert typed[0].content == plain[0].content == [part]
    assert to_responses(typed) == [{"role": "user", "content": [part]}]


def test_an_anthropic_tool_results_image_and_a_content_document_reach_the_responses_api() -> None:
    png = "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAAA=="
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    chunks = {"type": "content", "content": [{"type": "text", "text": "chunk one"}]}
    history = from_anthropic(
        [
            {
                "role": "user",
                "content": [{"type": "document", "source": chunks}, {"type": "text", "text": "Go"}],
            },
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "shot", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "here"}, image],
                    }
                ],
            },
        ]
    )
    items = to_responses(history)
    assert items[0]["content"][0] == {"type": "input_text", "text": "chunk one"}
    assert [part["type"] for part in items[2]["output"]] == ["input_text", "input_image"]
    assert items[2]["output"][1]["image_url"] == f"data:image/png;base64,{png}"
    # Chat Completions' tool message takes text only: a note stands where the image was, so
    # that the model knows the tool returned one (it was dropped silently).
    assert to_openai(history)[2]["content"] == [
        {"type": "text", "text": "here"},
        {"type": "text", "text": "[image not sent: a tool message holds text only]"},
    ]


def test_an_anthropic_history_is_written_too() -> None:
    history = [
        {"role": "user", "content": "List files."},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "ls will do", "signature": "sig"},
                {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"cmd": "ls"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}],
        },
    ]
    items = to_responses(from_anthropic(history))
    assert [item.get("type", item.get("role")) for item in items] == [
        "user",
        "function_call",
        "function_call_output",
    ]
    assert json.loads(items[1]["arguments"]) == {"cmd": "ls"}
    for item in items:
        ITEM.validate_python(item)


def test_an_unknown_api_is_a_config_error() -> None:
    with pytest.raises(ctxpack.ConfigError, match="api must be"):
        to_openai(CHAT, api="assistants")  # type: ignore[arg-type]


def test_a_part_with_no_responses_input_is_refused_with_index_and_field() -> None:
    audio = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
    history = [{"role": "user", "content": "hi"}, {"role": "user", "content": [audio]}]
    with pytest.raises(ctxpack.InvalidMessageError, match="'input_audio'") as info:
        to_responses(history)
    assert (info.value.index, info.value.field) == (1, "content[0].type")


@pytest.mark.parametrize(
    ("part", "field"),
    [
        ({"type": "image_url", "image_url": 1}, "content[0].image_url"),
        ({"type": "image_url", "image_url": None}, "content[0].image_url"),
        ({"type": "file", "file": 1}, "content[0].file"),
        ({"type": "file", "file": "report.pdf"}, "content[0].file"),
    ],
)
def test_a_built_message_s_malformed_part_is_refused_by_name_for_the_responses_api(
    part: dict[str, Any], field: str
) -> None:
    # A Message holding an image or file part whose payload is no object: an AttributeError or
    # TypeError from inside the conversion, or an input_image without a URL sent to the API,
    # which refuses it. Building one is refused, as a dict is; one that skipped validation
    # (model_construct, model_copy(update=...)) is refused by the conversion.
    with pytest.raises(ctxpack.InvalidMessageError, match="must be an object") as info:
        ctxpack.Message(role="user", content=[part])
    assert info.value.field == field
    history = [
        ctxpack.Message(role="user", content="hi"),
        ctxpack.Message.model_construct(role="user", content=[part], id="u2"),
    ]
    with pytest.raises(ctxpack.InvalidMessageError, match="must be an object") as info:
        to_openai(history, api="responses")
    assert (info.value.index, info.value.field) == (1, field)


def test_a_managed_session_renders_for_the_responses_api() -> None:
    session = ctxpack.Session(counter="cl100k_base", window=8_000)
    session.extend(
        [
            {"role": "user", "content": "Weather in Oslo?"},
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "3 C"},
        ]
    )
    items = session.render().to_openai(api="responses")
    assert [item.get("type", "message") for item in items] == [
        "message",
        "function_call",
        "function_call_output",
    ]


@pytest.mark.parametrize(
    ("item", "field", "said"),
    [
        ({"type": "function_call_output", "call_id": 5, "output": "3 C"}, "call_id", "got int"),
        ({"type": "function_call", "call_id": "a", "name": "f"}, "arguments", "missing"),
        (
            {"type": "function_call", "call_id": "", "name": "f", "arguments": "{}"},
            "call_id",
            "empty",
        ),
        ({"type": "function_call", "call_id": "a", "arguments": "{}"}, "name", "missing"),
        ({"type": "function_call_output", "call_id": "a", "output": None}, "output", "NoneType"),
    ],
)
def test_a_malformed_responses_item_is_refused_under_its_own_field_names(
    item: dict[str, Any], field: str, said: str
) -> None:
    # The error names the Responses API's field, not the Chat Completions one it becomes.
    with pytest.raises(
        ctxpack.InvalidMessageError, match=f"{item['type']} item's {field}"
    ) as error:
        from_openai([{"role": "user", "content": "hi"}, item])
    assert (error.value.index, error.value.field) == (1, field)
    assert said in str(error.value)


PARALLEL_SHOTS: list[dict[str, Any]] = [
    {"role": "user", "content": "Screenshot both windows"},
    {"type": "function_call", "call_id": "c1", "name": "shot", "arguments": '{"w": 1}'},
    {"type": "function_call", "call_id": "c2", "name": "shot", "arguments": '{"w": 2}'},
    {"type": "function_call_output", "call_id": "c1", "output": "window 1 is closed"},
    {
        "type": "function_call_output",
        "call_id": "c2",
        "output": [
            {"type": "input_text", "text": "window 2:"},
            {"type": "input_image", "image_url": "https://example.com/w2.png", "detail": "low"},
        ],
    },
]


def test_packed_parallel_calls_are_one_assistant_message_for_chat_completions() -> None:
    # pack() reads Responses items as from_openai() does: parallel calls are one message,
    # else Chat Completions refuses the first call's result after the second call.
    result = ctxpack.pack(PARALLEL_SHOTS, budget=5000, model="gpt-4o")
    calls = [[c.id for c in m.tool_calls or ()] for m in result.messages]
    assert calls == [[], ["c1", "c2"], [], []]
    ctxpack.adapters.validate_openai(result.to_openai())
    assert result.to_openai(api="responses")[1:] == PARALLEL_SHOTS[1:]


def test_a_function_call_output_with_an_image_goes_where_each_api_takes_it() -> None:
    messages = from_openai(PARALLEL_SHOTS)
    assert messages[-1].content == [
        {"type": "text", "text": "window 2:"},
        {"type": "image_url", "image_url": {"url": "https://example.com/w2.png", "detail": "low"}},
    ]
    assert to_responses(messages)[-1] == PARALLEL_SHOTS[-1]
    # Chat Completions' tool message takes text alone: a note stands where the image was,
    # naming an image, not the part type it was read as (the user gave an input_image).
    chat = to_openai(messages)
    assert chat[-1]["content"] == [
        {"type": "text", "text": "window 2:"},
        {"type": "text", "text": "[image not sent: a tool message holds text only]"},
    ]
    ctxpack.adapters.validate_openai(chat)
    anthropic = ctxpack.to_anthropic(messages)
    ctxpack.adapters.validate_anthropic(anthropic["messages"])
    result = anthropic["messages"][-1]["content"][-1]
    image = {"type": "image", "source": {"type": "url", "url": "https://example.com/w2.png"}}
    assert result["content"][-1] == image
    # The image is counted: a budget that fits the text alone does not fit it.
    assert ctxpack.count_tokens(messages[-1:], model="gpt-4o") > ctxpack.count_tokens(
        to_openai(messages)[-1:], model="gpt-4o"
    )


@pytest.mark.parametrize("read", [from_openai, lambda items: ctxpack.pack(items, budget=5000)])
def test_an_error_after_joined_calls_names_the_callers_item(read: Any) -> None:
    # The two calls are one message: the bad output is the 4th message but the 5th item.
    bad = {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_audio"}]}
    with pytest.raises(ctxpack.InvalidMessageError) as raised:
        read([*PARALLEL_SHOTS[:4], bad])
    assert raised.value.index == 4
    bad = {"role": "tool", "tool_call_id": "c2", "content": [{"type": "image_url"}]}
    with pytest.raises(ctxpack.InvalidMessageError) as raised:
        read([*PARALLEL_SHOTS[:4], bad])
    assert (raised.value.index, raised.value.field) == (4, "content[0].image_url")


def test_a_document_openai_has_no_form_for_is_named_where_it_was() -> None:
    doc = {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}}
    history = ctxpack.from_anthropic(
        [{"role": "user", "content": [doc, {"type": "text", "text": "Summarise it."}]}]
    )
    assert to_openai(history)[0]["content"][0] == {
        "type": "text",
        "text": "[document not sent: OpenAI's API has no form for it]",
    }


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_an_image_sent_by_anthropic_file_id_is_named_where_it_was(api: Any) -> None:
    # An image uploaded with Anthropic's Files API has no URL OpenAI can fetch: it went as an
    # image part with an empty URL, which the API refused.
    image = {
        "type": "image",
        "source": {"type": "file", "file_id": "file_011CNha8iCJcU1wXNR6q4V8w"},
    }
    history = ctxpack.from_anthropic(
        [{"role": "user", "content": [{"type": "text", "text": "What is in it?"}, image]}]
    )
    sent = to_openai(history, api=api)
    assert sent[0]["content"][1]["text"] == "[image not sent: OpenAI's API has no form for it]"
    problems = openai_problems(sent) if api == "chat" else responses_problems(sent)
    assert problems == []


def test_an_assistant_message_s_phase_is_sent_back() -> None:
    """gpt-5.4 marks each assistant message commentary or final_answer, and OpenAI asks that the
    phase be sent back on all of them (dropping it can degrade performance): to_openai, pack()
    and wrap_openai's responses.create wrote every assistant message without it."""
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}
    commentary = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "phase": "commentary",
        "content": [{"type": "output_text", "text": "Reading the log.", "annotations": []}],
    }
    final = {**commentary, "id": "msg_2", "phase": "final_answer"}
    final["content"] = [{"type": "output_text", "text": "Fixed.", "annotations": []}]
    easy = {"role": "assistant", "content": "Anything else?", "phase": "final_answer"}
    given = [{"role": "user", "content": "Fix the build."}, reasoning, commentary, final, easy]
    given.append({"role": "user", "content": "No, thanks."})
    phases = [None, None, "commentary", "final_answer", "final_answer", None]
    items = to_responses(from_openai(given))
    assert [item.get("phase") for item in items] == phases
    for item in items:
        ITEM.validate_python(item)
    capture = Capture(response())
    client = ctxpack.wrap_openai(openai_client(capture), window=400_000)
    client.responses.create(model="gpt-5.4", input=given)
    assert [item.get("phase") for item in capture.body["input"]] == phases


def test_a_function_call_keeps_its_namespace_and_caller() -> None:
    """A function of a namespace (tool search's recommended shape) is called with the
    namespace on its function_call item, and a call the model's program made names its
    caller: both were dropped when the call was written back, so the call named a function
    outside its namespace."""
    call = {
        "type": "function_call",
        "call_id": "call_1",
        "name": "list_customers",
        "namespace": "crm",
        "caller": {"type": "direct"},
        "arguments": "{}",
    }
    given = [
        {"role": "user", "content": "Who bought last week?"},
        call,
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": "Ana, Bo",
            "namespace": "crm",
            "caller": {"type": "direct"},
        },
    ]
    assert to_responses(from_openai(given)) == given
    packed = ctxpack.pack(from_openai(given), budget=10_000, model="gpt-5.4")
    assert packed.to_openai(api="responses") == given
    # Chat Completions has no place for them.
    assert "namespace" not in json.dumps(packed.to_openai())


def test_an_assistant_s_text_parts_stay_apart() -> None:
    # Joined with "", two text blocks read "Let me look.Found it.": they go as output_text
    # parts (the refusal as a refusal part), which the Responses API takes back from an
    # assistant, with or without the id of the item they came as.
    said = [
        {"type": "text", "text": "Let me look."},
        {"type": "text", "text": "Found it."},
        {"type": "refusal", "refusal": "Not the key."},
    ]
    parts = [
        {"type": "output_text", "text": "Let me look.", "annotations": []},
        {"type": "output_text", "text": "Found it.", "annotations": []},
        {"type": "refusal", "refusal": "Not the key."},
    ]
    history = [{"role": "user", "content": "Find it."}, {"role": "assistant", "content": said}]
    assert to_responses(history)[1] == {"role": "assistant", "content": parts}
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    given = [
        {"role": "user", "content": "Find it."},
        reasoning,
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": parts,
        },
    ]
    assert to_responses(from_openai(given))[1:] == given[1:]
    assert responses_problems(to_responses(from_openai(given))) == []


@pytest.mark.parametrize("said", [None, "Checking."])
def test_a_legacy_function_call_is_refused_for_the_responses_api_not_dropped(
    said: str | None,
) -> None:
    # Its answer, a legacy "function" message, is not read, so the call can never be paired
    # with a function_call_output: it was left out, and the model's call with it.
    call = {"name": "get_weather", "arguments": '{"city": "Oslo"}'}
    history = [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": said, "function_call": call},
        {"role": "user", "content": "Well?"},
    ]
    with pytest.raises(ctxpack.InvalidMessageError) as raised:
        to_responses(history)
    assert (raised.value.index, raised.value.field) == (1, "function_call")
    assert "tool_calls" in str(raised.value)
    # Chat Completions takes it as it is.
    assert to_openai(history)[1]["function_call"] == call


@pytest.mark.parametrize("said", [None, "Hello!"])
def test_an_assistant_s_audio_reply_is_refused_for_the_responses_api_not_dropped(
    said: str | None,
) -> None:
    # Chat Completions takes a prior audio reply back by its id; the Responses API has no
    # input that refers to one (an assistant message holds output_text and refusal parts):
    # the reply was left out, and with content None the model's turn with it.
    audio = {"id": "audio_abc123"}
    history = [
        {"role": "user", "content": "Say hello."},
        {"role": "assistant", "content": said, "audio": audio},
        {"role": "user", "content": "Again."},
    ]
    with pytest.raises(ctxpack.InvalidMessageError) as raised:
        to_responses(history)
    assert (raised.value.index, raised.value.field) == (1, "audio")
    assert "transcript" in str(raised.value)
    with pytest.raises(ctxpack.InvalidMessageError, match="audio"):
        to_responses(from_openai(history))
    # Chat Completions takes it as it is; an SDK reply's audio=None is no audio.
    assert to_openai(history)[1]["audio"] == audio
    history[1] = {**history[1], "content": "Hello!", "audio": None}
    assert to_responses(history)[1] == {"role": "assistant", "content": "Hello!"}


def test_an_anthropic_document_by_url_goes_to_the_responses_api_as_an_input_file() -> None:
    # The Responses API fetches a file by URL (input_file's file_url); Chat Completions has
    # no URL form, where a note stands for it.
    url = "https://example.com/report.pdf"
    doc = {"type": "document", "source": {"type": "url", "url": url}, "title": "Report"}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": [doc]}
    history = ctxpack.from_anthropic(
        [
            {"role": "user", "content": [doc, {"type": "text", "text": "Summarise it."}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "get", "input": {}}],
            },
            {"role": "user", "content": [result]},
        ]
    )
    sent = to_responses(history)
    # Its title goes as the file's name, as a document sent as data's does.
    file = {"type": "input_file", "file_url": url, "filename": "Report"}
    assert sent[0]["content"][0] == file
    assert sent[-1] == {"type": "function_call_output", "call_id": "t1", "output": [file]}
    for item in sent:
        ITEM.validate_python(item)
    assert responses_problems(sent) == []
    assert to_openai(history)[0]["content"][0]["text"].startswith("[document not sent")


@pytest.mark.parametrize("named", [True, False])
def test_an_input_file_by_url_keeps_its_filename_through_anthropic(named: bool) -> None:
    # to_anthropic writes an input_file's filename as the document's title; the way back
    # wrote the file by its URL alone, its name lost.
    file = {"type": "input_file", "file_url": "https://example.com/q3.pdf"}
    if named:
        file["filename"] = "q3-results.pdf"
    user = {"role": "user", "content": [file, {"type": "input_text", "text": "Summarise."}]}
    payload = ctxpack.to_anthropic(from_openai([user]))
    back = to_responses(from_anthropic(payload["messages"]))
    # What was given comes back, no name invented: the API takes file_url alone.
    assert back[0]["content"][0] == file
    assert responses_problems(back) == []


def test_an_assistant_s_refusal_field_is_sent_back_as_a_refusal_part() -> None:
    # Chat Completions returns a refusal in its own field, content None: the message was
    # left out, as if the model had said nothing.
    history = [
        {"role": "user", "content": "Pick the lock."},
        {"role": "assistant", "content": None, "refusal": "I can't help with that."},
        {"role": "user", "content": "Fine."},
    ]
    refusal = {"type": "refusal", "refusal": "I can't help with that."}
    assert to_responses(history)[1] == {"role": "assistant", "content": [refusal]}
    # Said in its content too, it goes once.
    history[1] = {**history[1], "content": [refusal]}
    assert to_responses(history)[1] == {"role": "assistant", "content": [refusal]}
