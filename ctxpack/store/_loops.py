"""One connection pool per event loop, for the async stores.

A pool serves the loop it was made in: its sockets are that loop's, its background tasks run
there. A store object outlives an ``asyncio.run()`` (an application running one per job, a
test suite's loop per test): used from the next loop, redis-py failed with "Event loop is
closed", and psycopg's pool could no longer grow, nor be closed. Each loop gets its own pool,
closed when the store is closed from that loop, or else when the loop shuts down. Closing the
store from one loop has every other loop close its own, when it next runs: a pool is closed from
its loop only.

At shutdown the pool is closed by a task of its own, cancelled with every other task
(``asyncio.run`` cancels them all, then closes the loop's async generators). An async
generator's ``finally`` came too late: psycopg's pool workers catch the cancellation of a
connection attempt and wait for their next job, so ``asyncio.run`` waited for them forever
unless the pool told them to stop. That task closes the pool once the calls using it have ended
(cancelled too), not under them. A call made after it (a cancelled task's ``finally``, an async
generator the loop closes, a callback) makes the loop a new pool, which no task would close:
the loop ending, its last call closes it.

Cancelling its tasks does not always end a loop: a server may cancel its tasks and serve on, a
loop may be run again. A call from a task that was not cancelled then makes the loop a pool to
share again, kept open, as before the cancellations. A loop that ends (``asyncio.run`` closes its
async generators after cancelling its tasks) closes that pool as it closes a watcher, an async
generator of ours; from then on, each call's pool is closed by its last call.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, Generic, TypeVar

from .._internal import forks

__all__: list[str] = []

_R = TypeVar("_R")


class _Held(Generic[_R]):
    """A loop's pool, the task that closes it, and the calls using it."""

    __slots__ = ("idle", "keeper", "pool", "stop", "users")

    def __init__(self, pool: _R) -> None:
        self.pool, self.users = pool, 0
        self.idle, self.stop = asyncio.Event(), asyncio.Event()
        self.idle.set()
        self.keeper: asyncio.Task[None] | None = None


