"""A store's close(): every call made after it, or racing it, finishes or fails with one
StoreError saying the store is closed, on every backend, sync and async."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from ctxpack.errors import StoreError
from ctxpack.store import SessionStore, open_async_store, open_store
from tests.threads import switching_often

from .backends import backend_url, connections_named, named_url, server_url

CALLS: dict[str, Callable[[Any, str], Any]] = {
    "load": lambda store, sid: store.load(sid),
    "append": lambda store, sid: store.append(sid, "e", version=1, state="{}"),
    "put_artifact": lambda store, sid: store.put_artifact(sid, "a", "text"),
    "get_artifact": lambda store, sid: store.get_artifact(sid, "a"),
    "delete_session": lambda store, sid: store.delete_session(sid),
}


def assert_closed(error: StoreError, store: Any, call: str = "") -> None:
    assert error.detail == "the store is closed", call
    assert error.url == store.url
    assert store.url in str(error)


def test_every_call_after_close_fails_saying_the_store_is_closed(
    backend: str, tmp_path: Path, session_id: str
) -> None:
    store = open_store(backend_url(backend, tmp_path))
    store.append(session_id, "e", version=0, state="{}")
    store.close()
    for name, call in CALLS.items():
        with pytest.raises(StoreError) as caught:
            call(store, session_id)
        assert_closed(caught.value, store, name)
    store.close()  # closing again is no error


def test_every_async_call_after_close_fails_saying_the_store_is_closed(
    backend: str, tmp_path: Path, session_id: str
) -> None:
    async def main() -> None:
        store = open_async_store(backend_url(backend, tmp_path))
        await store.append(session_id, "e", version=0, state="{}")
        await store.close()
        for name, call in CALLS.items():
            with pytest.raises(StoreError) as caught:
                await call(store, session_id)
            assert_closed(caught.value, store, name)
        await store.close()

    asyncio.run(main())


class _Held(Mapping[str, str]):
    """Artifacts whose reading, from the ``pause``-th on, waits for ``go``: an append held
    inside the store, past its check of being open, while another thread closes it."""

    def __init__(self, pause: int) -> None:
        self.inside = threading.Event()
        self.go = threading.Event()
        self._reads = 0
        self._pause = pause

    def __getitem__(self, key: str) -> str:
        return {"a": "text"}[key]

    def __iter__(self) -> Iterator[str]:
        return iter(["a"])

    def __len__(self) -> int:
        return 1

    def items(self) -> Any:
        self._reads += 1
        if self._reads >= self._pause:
            self.inside.set()
            assert self.go.wait(30)
        return super().items()


@pytest.mark.parametrize("pause", [1, 2])
def test_an_append_racing_close_is_stored_whole_or_fails_saying_so(
    backend: str, tmp_path: Path, session_id: str, pause: int
) -> None:
    url = backend_url(backend, tmp_path)
    store = open_store(url)
    held = _Held(pause)
    outcome: list[BaseException | None] = []

    def append() -> None:
        try:
            store.append(session_id, "e", version=0, state="{}", artifacts=held)
            outcome.append(None)
        except BaseException as exc:  # recorded for the assertion
            outcome.append(exc)

    writer = threading.Thread(target=append)
    writer.start()
    assert held.inside.wait(30)
    closer = threading.Thread(target=store.close)
    closer.start()
    held.go.set()
    writer.join(30)
    closer.join(30)
    assert not writer.is_alive() and not closer.is_alive()
    [error] = outcome
    if error is not None:
        assert isinstance(error, StoreError), error
        assert_closed(error, store)
    with pytest.raises(StoreError) as caught:
        store.load(session_id)
    assert_closed(caught.value, store)
    if backend == "memory":
        return
    reader = open_store(url)
    try:
        stored = reader.load(session_id)
        assert stored.version == (1 if error is None else 0)
        if error is None:
            assert reader.get_artifact(session_id, "a") == "text"
        reader.delete_session(session_id)
    finally:
        reader.close()


@pytest.fixture
def fast_switching() -> Iterator[None]:
    with switching_often():
        yield


def test_many_threads_racing_close_finish_or_fail_saying_so(
    backend: str, tmp_path: Path, session_id: str, fast_switching: None
) -> None:
    url = backend_url(backend, tmp_path)
    if backend == "redis":  # and it leaves no connection open
        url, connections = _redis_named(f"close-{session_id}")
    store: SessionStore = open_store(url)
    threads, rounds = 8, 40
    start = threading.Barrier(threads + 1)
    closed = threading.Event()
    wrong: list[str] = []

    def work(n: int) -> None:
        sid = f"{session_id}-{n}"
        start.wait()
        for i in range(rounds):
            after_close = closed.is_set()
            try:
                store.load(sid)
                store.append(sid, "e", version=i, state="{}")
                if after_close:
                    wrong.append(f"thread {n}: a call after close() succeeded")
            except StoreError as exc:
                if exc.detail != "the store is closed":
                    wrong.append(f"thread {n}: {exc!r}")
            except Exception as exc:  # every other error is a defect
                wrong.append(f"thread {n}: {exc!r}")

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    start.wait()
    store.close()
    closed.set()
    for worker in workers:
        worker.join(60)
    assert not any(worker.is_alive() for worker in workers)
    assert wrong == []
    if backend == "redis":
        assert connections() == 0
    if backend != "memory":
        cleaner = open_store(backend_url(backend, tmp_path))
        for n in range(threads):
            cleaner.delete_session(f"{session_id}-{n}")
        cleaner.close()


def _redis_named(name: str) -> tuple[str, Callable[[], int]]:
    """A Redis store URL whose connections carry ``name``, and a count of those the server
    holds open (see :func:`connections_named`)."""
    base = server_url("redis")
    return named_url("redis", base, name), lambda: connections_named("redis", base, name)


def test_redis_holds_no_connection_after_close_and_a_call_racing_it(session_id: str) -> None:
    """redis-py connects again on a closed pool: the append held past its check of being open
    sends its script after close(), on a new connection, which it must not leave open."""
    url, connections = _redis_named(f"close-{session_id}")
    store = open_store(url)
    held = _Held(1)
    writer = threading.Thread(
        target=lambda: store.append(session_id, "e", version=0, state="{}", artifacts=held)
    )
    writer.start()
    assert held.inside.wait(30)
    store.close()
    held.go.set()
    writer.join(30)
    assert not writer.is_alive()
    assert connections() == 0
    cleaner = open_store(server_url("redis"))
    cleaner.delete_session(session_id)
    cleaner.close()


@pytest.mark.parametrize("first_call", [True, False])
def test_async_redis_holds_no_connection_after_close_and_a_call_racing_it(
    session_id: str, first_call: bool
) -> None:
    """As above, for a call started before close() and sent after it: on the loop's client,
    made before, or being made (``first_call``) as close() runs."""
    url, connections = _redis_named(f"close-{session_id}")

    async def main() -> None:
        store = open_async_store(url)
        if not first_call:
            await store.load(session_id)
        loading = asyncio.ensure_future(store.load(session_id))
        await asyncio.sleep(0)  # the load is past its check of being open
        await store.close()
        with contextlib.suppress(StoreError):
            await loading
        assert connections() == 0

    asyncio.run(main())


# What each call's error says was attempted: the operation called, on every backend.
OPERATIONS = {
    "load": "load session {sid!r}",
    "append": "append to session {sid!r}",
    "put_artifact": "store an artifact of session {sid!r}",
    "get_artifact": "read an artifact of session {sid!r}",
    "delete_session": "delete session {sid!r}",
}


def test_a_call_after_close_names_the_operation_called(
    backend: str, tmp_path: Path, session_id: str
) -> None:
    # Redis said "use session" for every call, so that a failed erasure read as a failed read.
    store: Any = open_store(backend_url(backend, tmp_path))
    store.close()
    for name, call in CALLS.items():
        with pytest.raises(StoreError) as caught:
            call(store, session_id)
        assert caught.value.operation == OPERATIONS[name].format(sid=session_id), name
    if hasattr(store, "purge_expired"):
        with pytest.raises(StoreError) as caught:
            store.purge_expired()
        assert caught.value.operation == "purge expired sessions"


def test_an_async_call_after_close_names_the_operation_called(
    backend: str, tmp_path: Path, session_id: str
) -> None:
    async def main() -> None:
        store: Any = open_async_store(backend_url(backend, tmp_path))
        await store.load(session_id)
        await store.close()
        for name, call in CALLS.items():
            with pytest.raises(StoreError) as caught:
                await call(store, session_id)
            assert caught.value.operation == OPERATIONS[name].format(sid=session_id), name
        if hasattr(store, "purge_expired"):
            with pytest.raises(StoreError) as caught:
                await store.purge_expired()
            assert caught.value.operation == "purge expired sessions"

    asyncio.run(main())
