"""Stores and sessions made before a fork and used after it, in the parent and the children at
once (gunicorn's ``--preload``, a ``multiprocessing`` pool with the ``fork`` start method,
celery's prefork workers): every append is stored once, in each writer's order, and an append
that returned is never lost."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ctxpack import Session
from ctxpack.store import SQLiteStore, open_store

from ..forks import fork, needs_fork, succeeded
from ..threads import switching_often
from .backends import backend_url

pytestmark = needs_fork

CHILDREN = 3
PER_WRITER = 8


@pytest.fixture(autouse=True)
def frequent_switches() -> Iterator[None]:
    with switching_often():
        yield


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "redis"])
def test_a_session_opened_before_a_fork_takes_appends_from_every_process(
    backend: str, tmp_path: Path, session_id: str
) -> None:
    url = backend_url(backend, tmp_path)
    store = open_store(url)
    session = Session.open(session_id, store=store, model="gpt-4")
    session.append({"role": "user", "content": "start"})

    def writer(name: str) -> Callable[[], None]:
        def write() -> None:
            for k in range(PER_WRITER):
                session.append({"role": "user", "content": f"{name} {k}"})

        return write

    children = [fork(writer(f"child{c}")) for c in range(CHILDREN)]
    writer("parent")()
    assert all([succeeded(pid) for pid in children])
    reader_store = open_store(url)
    reader = Session.open(session_id, store=reader_store, model="gpt-4")
    texts = [m.text for m in reader.transcript()]
    assert len(texts) == 1 + (CHILDREN + 1) * PER_WRITER == len(set(texts))
    for name in ["parent", *(f"child{c}" for c in range(CHILDREN))]:
        assert [t for t in texts if t.startswith(f"{name} ")] == [
            f"{name} {k}" for k in range(PER_WRITER)
        ]
    reader_store.close()
    store.close()


@pytest.mark.parametrize("inherited", [True, False], ids=["inherited store", "own store"])
def test_an_sqlite_append_in_a_child_survives_the_parent_closing_its_store(
    tmp_path: Path, inherited: bool
) -> None:
    # The parent's connection, copied into the child, made SQLite believe that the child held
    # the parent's file locks: the parent, closing, deleted the write-ahead log under the
    # child, whose later appends returned and were lost, whichever store object it used.
    path = tmp_path / "sessions.db"
    store = SQLiteStore(path)
    store.append("s", "e0", version=0, state="{}")
    appended, closed = os.pipe(), os.pipe()

    def child() -> None:
        mine = store if inherited else SQLiteStore(path)
        mine.append("s", "e1", version=1, state="{}")
        os.write(appended[1], b"1")
        os.read(closed[0], 1)  # the parent has closed its store
        mine.append("s", "e2", version=2, state="{}")  # and the child exits without closing

    pid = fork(child)
    os.read(appended[0], 1)
    store.close()
    os.write(closed[1], b"1")
    assert succeeded(pid)
    assert SQLiteStore(path).load("s").entries == ("e0", "e1", "e2")
