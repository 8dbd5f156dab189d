"""The incremental SQLite store behind :class:`~ctxpack.code.CodeIndex`: per source file, its
modification and change times, size, SHA-256, token count, parsed symbol units, their index
terms counted and the runs of words of their string literals (analysing every word of a tree
again at each start took most of a load).

A refresh re-reads only files whose times or size changed, as git's index does, and re-parses
only those whose content hash changed; deleted files leave the store. A store written by
another schema or another token counter is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import warnings
from pathlib import Path

from pydantic import ConfigDict

from .._internal import forks
from .._internal.arguments import file_path
from .._internal.callers import caller_level
from .._internal.options import FieldErrorModel
from .._internal.paths import read_confined
from ..errors import ConfigError, StoreError, WorkspacePathError
from ..tokens import TokenCounter
from ._files import LeftOut, resolve_root, source_files
from ._history import Commit, cached_history
from ._parallel import Parsed, decoded, parse_files
from ._symbols import ParsedFile
from .terms import CountedTerms

__all__ = ["FileStore", "RefreshStats", "check_db", "default_db_path"]

# Bump when what is stored per file changes: an index written by another version is rebuilt.
_SCHEMA = "8"

# The tables of an index file (history: see _history); a file holding others is not one.
_TABLES = frozenset({"meta", "files", "history"})

# How long a writer waits for another index of the root to finish its write.
_BUSY_SECONDS = 30.0

# A file modified this close to when its row was read may have changed again within the same
# tick of the file system's clock (1 s on HFS+, 2 s on FAT; a few ms on Linux), keeping its time
# and size: git's "racily clean" entries. Such a row is checked against the content again.
_RACY_NS = 2_000_000_000

# A source file larger than this is generated or vendored (a minified bundle, a data table), not
# code a person edits; it is left out of the index, as zoekt leaves out files over 2 MiB. Parsing
# a 20 MB module took 9 s and 1.6 GB, and reading it back 8.6 s at every start.
MAX_SOURCE_BYTES = 2_000_000


class RefreshStats(FieldErrorModel):
    """What :meth:`CodeIndex.refresh` did: files parsed anew, removed, and left as they were;
    ``too_large``, the source files left out of the index for their size (over 2,000,000
    bytes: generated or vendored code); ``invalid_names``, the source files and folders (with
    a trailing ``/``) left out because their name is not valid text in the file system's
    encoding, each byte that is not UTF-8 written ``\\xNN`` (rename them to index them);
    ``unreadable``, the source files and folders left out because this process may not read
    them (the root itself is ``./``); ``hard_linked``, the source files left out because they
    have several hard links (another name may lie outside the root: copy such a file to index
    it)."""

    model_config = ConfigDict(frozen=True)

    parsed: int
    removed: int
    unchanged: int
    too_large: tuple[str, ...] = ()
    invalid_names: tuple[str, ...] = ()
    unreadable: tuple[str, ...] = ()
    hard_linked: tuple[str, ...] = ()


def default_db_path(root: Path) -> Path:
    """Where an index lives when no ``db`` is given: the user's cache folder, one file per root."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    digest = hashlib.sha256(str(root).encode("utf-8")).hexdigest()[:16]
    return Path(cache) / "ctxpack" / "code" / f"{root.name}-{digest}.sqlite"


def check_db(given: object, root: Path) -> str:
    """The index file of ``root``: ``given`` (``None``: :func:`default_db_path`) if it can hold
    an index, refused now, by name, when it is a folder or a file that is not an SQLite
    database, rather than at the first search (the index opens lazily)."""
    if given is None:
        return str(default_db_path(root))
    db = file_path(given, "db")
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
        uri = f"{path.absolute().as_uri()}?mode=ro"
    except OSError as exc:  # a name too long...
        raise ConfigError(f"db: {db!r} cannot be used: {exc}") from exc
    # Read by SQLite, never by open() and close(): a close drops every POSIX lock this process
    # holds on the file, SQLite's own included, and another process then takes itself for the
    # file's last user and deletes its write-ahead log under an index using it.
    try:
        conn = sqlite3.connect(uri, uri=True)
        try:
            conn.execute("PRAGMA schema_version")  # an empty file is a new database
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        if "not a database" in str(exc):
            raise ConfigError(
                f"db: {db!r} is not an SQLite database; give a new file path, or ':memory:'"
            ) from exc
        if "unable to open" in str(exc):  # a file it may not read...
            raise ConfigError(f"db: {db!r} cannot be used: {exc}") from exc
        # Anything else (busy, a damaged page) is the open's to report, with its own advice.
    return db


# A file's row: modification time, size, SHA-256, change time (ns), and when it was read.
_Row = tuple[int, int, str, int, int]


