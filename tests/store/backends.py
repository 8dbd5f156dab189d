"""The session store backends the tests run against, and how to reach each.

SQLite and memory need nothing. PostgreSQL and Redis are read from
``CTXPACK_TEST_POSTGRES_URL`` and ``CTXPACK_TEST_REDIS_URL`` (``.ci/services`` starts both
servers and exports them): without one, its tests skip, saying so, except under ``CI=true``,
where they fail, so that CI never passes without having run them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from ctxpack.store import MemoryStore, SessionStore, open_store

BACKENDS = ("memory", "sqlite", "postgres", "redis")
SERVER_URLS = {"postgres": "CTXPACK_TEST_POSTGRES_URL", "redis": "CTXPACK_TEST_REDIS_URL"}


def server_url(backend: str) -> str:
    """The URL of a server backend, or a skip (a failure in CI) when none is set."""
    variable = SERVER_URLS[backend]
    url = os.environ.get(variable)
    if url:
        return url
    reason = f"{backend} tests need a server: set {variable} (.ci/services starts one)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


def backend_url(backend: str, tmp_path: Path) -> str:
    """A URL for ``backend`` that every replica of a test can open."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'sessions.db'}"
    if backend == "memory":
        return "memory://"
    return server_url(backend)


def replica_factory(backend: str, tmp_path: Path) -> Callable[[], SessionStore]:
    """A function opening a new store object on the same data, as a replica would (memory:
    the one store, since its data cannot be shared)."""
    url = backend_url(backend, tmp_path)
    if backend == "memory":
        shared = MemoryStore()
        return lambda: shared
    return lambda: open_store(url)


def named_url(backend: str, url: str, name: str) -> str:
    """``url`` of a server backend, its connections named ``name`` on the server."""
    option = "application_name" if backend == "postgres" else "client_name"
    return f"{url}{'&' if '?' in url else '?'}{option}={name}"


def connection_ids_named(backend: str, url: str, name: str) -> set[int]:
    """The connections named ``name`` (:func:`named_url`) that the server at ``url`` lists now
    (a PostgreSQL backend's process id, a Redis client's id)."""
    if backend == "postgres":
        import psycopg

        with psycopg.connect(url, autocommit=True) as probe:
            sql = "select pid from pg_stat_activity where application_name = %s"
            return {int(row[0]) for row in probe.execute(sql, (name,)).fetchall()}
    import redis

    probe = redis.Redis.from_url(url)
    try:
        return {int(c["id"]) for c in probe.client_list() if c.get("name") == name}
    finally:
        probe.close()


def connections_named(backend: str, url: str, name: str) -> int:
    """How many connections named ``name`` (:func:`named_url`) the server at ``url`` holds,
    once it has seen the closed ones go (a backend process exits, Redis reads a closed socket,
    a moment later): polled until none, for a while."""
    for _ in range(100):
        found = len(connection_ids_named(backend, url, name))
        if not found:
            break
        threading.Event().wait(0.05)
    return found
