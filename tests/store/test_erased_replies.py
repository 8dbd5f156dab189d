"""A reply names the render it answers (``after=``): a session erased while the request was in
flight (a user's erasure handled by another replica) never stores the reply, made from the
erased history, in its next life."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxpack import AsyncSession, ConfigError, Session, pack
from ctxpack.errors import SessionErasedError, StoreError
from ctxpack.store import MemoryStore, SessionStore, ThreadedAsyncStore, open_async_store

from ..sdk_mock import anthropic_message
from .backends import backend_url
from .test_lives import ErasedBeforeItsWrite

SECRET = "QZX-the-erased-plan-QZX"
REPLY = {"role": "assistant", "content": f"Your plan, {SECRET}, is sound."}


def stored_text(store: SessionStore, session_id: str) -> str:
    """Everything the store holds of the session, as one string."""
    stored = store.load(session_id)
    return json.dumps([stored.state, *stored.entries])


def started(store: SessionStore, session_id: str) -> tuple[Session, Any]:
    """A session holding the secret, and its render (sent to the model)."""
    session = Session.open(session_id, store=store, model="gpt-4")
    session.append({"role": "user", "content": f"Keep my plan: {SECRET}"})
    return session, session.render()


@pytest.mark.parametrize("restarted", [False, True], ids=["erased", "erased-and-restarted"])
def test_a_reply_to_a_render_of_an_erased_session_is_not_stored(
    replicas: Callable[[], SessionStore], session_id: str, restarted: bool
) -> None:
    session, result = started(replicas(), session_id)
    other = replicas()
    # The user's erasure, handled by another replica while the request is in flight; the
    # user may have started a new chat since, grown to the version the first replica read.
    other.delete_session(session_id)
    if restarted:
        fresh = Session.open(session_id, store=other, model="gpt-4")
        fresh.append({"role": "user", "content": "a new chat"})
    with pytest.raises(SessionErasedError, match=repr(session_id)) as raised:
        session.append(REPLY, after=result)
    assert raised.value.session_id == session_id
    assert isinstance(raised.value, StoreError)
    assert SECRET not in stored_text(other, session_id)
    assert all(SECRET not in str(m.content) for m in session.transcript())
    # The session goes on in the new life.
    session.append({"role": "user", "content": "hello again"}, after=None)
    expected = ["a new chat", "hello again"] if restarted else ["hello again"]
    reader = Session.open(session_id, store=other, model="gpt-4")
    assert [m.content for m in reader.transcript()] == expected


def test_an_erasure_landing_during_the_append_is_read_and_the_reply_refused(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    # The session erased and started again (back at the version read) after the append read
    # the store and before it wrote: the store refuses the write, the append reads the new
    # life and then refuses the reply.
    other = replicas()
    racing = ErasedBeforeItsWrite(replicas(), other, session_id)
    session, result = started(racing, session_id)  # type: ignore[arg-type]
    racing.armed = True
    with pytest.raises(SessionErasedError):
        session.extend([REPLY, {"role": "user", "content": "go on"}], after=result)
    assert not racing.armed  # the erasure did land in the append
    assert SECRET not in stored_text(other, session_id)


def test_a_reply_to_a_render_of_the_same_life_is_stored_on_any_replica(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    session, result = started(replicas(), session_id)
    replica = Session.open(session_id, store=replicas(), model="gpt-4")
    replica.append({"role": "user", "content": "and another thing"})  # another writer first
    replica.append(REPLY, after=result)  # answered on a replica that did not render it
    session.extend([{"role": "user", "content": "thanks"}], after=session.render())
    assert [m.role for m in session.transcript()] == ["user", "user", "assistant", "user"]


def test_a_response_recorded_after_an_erasure_is_not(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    session, result = started(replicas(), session_id)
    response = anthropic_message([{"type": "text", "text": f"Noted: {SECRET}."}])
    session.record_response({**response, "id": "msg_0"}, after=result)
    assert len(session) == 2
    replicas().delete_session(session_id)
    for append in (True, False):
        with pytest.raises(SessionErasedError):
            session.record_response(response, append=append, after=result)
    assert session.transcript() == []
    assert replicas().load(session_id).version == 0


def test_a_skill_pinned_after_an_erasure_is_not(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    # The model asked for a skill, quoting the erased history in its request: the pin answers
    # that render, as a reply does.
    session, result = started(replicas(), session_id)
    session.pin(f"Steps for {SECRET}", name="plan-skill", after=result)
    assert len(session) == 2
    replicas().delete_session(session_id)
    with pytest.raises(SessionErasedError, match=repr(session_id)):
        session.pin(f"More steps for {SECRET}", name="plan-skill-2", after=result)
    assert replicas().load(session_id).version == 0
    with pytest.raises(ConfigError, match="after"):
        session.pin("x", name="y", after=pack([{"role": "user", "content": "hi"}], budget=50))


def test_after_takes_only_a_result_this_session_rendered(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    session, result = started(replicas(), session_id)
    other = Session.open(f"{session_id}-other", store=replicas(), model="gpt-4")
    other.append({"role": "user", "content": "another user's chat"})
    memory = Session(model="gpt-4")
    memory.append({"role": "user", "content": "in memory"})
    packed = pack([{"role": "user", "content": "hi"}], budget=100)
    for wrong, said in [
        (other.render(), "another session"),
        (memory.render(), "another session"),
        (packed, "pack()"),
        (result.model_dump(), "got dict"),
    ]:
        with pytest.raises(ConfigError, match="after") as raised:
            session.append(REPLY, after=wrong)
        assert said in str(raised.value)
    with pytest.raises(ConfigError, match="after"):
        other.record_response(anthropic_message([]), after=result)
    assert len(session) == 1 and len(other) == 1


def test_a_session_in_memory_answers_its_own_renders_only() -> None:
    # Nothing erases a session in memory: a reply to its own render is always stored.
    session = Session(model="gpt-4")
    session.append({"role": "user", "content": "hi"})
    result = session.render()
    session.append({"role": "assistant", "content": "hello"}, after=result)
    session.extend([{"role": "user", "content": "and?"}], after=result)
    with pytest.raises(ConfigError, match="after"):
        Session(model="gpt-4").append({"role": "user", "content": "x"}, after=result)
    assert len(session) == 3


@pytest.fixture
def async_store(backend: str, tmp_path: Path) -> Iterator[tuple[Callable[[], Any], Any]]:
    """A function opening an async store on the backend's data, and a sync store on it."""
    if backend == "memory":
        shared = MemoryStore()
        yield (lambda: ThreadedAsyncStore(shared)), shared
        return
    from ctxpack.store import open_store

    url = backend_url(backend, tmp_path)
    sync = open_store(url)
    yield (lambda: open_async_store(url)), sync
    sync.close()


