from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ctxpack.store import SessionStore

from .backends import BACKENDS, replica_factory


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def replicas(backend: str, tmp_path: Path) -> Iterator[Callable[[], SessionStore]]:
    """Opens store objects on one backend's data; closes them all at the end."""
    opened: list[SessionStore] = []
    factory = replica_factory(backend, tmp_path)

    def open_replica() -> SessionStore:
        store = factory()
        opened.append(store)
        return store

    yield open_replica
    for store in opened:
        store.close()


@pytest.fixture
def store(replicas: Callable[[], SessionStore]) -> SessionStore:
    return replicas()


@pytest.fixture
def session_id() -> str:
    """A session id no other test (or earlier run, on a server) uses."""
    return f"test-{uuid.uuid4().hex}"
