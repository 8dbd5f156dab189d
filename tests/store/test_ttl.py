"""Retention: with a ttl, a session and its originals are gone once it has not been appended
to for that long, on every backend; Redis keys are namespaced and carry the expiry."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ctxpack.errors import ArtifactNotFoundError
from ctxpack.store import MemoryStore, SessionStore, StoredSession, open_async_store, open_store

from .backends import backend_url, server_url


def store_with_ttl(backend: str, tmp_path: Path, ttl: float) -> SessionStore:
    if backend == "memory":
        return MemoryStore(ttl=ttl)
    return open_store(backend_url(backend, tmp_path), ttl=ttl)


def test_a_session_expires_after_its_ttl(backend: str, tmp_path: Path, session_id: str) -> None:
    store = store_with_ttl(backend, tmp_path, ttl=1)
    kept = store_with_ttl(backend, tmp_path, ttl=3600)
    try:
        appended = time.monotonic()
        store.append(session_id, "e0", version=0, state="s", artifacts={"art_1": "original"})
        kept.append(session_id + "-kept", "e0", version=0, state="s")
        loaded = store.load(session_id).version
        # Read within its ttl, it is there (a machine that stalled this thread a whole ttl,
        # as a busy CI runner may, leaves nothing to check here; Redis expires by its clock).
        if time.monotonic() - appended < 0.9:
            assert loaded == 1
        time.sleep(1.3)
        assert store.load(session_id).version == 0
        with pytest.raises(ArtifactNotFoundError):
            store.get_artifact(session_id, "art_1")
        assert kept.load(session_id + "-kept").version == 1
        # The id can start again from nothing.
        store.append(session_id, "new life", version=0, state="s")
        assert store.load(session_id).entries == ("new life",)
    finally:
        kept.delete_session(session_id + "-kept")
        store.delete_session(session_id)
        store.close()
        kept.close()


def test_an_original_put_after_the_last_append_expires_with_the_session(
    backend: str, tmp_path: Path, session_id: str
) -> None:
    # Redis gave the originals' key a full ttl again at each put_artifact (a render storing
    # an original), so it outlived the session's other keys: the originals stayed readable
    # after the session expired, and a session started again under the id kept them (and
    # renewed them at each append) rather than starting from nothing.
    store = store_with_ttl(backend, tmp_path, ttl=1.0)
    try:
        store.append(session_id, "e0", version=0, state="s", artifacts={"art_1": "at append"})
        time.sleep(0.6)
        store.put_artifact(session_id, "art_2", "at render")
        time.sleep(0.6)  # the session expired; a full ttl from the put has not run out
        assert store.load(session_id).version == 0
        for artifact in ("art_1", "art_2"):
            with pytest.raises(ArtifactNotFoundError):
                store.get_artifact(session_id, artifact)
        store.append(session_id, "new life", version=0, state="s")
        for artifact in ("art_1", "art_2"):
            with pytest.raises(ArtifactNotFoundError):
                store.get_artifact(session_id, artifact)
    finally:
        store.delete_session(session_id)
        store.close()


def test_redis_keys_are_namespaced_and_expire() -> None:
    import redis

    url = server_url("redis")
    prefix = f"test{uuid.uuid4().hex[:8]}"
    store = open_store(url, ttl=60, prefix=prefix)
    store.append("u{1}", "e0", version=0, state="s", artifacts={"art_1": "original"})
    client = redis.Redis.from_url(url)
    try:
        keys = sorted(k.decode() for k in client.scan_iter(f"{prefix}:*"))
        assert keys == [
            f"{prefix}:{{u{{{{1}}}}}}:artifacts",
            f"{prefix}:{{u{{{{1}}}}}}:entries",
            f"{prefix}:{{u{{{{1}}}}}}:meta",
        ]
        assert all(0 < client.pttl(k) <= 60_000 for k in keys)
    finally:
        store.delete_session("u{1}")
        assert list(client.scan_iter(f"{prefix}:*")) == []
        client.close()
        store.close()


def test_sql_stores_purge_expired_sessions(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 's.db'}", ttl=0.2)
    store.append("old", "e0", version=0, state="s")
    time.sleep(0.4)
    assert store.purge_expired() == 1  # type: ignore[attr-defined]
    assert store.purge_expired() == 0  # type: ignore[attr-defined]


def test_a_memory_store_lets_go_of_expired_sessions_nobody_reads_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A chatbot's users mostly never come back: their sessions must not stay in memory for the
    # life of the process because no one loads them again. The store reads the test's clock:
    # on the wall clock, a thread descheduled for the ttl between the last two appends (on a
    # busy machine) saw "back" expire again.
    now = [1_000.0]
    monkeypatch.setattr("ctxpack.store._memory.time", SimpleNamespace(time=lambda: now[0]))
    store = MemoryStore(ttl=60)
    for user in range(200):
        store.append(f"gone-{user}", "e0", version=0, state="s")
    store.append("back", "e0", version=0, state="s")
    now[0] += 61
    store.append("back", "e1", version=0, state="s")  # written again after its ttl: a new life
    store.append("new", "e0", version=0, state="s")
    assert sorted(store._sessions) == ["back", "new"]
    assert store.load("back").entries == ("e1",)
    assert store.load("gone-0").version == 0


def test_a_postgres_purge_spares_a_session_appended_to_while_it_purged() -> None:
    # purge_expired listed the expired sessions, then erased each without reading it again:
    # a session started again (appended to after its ttl ran out) while the purge waited for
    # its row was erased with the message just appended, which the append had reported stored.
    psycopg = pytest.importorskip("psycopg")
    url = server_url("postgres")
    name = f"purge-{uuid.uuid4().hex[:12]}"
    joiner = "&" if "?" in url else "?"
    named = {role: f"{url}{joiner}application_name={name}-{role}" for role in ("append", "purge")}
    session_id = f"test-{uuid.uuid4().hex}"
    expiring = open_store(url, ttl=0.2)
    writer = open_store(named["append"], ttl=3600)
    purger = open_store(named["purge"], ttl=3600)
    holder = psycopg.connect(url)

    def wait_until_waiting(role: str) -> None:
        with psycopg.connect(url, autocommit=True) as admin:
            for _ in range(500):
                row = admin.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE application_name = %s AND wait_event_type = 'Lock'",
                    (f"{name}-{role}",),
                ).fetchone()
                if row is not None and row[0] > 0:
                    return
                time.sleep(0.02)
        pytest.fail(f"the {role} never waited for the session's row")

    try:
        expiring.append(session_id, "old", version=0, state="s")
        time.sleep(0.4)
        # The session's row held, so that the append starting it again and then the purge
        # both wait for it, in this order.
        holder.execute(
            "SELECT 1 FROM ctxpack_sessions WHERE session_id = %s FOR UPDATE", (session_id,)
        )
        appended = ThreadResult(lambda: writer.append(session_id, "new", version=0, state="s2"))
        wait_until_waiting("append")
        purged = ThreadResult(purger.purge_expired)  # type: ignore[attr-defined]
        wait_until_waiting("purge")
        holder.rollback()
        appended.get()
        purged.get()
        assert writer.load(session_id) == StoredSession(1, ("new",), "s2")
    finally:
        holder.close()
        writer.delete_session(session_id)
        for store in (expiring, writer, purger):
            store.close()


class ThreadResult:
    """``call()`` run in a thread; :meth:`get` gives its result or raises its error."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self._outcome: list[tuple[bool, Any]] = []
        self._thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self._thread.start()

    def _run(self, call: Callable[[], Any]) -> None:
        try:
            self._outcome.append((True, call()))
        except Exception as exc:  # handed to the test
            self._outcome.append((False, exc))

    def get(self) -> Any:
        self._thread.join(20)
        if not self._outcome:
            pytest.fail("still running after 20 s")
        ok, value = self._outcome[0]
        if not ok:
            raise value
        return value


