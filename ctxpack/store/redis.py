"""Sessions in Redis (``redis://host:port/db``), through redis-py.

A session's keys share a prefix and a hash tag, ``ctxpack:{SESSION_ID}:meta``, ``...:entries``
and ``...:artifacts``, so that a Redis Cluster keeps them on one node; with a ``ttl`` they all
expire together, the clock restarting at each append. Appends and reads are Lua scripts, each
atomic on the server. An append is durable as far as the server's persistence makes it: run
Redis with ``appendonly yes`` and ``appendfsync always`` for writes that survive a crash.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any, NamedTuple, TypeVar

from .._internal import forks
from .._internal.arguments import shown
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
    redact_url,
    store_options,
)
from ._loops import PerLoop

__all__ = ["AsyncRedisStore", "RedisStore"]

OPTIONS = ("ttl", "prefix", "timeout")
# Times a call is sent again on a new connection when its connection dropped (a restart, an
# idle connection the server closed as the call went out): every script here is safe to run
# twice (see APPEND). A timeout is not sent again: the server may still be running the call.
RETRIES = 3

# KEYS: meta, entries, artifacts. ARGV: version, entry, state, ttl in ms (0: none, the keys
# kept even if an earlier append's store gave them one), the append's token, its life ('' for
# none), then artifact id and text pairs. Returns the version found when it is not the one
# expected, or the session is in another life than the append's (recorded at its first
# append, or at the first that carried one). The token makes the
# script safe to run twice: the driver sends it again when the connection drops before the
# reply, and a second run finding its own append stored says so, where it would otherwise
# report a conflict (and the session append its messages again).
APPEND = """
local version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
local life = redis.call('HGET', KEYS[1], 'life')
if version ~= tonumber(ARGV[1]) or (life and ARGV[6] ~= '' and life ~= ARGV[6]) then
    if version == tonumber(ARGV[1]) + 1 and redis.call('HGET', KEYS[1], 'token') == ARGV[5] then
        return -1
    end
    return version
end
if version == 0 then
    -- A session starting (again, after its ttl ran out): nothing of an earlier life stays.
    redis.call('DEL', KEYS[2], KEYS[3])
end
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], 'version', version + 1, 'state', ARGV[3], 'token', ARGV[5])
if not life and ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'life', ARGV[6]) end
for i = 7, #ARGV, 2 do redis.call('HSETNX', KEYS[3], ARGV[i], ARGV[i + 1]) end
local ttl = tonumber(ARGV[4])
for _, key in ipairs(KEYS) do
    -- Without a ttl the session is kept, whatever expiry an earlier append gave its keys.
    if ttl > 0 then redis.call('PEXPIRE', key, ttl) else redis.call('PERSIST', key) end
end
return -1
"""
# KEYS: meta, entries. ARGV: since. Returns version, state, entries.
LOAD = """
local version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
local state = redis.call('HGET', KEYS[1], 'state')
local entries = {}
if version > tonumber(ARGV[1]) then
    entries = redis.call('LRANGE', KEYS[2], ARGV[1], version - 1)
end
return {version, state, entries}
"""
# KEYS: meta, artifacts. ARGV: id, text, life ('' for none): nothing for a session in another
# life. The originals expire with the session's meta, whose clock only an append restarts: a
# full ttl from here would keep them after the session expired.
PUT_ARTIFACT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local life = redis.call('HGET', KEYS[1], 'life')
if life and ARGV[3] ~= '' and life ~= ARGV[3] then return 0 end
redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
"""


