"""A store leaves no connection open (on the server; on the file, for SQLite) once an event
loop that used it has ended (``asyncio.run()``) and the store is closed: the pool of the loop
closed as the loop cancelled its tasks, and so was one made after that, by a call from a
cancelled task's ``finally`` or an async generator the loop closed. The sync stores too, used
from several threads."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ctxpack.store import open_async_store, open_store
from tests.helpers import run_guarded

from .backends import connections_named, named_url, server_url
from .test_sqlite import _files_open_on

SERVERS = ("postgres", "redis")

LOOP_END_SCRIPT = """
import asyncio, sys, uuid
sys.stderr = sys.stdout  # asyncio's "Task was destroyed but it is pending!" is read too
from ctxpack.store import open_async_store
from tests.store.backends import connections_named, named_url

backend, base, mode = sys.argv[1:]
name = f"loop-end-{uuid.uuid4().hex[:12]}"
store = open_async_store(named_url(backend, base, name))
session_id = name

async def closing_writes():
    try:
        yield
    finally:
        await store.append(session_id, "last", version=0, state="{}")

async def cancelled_writes():
    try:
        await asyncio.Event().wait()
    finally:
        await store.append(session_id, "last", version=0, state="{}")

left_open = []

async def main():
    await store.load(session_id)
    if mode == "generator":
        # Left at its yield: asyncio.run() closes it after it has cancelled every task.
        left_open.append(closing_writes())
        await left_open[0].__anext__()
    elif mode == "task":
        # Cancelled by asyncio.run() with every task, the store's own among them.
        left_open.append(asyncio.ensure_future(cancelled_writes()))
        await asyncio.sleep(0)

asyncio.run(main())
print("after the loop", connections_named(backend, base, name))
asyncio.run(store.close())
print("after close", connections_named(backend, base, name))
stored = open_async_store(base)

async def read():
    entries = (await stored.load(session_id)).entries
    await stored.delete_session(session_id)
    await stored.close()
    return entries

