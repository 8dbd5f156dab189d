"""The incremental SQLite store behind :class:`~ctxpack.code.CodeIndex`: per source file, its
modification time, size, SHA-256, token count and parsed symbol units.

A refresh re-reads only files whose time or size changed and re-parses only those whose content
hash changed; deleted files leave the store. A store written by another schema or another token
counter is rebuilt.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

from pydantic import ConfigDict

from .._internal.options import FieldErrorModel
from ..errors import ConfigError
from ..tokens import TokenCounter
from ._files import language_of_path, list_files
from ._history import Commit, cached_history
from ._symbols import ParsedFile, parse_source

__all__ = ["FileStore", "RefreshStats", "check_db", "default_db_path"]

# Bump when what is stored per file changes: an index written by another version is rebuilt.
_SCHEMA = "3"

# The first bytes of every SQLite database file.
_SQLITE_HEADER = b"SQLite format 3\x00"


class RefreshStats(FieldErrorModel):
    """What :meth:`CodeIndex.refresh` did: files parsed anew, removed, and left as they were."""

    model_config = ConfigDict(frozen=True)

    parsed: int
    removed: int
    unchanged: int


def default_db_path(root: Path) -> Path:
    """Where an index lives when no ``db`` is given: the user's cache folder, one file per root."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    digest = hashlib.sha256(str(root).encode("utf-8")).hexdigest()[:16]
    return Path(cache) / "ctxpack" / "code" / f"{root.name}-{digest}.sqlite"


def check_db(db: str) -> str:
    """``db`` if it can hold an index: refused now, by name, when it is a folder or a file that
    is not an SQLite database, rather than at the first search (the index opens lazily)."""
    if db == ":memory:":
        return db
    path = Path(db)
    try:
        if path.is_dir():
            raise ConfigError(
                f"db: {db!r} is a folder; give a database file inside it, or ':memory:'"
            )
        if not path.exists():
            return db
        with path.open("rb") as file:
            header = file.read(len(_SQLITE_HEADER))
    except OSError as exc:  # a name too long, a file it may not read...
        raise ConfigError(f"db: {db!r} cannot be used: {exc}") from exc
    # An empty file is a new database to SQLite.
    if header and header != _SQLITE_HEADER:
        raise ConfigError(
            f"db: {db!r} is not an SQLite database; give a new file path, or ':memory:'"
        )
    return db


class FileStore:
    """The parsed files of one root in one SQLite file (``":memory:"`` keeps nothing on disk).

    Not thread-safe on its own: its owner serialises calls.
    """

    def __init__(self, root: Path, db: str, counter: TokenCounter) -> None:
        self.root = root
        self.db = db
        self.counter = counter
        self._conn: sqlite3.Connection | None = None
        self.parsed: dict[str, ParsedFile] = {}
        self.tokens: dict[str, int] = {}

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                if self.db != ":memory:":
                    Path(self.db).parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.db, check_same_thread=False)
                conn.execute("PRAGMA schema_version").fetchone()  # opens the file now
            except (OSError, sqlite3.Error) as exc:
                raise ConfigError(
                    f"db {self.db!r} cannot be opened as an SQLite file: {exc}; give a writable "
                    "file path, or ':memory:'"
                ) from exc
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            counter = self.counter.name
            crow = conn.execute("SELECT value FROM meta WHERE key = 'counter'").fetchone()
            if row is None or row[0] != _SCHEMA or crow is None or crow[0] != counter:
                conn.execute("DROP TABLE IF EXISTS files")
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (_SCHEMA,))
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('counter', ?)", (counter,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, mtime_ns INTEGER,"
                " size INTEGER, sha256 TEXT, tokens INTEGER, parsed TEXT)"
            )
            conn.commit()
            self._conn = conn
        return self._conn

    def close(self) -> None:
        """Close the SQLite connection (the next refresh opens it again)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def history(self) -> list[Commit] | None:
        """The root's commit history, kept in this file per ``HEAD`` (see ``_history``)."""
        return cached_history(self._connect(), self.root)

    def refresh(self) -> RefreshStats:
        """Bring :attr:`parsed` and :attr:`tokens` up to date with the files on disk."""
        conn = self._connect()
        stored = {
            row[0]: (row[1], row[2], row[3])
            for row in conn.execute("SELECT path, mtime_ns, size, sha256 FROM files")
        }
        parsed = unchanged = 0
        fresh: dict[str, ParsedFile] = {}
        tokens: dict[str, int] = {}
        for rel in list_files(self.root):
            full = self.root / rel
            try:
                stat = full.stat()
            except OSError:
                continue
            old = stored.get(rel)
            if old is not None and old[0] == stat.st_mtime_ns and old[1] == stat.st_size:
                if rel in self.parsed:
                    fresh[rel], tokens[rel] = self.parsed[rel], self.tokens[rel]
                else:
                    fresh[rel], tokens[rel] = self._load_row(conn, rel)
                unchanged += 1
                continue
            raw = full.read_bytes()
            digest = hashlib.sha256(raw).hexdigest()
            if old is not None and old[2] == digest:
                conn.execute(
                    "UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?",
                    (stat.st_mtime_ns, stat.st_size, rel),
                )
                fresh[rel], tokens[rel] = self._load_row(conn, rel)
                unchanged += 1
                continue
            fresh[rel], tokens[rel] = self._parse(conn, rel, raw, digest, stat)
            parsed += 1
        gone = set(stored) - set(fresh)
        conn.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in sorted(gone)])
        conn.commit()
        self.parsed, self.tokens = fresh, tokens
        return RefreshStats(parsed=parsed, removed=len(gone), unchanged=unchanged)

    def _parse(
        self, conn: sqlite3.Connection, rel: str, raw: bytes, digest: str, stat: os.stat_result
    ) -> tuple[ParsedFile, int]:
        text = raw.decode("utf-8", errors="replace")
        pf = parse_source(rel, language_of_path(rel) or "text", text)
        count = self.counter.count(text)
        conn.execute(
            "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)",
            (rel, stat.st_mtime_ns, stat.st_size, digest, count, pf.model_dump_json()),
        )
        return pf, count

    def _load_row(self, conn: sqlite3.Connection, rel: str) -> tuple[ParsedFile, int]:
        row = conn.execute("SELECT parsed, tokens FROM files WHERE path = ?", (rel,)).fetchone()
        return ParsedFile.model_validate_json(row[0]), int(row[1])
