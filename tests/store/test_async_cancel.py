"""An AsyncSession cancelled in the middle of a write: the session and its store agree
afterwards, and a retry of what was stored all the same does not store it twice."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ctxpack import AsyncSession, Session
from ctxpack.managed import WindowPolicy
from ctxpack.store import AsyncSessionStore, SessionStore, ThreadedAsyncStore, open_async_store
from tests.sdk_mock import anthropic_message

from .backends import backend_url


class _HeldAfterCommit:
    """An async store whose next append, once the store has taken it, waits for ``release``:
    a caller cancelled meanwhile is cancelled after the commit, before the acknowledgement."""

    def __init__(self, store: AsyncSessionStore, backend: str) -> None:
        self.store = store
        # memory: the replicas' one store, read after this one is done and closed by the
        # fixture (a closed store fails every call).
        self.owns_store = backend != "memory"
        self.url = store.url
        self.hold = False
        self.committed = asyncio.Event()
        self.release = asyncio.Event()

    async def load(self, session_id: str, *, since: int = 0) -> Any:
        return await self.store.load(session_id, since=since)

    async def append(
        self,
        session_id: str,
        entry: str,
        *,
        version: int,
        state: str,
        artifacts: Any = None,
        life: str | None = None,
    ) -> None:
        store: Any = self.store  # the stores of ctxpack take life=
        await store.append(
            session_id, entry, version=version, state=state, artifacts=artifacts, life=life
        )
        if self.hold:
            self.hold = False
            self.committed.set()
            await self.release.wait()

    async def put_artifact(self, session_id: str, artifact: str, text: str, **life: Any) -> None:
        await self.store.put_artifact(session_id, artifact, text, **life)

    async def get_artifact(self, session_id: str, artifact: str) -> str:
        return await self.store.get_artifact(session_id, artifact)

    async def delete_session(self, session_id: str) -> None:
        await self.store.delete_session(session_id)

    async def close(self) -> None:
        if self.owns_store:
            await self.store.close()


def _stored(session_id: str, store: SessionStore) -> list[str]:
    return [m.text for m in Session.open(session_id, store=store, model="gpt-4").transcript()]


def _inner(backend: str, tmp_path: Path, sync_store: SessionStore) -> AsyncSessionStore:
    if backend == "memory":
        return ThreadedAsyncStore(sync_store)
    return open_async_store(backend_url(backend, tmp_path))


async def _cancelled_after_commit(held: _HeldAfterCommit, call: Awaitable[Any]) -> None:
    """``call`` cancelled once the store has taken its write, before it acknowledged it."""
    held.hold = True
    task = asyncio.ensure_future(call)
    await held.committed.wait()
    task.cancel()
    held.release.set()
    try:
        await task
    except asyncio.CancelledError:
        return
    raise AssertionError("the cancellation was swallowed")


def test_an_append_cancelled_after_the_store_took_it_is_stored_once_when_retried(
    backend: str, tmp_path: Path, replicas: Callable[[], SessionStore], session_id: str
) -> None:
    # Cancelled between the store's commit and its acknowledgement, the append raised
    # CancelledError with the session left without the message the store held: the caller's
    # retry (a request timed out and sent again) stored it a second time.
    sync_store = replicas()

    async def main() -> tuple[int, list[str]]:
        held = _HeldAfterCommit(_inner(backend, tmp_path, sync_store), backend)
        session = await AsyncSession.open(session_id, store=held, model="gpt-4")
        await session.append({"role": "user", "content": "hello"})
        message = {"role": "user", "content": "book the 9:40 train"}
        await _cancelled_after_commit(held, session.append(message))
        seen = len(session)  # as the store has it, at once
        await session.append(message)  # the caller's retry
        await session.append({"role": "user", "content": "thanks"})
        texts = [m.text for m in await session.transcript()]
        await held.close()
        return seen, texts

    seen, texts = asyncio.run(main())
    assert seen == 2
    assert texts == ["hello", "book the 9:40 train", "thanks"]
    assert _stored(session_id, sync_store) == texts


def test_a_recorded_response_cancelled_after_the_store_took_it_is_recorded_once_when_retried(
    backend: str, tmp_path: Path, replicas: Callable[[], SessionStore], session_id: str
) -> None:
    sync_store = replicas()
    reply = anthropic_message([{"type": "text", "text": "Booked."}])

    async def main() -> list[str]:
        held = _HeldAfterCommit(_inner(backend, tmp_path, sync_store), backend)
        session = await AsyncSession.open(
            session_id,
            store=held,
            model="claude-sonnet-4-5",
            counter="cl100k_base",
            window=WindowPolicy(window=200_000, server_side=True),
        )
        await session.append({"role": "user", "content": "book the 9:40 train"})
        await _cancelled_after_commit(held, session.record_response(reply))
        await session.record_response(reply)  # the caller's retry
        texts = [m.text for m in await session.transcript()]
        await held.close()
        return texts

    texts = asyncio.run(main())
    assert texts == ["book the 9:40 train", "Booked."]


def test_a_render_cancelled_after_the_store_took_it_leaves_the_append_before_it_retried_once(
    backend: str, tmp_path: Path, replicas: Callable[[], SessionStore], session_id: str
) -> None:
    # A managed render stores the window's state, a write of no call to retry: cancelled
    # after its commit too, it made the session forget the append cancelled before it, and
    # the caller's retry of that append stored it a second time.
    sync_store = replicas()

    async def main() -> list[str]:
        held = _HeldAfterCommit(_inner(backend, tmp_path, sync_store), backend)
        session = await AsyncSession.open(
            session_id, store=held, model="gpt-4", window=WindowPolicy(window=200_000)
        )
        message = {"role": "user", "content": "book the 9:40 train"}
        await _cancelled_after_commit(held, session.append(message))
        held.committed.clear()
        held.release.clear()
        await _cancelled_after_commit(held, session.render())
        await session.append(message)  # the caller's retry
        texts = [m.text for m in await session.transcript()]
        await held.close()
        return texts

    assert asyncio.run(main()) == ["book the 9:40 train"]
    assert _stored(session_id, sync_store) == ["book the 9:40 train"]


def test_a_task_retrying_its_cancelled_append_after_another_tasks_stores_it_once(
    backend: str, tmp_path: Path, replicas: Callable[[], SessionStore], session_id: str
) -> None:
    # One session object shared by tasks: another task's append between the cancellation
    # and the retry made the session forget the append the store held, stored twice.
    sync_store = replicas()
    message = {"role": "user", "content": "book the 9:40 train"}

    async def main() -> list[str]:
        held = _HeldAfterCommit(_inner(backend, tmp_path, sync_store), backend)
        session = await AsyncSession.open(session_id, store=held, model="gpt-4")
        cancelled, written = asyncio.Event(), asyncio.Event()

        async def first() -> None:
            try:
                await session.append(message)
            except asyncio.CancelledError:
                cancelled.set()  # handled in the task, as a timeout is
            else:
                raise AssertionError("not cancelled")
            await written.wait()
            await session.append(message)  # its retry, after the other task's append

        async def second() -> None:
            await cancelled.wait()
            await session.append({"role": "user", "content": "other"})
            written.set()

        held.hold = True
        tasks = asyncio.ensure_future(first()), asyncio.ensure_future(second())
        await held.committed.wait()
        tasks[0].cancel()
        held.release.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 30)
        texts = [m.text for m in await session.transcript()]
        await held.close()
        return texts

    assert asyncio.run(main()) == ["book the 9:40 train", "other"]
    assert _stored(session_id, sync_store) == ["book the 9:40 train", "other"]