class _Common(forks.ProcessBound):
    url: str
    ttl: float | None
    prefix: str
    _raw_url: str  # for hiding its password in a driver's message

    def _configure(self, url: str, options: dict[str, Any]) -> tuple[str, float]:
        if not isinstance(url, str):
            raise ConfigError(f"a store URL is a str, got {type(url).__name__}")
        self.url = redact_url(url)
        self._raw_url = url
        address, settings = store_options(url, OPTIONS, options, text=("prefix",))
        self.ttl = settings.get("ttl")
        timeout = settings.get("timeout", 10.0)
        self.prefix = str(settings.get("prefix", "ctxpack"))
        if not self.prefix or "{" in self.prefix or "}" in self.prefix:
            raise ConfigError(
                f"prefix must be a non-empty str without braces, got {shown(self.prefix)}"
            )
        return address, timeout

    def _client_for(
        self, factory: Callable[..., Any], retry: Any, address: str, timeout: float
    ) -> Any:
        """redis-py's client for ``address``, sending a call again on a new connection when
        its connection dropped (``retry``: redis-py's ``Retry`` class, sync or asyncio; a
        client built from a URL has no retries): a URL it cannot read (no host after the
        scheme, a port that is not a number) is the caller's mistake, not the server's."""
        import redis.backoff
        import redis.connection

        backoff = redis.backoff.ExponentialBackoff(cap=1.0, base=0.05)
        policy = retry(backoff, RETRIES, supported_errors=(redis.ConnectionError,))
        # The sync client's reader, for the asyncio client too: before redis-py 8.2 the asyncio
        # one takes "redis://" (no host) as localhost rather than refuse it.
        read_url: Callable[[str], object] = redis.connection.parse_url
        try:
            read_url(address)
            return factory(
                address, socket_timeout=timeout, socket_connect_timeout=timeout, retry=policy
            )
        except ValueError as exc:
            why = hide_password(str(exc), self._raw_url)
            raise ConfigError(
                f"store URL {self.url!r} cannot be read: {why}; use "
                "redis://[:password@]host:port/db (rediss:// for TLS)"
            ) from exc

    # Set by close(): a call then fails, as the SQL stores' do, rather than have redis-py
    # connect again, with connections nothing would close.
    _closed = False

    def _keys(self, session_id: str, operation: str) -> list[str]:
        """The session's keys, for a call ``operation`` (which a closed store's error names)."""
        if self._closed:
            raise closed_store(self.url, operation)
        # The hash tag {...} keeps a session's keys in one cluster slot; braces inside an id
        # would end the tag early, so they are escaped.
        tag = check_session_id(session_id).replace("{", "{{").replace("}", "}}")
        base = f"{self.prefix}:{{{tag}}}"
        return [f"{base}:meta", f"{base}:entries", f"{base}:artifacts"]

    def _ttl_ms(self) -> int:
        return 0 if self.ttl is None else max(1, int(self.ttl * 1000))

    def _append_args(
        self,
        version: int,
        entry: str,
        state: str,
        artifacts: Mapping[str, str] | None,
        life: str | None,
    ) -> list[Any]:
        version = check_append(version, entry, state, artifacts)
        token = secrets.token_hex(16)
        args: list[Any] = [version, entry, state, self._ttl_ms(), token, check_life(life) or ""]
        for ref, text in (artifacts or {}).items():
            args += [ref, text]
        return args

    def _after_append(self, session_id: str, version: int, found: int) -> None:
        if int(found) != -1:
            raise StoreConflictError(
                url=self.url, session_id=session_id, expected=version, actual=int(found)
            )

    @staticmethod
    def _stored(reply: Any) -> StoredSession:
        version, state, entries = reply
        return StoredSession(int(version), tuple(_text(e) for e in entries), _text_or_none(state))

    def _not_found(self, session_id: str, artifact: str) -> ArtifactNotFoundError:
        return ArtifactNotFoundError(artifact, store=f"{self.url} session {session_id!r}")

    def _wrap(self, exc: Exception, operation: str) -> StoreError:
        if self._closed:  # the call raced close(): its connection was closed under it
            return closed_store(self.url, operation)
        detail = hide_password(f"{type(exc).__name__}: {exc}", self._raw_url)
        return StoreError(detail, url=self.url, operation=operation)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r}, prefix={self.prefix!r})"


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _text_or_none(value: Any) -> str | None:
    return None if value is None else _text(value)