class FileStore:
    """The parsed files of one root in one SQLite file (``":memory:"`` keeps nothing on disk).

    Not thread-safe on its own: its owner serialises calls. The default file
    (:func:`default_db_path`) is a cache the user never chose: when it cannot be opened, read
    or written, the store goes on in memory with a warning rather than fail every search.
    """

    def __init__(
        self, root: Path, db: str, counter: TokenCounter, workers: int | None = None
    ) -> None:
        self.root = root
        self.db = db
        self.counter = counter
        self.workers = workers  # processes that parse a refresh's files (see _parallel)
        self.cache = db == str(default_db_path(root))
        self._conn: sqlite3.Connection | None = None
        self.parsed: dict[str, ParsedFile] = {}
        self.tokens: dict[str, int] = {}
        self.terms: dict[str, CountedTerms] = {}
        self.grams: dict[str, str] = {}
        # Per file in memory, the stored row its parse was read or made as.
        self._rows: dict[str, _Row] = {}
        self.changed = True
        forks.track(self)

    def after_fork(self) -> None:
        """In a forked child: close the parent's connection here, and open one at the next
        use (as a session store does, see ``SQLiteFile.after_fork``: its copy made SQLite
        lose the child's writes to the file). A ``":memory:"`` database is the child's copy."""
        if self._conn is None or self.db == ":memory:":
            return
        if self._conn.in_transaction:
            forks.keep(self._conn)  # a parent's thread was writing with it
        else:
            self._conn.close()
        self._conn = None

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                if self.db != ":memory:":
                    Path(self.db).parent.mkdir(parents=True, exist_ok=True)
                # Builders of one root share its file: a writer waits for another's short
                # write, and readers never block it (WAL).
                conn = sqlite3.connect(self.db, check_same_thread=False, timeout=_BUSY_SECONDS)
                try:
                    self._schema(conn)  # refused before WAL mode is set on someone's file
                except ConfigError:
                    conn.close()
                    raise
            except (OSError, sqlite3.Error) as exc:
                hint = _DAMAGED_HINT if _damaged(exc) else "give a writable file path"
                raise ConfigError(
                    f"db {self.db!r} cannot be opened as an SQLite file: {exc}; {hint}, or "
                    "':memory:'"
                ) from exc
            try:
                self._prepare(conn)
            except BaseException as exc:
                conn.close()
                if isinstance(exc, sqlite3.Error):
                    raise _failed(self.db, "open the code index", exc) from exc
                raise
            self._conn = conn
        return self._conn

    def _schema(self, conn: sqlite3.Connection) -> str | None:
        """The index schema ``conn``'s file holds (``None``: a new file), or the error saying
        it is someone else's database, whose tables are not the index's to drop."""
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        schema = None
        if "meta" in tables:
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            schema = row[0] if row else None
        if tables and (schema is None or not tables <= _TABLES):
            raise ConfigError(
                f"db {self.db!r} is another application's SQLite database (tables: "
                f"{', '.join(sorted(tables)[:5])}); give a new file path, or ':memory:'"
            )
        return schema

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """Make ``conn``'s file an index of this schema and counter, rebuilt if it is another's:
        checked again and made under the write lock, as another builder may be making it."""
        if self.db != ":memory:":
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("BEGIN IMMEDIATE")
        try:
            schema = self._schema(conn)
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            crow = conn.execute("SELECT value FROM meta WHERE key = 'counter'").fetchone()
            counter = self.counter.name
            if schema != _SCHEMA or crow is None or crow[0] != counter:
                conn.execute("DROP TABLE IF EXISTS files")
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (_SCHEMA,))
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('counter', ?)", (counter,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, mtime_ns INTEGER,"
                " size INTEGER, sha256 TEXT, ctime_ns INTEGER, read_ns INTEGER, tokens INTEGER,"
                " parsed TEXT, terms TEXT, grams TEXT)"
            )
            conn.commit()
        except BaseException:
            conn.rollback()
            raise

    def close(self) -> None:
        """Close the SQLite connection (the next refresh opens it again)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def history(self) -> list[Commit] | None:
        """The root's commit history, kept in this file per ``HEAD`` (see ``_history``)."""
        return cached_history(self._connect(), self.root)

    def refresh(self) -> RefreshStats:
        """Bring :attr:`parsed` and :attr:`tokens` up to date with the files on disk.

        Files are read and parsed first, then written in one short transaction, so that
        indexes of one root sharing the file do not wait on each other's parsing.

        Raises:
            ConfigError: the root is no longer a folder (moved, deleted, a drive unmounted):
                its stored files are kept, not removed as if the tree had none.
        """
        resolve_root(self.root)
        try:
            return self._refresh_file()
        except (ConfigError, StoreError) as exc:
            if not self.cache or self.db == ":memory:":
                raise
            self._in_memory(exc)
            return self._refresh_file()

    def _in_memory(self, exc: Exception) -> None:
        """Go on with an in-memory database: the cache file ``exc`` says cannot be used."""
        hint = (
            "remove it to rebuild it"
            if _damaged(exc.__cause__)
            else "make its folder writable, set XDG_CACHE_HOME, or pass CodeIndex(root, db=...)"
        )
        warnings.warn(
            f"the code index file {self.db!r} cannot be used ({exc.__cause__ or exc}); the index "
            f"is kept in memory, so files are parsed again at each start: {hint}",
            UserWarning,
            stacklevel=caller_level(),
        )
        self.close()
        self.db = ":memory:"

    def _refresh_file(self) -> RefreshStats:
        conn = self._connect()
        started = time.time_ns()  # before any file is read: the rows' read time
        try:
            stored = self._snapshot(conn)
            if stored is None:  # rebuilt since by an index counting otherwise: ours again
                self._prepare(conn)
                stored = self._snapshot(conn) or {}
            return self._refresh(conn, started, stored)
        except sqlite3.Error as exc:
            raise _failed(self.db, "read the code index", exc) from exc
        finally:
            if conn.in_transaction:  # the snapshot of a refresh that failed
                conn.rollback()

    def _snapshot(self, conn: sqlite3.Connection) -> dict[str, _Row] | None:
        """The stored rows, in a read transaction left open: every row read during the refresh
        is of this index's counter and schema, even if an index counting otherwise rebuilds the
        file meanwhile (WAL readers see one snapshot). ``None``: the file is another's now."""
        conn.execute("BEGIN")
        if not self._ours(conn):
            conn.rollback()
            return None
        rows = conn.execute("SELECT path, mtime_ns, size, sha256, ctime_ns, read_ns FROM files")
        return {row[0]: row[1:] for row in rows}

    def _ours(self, conn: sqlite3.Connection) -> bool:
        """Whether the file holds rows of this schema and counter."""
        label = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('schema', 'counter')"))
        return label == {"schema": _SCHEMA, "counter": self.counter.name}

    def _refresh(
        self, conn: sqlite3.Connection, started: int, stored: dict[str, _Row]
    ) -> RefreshStats:
        fresh: dict[str, ParsedFile] = {}
        tokens: dict[str, int] = {}
        terms: dict[str, CountedTerms] = {}
        grams: dict[str, str] = {}
        rows: dict[str, _Row] = {}
        writes: list[tuple[str, _Row, int, str, str, str]] = []
        too_large: list[str] = []

        def known(rel: str, stat: os.stat_result) -> bool:
            row = stored.get(rel)
            return (
                row is not None
                and (row[0], row[1], row[3]) == (stat.st_mtime_ns, stat.st_size, stat.st_ctime_ns)
                and row[0] < row[4] - _RACY_NS
            )

        # Files read anew, in walk order; the ones whose content changed are parsed together
        # below (in worker processes when there are many).
        read: list[tuple[str, _Row]] = []
        unparsed: list[tuple[str, bytes]] = []
        walked: list[str] = []
        left_out = LeftOut()
        for rel, stat in source_files(self.root, known, left_out=left_out):
            if stat.st_size > MAX_SOURCE_BYTES:
                too_large.append(rel)
                continue
            walked.append(rel)
            old = stored.get(rel)
            if old is not None and known(rel, stat):
                loaded = self._loaded(conn, rel, old)
                if loaded is not None:
                    fresh[rel], tokens[rel], terms[rel], grams[rel] = loaded
                    rows[rel] = old
                    continue
            raw = _read(self.root, rel)
            if raw is None:
                continue
            digest = hashlib.sha256(raw).hexdigest()
            row = (stat.st_mtime_ns, stat.st_size, digest, stat.st_ctime_ns, started)
            read.append((rel, row))
            loaded = self._loaded(conn, rel, old) if old is not None and old[2] == digest else None
            if loaded is None:
                unparsed.append((rel, raw))
            else:
                fresh[rel], tokens[rel], terms[rel], grams[rel] = loaded
        stored_as: dict[str, tuple[str, str, str]] = {}

        def add(position: int, result: Parsed) -> None:
            rel, raw = unparsed[position]
            pf, terms[rel], grams[rel], pf_json, terms_json = result
            fresh[rel], tokens[rel] = pf, self.counter.count(decoded(raw))
            stored_as[rel] = (pf_json, terms_json, grams[rel])

        parse_files(unparsed, self.workers, add)
        for rel, row in read:
            rows[rel] = row
            writes.append((rel, row, tokens[rel], *stored_as.get(rel, ("", "", ""))))
        # In walk order, whichever way each file came (read back, or parsed).
        fresh = {rel: fresh[rel] for rel in walked if rel in fresh}
        gone = sorted(set(stored) - set(fresh))
        if conn.in_transaction:
            conn.rollback()  # the snapshot ends: a writer must see the file as it is now
        self._write(conn, writes, gone)
        parsed = sum(1 for w in writes if w[3])
        # Whether a parse in memory changed (one new, gone, or read again from the row).
        self.changed = fresh.keys() != self.parsed.keys() or any(
            pf is not self.parsed[p] for p, pf in fresh.items()
        )
        self.parsed, self.tokens, self.terms, self.grams = fresh, tokens, terms, grams
        self._rows = rows
        return RefreshStats(
            parsed=parsed,
            removed=len(gone),
            unchanged=len(fresh) - parsed,
            too_large=tuple(too_large),
            **left_out.as_fields(),
        )

    def _loaded(self, conn: sqlite3.Connection, rel: str, row: _Row) -> _Loaded | None:
        """The parse of the content ``row`` hashed: this object's own if it parsed that content
        (another index of the root may have stored a newer one since), else the row's."""
        mine = self._rows.get(rel)
        if mine is not None and mine[2] == row[2] and rel in self.parsed:
            return self.parsed[rel], self.tokens[rel], self.terms[rel], self.grams[rel]
        return self._row(conn, rel)

    def _write(
        self,
        conn: sqlite3.Connection,
        writes: list[tuple[str, _Row, int, str, str, str]],
        gone: list[str],
    ) -> None:
        """Store what a refresh found: new parses, new times of files whose content did not
        change (an empty parse), and the files deleted."""
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                # Rebuilt meanwhile by an index counting otherwise: its rows are not ours to
                # write into (this index keeps its parses in memory).
                if self._ours(conn):
                    conn.executemany(
                        "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [(rel, *row, n, *stored) for rel, row, n, *stored in writes if stored[0]],
                    )
                    conn.executemany(
                        "UPDATE files SET mtime_ns = ?, size = ?, ctime_ns = ?, read_ns = ?"
                        " WHERE path = ?",
                        [(r[0], r[1], r[3], r[4], rel) for rel, r, _, p, *_ in writes if not p],
                    )
                    conn.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in gone])
                conn.commit()
            except BaseException:
                conn.rollback()
                raise
        except sqlite3.Error as exc:
            raise _failed(self.db, "write the code index", exc) from exc

    def _row(self, conn: sqlite3.Connection, rel: str) -> _Loaded | None:
        """The parse, tokens, terms and runs of words stored for ``rel``; ``None`` when the row
        cannot be read (the file is then parsed again and the row written anew)."""
        row = conn.execute(
            "SELECT parsed, tokens, terms, grams FROM files WHERE path = ?", (rel,)
        ).fetchone()
        try:
            pf = ParsedFile.model_validate_json(row[0])
            units, whole = json.loads(row[2])
            terms: CountedTerms = ([_counted(u) for u in units], _counted(whole))
            if len(terms[0]) != len(pf.symbols) or not isinstance(row[3], str):
                return None
            return pf, int(row[1]), terms, row[3]
        except (ConfigError, TypeError, ValueError):
            return None


