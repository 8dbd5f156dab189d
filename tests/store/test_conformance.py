"""Every backend keeps the session store protocol's promises (ctxpack.store.conformance), and
the conformance check catches a store that breaks one."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from ctxpack.store import (
    MemoryStore,
    SessionStore,
    ThreadedAsyncStore,
    open_async_store,
    open_store,
)
from ctxpack.store.conformance import check_async_session_store, check_session_store

from .backends import backend_url


def test_every_backend_passes_the_conformance_check(store: SessionStore) -> None:
    check_session_store(store)


def test_every_async_backend_passes_the_conformance_check(backend: str, tmp_path: Path) -> None:
    url = backend_url(backend, tmp_path)
    check_async_session_store(open_async_store(url))


class IgnoresVersions(MemoryStore):
    """A broken store: it appends whatever the version."""

    def append(
        self,
        session_id: str,
        entry: str,
        *,
        version: int,
        state: str,
        artifacts: Mapping[str, str] | None = None,
        life: str | None = None,
    ) -> None:
        current = self.load(session_id).version
        super().append(
            session_id, entry, version=current, state=state, artifacts=artifacts, life=life
        )


class ForgetsLives(MemoryStore):
    """A broken store: it takes a life and never checks it."""

    def append(
        self,
        session_id: str,
        entry: str,
        *,
        version: int,
        state: str,
        artifacts: Mapping[str, str] | None = None,
        life: str | None = None,
    ) -> None:
        super().append(session_id, entry, version=version, state=state, artifacts=artifacts)


class SharesOriginals(MemoryStore):
    """A broken store: every session reads every session's originals."""

    def get_artifact(self, session_id: str, artifact: str) -> str:
        for stored in self._sessions.values():
            if artifact in stored.artifacts:
                return stored.artifacts[artifact]
        return super().get_artifact(session_id, artifact)


class RefusesUnknownIds(MemoryStore):
    """A broken store: erasing a session it does not hold raises (a retried erasure, or one
    for a user who never wrote, would fail: SessionMiddleware.delete_thread of a thread never
    served)."""

    def delete_session(self, session_id: str) -> None:
        with self._lock:
            if session_id not in self._sessions:
                raise KeyError(session_id)
        super().delete_session(session_id)


@pytest.mark.parametrize(
    ("broken", "promise"),
    [
        (IgnoresVersions, "an append at a version the session has left is refused"),
        (SharesOriginals, "a session cannot read another session's originals"),
        (ForgetsLives, "an append in another life than the one recorded at version 0"),
        (RefusesUnknownIds, "erasing a session the store does not hold does nothing"),
    ],
)
def test_the_check_names_the_broken_promise(broken: type[MemoryStore], promise: str) -> None:
    with pytest.raises(AssertionError, match=promise):
        check_session_store(broken())


def test_an_object_without_the_protocol_is_refused() -> None:
    with pytest.raises(AssertionError, match="lacks a SessionStore method"):
        check_session_store(object())  # type: ignore[arg-type]


class PurgesEverything(MemoryStore):
    """A broken store: its purge erases every session, expired or not."""

    def purge_expired(self) -> int:
        with self._lock:
            count = len(self._sessions)
            self._sessions.clear()
        return count


class PurgeSaysNothing(MemoryStore):
    """A broken store: its purge erases what expired and returns None."""

    def purge_expired(self) -> None:  # type: ignore[override]
        super().purge_expired()


@pytest.mark.parametrize(
    ("broken", "promise"),
    [
        (PurgesEverything, "purge_expired\\(\\) erases no session whose ttl has not run out"),
        (PurgeSaysNothing, "purge_expired\\(\\) returns how many sessions it erased"),
    ],
)
def test_the_check_names_a_broken_purge(broken: type[MemoryStore], promise: str) -> None:
    with pytest.raises(AssertionError, match=promise):
        check_session_store(broken(ttl=3600))


class PurgesOutsideTheLoop(ThreadedAsyncStore):
    """A broken async store: its purge_expired blocks the event loop (a plain function)."""

    def __init__(self) -> None:
        super().__init__(MemoryStore(ttl=3600))

    @property
    def purge_expired(self) -> Callable[[], int]:  # type: ignore[override]
        return self.store.purge_expired  # type: ignore[attr-defined, no-any-return]


def test_an_async_store_whose_purge_is_not_a_coroutine_is_caught() -> None:
    with pytest.raises(AssertionError, match="purge_expired is a coroutine function"):
        check_async_session_store(PurgesOutsideTheLoop())


def test_every_backend_with_a_ttl_passes_the_conformance_check(
    backend: str, tmp_path: Path
) -> None:
    # With a ttl, the stores that keep expired sessions until purged are checked for it too;
    # the async ones purge with an await, as their other calls.
    store = open_store(backend_url(backend, tmp_path), ttl=3600)
    try:
        check_session_store(store)
    finally:
        store.close()
    check_async_session_store(open_async_store(backend_url(backend, tmp_path), ttl=3600))