class RedisStore(_Common):
    """Sessions in Redis; safe under threads (redis-py's connection pool).

    Args:
        url: ``redis://[:password@]host:port/db`` (``rediss://`` for TLS).
        ttl: Seconds a session's keys live after its last append; ``None`` keeps them.
        prefix: What every key starts with.
        timeout: Seconds to wait for the server.

    Raises:
        StoreError: redis-py is missing, or the server cannot be reached.
    """

    def __init__(self, url: str, **options: Any) -> None:
        address, timeout = self._configure(url, options)
        try:
            import redis
            import redis.retry
        except ImportError:
            raise missing_driver("redis", "redis", url) from None
        self._errors_from = redis.RedisError
        with self._errors("open"):
            self._client = self._client_for(
                redis.Redis.from_url, redis.retry.Retry, address, timeout
            )
            self._client.ping()
        self._append = self._client.register_script(APPEND)
        self._load = self._client.register_script(LOAD)
        self._put = self._client.register_script(PUT_ARTIFACT)

    @contextmanager
    def _errors(self, operation: str) -> Iterator[None]:
        try:
            yield
        except self._errors_from as exc:
            raise self._wrap(exc, operation) from exc
        finally:
            if self._closed:
                # redis-py connects again after close(): a call racing it, or one whose
                # connection close() cut, opened a socket it has just put back in the pool.
                # Each such call, its connection back, closes the idle ones as it ends: the
                # last to end leaves none.
                self._client.connection_pool.disconnect(inuse_connections=False)

    def load(self, session_id: str, *, since: int = 0) -> StoredSession:
        operation = f"load session {session_id!r}"
        keys = self._keys(session_id, operation)
        with self._errors(operation):
            return self._stored(self._load(keys=keys[:2], args=[check_version(since)]))

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
        operation = f"append to session {session_id!r}"
        keys = self._keys(session_id, operation)
        args = self._append_args(version, entry, state, artifacts, life)
        with self._errors(operation):
            found = self._append(keys=keys, args=args)
        self._after_append(session_id, version, found)

    def put_artifact(
        self, session_id: str, artifact: str, text: str, *, life: str | None = None
    ) -> None:
        check_artifact(artifact, text)
        operation = f"store an artifact of session {session_id!r}"
        meta, _, artifacts = self._keys(session_id, operation)
        args = [artifact, text, check_life(life) or ""]
        with self._errors(operation):
            self._put(keys=[meta, artifacts], args=args)

    def get_artifact(self, session_id: str, artifact: str) -> str:
        check_artifact(artifact)
        operation = f"read an artifact of session {session_id!r}"
        _, _, artifacts = self._keys(session_id, operation)
        with self._errors(operation):
            text = self._client.hget(artifacts, artifact)
        if text is None:
            raise self._not_found(session_id, artifact)
        return _text(text)

    def delete_session(self, session_id: str) -> None:
        operation = f"delete session {session_id!r}"
        keys = self._keys(session_id, operation)
        with self._errors(operation):
            self._client.delete(*keys)

    def close(self) -> None:
        """Close the connections; the server keeps every session (until its ttl). A call
        made after it fails with a :class:`StoreError`."""
        self._closed = True
        self._client.close()


_T = TypeVar("_T")


async def _cancellable(call: Awaitable[_T]) -> _T:
    """``call`` (a command) awaited in a task of its own, so that a cancellation reaches the
    caller: redis-py sends each command through ``asyncio.wait_for``, which before Python 3.12
    returns the result and drops a cancellation arriving as the send completes (the cancelled
    call went on to its end, and ``asyncio.timeout`` raised nothing). Cancelled, the command
    is cancelled too and waited for, so that its connection is back in the pool first."""
    work = asyncio.ensure_future(call)
    try:
        await asyncio.wait([work])  # cancelling this wait leaves the command running
    except asyncio.CancelledError:
        work.cancel()
        while not work.done():
            with suppress(asyncio.CancelledError):
                await asyncio.wait([work])
        if not work.cancelled():
            work.exception()  # read: asyncio logs an error nobody reads
        raise
    return work.result()


class _Client(NamedTuple):
    """An event loop's redis-py client and the scripts registered on it."""

    redis: Any
    append: Any
    load: Any
    put: Any


