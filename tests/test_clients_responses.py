"""wrap_openai and OpenAI's Responses API (``client.responses``), on a capturing mock transport.

Each request's ``input`` is packed under the window less ``max_output_tokens``, with
``instructions`` sent as given and counted; every item sent is one the SDK's own input model
reads; the reply's items (parallel calls included) go back in the next request.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from typing import Any

import httpx2
import pydantic
import pytest

import ctxpack
from ctxpack._internal.encodings import load_encoding
from ctxpack.adapters import from_openai, validate_openai
from tests.sdk_mock import WEATHER_TOOL, Capture, async_openai_client, openai_client

openai_responses = pytest.importorskip("openai.types.responses")
ITEM = pydantic.TypeAdapter(openai_responses.ResponseInputItem)
FUNCTION_TOOL = pydantic.TypeAdapter(openai_responses.FunctionToolParam)
O200K = load_encoding("o200k_base")  # OpenAI's file, shipped with ctxpack

# The Responses API's shape of a function tool: the function's fields at the top.
FLAT_WEATHER_TOOL = {"type": "function", "strict": False, **WEATHER_TOOL["function"]}  # type: ignore[dict-item]
INSTRUCTIONS = "You are a support agent. Answer in one sentence."


def response(*output: dict[str, Any]) -> dict[str, Any]:
    """A Responses API response body holding ``output`` items."""
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "gpt-4o",
        "status": "completed",
        "output": list(output),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def text_reply(text: str = "Under Billing > Profile.") -> dict[str, Any]:
    return response(
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
    )


def two_calls() -> dict[str, Any]:
    return response(
        *(
            {
                "type": "function_call",
                "id": f"fc_{city}",
                "call_id": f"call_{city}",
                "name": "get_weather",
                "arguments": f'{{"city": "{city}"}}',
                "status": "completed",
            }
            for city in ("Oslo", "Rome")
        )
    )


def long_input(turns: int = 40) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for i in range(turns):
        items.append({"role": "user", "content": f"Question {i} about invoices. " * 12})
        items.append({"role": "assistant", "content": f"Answer {i}: check Billing. " * 12})
    items.append({"role": "user", "content": "What is my invoice address?"})
    return items


def sent_items(capture: Capture) -> list[dict[str, Any]]:
    items = capture.body["input"]
    for item in items:
        ITEM.validate_python(item)  # each is an input item the SDK itself reads
    return list(items)


def text_tokens(items: list[dict[str, Any]]) -> int:
    """o200k_base tokens of the texts sent (no framing): a lower bound of what was counted,
    taken apart from ctxpack."""
    return sum(
        len(O200K.encode(str(item.get("content") or item.get("output") or ""))) for item in items
    )


def test_input_is_packed_under_the_window_with_instructions_beside_it() -> None:
    capture = Capture(text_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=1500, reserve=20)
    given = long_input()
    reply = client.responses.create(
        model="gpt-4o",
        input=given,
        instructions=INSTRUCTIONS,
        tools=[FLAT_WEATHER_TOOL],
        max_output_tokens=200,
        temperature=0.2,
    )
    assert reply.output_text == "Under Billing > Profile."
    assert capture.paths == ["/v1/responses"]
    body = capture.body
    # Everything but the input is sent as given; instructions stay instructions.
    assert (body["instructions"], body["tools"], body["max_output_tokens"]) == (
        INSTRUCTIONS,
        [FLAT_WEATHER_TOOL],
        200,
    )
    items = sent_items(capture)
    assert items[-1] == given[-1] and len(items) < len(given)
    assert all(item in given for item in items)
    result = client.last_result
    assert result is not None
    assert (result.budget, result.reserve) == (1500, 220)
    assert result.tokens <= 1500 - 20 - 200
    # The instructions and the tools are counted: the texts sent alone take most of it.
    assert result.tool_tokens > 0
    assert text_tokens(items) + len(O200K.encode(INSTRUCTIONS)) + result.tool_tokens < result.tokens


def test_parallel_calls_of_a_reply_go_back_whole_in_the_next_request() -> None:
    replies = iter([two_calls(), text_reply("3 C in Oslo, 20 C in Rome.")])
    capture = Capture(lambda body: httpx2.Response(200, json=next(replies)))
    client = ctxpack.wrap_openai(openai_client(capture), window=2000)
    history: list[Any] = [*long_input(30)[:-1], {"role": "user", "content": "Oslo and Rome?"}]
    first = client.responses.create(model="gpt-4o", input=history, tools=[FLAT_WEATHER_TOOL])
    history += first.output  # the SDK's own items
    history += [
        {"type": "function_call_output", "call_id": "call_Oslo", "output": "3 C"},
        {"type": "function_call_output", "call_id": "call_Rome", "output": "20 C"},
    ]
    second = client.responses.create(model="gpt-4o", input=history, tools=[FLAT_WEATHER_TOOL])
    assert second.output_text == "3 C in Oslo, 20 C in Rome."
    items = sent_items(capture)
    assert len(items) < len(history)
    assert items[-5:] == [
        {"role": "user", "content": "Oslo and Rome?"},
        *(
            {
                "type": "function_call",
                "call_id": f"call_{city}",
                "name": "get_weather",
                "arguments": f'{{"city": "{city}"}}',
            }
            for city in ("Oslo", "Rome")
        ),
        {"type": "function_call_output", "call_id": "call_Oslo", "output": "3 C"},
        {"type": "function_call_output", "call_id": "call_Rome", "output": "20 C"},
    ]
    # Read back, every call has its result right after it, as Chat Completions needs.
    validate_openai(ctxpack.to_openai(from_openai(items)))


def test_a_string_input_is_one_user_message() -> None:
    capture = Capture(text_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=500)
    client.responses.create(model="gpt-4o", input="Hello!", instructions=INSTRUCTIONS)
    assert sent_items(capture) == [{"role": "user", "content": "Hello!"}]
    assert capture.body["instructions"] == INSTRUCTIONS


@pytest.mark.parametrize("typed", [False, True], ids=["easy input message", "message item"])
def test_a_pdf_goes_out_whole_and_is_counted_by_its_pages(typed: bool) -> None:
    from tests.test_documents import PDF_PAGE_TOKENS, b64, make_pdf

    data = "data:application/pdf;base64," + b64(make_pdf(4, padding=200_000))
    pdf = {"type": "input_file", "filename": "q3.pdf", "file_data": data}
    question = {"role": "user", "content": [pdf, {"type": "input_text", "text": "Totals?"}]}
    given = [*long_input(20)[:-1], {**question, "type": "message"} if typed else question]
    capture = Capture(text_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=16_000)
    client.responses.create(model="gpt-4o", input=given, max_output_tokens=500)
    items = sent_items(capture)
    assert items[-1]["content"][0] == pdf  # the file as it was given
    result = client.last_result
    assert result is not None
    assert 4 * PDF_PAGE_TOKENS < result.tokens <= 16_000 - 500


@pytest.mark.parametrize("key", ["previous_response_id", "conversation"])
def test_a_history_openai_holds_is_refused_before_sending(key: str) -> None:
    capture = Capture(text_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=500)
    with pytest.raises(ctxpack.ConfigError, match=f"{key}: OpenAI holds") as error:
        client.responses.create(model="gpt-4o", input="And then?", **{key: "resp_0"})
    assert "client.wrapped.responses" in str(error.value)
    assert capture.requests == []


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({}, ctxpack.InvalidMessageError, "input: required"),
        ({"input": []}, ctxpack.InvalidMessageError, "input: empty"),
        (
            {"input": {"role": "user", "content": "hi"}},
            ctxpack.InvalidMessageError,
            "input: expected a list",
        ),
        (
            {"input": "hi", "instructions": ["be brief"]},
            ctxpack.ConfigError,
            "instructions must be a string",
        ),
        (
            {"input": "hi", "max_output_tokens": -1},
            ctxpack.ConfigError,
            "max_output_tokens must be",
        ),
        ({"input": "hi", "max_output_tokens": 600}, ctxpack.ConfigError, "max_output_tokens"),
        (
            {"input": [{"type": "item_reference", "id": "msg_1"}]},
            ctxpack.InvalidMessageError,
            "'item_reference' item",
        ),
    ],
)
def test_a_bad_request_fails_before_sending(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    capture = Capture(text_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=500)
    with pytest.raises(error, match=message):
        client.responses.create(model="gpt-4o", **kwargs)
    assert capture.requests == []


def test_the_responses_other_methods_and_a_resumed_stream_pass_through() -> None:
    capture = Capture(text_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=500)
    client.responses.retrieve("resp_1")
    # A stream resumed by its id has no input: OpenAI holds the request.
    with client.responses.stream(response_id="resp_1"):
        pass
    assert [path.removeprefix("/v1") for path in capture.paths] == [
        "/responses/resp_1",
        "/responses/resp_1",
    ]
    assert client.last_result is None


def test_raw_response_and_parse_are_packed() -> None:
    capture = Capture(text_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=800)
    raw = client.responses.with_raw_response.create(model="gpt-4o", input=long_input())
    assert raw.parse().output_text == "Under Billing > Profile."
    assert len(sent_items(capture)) < len(long_input())
    client.responses.parse(model="gpt-4o", input=long_input())
    assert len(sent_items(capture)) < len(long_input())
    assert client.last_result is not None and client.last_result.tokens <= 800


@pytest.mark.parametrize(
    "form",
    ["client.with_raw_response", "client.beta", "client.with_streaming_response"],
)
def test_every_form_of_responses_create_packs_as_the_plain_one(form: str) -> None:
    # Unlisted, these sent the whole input unpacked.
    capture = Capture(text_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=800)
    kwargs: dict[str, Any] = {"model": "gpt-4o", "input": long_input(), "max_output_tokens": 50}
    client.responses.create(**kwargs)
    plain, expected = capture.body, client.last_result
    if form == "client.with_raw_response":
        client.with_raw_response.responses.create(**kwargs)
    elif form == "client.beta":
        client.beta.responses.create(**kwargs)
    else:
        with client.with_streaming_response.responses.create(**kwargs):
            pass
    assert capture.body == plain and len(capture.requests) == 2
    assert len(plain["input"]) < len(long_input())
    result = client.last_result
    assert result is not None and expected is not None and result is not expected
    assert result.tokens == expected.tokens


def test_an_input_packed_down_to_no_item_fails_before_sending() -> None:
    # A lone output whose call is gone is dropped as an orphan: input=[] went out.
    capture = Capture(text_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=5_000)
    orphan = {"type": "function_call_output", "call_id": "call_gone", "output": "42"}
    with pytest.raises(ctxpack.InvalidMessageError, match=r"^input: .*no message.*orphan"):
        client.responses.create(model="gpt-4o", instructions=INSTRUCTIONS, input=[orphan])
    assert capture.requests == []


def test_a_managed_session_keeps_instructions_apart_and_adds_its_tools_flat() -> None:
    capture = Capture(text_reply())
    session = ctxpack.Session(model="gpt-4o", window=2000)
    client = ctxpack.wrap_openai(openai_client(capture), session=session)
    history: list[Any] = []
    for i in range(25):
        history.append({"role": "user", "content": f"Question {i} about invoices. " * 12})
        reply = client.responses.create(
            model="gpt-4o",
            input=history,
            instructions=INSTRUCTIONS,
            tools=[FLAT_WEATHER_TOOL],
            max_output_tokens=100,
        )
        history += reply.output
        items = sent_items(capture)
        assert capture.body["instructions"] == INSTRUCTIONS
        assert all(item.get("role") != "system" for item in items)
        assert items[-1] == history[-2]
        assert client.last_result is not None
        assert client.last_result.tokens + session.window.reserve <= 2000
    assert len(items) < len(history) / 2  # the session kept the request within its window
    # The session's own tool goes in the Responses API's shape, beside the request's, as the
    # SDK's own type reads it, and not strict: its schema was written for Chat Completions.
    assert [tool["name"] for tool in capture.body["tools"]] == ["get_weather", "retrieve_original"]
    for tool in capture.body["tools"]:
        FUNCTION_TOOL.validate_python(tool)
    assert capture.body["tools"][1]["strict"] is False
    # The instructions open the history the session keeps, verbatim.
    assert session.transcript()[0].content == INSTRUCTIONS


def test_the_async_client_is_packed_too() -> None:
    capture = Capture(text_reply())
    client = ctxpack.wrap_openai(async_openai_client(capture), window=800)

    async def main() -> tuple[str, int | None]:
        reply = await client.responses.create(model="gpt-4o", input=long_input())
        # Each asyncio task sees the results of its own requests.
        result = client.last_result
        return str(reply.output_text), None if result is None else result.tokens

    text, tokens = asyncio.run(main())
    assert text == "Under Billing > Profile."
    assert len(sent_items(capture)) < len(long_input())
    assert tokens is not None and tokens <= 800


def test_a_managed_session_shared_by_threads_gets_its_instructions_and_each_item_once() -> None:
    def slow_reply(body: dict[str, Any]) -> httpx2.Response:
        time.sleep(0.001)  # while one thread waits for the "API", the others pack theirs
        return httpx2.Response(200, json=text_reply())

    capture = Capture(slow_reply)
    session = ctxpack.Session(model="gpt-4o", window=3_000)
    client = ctxpack.wrap_openai(openai_client(capture), session=session)
    history: list[dict[str, Any]] = []
    lock = threading.Lock()
    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        start.wait()
        for turn in range(8):
            with lock:
                history.append({"role": "user", "content": f"Worker {worker}, turn {turn}. " * 8})
                snapshot = list(history)
            try:
                client.responses.create(
                    model="gpt-4o", input=snapshot, instructions=INSTRUCTIONS, max_output_tokens=50
                )
            except Exception as error:  # collected: the assertion below lists them
                errors.append(error)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert [m.text for m in session.transcript()] == [
        INSTRUCTIONS,
        *(item["content"] for item in history),
    ]
    assert all(body["instructions"] == INSTRUCTIONS for body in capture.requests)
    # Texts alone, counted apart from ctxpack: a lower bound of each request within the window.
    for body in capture.requests:
        sent = text_tokens(body["input"]) + len(O200K.encode(INSTRUCTIONS))
        assert sent + session.window.reserve <= 3_000


def test_a_session_with_tools_on_demand_sends_function_tools_the_sdk_reads() -> None:
    capture = Capture(text_reply())
    session = ctxpack.Session(model="gpt-4o", window=8000, tools_on_demand=True)
    client = ctxpack.wrap_openai(openai_client(capture), session=session)
    client.responses.create(model="gpt-4o", input="Weather in Oslo?", tools=[FLAT_WEATHER_TOOL])
    tools = capture.body["tools"]
    assert [tool["name"] for tool in tools] == ["get_weather", "describe_tool", "retrieve_original"]
    for tool in tools:
        FUNCTION_TOOL.validate_python(tool)
        assert tool["strict"] is False  # the stubs' schemas say nothing of their fields


def test_a_session_gives_its_tools_in_the_responses_api_shape() -> None:
    session = ctxpack.Session(model="gpt-4o")
    flat = session.tools(api="responses")
    assert [tool["name"] for tool in flat] == ["retrieve_original"]
    for tool in flat:
        FUNCTION_TOOL.validate_python(tool)
        assert tool["strict"] is False
    chat = session.tools()[0]["function"]
    assert {k: v for k, v in flat[0].items() if k not in ("type", "strict")} == chat
    with pytest.raises(ctxpack.ConfigError, match='api must be "chat" or "responses"'):
        session.tools(api="completions")  # type: ignore[arg-type]

    async def from_async() -> list[dict[str, Any]]:
        opened = await ctxpack.AsyncSession.open("s", store="memory://", model="gpt-4o")
        return opened.tools(api="responses")

    assert asyncio.run(from_async()) == flat
