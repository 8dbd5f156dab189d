"""AsyncSession mirrors Session.open name for name, on the async drivers, and serves the same
session as a Session does: the two render the same request."""

from __future__ import annotations

import asyncio
import gc
import inspect
import json
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ctxpack import AsyncSession, InvalidMessageError, Session, to_openai
from ctxpack.errors import ArtifactNotFoundError
from ctxpack.persistence import Backing
from ctxpack.store import MemoryStore, SessionStore

from ..helpers import run_guarded
from ..threads import switching_often
from .backends import backend_url
from .test_sessions import PYTEST, ROOT, turn


def test_async_session_mirrors_session_names() -> None:
    public = {n for n in dir(Session()) if not n.startswith("_")}  # attributes included
    mirrored = {n for n in dir(AsyncSession) if not n.startswith("_")}
    assert {"open", "append", "extend", "render", "transcript", "compact", "records"} <= mirrored
    assert mirrored - {"store", "session_id", "provider", "close"} <= public


@pytest.mark.parametrize("args", [((), {"counter": "cl100k_base"}), (("s",), {}), ((), {})])
def test_an_async_session_built_directly_says_how_to_open_one(
    args: tuple[tuple[Any, ...], dict[str, Any]],
) -> None:
    # Opening reads the store and must be awaited; the constructor used to fail on its own
    # private arguments ("unexpected keyword argument 'counter'").
    from ctxpack import ConfigError

    positional, options = args
    with pytest.raises(ConfigError, match=r"await AsyncSession\.open\(session_id, store="):
        AsyncSession(*positional, **options)


def test_an_async_session_and_a_session_serve_one_session(
    backend: str, tmp_path: Path, replicas: Callable[[], SessionStore], session_id: str
) -> None:
    url = backend_url(backend, tmp_path)
    sync_store = replicas()

    async def main() -> tuple[str, str, str]:
        store: Any = sync_store if backend == "memory" else url
        session = await AsyncSession.open(session_id, store=store, model="gpt-4")
        await session.extend(turn(1))
        await session.append({"role": "assistant", "content": "The token has no exp."})
        (record,) = [r for r in await session.records() if r.shortened]
        assert (await session.retrieve(record.artifact)).text == PYTEST  # type: ignore[arg-type]
        answer = await session.handle(
            {
                "id": "r1",
                "type": "function",
                "function": {
                    "name": "retrieve_original",
                    "arguments": json.dumps({"artifact": record.artifact, "lines": "1-2"}),
                },
            }
        )
        assert answer.strip()
        with pytest.raises(InvalidMessageError):
            await session.extend([{"role": "nobody", "content": "x"}])
        with pytest.raises(ArtifactNotFoundError):
            await session.retrieve("art_0000000000000000")
        rendered = json.dumps(to_openai((await session.render()).messages), sort_keys=True)
        transcript = json.dumps([m.model_dump(mode="json") for m in await session.transcript()])
        await session.close()
        return rendered, transcript, repr(session)

    rendered, transcript, shown = asyncio.run(main())
    resumed = Session.open(session_id, store=sync_store, model="gpt-4")
    assert json.dumps(to_openai(resumed.render().messages), sort_keys=True) == rendered
    assert json.dumps([m.model_dump(mode="json") for m in resumed.transcript()]) == transcript
    assert "4 messages" in shown


def test_an_async_session_says_its_window_tools_on_demand_and_counter_as_a_session_does() -> None:
    async def options() -> tuple[Any, ...]:
        managed = await AsyncSession.open(
            "w", store="memory://", model="gpt-4o-mini", window=8_000, tools_on_demand=True
        )
        plain = await AsyncSession.open("p", store="memory://", model="gpt-4")
        return (
            managed.window,
            managed.tools_on_demand,
            managed.counter,
            plain.window,
            plain.tools_on_demand,
        )

    window, on_demand, counter, no_window, off = asyncio.run(options())
    reference = Session(model="gpt-4o-mini", window=8_000)
    assert window == reference.window and on_demand is True
    assert counter is reference.counter  # the one counter that model's images need
    assert no_window is None and off is False


