"""What ctxpack sends must be what the providers take: every conversion and every packed
request is checked against the providers' documented request rules (tests/api_rules.py)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack.errors import ApproximateTokenCountWarning
from ctxpack.messages import Message
from tests.adapters.anthropic_payloads import anthropic_payloads
from tests.api_rules import anthropic_problems, openai_problems, responses_problems
from tests.strategies import Conversation, pack_cases

_FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


def _call(call_id: str) -> list[dict[str, Any]]:
    function = {"name": "lookup", "arguments": '{"q": "x"}'}
    return [
        {"role": "user", "content": "Look it up."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": function}],
        },
        {"role": "tool", "tool_call_id": call_id, "content": "found"},
    ]


@pytest.mark.parametrize("call_id", ["functions.lookup:0", "call|7", "call 7", "tool/é"])
def test_tool_ids_the_anthropic_api_refuses_are_sent_in_its_pattern(call_id: str) -> None:
    payload = ctxpack.to_anthropic(_call(call_id))
    assert anthropic_problems(payload) == []
    use = payload["messages"][1]["content"][0]
    assert payload["messages"][2]["content"][0]["tool_use_id"] == use["id"]


def test_tool_ids_made_valid_stay_distinct() -> None:
    messages: list[dict[str, Any]] = [*_call("a.b"), *_call("a:b")[1:]]
    messages.insert(3, {"role": "user", "content": "Again."})
    payload = ctxpack.to_anthropic(messages)
    assert anthropic_problems(payload) == []
    ids = [m["content"][0].get("id") for m in payload["messages"] if m["role"] == "assistant"]
    assert len(set(ids)) == 2


def test_valid_tool_ids_are_sent_as_they_are() -> None:
    payload = ctxpack.to_anthropic(_call("call_Ab-9"))
    assert payload["messages"][1]["content"][0]["id"] == "call_Ab-9"


@pytest.mark.parametrize(
    ("url", "media_type"),
    [
        ("data:image/jpg;base64,AAAA", "image/jpeg"),
        ("data:image/png;name=a.png;base64,AAAA", "image/png"),
        ("data:IMAGE/PNG;base64,AAAA", "image/png"),
    ],
)
def test_data_url_images_get_a_media_type_anthropic_takes(url: str, media_type: str) -> None:
    part = {"type": "image_url", "image_url": {"url": url}}
    payload = ctxpack.to_anthropic([{"role": "user", "content": [part]}])
    assert anthropic_problems(payload) == []
    assert payload["messages"][0]["content"][0]["source"]["media_type"] == media_type


@pytest.mark.parametrize(
    "system",
    [
        [{"type": "input_text", "text": "Be brief."}],
        [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "  "}],
    ],
)
def test_a_system_prompt_of_parts_is_sent_as_text_blocks(system: list[dict[str, Any]]) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": "Hi"},
    ]
    payload = ctxpack.to_anthropic(messages)
    assert anthropic_problems(payload) == []
    assert payload["system"] == [{"type": "text", "text": "Be brief."}]


def test_several_system_messages_leave_out_blank_text() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": " \n"},
        {"role": "user", "content": "Hi"},
    ]
    payload = ctxpack.to_anthropic(messages)
    assert payload["system"] == [{"type": "text", "text": "Be brief."}]


def test_blank_text_inside_a_tool_result_is_left_out() -> None:
    messages = _call("c1")
    messages[2]["content"] = [{"type": "text", "text": "found"}, {"type": "text", "text": ""}]
    payload = ctxpack.to_anthropic(messages)
    assert anthropic_problems(payload) == []
    assert payload["messages"][2]["content"][0]["content"] == [{"type": "text", "text": "found"}]


def test_a_tool_result_of_blank_text_alone_is_sent_without_content() -> None:
    messages = _call("c1")
    messages[2]["content"] = [{"type": "text", "text": " "}]
    payload = ctxpack.to_anthropic(messages)
    assert anthropic_problems(payload) == []
    assert payload["messages"][2]["content"][0] == {"type": "tool_result", "tool_use_id": "c1"}


@pytest.mark.parametrize(
    "content", ["[tool error]", "[tool error]  ", [{"type": "text", "text": "[tool error]"}]]
)
def test_a_failed_tool_result_without_content_says_so(content: Any) -> None:
    # A tool that failed with no output: to_openai writes it as the mark alone. Anthropic
    # refuses a failed result left empty ("content cannot be empty if `is_error` is true").
    messages = _call("c1")
    messages[2]["content"] = content
    payload = ctxpack.to_anthropic(messages)
    assert anthropic_problems(payload) == []
    assert payload["messages"][2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "c1",
        "content": "[no output]",
        "is_error": True,
    }


def test_a_failed_anthropic_tool_result_of_blank_text_is_sent_with_content() -> None:
    use = {"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}
    blank = [{"type": "text", "text": " "}]
    result = {"type": "tool_result", "tool_use_id": "t1", "content": blank, "is_error": True}
    history = [
        {"role": "user", "content": "Look it up."},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]
    payload = ctxpack.to_anthropic(ctxpack.from_anthropic(history))
    assert anthropic_problems(payload) == []
    assert payload["messages"][2]["content"][0]["content"] == "[no output]"


_AUDIO = {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}
_DOCX = "data:application/vnd.openxmlformats-officedocument.wordprocessingml.document;base64,UEs="


@pytest.mark.parametrize(
    "part",
    [
        _AUDIO,
        {"type": "file", "file": {"file_id": "file-abc"}},
        {"type": "input_file", "file_id": "file-abc"},
        {"type": "input_image", "file_id": "file-abc", "detail": "auto"},
        {"type": "file", "file": {"filename": "a.docx", "file_data": _DOCX}},
        {
            "type": "input_file",
            "filename": "a.zip",
            "file_data": "data:application/zip;base64,UEs=",
        },
    ],
    ids=["audio", "chat file id", "responses file id", "responses image file id", "docx", "zip"],
)
def test_a_part_anthropic_has_no_form_for_is_named_in_text(part: dict[str, Any]) -> None:
    """Anthropic takes no audio, nor an OpenAI file id, nor a base64 document other than a PDF
    (or text): such a part went to it as it was, a block the API refuses. It is named in a
    text part, as a part OpenAI cannot take is (the message itself keeps it)."""
    messages = [{"role": "user", "content": [{"type": "text", "text": "Here."}, part]}]
    payload = ctxpack.to_anthropic(messages)
    assert anthropic_problems(payload) == []
    assert payload["messages"][0]["content"][1] == {
        "type": "text",
        "text": f"[{part['type']} not sent: Anthropic's API has no form for it]",
    }
    assert messages[0]["content"][1] == part


def test_a_legacy_function_call_name_openai_refuses_is_named() -> None:
    # OpenAI holds the legacy function_call's name to its tool name pattern as it holds a
    # tool call's: another provider's "files.read" went out unchecked, for the API to refuse.
    call = {"name": "files.read", "arguments": "{}"}
    messages = [
        {"role": "user", "content": "Read it."},
        {"role": "assistant", "content": None, "function_call": call},
    ]
    with pytest.raises(ctxpack.InvalidMessageError) as caught:
        ctxpack.to_openai(messages)
    assert (caught.value.index, caught.value.field) == (1, "function_call.name")
    assert "files.read" in str(caught.value)
    # Neither Anthropic nor the Responses API is sent the legacy call: nothing to refuse there.
    assert ctxpack.to_anthropic(messages)["messages"] == [{"role": "user", "content": "Read it."}]
    messages[1]["function_call"] = {"name": "read_file", "arguments": "{}"}
    assert ctxpack.to_openai(messages)[1]["function_call"]["name"] == "read_file"


def test_a_legacy_function_call_beside_tool_calls_is_sent_by_no_openai_path() -> None:
    # OpenAI refuses a message with both (langchain-openai sends the tool calls alone): dicts
    # holding both went to Chat Completions whole, were counted whole, and were refused by the
    # Responses API converter, and a superseded call's name was held to the tool name pattern.
    call = {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    legacy = {"name": "files.read", "arguments": '{"path": "' + "a/" * 40 + '"}'}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [call], "function_call": legacy},
        {"role": "tool", "tool_call_id": "c1", "content": "3 C"},
    ]
    sent = ctxpack.to_openai(messages)
    assert "function_call" not in sent[1] and sent[1]["tool_calls"] == [call]
    assert openai_problems(sent) == []
    assert ctxpack.count_tokens(messages, model="gpt-4o") == ctxpack.count_tokens(
        sent, model="gpt-4o"
    )
    items = ctxpack.to_openai(messages, api="responses")
    assert responses_problems(items) == []
    assert [item.get("type") for item in items[1:]] == ["function_call", "function_call_output"]
    assert messages[1]["function_call"] == legacy  # the caller's message is left as it was


@pytest.mark.parametrize("name", ["lookup", "files.read"])
def test_a_tool_message_name_is_left_out_of_chat_completions(name: str) -> None:
    # Chat Completions' tool message is role, content and tool_call_id: its name (LangChain's
    # ToolMessage has one; here another provider's "files.read") went out as it was, which a
    # strict gateway refuses ("messages[2]: 'name' is not supported").
    messages = _call("c1")
    messages[2]["name"] = name
    sent = ctxpack.to_openai(messages)
    assert sent[2] == {"role": "tool", "content": "found", "tool_call_id": "c1"}
    assert messages[2]["name"] == name


@pytest.mark.parametrize("role", ["user", "assistant"])
def test_a_participant_name_openai_refuses_is_named(role: str) -> None:
    # A LangGraph agent's name, kept by from_langchain: OpenAI refuses it ("Invalid
    # 'messages[1].name': string does not match pattern ... '^[a-zA-Z0-9_-]+$'").
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": role, "content": "The findings.", "name": "Research Agent"},
    ]
    with pytest.raises(ctxpack.InvalidMessageError) as caught:
        ctxpack.to_openai(messages)
    assert (caught.value.index, caught.value.field) == (1, "name")
    assert "Research Agent" in str(caught.value)
    # The Responses API has no place for a name: it is left out there, as before.
    assert "name" not in ctxpack.to_openai(messages, api="responses")[1]
    assert ctxpack.to_openai([{**messages[1], "name": "research_agent-2"}])[0]["name"] == (
        "research_agent-2"
    )


def test_a_tool_call_id_longer_than_openai_takes_is_sent_within_its_length() -> None:
    # A gateway's or another provider's id (Portkey's is 44 characters): Chat Completions
    # refuses an id over 40 ("string too long"), the Responses API a call_id over 64.
    ids = ["portkey-6aa6db90-1b84-4155-9f32-f658c97d6b1b", "x" * 70, "x" * 69 + "y"]
    history: list[dict[str, Any]] = [{"role": "user", "content": "Look them up."}]
    history.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}}
                for i in ids
            ],
        }
    )
    history += [{"role": "tool", "tool_call_id": i, "content": "found"} for i in ids]
    chat = ctxpack.to_openai(history)
    assert openai_problems(chat) == []
    sent = [call["id"] for call in chat[1]["tool_calls"]]
    assert [m["tool_call_id"] for m in chat[2:]] == sent and len(set(sent)) == 3
    items = ctxpack.to_openai(history, api="responses")
    assert responses_problems(items) == []
    assert len({item["call_id"] for item in items[1:]}) == 3
    short = _call("call_7")
    assert ctxpack.to_openai(short) == short


def _image(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


@pytest.mark.parametrize(
    "part",
    [
        _image(""),
        _image("data:image/svg+xml;base64,PHN2Zy8+"),
        _image("data:image/svg+xml;utf8,<svg/>"),
        _image("data:image/tiff;base64,SUkq"),
        _image("https://example.com/logo.SVG?v=2"),
        {"type": "input_image", "image_url": "data:image/svg+xml;base64,PHN2Zy8+"},
        _image("gs://bucket/chart.png"),
    ],
    ids=["no url", "svg data", "svg text data", "tiff", "svg url", "responses svg", "gs url"],
)
def test_an_image_anthropic_refuses_is_named_in_text(part: dict[str, Any]) -> None:
    """Anthropic reads JPEG, PNG, GIF and WebP images only, by a base64 source or an http(s)
    URL: an image without a URL, an SVG, a TIFF went to it as an image block the API refuses
    ("media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"). It
    is named in a text part, as audio is; the message itself keeps the part."""
    messages = [{"role": "user", "content": [{"type": "text", "text": "Here."}, part]}]
    payload = ctxpack.to_anthropic(messages)
    assert anthropic_problems(payload) == []
    note = payload["messages"][0]["content"][1]
    assert note["type"] == "text" and note["text"].startswith(f"[{part['type']} not sent: ")
    assert messages[0]["content"][1] == part


@pytest.mark.parametrize(
    ("part", "block"),
    [
        (
            {"type": "input_image", "image_url": "data:image/png;base64,iVBO", "detail": "auto"},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
            },
        ),
        (
            {"type": "input_image", "image_url": "https://example.com/a.png"},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
        ),
        (
            {"type": "input_file", "file_url": "https://example.com/r.pdf"},
            {"type": "document", "source": {"type": "url", "url": "https://example.com/r.pdf"}},
        ),
    ],
    ids=["image data", "image url", "file url"],
)
def test_responses_images_and_files_by_url_reach_anthropic_as_blocks(
    part: dict[str, Any], block: dict[str, Any]
) -> None:
    """The Responses API's input_image and an input_file by URL went to Anthropic as they
    were, which it refuses; Anthropic takes each as an image or document block."""
    payload = ctxpack.to_anthropic([{"role": "user", "content": [part]}])
    assert anthropic_problems(payload) == []
    assert payload["messages"][0]["content"] == [block]


@pytest.mark.parametrize(
    ("part", "why"),
    [
        ({"type": "input_file", "file_url": "https://example.com/a.docx"}, "a .docx file"),
        ({"type": "input_file", "file_url": "https://example.com/notes.txt?v=2"}, "a .txt file"),
        (
            {"type": "input_file", "file_url": "https://example.com/get?id=3", "filename": "a.csv"},
            "a .csv file",
        ),
    ],
    ids=["docx", "text", "named csv"],
)
def test_a_document_by_url_that_is_not_a_pdf_is_named_in_text(
    part: dict[str, Any], why: str
) -> None:
    """Anthropic's API reads a document by URL as a PDF only: a Word file or a text file by
    URL went to it as a document block with a URL source, which it refuses. It is named in a
    text part, as an image the API cannot read is."""
    payload = ctxpack.to_anthropic([{"role": "user", "content": [part]}])
    assert anthropic_problems(payload) == []
    assert payload["messages"][0]["content"] == [
        {
            "type": "text",
            "text": f"[input_file not sent: {why} by URL; Anthropic's API reads a PDF only by URL]",
        }
    ]


def test_a_document_by_url_anthropic_cannot_fetch_is_named_in_text() -> None:
    part = {"type": "input_file", "file_url": "gs://bucket/report.pdf"}
    payload = ctxpack.to_anthropic([{"role": "user", "content": [part]}])
    assert anthropic_problems(payload) == []
    assert payload["messages"][0]["content"][0]["text"] == (
        "[input_file not sent: not an http(s) URL Anthropic's API can fetch]"
    )


@pytest.mark.parametrize("url", ["https://arxiv.org/pdf/2401.00001v2", "https://example.com"])
def test_a_document_by_url_that_may_be_a_pdf_goes_for_the_api_to_fetch(url: str) -> None:
    payload = ctxpack.to_anthropic(
        [{"role": "user", "content": [{"type": "input_file", "file_url": url}]}]
    )
    assert payload["messages"][0]["content"] == [
        {"type": "document", "source": {"type": "url", "url": url}}
    ]


# ------------------------------------------------------------------------------ random attack


@_FUZZ
@given(anthropic_payloads(), st.integers(min_value=30, max_value=3000))
def test_anthropic_payloads_round_trip_and_pack_into_requests_the_apis_take(
    payload: dict[str, Any], budget: int
) -> None:
    assert anthropic_problems(payload) == []
    messages = ctxpack.from_anthropic(payload["messages"], system=payload["system"])
    assert ctxpack.to_anthropic(messages) == payload
    assert openai_problems(ctxpack.to_openai(messages)) == []
    assert responses_problems(ctxpack.to_openai(messages, api="responses")) == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        try:
            result = ctxpack.pack(messages, budget=budget, model="claude-sonnet-4-5")
        except ctxpack.BudgetExceededError:
            return
    sent = result.to_anthropic()
    if sent["messages"]:
        assert anthropic_problems(sent) == []
    assert openai_problems(result.to_openai()) == []


def _leads_pinned(messages: Sequence[Message]) -> bool:
    # A pinned assistant message is kept, even first (the first-party API takes it there). The
    # packed messages are read, not the input: an orphan tool result before it is dropped.
    first = next((m for m in messages if m.role not in ("system", "developer")), None)
    return first is not None and first.pinned


@_FUZZ
@given(pack_cases(), st.sampled_from(["openai", "anthropic"]))
def test_packed_conversations_are_requests_the_apis_take(
    case: tuple[Conversation, int, int], provider: Literal["openai", "anthropic"]
) -> None:
    conv, budget, reserve = case
    try:
        result = ctxpack.pack(
            conv.items, budget=budget, reserve=reserve, provider=provider, **conv.pack_kwargs()
        )
    except ctxpack.BudgetExceededError:
        return
    if provider == "anthropic":
        sent = result.to_anthropic()
        problems = anthropic_problems(sent) if sent["messages"] else []
        if _leads_pinned(result.messages):
            problems = [p for p in problems if "first message" not in p]
        assert problems == []
        return
    chat = result.to_openai()
    assert openai_problems(chat) == []
    assert responses_problems(result.to_openai(api="responses")) == []
    assert ctxpack.to_openai(ctxpack.from_openai(chat)) == chat


@pytest.mark.parametrize(
    ("prefill", "sent"),
    [
        ("Sure, ", "Sure,"),
        ([{"type": "text", "text": "The answer is "}], [{"type": "text", "text": "The answer is"}]),
        (" \n", None),
    ],
)
def test_a_prefill_is_sent_without_the_trailing_whitespace_the_api_refuses(
    prefill: Any, sent: Any
) -> None:
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": prefill}]
    payload = ctxpack.to_anthropic(history)
    assert anthropic_problems(payload) == []
    last = payload["messages"][-1]
    if sent is None:  # a prefill of whitespace alone: nothing is left to send of it
        assert last == {"role": "user", "content": "hi"}
    else:
        assert last == {"role": "assistant", "content": sent}
    assert history[1]["content"] == prefill  # the caller's message keeps its text