class PerLoop(Generic[_R]):
    """The pool of each event loop, made by ``make`` at the loop's first call and closed by
    ``close``."""

    def __init__(
        self, make: Callable[[], Awaitable[_R]], close: Callable[[_R], Awaitable[None]]
    ) -> None:
        self._make, self._close = make, close
        self._held: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Held[_R]] = (
            weakref.WeakKeyDictionary()
        )
        self._making: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Future[_Held[_R]]
        ] = weakref.WeakKeyDictionary()
        # The loops that cancelled a keeper of their own, with their tasks then: those of them
        # being cancelled may be the loop's last (see _ends_here()).
        self._rounds: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, weakref.WeakSet[asyncio.Task[Any]]
        ] = weakref.WeakKeyDictionary()
        # A watcher of each of those loops, which the loop closes as it ends (see _watched()).
        self._watchers: dict[asyncio.AbstractEventLoop, AsyncGenerator[None, None]] = {}
        # The loops that have closed their watcher: ending, they close no pool made after that,
        # so its last call closes it (see using()).
        self._ending: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
        # The loops of several threads add and drop their entries while close() lists them
        # (a dictionary changed during iteration); held for no await.
        self._entries = forks.freed_in_child(threading.Lock())
        # The closings handed to other loops, kept until done (a loop holds its tasks weakly).
        self._closing: set[asyncio.Future[Any]] = set()

    def here(self) -> _R | None:
        """The running loop's pool, if made."""
        held = self._held.get(asyncio.get_running_loop())
        return None if held is None else held.pool

    @contextlib.asynccontextmanager
    async def using(self) -> AsyncIterator[_R]:
        """The running loop's pool, for one call. Once the loop is ending (it closes its async
        generators, as ``asyncio.run`` does, or cancelled this call's task with the pool's), the
        last call to let go of its pool closes it: a call made then (from a task's ``finally``,
        an async generator closed by the loop) made a pool that nothing closed, its connections
        left open."""
        held = await self._held_here()
        held.users += 1
        held.idle.clear()
        try:
            yield held.pool
        finally:
            held.users -= 1
            if not held.users:
                held.idle.set()
                if self._ends_here():
                    await self._stopped(held)

    def _ends_here(self) -> bool:
        """Whether the running loop is ending: it has closed its watcher, or this task is one
        it cancelled with a keeper of ours. A task it did not (a server serving on after
        cancelling its tasks, a loop run again) shares a pool again."""
        loop = asyncio.get_running_loop()
        if loop in self._ending:
            return True
        task = asyncio.current_task()
        cancelled_with_keeper = task is not None and task in self._rounds.get(loop, ())
        # Python 3.10's tasks do not say whether they are being cancelled: all of the round's are.
        cancelling: Callable[[], int] = getattr(task, "cancelling", lambda: 1)
        return cancelled_with_keeper and bool(cancelling())

    async def _stopped(self, held: _Held[_R]) -> None:
        """Have ``held``'s keeper close its pool, once unused, and wait for it."""
        if held.keeper is None:
            return
        held.stop.set()
        await asyncio.wait([held.keeper])
        if not held.keeper.cancelled():
            held.keeper.exception()  # read: the call's outcome is not the close's

    async def _held_here(self) -> _Held[_R]:
        """The running loop's pool; callers that come at once share one making (each would
        make a pool of its own, and closing close only the last)."""
        loop = asyncio.get_running_loop()
        held = self._held.get(loop)
        if held is not None:
            return held
        making = self._making.get(loop)
        if making is None:
            with self._entries:
                making = self._making[loop] = asyncio.ensure_future(self._made())
        try:
            return await asyncio.shield(making)
        finally:
            if making.done() and self._making.get(loop) is making:
                with self._entries:
                    del self._making[loop]

    async def _made(self) -> _Held[_R]:
        held = _Held(await self._make())
        held.keeper = asyncio.ensure_future(self._keep(held))
        with self._entries:
            self._held[asyncio.get_running_loop()] = held
        return held

    async def _keep(self, held: _Held[_R]) -> None:
        """Wait until told to stop (by the last call on an ending loop) or cancelled (the store
        closed here, or the loop ending), then close ``held``'s pool: the loop ending, once the
        calls using it have ended (cancelled too), not under them."""
        loop = asyncio.get_running_loop()
        try:
            await held.stop.wait()
        except asyncio.CancelledError:
            if self._held.get(loop) is not held:  # close_here()'s: at once
                await self._closed(loop, held)
                raise
            self._rounds[loop] = weakref.WeakSet(asyncio.all_tasks(loop))
            await self._watched(loop)
        try:
            while held.users:
                await held.idle.wait()
        finally:
            await self._closed(loop, held)

    async def _watched(self, loop: asyncio.AbstractEventLoop) -> None:
        """Give ``loop`` a watcher, if it has none: an async generator started here, which the
        loop closes as it ends (its asynchronous generator hooks, set while it runs)."""
        with self._entries:
            if loop in self._watchers:
                return
            # A loop closed without closing its async generators left its watcher here.
            for closed in [other for other in self._watchers if other.is_closed()]:
                del self._watchers[closed]
            watcher = self._watchers[loop] = self._watcher()
        await watcher.asend(None)

    async def _watcher(self) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            try:
                loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
            except RuntimeError:  # collected, with no loop running (one without the hooks)
                loop = None
            if loop is not None:
                await self._ended(loop)

    async def _ended(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._entries:
            self._ending.add(loop)
            self._watchers.pop(loop, None)
        held = self._held.get(loop)
        if held is not None:
            await self._stopped(held)

    async def _closed(self, loop: asyncio.AbstractEventLoop, held: _Held[_R]) -> None:
        with self._entries:
            if self._held.get(loop) is held:
                del self._held[loop]
        await self._close(held.pool)

    async def close_here(self) -> None:
        """Close the running loop's pool, waiting first for a making in flight (shielded, it
        goes on when its caller is cancelled, and its pool would be left open)."""
        loop = asyncio.get_running_loop()
        making = self._making.get(loop)
        if making is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(making)
        with self._entries:
            held = self._held.pop(loop, None)
        if held is not None and held.keeper is not None:
            keeper = held.keeper
            keeper.cancel()
            # wait(), not await: the keeper ends cancelled, and this caller is not; a failed
            # close is still the caller's to see.
            await asyncio.wait([keeper])
            if not keeper.cancelled():
                keeper.result()

    async def close_everywhere(self) -> None:
        """Close the running loop's pool, and have every other loop that holds one (or is
        making one) close its own when it next runs, as :meth:`close_here` there: a pool
        serves, and is closed from, its loop only. A loop already closed closed its pool as it
        shut down (``asyncio.run``), or left it beyond reach."""
        here = asyncio.get_running_loop()
        with self._entries:
            others = {*self._held, *self._making} - {here}
        for loop in others:
            with contextlib.suppress(RuntimeError):  # closed meanwhile
                loop.call_soon_threadsafe(self._close_there)
        await self.close_here()

    def _close_there(self) -> None:
        closing = asyncio.ensure_future(self.close_here())
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)

    def forget(self) -> list[_R]:
        """Forget every pool (a forked child's are its parent's); return them."""
        with self._entries:
            pools = [held.pool for held in self._held.values()]
            self._held.clear()
            self._making.clear()
        self._closing.clear()
        return pools