def test_every_method_takes_the_parameters_of_the_session_method_it_mirrors() -> None:
    # AsyncSession.retrieve took **selectors: a misspelt one failed in the worker thread with a
    # TypeError naming Session.retrieve, and its signature hid the valid names.
    def parameters(method: Any) -> list[tuple[str, Any, Any]]:
        return [(p.name, p.kind, p.default) for p in inspect.signature(method).parameters.values()]

    shared = {
        n
        for n in dir(AsyncSession)
        if not n.startswith("_")
        # records is a property of a Session, and a coroutine of an AsyncSession (it reads).
        and all(callable(getattr(cls, n, None)) for cls in (AsyncSession, Session))
    }
    assert {"retrieve", "extend", "render", "handle"} <= shared
    for name in sorted(shared):
        assert parameters(getattr(AsyncSession, name)) == parameters(getattr(Session, name)), name
    with pytest.raises(TypeError, match=r"AsyncSession\.retrieve\(\) .* 'bogus'"):
        asyncio.run(AsyncSession.retrieve(None, "art_0", bogus=1))  # type: ignore[arg-type,call-arg]
    assert all(inspect.iscoroutinefunction(getattr(AsyncSession, n)) for n in ("extend", "render"))


@pytest.mark.parametrize("messages", [None, 5, "hello", {"role": "user", "content": "hi"}])
def test_an_async_session_refuses_what_extend_is_given_as_a_session_does(messages: Any) -> None:
    # None and 5 raised a bare TypeError from list().
    async def refused() -> tuple[InvalidMessageError, int]:
        session = await AsyncSession.open("e", store="memory://", model="gpt-4")
        with pytest.raises(InvalidMessageError) as info:
            await session.extend(messages)
        return info.value, len(session)

    error, size = asyncio.run(refused())
    with pytest.raises(InvalidMessageError) as expected:
        Session(model="gpt-4").extend(messages)
    assert (str(error), size) == (str(expected.value), 0)


class _HeldFilter:
    """An output filter that holds the worker thread filtering until it is released."""

    kind = "held"

    def __init__(self) -> None:
        self.started, self.release = threading.Event(), threading.Event()

    def detect(self, output: Any, /) -> float:
        self.started.set()
        self.release.wait(10)
        return 0.0

    def extract(self, output: Any, /) -> None:
        return None


def test_a_cancelled_extend_leaves_the_session_as_the_store_has_it(
    backend: str, tmp_path: Path, replicas: Callable[[], SessionStore], session_id: str
) -> None:
    # The worker thread filtering cannot be stopped: cancelling the extend must not leave
    # its messages in the object (and not in the store), nor let another append in meanwhile.
    url = backend_url(backend, tmp_path)
    sync_store = replicas()
    held = _HeldFilter()

    async def main() -> list[str]:
        store: Any = sync_store if backend == "memory" else url
        session = await AsyncSession.open(session_id, store=store, model="gpt-4", filters=[held])
        await session.append({"role": "user", "content": "run the tests"})
        task = asyncio.create_task(session.extend(turn(1)[1:]))
        assert await asyncio.to_thread(held.started.wait, 10)
        task.cancel()
        await asyncio.sleep(0.05)
        appended = asyncio.create_task(session.append({"role": "user", "content": "status?"}))
        await asyncio.sleep(0.05)
        assert not appended.done()  # the session is not let go of while the thread runs
        held.release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        await appended
        ids = [f"{m.id} {m.text}" for m in await session.transcript()]
        await session.close()
        return ids

    ids = asyncio.run(main())
    assert ids == ["s0 run the tests", "s1 status?"]
    resumed = Session.open(session_id, store=sync_store, model="gpt-4")
    assert [f"{m.id} {m.text}" for m in resumed.transcript()] == ids


# In a process of its own: whether the collector finds the unread error before the loop
# closes depends on what else the process holds.
UNREAD_SCRIPT = """
import asyncio, gc, threading
from ctxpack import AsyncSession

started, release = threading.Event(), threading.Event()

def stage(ctx, /):
    started.set()
    release.wait(10)
    raise RuntimeError("the stage failed after the caller left")

async def main():
    session = await AsyncSession.open("c", store="memory://", model="gpt-4", pipeline=stage)
    await session.append({"role": "user", "content": "hello"})
    task = asyncio.create_task(session.render(1_000))
    assert await asyncio.to_thread(started.wait, 10)
    task.cancel()
    await asyncio.sleep(0.05)
    release.set()
    try:
        await task
    except asyncio.CancelledError:
        print("cancelled")
    await asyncio.sleep(0.05)
    await session.close()

unread = []
loop = asyncio.new_event_loop()
loop.set_exception_handler(lambda _, context: unread.append(context.get("message")))
loop.run_until_complete(main())
gc.collect()
loop.close()
print(unread)
"""


