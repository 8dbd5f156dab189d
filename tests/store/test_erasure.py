"""Erasure leaves nothing behind: no byte of an erased session in an SQLite file or its WAL
(deleted, purged or expired), and no original of it read back through a live session of
another replica."""

from __future__ import annotations

import asyncio
import gc
import json
import re
import sqlite3
import threading
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxpack import ArtifactNotFoundError, AsyncSession, ConfigError, Session
from ctxpack.caches import clear_caches
from ctxpack.store import SessionStore, SQLiteStore, open_async_store, open_store

from ..threads import run_threads, switching_often
from .backends import backend_url, server_url

MARKER = "QZXERASEMEQZX"


def long_output(tag: str) -> str:
    """A tool output long enough to be filtered, its original stored beside the session."""
    return "\n".join(f"line {i} {MARKER}-{tag} build step output {i * 7}" for i in range(300))


def write_session(store: SessionStore, session_id: str) -> Session:
    session = Session.open(session_id, store=store, model="gpt-4", redact_secrets=False)
    session.append({"role": "user", "content": f"remember {MARKER}-user"})
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    session.append({"role": "assistant", "content": "", "tool_calls": [call]})
    session.append({"role": "tool", "tool_call_id": "c1", "content": long_output("tool")})
    return session


def marker_bytes(path: Path) -> dict[str, int]:
    """How often the marker is in the database file and in its WAL."""
    found = {}
    for suffix in ("", "-wal"):
        file = Path(f"{path}{suffix}")
        found[file.name] = file.read_bytes().count(MARKER.encode()) if file.exists() else 0
    return found


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Iterator[Path]:
    """A database file, with a connection of another process's kind kept open on it: the
    file's WAL is not removed when the store closes."""
    path = tmp_path / "sessions.db"
    SQLiteStore(path).close()
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    yield path
    other.close()


def expire(store: SQLiteStore, session_id: str) -> None:
    time.sleep(0.4)
    store.append(session_id, "a new life", version=0, state="{}")


def purge(store: SQLiteStore, session_id: str) -> None:
    time.sleep(0.4)
    assert store.purge_expired() == 1


ERASURES: dict[str, Callable[[SQLiteStore, str], None]] = {
    "delete_session": lambda store, session_id: store.delete_session(session_id),
    "purge_expired": purge,
    "an append after the ttl": expire,
}


@pytest.mark.parametrize("erasure", ERASURES)
def test_an_erased_session_leaves_no_byte_in_the_file_nor_its_wal(
    sqlite_path: Path, erasure: str
) -> None:
    ttl = None if erasure == "delete_session" else 0.3
    store = SQLiteStore(sqlite_path, ttl=ttl)
    write_session(store, "victim")
    Session.open("bystander", store=SQLiteStore(sqlite_path), model="gpt-4").append(
        {"role": "user", "content": "kept"}
    )
    assert sum(marker_bytes(sqlite_path).values()) > 0
    ERASURES[erasure](store, "victim")
    # While the store is open (a server's), and once it is closed.
    assert marker_bytes(sqlite_path) == {"sessions.db": 0, "sessions.db-wal": 0}
    store.close()
    assert marker_bytes(sqlite_path) == {"sessions.db": 0, "sessions.db-wal": 0}
    again = Session.open("bystander", store=SQLiteStore(sqlite_path), model="gpt-4")
    assert [m.text for m in again.transcript()] == ["kept"]


