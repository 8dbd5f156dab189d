"""Each life of a session id is its own: a write a replica prepared before the session was
erased never lands on the session started again since, even once it has grown back to the
version the replica read (the version alone cannot tell the two lives apart)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from ctxpack import ArtifactNotFoundError, AsyncSession, Session
from ctxpack.errors import StoreConflictError
from ctxpack.store import (
    MemoryStore,
    SessionStore,
    SQLiteStore,
    ThreadedAsyncStore,
    open_async_store,
    open_store,
)

from .backends import backend_url, server_url
from .test_managed import POLICY, agent_turn

MARKER = "QZXERASEDLIFEQZX"


class ErasedBeforeItsWrite:
    """A store whose next append, once armed, is made after the user erased the session and
    another replica started it again and brought it back to the version the append is at."""

    def __init__(self, store: SessionStore, other: SessionStore, session_id: str) -> None:
        self.store, self.other, self.session_id = store, other, session_id
        self.url = store.url
        self.armed = False

    def load(self, session_id: str, *, since: int = 0) -> object:
        return self.store.load(session_id, since=since)

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
        if self.armed:
            self.armed = False
            self.other.delete_session(self.session_id)
            fresh = Session.open(self.session_id, store=self.other, model="gpt-4")
            while self.other.load(self.session_id).version < version:
                fresh.append({"role": "user", "content": "a new chat"})
        lives = {} if life is None else {"life": life}  # a store before lives takes none
        self.store.append(
            session_id, entry, version=version, state=state, artifacts=artifacts, **lives
        )

    def put_artifact(
        self, session_id: str, artifact: str, text: str, *, life: str | None = None
    ) -> None:
        lives = {} if life is None else {"life": life}
        self.store.put_artifact(session_id, artifact, text, **lives)

    def get_artifact(self, session_id: str, artifact: str) -> str:
        return self.store.get_artifact(session_id, artifact)

    def delete_session(self, session_id: str) -> None:
        self.store.delete_session(session_id)

    def close(self) -> None:
        pass


def test_a_write_prepared_before_an_erasure_does_not_bring_the_erased_life_back(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    other = replicas()
    racing = ErasedBeforeItsWrite(replicas(), other, session_id)
    stale = Session.open(session_id, store=racing, model="gpt-4", window=POLICY)  # type: ignore[arg-type]
    for n in range(12):
        turn = agent_turn(n)
        turn[0]["content"] += f" {MARKER}"
        stale.extend(turn)
        stale.render()
    summary = stale.window_state.summary
    assert summary
    old_secret = json.loads(other.load(session_id).state or "")["secret"]
    racing.armed = True
    stale.append({"role": "user", "content": "the stale replica's next message"})

    stored = other.load(session_id)
    assert stored.state is not None
    data = json.loads(stored.state)
    assert data["secret"] != old_secret
    assert (data["session"].get("window") or {}).get("summary") != summary
    assert MARKER not in stored.state and not any(MARKER in e for e in stored.entries)
    # The stale replica's message went on top of the new life, which it now holds.
    reader = Session.open(session_id, store=other, model="gpt-4")
    assert [m.content for m in reader.transcript()][-1] == "the stale replica's next message"
    assert all(MARKER not in str(m.content) for m in stale.transcript())


def test_an_append_in_another_life_is_refused_and_without_a_life_is_not_checked(
    store: SessionStore, session_id: str
) -> None:
    store.append(session_id, "e0", version=0, state="s0", life="life-1")
    with pytest.raises(StoreConflictError, match="erased and started again"):
        store.append(session_id, "x", version=1, state="x", life="life-2")
    assert store.load(session_id).version == 1
    # A writer that knows no lives (a replica not yet upgraded) is not checked, and the
    # recorded life stays.
    store.append(session_id, "e1", version=1, state="s1")
    with pytest.raises(StoreConflictError):
        store.append(session_id, "x", version=2, state="x", life="life-2")
    store.append(session_id, "e2", version=2, state="s2", life="life-1")
    store.delete_session(session_id)
    store.append(session_id, "n0", version=0, state="n0", life="life-2")
    with pytest.raises(StoreConflictError):
        store.append(session_id, "x", version=1, state="x", life="life-1")
    assert store.load(session_id).entries == ("n0",)
    store.delete_session(session_id)


def test_an_original_put_in_another_life_is_not_stored(
    store: SessionStore, session_id: str
) -> None:
    store.append(session_id, "e0", version=0, state="s0", life="life-2")
    store.put_artifact(session_id, "art_old", f"{MARKER} old", life="life-1")
    store.put_artifact(session_id, "art_new", "new", life="life-2")
    store.put_artifact(session_id, "art_any", "any")
    with pytest.raises(ArtifactNotFoundError):
        store.get_artifact(session_id, "art_old")
    assert store.get_artifact(session_id, "art_new") == "new"
    assert store.get_artifact(session_id, "art_any") == "any"
    store.delete_session(session_id)


def test_a_replica_does_not_put_an_original_of_the_erased_life_into_the_next(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    stale = Session.open(session_id, store=replicas(), model="gpt-4")
    stale.append({"role": "user", "content": "the erased chat"})
    other = replicas()
    other.delete_session(session_id)
    fresh = Session.open(session_id, store=other, model="gpt-4")
    fresh.append({"role": "user", "content": "a new chat"})
    ref = stale.store.put(f"{MARKER} an original of the erased chat")
    with pytest.raises(ArtifactNotFoundError):
        other.get_artifact(session_id, ref)
    other.delete_session(session_id)


def test_a_session_written_without_a_life_takes_the_first_one_given(
    store: SessionStore, session_id: str
) -> None:
    store.append(session_id, "e0", version=0, state="s0")
    store.append(session_id, "e1", version=1, state="s1", life="life-1")
    with pytest.raises(StoreConflictError):
        store.append(session_id, "x", version=2, state="x", life="life-2")
    store.delete_session(session_id)


def test_a_database_made_before_lives_gets_them_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # the tables as ctxpack made them before lives
        conn.execute(
            "CREATE TABLE ctxpack_sessions (session_id TEXT PRIMARY KEY,"
            " version INTEGER NOT NULL, state TEXT NOT NULL, expires_at REAL)"
        )
        conn.execute(
            "CREATE TABLE ctxpack_entries (session_id TEXT NOT NULL, seq INTEGER NOT NULL,"
            " entry TEXT NOT NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID"
        )
        conn.execute(
            "CREATE TABLE ctxpack_artifacts (session_id TEXT NOT NULL, artifact TEXT NOT NULL,"
            " text TEXT NOT NULL, PRIMARY KEY (session_id, artifact)) WITHOUT ROWID"
        )
        conn.execute("INSERT INTO ctxpack_sessions VALUES ('old', 1, 'old state', NULL)")
        conn.execute("INSERT INTO ctxpack_entries VALUES ('old', 0, 'old entry')")
    conn.close()
    store = SQLiteStore(path)
    assert store.load("old").entries == ("old entry",)
    store.append("old", "e1", version=1, state="s1", life="life-1")
    with pytest.raises(StoreConflictError):
        store.append("old", "x", version=2, state="x", life="life-2")
    store.append("new", "n0", version=0, state="n0", life="life-1")
    assert store.load("old").version == 2
    store.close()
    SQLiteStore(path).close()  # opened again: migrated once


def test_a_postgres_database_made_before_lives_gets_them_when_opened() -> None:
    psycopg = pytest.importorskip("psycopg")
    url = server_url("postgres")
    schema = f"old_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        admin.execute(f"SET search_path TO {schema}")
        # The tables as ctxpack made them before lives.
        admin.execute(
            "CREATE TABLE ctxpack_sessions (session_id TEXT PRIMARY KEY, version INTEGER"
            " NOT NULL, state BYTEA NOT NULL, expires_at DOUBLE PRECISION)"
        )
        admin.execute(
            "CREATE TABLE ctxpack_entries (session_id TEXT NOT NULL, seq INTEGER NOT NULL,"
            " entry BYTEA NOT NULL, PRIMARY KEY (session_id, seq))"
        )
        admin.execute(
            "CREATE TABLE ctxpack_artifacts (session_id TEXT NOT NULL, artifact TEXT NOT NULL,"
            " text BYTEA NOT NULL, PRIMARY KEY (session_id, artifact))"
        )
        admin.execute("INSERT INTO ctxpack_sessions VALUES ('old', 1, 'old state', NULL)")
        admin.execute("INSERT INTO ctxpack_entries VALUES ('old', 0, 'old entry')")
    separator = "&" if "?" in url else "?"
    store = open_store(f"{url}{separator}options=-csearch_path%3D{schema}")
    try:
        assert store.load("old").entries == ("old entry",)
        store.append("old", "e1", version=1, state="s1", life="life-1")
        with pytest.raises(StoreConflictError):
            store.append("old", "x", version=2, state="x", life="life-2")
        assert store.load("old").version == 2
    finally:
        store.close()
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def test_a_threaded_async_store_passes_the_life_on_only_to_a_store_that_takes_it() -> None:
    calls: list[dict[str, object]] = []

    class Old:
        url = "old://"

        def append(self, session_id: str, entry: str, **kwargs: object) -> None:
            calls.append(kwargs)

    asyncio.run(
        ThreadedAsyncStore(Old()).append("s", "e", version=0, state="s", life="l")  # type: ignore[arg-type]
    )
    assert "life" not in calls[0]


class AsyncErasedBeforeItsWrite:
    """:class:`ErasedBeforeItsWrite` for an :class:`~ctxpack.AsyncSession`."""

    def __init__(self, store: Any, session_id: str) -> None:
        self.store, self.session_id, self.url = store, session_id, store.url
        self.armed = False

    async def load(self, session_id: str, *, since: int = 0) -> Any:
        return await self.store.load(session_id, since=since)

    async def append(
        self,
        session_id: str,
        entry: str,
        *,
        version: int,
        state: str,
        artifacts: Mapping[str, str] | None = None,
        life: str | None = None,
    ) -> None:
        if self.armed:
            self.armed = False
            await self.store.delete_session(self.session_id)
            fresh = await AsyncSession.open(self.session_id, store=self.store, model="gpt-4")
            while (await self.store.load(self.session_id)).version < version:
                await fresh.append({"role": "user", "content": "a new chat"})
        lives = {} if life is None else {"life": life}
        await self.store.append(
            session_id, entry, version=version, state=state, artifacts=artifacts, **lives
        )

    async def put_artifact(
        self, session_id: str, artifact: str, text: str, *, life: str | None = None
    ) -> None:
        lives = {} if life is None else {"life": life}
        await self.store.put_artifact(session_id, artifact, text, **lives)

    async def get_artifact(self, session_id: str, artifact: str) -> str:
        return str(await self.store.get_artifact(session_id, artifact))

    async def delete_session(self, session_id: str) -> None:
        await self.store.delete_session(session_id)

    async def close(self) -> None:
        await self.store.close()


def test_an_async_write_prepared_before_an_erasure_does_not_bring_the_erased_life_back(
    backend: str, tmp_path: Path, session_id: str
) -> None:
    url = backend_url(backend, tmp_path)

    async def main() -> tuple[str, str]:
        inner = ThreadedAsyncStore(MemoryStore()) if backend == "memory" else open_async_store(url)
        racing = AsyncErasedBeforeItsWrite(inner, session_id)
        stale = await AsyncSession.open(session_id, store=racing, model="gpt-4")
        for n in range(4):
            await stale.append({"role": "user", "content": f"{MARKER} {n}"})
        old = await inner.load(session_id)
        racing.armed = True
        await stale.append({"role": "user", "content": "the stale replica's next message"})
        new = await inner.load(session_id)
        await inner.delete_session(session_id)
        await inner.close()
        return old.state or "", new.state or ""

    old, new = asyncio.run(main())
    assert json.loads(new)["secret"] != json.loads(old)["secret"]
