"""Server stores fail with ctxpack errors naming the store, its password hidden: a wrong
password, a server that does not answer, a driver that is not installed."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time
import uuid
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

import ctxpack
from ctxpack.errors import ConfigError, StoreError
from ctxpack.store import StoredSession, open_async_store, open_store, redact_url
from tests.helpers import run_guarded

from .backends import server_url


def with_password(url: str, password: str) -> str:
    parts = urlsplit(url)
    user = parts.username or "ctxpack"
    host = f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
    return urlunsplit(parts._replace(netloc=f"{user}:{password}@{host}"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_wrong_postgres_password_is_said_and_not_shown() -> None:
    url = with_password(server_url("postgres"), "not-the-s3cret")
    with pytest.raises(StoreError, match="password authentication failed") as caught:
        open_store(url, timeout=5)
    assert "not-the-s3cret" not in str(caught.value)
    assert caught.value.url == redact_url(url) and caught.value.operation == "open"


@pytest.mark.parametrize("scheme", ["postgresql", "redis"])
def test_a_server_that_does_not_answer_is_a_store_error(scheme: str) -> None:
    url = f"{scheme}://user:hunter2@127.0.0.1:{free_port()}/0"
    with pytest.raises(StoreError) as caught:
        open_store(url, timeout=1)
    assert "hunter2" not in str(caught.value)
    assert f"{scheme}://user:***@127.0.0.1" in str(caught.value)


@pytest.mark.parametrize(
    ("module", "url", "extra"),
    [("psycopg", "postgresql://u:p@h/db", "postgres"), ("redis", "redis://:p@h:6379/0", "redis")],
)
def test_a_missing_driver_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, module: str, url: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # "not installed"
    if module == "psycopg":
        monkeypatch.setitem(sys.modules, "psycopg_pool", None)
    with pytest.raises(StoreError, match=rf"pip install 'ctxpack\[{extra}\]'"):
        open_store(url)
    with pytest.raises(StoreError, match=rf"pip install 'ctxpack\[{extra}\]'"):
        store = open_async_store(url)
        import asyncio

        asyncio.run(store.open())  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "url", ["redis://", "rediss://", "redis://:hunter2@h:port/0", "redis://h:99999"]
)
@pytest.mark.parametrize("opener", [open_store, open_async_store])
def test_a_redis_url_redis_py_cannot_read_is_a_config_error(opener: Any, url: str) -> None:
    # They escaped as redis-py's or urllib's bare ValueError; the URL is the caller's mistake,
    # so the error names it (its password hidden) and what a Redis URL looks like.
    pytest.importorskip("redis")
    with pytest.raises(ConfigError, match="cannot be read") as caught:
        opener(url)
    assert redact_url(url) in str(caught.value) and "hunter2" not in str(caught.value)
    assert "redis://[:password@]host:port/db" in str(caught.value)


def _counted_pools(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The pools psycopg_pool's AsyncConnectionPool makes from now on, in order."""
    psycopg_pool = pytest.importorskip("psycopg_pool")
    opened: list[Any] = []

    class CountedPool(psycopg_pool.AsyncConnectionPool):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            opened.append(self)

    monkeypatch.setattr(psycopg_pool, "AsyncConnectionPool", CountedPool)
    return opened


def test_an_async_postgres_store_first_used_by_many_tasks_at_once_opens_one_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each task used to find no pool and open its own; close() closed only the last.
    opened = _counted_pools(monkeypatch)
    store: Any = open_async_store(server_url("postgres"))

    async def main() -> None:
        await asyncio.gather(*(store.load(f"pool-{k}") for k in range(8)))
        await store.close()

    asyncio.run(main())
    assert len(opened) == 1
    assert opened[0].closed