def test_a_cancelled_render_whose_thread_then_fails_leaves_no_error_unread() -> None:
    # The render's worker thread failed after the caller was cancelled: its error was never
    # read, and asyncio logged "Task exception was never retrieved" with its traceback.
    out = subprocess.run(
        [sys.executable, "-c", UNREAD_SCRIPT],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=60,
    )
    assert out.stdout.split("\n")[:2] == ["cancelled", "[]"]


# Loop steps a call is cancelled after, at most: enough for an append to reach the store and
# come back on every backend (a slower one is still cancelled at each of them).
MAX_STEPS = 3_000


@pytest.mark.parametrize("call", ["append", "transcript", "retrieve"])
def test_a_call_cancelled_at_any_step_raises_the_cancellation(
    backend: str, tmp_path: Path, replicas: Callable[[], SessionStore], session_id: str, call: str
) -> None:
    # The call is cancelled after k steps of the loop, for k = 0, 1, ... until it ends first.
    # redis-py sends each command through asyncio.wait_for, which before Python 3.12 returns
    # the result and drops a cancellation arriving as the send completes: the cancelled call
    # went on to its end as if never cancelled (under asyncio.timeout, no TimeoutError).
    url = backend_url(backend, tmp_path)
    sync_store = replicas()

    async def main() -> tuple[list[str], int]:
        store: Any = sync_store if backend == "memory" else url
        session = await AsyncSession.open(session_id, store=store, model="gpt-4")
        await session.extend(turn(1))
        artifact = next(r.artifact for r in await session.records() if r.artifact)
        calls: dict[str, Callable[[int], Any]] = {
            "append": lambda k: session.append({"role": "user", "content": f"step {k}"}),
            "transcript": lambda k: session.transcript(),
            "retrieve": lambda k: session.retrieve(artifact),
        }
        swallowed = []
        for k in range(MAX_STEPS):
            task = asyncio.ensure_future(calls[call](k))
            for _ in range(k):
                await asyncio.sleep(0)
            if task.done():
                break
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                continue
            swallowed.append(k)
        await session.append({"role": "user", "content": "after"})  # the object still works
        ids = [f"{m.id} {m.text}" for m in await session.transcript()]
        await session.close()
        return ids, len(swallowed)

    with switching_often():
        ids, swallowed = asyncio.run(main())
    assert swallowed == 0
    resumed = Session.open(session_id, store=sync_store, model="gpt-4")
    assert [f"{m.id} {m.text}" for m in resumed.transcript()] == ids
    assert len(set(ids)) == len(ids)


def log_loop_errors(logged: list[str]) -> None:
    """Have the running loop's errors nobody read (a task destroyed pending) added to
    ``logged``."""
    asyncio.get_running_loop().set_exception_handler(
        lambda _, context: logged.append(str(context.get("message")))
    )


def test_an_open_cancelled_again_and_again_still_closes_the_store_it_opened(
    backend: str, tmp_path: Path, session_id: str
) -> None:
    # A store opened from the URL is closed when the opening is cancelled, and closing it
    # took awaits a further cancellation (a task group, an anyio scope cancelling at every
    # step) interrupted: the PostgreSQL pool was left open, its tasks destroyed pending.
    url = backend_url(backend, tmp_path)
    logged: list[str] = []

    async def main() -> None:
        log_loop_errors(logged)
        k = 0
        while k < MAX_STEPS:
            task = asyncio.ensure_future(AsyncSession.open(session_id, store=url, model="gpt-4"))
            for _ in range(k):
                await asyncio.sleep(0)
            if task.done():
                await (await task).close()
                gc.collect()  # a pool nobody closed is found, its tasks destroyed pending
                return
            for _ in range(40):
                task.cancel()
                await asyncio.sleep(0)
            with pytest.raises(asyncio.CancelledError):
                await task
            k += 1 if k < 40 else k // 10
        gc.collect()

    asyncio.run(main())
    assert logged == []


