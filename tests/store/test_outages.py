"""A store server that restarts or goes away: the next call after it is back succeeds, and a
call while it is away fails with a ctxpack error. A restart is simulated on the shared
servers by ending the store's own connections from the server side, as a restart does."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest

import ctxpack
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
            async with store._pool.connection() as conn:
                pid = conn.info.backend_pid
            await asyncio.to_thread(terminate_backends, url, {pid})
            await session.append({"role": "user", "content": "after the restart"})
            return [m.text for m in await session.transcript()]
        finally:
            await store.delete_session(session_id)
            await session.close()
            await store.close()

    assert asyncio.run(main()) == ["before the restart", "after the restart"]
