"""A store server that restarts or goes away: the next call after it is back succeeds, and a
call while it is away fails with a ctxpack error. A restart is simulated on the shared
servers by ending the store's own connections from the server side, as a restart does."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any

import pytest

import ctxpack
from ctxpack.errors import StoreError
from ctxpack.store import open_async_store, open_store

from .backends import server_url


def terminate_backends(url: str, pids: set[int]) -> None:
    """End the server processes of ``pids`` as a restart would (AdminShutdown), and wait,
    bounded, until the server no longer lists them."""
    psycopg = pytest.importorskip("psycopg")
    with psycopg.connect(url, autocommit=True) as admin:
        for pid in pids:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        for _ in range(100):
            rows = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", (list(pids),)
            ).fetchone()
            if rows is not None and rows[0] == 0:
                return
            time.sleep(0.05)
    pytest.fail(f"the server did not end backends {pids}")


def test_a_postgres_restart_does_not_fail_the_next_append() -> None:
    # The pool handed out the connection the restart had closed: the next call failed with
    # "AdminShutdown: terminating connection", once per connection the pool held.
    url = server_url("postgres")
    store: Any = open_store(url)
    session_id = f"outage-{uuid.uuid4().hex}"
    session = ctxpack.Session.open(session_id, store=store, model="gpt-4")
    try:
        session.append({"role": "user", "content": "before the restart"})
        with store._pool.connection() as conn:
            pid = conn.info.backend_pid
        terminate_backends(url, {pid})
        session.append({"role": "user", "content": "after the restart"})
        assert [m.text for m in session.transcript()] == ["before the restart", "after the restart"]
    finally:
        store.delete_session(session_id)
        session.close()
        store.close()


def test_a_postgres_restart_does_not_fail_the_next_async_append() -> None:
    url = server_url("postgres")
    store: Any = open_async_store(url)
    session_id = f"outage-{uuid.uuid4().hex}"

    async def main() -> list[str]:
        session = await ctxpack.AsyncSession.open(session_id, store=store, model="gpt-4")
        try:
            await session.append({"role": "user", "content": "before the restart"})
            async with store._pools.here().connection() as conn:
                pid = conn.info.backend_pid
            await asyncio.to_thread(terminate_backends, url, {pid})
            await session.append({"role": "user", "content": "after the restart"})
            return [m.text for m in await session.transcript()]
        finally:
            await store.delete_session(session_id)
            await session.close()
            await store.close()

    assert asyncio.run(main()) == ["before the restart", "after the restart"]


def bounded(call: Any, seconds: float = 20.0) -> Any:
    """``call()`` in a thread, failing the test instead of hanging when it does not return."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(("ok", call()))
        except BaseException as exc:  # handed to the test
            outcome.append(("error", exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if not outcome:
        pytest.fail(f"still waiting after {seconds} s")
    kind, value = outcome[0]
    if kind == "error":
        raise value
    return value


def test_an_append_waits_for_a_session_row_held_by_a_dead_client_at_most_timeout() -> None:
    # A writer whose connection died unseen by the server (a partition, a frozen VM) keeps its
    # transaction, and the session's row locked, until TCP keepalive notices (hours): the next
    # append to the session waited for it without end, whatever the store's timeout.
    psycopg = pytest.importorskip("psycopg")
    url = server_url("postgres")
    store = open_store(url, timeout=1)
    session_id = f"outage-{uuid.uuid4().hex}"
    store.append(session_id, "e0", version=0, state="s")
    dead = psycopg.connect(url)
    try:
        dead.execute(
            "SELECT 1 FROM ctxpack_sessions WHERE session_id = %s FOR UPDATE", (session_id,)
        )
        # The server gave up the wait, at the store's timeout (its lock_timeout, set per
        # transaction): the guard, far beyond it, only tells a wait without end from a slow one.
        with pytest.raises(StoreError, match="lock timeout") as caught:
            bounded(lambda: store.append(session_id, "e1", version=1, state="s"), seconds=120)
        assert isinstance(caught.value.__cause__, psycopg.errors.LockNotAvailable)
        assert caught.value.operation == f"append to session {session_id!r}"
    finally:
        dead.rollback()
        dead.close()
    store.append(session_id, "e1", version=1, state="s")  # the row is free again
    assert store.load(session_id).entries == ("e0", "e1")
    store.delete_session(session_id)
    store.close()


def test_a_ctxpack_writer_stalled_in_its_transaction_frees_the_session_row() -> None:
    # The server ends a ctxpack transaction left idle longer than the store's timeout, so that
    # the row it locked is free for the other replicas' appends.
    url = server_url("postgres")
    stalled: Any = open_store(url, timeout=0.5)
    other = open_store(url, timeout=10)
    session_id = f"outage-{uuid.uuid4().hex}"
    other.append(session_id, "e0", version=0, state="s")
    try:
        with pytest.raises(StoreError), stalled._transaction("append") as conn:
            conn.execute(
                "SELECT 1 FROM ctxpack_sessions WHERE session_id = %s FOR UPDATE", (session_id,)
            )
            bounded(lambda: other.append(session_id, "e1", version=1, state="s"))
            conn.execute("SELECT 1")  # the server ended this transaction meanwhile
        assert other.load(session_id).entries == ("e0", "e1")
    finally:
        other.delete_session(session_id)
        stalled.close()
        other.close()


def kill_redis_clients(url: str, ids: set[int]) -> None:
    """End the Redis connections ``ids`` from the server side, as a restart (or the server's
    idle ``timeout``) does."""
    redis = pytest.importorskip("redis")
    admin = redis.Redis.from_url(url)
    try:
        for client in ids:
            admin.client_kill_filter(_id=str(client))
    finally:
        admin.close()


def test_a_redis_restart_does_not_fail_the_next_async_append() -> None:
    # A call made as the server closed its connection failed with "ConnectionError:
    # Connection closed by server": redis.asyncio, built from a URL, does not send again.
    url = server_url("redis")
    store: Any = open_async_store(url)
    session_id = f"outage-{uuid.uuid4().hex}"

    async def main() -> list[str]:
        session = await ctxpack.AsyncSession.open(session_id, store=store, model="gpt-4")
        try:
            await session.append({"role": "user", "content": "before the restart"})
            pooled = store._clients.here().redis.connection_pool._available_connections
            ids = set()
            for conn in pooled:
                await conn.send_command("CLIENT", "ID")
                ids.add(int(await conn.read_response()))
            kill_redis_clients(url, ids)  # the next call comes as the server closes them
            await session.append({"role": "user", "content": "after the restart"})
            return [m.text for m in await session.transcript()]
        finally:
            await store.delete_session(session_id)
            await session.close()
            await store.close()

    assert asyncio.run(main()) == ["before the restart", "after the restart"]


def test_a_redis_append_sent_again_after_a_lost_reply_is_stored_once() -> None:
    # A connection that drops after the server ran the append, before its reply arrived: the
    # driver sends it again. The second run found the session one version on and said
    # "conflict", and the session appended its own messages again on top of themselves.
    url = server_url("redis")
    store: Any = open_store(url)
    session_id = f"outage-{uuid.uuid4().hex}"
    script = store._append
    store._append = lambda **call: (script(**call), script(**call))[1]
    session = ctxpack.Session.open(session_id, store=store, model="gpt-4")
    try:
        session.append({"role": "user", "content": "once"})
        session.append({"role": "user", "content": "and once more"})
        resumed = ctxpack.Session.open(session_id, store=open_store(url), model="gpt-4")
        assert [m.text for m in resumed.transcript()] == ["once", "and once more"]
        assert [m.text for m in session.transcript()] == ["once", "and once more"]
        resumed.close()
    finally:
        store.delete_session(session_id)
        session.close()
        store.close()
