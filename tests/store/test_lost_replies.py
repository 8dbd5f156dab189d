"""A write whose reply was lost (the connection dropped as the store acknowledged it): the
caller's retry of the same call stores it once, and a write that failed is stored when
retried, whatever the other threads or tasks sharing the session object write meanwhile."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ctxpack import AsyncSession, Session
from ctxpack.errors import StoreConflictError, StoreError
from ctxpack.managed import WindowPolicy
from ctxpack.store import AsyncSessionStore, SessionStore, ThreadedAsyncStore, open_async_store
from tests.sdk_mock import anthropic_message

from .backends import backend_url

HELLO = {"role": "user", "content": "hello"}
REPLY = anthropic_message([{"type": "text", "text": "Booked."}])


class _Failing:
    """A store whose next append fails once (``fail``): ``"before"`` the store took it,
    ``"after"`` (its reply lost with its connection), or reported a ``"conflict"`` after it
    and ``meanwhile`` (Redis's driver sending it again, after another writer's append)."""

    def __init__(self, store: Any) -> None:
        self.store, self.url, self.fail = store, store.url, ""
        self.meanwhile: Callable[[], None] = lambda: None
        self.lossy, self.appends = False, 0

    def _failing(self) -> str:
        """How the append being made fails: as told, else (``lossy``) every third append's
        reply is lost and every seventh is refused before the store takes it."""
        failing, self.fail = self.fail, ""
        self.appends += 1
        if failing or not self.lossy:
            return failing
        return "after" if self.appends % 3 == 0 else "before" if self.appends % 7 == 0 else ""

    def load(self, session_id: str, *, since: int = 0) -> Any:
        return self.store.load(session_id, since=since)

    def append(self, session_id: str, entry: str, **arguments: Any) -> None:
        failing = self._failing()
        if failing == "before":
            raise ConnectionError("connection refused")
        self.store.append(session_id, entry, **arguments)
        self._failed(failing, session_id, arguments["version"])

    def _failed(self, failing: str, session_id: str, version: int) -> None:
        if failing == "after":
            raise ConnectionError("connection lost before the reply")
        if failing == "conflict":
            self.meanwhile()
            raise StoreConflictError(
                url=self.url, session_id=session_id, expected=version, actual=version + 2
            )

    def put_artifact(self, *args: Any, **kwargs: Any) -> None:
        self.store.put_artifact(*args, **kwargs)

    def get_artifact(self, *args: Any) -> str:
        return str(self.store.get_artifact(*args))

    def delete_session(self, session_id: str) -> None:
        self.store.delete_session(session_id)

    def close(self) -> None:
        pass  # the fixture closes the store


class _AsyncFailing(_Failing):
    async def load(self, session_id: str, *, since: int = 0) -> Any:
        return await self.store.load(session_id, since=since)

    async def append(self, session_id: str, entry: str, **arguments: Any) -> None:  # type: ignore[override]
        failing = self._failing()
        if failing == "before":
            raise ConnectionError("connection refused")
        await self.store.append(session_id, entry, **arguments)
        self._failed(failing, session_id, arguments["version"])

    async def put_artifact(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        await self.store.put_artifact(*args, **kwargs)

    async def get_artifact(self, *args: Any) -> str:  # type: ignore[override]
        return str(await self.store.get_artifact(*args))

    async def delete_session(self, session_id: str) -> None:  # type: ignore[override]
        await self.store.delete_session(session_id)

    async def close(self) -> None:  # type: ignore[override]
        pass


class _Caller:
    """One session, sync or async, called alike; ``fail_next()`` fails its next append."""

    def __init__(self, mode: str, backend: str, tmp_path: Path, store: SessionStore) -> None:
        self.mode = mode
        self.inner: AsyncSessionStore | None = None
        if mode == "async" and backend == "memory":
            self.inner = ThreadedAsyncStore(store)
        elif mode == "async":
            self.inner = open_async_store(backend_url(backend, tmp_path))
        self.loop = asyncio.new_event_loop() if mode == "async" else None
        self.store = store
        self.session: Any = None
        self.wrapper: _Failing | None = None

    def open(self, session_id: str, **options: Any) -> None:
        if self.loop is None:
            self.wrapper = _Failing(self.store)
            self.session = Session.open(session_id, store=self.wrapper, **options)
        else:
            self.wrapper = _AsyncFailing(self.inner)
            opening = AsyncSession.open(session_id, store=self.wrapper, **options)
            self.session = self.loop.run_until_complete(opening)

    def fail_next(self, how: str) -> None:
        assert self.wrapper is not None
        self.wrapper.fail = how

    def __call__(self, method: str, *args: Any) -> Any:
        result = getattr(self.session, method)(*args)
        return result if self.loop is None else self.loop.run_until_complete(result)

    def texts(self) -> list[str]:
        return [m.text for m in self("transcript")]

    def close(self) -> None:
        if self.loop is not None:
            assert self.inner is not None
            if not isinstance(self.inner, ThreadedAsyncStore):
                self.loop.run_until_complete(self.inner.close())
            self.loop.close()


@pytest.fixture(params=["sync", "async"])
def caller(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path, store: SessionStore
) -> Any:
    made = _Caller(request.param, backend, tmp_path, store)
    yield made
    made.close()


def _stored(session_id: str, store: SessionStore) -> list[str]:
    return [m.text for m in Session.open(session_id, store=store, model="gpt-4").transcript()]


def test_an_append_whose_reply_was_lost_is_stored_once_when_retried(
    caller: Any, store: SessionStore, session_id: str
) -> None:
    # The store took the append and the connection dropped before its reply: the caller got
    # a StoreError, retried, and the message was stored twice.
    caller.open(session_id, model="gpt-4")
    caller("append", {"role": "user", "content": "first"})
    caller.fail_next("after")
    with pytest.raises(StoreError, match="connection lost"):
        caller("append", HELLO)
    caller("append", HELLO)  # the caller's retry
    caller("append", {"role": "user", "content": "thanks"})
    assert caller.texts() == ["first", "hello", "thanks"]
    assert _stored(session_id, store) == ["first", "hello", "thanks"]


def test_a_recorded_response_whose_reply_was_lost_is_recorded_once_when_retried(
    caller: Any, store: SessionStore, session_id: str
) -> None:
    window = WindowPolicy(window=200_000, server_side=True)
    caller.open(session_id, model="claude-sonnet-4-5", counter="cl100k_base", window=window)
    caller("append", {"role": "user", "content": "book the 9:40 train"})
    caller.fail_next("after")
    with pytest.raises(StoreError):
        caller("record_response", REPLY)
    assert caller("record_response", REPLY) == []  # recorded already
    assert caller.texts() == ["book the 9:40 train", "Booked."]


def test_an_append_that_failed_is_stored_when_retried(
    caller: Any, store: SessionStore, session_id: str
) -> None:
    caller.open(session_id, model="gpt-4")
    caller.fail_next("before")
    with pytest.raises(StoreError, match="connection refused"):
        caller("append", HELLO)
    caller("append", HELLO)
    assert caller.texts() == ["hello"]
    assert _stored(session_id, store) == ["hello"]


def test_the_same_message_appended_by_another_replica_meanwhile_is_not_taken_for_the_retry(
    caller: Any, replicas: Callable[[], SessionStore], store: SessionStore, session_id: str
) -> None:
    # Only the write itself counts as landed, not a message alike that another writer stored.
    caller.open(session_id, model="gpt-4")
    caller.fail_next("before")
    with pytest.raises(StoreError):
        caller("append", HELLO)
    other = Session.open(session_id, store=replicas(), model="gpt-4")
    other.append(HELLO)
    caller("append", HELLO)
    assert caller.texts() == ["hello", "hello"]
    assert _stored(session_id, store) == ["hello", "hello"]


def test_a_lost_reply_is_forgotten_once_another_write_is_made(
    caller: Any, store: SessionStore, session_id: str
) -> None:
    # The next write is not the same call: the message the store took stays, once, and the
    # same message appended later is a new one.
    caller.open(session_id, model="gpt-4")
    caller.fail_next("after")
    with pytest.raises(StoreError):
        caller("append", HELLO)
    caller("append", {"role": "user", "content": "other"})
    caller("append", HELLO)
    assert caller.texts() == ["hello", "other", "hello"]


def test_an_append_reported_as_a_conflict_after_it_landed_is_not_written_again(
    caller: Any, replicas: Callable[[], SessionStore], store: SessionStore, session_id: str
) -> None:
    # Redis's driver sends an append again when its reply was lost; another replica's append
    # meanwhile makes the second run report a conflict, and the session wrote its append
    # again on top of both.
    caller.open(session_id, model="gpt-4")
    other = Session.open(session_id, store=replicas(), model="gpt-4")
    assert caller.wrapper is not None
    caller.wrapper.meanwhile = lambda: other.append({"role": "user", "content": "other"})
    caller.fail_next("conflict")
    caller("append", HELLO)
    assert caller.texts() == ["hello", "other"]
    assert _stored(session_id, store) == ["hello", "other"]


@pytest.mark.parametrize("render_fails", [False, True])
def test_a_render_storing_state_before_the_retry_neither_is_it_nor_forgets_the_lost_reply(
    caller: Any, store: SessionStore, session_id: str, render_fails: bool
) -> None:
    # A managed render writes the window's state: a write of no caller's call. It read the
    # append that landed, then forgot it with its own write, and the retry stored it twice.
    caller.open(session_id, model="gpt-4", window=WindowPolicy(window=200_000))
    caller("append", {"role": "user", "content": "first"})
    caller.fail_next("after")
    with pytest.raises(StoreError):
        caller("append", HELLO)
    if render_fails:  # landed too, its reply lost
        caller.fail_next("after")
        with pytest.raises(StoreError):
            caller("render")
    caller("render")
    caller("append", HELLO)  # the caller's retry
    caller("append", {"role": "user", "content": "thanks"})
    assert caller.texts() == ["first", "hello", "thanks"]
    # first, hello, the renders' states (each stored), thanks: nothing twice, nothing lost
    assert store.load(session_id).version == 4 + render_fails


# One session object shared by threads (or asyncio tasks): another caller's write between a
# lost reply and its retry made the object forget the write that landed, and the retry stored
# it twice.

OTHER = {"role": "user", "content": "other"}
_WAIT = 30.0  # a guard against hanging the suite, never reached when the code is right


def _in_threads(*work: Callable[[], None]) -> None:
    """Run each of ``work`` in a thread of its own, raising the first failure among them."""
    failures: list[BaseException] = []

    def run(one: Callable[[], None]) -> None:
        try:
            one()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(one,)) for one in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(_WAIT)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    if failures:
        raise failures[0]


@pytest.mark.parametrize("other_lost", [False, True])
def test_another_threads_append_between_a_lost_reply_and_its_retry_stores_each_once(
    backend: str, tmp_path: Path, store: SessionStore, session_id: str, other_lost: bool
) -> None:
    caller = _Caller("sync", backend, tmp_path, store)
    caller.open(session_id, model="gpt-4")
    lost, written, retried = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        caller.fail_next("after")
        with pytest.raises(StoreError, match="connection lost"):
            caller("append", HELLO)
        lost.set()
        assert written.wait(_WAIT)
        caller("append", HELLO)  # the retry, after the other thread's write
        retried.set()

    def second() -> None:
        assert lost.wait(_WAIT)
        if not other_lost:
            caller("append", OTHER)
            written.set()
            return
        # Its reply lost too, and retried after the first thread's retry.
        caller.fail_next("after")
        with pytest.raises(StoreError, match="connection lost"):
            caller("append", OTHER)
        written.set()
        assert retried.wait(_WAIT)
        caller("append", OTHER)

    _in_threads(first, second)
    assert caller.texts() == ["hello", "other"]
    assert _stored(session_id, store) == ["hello", "other"]


@pytest.mark.parametrize("other_lost", [False, True])
def test_another_tasks_append_between_a_lost_reply_and_its_retry_stores_each_once(
    backend: str, tmp_path: Path, store: SessionStore, session_id: str, other_lost: bool
) -> None:
    caller = _Caller("async", backend, tmp_path, store)
    caller.open(session_id, model="gpt-4")
    session = caller.session

    async def both() -> None:
        lost, written, retried = asyncio.Event(), asyncio.Event(), asyncio.Event()

        async def first() -> None:
            caller.fail_next("after")
            with pytest.raises(StoreError, match="connection lost"):
                await session.append(HELLO)
            lost.set()
            await written.wait()
            await session.append(HELLO)  # the retry, after the other task's write
            retried.set()

        async def second() -> None:
            await lost.wait()
            if other_lost:  # its reply lost too, retried after the first task's retry
                caller.fail_next("after")
                with pytest.raises(StoreError, match="connection lost"):
                    await session.append(OTHER)
                written.set()
                await retried.wait()
            await session.append(OTHER)
            written.set()

        await asyncio.wait_for(asyncio.gather(first(), second()), _WAIT)

    assert caller.loop is not None
    try:
        caller.loop.run_until_complete(both())
        assert caller.texts() == ["hello", "other"]
    finally:
        caller.close()
    assert _stored(session_id, store) == ["hello", "other"]


_WRITERS, _EACH = 4, 10


def _texts_of(writer: int) -> list[str]:
    return [f"{writer}.{n}" for n in range(_EACH)]


def _check_each_once(texts: list[str]) -> None:
    """Every writer's every message once, each writer's in its order."""
    assert sorted(texts) == sorted(t for w in range(_WRITERS) for t in _texts_of(w))
    for writer in range(_WRITERS):
        assert [t for t in texts if t.startswith(f"{writer}.")] == _texts_of(writer)


def test_threads_sharing_a_session_whose_replies_are_lost_store_each_append_once(
    backend: str, tmp_path: Path, store: SessionStore, session_id: str
) -> None:
    caller = _Caller("sync", backend, tmp_path, store)
    caller.open(session_id, model="gpt-4")
    assert caller.wrapper is not None
    caller.wrapper.lossy = True

    def writer(number: int) -> Callable[[], None]:
        def write() -> None:
            for text in _texts_of(number):
                for _ in range(10):  # each failure is every third or seventh append
                    try:
                        caller("append", {"role": "user", "content": text})
                        break
                    except StoreError:
                        continue
                else:
                    raise AssertionError(f"{text} failed ten times")

        return write

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch often: every interleaving comes up
    try:
        _in_threads(*(writer(number) for number in range(_WRITERS)))
    finally:
        sys.setswitchinterval(interval)
    _check_each_once(caller.texts())
    _check_each_once(_stored(session_id, store))


def test_tasks_sharing_a_session_whose_replies_are_lost_store_each_append_once(
    backend: str, tmp_path: Path, store: SessionStore, session_id: str
) -> None:
    caller = _Caller("async", backend, tmp_path, store)
    caller.open(session_id, model="gpt-4")
    assert caller.wrapper is not None and caller.loop is not None
    caller.wrapper.lossy = True
    session = caller.session

    async def writer(number: int) -> None:
        for text in _texts_of(number):
            for _ in range(10):  # each failure is every third or seventh append
                try:
                    await session.append({"role": "user", "content": text})
                    break
                except StoreError:
                    await asyncio.sleep(0)  # another task's turn
            else:
                raise AssertionError(f"{text} failed ten times")

    async def writers() -> None:
        await asyncio.wait_for(asyncio.gather(*(writer(n) for n in range(_WRITERS))), _WAIT)

    try:
        caller.loop.run_until_complete(writers())
        _check_each_once(caller.texts())
    finally:
        caller.close()
    _check_each_once(_stored(session_id, store))


def test_a_lost_reply_retried_from_another_thread_is_stored_once(
    backend: str, tmp_path: Path, store: SessionStore, session_id: str
) -> None:
    # A pool's other worker may make the retry while the first one lives on.
    caller = _Caller("sync", backend, tmp_path, store)
    caller.open(session_id, model="gpt-4")
    lost, retried = threading.Event(), threading.Event()

    def first() -> None:
        caller.fail_next("after")
        with pytest.raises(StoreError, match="connection lost"):
            caller("append", HELLO)
        lost.set()
        assert retried.wait(_WAIT)
        caller("append", OTHER)

    def retry() -> None:
        assert lost.wait(_WAIT)
        caller("append", HELLO)
        retried.set()

    _in_threads(first, retry)
    assert caller.texts() == ["hello", "other"]
    assert _stored(session_id, store) == ["hello", "other"]
