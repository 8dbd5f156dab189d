"""Wrapped clients shared by threads and asyncio tasks: each reads its own ``last_result``, and
a session behind the wrapper gets each message once."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import weakref
from typing import Any

import httpx2
import pytest

import ctxpack
from tests.sdk_mock import (
    Capture,
    anthropic_client,
    anthropic_content_tokens,
    async_openai_client,
    chat_completion,
    openai_client,
    slow_anthropic_reply,
)
from tests.threads import claude_conversation_in_threads

THREADS = 8


def reply(text: str = "ok") -> dict[str, Any]:
    return chat_completion({"role": "assistant", "content": text})


def slow_reply(body: dict[str, Any]) -> httpx2.Response:
    # While one thread waits for the "API", the others pack their own requests.
    time.sleep(0.002)
    return httpx2.Response(200, json=reply())


def question(worker: int, turn: int) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You answer briefly."},
        {"role": "user", "content": f"Worker {worker} asks question {turn}."},
    ]


def test_last_result_is_the_calling_threads_own() -> None:
    client = ctxpack.wrap_openai(openai_client(Capture(slow_reply)), window=500)
    start = threading.Barrier(THREADS)
    wrong: list[tuple[int, int]] = []

    def work(worker: int) -> None:
        start.wait()
        for turn in range(15):
            client.chat.completions.create(model="gpt-4", messages=question(worker, turn))
            result = client.last_result
            if result is None or result.messages[-1].text != question(worker, turn)[-1]["content"]:
                wrong.append((worker, turn))

    threads = [threading.Thread(target=work, args=(w,)) for w in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
    # A thread that packed nothing has no last result, whatever the others did.
    assert client.last_result is None


def test_last_result_is_the_calling_tasks_own() -> None:
    client = ctxpack.wrap_openai(async_openai_client(Capture(reply())), window=500)

    async def ask(worker: int) -> str | None:
        await client.chat.completions.create(model="gpt-4", messages=question(worker, 0))
        await asyncio.sleep(0)  # let the other tasks pack theirs
        result = client.last_result
        return None if result is None else result.messages[-1].text

    async def main() -> list[str | None]:
        return await asyncio.gather(*(ask(w) for w in range(64)))

    texts = asyncio.run(main())
    assert texts == [question(w, 0)[-1]["content"] for w in range(64)]


def test_copies_share_the_last_result_of_the_thread() -> None:
    client = ctxpack.wrap_openai(openai_client(Capture(reply())), window=500)
    copy = client.with_options(timeout=5)
    copy.chat.completions.create(model="gpt-4", messages=question(0, 0))
    assert client.last_result is copy.last_result is not None


def test_a_wrapper_made_per_request_leaves_nothing_behind() -> None:
    def one_request() -> weakref.ref[ctxpack.PackResult]:
        client = ctxpack.wrap_openai(openai_client(Capture(reply())), window=500)
        client.chat.completions.create(model="gpt-4", messages=question(0, 0))
        assert client.last_result is not None
        return weakref.ref(client.last_result)

    results = [one_request() for _ in range(5)]
    gc.collect()
    assert [ref() for ref in results] == [None] * 5


class StoredSession(ctxpack.Session):
    """A session whose appends take a moment, as a durable write to a store does."""

    def extend(self, messages: Any, **options: Any) -> Any:
        time.sleep(0.001)
        return super().extend(messages, **options)


def test_a_session_shared_by_threads_gets_each_message_once() -> None:
    session = StoredSession(model="gpt-4")
    client = ctxpack.wrap_openai(openai_client(Capture(slow_reply)), window=2000, session=session)
    history: list[dict[str, Any]] = [{"role": "system", "content": "You answer briefly."}]
    history_lock = threading.Lock()
    start = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        start.wait()
        for turn in range(10):
            with history_lock:
                history.append({"role": "user", "content": f"Worker {worker}, turn {turn}."})
                snapshot = list(history)
            try:
                client.chat.completions.create(model="gpt-4", messages=snapshot, max_tokens=50)
            except Exception as error:  # collected: the assertion below lists them
                errors.append(error)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [m.text for m in session.transcript()] == [m["content"] for m in history]


def test_a_managed_session_shared_by_threads_gets_its_system_prompt_and_each_message_once() -> None:
    # Anthropic's system prompt opens a managed session's history: given once, first, however
    # the threads interleave, and every request the SDK sends stays within the window.
    capture = Capture(slow_anthropic_reply)
    session = StoredSession(model="claude-sonnet-4-5", counter="cl100k_base", window=4_000)
    client = ctxpack.wrap_anthropic(anthropic_client(capture), session=session)
    history = claude_conversation_in_threads([client], workers=THREADS, turns=6, repeat=20)
    texts = [m.text for m in session.transcript()]
    assert texts == ["Be brief.", *(m["content"] for m in history)]
    assert all(body["system"] == "Be brief." for body in capture.requests)
    for body in capture.requests:  # the texts alone, counted apart from ctxpack: a lower bound
        assert anthropic_content_tokens(body["system"], body["messages"]) + 200 <= 4_000


def test_an_async_session_with_the_sync_client_is_refused_with_what_to_do() -> None:
    session = asyncio.run(ctxpack.AsyncSession.open("s", store="memory://", model="gpt-4"))
    with pytest.raises(ctxpack.ConfigError, match=r"AsyncSession to the async client \(openai"):
        ctxpack.wrap_openai(openai_client(Capture(reply())), window=500, session=session)