def test_an_async_postgres_store_closed_while_its_cancelled_opening_runs_closes_its_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An AsyncSession.open cancelled while the store opened (a request's wait_for), then the
    # store closed: the opening went on, shielded, and left its pool open after close().
    opened = _counted_pools(monkeypatch)
    store: Any = open_async_store(server_url("postgres"))

    async def main() -> None:
        opening = asyncio.create_task(store.open())
        await asyncio.sleep(0)  # the opening is under way
        shared = store._pools._making[asyncio.get_running_loop()]
        opening.cancel()
        with pytest.raises(asyncio.CancelledError):
            await opening
        await store.close()
        await asyncio.wait([shared], timeout=10)  # what it left behind shows by now
        assert shared.done()

    asyncio.run(main())
    assert all(pool.closed for pool in opened)
    assert not store._pools._held


@pytest.mark.parametrize("backend", ["postgres", "redis"])
def test_an_async_store_serves_one_event_loop_after_another(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A store opened once and used by an asyncio.run() per job: redis-py's connections were
    # the first loop's ("Event loop is closed" at the next loop's first call, and at close());
    # psycopg's pool could not grow on the next loop (its workers were the first loop's
    # tasks), nor be closed from it (RuntimeError). Each loop has its own, closed with it.
    opened = _counted_pools(monkeypatch)
    store: Any = open_async_store(server_url(backend))
    session_id = f"loops-{uuid.uuid4().hex}"

    async def job(k: int) -> tuple[str, ...]:
        await asyncio.gather(*(store.load(session_id) for _ in range(4)))
        await store.append(session_id, f"entry {k}", version=k, state="{}")
        stored: StoredSession = await store.load(session_id)
        return stored.entries

    for k in range(3):
        assert asyncio.run(job(k)) == tuple(f"entry {j}" for j in range(k + 1))

    async def end() -> None:
        await store.delete_session(session_id)
        await store.close()

    asyncio.run(end())
    if backend == "postgres":
        assert len(opened) == 4
        assert all(pool.closed for pool in opened)


# psycopg's pool grows in worker tasks; here each of their connection attempts takes a second,
# so asyncio.run() ends while one is under way.
SHUTDOWN_SCRIPT = """
import asyncio, sys
import psycopg
from ctxpack.store import open_async_store

connect = psycopg.AsyncConnection.connect.__func__

async def slow_in_workers(cls, *args, **kwargs):
    if "worker" in asyncio.current_task().get_name():
        await asyncio.sleep(1)
    return await connect(cls, *args, **kwargs)

psycopg.AsyncConnection.connect = classmethod(slow_in_workers)
store = open_async_store(sys.argv[1])

async def job():
    await asyncio.gather(*(store.load("growing") for _ in range(4)))

asyncio.run(job())
asyncio.run(job())
asyncio.run(store.close())
print("ended")
"""


def test_an_event_loop_ends_while_the_postgres_pool_grows() -> None:
    # asyncio.run() cancels every task as it ends; a pool worker connecting caught the
    # cancellation and waited for its next job, and asyncio.run() waited for it forever (a CI
    # run hung here). The pool is now closed as the loop cancels its tasks, stopping them.
    try:
        out = subprocess.run(
            [sys.executable, "-c", SHUTDOWN_SCRIPT, server_url("postgres")],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("asyncio.run() did not end")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "ended\n"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        # libpq and redis-py take the password from the query too.
        (
            "postgresql://app@db:5432/chat?password=hunter2",
            "postgresql://app@db:5432/chat?password=***",
        ),
        (
            "postgresql://db/chat?user=app&PASSWORD=hunter2&sslmode=require",
            "postgresql://db/chat?user=app&PASSWORD=***&sslmode=require",
        ),
        ("redis://db:6379/0?password=hunter2", "redis://db:6379/0?password=***"),
        # A password written unescaped: the user information ends at the last "@".
        ("postgresql://app:hun@ter2@db:5432/chat", "postgresql://app:***@db:5432/chat"),
        ("postgresql://app:hun/ter2@db:5432/chat", "postgresql://app:***@db:5432/chat"),
        ("redis://:hun/ter2@db:6379/0", "redis://:***@db:6379/0"),
        ("postgresql://app:hunter2@db:5432/chat", "postgresql://app:***@db:5432/chat"),
        ("postgresql://app@db:5432/chat", "postgresql://app@db:5432/chat"),
    ],
)
def test_redact_url_hides_every_spelling_of_the_password(url: str, shown: str) -> None:
    # Each of these was shown whole or in part in the StoreError of a failed open.
    assert redact_url(url) == shown


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://ctxpack@127.0.0.1:{port}/db?password=hunter2",
        "postgresql://ctxpack:hun/ter2@127.0.0.1:{port}/db",
        "redis://:hun/ter2@127.0.0.1:{port}/0",
        "redis://:hun@ter2@127.0.0.1:{port}/0",
    ],
)
def test_a_store_that_cannot_open_never_shows_the_password(url: str) -> None:
    with pytest.raises((StoreError, ConfigError)) as caught:
        open_store(url.format(port=free_port()), timeout=1)
    assert "hunter2" not in str(caught.value) and "ter2" not in str(caught.value)


