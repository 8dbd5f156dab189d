"""Stores and sessions made before a fork and used after it, in the parent and the children at
once (gunicorn's ``--preload``, a ``multiprocessing`` pool with the ``fork`` start method,
celery's prefork workers): every append is stored once, in each writer's order, and an append
that returned is never lost."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ctxpack import Session
from ctxpack.errors import StoreConflictError
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


def append_retrying(store: SQLiteStore, session_id: str, entry: str) -> None:
    """Append ``entry`` at the stored version, again when another writer moved it first."""
    for _ in range(1000):
        try:
            version = store.load(session_id).version
            store.append(session_id, entry, version=version, state="{}")
            return
        except StoreConflictError:
            continue
    raise AssertionError("no append went through")


def test_a_fork_while_another_thread_appends_to_an_sqlite_store(tmp_path: Path) -> None:
    # A fork that caught the other thread inside a transaction left the child a copy of the
    # connection in the middle of it: SQLite, in the child, believed the write lock taken,
    # and every append there waited out the busy timeout and failed, "database is locked".
    store = SQLiteStore(tmp_path / "sessions.db", timeout=30.0)
    stop = threading.Event()

    def keep_appending() -> None:
        while not stop.wait(0.0005):  # a pause: the children's writes are not starved
            append_retrying(store, "s", "from the thread")

    thread = threading.Thread(target=keep_appending)
    thread.start()
    try:

        def child(n: int) -> Callable[[], None]:
            return lambda: append_retrying(store, "s", f"child {n}")

        children = [fork(child(n)) for n in range(8)]
        assert all([succeeded(pid) for pid in children])
    finally:
        stop.set()
        thread.join(timeout=60)
    entries = SQLiteStore(tmp_path / "sessions.db").load("s").entries
    assert sorted(e for e in entries if e.startswith("child")) == [f"child {n}" for n in range(8)]