def test_a_close_cancelled_at_any_step_still_closes_the_store(
    backend: str, tmp_path: Path, session_id: str
) -> None:
    # Interrupted, closing left the PostgreSQL pool open, its tasks destroyed pending.
    url = backend_url(backend, tmp_path)
    logged: list[str] = []

    async def main() -> None:
        log_loop_errors(logged)
        # From one step on: a close cancelled before it starts runs nothing to close with.
        for k in range(1, MAX_STEPS):
            session = await AsyncSession.open(session_id, store=url, model="gpt-4")
            task = asyncio.ensure_future(session.close())
            for _ in range(k):
                await asyncio.sleep(0)
            if task.done():
                gc.collect()  # a pool nobody closed is found, its tasks destroyed pending
                return
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        gc.collect()

    asyncio.run(main())
    assert logged == []


def test_an_async_session_outlives_the_event_loop_that_opened_it(
    backend: str, tmp_path: Path, replicas: Callable[[], SessionStore], session_id: str
) -> None:
    # An application running asyncio.run() per job keeps its session: tasks that waited for
    # one another on a second loop raised RuntimeError (the lock belonged to the first), an
    # original read from the store ran on the closed loop that opened the session, and the
    # store's connections were the first loop's (redis-py: "Event loop is closed").
    url = backend_url(backend, tmp_path)
    sync_store = replicas()
    store: Any = sync_store if backend == "memory" else url
    session = asyncio.run(AsyncSession.open(session_id, store=store, model="gpt-4"))

    async def job(k: int) -> tuple[list[str], str]:
        runs = [3 * k + t for t in range(3)]
        await asyncio.gather(*(session.extend(turn(n, f"{PYTEST}(run {n})\n")) for n in runs))
        first = next(r.artifact for r in await session.records() if r.artifact)
        original = await session.retrieve(first)  # not the last stored: read from the store
        return [m.text or "" for m in await session.transcript()], original.text

    for k in range(3):
        texts, original = asyncio.run(job(k))
        assert len(texts) == 9 * (k + 1)
        assert original.startswith(PYTEST[:40])
    asyncio.run(session.close())
    resumed = Session.open(session_id, store=sync_store, model="gpt-4")
    assert [m.text or "" for m in resumed.transcript()] == texts


TWO_LOOPS_SCRIPT = """
import asyncio, sys, threading
from ctxpack import AsyncSession, Session
from ctxpack.store import MemoryStore

store = MemoryStore()
session = asyncio.run(AsyncSession.open("two", store=store, model="gpt-4"))
sys.setswitchinterval(1e-6)
errors = []

def work(worker):
    async def appends():
        await asyncio.gather(*(
            session.append({"role": "user", "content": f"{worker} {k}"}) for k in range(20)
        ))
    try:
        asyncio.run(appends())
    except BaseException as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=work, args=(w,)) for w in range(3)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
texts = [m.text for m in Session.open("two", store=store, model="gpt-4").transcript()]
ids = [m.id for m in asyncio.run(session.transcript())]
print(errors, len(texts), len(set(texts)), len(ids) == len(set(ids)))
"""


def test_event_loops_of_several_threads_take_turns_on_one_async_session() -> None:
    # The tasks of each loop shared one asyncio lock across the loops: a task of one loop
    # waited on a future of another, woken from the wrong thread, and the threads hung.
    assert run_guarded(TWO_LOOPS_SCRIPT).split() == ["[]", "60", "60", "True"]


def test_an_async_session_applies_what_it_reads_in_a_worker_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Opening a long session (a server may open one per request) decoded and validated its
    # every message on the event loop, which served no one else meanwhile: 0.1 s for 2,000
    # appends, in proportion to the history.
    store = MemoryStore()
    seed = Session.open("long", store=store, model="gpt-4")
    for k in range(40):
        seed.append({"role": "user", "content": f"message {k}"})
    applied: list[tuple[threading.Thread, int]] = []
    catch_up = Backing.catch_up

    def recorded(self: Backing, session: Any, stored: Any) -> bool:
        applied.append((threading.current_thread(), len(stored.entries)))
        return catch_up(self, session, stored)

    monkeypatch.setattr(Backing, "catch_up", recorded)

    async def main() -> int:
        session = await AsyncSession.open("long", store=store, model="gpt-4")
        seed.append({"role": "user", "content": "from another replica"})
        await session.append({"role": "user", "content": "here"})
        return len(await session.transcript())

    assert asyncio.run(main()) == 42
    assert [entries for _, entries in applied if entries] == [40, 1]
    assert all(thread is not threading.main_thread() for thread, entries in applied if entries)