def _read(root: Path, rel: str) -> bytes | None:
    """A listed file's bytes, checked again as it is read (``None``: gone, unreadable, or a
    symlink out of the root took its place since the walk)."""
    try:
        return read_confined(root, rel)
    except (OSError, WorkspacePathError):
        return None


# What a file's row gives: its parse, tokens, terms and the runs of words of its literals.
_Loaded = tuple[ParsedFile, int, CountedTerms, str]


def _counted(stored: object) -> tuple[dict[str, int], int]:
    """A unit's or a file's counted terms as stored (:class:`ValueError` if they are not)."""
    if not isinstance(stored, list) or len(stored) != 2:
        raise ValueError("not counted terms")
    counts, length = stored
    if not isinstance(counts, dict) or type(length) is not int:
        raise ValueError("not counted terms")
    return counts, length


# What to do about an index file SQLite finds damaged (truncated, overwritten): it is only a
# cache of the tree, but one the user named, so it is theirs to remove.
_DAMAGED_HINT = "it is damaged: remove it to rebuild the index; or give another file path"


def _damaged(exc: BaseException | None) -> bool:
    """Whether SQLite found the file damaged (rather than busy, read-only or missing)."""
    return isinstance(exc, sqlite3.DatabaseError) and any(
        word in str(exc) for word in ("not a database", "malformed")
    )


def _failed(db: str, operation: str, exc: sqlite3.Error) -> StoreError:
    """A failure of the index's database, as the session stores name theirs."""
    busy = "locked" in str(exc) or "busy" in str(exc)
    if busy:
        hint = f"another process held it for over {_BUSY_SECONDS:.0f} s; try again"
    elif _damaged(exc):
        hint = f"{_DAMAGED_HINT}, or ':memory:'"
    else:
        hint = "give a writable file path of this index, or ':memory:'"
    return StoreError(f"{exc}; {hint}", url=db, operation=operation)