def test_an_async_postgres_store_used_after_close_fails_rather_than_open_a_pool_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A call after close() (a task still appending when the request ended and closed the
    # session) opened a new pool, which nothing would close: its connections stayed open until
    # the process exited. PostgresStore fails such a call; the async store now does too.
    opened = _counted_pools(monkeypatch)
    url = server_url("postgres")

    async def main() -> None:
        session = await ctxpack.AsyncSession.open(f"closed-{uuid.uuid4().hex}", store=url)
        await session.append({"role": "user", "content": "hi"})
        await session.close()
        with pytest.raises(StoreError, match="closed") as caught:
            await session.append({"role": "user", "content": "after close"})
        assert "load session" in str(caught.value)
        await session.close()  # twice: nothing to do
        store = session.store
        await store.open()  # an explicit opening opens it again
        await store.delete_session(session.session_id)
        await store.close()

    asyncio.run(main())
    assert len(opened) == 2
    assert all(pool.closed for pool in opened)


def test_a_redis_store_used_after_close_fails_as_the_sql_stores_do() -> None:
    # redis-py connected again in silence: a task still appending after the request closed its
    # session wrote on, with connections nothing would close.
    url = server_url("redis")
    session_id = f"closed-{uuid.uuid4().hex}"
    session = ctxpack.Session.open(session_id, store=url)
    session.append({"role": "user", "content": "hi"})
    session.close()
    with pytest.raises(StoreError, match="closed"):
        session.append({"role": "user", "content": "after close"})

    async def main() -> None:
        store = open_async_store(url)
        await store.close()
        with pytest.raises(StoreError, match="closed"):
            await store.load(session_id)
        await store.open()  # an explicit opening opens it again
        assert (await store.load(session_id)).version == 1
        await store.delete_session(session_id)
        await store.close()

    asyncio.run(main())


def _named(backend: str, name: str) -> str:
    """The server URL, its connections named ``name`` on the server."""
    parts = urlsplit(server_url(backend))
    key = "application_name" if backend == "postgres" else "client_name"
    query = f"{parts.query}&{key}={name}" if parts.query else f"{key}={name}"
    return urlunsplit(parts._replace(query=query))


def _connections(backend: str, name: str) -> int:
    """The connections named ``name`` the server holds open."""
    if backend == "postgres":
        import psycopg

        with psycopg.connect(server_url(backend)) as conn:
            listed = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
            row = conn.execute(listed, (name,)).fetchone()
            return int(row[0]) if row else 0
    import redis

    client = redis.Redis.from_url(server_url(backend))
    try:
        return sum(1 for c in client.client_list() if c.get("name") == name)
    finally:
        client.close()


def _connections_left(backend: str, name: str) -> int:
    """The connections named ``name`` still open once the server has had up to 10 s to see the
    closed ones go: PostgreSQL lists a connection until its backend process has exited, a
    moment after the client closed it. A connection nothing closes is still listed then."""
    for _ in range(200):
        if _connections(backend, name) == 0:
            break
        time.sleep(0.05)
    return _connections(backend, name)


@pytest.mark.parametrize("backend", ["postgres", "redis"])
def test_closing_an_async_store_closes_the_pools_of_its_other_event_loops(backend: str) -> None:
    # close() closed only the pool of the loop it was awaited in: another thread's loop (a
    # server's worker) kept its pool, and its connections, open for as long as it ran.
    name = f"ctxpack-{uuid.uuid4().hex[:12]}"
    store: Any = open_async_store(_named(backend, name))
    worker = asyncio.new_event_loop()
    thread = threading.Thread(target=worker.run_forever, daemon=True)
    thread.start()

    def on_worker(call: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(call, worker).result(10)

    async def use_then_close() -> int:
        await store.load("s")
        held = _connections(backend, name)
        await store.close()
        return held

    try:
        on_worker(store.load("s"))
        assert asyncio.run(use_then_close()) == 2  # one for each loop
        # The worker's loop closes its own pool as it next runs.
        assert _connections_left(backend, name) == 0
        with pytest.raises(StoreError, match="the store is closed"):
            on_worker(store.load("s"))
    finally:
        worker.call_soon_threadsafe(worker.stop)
        thread.join(10)
        worker.close()


@pytest.mark.parametrize("backend", ["postgres", "redis"])
def test_a_session_opened_on_a_closed_async_store_fails_rather_than_open_it_again(
    backend: str,
) -> None:
    # AsyncSession.open called the store's open(), which opens a closed store again: a
    # request still under way when the server closed its shared store opened a pool there,
    # which nothing would close. Session.open fails on a closed store; so does this now.
    name = f"ctxpack-{uuid.uuid4().hex[:12]}"
    store: Any = open_async_store(_named(backend, name))

    async def main() -> None:
        await store.open()
        await store.close()
        with pytest.raises(StoreError, match="the store is closed"):
            await ctxpack.AsyncSession.open("late", store=store)

    asyncio.run(main())
    assert _connections_left(backend, name) == 0


# The pool's first connection, made by a worker task, waits here until the loop cancels it:
# asyncio.run() ends while the store opens its pool.
OPENING_SCRIPT = """
import asyncio
import psycopg
from ctxpack.store import open_async_store

connect = psycopg.AsyncConnection.connect.__func__
connecting = None

async def held_in_workers(cls, *args, **kwargs):
    if "worker" in asyncio.current_task().get_name():
        connecting.set()
        await asyncio.sleep(3600)
    return await connect(cls, *args, **kwargs)

psycopg.AsyncConnection.connect = classmethod(held_in_workers)
store = open_async_store(URL)

async def job():
    global connecting
    connecting = asyncio.Event()
    opening = asyncio.ensure_future(store.open())  # left under way
    await connecting.wait()

asyncio.run(job())
print("ended")
"""


def test_an_event_loop_ends_while_the_postgres_pool_opens() -> None:
    # A pool cancelled as it opened was left open: its worker caught the cancellation of its
    # connection attempt and waited for its next job, and asyncio.run() waited for it forever.
    code = OPENING_SCRIPT.replace("URL", repr(server_url("postgres")))
    assert run_guarded(code, timeout=60) == "ended\n"
