"""Sessions in PostgreSQL (``postgresql://user:password@host:port/db``), through psycopg 3.

Each store object owns a connection pool (``pool_size`` connections at most); share one store
between the sessions of a process rather than opening one per session. An append locks its
session's row (``SELECT ... FOR UPDATE``) for the length of one short transaction, so that
replicas appending to one session are serialised by the database; a writer that finds the
version moved gets :class:`~ctxpack.errors.StoreConflictError`, which a session handles.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from .._internal import forks
from .._internal.arguments import shown
from .._internal.awaiting import to_end
from ..errors import ArtifactNotFoundError, ConfigError, StoreConflictError, StoreError
from ._base import (
    StoredSession,
    check_append,
    check_artifact,
    check_life,
    check_session_id,
    check_version,
    closed_store,
    hide_password,
    missing_driver,
    other_life,
    redact_url,
    store_options,
)
from ._loops import PerLoop

__all__ = ["AsyncPostgresStore", "PostgresStore"]

# The options ctxpack reads from the URL; the others go to libpq.
OPTIONS = ("ttl", "pool_size", "timeout")

SCHEMA = (
    # Two stores creating the tables at once would race in the catalog: one at a time.
    "SELECT pg_advisory_xact_lock(hashtext('ctxpack_session_store'))",
    # Entries, states and originals are UTF-8 bytes: PostgreSQL's text cannot hold NUL, which
    # a tool's output may.
    "CREATE TABLE IF NOT EXISTS ctxpack_sessions (session_id TEXT PRIMARY KEY,"
    " version INTEGER NOT NULL, state BYTEA NOT NULL, expires_at DOUBLE PRECISION, life TEXT)",
    # A database made before sessions had lives gets the column (NULL: none recorded, and
    # not checked); looked up first, since ALTER TABLE locks the table even when it has it.
    "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid ="
    " 'ctxpack_sessions'::regclass AND attname = 'life' AND NOT attisdropped) THEN"
    " ALTER TABLE ctxpack_sessions ADD COLUMN life TEXT; END IF; END $$",
    "CREATE TABLE IF NOT EXISTS ctxpack_entries (session_id TEXT NOT NULL,"
    " seq INTEGER NOT NULL, entry BYTEA NOT NULL, PRIMARY KEY (session_id, seq))",
    "CREATE TABLE IF NOT EXISTS ctxpack_artifacts (session_id TEXT NOT NULL,"
    " artifact TEXT NOT NULL, text BYTEA NOT NULL, PRIMARY KEY (session_id, artifact))",
)
# The session's row, created if missing, locked and read in one statement: an upsert is
# atomic where an INSERT ... DO NOTHING then a SELECT ... FOR UPDATE were not, a purge deleting
# the expired row the INSERT found while the SELECT waited for its lock (the SELECT then found
# nothing: a conflict for a version-0 append). A transaction that ends in a conflict rolls
# a created row back.
LOCK_LIFE = (
    "INSERT INTO ctxpack_sessions (session_id, version, state) VALUES (%s, 0, '\\x')"
    " ON CONFLICT (session_id) DO UPDATE SET session_id = EXCLUDED.session_id"
    " RETURNING version, expires_at, life"
)
LOCK_ROW = "SELECT version, expires_at FROM ctxpack_sessions WHERE session_id = %s FOR UPDATE"
# One statement, so one snapshot: in two (READ COMMITTED gives each its own), an erasure
# committing between them read a session's version and state without its entries. The state
# comes in the first row only.
LOAD = (
    "SELECT s.version, CASE WHEN row_number() OVER (ORDER BY e.seq) = 1 THEN s.state END,"
    " s.expires_at, e.entry FROM ctxpack_sessions s LEFT JOIN ctxpack_entries e"
    " ON e.session_id = s.session_id AND e.seq >= %s AND e.seq < s.version"
    " WHERE s.session_id = %s ORDER BY e.seq"
)
INSERT_ENTRY = "INSERT INTO ctxpack_entries (session_id, seq, entry) VALUES (%s, %s, %s)"
UPDATE_ROW = (
    "UPDATE ctxpack_sessions SET version = %s, state = %s, expires_at = %s, life = %s"
    " WHERE session_id = %s"
)
INSERT_ARTIFACT = (
    "INSERT INTO ctxpack_artifacts (session_id, artifact, text) VALUES (%s, %s, %s)"
    " ON CONFLICT DO NOTHING"
)
# put_artifact: the row's share lock first, so that an erasure (which takes it for update)
# either waits for the original and deletes it, or has deleted the row and nothing is put.
SHARE_ROW = "SELECT life, expires_at FROM ctxpack_sessions WHERE session_id = %s FOR SHARE"
GET_ARTIFACT = (
    "SELECT a.text FROM ctxpack_artifacts a LEFT JOIN ctxpack_sessions s"
    " ON s.session_id = a.session_id WHERE a.session_id = %s AND a.artifact = %s"
    " AND (s.expires_at IS NULL OR s.expires_at >= %s)"
)
DELETE = tuple(
    f"DELETE FROM {table} WHERE session_id = %s"
    for table in ("ctxpack_entries", "ctxpack_artifacts", "ctxpack_sessions")
)
# An erasure takes the session's row lock first, as an append does: deleting the entries first
# would miss the entry of an append holding the lock (not committed yet, so not seen), leave it
# behind, and take the two locks in the other order (a deadlock).
ERASE = (LOCK_ROW, *DELETE)
EXPIRED = "SELECT session_id FROM ctxpack_sessions WHERE expires_at < %s"
# A purge locks each expired row as an erasure does, and erases it only if it is still expired
# once locked: an append may have started the session again meanwhile (PostgreSQL reads the
# row again after waiting for its lock).
LOCK_EXPIRED = "SELECT 1 FROM ctxpack_sessions WHERE session_id = %s AND expires_at < %s FOR UPDATE"


def _pool_size(value: Any) -> int:
    # A URL's query gives every number as a float: 4.0 is an int, 2.5 is not.
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 1 <= value < 2**31
        or value != int(value)
    ):
        raise ConfigError(f"pool_size must be an int >= 1, got {shown(value)}")
    return int(value)


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _str(data: Any) -> str:
    return bytes(data).decode("utf-8", "surrogatepass")


def _wrap(exc: Exception, url: str, operation: str) -> StoreError:
    """``exc`` as a :class:`StoreError` for the store at ``url`` (given whole: its password is
    hidden here, in the URL and in libpq's message, which may quote a part of it)."""
    detail = hide_password(f"{type(exc).__name__}: {exc}".strip(), url)
    if type(exc).__name__ == "PoolTimeout":
        detail += " (the server is unreachable, or every pooled connection is busy)"
    return StoreError(detail, url=redact_url(url), operation=operation)


class _Common(forks.ProcessBound):
    """What the sync and async stores share: settings, names, the row's meaning."""

    url: str
    ttl: float | None
    _closed: bool

    def _wrap(self, exc: Exception, operation: str) -> StoreError:
        """``exc``, a driver's error, as a :class:`StoreError`: the store's being closed when
        the call raced its ``close()`` (the pool closed under it), else as the driver said."""
        if self._closed:
            return closed_store(self.url, operation)
        return _wrap(exc, self._raw_url, operation)

    def _configure(self, url: str, options: dict[str, Any]) -> str:
        if not isinstance(url, str):
            raise ConfigError(f"a store URL is a str, got {type(url).__name__}")
        self.url = redact_url(url)
        self._raw_url = url
        conninfo, settings = store_options(url, OPTIONS, options)
        # libpq knows postgresql:// and postgres://; the scheme is spelled its way.
        conninfo = "postgresql" + conninfo[conninfo.index(":") :]
        self.ttl = settings.get("ttl")
        self.pool_size = _pool_size(settings.get("pool_size", 10))
        self.timeout = settings.get("timeout", 10.0)
        return conninfo

    def _limits(self) -> str:
        """The statement that bounds a writing transaction's waits by ``timeout``: for a lock
        (a row another writer holds), and the server's for the client between two statements.
        A writer whose connection died unseen (a partition, a frozen VM) stayed "idle in
        transaction" holding its session's row, and every other append to the session waited
        for it without end (the server notices a dead peer only by TCP keepalive, hours)."""
        ms = max(1, round(self.timeout * 1000))
        return (
            f"SELECT set_config('lock_timeout', '{ms}', true),"
            f" set_config('idle_in_transaction_session_timeout', '{ms}', true)"
        )

    def _expires(self) -> float | None:
        return None if self.ttl is None else time.time() + self.ttl

    def _conflict(self, session_id: str, version: int, actual: int) -> StoreConflictError:
        return StoreConflictError(
            url=self.url, session_id=session_id, expected=version, actual=actual
        )

    def _to_clear(
        self, row: Any, session_id: str, version: int, life: str | None
    ) -> tuple[tuple[str, ...], str | None]:
        """What to delete before an append at ``version`` carrying ``life``, its session's row
        locked (``LOCK_LIFE``): what an expired session left, and any entry of a session at
        version 0; and the life to record. Raises the conflict when the version moved, the
        session is in another life, or the row was erased between its creation and the lock
        (the writer reads again)."""
        actual, _ = self._live(None if row is None else row[:2])
        recorded = row[2] if row is not None and actual else None
        if row is None or actual != version or other_life(recorded, life):
            raise self._conflict(session_id, version, actual)
        if actual == 0:
            return (DELETE[:2] if row[0] != 0 else DELETE[:1]), life
        return (), life if recorded is None else recorded

    @staticmethod
    def _holds(row: Any, life: str | None) -> bool:
        """Whether a session's row (``SHARE_ROW``) takes an original put in ``life``: it
        exists, unexpired (its rows wait for a purge), in that life (or one not known)."""
        live = row is not None and (row[1] is None or row[1] >= time.time())
        return live and not other_life(row[0], life)

    def _not_found(self, session_id: str, artifact: str) -> ArtifactNotFoundError:
        return ArtifactNotFoundError(artifact, store=f"{self.url} session {session_id!r}")

    @classmethod
    def _loaded(cls, rows: list[Any]) -> StoredSession:
        """The session :data:`LOAD` read: its version and state (from the first row) and the
        entries the rows hold; an expired or missing one is empty."""
        version, state = cls._live(rows[0][:3] if rows else None)
        entries = tuple(_str(row[3]) for row in rows if row[3] is not None) if version else ()
        return StoredSession(version, entries, state)

    @staticmethod
    def _live(row: Any) -> tuple[int, str | None]:
        """The version and state of a sessions row; an expired or missing one is empty."""
        if row is None or (row[-1] is not None and row[-1] < time.time()):
            return 0, None
        return int(row[0]), (_str(row[1]) if len(row) == 3 else None)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"


class PostgresStore(_Common):
    """Sessions in PostgreSQL, through a psycopg connection pool; safe under threads.

    Args:
        url: ``postgresql://user:password@host:port/db`` (libpq parameters allowed in the
            query string).
        ttl: Seconds a session is kept after its last append; ``None`` keeps it. Expired
            sessions read as empty; :meth:`purge_expired` erases them.
        pool_size: Connections the pool may open.
        timeout: Seconds to wait for a connection.

    Raises:
        StoreError: psycopg is missing, or the server cannot be reached.
    """

    def __init__(self, url: str, **options: Any) -> None:
        conninfo = self._configure(url, options)
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise missing_driver("psycopg", "postgres", url) from None
        # One plain connection first: its error says why (a wrong password, no such
        # database), where the pool's would only say that it timed out.
        try:
            psycopg.connect(conninfo, connect_timeout=max(1, int(self.timeout))).close()
        except psycopg.Error as exc:
            raise _wrap(exc, self._raw_url, "open") from exc
        self._conninfo = conninfo
        self._pool_type = ConnectionPool
        self._pool: Any = self._open_pool()
        self._closed = False
        # A forked child opens a pool of its own at its first call (see after_fork).
        self._forked_lock = threading.Lock()
        forks.track(self)
        with self._transaction("open") as conn:
            for statement in SCHEMA:
                conn.execute(statement)

    def _open_pool(self) -> Any:
        pool = self._pool_type(
            self._conninfo,
            min_size=1,
            max_size=self.pool_size,
            timeout=self.timeout,
            open=False,
            kwargs={"autocommit": True},
            # A connection the server closed while idle (a restart, a failover) is replaced
            # before use: handed out, it failed the next call, once per pooled connection.
            check=self._pool_type.check_connection,
        )
        try:
            pool.open(wait=True, timeout=self.timeout)
        except Exception as exc:
            pool.close()
            raise _wrap(exc, self._raw_url, "open") from exc
        return pool

    def after_fork(self) -> None:
        """In a forked child: leave the parent's pool alone (its connections are the parent's
        sockets: used here, two processes' messages interleaved on one, and closing them would
        close the parent's) and open one of this process at the next call."""
        self._forked_lock = threading.Lock()
        if not self._closed:
            forks.keep(self._pool)
            self._pool = None

    def _pool_here(self, operation: str) -> Any:
        if self._pool is None:
            with self._forked_lock:
                if self._closed:
                    raise closed_store(self.url, operation)
                if self._pool is None:
                    self._pool = self._open_pool()
        return self._pool

    @contextmanager
    def _transaction(self, operation: str, *, writes: bool = True) -> Iterator[Any]:
        try:
            with self._pool_here(operation).connection() as conn, conn.transaction():
                if writes:
                    conn.execute(self._limits())
                yield conn
        except (StoreError, ArtifactNotFoundError):
            raise
        except Exception as exc:
            if "psycopg" not in type(exc).__module__:
                raise
            raise self._wrap(exc, operation) from exc

    def load(self, session_id: str, *, since: int = 0) -> StoredSession:
        check_session_id(session_id)
        check_version(since)
        with self._transaction(f"load session {session_id!r}", writes=False) as conn:
            rows = conn.execute(LOAD, (since, session_id)).fetchall()
        return self._loaded(rows)

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
        with self._transaction(f"append to session {session_id!r}") as conn:
            row = conn.execute(LOCK_LIFE, (session_id,)).fetchone()
            clear, life = self._to_clear(row, session_id, version, life)
            for statement in clear:
                conn.execute(statement, (session_id,))
            conn.execute(INSERT_ENTRY, (session_id, version, _bytes(entry)))
            row_values = (version + 1, _bytes(state), self._expires(), life, session_id)
            conn.execute(UPDATE_ROW, row_values)
            if artifacts:
                with conn.cursor() as cur:
                    cur.executemany(
                        INSERT_ARTIFACT, [(session_id, k, _bytes(v)) for k, v in artifacts.items()]
                    )

    def put_artifact(
        self, session_id: str, artifact: str, text: str, *, life: str | None = None
    ) -> None:
        check_session_id(session_id)
        check_artifact(artifact, text)
        check_life(life)
        with self._transaction(f"store an artifact of session {session_id!r}") as conn:
            if self._holds(conn.execute(SHARE_ROW, (session_id,)).fetchone(), life):
                conn.execute(INSERT_ARTIFACT, (session_id, artifact, _bytes(text)))

    def get_artifact(self, session_id: str, artifact: str) -> str:
        check_session_id(session_id)
        check_artifact(artifact)
        with self._transaction(f"read an artifact of session {session_id!r}", writes=False) as conn:
            row = conn.execute(GET_ARTIFACT, (session_id, artifact, time.time())).fetchone()
        if row is None:
            raise self._not_found(session_id, artifact)
        return _str(row[0])

    def delete_session(self, session_id: str) -> None:
        check_session_id(session_id)
        with self._transaction(f"delete session {session_id!r}") as conn:
            for statement in ERASE:
                conn.execute(statement, (session_id,))

    def purge_expired(self) -> int:
        """Erase every session whose ``ttl`` has run out; return how many."""
        purged = 0
        with self._transaction("purge expired sessions") as conn:
            now = time.time()
            for (session_id,) in conn.execute(EXPIRED, (now,)).fetchall():
                # None: appended to since it was listed, it lives again.
                if conn.execute(LOCK_EXPIRED, (session_id, now)).fetchone():
                    for statement in DELETE:
                        conn.execute(statement, (session_id,))
                    purged += 1
        return purged

    def close(self) -> None:
        """Close the pool's connections; the database keeps every session."""
        with self._forked_lock:
            self._closed = True
            # None: a forked child's before its first call; the parent's pool is not its own.
            if self._pool is not None:
                self._pool.close()


class AsyncPostgresStore(_Common):
    """:class:`PostgresStore` for asyncio, on psycopg's async connection pool.

    Open it with ``await store.open()``, or let :class:`~ctxpack.AsyncSession` do it.
    """

    def __init__(self, url: str, **options: Any) -> None:
        self._conninfo = self._configure(url, options)
        self._url_for_errors = url
        # One pool per event loop: a pool serves the loop it was opened in (see PerLoop).
        self._pools: PerLoop[Any] = PerLoop(self._open, self._shut)
        # The connections each pool opened, for _shut() to close when the pool's close cannot.
        self._opened: weakref.WeakKeyDictionary[Any, weakref.WeakSet[Any]] = (
            weakref.WeakKeyDictionary()
        )
        # Set by close(): a call then fails, as PostgresStore's does, rather than open a
        # pool again that nothing would close. An explicit open() opens it again.
        self._closed = False
        forks.track(self)

    async def open(self) -> None:
        """Open the running event loop's pool and create the tables if missing (idempotent);
        after :meth:`close`, open it again."""
        self._closed = False
        async with self._pools.using():
            pass

    async def _open(self) -> Any:
        try:
            import psycopg
            from psycopg_pool import AsyncConnectionPool
        except ImportError:
            raise missing_driver("psycopg", "postgres", self._url_for_errors) from None
        try:
            conn = await psycopg.AsyncConnection.connect(
                self._conninfo, connect_timeout=max(1, int(self.timeout))
            )
            await conn.close()
        except psycopg.Error as exc:
            raise _wrap(exc, self._raw_url, "open") from exc
        opened: weakref.WeakSet[Any] = weakref.WeakSet()

        async def track(conn: Any) -> None:
            opened.add(conn)

        pool = AsyncConnectionPool(
            self._conninfo,
            min_size=1,
            max_size=self.pool_size,
            timeout=self.timeout,
            open=False,
            kwargs={"autocommit": True},
            check=AsyncConnectionPool.check_connection,  # as PostgresStore's pool
            configure=track,
        )
        self._opened[pool] = opened
        try:
            await pool.open(wait=True, timeout=self.timeout)
            async with pool.connection() as conn, conn.transaction():
                await conn.execute(self._limits())
                for statement in SCHEMA:
                    await conn.execute(statement)
        except BaseException as exc:
            # Cancelled too (an asyncio.run() ending meanwhile): a worker of the pool catches
            # the cancellation of its connection attempt and waits for its next job, so the
            # loop would wait for it forever unless the pool tells it to stop.
            closing = asyncio.ensure_future(pool.close())
            await to_end(closing)  # cancelled again, the pool is still closed
            if not closing.cancelled():
                closing.exception()  # read: the error to raise is the opening's
            if not isinstance(exc, Exception):
                raise
            raise _wrap(exc, self._raw_url, "open") from exc
        return pool

    async def _shut(self, pool: Any) -> None:
        """Close ``pool``, and each idle connection it opened if that close is cut short:
        psycopg's waits for the pool's worker tasks first, and a loop ending (``asyncio.run``)
        cancels them with every task, so the close raised their cancellation before it reached
        the idle connections, left open on the server until a garbage collection. One in use
        is closed as it comes back, the pool closed."""
        from psycopg.pq import TransactionStatus

        try:
            await pool.close()
        except asyncio.CancelledError:
            for conn in list(self._opened.get(pool, ())):
                if conn.info.transaction_status == TransactionStatus.IDLE:
                    await conn.close()
            raise

    @asynccontextmanager
    async def _transaction(self, operation: str, *, writes: bool = True) -> AsyncIterator[Any]:
        if self._closed:
            raise closed_store(self.url, operation)
        try:
            async with self._pools.using() as pool, pool.connection() as conn, conn.transaction():
                if writes:
                    await conn.execute(self._limits())
                yield conn
        except (StoreError, ArtifactNotFoundError):
            raise
        except Exception as exc:
            if "psycopg" not in type(exc).__module__:
                raise
            raise self._wrap(exc, operation) from exc

    async def load(self, session_id: str, *, since: int = 0) -> StoredSession:
        check_session_id(session_id)
        check_version(since)
        async with self._transaction(f"load session {session_id!r}", writes=False) as conn:
            rows = await (await conn.execute(LOAD, (since, session_id))).fetchall()
        return self._loaded(rows)

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
        check_session_id(session_id)
        check_append(version, entry, state, artifacts)
        check_life(life)
        async with self._transaction(f"append to session {session_id!r}") as conn:
            row = await (await conn.execute(LOCK_LIFE, (session_id,))).fetchone()
            clear, life = self._to_clear(row, session_id, version, life)
            for statement in clear:
                await conn.execute(statement, (session_id,))
            await conn.execute(INSERT_ENTRY, (session_id, version, _bytes(entry)))
            row_values = (version + 1, _bytes(state), self._expires(), life, session_id)
            await conn.execute(UPDATE_ROW, row_values)
            if artifacts:
                async with conn.cursor() as cur:
                    await cur.executemany(
                        INSERT_ARTIFACT, [(session_id, k, _bytes(v)) for k, v in artifacts.items()]
                    )

    async def put_artifact(
        self, session_id: str, artifact: str, text: str, *, life: str | None = None
    ) -> None:
        check_session_id(session_id)
        check_artifact(artifact, text)
        check_life(life)
        async with self._transaction(f"store an artifact of session {session_id!r}") as conn:
            cur = await conn.execute(SHARE_ROW, (session_id,))
            if self._holds(await cur.fetchone(), life):
                await conn.execute(INSERT_ARTIFACT, (session_id, artifact, _bytes(text)))

    async def get_artifact(self, session_id: str, artifact: str) -> str:
        check_session_id(session_id)
        check_artifact(artifact)
        async with self._transaction(
            f"read an artifact of session {session_id!r}", writes=False
        ) as conn:
            cur = await conn.execute(GET_ARTIFACT, (session_id, artifact, time.time()))
            row = await cur.fetchone()
        if row is None:
            raise self._not_found(session_id, artifact)
        return _str(row[0])

    async def delete_session(self, session_id: str) -> None:
        check_session_id(session_id)
        async with self._transaction(f"delete session {session_id!r}") as conn:
            for statement in ERASE:
                await conn.execute(statement, (session_id,))

    async def purge_expired(self) -> int:
        """As :meth:`PostgresStore.purge_expired`: erase the expired sessions, say how many."""
        purged = 0
        async with self._transaction("purge expired sessions") as conn:
            now = time.time()
            for (session_id,) in await (await conn.execute(EXPIRED, (now,))).fetchall():
                if await (await conn.execute(LOCK_EXPIRED, (session_id, now))).fetchone():
                    for statement in DELETE:
                        await conn.execute(statement, (session_id,))
                    purged += 1
        return purged

    async def close(self) -> None:
        """Close the pool of the event loop it is awaited in, and have each other loop with a
        pool close its own when it next runs; a call made after it fails with a
        :class:`StoreError`, and :meth:`open` opens the store again."""
        self._closed = True
        await self._pools.close_everywhere()

    def after_fork(self) -> None:
        """In a forked child: leave the parent's pools alone, as :class:`PostgresStore` does;
        the next call opens one of this process."""
        for pool in self._pools.forget():
            forks.keep(pool)
