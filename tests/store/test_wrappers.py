"""Client wrappers on a stored session that replicas share: whichever replica (or a process
started since) takes a request, the session gets each message of the history once, on every
backend, also when replicas race for the same messages."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import ctxpack
from ctxpack.store import SessionStore

from ..sdk_mock import (
    Capture,
    anthropic_client,
    anthropic_content_tokens,
    anthropic_message,
    async_anthropic_client,
    chat_completion,
    openai_client,
    slow_anthropic_reply,
)
from ..threads import claude_conversation_in_threads, switching_often
from .backends import backend_url

WINDOW = 4_000


def openai_replica(session_id: str, store: SessionStore) -> tuple[ctxpack.Session, Any]:
    session = ctxpack.Session.open(session_id, store=store, model="gpt-4o")
    reply = chat_completion({"role": "assistant", "content": "ok"})
    return session, ctxpack.wrap_openai(
        openai_client(Capture(reply)), window=8_000, session=session
    )


def claude_replica(session_id: str, store: SessionStore, capture: Capture) -> Any:
    session = ctxpack.Session.open(
        session_id, store=store, model="claude-sonnet-4-5", counter="cl100k_base", window=WINDOW
    )
    return ctxpack.wrap_anthropic(anthropic_client(capture), session=session)


def test_replicas_and_a_restart_give_each_message_once(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    first, a = openai_replica(session_id, replicas())
    _, b = openai_replica(session_id, replicas())
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Question 0?"},
    ]
    # Behind a load balancer: the requests of one conversation land on either replica.
    for turn, client in enumerate([a, b, b, a, b]):
        client.chat.completions.create(model="gpt-4o", messages=history)
        history += [
            {"role": "assistant", "content": f"Answer {turn}."},
            {"role": "user", "content": f"Question {turn + 1}?"},
        ]
    # A process started since knows nothing but what the store holds.
    restarted, c = openai_replica(session_id, replicas())
    c.chat.completions.create(model="gpt-4o", messages=history)
    expected = [m["content"] for m in history]
    assert [m.text for m in restarted.transcript()] == expected
    assert [m.text for m in first.transcript()] == expected
    # Another conversation's history is still refused, whichever replica gets it.
    other = [history[0], {"role": "user", "content": "Something else?"}]
    with pytest.raises(ctxpack.ConfigError, match="message 1 of this request differs"):
        b.chat.completions.create(model="gpt-4o", messages=other)


def test_a_managed_session_follows_a_changed_system_prompt_across_replicas(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
    a = claude_replica(session_id, replicas(), capture)
    b = claude_replica(session_id, replicas(), capture)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Go."}]
    prompts = ["Be brief.", "Be brief.", "Be long.", "Be brief.", "Be long."]
    for turn, (client, prompt) in enumerate(zip([a, b, b, a, b], prompts, strict=True)):
        client.messages.create(
            model="claude-sonnet-4-5", max_tokens=200, system=prompt, messages=history
        )
        # Each request with its own prompt, whichever replica sent the one before.
        assert capture.body["system"] == prompt
        history += [
            {"role": "assistant", "content": f"Step {turn}."},
            {"role": "user", "content": "Go on."},
        ]
    # The session holds each message once, opening with the first prompt, as it came.
    texts = [m.text for m in ctxpack.Session.open(session_id, store=replicas()).transcript()]
    assert texts == ["Be brief.", *(m["content"] for m in history[:-2])]


def test_replicas_racing_for_the_same_messages_give_each_once(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    # Threads on two replicas of one managed session, with a tiny switch interval: the same new
    # messages reach both replicas at once, and the session still gets each once, the system
    # prompt first; every request the SDK sends stays within the window.
    capture = Capture(slow_anthropic_reply)
    clients = [claude_replica(session_id, replicas(), capture) for _ in range(2)]
    history = claude_conversation_in_threads(clients, workers=6, turns=4, repeat=8)
    texts = [m.text for m in ctxpack.Session.open(session_id, store=replicas()).transcript()]
    assert texts == ["Be brief.", *(m["content"] for m in history)]
    for body in capture.requests:  # the texts alone, counted apart from ctxpack: a lower bound
        assert anthropic_content_tokens(body["system"], body["messages"]) + 200 <= WINDOW


def test_racing_replicas_each_send_their_own_system_prompt(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    # The same race, each thread's requests with its own system prompt, each thread on its own
    # replica: a request never goes out with another's, and the history is still given once.
    captures = [Capture(slow_anthropic_reply) for _ in range(6)]
    clients = [claude_replica(session_id, replicas(), capture) for capture in captures]
    history = claude_conversation_in_threads(
        clients, workers=6, turns=4, repeat=8, system=lambda worker: f"Prompt {worker}. " * 4
    )
    texts = [m.text for m in ctxpack.Session.open(session_id, store=replicas()).transcript()]
    assert texts[1:] == [m["content"] for m in history]
    assert texts[0] in {f"Prompt {worker}. " * 4 for worker in range(6)}
    for worker, capture in enumerate(captures):
        assert len(capture.requests) == 4
        for body in capture.requests:
            assert body["system"] == f"Prompt {worker}. " * 4
            assert anthropic_content_tokens(body["system"], body["messages"]) + 200 <= WINDOW


def test_async_replicas_racing_for_the_same_messages_give_each_once(
    backend: str, replicas: Callable[[], SessionStore], session_id: str, tmp_path: Path
) -> None:
    # The same with AsyncSessions behind the async client, on each backend's async driver (the
    # memory store, which only one process can share, through a worker thread): asyncio tasks
    # on two replicas carry one conversation on.
    def store() -> Any:
        return replicas() if backend == "memory" else backend_url(backend, tmp_path)

    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))

    async def converse() -> tuple[list[dict[str, Any]], list[str]]:
        sessions = [
            await ctxpack.AsyncSession.open(
                session_id,
                store=store(),
                model="claude-sonnet-4-5",
                counter="cl100k_base",
                window=WINDOW,
            )
            for _ in range(2)
        ]
        clients = [
            ctxpack.wrap_anthropic(async_anthropic_client(capture), session=s) for s in sessions
        ]
        history: list[dict[str, Any]] = []
        lock = asyncio.Lock()

        async def work(worker: int) -> None:
            for turn in range(4):
                async with lock:
                    if history:
                        history.append({"role": "assistant", "content": "Noted."})
                    history.append({"role": "user", "content": f"Task {worker}, turn {turn}. " * 8})
                    snapshot = list(history)
                await clients[worker % 2].messages.create(
                    model="claude-sonnet-4-5", max_tokens=200, system="Be brief.", messages=snapshot
                )

        await asyncio.gather(*(work(w) for w in range(6)))
        texts = [m.text for m in await sessions[0].transcript()]
        for session in sessions:
            await session.close()
        return history, texts

    with switching_often():
        history, texts = asyncio.run(converse())
    assert texts == ["Be brief.", *(m["content"] for m in history)]
    for body in capture.requests:  # the texts alone, counted apart from ctxpack: a lower bound
        assert anthropic_content_tokens(body["system"], body["messages"]) + 200 <= WINDOW