class AsyncRedisStore(_Common):
    """:class:`RedisStore` for asyncio, on ``redis.asyncio``."""

    def __init__(self, url: str, **options: Any) -> None:
        address, timeout = self._configure(url, options)
        try:
            import redis
            import redis.asyncio
            import redis.asyncio.retry
        except ImportError:
            raise missing_driver("redis", "redis", url) from None
        self._errors_from = redis.RedisError
        self._address, self._timeout = address, timeout
        self._made()  # a URL redis-py cannot read is refused here, not at the first call
        # One client per event loop: its connections serve the loop they were opened in.
        self._clients: PerLoop[_Client] = PerLoop(self._client_here, lambda c: c.redis.aclose())

    def _made(self) -> Any:
        import redis.asyncio
        import redis.asyncio.retry

        retry = redis.asyncio.retry.Retry
        return self._client_for(redis.asyncio.Redis.from_url, retry, self._address, self._timeout)

    async def _client_here(self) -> _Client:
        client = self._made()
        scripts = (client.register_script(script) for script in (APPEND, LOAD, PUT_ARTIFACT))
        return _Client(client, *scripts)

    async def _sent(self, operation: str, command: Callable[[_Client], Awaitable[_T]]) -> _T:
        """``command`` sent on the running loop's client, its errors ctxpack's."""
        client: _Client | None = None
        try:
            async with self._clients.using() as client:
                return await _cancellable(command(client))
        except self._errors_from as exc:
            raise self._wrap(exc, operation) from exc
        finally:
            await self._let_go(client)

    async def _let_go(self, client: _Client | None) -> None:
        """Close what a call ending after :meth:`close` opened: redis-py connects again on a
        closed client (a call racing close(), or one whose connection close() cut, back in
        the pool connected), and a call that passed its check before close() made this loop
        a new client. Each call does so as it ends: the last to end leaves none."""
        if self._closed:
            await self._clients.close_here()
        if client is not None and self._clients.here() is not client:
            await client.redis.connection_pool.disconnect(inuse_connections=False)

    async def open(self) -> None:
        """Check that the server answers; after :meth:`close`, open the store again."""
        self._closed = False
        await self._sent("open", lambda client: client.redis.ping())

    async def load(self, session_id: str, *, since: int = 0) -> StoredSession:
        operation = f"load session {session_id!r}"
        keys = self._keys(session_id, operation)
        args = [check_version(since)]
        reply = await self._sent(operation, lambda client: client.load(keys=keys[:2], args=args))
        return self._stored(reply)

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
        operation = f"append to session {session_id!r}"
        keys = self._keys(session_id, operation)
        args = self._append_args(version, entry, state, artifacts, life)
        found = await self._sent(operation, lambda client: client.append(keys=keys, args=args))
        self._after_append(session_id, version, found)

    async def put_artifact(
        self, session_id: str, artifact: str, text: str, *, life: str | None = None
    ) -> None:
        check_artifact(artifact, text)
        operation = f"store an artifact of session {session_id!r}"
        meta, _, artifacts = self._keys(session_id, operation)
        args = [artifact, text, check_life(life) or ""]
        await self._sent(operation, lambda client: client.put(keys=[meta, artifacts], args=args))

    async def get_artifact(self, session_id: str, artifact: str) -> str:
        check_artifact(artifact)
        operation = f"read an artifact of session {session_id!r}"
        _, _, artifacts = self._keys(session_id, operation)
        text = await self._sent(operation, lambda client: client.redis.hget(artifacts, artifact))
        if text is None:
            raise self._not_found(session_id, artifact)
        return _text(text)

    async def delete_session(self, session_id: str) -> None:
        operation = f"delete session {session_id!r}"
        keys = self._keys(session_id, operation)
        await self._sent(operation, lambda client: client.redis.delete(*keys))

    async def close(self) -> None:
        """As :meth:`RedisStore.close`, for the client of the event loop it is awaited in;
        each other loop with a client closes its own when it next runs. :meth:`open` opens the
        store again."""
        self._closed = True
        await self._clients.close_everywhere()