def test_an_erased_session_leaves_no_byte_on_an_sqlite_build_that_keeps_deleted_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQLite keeps deleted rows in its free pages unless built with SQLITE_SECURE_DELETE (as
    # some Linux distributions do, and python.org's builds do not).
    connect = sqlite3.connect

    def connect_keeping_deleted_bytes(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn: sqlite3.Connection = connect(*args, **kwargs)
        conn.execute("PRAGMA secure_delete=OFF")
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect_keeping_deleted_bytes)
    path = tmp_path / "sessions.db"
    store = SQLiteStore(path)
    write_session(store, "victim")
    Session.open("bystander", store=store, model="gpt-4").append({"role": "user", "content": "x"})
    store.delete_session("victim")
    store.close()
    assert marker_bytes(path) == {"sessions.db": 0, "sessions.db-wal": 0}


def test_erasures_racing_appends_leave_no_byte_once_the_last_is_done(tmp_path: Path) -> None:
    # An erasure whose WAL cannot be emptied at once (other replicas writing) still succeeds;
    # the last one, with the replicas idle but open, leaves nothing.
    path = tmp_path / "sessions.db"
    stores = [SQLiteStore(path) for _ in range(4)]
    sessions = [Session.open("victim", store=store, model="gpt-4") for store in stores[:3]]

    def work(worker: int) -> None:
        for k in range(15):
            if worker == len(sessions):
                stores[-1].delete_session("victim")
            else:
                sessions[worker].append({"role": "user", "content": f"{MARKER} w{worker} m{k}"})

    with switching_often():
        run_threads(work, len(sessions) + 1)
    stores[-1].delete_session("victim")
    assert marker_bytes(path) == {"sessions.db": 0, "sessions.db-wal": 0}
    for store in stores:
        store.close()


def test_an_erasure_succeeds_while_another_connection_holds_the_wal(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    store = SQLiteStore(path, timeout=0.1)
    write_session(store, "victim")
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # reading, for long
    store.delete_session("victim")  # done; the WAL waits for the reader
    assert store.load("victim").version == 0
    assert marker_bytes(path)["sessions.db-wal"] > 0
    reader.execute("COMMIT")
    store.append("other", "e", version=0, state="{}")
    store.delete_session("other")  # a later erasure empties it
    assert marker_bytes(path) == {"sessions.db": 0, "sessions.db-wal": 0}
    reader.close()
    store.close()


def retrieve_call(ref: str) -> dict[str, Any]:
    """The model's call to the retrieve tool for the artifact ``ref``."""
    return {
        "id": "r1",
        "type": "function",
        "function": {"name": "retrieve_original", "arguments": f'{{"artifact": "{ref}"}}'},
    }


def test_a_replica_does_not_read_back_an_original_of_an_erased_session(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    # The replica that stored the original holds it in memory (the last one stored); once
    # another replica erased the session, it reads the store first, as a retrieve with
    # redaction on does.
    writer = write_session(replicas(), session_id)
    (ref,) = set(re.findall(r"art_[0-9a-f]{16}", str(writer.render().to_openai())))
    assert MARKER in writer.retrieve(ref).text
    replicas().delete_session(session_id)
    with pytest.raises(ArtifactNotFoundError):
        writer.retrieve(ref)
    answer = writer.handle(retrieve_call(ref))
    assert MARKER not in answer
    assert ref in answer


def test_a_live_session_does_not_read_an_erased_original_from_its_store(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    # session.store.get(record.artifact) reads an original (the filters guide shows it); the
    # replica that stored it last knows its text, which it must not serve once it is erased.
    writer = write_session(replicas(), session_id)
    (ref,) = [r.artifact for r in writer.records if r.shortened]
    assert ref is not None and MARKER in writer.store.get(ref)
    replicas().delete_session(session_id)
    with pytest.raises(ArtifactNotFoundError):
        writer.store.get(ref)
    # Nor one it put after the erasure, which the store did not keep (no session to keep it
    # beside).
    late = writer.store.put(f"late {MARKER}")
    with pytest.raises(ArtifactNotFoundError):
        writer.store.get(late)


def server_traces(backend: str, needle: str) -> list[str]:
    """Where the server holds ``needle``: every Redis key of the test database (name and
    value), every row of every table of the PostgreSQL schema the store writes to."""
    url = server_url(backend)
    found: list[str] = []
    if backend == "redis":
        import redis

        client = redis.Redis.from_url(url)
        for key in client.scan_iter("*"):
            kind = client.type(key).decode()
            value: Any = {"hash": client.hgetall, "list": lambda k: client.lrange(k, 0, -1)}.get(
                kind, client.get
            )(key)
            if needle.encode() in key or needle.encode() in repr(value).encode():
                found.append(key.decode())
        client.close()
        return found
    import psycopg

    with psycopg.connect(url) as conn:
        schema = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        for (table,) in conn.execute(schema).fetchall():
            for row in conn.execute(f'SELECT * FROM "{table}"').fetchall():
                cells = [bytes(c) if isinstance(c, (bytes, memoryview)) else str(c) for c in row]
                if any(
                    needle.encode() in (c if isinstance(c, bytes) else c.encode()) for c in cells
                ):
                    found.append(table)
    return sorted(set(found))


@pytest.mark.parametrize("backend", ["postgres", "redis"])
def test_an_erased_session_leaves_no_key_or_row_on_the_server(
    backend: str, session_id: str
) -> None:
    # Read as the server holds it, not through the store: every key, every table.
    store = open_store(server_url(backend))
    writer = write_session(store, session_id)
    call = {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    writer.append({"role": "assistant", "content": "", "tool_calls": [call]})
    # The session's id in its text too: the needle is this test's alone.
    writer.append({"role": "tool", "tool_call_id": "c2", "content": long_output(session_id)})
    writer.render()
    assert len(server_traces(backend, session_id)) == 3  # the keys, or the tables
    store.delete_session(session_id)
    assert server_traces(backend, session_id) == []
    store.close()


def test_erasing_a_session_leaves_another_s_copy_of_the_same_original(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    # Two users' agents read the same output: each session keeps its own copy, under an id
    # of its own (keyed by its secret), so erasing one neither breaks the other's nor is
    # kept for it.
    store = replicas()
    victim, bystander = (write_session(store, f"{session_id}-{who}") for who in "ab")
    (erased,), (kept,) = (
        [r.artifact for r in s.records if r.shortened] for s in (victim, bystander)
    )
    assert erased != kept and erased is not None and kept is not None
    store.delete_session(f"{session_id}-a")
    with pytest.raises(ArtifactNotFoundError):
        store.get_artifact(f"{session_id}-a", erased)
    again = Session.open(f"{session_id}-b", store=replicas(), model="gpt-4")
    assert again.store.get(kept) == long_output("tool")
    store.delete_session(f"{session_id}-b")


def agent_turn(writer: int, k: int) -> list[dict[str, Any]]:
    call = f"c{writer}_{k}"
    output = "\n".join(f"w{writer} k{k} line {i} output {i * 7}" for i in range(200))
    return [
        {"role": "user", "content": f"w{writer} m{k}"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": call, "type": "function", "function": {"name": "bash", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": call, "content": output},
    ]


def render_unless_erased(session: Session) -> None:
    """``session.render()``, but for an erasure landing between the writer's last append and
    this render: the session then reads as empty, which a render refuses (so it should)."""
    try:
        session.render()
    except ConfigError as exc:
        if "the session is empty" not in str(exc):
            raise


def test_an_erasure_amid_appends_keeps_exactly_what_came_after_it(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    # Replicas append turns (their outputs' originals stored beside them, some rendered) while
    # the user's erasure comes: an append acknowledged before the erasure began is gone, one
    # begun after it returned is kept, and what is kept is whole (each writer's last turns in
    # order, every original readable, every replica sending the same request).
    writers, turns = 3, 10
    sessions = [Session.open(session_id, store=replicas(), model="gpt-4") for _ in range(writers)]
    eraser = replicas()
    clock = iter(range(1, 1_000_000)).__next__  # next() on one iterator: atomic under the GIL
    spans: dict[tuple[int, int], tuple[int, int]] = {}
    erasure: list[int] = []

    def work(worker: int) -> None:
        if worker == writers:
            deadline = time.monotonic() + 60
            while len(spans) < 2 * writers and time.monotonic() < deadline:
                time.sleep(0.002)
            erasure.append(clock())
            eraser.delete_session(session_id)
            erasure.append(clock())
            return
        for k in range(turns):
            began = clock()
            sessions[worker].extend(agent_turn(worker, k))
            spans[worker, k] = (began, clock())
            if k % 3 == 0:
                render_unless_erased(sessions[worker])

    with switching_often():
        run_threads(work, writers + 1)
    reader = Session.open(session_id, store=replicas(), model="gpt-4")
    asked = [m.text.split() for m in reader.transcript() if m.role == "user"]
    kept = [(int(w[1:]), int(k[1:])) for w, k in asked]
    assert len(kept) == len(set(kept))
    assert not {turn for turn, (_, done) in spans.items() if done < erasure[0]} & set(kept)
    assert {turn for turn, (began, _) in spans.items() if began > erasure[1]} <= set(kept)
    for worker in range(writers):
        mine = [k for w, k in kept if w == worker]
        assert mine == list(range(turns - len(mine), turns)), mine
    for record in reader.records:
        if record.artifact is not None:
            reader.store.get(record.artifact)  # ArtifactNotFoundError if the append was split
    assert (
        len({json.dumps(s.render().to_openai(), sort_keys=True) for s in [*sessions, reader]}) == 1
    )
    eraser.delete_session(session_id)


def texts_reachable_from(root: object, needle: str) -> list[str]:
    """The types on the way to each str holding ``needle`` that ``root`` reaches (modules,
    classes and functions left out: they are the process's, not the object's)."""
    skipped = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)
    seen: set[int] = set()
    found: list[str] = []
    stack: list[tuple[object, str]] = [(root, type(root).__name__)]
    while stack:
        obj, path = stack.pop()
        if id(obj) in seen or isinstance(obj, skipped):
            continue
        seen.add(id(obj))
        if isinstance(obj, str):
            if needle in obj:
                found.append(path)
        elif not isinstance(obj, (bytes, int, float)):
            stack += [(ref, f"{path}>{type(ref).__name__}") for ref in gc.get_referents(obj)]
    return found


def test_a_live_session_that_read_an_erasure_holds_no_erased_text(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    # A replica's session keeps texts between calls: the last original it stored, the tool
    # outputs of its last request. Once it has read the erasure (and the process's caches are
    # cleared, as the docs say to), none of the erased life's texts stays in it.
    writer = write_session(replicas(), session_id)
    (ref,) = [r.artifact for r in writer.records if r.shortened]
    assert ref is not None and MARKER in writer.retrieve(ref).text
    writer.render()
    replicas().delete_session(session_id)
    assert writer.transcript() == []
    clear_caches()
    assert texts_reachable_from(writer, MARKER) == []
    writer.append({"role": "user", "content": "a new life"})
    assert [m.text for m in writer.transcript()] == ["a new life"]


def test_an_async_session_that_read_an_erasure_holds_no_erased_text(
    backend: str, tmp_path: Path, session_id: str
) -> None:
    url = backend_url(backend, tmp_path)
    memory = open_async_store(url)

    async def main() -> list[str]:
        store = memory if backend == "memory" else open_async_store(url)
        eraser = memory if backend == "memory" else open_async_store(url)
        session = await AsyncSession.open(session_id, store=store, model="gpt-4")
        await session.extend(list(write_session(open_store("memory://"), "x").transcript()))
        (ref,) = [r.artifact for r in await session.records() if r.shortened]
        assert ref is not None and MARKER in (await session.retrieve(ref)).text
        await session.render()
        await eraser.delete_session(session_id)
        assert await session.transcript() == []
        clear_caches()
        found = texts_reachable_from(session, MARKER)
        await session.close()
        for opened in {id(s): s for s in (store, eraser)}.values():
            await opened.close()
        return found

    assert asyncio.run(main()) == []


NOT_IDS = [None, 7, b"user", "", "u" * 257, "a\x00b", ["user"]]


def test_erasing_an_unknown_id_does_nothing_and_a_bad_one_is_a_config_error(
    backend: str, tmp_path: Path, session_id: str
) -> None:
    # As the protocol documents, on every backend, sync and async: an erasure may be retried.
    url = backend_url(backend, tmp_path)
    store = open_store(url)
    store.delete_session(session_id)
    store.delete_session(session_id)
    for bad in NOT_IDS:
        with pytest.raises(ConfigError, match="session_id"):
            store.delete_session(bad)  # type: ignore[arg-type]
    store.close()

    async def main() -> None:
        async_store = open_async_store(url)
        await async_store.delete_session(session_id)
        for bad in NOT_IDS:
            with pytest.raises(ConfigError, match="session_id"):
                await async_store.delete_session(bad)  # type: ignore[arg-type]
        await async_store.close()

    asyncio.run(main())


def erased_while_loading(load: Callable[[str], Any], session_id: str, url: str) -> Any:
    """What ``load(session_id)`` returns when the session is erased while it reads: between
    its read of the session and its read of the entries (held up here by a lock on the
    entries that only the erasure's own transaction holds)."""
    import psycopg

    found: dict[str, Any] = {}
    reader = threading.Thread(target=lambda: found.setdefault("stored", load(session_id)))
    waiting = (
        "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
        " WHERE c.relname = 'ctxpack_entries' AND NOT l.granted"
    )
    with psycopg.connect(url, autocommit=True) as eraser, psycopg.connect(url) as probe:
        with eraser.transaction():
            eraser.execute("LOCK TABLE ctxpack_entries IN ACCESS EXCLUSIVE MODE")
            reader.start()
            deadline = time.monotonic() + 10
            while not probe.execute(waiting).fetchone()[0] and reader.is_alive():  # type: ignore[index]
                assert time.monotonic() < deadline, "the load never waited for the entries"
                probe.rollback()
                time.sleep(0.01)
            for table in ("ctxpack_entries", "ctxpack_artifacts", "ctxpack_sessions"):
                eraser.execute(f"DELETE FROM {table} WHERE session_id = %s", (session_id,))
        reader.join(timeout=30)
    return found["stored"]


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_postgres_load_racing_an_erasure_reads_the_session_whole_or_erased(
    flavour: str, session_id: str
) -> None:
    # One consistent read: never the version and state of a session without its entries.
    url = server_url("postgres")
    writer = open_store(url)
    session = Session.open(session_id, store=writer, model="gpt-4")
    for n in range(3):
        session.append({"role": "user", "content": f"turn {n}"})
    if flavour == "sync":
        store: Any = open_store(url)
        load: Callable[[str], Any] = store.load
    else:
        store = open_async_store(url)
        load = lambda sid: asyncio.run(store.load(sid))  # noqa: E731
    try:
        stored = erased_while_loading(load, session_id, url)
    finally:
        if flavour == "sync":
            store.close()
        writer.close()
    assert (stored.version, len(stored.entries)) in {(3, 3), (0, 0)}
    assert (stored.state is None) == (stored.version == 0)
