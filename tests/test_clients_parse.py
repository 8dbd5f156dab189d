"""``chat.completions.parse`` (structured outputs) with a session, driven through the real
OpenAI SDK: the SDK takes strict function tools only, so the session sends the strict variant of
its retrieve tool, counts that definition in its budget, and answers the model's strict call
(every argument given, ``null`` for those left out)."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import httpx2
import pytest
from pydantic import BaseModel

import ctxpack
from ctxpack.retrieval import retrieve_tool
from ctxpack.tokens import tool_definition_tokens
from tests.api_rules import openai_problems, openai_tools_problems
from tests.sdk_mock import (
    WEATHER_TOOL,
    Capture,
    async_openai_client,
    chat_completion,
    openai_client,
)
from tests.test_clients import BASH_CALL, PYTEST_LOG, openai_prompt_tokens

HISTORY: list[Any] = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Why does the auth test fail?"},
    BASH_CALL,
    {"role": "tool", "tool_call_id": "call_1", "content": PYTEST_LOG},
]
STRICT_WEATHER = {**WEATHER_TOOL, "function": {**WEATHER_TOOL["function"], "strict": True}}
STRICT_WEATHER["function"]["parameters"] = {
    **WEATHER_TOOL["function"]["parameters"],  # type: ignore[dict-item]
    "required": ["city"],
    "additionalProperties": False,
}


class Diagnosis(BaseModel):
    test: str
    cause: str


ANSWER = {"role": "assistant", "content": '{"test": "test_refresh", "cause": "KeyError exp"}'}


def artifact_in(body: dict[str, Any]) -> str:
    """The artifact id the marker of the filtered tool output sent names."""
    found = re.search(r"art_[0-9a-f]{16}", body["messages"][-1]["content"])
    assert found is not None
    return found[0]


def strict_retrieve_call(body: dict[str, Any]) -> httpx2.Response:
    # A strict tool's call gives every argument: null for those the model leaves out.
    arguments = {"artifact": artifact_in(body), "lines": None, "regex": "exp"}
    arguments |= {"context": None, "json_path": None, "page": None}
    call = {
        "id": "call_2",
        "type": "function",
        "function": {"name": "retrieve_original", "arguments": json.dumps(arguments)},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return httpx2.Response(200, json=chat_completion(message, model="gpt-4o"))


def check_sent(body: dict[str, Any], result: ctxpack.PackResult | None, window: int) -> None:
    """The request passes the API's rules, with the strict retrieve tool, counted as sent."""
    assert openai_problems(body["messages"]) == []
    assert openai_tools_problems(body["tools"], strict_only=True) == []
    assert body["tools"][-1] == retrieve_tool(strict=True)
    assert result is not None
    counter = ctxpack.tokens.get_counter("gpt-4o")
    assert result.tool_tokens == tool_definition_tokens(body["tools"], counter)
    assert openai_prompt_tokens(body["messages"]) + result.tool_tokens <= window - 200


@pytest.mark.parametrize(
    "options", [{}, {"window": 50_000}], ids=["plain session", "managed session"]
)
def test_parse_with_a_session_sends_the_strict_retrieve_tool_and_returns_the_parsed_reply(
    options: dict[str, Any],
) -> None:
    # The SDK refused the session's retrieve tool (not strict); then the wrapper refused the
    # call: a session could not be used with structured outputs at all.
    replies = iter([strict_retrieve_call, lambda body: httpx2.Response(200, json=reply())])
    capture = Capture(lambda body: next(replies)(body))
    session = ctxpack.Session(model="gpt-4o", **options)
    window = {} if options else {"window": 3000}
    client = ctxpack.wrap_openai(openai_client(capture), session=session, **window)
    limit = options.get("window", 3000)
    history = list(HISTORY)
    first = client.chat.completions.parse(
        model="gpt-4o", messages=history, response_format=Diagnosis, max_tokens=200
    )
    check_sent(capture.body, client.last_result, limit)
    call = first.choices[0].message.tool_calls[0]
    answer = session.handle(call)
    assert not answer.startswith("error") and "KeyError: 'exp'" in answer
    history += [first.choices[0].message, {"role": "tool", "tool_call_id": "call_2"}]
    history[-1]["content"] = answer
    second = client.chat.completions.parse(
        model="gpt-4o", messages=history, response_format=Diagnosis, max_tokens=200
    )
    assert second.choices[0].message.parsed == Diagnosis(test="test_refresh", cause="KeyError exp")
    check_sent(capture.body, client.last_result, limit)


