"""A wrapped client's request in flight while its session is erased: the caller gets the
provider's reply, and nothing of it (nor of the erased history that the next request carries)
is stored in the session's next life; on every backend, sync and async, through the real SDKs
on a mock transport, and behind a LangChain agent."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx2
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

import ctxpack
from ctxpack.errors import SessionErasedError
from ctxpack.integrations.langchain_agent import SessionMiddleware
from ctxpack.store import SessionStore

from ..adapters.test_langchain_session import WINDOW, AgentModel, agent_with, thread
from ..sdk_mock import (
    Capture,
    anthropic_client,
    anthropic_message,
    async_openai_client,
    chat_completion,
    openai_client,
)
from .test_erased_replies import SECRET, async_store, stored_text

__all__ = ["async_store"]  # the fixture, shared

QUESTION = {"role": "user", "content": f"Keep my plan: {SECRET}"}
ANSWER = {"role": "assistant", "content": f"Your plan, {SECRET}, is sound."}


def erasing_reply(erase: Callable[[], None], reply: dict[str, Any]) -> Capture:
    """A provider that answers ``reply``, the user's erasure landing while it does (first
    request only), then ``ok``."""
    calls = iter([True])

    def answer(body: dict[str, Any]) -> httpx2.Response:
        if next(calls, False):
            erase()
            return httpx2.Response(200, json=reply)
        return httpx2.Response(200, json=chat_completion({"role": "assistant", "content": "ok"}))

    return Capture(answer)


def test_a_wrapped_reply_in_flight_during_an_erasure_is_never_stored(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    other = replicas()
    capture = erasing_reply(lambda: other.delete_session(session_id), chat_completion(ANSWER))
    session = ctxpack.Session.open(session_id, store=replicas(), model="gpt-4o")
    client = ctxpack.wrap_openai(openai_client(capture), window=8_000, session=session)
    history: list[dict[str, Any]] = [QUESTION]
    response = client.chat.completions.create(model="gpt-4o", messages=history)
    assert response.choices[0].message.content == ANSWER["content"]  # the caller has it
    history += [ANSWER, {"role": "user", "content": "Go on."}]
    for _ in range(2):  # the erased history sent again is refused again
        with pytest.raises(SessionErasedError, match=repr(session_id)):
            client.chat.completions.create(model="gpt-4o", messages=history)
    assert len(capture.requests) == 1  # refused before it was sent
    assert SECRET not in stored_text(other, session_id)
    assert session.transcript() == []
    # A new conversation starts the session's new life.
    client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Hi."}])
    reader = ctxpack.Session.open(session_id, store=other, model="gpt-4o")
    assert [m.text for m in reader.transcript()] == ["Hi."]


def test_a_wrapped_request_continuing_a_render_of_the_same_life_is_served(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    capture = Capture(chat_completion({"role": "assistant", "content": "ok"}))
    session = ctxpack.Session.open(session_id, store=replicas(), model="gpt-4o")
    client = ctxpack.wrap_openai(openai_client(capture), window=8_000, session=session)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Hi."}]
    for turn in range(3):
        client.chat.completions.create(model="gpt-4o", messages=history)
        history += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": f"{turn}"}]
    assert len(session.transcript()) == 5


def test_a_server_side_session_records_nothing_of_a_reply_to_an_erased_render(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    other = replicas()
    cleared = {
        "type": "clear_tool_uses_20250919",
        "cleared_tool_uses": 3,
        "cleared_input_tokens": 4_200,
    }
    reply = {
        **anthropic_message([{"type": "text", "text": ANSWER["content"]}]),
        "context_management": {"applied_edits": [cleared]},
    }
    capture = erasing_reply(lambda: other.delete_session(session_id), reply)
    policy = ctxpack.managed.WindowPolicy(window=200_000, server_side=True)
    session = ctxpack.Session.open(
        session_id,
        store=replicas(),
        model="claude-sonnet-4-5",
        counter="cl100k_base",
        window=policy,
    )
    client = ctxpack.wrap_anthropic(anthropic_client(capture), session=session)
    message = client.beta.messages.create(
        model="claude-sonnet-4-5", max_tokens=1_000, messages=[QUESTION]
    )
    assert message.content[0].text == ANSWER["content"]  # the caller has it
    assert other.load(session_id).version == 0  # nothing recorded in a new life
    assert SECRET not in stored_text(other, session_id)


def test_an_async_wrapped_reply_in_flight_during_an_erasure_is_never_stored(
    async_store: tuple[Callable[[], Any], SessionStore], session_id: str
) -> None:
    opener, other = async_store
    capture = erasing_reply(lambda: other.delete_session(session_id), chat_completion(ANSWER))

    async def main() -> None:
        store = opener()
        session = await ctxpack.AsyncSession.open(session_id, store=store, model="gpt-4o")
        client = ctxpack.wrap_openai(async_openai_client(capture), window=8_000, session=session)
        history: list[dict[str, Any]] = [QUESTION]
        response = await client.chat.completions.create(model="gpt-4o", messages=history)
        assert response.choices[0].message.content == ANSWER["content"]
        history += [ANSWER, {"role": "user", "content": "Go on."}]
        with pytest.raises(SessionErasedError, match=repr(session_id)):
            await client.chat.completions.create(model="gpt-4o", messages=history)
        assert len(capture.requests) == 1
        assert SECRET not in stored_text(other, session_id)
        assert await session.transcript() == []
        await store.close()

    asyncio.run(main())


@pytest.mark.parametrize("erasure", ["delete_thread", "another replica"])
def test_an_agent_run_under_way_during_its_threads_erasure_stores_nothing_of_it(
    replicas: Callable[[], SessionStore], session_id: str, erasure: str
) -> None:
    store = replicas()
    sessions = SessionMiddleware(window=WINDOW, model="gpt-4", store=store)
    other = replicas()
    model = AgentModel(reads=1)

    def respond(messages: list[BaseMessage]) -> AIMessage:
        step = model.next_step(messages)
        if len(model.seen) == 1:  # the user erases the thread while the model answers
            if erasure == "delete_thread":
                sessions.delete_thread(session_id)
            else:
                other.delete_session(session_id)
            step.content = f"{step.content} (about {SECRET})"
        return step

    model.respond = respond
    agent = agent_with(sessions, model, InMemorySaver())
    with pytest.raises(SessionErasedError):
        # The model's reply asks for a tool; the tool's output and the reply would reach the
        # session with the next model call, which is refused.
        agent.invoke({"messages": [HumanMessage(f"Keep my plan: {SECRET}")]}, thread(session_id))
    assert len(model.seen) == 1
    assert SECRET not in stored_text(other, session_id)
    assert sessions.session(session_id).transcript() == []
    # A new run of the thread, its history gone with it, starts the thread's new session.
    fresh = agent_with(sessions, AgentModel(reads=0), InMemorySaver())
    fresh.invoke({"messages": [HumanMessage("Hello.")]}, thread(session_id))
    assert [m.text for m in sessions.session(session_id).transcript()][-1] == "Hello."
