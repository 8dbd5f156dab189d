"""The embedded session store (``sqlite:///PATH``): one file in WAL mode, no server.

Writers are serialised by SQLite itself (``BEGIN IMMEDIATE``), across threads and processes;
a writer waits up to the busy timeout for another one, then gets a :class:`StoreError`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from .._internal import forks
from .._internal.arguments import file_path, flag
from ..errors import ArtifactNotFoundError, StoreConflictError, StoreError
from ._base import (
    StoredSession,
    check_append,
    check_artifact,
    check_life,
    check_session_id,
    check_timeout,
    check_ttl,
    check_version,
    closed_store,
    other_life,
)

__all__ = ["SQLiteFile", "SQLiteStore"]

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS ctxpack_sessions (session_id TEXT PRIMARY KEY,"
    " version INTEGER NOT NULL, state TEXT NOT NULL, expires_at REAL, life TEXT)",
    "CREATE TABLE IF NOT EXISTS ctxpack_entries (session_id TEXT NOT NULL,"
    " seq INTEGER NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS ctxpack_artifacts (session_id TEXT NOT NULL,"
    " artifact TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY (session_id, artifact))"
    " WITHOUT ROWID",
)
TABLES = ("ctxpack_entries", "ctxpack_artifacts", "ctxpack_sessions")
# A file made before sessions had lives gets the column (NULL: no life recorded, not checked).
ADD_LIFE = "ALTER TABLE ctxpack_sessions ADD COLUMN life TEXT"


def create_tables(conn: sqlite3.Connection) -> None:
    """The store's tables, created if missing and brought to the current layout, in the
    caller's write transaction (two openers of an old file migrate it one at a time)."""
    for statement in SCHEMA:
        conn.execute(statement)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(ctxpack_sessions)")}
    if "life" not in columns:
        conn.execute(ADD_LIFE)


def database_path(path: object) -> str:
    """``path`` as the file name SQLite opens; anything but a str or a path is refused, since
    ``str()`` of it (``5``, ``None``) would quietly create a database of that name."""
    return file_path(path, "path")


def erase(conn: sqlite3.Connection, session_id: str) -> None:
    """Delete every row of the session (their bytes zeroed: ``secure_delete``); the caller
    empties the WAL once the transaction is committed (:meth:`SQLiteFile.empty_wal`)."""
    for table in TABLES:
        conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))