@pytest.mark.parametrize("restarted", [False, True], ids=["erased", "erased-and-restarted"])
def test_an_async_reply_to_a_render_of_an_erased_session_is_not_stored(
    async_store: tuple[Callable[[], Any], SessionStore], session_id: str, restarted: bool
) -> None:
    opener, other = async_store

    async def main() -> list[str]:
        store = opener()
        session = await AsyncSession.open(session_id, store=store, model="gpt-4")
        await session.append({"role": "user", "content": f"Keep my plan: {SECRET}"})
        result = await session.render()
        await session.append({"role": "assistant", "content": "Noted."}, after=result)
        other.delete_session(session_id)
        if restarted:
            Session.open(session_id, store=other, model="gpt-4").append(
                {"role": "user", "content": "a new chat"}
            )
        response = anthropic_message([{"type": "text", "text": f"Noted: {SECRET}."}])
        with pytest.raises(SessionErasedError, match=repr(session_id)):
            await session.append(REPLY, after=result)
        with pytest.raises(SessionErasedError):
            await session.extend([REPLY], after=result)
        with pytest.raises(SessionErasedError):
            await session.record_response(response, after=result)
        with pytest.raises(SessionErasedError):
            await session.pin(SECRET, name="a-skill", after=result)
        with pytest.raises(ConfigError, match="after"):
            await session.append(REPLY, after={"messages": []})  # type: ignore[arg-type]
        texts = [str(m.content) for m in await session.transcript()]
        assert SECRET not in stored_text(other, session_id)
        await store.close()
        return texts

    assert asyncio.run(main()) == (["a new chat"] if restarted else [])


# --------------------------------------------------------------------------- threads


def test_no_reply_of_an_erased_life_is_ever_stored_in_a_later_one(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    """Writers render and answer, erasers erase, threads switching as often as they can.

    Each life opens with a seed message of its own, and each reply quotes the first message
    of the render it answers: a reply stored in a life whose first message it does not quote
    was made from an erased one."""
    writers, turns, erasures = 4, 12, 6
    progress = threading.Semaphore(0)
    refused: list[int] = []
    errors: list[BaseException] = []
    seen: list[list[str]] = []

    def check(texts: list[str]) -> None:
        seen.append(texts)
        for text in texts:
            if text.startswith("reply to "):
                assert text == f"reply to {texts[0]}", texts

    def write(n: int) -> None:
        try:
            session = Session.open(session_id, store=replicas(), model="gpt-4")
            for turn in range(turns):
                if len(session.transcript()) == 0:
                    session.append({"role": "user", "content": f"seed {n}.{turn}"})
                try:
                    result = session.render()
                except ConfigError:  # erased between the two: empty
                    continue
                reply = f"reply to {result.messages[0].content}"
                try:
                    session.append({"role": "assistant", "content": reply}, after=result)
                except SessionErasedError:
                    refused.append(n)
                progress.release()
        except BaseException as exc:
            errors.append(exc)
        finally:
            for _ in range(erasures):  # an eraser never waits for a writer that ended
                progress.release()

    def erase() -> None:
        try:
            store = replicas()
            reader = Session.open(session_id, store=replicas(), model="gpt-4")
            for _ in range(erasures):
                progress.acquire()  # each erasure after some writer's progress
                check([str(m.content) for m in reader.transcript()])
                store.delete_session(session_id)
        except BaseException as exc:
            errors.append(exc)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
        threads.append(threading.Thread(target=erase))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors
    final = Session.open(session_id, store=replicas(), model="gpt-4")
    check([str(m.content) for m in final.transcript()])
    assert any(len(texts) > 1 for texts in seen) or len(final.transcript()) > 1