def psycopg_connect(url: str) -> Any:
    import psycopg

    return psycopg.connect(url)


def stored_originals(backend: str, tmp_path: Path, session_id: str) -> int:
    """How many originals of the session the database holds, expired or not."""
    if backend == "sqlite":
        import sqlite3

        with sqlite3.connect(tmp_path / "sessions.db") as conn:
            sql = "SELECT COUNT(*) FROM ctxpack_artifacts WHERE session_id = ?"
            return int(conn.execute(sql, (session_id,)).fetchone()[0])
    with psycopg_connect(server_url("postgres")) as conn:
        sql = "SELECT COUNT(*) FROM ctxpack_artifacts WHERE session_id = %s"
        return int(conn.execute(sql, (session_id,)).fetchone()[0])  # type: ignore[index]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_an_original_put_once_the_session_expired_is_not_stored(
    backend: str, tmp_path: Path, session_id: str
) -> None:
    # A session expired is one the store does not hold: an original a replica puts then (a
    # render clearing an output of the session it still has in memory) is not written into
    # the rows that wait for purge_expired(), as the protocol says and memory and Redis do.
    store: Any = store_with_ttl(backend, tmp_path, ttl=0.3)
    try:
        store.append(session_id, "e0", version=0, state="s")
        time.sleep(0.5)
        store.put_artifact(session_id, "art_1", "put once expired")
        assert stored_originals(backend, tmp_path, session_id) == 0
        assert store.purge_expired() >= 1
    finally:
        store.delete_session(session_id)
        store.close()


def test_an_async_postgres_store_purges_expired_sessions(session_id: str) -> None:
    # The async store mirrors the sync one name for name: an asyncio backend erases what
    # expired without opening a second, synchronous store for it.
    url = server_url("postgres")

    async def main() -> int:
        store = open_async_store(url, ttl=0.2)
        try:
            await store.append(session_id, "e0", version=0, state="s", artifacts={"art_1": "x"})
            await asyncio.sleep(0.4)
            purged: int = await store.purge_expired()  # type: ignore[attr-defined]
            return purged
        finally:
            await store.close()

    # Other expired sessions of the shared test database may be purged too.
    assert asyncio.run(main()) >= 1
    assert stored_originals("postgres", Path(), session_id) == 0
    with psycopg_connect(url) as conn:
        sql = "SELECT COUNT(*) FROM ctxpack_sessions WHERE session_id = %s"
        assert conn.execute(sql, (session_id,)).fetchone() == (0,)