class SQLiteFile:
    """One SQLite database file opened the way every ctxpack store opens it: WAL, durable
    writes, a busy timeout, read-only when it cannot be written, and clear errors."""

    def __init__(self, path: str, *, url: str, timeout: float, read_only: bool) -> None:
        self.path = path
        # Absolute once, at open: a relative path would follow the process's later chdir.
        self._absolute = os.path.abspath(path)
        self.url = url
        self.timeout = check_timeout(timeout)
        self.read_only = flag(read_only, "read_only") or self._unwritable()
        # One connection per store object, under a lock: a ":memory:" database exists only in
        # its connection, and SQLite serialises writers anyway. A fork waits for it (see
        # after_fork).
        self._guard = forks.Quiesced(self.timeout)
        self._closed = False
        # In a forked child: the parent's connection is to be replaced at the next use, or
        # why it cannot be.
        self._reopen = False
        self._unusable: str | None = None
        with self.errors("open"):
            self.conn = self._open()
            self._identity = self._file_identity()
        forks.track(self)

    def _open(self) -> sqlite3.Connection:
        conn = self._connect()
        # What is deleted is overwritten with zeros, not left in the file's free pages
        # (the default of some SQLite builds only).
        conn.execute("PRAGMA secure_delete=ON")
        if self.read_only:
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        else:
            if self.path != ":memory:":
                self._into_wal(conn)
            # FULL: a write that returned survives the process being killed, and a
            # power cut.
            conn.execute("PRAGMA synchronous=FULL")
        return conn

    def _into_wal(self, conn: sqlite3.Connection) -> None:
        """Put the file in WAL mode, waiting up to the busy timeout as every other statement
        does: SQLite may answer this pragma "database is locked" at once, without its busy
        handler, while another connection to the file runs WAL recovery or, closing last,
        checkpoints and removes the log (seen with replicas opening and closing the store on
        threads)."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(0.005)

    def after_fork(self) -> None:
        """In a forked child: close the parent's connection here and open one at the next
        use. SQLite keeps its file locks per process, in memory; the copy of the parent's
        connection made the child's connections (this one's, and any other's to the file)
        believe that they held the parent's locks, so that the parent, closing, deleted the
        write-ahead log under them, and their acknowledged writes were lost."""
        busy = not self._guard.after_fork_in_child()
        if self._closed:
            return
        if self.path == ":memory:":
            # The child's own copy of the database: usable, unless a parent's thread was
            # writing it at the fork.
            if busy:
                self._unusable = forks.BUSY_STORE
            return
        if busy:
            # A parent's thread was still in a transaction with it after the busy timeout.
            forks.keep(self.conn)
        else:
            with contextlib.suppress(sqlite3.Error):
                self.conn.close()
        self._reopen = True

    def _connection(self, operation: str) -> sqlite3.Connection:
        """The connection, under the lock: opened anew in a forked child."""
        if self._closed:
            raise closed_store(self.url, operation)
        if self._reopen:
            self.conn = self._open()
            self._reopen = False
        if self._unusable is not None:
            raise StoreError(self._unusable, url=self.url, operation=operation)
        self._check_file(operation)
        return self.conn

    def _unwritable(self) -> bool:
        if self.path == ":memory:":
            return False
        try:
            return self._unwritable_file(Path(self.path))
        except OSError as exc:  # a name too long, a folder that cannot be read
            raise StoreError(
                f"the path cannot be opened: {exc.strerror or exc}", url=self.url, operation="open"
            ) from exc

    def _unwritable_file(self, target: Path) -> bool:
        if target.is_dir():
            raise StoreError(
                "the path is a folder; give a database file inside it",
                url=self.url,
                operation="open",
            )
        folder = target.parent
        if not folder.is_dir():
            raise StoreError(
                f"the folder {str(folder)!r} does not exist; create it first",
                url=self.url,
                operation="open",
            )
        if not target.exists():
            return False
        return not (os.access(folder, os.W_OK) and os.access(target, os.W_OK))

    def _file_identity(self) -> tuple[int, int] | None:
        """The file at the store's path (device, inode), ``None`` for ``:memory:`` or none."""
        if self.path == ":memory:":
            return None
        try:
            info = os.stat(self._absolute)
        except FileNotFoundError:
            return None
        return info.st_dev, info.st_ino

    def same_file(self, other: SQLiteFile) -> bool:
        """Whether ``other`` opened the database file this one did (by device and inode, as
        opened: a relative path, a symlink or a hard link to it is the same file). A
        ``:memory:`` database is its connection's own, the same as no other."""
        return self._identity is not None and self._identity == other._identity

    def _check_file(self, operation: str) -> None:
        """Refuse to go on with a file deleted or replaced since the store opened it: SQLite
        would go on writing to the deleted one, each write acknowledged and then lost, while
        every other opener of the path sees another database."""
        if self.path != ":memory:" and self._file_identity() != self._identity:
            raise StoreError(
                f"the database file {self.path!r} was deleted or replaced since this store "
                "opened it; what is written now would be lost: open the store again",
                url=self.url,
                operation=operation,
            )

    def _connect(self) -> sqlite3.Connection:
        if not self.read_only:
            return sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
        # Without write access to the folder, SQLite cannot make the WAL's shared-memory file:
        # "immutable" reads the file as it is.
        folder_writable = os.access(Path(self.path).parent, os.W_OK)
        if not folder_writable:
            self._check_no_wal()
        flags = "mode=ro" if folder_writable else "mode=ro&immutable=1"
        uri = f"file:{quote(os.path.abspath(self.path))}?{flags}"
        return sqlite3.connect(
            uri, uri=True, timeout=self.timeout, isolation_level=None, check_same_thread=False
        )

    def _check_no_wal(self) -> None:
        """Refuse to read the file alone ("immutable") when the latest writes are still in
        its WAL: the reader would be given the sessions as they were before them, silently."""
        wal = f"{self._absolute}-wal"
        try:
            waiting = os.path.getsize(wal) > 0
        except OSError:  # no WAL: every write is in the file
            return
        if waiting:
            raise StoreError(
                f"the latest writes are in {wal!r}, which a reader without write access to "
                "the folder cannot read (it would see the sessions as they were before "
                "them): give it write access to the folder, or read once the writers have "
                "closed the store (which moves them into the file)",
                url=self.url,
                operation="open",
            )

    @contextmanager
    def errors(self, operation: str) -> Iterator[None]:
        """Turn SQLite's errors into :class:`StoreError` saying what to do."""
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(self._explain(exc), url=self.url, operation=operation) from exc

    def _explain(self, exc: sqlite3.Error) -> str:
        text = str(exc)
        if "locked" in text or "busy" in text:
            return (
                f"{text}: another writer held the database for more than the {self.timeout:g} s "
                "busy timeout; retry, or open the store with a longer timeout "
                "(sqlite:///PATH?timeout=30)"
            )
        if "readonly" in text or "read-only" in text or (self.read_only and "write" in text):
            return f"{text}: the store is open read-only (the file or its folder is not writable)"
        if "not a database" in text:
            return f"{text}: {self.path!r} is not an SQLite database"
        if "no such table" in text:
            return f"{text}: {self.path!r} holds no ctxpack data"
        return text

    @contextmanager
    def transaction(self, operation: str) -> Iterator[sqlite3.Connection]:
        """One write transaction, under the lock, its errors explained."""
        if self.read_only:
            raise StoreError(
                "the store is open read-only (the file or its folder is not writable)",
                url=self.url,
                operation=operation,
            )
        with self._guard.lock, self.errors(operation):
            conn = self._connection(operation)
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def reading(self, operation: str) -> Iterator[sqlite3.Connection]:
        """One read transaction (its statements see one state), under the lock."""
        with self._guard.lock, self.errors(operation):
            conn = self._connection(operation)
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")

    def empty_wal(self, operation: str) -> None:
        """Copy the WAL into the file and truncate it, after an erasure: the WAL still holds
        the pages as they were before it, the erased texts on them, until then. Another
        connection reading or writing for longer than the busy timeout leaves it as it is
        (this is no error: the erasure is done); it is emptied at a later erasure, or when
        the last connection to the file closes."""
        if self.path == ":memory:":
            return
        with self._guard.lock, self.errors(operation):
            self._connection(operation).execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()

    def close(self) -> None:
        """Close the connection; a later call fails saying the store is closed (under the
        lock: a call in flight finishes first)."""
        with self._guard.lock:
            self._closed = True
            self.conn.close()