print("stored", list(asyncio.run(read())))
"""


@pytest.mark.parametrize("backend", SERVERS)
@pytest.mark.parametrize("mode", ["plain", "generator", "task"])
def test_no_connection_is_left_open_once_the_loop_has_ended_and_the_store_is_closed(
    backend: str, mode: str
) -> None:
    # "plain": psycopg's pool stopped closing at its workers, cancelled by asyncio.run() with
    # every task, and its idle connection stayed open on the server until a garbage collection.
    # "generator", "task": the write made a new pool after the loop's was closed, which nothing
    # closed ("Task was destroyed but it is pending!"), its connection open on the server.
    out = _last_lines(LOOP_END_SCRIPT, backend, mode)
    stored = "[]" if mode == "plain" else "['last']"
    assert out == ["after the loop 0", "after close 0", f"stored {stored}"]


def _last_lines(script: str, backend: str, mode: str) -> list[str]:
    """The last three lines ``script`` prints, run on ``backend`` in ``mode``, having checked
    that asyncio destroyed no pending task (a pool's that nothing closed)."""
    code = f"import sys; sys.argv[1:] = {[backend, server_url(backend), mode]!r}\n"
    out = run_guarded(code + script)
    assert "Task was destroyed" not in out, out
    return out.splitlines()[-3:]


LOOP_GOES_ON_SCRIPT = """
import asyncio, sys, uuid
sys.stderr = sys.stdout  # asyncio's "Task was destroyed but it is pending!" is read too
from ctxpack.store import open_async_store
from tests.store.backends import connection_ids_named, connections_named, named_url

backend, base, mode = sys.argv[1:]
name = f"loop-on-{uuid.uuid4().hex[:12]}"
store = open_async_store(named_url(backend, base, name))
seen = []

async def call():
    await store.load(name)
    seen.append(connection_ids_named(backend, base, name))

def cancel_all_but(loop, here=None):
    others = [task for task in asyncio.all_tasks(loop) if task is not here]
    for task in others:
        task.cancel()
    return asyncio.gather(*others, return_exceptions=True)

if mode == "server":
    # Cancels its tasks (the store's among them), then serves on.
    async def main():
        await call()
        await cancel_all_but(asyncio.get_running_loop(), asyncio.current_task())
        for _ in range(5):
            await call()

    asyncio.run(main())
else:
    # Runs again after a round of cancellations, then shuts down as asyncio.run() would
    # without cancelling: the loop's async generators closed, then the loop.
    loop = asyncio.new_event_loop()
    loop.run_until_complete(call())
    loop.run_until_complete(cancel_all_but(loop))
    for _ in range(5):
        loop.run_until_complete(call())
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()
print("held by every call after the round", len(set.intersection(*seen[1:])))
print("after the loop", connections_named(backend, base, name))
asyncio.run(store.close())
print("after close", connections_named(backend, base, name))
"""


@pytest.mark.parametrize("backend", SERVERS)
@pytest.mark.parametrize("mode", ["server", "run again"])
def test_a_loop_that_goes_on_after_cancelling_its_tasks_shares_one_pool_again(
    backend: str, mode: str
) -> None:
    # The loop stayed marked as ending once it had cancelled the store's task: each later call
    # opened a pool of its own and closed it as it ended, a connection a call.
    assert _last_lines(LOOP_GOES_ON_SCRIPT, backend, mode) == [
        "held by every call after the round 1",
        "after the loop 0",
        "after close 0",
    ]


@pytest.mark.parametrize("backend", SERVERS)
def test_a_sync_store_used_from_several_threads_leaves_no_connection_once_closed(
    backend: str,
) -> None:
    name, base = f"loop-end-{uuid.uuid4().hex[:12]}", server_url(backend)
    store = open_store(named_url(backend, base, name))
    session_id = f"loop-end-{uuid.uuid4().hex}"
    failed: list[BaseException] = []
    start = threading.Barrier(4)

    def work(k: int) -> None:
        try:
            start.wait(30)
            store.append(f"{session_id}-{k}", "entry", version=0, state="{}")
            store.load(f"{session_id}-{k}")
        except BaseException as exc:  # read below, in the test's thread
            failed.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not failed
    for k in range(4):
        store.delete_session(f"{session_id}-{k}")
    store.close()
    assert connections_named(backend, base, name) == 0


def test_an_sqlite_store_holds_no_file_once_closed_after_its_loops_and_threads(
    tmp_path: Path,
) -> None:
    # No server to count on: the descriptors this process holds on the database file. The
    # async store runs the sync one in worker threads, one connection a thread.
    path = tmp_path / "sessions.db"
    store = open_async_store(f"sqlite:///{path}")
    left_open: list[AsyncIterator[None]] = []

    async def closing_writes() -> AsyncIterator[None]:
        try:
            yield
        finally:
            await store.append("last", "entry", version=0, state="{}")

    async def main() -> None:
        await store.append("first", "entry", version=0, state="{}")
        left_open.append(closing_writes())
        await left_open[0].__anext__()

    asyncio.run(main())
    asyncio.run(store.close())
    assert _files_open_on(path) == []
    synced = open_store(f"sqlite:///{path}")
    threads = [threading.Thread(target=synced.load, args=(name,)) for name in ("first", "last") * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert [synced.load(name).entries for name in ("first", "last")] == [("entry",)] * 2
    synced.close()
    assert _files_open_on(path) == []


def test_a_loop_ending_closes_each_pool_after_the_calls_using_it() -> None:
    # Whichever the loop cancels first, the keeper or the call, the pool is closed after the
    # call has ended (a pool closed under a write cut it mid-command); the pool a call made
    # after that, from an async generator the loop closed, is closed as that call ends.
    from ctxpack.store._loops import PerLoop

    seen: list[str] = []

    async def make() -> str:
        pool = f"pool {sum(event.startswith('made') for event in seen) + 1}"
        seen.append(f"made {pool}")
        return pool

    async def close(pool: str) -> None:
        await asyncio.sleep(0)
        seen.append(f"closed {pool}")

    pools = PerLoop(make, close)

    async def call(name: str, forever: bool = False) -> None:
        async with pools.using():
            try:
                await asyncio.sleep(3600 if forever else 0)
            finally:
                for _ in range(5):  # a call taking a while to end (a write under way)
                    await asyncio.sleep(0)
                seen.append(f"{name} ended")

    async def closing_call() -> AsyncIterator[None]:
        try:
            yield
        finally:
            await call("generator's")

    left_open: list[AsyncIterator[None]] = []

    async def main() -> None:
        calls = [asyncio.ensure_future(call(f"task {k}'s", forever=True)) for k in range(3)]
        left_open.append(closing_call())
        await left_open[0].__anext__()
        await asyncio.sleep(0.01)
        assert not any(done.done() for done in calls)

    asyncio.run(main())
    assert seen[0] == "made pool 1"
    assert sorted(seen[1:4]) == [f"task {k}'s ended" for k in range(3)]
    assert seen[4:] == ["closed pool 1", "made pool 2", "generator's ended", "closed pool 2"]


def test_a_loop_serving_on_after_cancelling_makes_one_pool_and_closes_it_as_it_ends() -> None:
    # After the round of cancellations, the calls of tasks it did not cancel share one pool
    # (each made and closed one of its own); the loop ending, asyncio.run() closes it, and a
    # task made by a cancelled one's ``finally`` (not cancelled: no keeper's round names it)
    # has its pool closed as the loop closes its async generators.
    from ctxpack.store._loops import PerLoop

    seen: list[str] = []

    async def make() -> str:
        seen.append("made")
        return f"pool {seen.count('made')}"

    async def close(pool: str) -> None:
        seen.append(f"closed {pool}")

    pools = PerLoop(make, close)
    tasks: list[asyncio.Future[None]] = []

    async def call() -> None:
        async with pools.using():
            await asyncio.sleep(0)

    async def leaves_a_call() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            tasks.append(asyncio.ensure_future(call()))

    async def main() -> None:
        await call()
        here = asyncio.current_task()
        others = [task for task in asyncio.all_tasks() if task is not here]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)
        for _ in range(5):
            await call()
        tasks.append(asyncio.ensure_future(leaves_a_call()))
        await asyncio.sleep(0)

    asyncio.run(main())
    assert seen == ["made", "closed pool 1", "made", "closed pool 2", "made", "closed pool 3"]
