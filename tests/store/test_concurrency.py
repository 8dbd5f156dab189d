"""Many writers at once: threads sharing a Session, replicas appending to one session id,
asyncio tasks, processes, and random interleavings (Hypothesis). Each message is stored once,
each writer's order is kept, and every reader renders the same request."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxpack import ArtifactNotFoundError, AsyncSession, Message, Session, to_openai
from ctxpack.store import MemoryStore, SessionStore, open_async_store

from ..threads import run_threads, switching_often
from .backends import backend_url

ROOT = Path(__file__).resolve().parents[2]
WRITERS = 6
PER_WRITER = 8


@pytest.fixture(autouse=True)
def frequent_switches() -> Iterator[None]:
    """Threads switch as often as the interpreter allows: races show up, if there are any."""
    with switching_often():
        yield


def exchange(writer: int, k: int) -> list[dict[str, Any]]:
    """Writer ``writer``'s ``k``-th append: a call and its (long, filtered) output."""
    call_id = f"w{writer}-c{k}"
    output = "\n".join(
        [f"tests/test_{writer}_{k}_{i}.py::test_ok PASSED" for i in range(40)]
        + [f"FAILED tests/test_w{writer}.py::test_{k} - KeyError", "==== 1 failed, 40 passed ===="]
    )
    return [
        {
            "role": "assistant",
            "content": f"writer {writer} step {k}",
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "pytest -q"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": output},
    ]


def check_history(messages: list[Message], writers: int, per_writer: int) -> None:
    """Every writer's appends are there once each, whole and in the writer's order."""
    ids = [m.id for m in messages]
    assert len(ids) == len(set(ids)), "an id is used twice"
    steps = [m.text for m in messages if m.role == "assistant"]
    assert len(steps) == writers * per_writer == len(set(steps)), "a message is lost or repeated"
    for writer in range(writers):
        mine = [s for s in steps if s.startswith(f"writer {writer} ")]
        assert mine == [f"writer {writer} step {k}" for k in range(per_writer)]
    for position, message in enumerate(messages):
        if message.role == "assistant":
            # An append is all or nothing: the call is followed by its own output.
            answer = messages[position + 1]
            assert answer.role == "tool"
            assert answer.tool_call_id == message.tool_calls[0].id  # type: ignore[index]


def wire(session: Session) -> str:
    return json.dumps(to_openai(session.render().messages), sort_keys=True)


def test_one_in_memory_session_shared_by_threads() -> None:
    session = Session(model="gpt-4")
    run_threads(lambda w: [session.extend(exchange(w, k)) for k in range(PER_WRITER)], WRITERS)
    check_history(session.transcript(), WRITERS, PER_WRITER)
    assert len(session.render().messages) == WRITERS * PER_WRITER * 2


def test_one_stored_session_shared_by_threads(store: SessionStore, session_id: str) -> None:
    session = Session.open(session_id, store=store, model="gpt-4")
    run_threads(lambda w: [session.extend(exchange(w, k)) for k in range(PER_WRITER)], WRITERS)
    check_history(session.transcript(), WRITERS, PER_WRITER)
    assert store.load(session_id).version == WRITERS * PER_WRITER
    assert wire(Session.open(session_id, store=store, model="gpt-4")) == wire(session)


def test_replicas_appending_at_once_all_succeed(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    sessions = [Session.open(session_id, store=replicas(), model="gpt-4") for _ in range(WRITERS)]
    run_threads(lambda w: [sessions[w].extend(exchange(w, k)) for k in range(PER_WRITER)], WRITERS)
    reader = Session.open(session_id, store=replicas(), model="gpt-4")
    check_history(reader.transcript(), WRITERS, PER_WRITER)
    assert {wire(s) for s in sessions} == {wire(reader)}


def test_erasures_racing_appends_leave_nothing_and_the_id_usable(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    # An erasure request may come while replicas append (a user deleting a live chat): each
    # append and each erasure succeeds, and after the last erasure nothing of the session
    # stays, nor breaks the id's next life.
    sessions = [Session.open(session_id, store=replicas(), model="gpt-4") for _ in range(4)]
    eraser = replicas()

    def work(worker: int) -> None:
        for k in range(25):
            if worker == len(sessions):
                eraser.delete_session(session_id)
            else:
                sessions[worker].append({"role": "user", "content": f"w{worker} m{k}"})

    run_threads(work, len(sessions) + 1)
    eraser.delete_session(session_id)
    assert eraser.load(session_id).version == 0
    assert all(session.transcript() == [] for session in sessions)
    for worker, session in enumerate(sessions):
        session.append({"role": "user", "content": f"again {worker}"})
    reader = Session.open(session_id, store=replicas(), model="gpt-4")
    assert [m.text for m in reader.transcript()] == [f"again {w}" for w in range(len(sessions))]
    assert [m.id for m in reader.transcript()] == [f"s{w}" for w in range(len(sessions))]
    assert {wire(s) for s in sessions} == {wire(reader)}


def test_originals_written_while_their_session_is_erased_are_not_left_behind(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    # A replica clearing an output at render stores its original outside an append; an erasure
    # meanwhile, on another replica, must not leave that text behind (an erasure request).
    writer, eraser = replicas(), replicas()
    writer.append(session_id, "e0", version=0, state="s")
    ids = [f"art_{k}" for k in range(40)]

    def work(worker: int) -> None:
        if worker == 0:
            for artifact in ids:
                writer.put_artifact(session_id, artifact, f"original {artifact}")
        else:
            eraser.delete_session(session_id)

    run_threads(work, 2)
    eraser.delete_session(session_id)
    left = []
    for artifact in ids:
        with contextlib.suppress(ArtifactNotFoundError):
            left.append(writer.get_artifact(session_id, artifact))
    assert left == []
    # Put after it is gone, every time (the erasure done): nothing is stored.
    writer.put_artifact(session_id, "art_late", "late")
    with pytest.raises(ArtifactNotFoundError):
        eraser.get_artifact(session_id, "art_late")


def test_asyncio_tasks_and_async_replicas(backend: str, tmp_path: Path, session_id: str) -> None:
    url = backend_url(backend, tmp_path)
    shared_memory = MemoryStore()

    def store() -> Any:
        return shared_memory if backend == "memory" else open_async_store(url)

    async def main() -> tuple[list[Message], set[str]]:
        # Half the writers share one object, the others each have their own (a replica).
        shared = await AsyncSession.open(session_id, store=store(), model="gpt-4")
        own = [
            await AsyncSession.open(session_id, store=store(), model="gpt-4")
            for _ in range(WRITERS // 2)
        ]
        sessions = [shared] * (WRITERS - len(own)) + own

        async def write(writer: int) -> None:
            for k in range(PER_WRITER):
                await sessions[writer].extend(exchange(writer, k))

        await asyncio.wait_for(asyncio.gather(*(write(w) for w in range(WRITERS))), 120)
        renders = {
            json.dumps(to_openai((await s.render()).messages), sort_keys=True) for s in sessions
        }
        history = await shared.transcript()
        for s in {id(s): s for s in sessions}.values():
            await s.store.close()
        return history, renders

    history, renders = asyncio.run(main())
    check_history(history, WRITERS, PER_WRITER)
    assert len(renders) == 1


WRITER_SCRIPT = """
import sys
sys.path.insert(0, {root!r})
from tests.store.test_concurrency import exchange
from ctxpack import Session
session = Session.open({session_id!r}, store={url!r}, model="gpt-4")
for k in range({per_writer}):
    session.extend(exchange({writer}, k))
session.close()
"""


def test_processes_appending_at_once(backend: str, tmp_path: Path, session_id: str) -> None:
    if backend == "memory":
        pytest.skip("a memory store lives in one process")
    url = backend_url(backend, tmp_path)
    writers = 3
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WRITER_SCRIPT.format(
                    root=str(ROOT),
                    session_id=session_id,
                    url=url,
                    per_writer=PER_WRITER,
                    writer=w,
                ),
            ],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(writers)
    ]
    for process in processes:
        _, err = process.communicate(timeout=180)
        assert process.returncode == 0, err
    reader = Session.open(session_id, store=url, model="gpt-4")
    check_history(reader.transcript(), writers, PER_WRITER)
    reader.close()


class Racing:
    """A store through which, just before one writer's append, another writer appends first."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.url = inner.url
        self.before_append: Callable[[], None] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def append(self, *args: Any, **kwargs: Any) -> None:
        hook, self.before_append = self.before_append, None
        if hook is not None:
            hook()
        self.inner.append(*args, **kwargs)


def test_random_interleavings_of_replicas(replicas: Callable[[], SessionStore]) -> None:
    """Writer ``w`` appends its next message; with a rival ``r``, ``r`` appends its own next
    message between ``w``'s read of the session and ``w``'s write (``w`` must then retry on
    top of it). Whatever the schedule, every message is there once, in each writer's order."""
    stores = [Racing(replicas()) for _ in range(3)]
    reader_store = replicas()

    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        schedule=st.lists(
            st.tuples(st.integers(0, 2), st.none() | st.integers(0, 2)), min_size=1, max_size=12
        )
    )
    def interleave(schedule: list[tuple[int, int | None]]) -> None:
        session_id = f"interleave-{uuid.uuid4().hex}"
        sessions = [
            Session.open(session_id, store=s, model="gpt-4")  # type: ignore[arg-type]
            for s in stores
        ]
        done = [0, 0, 0]

        def step(writer: int) -> None:
            sessions[writer].extend(exchange(writer, done[writer])[:1])
            done[writer] += 1

        for writer, rival in schedule:
            if rival is not None and rival != writer:
                stores[writer].before_append = lambda rival=rival: step(rival)  # type: ignore[misc]
            step(writer)
        reader = Session.open(session_id, store=reader_store, model="gpt-4")
        steps = [m.text for m in reader.transcript()]
        assert len(steps) == sum(done) == len(set(steps))
        for writer in range(3):
            assert [s for s in steps if s.startswith(f"writer {writer} ")] == [
                f"writer {writer} step {k}" for k in range(done[writer])
            ]
        assert {wire(s) for s in sessions} == {wire(reader)}
        reader_store.delete_session(session_id)

    interleave()


def test_renders_during_appends_see_whole_appends(store: SessionStore, session_id: str) -> None:
    """A render made while other threads append shows a history between two appends: every
    call is followed by its output, never cut between them."""
    session = Session.open(session_id, store=store, model="gpt-4")
    session.extend(exchange(99, 0))
    seen: list[int] = []

    def work(writer: int) -> None:
        if writer == WRITERS - 1:
            for _ in range(PER_WRITER * 2):
                messages = session.render().messages
                assert messages[-1].role == "tool"  # the last append is whole
                seen.append(len(messages))
        else:
            for k in range(PER_WRITER):
                session.extend(exchange(writer, k))

    run_threads(work, WRITERS)
    assert seen == sorted(seen)  # renders never go back in time
    assert len(session) == 2 + (WRITERS - 1) * PER_WRITER * 2


KILLED_WRITER = """
import sys
sys.path.insert(0, {root!r})
from tests.store.test_concurrency import exchange
from ctxpack import Session
session = Session.open({session_id!r}, store={url!r}, model="gpt-4")
for k in range(10_000):
    session.extend(exchange(0, k))
    print(k, flush=True)  # acknowledged: the append returned
"""


def test_a_writer_killed_mid_run_loses_no_acknowledged_append(
    backend: str, tmp_path: Path, session_id: str
) -> None:
    """SIGKILL a writer while it appends: every append it saw return is stored, and no append
    is stored in part."""
    if backend == "memory":
        pytest.skip("a memory store lives in one process")
    url = backend_url(backend, tmp_path)
    script = KILLED_WRITER.format(root=str(ROOT), session_id=session_id, url=url)
    writer = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    acknowledged = -1
    assert writer.stdout is not None
    try:
        for line in writer.stdout:
            acknowledged = int(line)
            if acknowledged >= 15:
                break
    finally:
        writer.kill()  # SIGKILL: no cleanup, mid-append most likely
        writer.wait(timeout=60)
    assert acknowledged >= 15
    reader = Session.open(session_id, store=url, model="gpt-4")
    history = reader.transcript()
    steps = [m.text for m in history if m.role == "assistant"]
    assert steps[: acknowledged + 1] == [f"writer 0 step {k}" for k in range(acknowledged + 1)]
    assert len(steps) <= acknowledged + 2  # at most the append in flight, whole
    assert [m.role for m in history] == ["assistant", "tool"] * len(steps)
    reader.close()