class SQLiteStore(forks.ProcessBound):
    """Sessions in one SQLite file, shared by the threads and processes that open it.

    Args:
        path: The database file (created if missing), or ``":memory:"`` for a store private
            to this object.
        ttl: Seconds a session is kept after its last append; ``None`` keeps it.
        timeout: Seconds a writer waits for another one before failing.
        read_only: Open for reading only (automatic when the folder or file is not writable).

    Raises:
        StoreError: the path is a folder, its folder is missing, or the file is not a database.

    Example:
        >>> store = SQLiteStore(":memory:")
        >>> store.append("u1", "entry 0", version=0, state="{}")
        >>> store.load("u1")
        StoredSession(version=1, entries=('entry 0',), state='{}')
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        ttl: float | None = None,
        timeout: float = 5.0,
        read_only: bool = False,
    ) -> None:
        self.path = database_path(path)
        self.url = f"sqlite:///{self.path}"
        self.ttl = check_ttl(ttl)
        self._db = SQLiteFile(self.path, url=self.url, timeout=timeout, read_only=read_only)
        self.timeout = self._db.timeout
        self.read_only = self._db.read_only
        if not self.read_only:
            with self._db.transaction("open") as conn:
                create_tables(conn)

    def _live_version(
        self, conn: sqlite3.Connection, session_id: str, *, life: bool = False
    ) -> tuple[int, str | None, bool]:
        """The session's version and state, or its recorded life with ``life`` (an expired
        session counts as absent), and whether it expired."""
        row = conn.execute(
            f"SELECT version, {'life' if life else 'state'}, expires_at FROM ctxpack_sessions"
            " WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        if row is None:
            return 0, None, False
        if row[2] is not None and row[2] < time.time():
            return 0, None, True
        return int(row[0]), (None if row[1] is None else str(row[1])), False

    def load(self, session_id: str, *, since: int = 0) -> StoredSession:
        check_session_id(session_id)
        check_version(since)
        with self._db.reading(f"load session {session_id!r}") as conn:
            version, state, _ = self._live_version(conn, session_id)
            rows = conn.execute(
                "SELECT entry FROM ctxpack_entries WHERE session_id = ? AND seq >= ?"
                " AND seq < ? ORDER BY seq",
                (session_id, since, version),
            ).fetchall()
        return StoredSession(version, tuple(r[0] for r in rows), state)

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
        check_session_id(session_id)
        check_append(version, entry, state, artifacts)
        check_life(life)
        with self._db.transaction(f"append to session {session_id!r}") as conn:
            actual, recorded, expired = self._live_version(conn, session_id, life=True)
            if actual != version or other_life(recorded, life):
                raise StoreConflictError(
                    url=self.url, session_id=session_id, expected=version, actual=actual
                )
            if expired:
                # A session starting again after its ttl ran out: nothing of its earlier life
                # stays.
                erase(conn, session_id)
            conn.execute(
                "INSERT INTO ctxpack_entries (session_id, seq, entry) VALUES (?, ?, ?)",
                (session_id, version, entry),
            )
            expires = None if self.ttl is None else time.time() + self.ttl
            conn.execute(
                "INSERT INTO ctxpack_sessions (session_id, version, state, expires_at, life)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET"
                " version = excluded.version, state = excluded.state,"
                " expires_at = excluded.expires_at, life = excluded.life",
                (session_id, version + 1, state, expires, life if recorded is None else recorded),
            )
            conn.executemany(
                "INSERT OR IGNORE INTO ctxpack_artifacts (session_id, artifact, text)"
                " VALUES (?, ?, ?)",
                [(session_id, ref, text) for ref, text in (artifacts or {}).items()],
            )
        if expired:
            self._db.empty_wal(f"append to session {session_id!r}")

    def put_artifact(
        self, session_id: str, artifact: str, text: str, *, life: str | None = None
    ) -> None:
        check_session_id(session_id)
        check_artifact(artifact, text)
        check_life(life)
        with self._db.transaction(f"store an artifact of session {session_id!r}") as conn:
            # Only beside the session's row (of this life, not expired), in the transaction
            # that would erase it.
            conn.execute(
                "INSERT OR IGNORE INTO ctxpack_artifacts (session_id, artifact, text)"
                " SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM ctxpack_sessions WHERE"
                " session_id = ? AND (? IS NULL OR life IS NULL OR life = ?)"
                " AND (expires_at IS NULL OR expires_at >= ?))",
                (session_id, artifact, text, session_id, life, life, time.time()),
            )

    def get_artifact(self, session_id: str, artifact: str) -> str:
        check_session_id(session_id)
        check_artifact(artifact)
        with self._db.reading(f"read an artifact of session {session_id!r}") as conn:
            row = conn.execute(
                "SELECT a.text FROM ctxpack_artifacts a LEFT JOIN ctxpack_sessions s"
                " ON s.session_id = a.session_id WHERE a.session_id = ? AND a.artifact = ?"
                " AND (s.expires_at IS NULL OR s.expires_at >= ?)",
                (session_id, artifact, time.time()),
            ).fetchone()
        if row is None:
            raise ArtifactNotFoundError(artifact, store=f"{self.url} session {session_id!r}")
        return str(row[0])

    def delete_session(self, session_id: str) -> None:
        """Erase the session: its rows, their bytes in the file and in its WAL."""
        check_session_id(session_id)
        with self._db.transaction(f"delete session {session_id!r}") as conn:
            erase(conn, session_id)
        self._db.empty_wal(f"delete session {session_id!r}")

    def purge_expired(self) -> int:
        """Erase every session whose ``ttl`` has run out (as :meth:`delete_session` does);
        return how many."""
        with self._db.transaction("purge expired sessions") as conn:
            expired = [
                r[0]
                for r in conn.execute(
                    "SELECT session_id FROM ctxpack_sessions WHERE expires_at < ?", (time.time(),)
                )
            ]
            for session_id in expired:
                erase(conn, session_id)
        if expired:
            self._db.empty_wal("purge expired sessions")
        return len(expired)

    def close(self) -> None:
        """Close the connection; the file keeps every session."""
        self._db.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"
