"""The in-process session store (``memory://``): for tests and single-process tools."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from .._internal import forks
from ..errors import ArtifactNotFoundError, StoreConflictError, StoreError
from ._base import (
    StoredSession,
    check_append,
    check_artifact,
    check_life,
    check_session_id,
    check_ttl,
    check_version,
    closed_store,
    other_life,
)

__all__ = ["MemoryStore"]


@dataclass
class _Stored:
    entries: list[str] = field(default_factory=list)
    state: str | None = None
    artifacts: dict[str, str] = field(default_factory=dict)
    expires_at: float | None = None
    life: str | None = None


class MemoryStore(forks.ProcessBound):
    """Sessions in this process's memory: gone when it exits; safe under threads.

    Args:
        ttl: Seconds a session is kept after its last append; ``None`` keeps it. An expired
            session reads as empty at once, and is freed at the next append to the store
            (read again or not) or by :meth:`purge_expired`.

    Example:
        >>> store = MemoryStore()
        >>> store.append("u1", '{"n": 1}', version=0, state="{}")
        >>> store.load("u1").version
        1
    """

    url = "memory://"

    def __init__(self, *, ttl: float | None = None) -> None:
        self.ttl = check_ttl(ttl)
        self._sessions: dict[str, _Stored] = {}
        # A fork waits for another thread's call (see after_fork).
        self._guard = forks.Quiesced(forks.CALL_WAIT)
        self._lock: AbstractContextManager[Any] = self._guard.lock
        self._closed = False
        forks.track(self)

    def after_fork(self) -> None:
        """In a forked child: the store is the child's copy, usable unless another of the
        parent's threads was changing it at the fork (its lock would never be released)."""
        if not self._guard.after_fork_in_child():
            self._lock = forks.Unusable(
                lambda: StoreError(forks.BUSY_STORE, url=self.url, operation="use")
            )

    @contextmanager
    def _open(self, doing: str, session_id: str) -> Iterator[None]:
        """The lock, held by a call ``doing`` something to a session on the open store:
        closed, it fails as a server's does."""
        check_session_id(session_id)
        with self._lock:
            if self._closed:
                raise closed_store(self.url, f"{doing} {session_id!r}")
            yield

    def _get(self, session_id: str) -> _Stored | None:
        stored = self._sessions.get(check_session_id(session_id))
        if stored is not None and stored.expires_at is not None and stored.expires_at < time.time():
            del self._sessions[session_id]
            return None
        return stored

    def load(self, session_id: str, *, since: int = 0) -> StoredSession:
        check_version(since)
        with self._open("load session", session_id):
            stored = self._get(session_id)
            if stored is None:
                return StoredSession(0)
            return StoredSession(len(stored.entries), tuple(stored.entries[since:]), stored.state)

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
        check_append(version, entry, state, artifacts)
        check_life(life)
        with self._open("append to session", session_id):
            stored = self._get(session_id) or _Stored()
            actual = len(stored.entries)
            if actual != version or other_life(stored.life, life):
                raise StoreConflictError(
                    url=self.url, session_id=session_id, expected=version, actual=actual
                )
            if stored.life is None:
                stored.life = life
            stored.entries.append(entry)
            stored.state = state
            for ref, text in (artifacts or {}).items():
                stored.artifacts.setdefault(ref, text)
            if self.ttl is not None:
                stored.expires_at = time.time() + self.ttl
                # Kept in the order of their last append, which is the order they expire in
                # (one ttl for all): the expired ones are at the front, erased as the store is
                # written, whether or not anyone reads them again.
                self._sessions.pop(session_id, None)
                self._sweep()
            self._sessions[session_id] = stored

    def _sweep(self) -> None:
        now = time.time()
        while self._sessions:
            session_id, stored = next(iter(self._sessions.items()))
            if stored.expires_at is None or stored.expires_at >= now:
                return
            del self._sessions[session_id]

    def put_artifact(
        self, session_id: str, artifact: str, text: str, *, life: str | None = None
    ) -> None:
        check_artifact(artifact, text)
        check_life(life)
        with self._open("store an artifact of session", session_id):
            stored = self._get(session_id)
            # Erased, never written, or started again: nothing of this life to attach it to.
            if stored is not None and not other_life(stored.life, life):
                stored.artifacts.setdefault(artifact, text)

    def get_artifact(self, session_id: str, artifact: str) -> str:
        check_artifact(artifact)
        with self._open("read an artifact of session", session_id):
            stored = self._get(session_id)
            if stored is None or artifact not in stored.artifacts:
                raise ArtifactNotFoundError(artifact, store=f"{self.url} session {session_id!r}")
            return stored.artifacts[artifact]

    def delete_session(self, session_id: str) -> None:
        with self._open("delete session", session_id):
            self._sessions.pop(check_session_id(session_id), None)

    def purge_expired(self) -> int:
        """Erase every session whose ``ttl`` has run out (as :meth:`delete_session` does);
        return how many."""
        with self._lock:
            if self._closed:
                raise closed_store(self.url, "purge expired sessions")
            now = time.time()
            expired = [
                session_id
                for session_id, stored in self._sessions.items()
                if stored.expires_at is not None and stored.expires_at < now
            ]
            for session_id in expired:
                del self._sessions[session_id]
            return len(expired)

    def close(self) -> None:
        """Close the store as a server's is closed: a later call fails with a
        :class:`StoreError` saying so. The sessions stay until the store is garbage-collected."""
        with self._lock:
            self._closed = True

    def __repr__(self) -> str:
        return f"MemoryStore(ttl={self.ttl!r})"
