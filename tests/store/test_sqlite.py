"""The SQLite stores' failures are ctxpack errors saying what to do: a writer that waited past
the busy timeout, a read-only file, a folder, a file that is not a database."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ctxpack import AsyncSession, Session
from ctxpack.errors import ConfigError, StoreError
from ctxpack.store import SQLiteArtifactStore, SQLiteStore, open_store


def test_a_writer_that_waits_past_the_busy_timeout_gets_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    store = SQLiteStore(path, timeout=0.1)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        with pytest.raises(StoreError, match="busy timeout") as caught:
            store.append("u1", "e", version=0, state="s")
        assert caught.value.url == f"sqlite:///{path}"
        assert "session 'u1'" in caught.value.operation
    finally:
        other.execute("ROLLBACK")
    store.append("u1", "e", version=0, state="s")  # usable once the lock is gone
    assert store.load("u1").version == 1


def test_the_artifact_store_wraps_a_locked_database_too(tmp_path: Path) -> None:
    path = tmp_path / "artifacts.db"
    store = SQLiteArtifactStore(path, timeout=0.1)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match="busy timeout"):
            store.put("an original")
    finally:
        other.execute("ROLLBACK")


def test_a_session_append_on_a_locked_database_leaves_the_session_usable(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sessions.db"
    session = Session.open("u1", store=SQLiteStore(path, timeout=0.1), model="gpt-4")
    session.append({"role": "user", "content": "first"})
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match="busy timeout"):
            session.append({"role": "user", "content": "second"})
    finally:
        other.execute("ROLLBACK")
    assert [m.text for m in session.transcript()] == ["first"]
    session.append({"role": "user", "content": "second"})
    assert [m.id for m in session.transcript()] == ["s0", "s1"]


def test_a_read_only_store_reads_and_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    SQLiteStore(path).append("u1", "e", version=0, state="s")
    reader = SQLiteStore(path, read_only=True)
    assert reader.load("u1").entries == ("e",)
    with pytest.raises(StoreError, match="read-only"):
        reader.append("u1", "e2", version=1, state="s")


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0, reason="root may write to any folder"
)
def test_a_store_in_a_read_only_folder_opens_for_reading(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "sessions.db"
    SQLiteStore(path).append("u1", "e", version=0, state="s")
    folder.chmod(0o555)
    path.chmod(0o444)
    try:
        store = open_store(f"sqlite:///{path}")
        assert store.load("u1").entries == ("e",)
        with pytest.raises(StoreError, match="read-only"):
            store.append("u1", "e2", version=1, state="s")
    finally:
        folder.chmod(0o755)


def test_a_folder_or_a_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a folder"):
        SQLiteStore(tmp_path)
    with pytest.raises(StoreError, match="does not exist"):
        SQLiteStore(tmp_path / "missing" / "sessions.db")


def test_a_path_the_system_refuses_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="File name too long") as info:
        SQLiteStore(tmp_path / ("x" * 300))
    assert "open" in str(info.value)


def test_a_file_that_is_not_a_database_is_named(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("these are notes, not a database " * 100)
    with pytest.raises(StoreError, match="not an SQLite database"):
        SQLiteStore(path)


@pytest.mark.parametrize("replaced", [False, True])
def test_a_database_file_deleted_while_open_is_a_store_error_not_a_silent_loss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replaced: bool
) -> None:
    # Appends went on "succeeding" into the deleted file: acknowledged, and lost to every
    # other opener and to the next start; a replica opening the path got another database.
    monkeypatch.chdir(tmp_path)  # a relative path, and a process that changes folder later
    session = Session.open("u1", store="sqlite:///sessions.db", model="gpt-4")
    session.append({"role": "user", "content": "kept"})
    monkeypatch.chdir(tmp_path.parent)
    for name in ("sessions.db", "sessions.db-wal", "sessions.db-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    if replaced:
        SQLiteStore(tmp_path / "sessions.db").close()  # another process made it again
    with pytest.raises(StoreError, match="deleted or replaced") as caught:
        session.append({"role": "user", "content": "lost"})
    assert "session 'u1'" in caught.value.operation
    with pytest.raises(StoreError, match="deleted or replaced"):
        session.render()
    assert len(session) == 1  # the failed append left nothing behind
    session.close()


def _files_open_on(path: Path) -> list[str]:
    """The descriptors this process holds on ``path`` (its SQLite connections)."""
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        pytest.skip("needs /proc/self/fd")
    held = []
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):
            if os.readlink(fd) == str(path):
                held.append(fd.name)
    return held


def _damaged(path: Path) -> str:
    url = f"sqlite:///{path}"
    store = open_store(url)
    store.append("u1", "not an entry ctxpack wrote", version=0, state="{}")
    store.close()
    assert _files_open_on(path) == []
    return url


def test_an_open_that_fails_closes_the_store_it_opened_from_the_url(tmp_path: Path) -> None:
    # A session that cannot be read (damaged, written by a newer ctxpack, a server gone
    # mid-read) left the store Session.open had opened from the URL open: a server retrying
    # the request leaked a connection (a pool, with its threads, for PostgreSQL) each time.
    url = _damaged(tmp_path / "sessions.db")
    with pytest.raises(StoreError) as caught:
        Session.open("u1", store=url, model="gpt-4")
    assert _files_open_on(tmp_path / "sessions.db") == []
    assert caught.value.operation == "read session 'u1'"


def test_an_async_open_that_fails_or_is_cancelled_closes_the_store_it_opened(
    tmp_path: Path,
) -> None:
    url = _damaged(tmp_path / "sessions.db")

    async def main() -> None:
        with pytest.raises(StoreError):
            await AsyncSession.open("u1", store=url, model="gpt-4")
        with pytest.raises(ConfigError):  # an option checked after the store is opened
            await AsyncSession.open("u1", store=url, model="gpt-4", filterz=[])
        opening = asyncio.create_task(AsyncSession.open("u2", store=url, model="gpt-4"))
        await asyncio.sleep(0)  # the store is open, its first read under way
        opening.cancel()
        with pytest.raises(asyncio.CancelledError):
            await opening

    asyncio.run(main())
    assert _files_open_on(tmp_path / "sessions.db") == []


def test_a_reader_that_cannot_write_the_folder_refuses_writes_it_cannot_see(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without write access to the folder, the file is read alone ("immutable"): the appends
    # still in the WAL (a writer has the store open) were silently missing from what it read.
    path = tmp_path / "sessions.db"
    first = SQLiteStore(path)
    first.append("u1", "e0", version=0, state="s")
    first.close()  # e0 is in the file
    writer = SQLiteStore(path)
    writer.append("u1", "e1", version=1, state="s")  # e1 in the WAL while the writer is open
    access = os.access

    def no_folder_write(target: Any, mode: int, **options: Any) -> bool:
        if mode & os.W_OK and Path(target) in (tmp_path, path):
            return False
        return access(target, mode, **options)

    monkeypatch.setattr(os, "access", no_folder_write)
    with pytest.raises(StoreError, match=r"sessions\.db-wal") as caught:
        open_store(f"sqlite:///{path}").load("u1")
    assert caught.value.operation == "open"
    writer.close()
    reader = open_store(f"sqlite:///{path}")
    assert reader.load("u1").entries == ("e0", "e1")
    reader.close()


def test_opening_waits_out_a_wal_pragma_answered_locked_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQLite may answer PRAGMA journal_mode=WAL "database is locked" at once, without its busy
    # handler, while another connection recovers or removes the log: a replica opening the
    # store then failed (seen in CI with replicas opening and closing on threads).
    from ctxpack.store._sqlite import SQLiteFile

    refusals = [2]

    class Answering:
        def __init__(self, conn: sqlite3.Connection) -> None:
            self._conn = conn

        def execute(self, sql: str, *args: Any) -> Any:
            if sql == "PRAGMA journal_mode=WAL" and refusals[0]:
                refusals[0] -= 1
                raise sqlite3.OperationalError("database is locked")
            return self._conn.execute(sql, *args)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._conn, name)

    connect = SQLiteFile._connect
    monkeypatch.setattr(SQLiteFile, "_connect", lambda self: Answering(connect(self)))
    store = SQLiteStore(tmp_path / "s.db")
    assert refusals == [0]
    store.close()
    with sqlite3.connect(tmp_path / "s.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
