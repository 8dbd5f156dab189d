"""The checks every session store passes: run them on your own backend.

:func:`check_session_store` (and :func:`check_async_session_store` for an
:class:`~ctxpack.store.AsyncSessionStore`) exercise the protocol's promises on a live store:
versions and conflicts, reading from a version, atomic appends, originals isolated per
session, erasure (of a session the store does not hold too: nothing, no error), text kept
exactly, for a store whose ``append`` takes ``life=``, that
an append in another life of the session is refused, and, for a store with a
``purge_expired()`` (a store that keeps expired sessions until they are purged), that it is a
coroutine exactly when the store is async, returns how many sessions it erased, and erases no
session whose ``ttl`` has not run out. They write only under fresh random
session ids and erase them at the end. A failed promise raises ``AssertionError`` saying which.

Example:
    >>> from ctxpack.store import MemoryStore
    >>> check_session_store(MemoryStore())
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import ArtifactNotFoundError, StoreConflictError
from ._base import AsyncSessionStore, SessionStore, StoredSession, takes_life

__all__ = ["check_async_session_store", "check_session_store"]

# Text a store must give back exactly: non-ASCII, NUL, line ends, a quote, a long line.
ODD_TEXT = "caf\u00e9 \u2014 \U0001f600\x00\r\n\t'\"\\ {}" + "x" * 70_000


def _equal(actual: Any, expected: Any, promise: str) -> None:
    if actual != expected:
        raise AssertionError(f"{promise}: expected {expected!r:.200}, got {actual!r:.200}")


def _raises(error: type[BaseException], promise: str, call: Callable[[], object]) -> None:
    try:
        call()
    except error:
        return
    except Exception as exc:
        raise AssertionError(f"{promise}: expected {error.__name__}, got {exc!r}") from exc
    raise AssertionError(f"{promise}: expected {error.__name__}, nothing was raised")


def _succeeds(promise: str, call: Callable[[], object]) -> None:
    try:
        call()
    except Exception as exc:
        raise AssertionError(f"{promise}: got {exc!r}") from exc


def check_session_store(store: SessionStore) -> None:
    """Check that ``store`` keeps the :class:`~ctxpack.store.SessionStore` promises.

    Raises:
        AssertionError: a promise is broken; the message names it.
    """
    if not isinstance(store, SessionStore):
        raise AssertionError(f"{type(store).__name__} lacks a SessionStore method or url")
    run = _Checks(lambda call: call(), asynchronous=False)
    run.all(store)


def check_async_session_store(store: AsyncSessionStore) -> None:
    """:func:`check_session_store` for an async store (runs its own event loop)."""
    if not isinstance(store, AsyncSessionStore):
        raise AssertionError(f"{type(store).__name__} lacks an AsyncSessionStore method or url")

    async def main() -> None:
        opener = getattr(store, "open", None)
        if opener is not None:
            await opener()
        loop = asyncio.get_running_loop()
        # The checks are written once, synchronously: each call runs on this loop from a
        # worker thread.
        await asyncio.to_thread(
            _Checks(
                lambda call: asyncio.run_coroutine_threadsafe(_awaited(call), loop).result(),
                asynchronous=True,
            ).all,
            store,
        )

    asyncio.run(main())


async def _awaited(call: Callable[[], Awaitable[Any]]) -> Any:
    return await call()


class _Checks:
    """The checks, on any store; ``run`` performs one store call (awaiting it if async)."""

    def __init__(self, run: Callable[[Callable[[], Any]], Any], *, asynchronous: bool) -> None:
        self.run = run
        self.asynchronous = asynchronous

    def all(self, store: Any) -> None:
        a, b, c = (f"conformance-{secrets.token_hex(6)}-{name}" for name in ("a", "b", "c"))
        try:
            self.versions(store, a)
            self.artifacts(store, a, b)
            self.erasure(store, a, b)
            if takes_life(store):
                self.lives(store, c)
            if hasattr(store, "purge_expired"):
                self.purging(store, a, b)
        except BaseException:
            # The broken promise is the error to raise, not the clean-up's.
            with contextlib.suppress(Exception):
                self.clean(store, a, b, c)
            raise
        self.clean(store, a, b, c)

    def clean(self, store: Any, *session_ids: str) -> None:
        for session_id in session_ids:
            self.run(functools.partial(store.delete_session, session_id))

    def versions(self, store: Any, a: str) -> None:
        run = self.run
        _equal(run(lambda: store.load(a)), StoredSession(0), "a new session is empty")
        run(lambda: store.append(a, "entry 0", version=0, state="state 0"))
        _equal(
            run(lambda: store.load(a)),
            StoredSession(1, ("entry 0",), "state 0"),
            "an append is read back",
        )
        _raises(
            StoreConflictError,
            "an append at a version the session has left is refused",
            lambda: run(lambda: store.append(a, "late", version=0, state="late")),
        )
        _raises(
            StoreConflictError,
            "an append at a version the session has not reached is refused",
            lambda: run(lambda: store.append(a, "early", version=5, state="early")),
        )
        _equal(
            run(lambda: store.load(a)),
            StoredSession(1, ("entry 0",), "state 0"),
            "a refused append writes nothing",
        )
        run(lambda: store.append(a, ODD_TEXT, version=1, state=ODD_TEXT))
        run(lambda: store.append(a, "entry 2", version=2, state="state 2"))
        _equal(
            run(lambda: store.load(a, since=1)),
            StoredSession(3, (ODD_TEXT, "entry 2"), "state 2"),
            "load(since=v) gives the entries after the first v, text exactly as written",
        )
        _equal(
            run(lambda: store.load(a, since=3)),
            StoredSession(3, (), "state 2"),
            "load(since=version) gives no entries",
        )

    def artifacts(self, store: Any, a: str, b: str) -> None:
        run = self.run
        run(lambda: store.append(b, "b0", version=0, state="s", artifacts={"art_1": ODD_TEXT}))
        _equal(run(lambda: store.get_artifact(b, "art_1")), ODD_TEXT, "an original is kept")
        _raises(
            ArtifactNotFoundError,
            "a session cannot read another session's originals",
            lambda: run(lambda: store.get_artifact(a, "art_1")),
        )
        run(lambda: store.put_artifact(b, "art_1", "another text"))
        _equal(
            run(lambda: store.get_artifact(b, "art_1")),
            ODD_TEXT,
            "an id already stored keeps its first text",
        )
        run(lambda: store.put_artifact(a, "art_2", "put alone"))
        _equal(run(lambda: store.get_artifact(a, "art_2")), "put alone", "put_artifact keeps")
        _raises(
            StoreConflictError,
            "a refused append stores none of its originals",
            lambda: run(
                lambda: store.append(b, "x", version=0, state="x", artifacts={"art_3": "no"})
            ),
        )
        _raises(
            ArtifactNotFoundError,
            "a refused append stores none of its originals",
            lambda: run(lambda: store.get_artifact(b, "art_3")),
        )

    def erasure(self, store: Any, a: str, b: str) -> None:
        run = self.run
        run(lambda: store.delete_session(a))
        _equal(run(lambda: store.load(a)), StoredSession(0), "a deleted session is empty")
        for erased in (a, f"{a}-never-written"):
            _succeeds(
                "erasing a session the store does not hold does nothing (an erasure retried, "
                "or of a user who never wrote)",
                functools.partial(run, functools.partial(store.delete_session, erased)),
            )
        _raises(
            ArtifactNotFoundError,
            "a deleted session's originals are erased",
            lambda: run(lambda: store.get_artifact(a, "art_2")),
        )
        run(lambda: store.put_artifact(a, "art_4", "written after the erasure"))
        _raises(
            ArtifactNotFoundError,
            "put_artifact stores nothing for a session the store does not hold (erased)",
            lambda: run(lambda: store.get_artifact(a, "art_4")),
        )
        _equal(run(lambda: store.load(b)).version, 1, "deleting a session leaves the others")
        run(lambda: store.append(a, "again", version=0, state="s"))
        _equal(
            run(lambda: store.load(a)),
            StoredSession(1, ("again",), "s"),
            "a deleted session starts again from version 0",
        )

    def lives(self, store: Any, c: str) -> None:
        run = self.run
        run(lambda: store.append(c, "c0", version=0, state="s", life="life-1"))
        _raises(
            StoreConflictError,
            "an append in another life than the one recorded at version 0 is refused",
            lambda: run(lambda: store.append(c, "x", version=1, state="x", life="life-2")),
        )
        run(lambda: store.append(c, "c1", version=1, state="s"))
        _raises(
            StoreConflictError,
            "an append without a life keeps the recorded one",
            lambda: run(lambda: store.append(c, "x", version=2, state="x", life="life-2")),
        )
        run(lambda: store.append(c, "c2", version=2, state="s", life="life-1"))
        run(lambda: store.delete_session(c))
        run(lambda: store.append(c, "again", version=0, state="s", life="life-2"))
        _raises(
            StoreConflictError,
            "an erased session started again records its new life",
            lambda: run(lambda: store.append(c, "x", version=1, state="x", life="life-1")),
        )
        _equal(
            run(lambda: store.load(c)),
            StoredSession(1, ("again",), "s"),
            "an append refused for its life writes nothing",
        )
        if takes_life(store, "put_artifact"):
            run(lambda: store.put_artifact(c, "art_5", "earlier life", life="life-1"))
            _raises(
                ArtifactNotFoundError,
                "put_artifact stores nothing for a session in another life",
                lambda: run(lambda: store.get_artifact(c, "art_5")),
            )

    def purging(self, store: Any, a: str, b: str) -> None:
        run = self.run
        kind = "a coroutine function" if self.asynchronous else "a plain function"
        _equal(
            inspect.iscoroutinefunction(store.purge_expired),
            self.asynchronous,
            f"purge_expired is {kind}, as the store's other methods",
        )
        before = run(lambda: store.load(a)), run(lambda: store.load(b))
        purged = run(store.purge_expired)
        if isinstance(purged, bool) or not isinstance(purged, int) or purged < 0:
            raise AssertionError(
                f"purge_expired() returns how many sessions it erased (an int >= 0), "
                f"got {purged!r:.200}"
            )
        _equal(
            (run(lambda: store.load(a)), run(lambda: store.load(b))),
            before,
            "purge_expired() erases no session whose ttl has not run out",
        )
        _equal(
            run(lambda: store.get_artifact(b, "art_1")),
            ODD_TEXT,
            "purge_expired() erases no original of a session whose ttl has not run out",
        )
