"""The session store backends the tests run against, and how to reach each.

SQLite and memory need nothing. PostgreSQL and Redis are read from
``CTXPACK_TEST_POSTGRES_URL`` and ``CTXPACK_TEST_REDIS_URL`` (``.ci/services`` starts both
servers and exports them): without one, its tests skip, saying so, except under ``CI=true``,
where they fail, so that CI never passes without having run them.
"""

from __future__ import annotations

import os
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
