"""Where ctxpack keeps things that outlive a request: artifacts and whole sessions.

Two kinds of store live here:

- An **artifact store** (:class:`ArtifactStore`, :class:`SQLiteArtifactStore`) keeps originals
  that were shortened, cleared or compacted, content-addressed (:func:`artifact_id`). Stages
  and an in-memory :class:`~ctxpack.Session` use it.
- A **session store** (:class:`SessionStore`) keeps whole sessions for
  :meth:`ctxpack.Session.open`: each session's entries, state and originals, isolated from the
  others, under optimistic versioning. :func:`open_store` picks the backend from a URL:
  ``sqlite:///PATH`` (the default, no server), ``postgresql://...``, ``redis://...`` or
  ``memory://``.

The protocol a new backend implements, and its conformance check, are in
:mod:`ctxpack.store.base` and :mod:`ctxpack.store.conformance`.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ._artifacts import (
    ArtifactStore,
    SQLiteArtifactStore,
)
from ._artifacts import (
    artifact_id as artifact_id,
)
from ._artifacts import (
    check_artifact_store as check_artifact_store,
)
from ._artifacts import get_original as get_original
from ._artifacts import put_original as put_original
from ._artifacts import same_artifact_store as same_artifact_store
from ._base import (
    AsyncSessionStore,
    SessionStore,
    StoredSession,
    no_other_options,
    redact_url,
    store_options,
)
from ._base import (
    ThreadedAsyncStore as ThreadedAsyncStore,
)
from ._base import check_session_id as check_session_id
from ._base import takes_life as takes_life
from ._memory import MemoryStore
from ._sqlite import SQLiteStore

__all__ = [
    "ArtifactStore",
    "AsyncSessionStore",
    "MemoryStore",
    "SQLiteArtifactStore",
    "SQLiteStore",
    "SessionStore",
    "StoredSession",
    "open_async_store",
    "open_store",
]

SCHEMES = ("sqlite", "postgresql", "postgres", "redis", "rediss", "memory")


def _scheme(url: object) -> str:
    if not isinstance(url, str):
        raise ConfigError(f"a store URL is a str, got {type(url).__name__}")
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme not in SCHEMES:
        raise ConfigError(
            f"unknown store URL {redact_url(url)!r}: use sqlite:///PATH, postgresql://..., "
            "redis://... or memory://"
        )
    return scheme


def _sqlite_path(url: str) -> str:
    rest = url.split("://", 1)[1].split("?", 1)[0]
    if rest in ("", "/", "/:memory:"):
        return ":memory:"
    if not rest.startswith("/"):
        raise ConfigError(
            f"store URL {url!r}: a SQLite URL is sqlite:///relative/path.db or "
            "sqlite:////absolute/path.db"
        )
    return rest[1:]


def _read_only(url: str, value: str) -> bool:
    if value.lower() in ("1", "true", "yes", "0", "false", "no"):
        return value.lower() in ("1", "true", "yes")
    raise ConfigError(
        f"store URL {redact_url(url)}: read_only={value!r} must be true or false (1, yes; 0, no)"
    )


def open_store(url: str, **options: Any) -> SessionStore:
    """The session store at ``url``, its backend chosen by the scheme.

    - ``sqlite:///PATH`` (``sqlite:////abs/path.db`` for an absolute path): one file, no
      server; options ``ttl``, ``timeout`` (seconds a writer waits for another) and
      ``read_only``.
    - ``postgresql://user:password@host:port/db``: PostgreSQL through a psycopg connection
      pool (``pip install 'ctxpack[postgres]'``); options ``ttl`` and ``pool_size``.
    - ``redis://host:port/db``: Redis (``pip install 'ctxpack[redis]'``); options ``ttl`` and
      ``prefix`` (keys start with it; ``ctxpack`` by default).
    - ``memory://``: this process's memory, a new empty store each call; option ``ttl``.

    Options come as URL query parameters (``?ttl=86400``) or keyword arguments.

    Raises:
        ConfigError: the URL is not one of these, or an option is invalid.
        StoreError: the store cannot be opened (unreachable server, a folder, not a database).

    Example:
        >>> store = open_store("memory://", ttl=3600)
        >>> store.load("user-42").version
        0
    """
    scheme = _scheme(url)
    if scheme == "memory":
        rest, settings = store_options(url, ("ttl",), options)
        no_other_options(url, rest)
        return MemoryStore(**settings)
    if scheme == "sqlite":
        names = ("ttl", "timeout", "read_only")
        rest, settings = store_options(url, names, options, text=("read_only",))
        no_other_options(url, rest)
        if isinstance(settings.get("read_only"), str):
            settings["read_only"] = _read_only(url, settings["read_only"])
        return SQLiteStore(_sqlite_path(url), **settings)
    if scheme in ("postgresql", "postgres"):
        from .postgres import PostgresStore

        return PostgresStore(url, **options)
    from .redis import RedisStore

    return RedisStore(url, **options)


def open_async_store(url: str, **options: Any) -> AsyncSessionStore:
    """:func:`open_store` for asyncio: PostgreSQL and Redis through their async drivers,
    SQLite and memory through a worker thread (:class:`ThreadedAsyncStore`)."""
    scheme = _scheme(url)
    if scheme in ("postgresql", "postgres"):
        from .postgres import AsyncPostgresStore

        return AsyncPostgresStore(url, **options)
    if scheme in ("redis", "rediss"):
        from .redis import AsyncRedisStore

        return AsyncRedisStore(url, **options)
    return ThreadedAsyncStore(open_store(url, **options))