def reply() -> dict[str, Any]:
    return chat_completion(ANSWER, model="gpt-4o")


@pytest.mark.parametrize("kind", ["Session", "AsyncSession"])
def test_async_parse_with_a_session_sends_the_strict_retrieve_tool(kind: str) -> None:
    capture = Capture(reply())

    async def send() -> tuple[Any, ctxpack.PackResult | None]:
        session: Any = ctxpack.Session(model="gpt-4o")
        if kind == "AsyncSession":
            session = await ctxpack.AsyncSession.open("chat", store="memory://", model="gpt-4o")
        client = ctxpack.wrap_openai(async_openai_client(capture), window=3000, session=session)
        parsed = await client.chat.completions.parse(
            model="gpt-4o", messages=HISTORY, response_format=Diagnosis, max_tokens=200
        )
        return parsed, client.last_result  # the task's own

    parsed, result = asyncio.run(send())
    assert parsed.choices[0].message.parsed == Diagnosis(test="test_refresh", cause="KeyError exp")
    check_sent(capture.body, result, 3000)


def test_create_with_strict_tools_only_gets_the_strict_retrieve_tool_counted_as_sent() -> None:
    # A request whose own tools are all strict goes out with strict tools only.
    capture = Capture(reply())
    session = ctxpack.Session(model="gpt-4o")
    client = ctxpack.wrap_openai(openai_client(capture), window=3000, session=session)
    client.chat.completions.create(
        model="gpt-4o", messages=HISTORY, tools=[STRICT_WEATHER], max_tokens=200
    )
    assert capture.body["tools"][0] == STRICT_WEATHER
    check_sent(capture.body, client.last_result, 3000)


def test_create_with_a_loose_tool_keeps_the_loose_retrieve_tool() -> None:
    capture = Capture(reply())
    session = ctxpack.Session(model="gpt-4o")
    client = ctxpack.wrap_openai(openai_client(capture), window=3000, session=session)
    loose = {**WEATHER_TOOL, "function": {**WEATHER_TOOL["function"], "name": "get_time"}}
    client.chat.completions.create(
        model="gpt-4o", messages=HISTORY, tools=[STRICT_WEATHER, loose], max_tokens=9
    )
    assert capture.body["tools"][-1] == retrieve_tool()


def test_the_strict_retrieve_tool_costs_more_than_the_loose_one_and_render_counts_it() -> None:
    session = ctxpack.Session(model="gpt-4o")
    session.extend(HISTORY)
    counter = session.counter
    strict, loose = session.tools(strict=True), session.tools()
    assert strict == [retrieve_tool(strict=True)] and loose == [retrieve_tool()]
    assert tool_definition_tokens(strict, counter) > tool_definition_tokens(loose, counter)
    assert session.render(strict=True).tool_tokens == tool_definition_tokens(strict, counter)
    assert session.render().tool_tokens == tool_definition_tokens(loose, counter)
    # Tools given all strict: the strict variant counted, as a wrapper sends it.
    both = [STRICT_WEATHER, *strict]
    assert session.render(tools=[STRICT_WEATHER]).tool_tokens == tool_definition_tokens(
        both, counter
    )


@pytest.mark.parametrize(
    "options",
    [{"tools_on_demand": True}, {"window": 50_000, "tools_on_demand": True}],
)
def test_parse_with_tools_on_demand_is_refused_saying_why(options: dict[str, Any]) -> None:
    # Tools on demand's stubs and describe_tool have no strict variant: the SDK would refuse
    # them, naming tools the caller never gave, with the session already holding the messages.
    capture = Capture(reply())
    session = ctxpack.Session(model="gpt-4o", **options)
    client = ctxpack.wrap_openai(openai_client(capture), session=session, window=50_000)
    if "window" in options:
        client = ctxpack.wrap_openai(openai_client(capture), session=session)
    with pytest.raises(ctxpack.ConfigError, match="parse takes strict function tools") as info:
        client.chat.completions.parse(model="gpt-4o", messages=HISTORY, tools=[STRICT_WEATHER])
    assert "tools_on_demand=False" in str(info.value)
    assert capture.requests == [] and session.transcript() == []
