"""Client wrappers when the provider call fails: the SDK raises (an error status, its own
retries), a task is cancelled while awaiting the call, a stream breaks. The wrapper and its
session stay consistent: ``last_result`` is the failed request's packing, the session holds
each message once, and the next request goes through."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

import ctxpack
from ctxpack.store import open_store
from tests.sdk_mock import (
    Capture,
    anthropic_client,
    anthropic_message,
    async_anthropic_client,
    chat_completion,
    openai_client,
)

QUESTION = {"role": "user", "content": "Why does the auth test fail?"}
FAILED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


def statuses(*codes: int) -> Callable[[dict[str, Any]], httpx2.Response]:
    """A Chat Completions reply per request: an error for each status but 200."""
    replies = iter(codes)

    def reply(body: dict[str, Any]) -> httpx2.Response:
        code = next(replies)
        if code != 200:
            # retry-after-ms: the SDK's own retries wait a millisecond, not seconds.
            return httpx2.Response(code, headers={"retry-after-ms": "1"}, json=FAILED)
        return httpx2.Response(200, json=chat_completion({"role": "assistant", "content": "ok"}))

    return reply


def given(session: ctxpack.Session) -> list[str]:
    return [m.text for m in session.transcript()]


@pytest.mark.parametrize("sdk_retries", [0, 2])
def test_a_failed_call_leaves_the_session_whole_and_a_retry_gives_nothing_twice(
    sdk_retries: int,
) -> None:
    # Without retries the SDK raises at the first 500; with two, it resends the packed request
    # itself and the third answer is the reply.
    capture = Capture(statuses(429, 500, 200, 200))
    raw = openai.OpenAI(
        api_key="k",
        base_url="http://mock.invalid/v1",
        max_retries=sdk_retries,
        http_client=httpx2.Client(transport=httpx2.MockTransport(capture)),
    )
    session = ctxpack.Session(model="gpt-4")
    client = ctxpack.wrap_openai(raw, window=4_000, session=session)
    history: list[Any] = [{"role": "system", "content": "Be brief."}, QUESTION]
    if not sdk_retries:
        for _ in range(2):
            with pytest.raises(openai.APIStatusError):
                client.chat.completions.create(model="gpt-4", messages=history)
            # The request was packed, then the call failed: last_result is that packing.
            result = client.last_result
            assert result is not None and result.messages[-1].text == QUESTION["content"]
    reply = client.chat.completions.create(model="gpt-4", messages=history)
    assert reply.choices[0].message.content == "ok"
    assert len(capture.requests) == 3
    assert all(body == capture.requests[0] for body in capture.requests)
    history += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "And?"}]
    client.chat.completions.create(model="gpt-4", messages=history)
    assert given(session) == ["Be brief.", QUESTION["content"], "ok", "And?"]


@pytest.mark.parametrize("store", ["memory://", "sqlite"])
def test_a_retry_with_another_last_message_says_how_to_retry(store: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}" if store == "sqlite" else store
    shared = open_store(url) if store == "memory://" else None

    def replica(capture: Capture) -> tuple[ctxpack.Session, Any]:
        session = ctxpack.Session.open("s", store=shared or url, model="gpt-4")
        return session, ctxpack.wrap_openai(openai_client(capture), window=4_000, session=session)

    capture = Capture(statuses(500, 200))
    _, a = replica(capture)
    session, b = replica(capture)
    with pytest.raises(openai.APIStatusError):
        a.chat.completions.create(model="gpt-4", messages=[QUESTION])
    rephrased = {"role": "user", "content": "Which assertion fails in test_auth?"}
    # The failed turn stays in the stored session, which replicas share: another message in
    # its place is refused, saying what to send instead.
    with pytest.raises(ctxpack.ConfigError, match="send its messages again as they were") as error:
        b.chat.completions.create(model="gpt-4", messages=[rephrased])
    assert "keep message 0 as it was and add the new one after it" in str(error.value)
    b.chat.completions.create(model="gpt-4", messages=[QUESTION, rephrased])
    assert [m["content"] for m in capture.body["messages"]] == [
        QUESTION["content"],
        rephrased["content"],
    ]
    assert given(session) == [QUESTION["content"], rephrased["content"]]


def slow_openai_transport(arrived: asyncio.Event | None = None) -> httpx2.MockTransport:
    """A transport whose API thinks a while; ``arrived``, if given, is set as a request comes."""

    async def reply(request: httpx2.Request) -> httpx2.Response:
        if arrived is not None:
            arrived.set()
        await asyncio.sleep(0.05)  # the API thinking: meanwhile the task is cancelled
        return httpx2.Response(200, json=chat_completion({"role": "assistant", "content": "ok"}))

    return httpx2.MockTransport(reply)


def slow_async_client(session: ctxpack.AsyncSession, arrived: asyncio.Event | None = None) -> Any:
    """An async OpenAI client on :func:`slow_openai_transport`, wrapped with ``session``."""
    raw = openai.AsyncOpenAI(
        api_key="k",
        base_url="http://mock.invalid/v1",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=slow_openai_transport(arrived)),
    )
    return ctxpack.wrap_openai(raw, window=4_000, session=session)


def test_an_async_call_is_a_task_that_can_be_cancelled_and_retried() -> None:
    async def converse() -> tuple[list[str], str | None]:
        session = await ctxpack.AsyncSession.open("s", store="memory://", model="gpt-4")
        arrived = asyncio.Event()
        client = slow_async_client(session, arrived)
        # A task, as with the SDK's own call (a coroutine): cancelled while awaiting the API,
        # once the request reached it (a fixed pause let a busy machine cancel it earlier).
        task = asyncio.create_task(
            client.chat.completions.create(model="gpt-4", messages=[QUESTION])
        )
        await arrived.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The lock is free and the retry gives nothing twice (the bound, far beyond the call,
        # only tells a lock never let go from a slow machine).
        retry = asyncio.create_task(
            client.chat.completions.create(model="gpt-4", messages=[QUESTION])
        )
        reply = await asyncio.wait_for(retry, 120)
        return [m.text for m in await session.transcript()], reply.choices[0].message.content

    assert asyncio.run(converse()) == ([QUESTION["content"]], "ok")


STREAM_EVENTS: list[dict[str, Any]] = [
    {
        "type": "message_start",
        "message": {**anthropic_message([]), "stop_reason": None},
    },
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
    {"type": "content_block_stop", "index": 0},
    {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 2},
        "context_management": {
            "applied_edits": [
                {
                    "type": "clear_tool_uses_20250919",
                    "cleared_tool_uses": 3,
                    "cleared_input_tokens": 4_200,
                }
            ]
        },
    },
    {"type": "message_stop"},
]


def sse(events: list[dict[str, Any]]) -> httpx2.Response:
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)


def server_side(replies: Iterator[httpx2.Response]) -> tuple[ctxpack.Session, Any]:
    policy = ctxpack.managed.WindowPolicy(window=200_000, server_side=True)
    session = ctxpack.Session(model="claude-sonnet-4-5", counter="cl100k_base", window=policy)
    raw = anthropic.Anthropic(
        api_key="k",
        base_url="http://mock.invalid",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(lambda r: next(replies))),
    )
    return session, ctxpack.wrap_anthropic(raw, session=session)


def server_decisions(client: Any) -> list[str]:
    result = client.last_result
    assert result is not None
    return [d.action for d in result.decisions if d.stage == "server"]


def test_the_event_stream_of_create_goes_through_a_server_side_session_as_the_sdk_gives_it() -> (
    None
):
    replies = iter([sse(STREAM_EVENTS), httpx2.Response(200, json=anthropic_message([]))])
    session, client = server_side(replies)
    stream = client.beta.messages.create(
        model="claude-sonnet-4-5", max_tokens=100, messages=[QUESTION], stream=True
    )
    assert isinstance(stream, anthropic.Stream)
    assert [event.type for event in stream] == [e["type"] for e in STREAM_EVENTS]
    history = [QUESTION, {"role": "assistant", "content": "Hi"}, {"role": "user", "content": "Go."}]
    client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=100, messages=history)
    # The events pass to the caller as the SDK gives them, and the edits their message_delta
    # reported are recorded as message_stop passes (as OpenAI's Responses events are).
    assert server_decisions(client) == ["cleared"]
    assert given(session) == [QUESTION["content"], "Hi", "Go."]


@pytest.mark.parametrize("breaks", ["error event", "left early"])
def test_a_stream_that_breaks_records_nothing_and_the_next_request_goes_through(
    breaks: str,
) -> None:
    events = [*STREAM_EVENTS[:3], FAILED] if breaks == "error event" else STREAM_EVENTS
    replies = iter([sse(events), httpx2.Response(200, json=anthropic_message([]))])
    session, client = server_side(replies)
    failing = pytest.raises(anthropic.APIStatusError, match="Overloaded")
    with (
        failing if breaks == "error event" else contextlib.nullcontext(),
        client.beta.messages.stream(
            model="claude-sonnet-4-5", max_tokens=100, messages=[QUESTION]
        ) as stream,
    ):
        for text in stream.text_stream:
            assert text == "Hi"
            if breaks == "left early":
                break
    result = client.last_result
    assert result is not None and result.messages[-1].text == QUESTION["content"]
    history = [QUESTION, {"role": "assistant", "content": "Hi"}, {"role": "user", "content": "Go."}]
    client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=100, messages=history)
    assert server_decisions(client) == []  # a partial stream says nothing of the edits
    assert given(session) == [QUESTION["content"], "Hi", "Go."]


def test_a_request_refused_before_it_is_sent_leaves_no_last_result() -> None:
    # The previous request's result would read, in an except block, as the refused one's.
    capture = Capture(chat_completion({"role": "assistant", "content": "ok"}))
    client = ctxpack.wrap_openai(openai_client(capture), window=60)
    client.chat.completions.create(model="gpt-4", messages=[QUESTION])
    assert client.last_result is not None
    with pytest.raises(ctxpack.BudgetExceededError):
        client.chat.completions.create(
            model="gpt-4", messages=[{"role": "user", "content": "Why? " * 100}]
        )
    assert client.last_result is None
    assert len(capture.requests) == 1

    # With a session, the user's counter failing while the request renders: the session holds
    # the new messages once, and the same request sent again goes through.
    down = False

    def count(text: str) -> int:
        if down:
            raise RuntimeError("the count endpoint is down")
        return len(text) // 4

    session = ctxpack.Session(counter=count)
    client = ctxpack.wrap_openai(openai_client(capture), window=4_000, session=session)
    client.chat.completions.create(model="gpt-4", messages=[QUESTION])
    history = [QUESTION, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "Go."}]
    down = True
    with pytest.raises(RuntimeError, match="count endpoint"):
        client.chat.completions.create(model="gpt-4", messages=history)
    assert client.last_result is None
    down = False
    client.chat.completions.create(model="gpt-4", messages=history)
    result = client.last_result
    assert result is not None and result.messages[-1].text == "Go."
    assert given(session) == [QUESTION["content"], "ok", "Go."]


def test_a_failed_turn_kept_before_the_new_question_goes_to_anthropic_as_one_turn() -> None:
    # The remedy the refusal names: two user messages in a row, which Anthropic takes merged.
    def reply(body: dict[str, Any]) -> httpx2.Response:
        if len(capture.requests) == 1:
            return httpx2.Response(500, json=FAILED)
        return httpx2.Response(200, json=anthropic_message([{"type": "text", "text": "ok"}]))

    capture = Capture(reply)
    session = ctxpack.Session(model="claude-sonnet-4-5", counter="cl100k_base")
    client = ctxpack.wrap_anthropic(
        anthropic_client(capture), window=4_000, session=session, counter="cl100k_base"
    )
    with pytest.raises(anthropic.APIStatusError):
        client.messages.create(model="claude-sonnet-4-5", max_tokens=100, messages=[QUESTION])
    rephrased = {"role": "user", "content": "Which assertion fails?"}
    client.messages.create(
        model="claude-sonnet-4-5", max_tokens=100, messages=[QUESTION, rephrased]
    )
    ctxpack.adapters.validate_anthropic(capture.body)
    texts = [block["text"] for block in capture.body["messages"][0]["content"]]
    assert len(capture.body["messages"]) == 1 and texts == [
        QUESTION["content"],
        "Which assertion fails?",
    ]


def test_a_wrapper_with_an_async_session_outlives_the_event_loop_that_first_used_it() -> None:
    # An application that runs asyncio.run() per job (or whose loop died with a failure) keeps
    # its wrapper: requests that wait for one another on the next loop still go through.
    session = asyncio.run(ctxpack.AsyncSession.open("s", store="memory://", model="gpt-4"))
    client = slow_async_client(session)

    async def burst() -> list[str | None]:
        requests = [
            client.chat.completions.create(model="gpt-4", messages=[QUESTION]) for _ in range(3)
        ]
        return [reply.choices[0].message.content for reply in await asyncio.gather(*requests)]

    assert asyncio.run(burst()) == ["ok"] * 3
    assert asyncio.run(burst()) == ["ok"] * 3

    async def transcript() -> list[str]:
        return [m.text for m in await session.transcript()]

    assert asyncio.run(transcript()) == [QUESTION["content"]]


def test_threads_on_replicas_retrying_failed_calls_give_each_message_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    lock = threading.Lock()
    calls = itertools.count()

    def flaky(body: dict[str, Any]) -> httpx2.Response:
        with lock:
            failing = next(calls) % 2 == 0
        if failing:
            return httpx2.Response(503, json=FAILED)
        return httpx2.Response(200, json=chat_completion({"role": "assistant", "content": "ok"}))

    history: list[Any] = [{"role": "system", "content": "Be brief."}, QUESTION]

    def replica(turns: int) -> int:
        session = ctxpack.Session.open("s", store=url, model="gpt-4")
        client = ctxpack.wrap_openai(openai_client(Capture(flaky)), window=4_000, session=session)
        failures = 0
        for _ in range(turns):
            try:
                client.chat.completions.create(model="gpt-4", messages=history)
                return failures
            except openai.APIStatusError:
                failures += 1
                assert client.last_result is not None  # the failed request's packing
        raise AssertionError("no call went through")

    with ThreadPoolExecutor(4) as pool:
        failures = list(pool.map(replica, [20] * 8))
    assert sum(failures) >= 4
    stored = ctxpack.Session.open("s", store=url, model="gpt-4")
    assert given(stored) == ["Be brief.", QUESTION["content"]]


class _HeldSession(ctxpack.Session):
    """A session whose ``held_at`` method (given a request's messages, or recording a reply)
    waits for ``release`` in its worker thread."""

    def __init__(self, held_at: str, **options: Any) -> None:
        super().__init__(**options)
        self.held_at = held_at
        self.started, self.release = threading.Event(), threading.Event()
        self.done = False

    def _held(self, name: str, call: Callable[[], Any]) -> Any:
        if name != self.held_at:
            return call()
        self.started.set()
        assert self.release.wait(10)
        out = call()
        self.done = True
        return out

    def extend(self, messages: Any, *, provider: Any = None, after: Any = None) -> None:
        self._held(
            "extend",
            lambda: super(_HeldSession, self).extend(messages, provider=provider, after=after),
        )

    def record_response(self, response: Any, *, append: bool = True, after: Any = None) -> Any:
        return self._held(
            "record_response",
            lambda: super(_HeldSession, self).record_response(response, append=append, after=after),
        )


@pytest.mark.parametrize("held_at", ["extend", "record_response"])
def test_a_request_cancelled_while_a_thread_writes_its_session_raises_once_it_ended(
    held_at: str,
) -> None:
    # A plain session is given the request, and records the reply, in a worker thread:
    # cancelled meanwhile, the call raised at once while the thread went on writing the
    # session and its store (a close then, or the next call, met a write under way, and its
    # error went unread).
    policy = ctxpack.managed.WindowPolicy(window=200_000, server_side=True)
    session = _HeldSession(held_at, model="claude-sonnet-4-5", counter="cl100k_base", window=policy)
    reply = anthropic_message([{"type": "text", "text": "Hi"}])
    client = ctxpack.wrap_anthropic(
        async_anthropic_client(Capture(lambda body: httpx2.Response(200, json=reply))),
        session=session,
    )

    async def main() -> tuple[bool, bool]:
        task = asyncio.ensure_future(
            client.beta.messages.create(
                model="claude-sonnet-4-5", max_tokens=100, messages=[QUESTION]
            )
        )
        assert await asyncio.to_thread(session.started.wait, 10)
        task.cancel()
        for _ in range(20):  # loop steps, for the cancellation to reach the call
            await asyncio.sleep(0)
        left_early = task.done() and not session.done
        session.release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        return left_early, session.done

    assert asyncio.run(main()) == (False, True)


def test_a_tool_result_holding_a_lone_surrogate_in_nested_text_is_refused_by_name() -> None:
    # Tool output decoded with errors="surrogateescape" (an odd file name from ls) inside an
    # Anthropic tool_result's text blocks went out of to_anthropic, and the wrapped OpenAI
    # client's refusal field to the SDK, to fail there as a UnicodeEncodeError.
    bad = "caf\udce9.txt"
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "List the files."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "sh", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": bad}],
                }
            ],
        },
    ]
    with pytest.raises(ctxpack.InvalidMessageError, match="lone surrogate") as caught:
        ctxpack.to_anthropic(history)
    assert caught.value.index == 2
    capture = Capture(
        lambda body: httpx2.Response(
            200, json=chat_completion({"role": "assistant", "content": "ok"})
        )
    )
    client = ctxpack.wrap_openai(openai_client(capture), window=8000, model="gpt-4o")
    refused = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "x", "refusal": bad},
    ]
    with pytest.raises(ctxpack.InvalidMessageError, match="lone surrogate") as caught:
        client.chat.completions.create(model="gpt-4o", messages=refused)
    assert (caught.value.index, caught.value.field) == (1, "refusal")
    assert capture.requests == []


def test_a_tool_definition_holding_a_lone_surrogate_is_refused_naming_it() -> None:
    # The definition was counted, then failed in the SDK as a UnicodeEncodeError.
    tool = {"name": "ls", "description": "Lists caf\udce9", "input_schema": {"type": "object"}}
    with pytest.raises(ctxpack.ConfigError, match=r"tools\[0\]\.description: .*lone surrogate"):
        ctxpack.count_tokens([QUESTION], model="gpt-4o", tools=[tool])
    capture = Capture(
        lambda body: httpx2.Response(200, json=anthropic_message([{"type": "text", "text": "ok"}]))
    )
    client = ctxpack.wrap_anthropic(
        anthropic_client(capture), window=8000, model="claude-sonnet-4-5"
    )
    with pytest.raises(ctxpack.ConfigError, match=r"tools\[0\]\.description"):
        client.messages.create(
            model="claude-sonnet-4-5", max_tokens=100, messages=[QUESTION], tools=[tool]
        )
    assert capture.requests == []
