"""AsyncSession: :meth:`Session.open <ctxpack.Session.open>` for asyncio backends.

The same session, the same store layout and the same requests as a :class:`~ctxpack.Session`
(the two can serve one session id side by side); store calls are awaited on the async
drivers, and the CPU work (filtering a tool output, packing a request) runs in a worker
thread so that the event loop keeps serving other users meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ._internal import forks
from ._internal.arguments import flag, keyword_checked
from ._internal.awaiting import in_thread, to_end
from .errors import ConfigError, ForkedWhileBusyError, StoreConflictError
from .managed import WindowPolicy, WindowState
from .messages import Message
from .persistence import MAX_ATTEMPTS, Backing, backoff_delay, run_for
from .pipeline import Decision
from .providers import Provider
from .result import PackResult
from .retrieval import Retrieval
from .sdk import SDKObject
from .session import (
    FilterRecord,
    Session,
    extend_batch,
    pinned_message,
    system_opening,
)
from .store import (
    AsyncSessionStore,
    SessionStore,
    StoredSession,
    ThreadedAsyncStore,
    open_async_store,
)
from .tokens import TokenCounter

if TYPE_CHECKING:
    from .session._state import Snapshot

__all__ = ["AsyncSession"]


_T = TypeVar("_T")


async def _closed(store: AsyncSessionStore) -> asyncio.CancelledError | None:
    """Close ``store`` to the end, even if the caller is cancelled again meanwhile (a task
    group, an anyio scope cancelling at every step): interrupted, a PostgreSQL pool was left
    open. Return the cancellation that came meanwhile, if any (the close's own error then
    read, not raised); else raise the close's own error, if any."""
    closing = asyncio.ensure_future(store.close())
    cancelled = await to_end(closing)
    if cancelled is None:
        closing.result()
    elif not closing.cancelled():
        closing.exception()  # read: the cancellation is the one to raise
    return cancelled


async def _in_thread(
    func: Callable[..., _T], /, *args: Any, undo: Callable[[_T], None] | None = None, **kwargs: Any
) -> _T:
    """:func:`~ctxpack._internal.awaiting.in_thread` for a call of the session: its
    originals are read and stored on the caller's event loop (:func:`run_for`)."""
    loop = asyncio.get_running_loop()
    return await in_thread(run_for, loop, func, *args, undo=undo, **kwargs)


# How long a worker thread waits at a time for another thread's event loop to let go of a
# session: a cancelled caller waits at most this long.
_POLL_SECONDS = 0.05


async def _acquired(lock: threading.Lock) -> None:
    """``lock`` taken without blocking the event loop: at once when free, else from a worker
    thread, a while at a time; cancelled, the cancellation is raised without the lock."""
    if lock.acquire(blocking=False):
        return
    while True:
        work = asyncio.ensure_future(asyncio.to_thread(lock.acquire, True, _POLL_SECONDS))
        cancelled = await to_end(work)
        if work.result():
            if cancelled is None:
                return
            lock.release()
        if cancelled is not None:
            raise cancelled


class AsyncSession(forks.ProcessBound):
    """An agent session in a session store, with coroutines: ``await`` every method that
    reads or writes the store.

    Open one with :meth:`open`; the options are :class:`~ctxpack.Session`'s. One object may be
    shared by the tasks of its event loop: its appends are applied one at a time, each all or
    nothing, durable when the ``await`` returns. It outlives its loop (an ``asyncio.run()``
    per job), and the loops of several threads take turns on it.

    Example:
        >>> import asyncio
        >>> async def main():
        ...     session = await AsyncSession.open("user-42", store="memory://", model="gpt-4")
        ...     await session.append({"role": "user", "content": "Hello"})
        ...     result = await session.render()
        ...     await session.close()
        ...     return [m.text for m in result.messages]
        >>> asyncio.run(main())
        ['Hello']
    """

    _core: Session
    _backing: Backing
    store: AsyncSessionStore
    _owned: bool
    # The tasks of one event loop take turns on its asyncio lock (one per loop: a lock serves
    # the loop that first waited on it, and the session outlives an asyncio.run()); event
    # loops of other threads on the thread lock: an asyncio lock shared by two loops hung.
    _locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock]
    _turns: threading.Lock
    # Set in a forked child when a call held the session at the fork, mid-change.
    _busy_at_fork: bool
    # The model set last (its counter and name, checked), and the one the session was given
    # last: a call applies a new one at its start (see the model setter).
    _model_set: tuple[TokenCounter, str | None] | None
    _model_applied: tuple[TokenCounter, str | None] | None

    def __init__(self, *args: Any, **options: Any) -> None:
        # Opening reads the store, which a constructor cannot await.
        raise ConfigError(
            "an AsyncSession is opened, not built: "
            "session = await AsyncSession.open(session_id, store=..., model=...)"
        )

    @classmethod
    def _made(
        cls, core: Session, backing: Backing, store: AsyncSessionStore, owned: bool
    ) -> AsyncSession:
        session = cls.__new__(cls)
        session._core = core
        session._backing = backing
        session.store = store
        session._owned = owned
        session._locks = weakref.WeakKeyDictionary()
        session._turns = threading.Lock()
        session._busy_at_fork = False
        session._model_set = session._model_applied = None
        forks.track(session)
        return session

    @contextlib.asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """The session to this call alone, among the tasks of every event loop."""
        if self._busy_at_fork:
            raise self._forked_busy()
        # A loop runs in one thread: only that thread ever asks for its lock.
        async with self._locks.setdefault(asyncio.get_running_loop(), asyncio.Lock()):
            await _acquired(self._turns)
            try:
                self._apply_model()
                yield
            finally:
                self._turns.release()

    def after_fork(self) -> None:
        """In a forked child, which runs none of the parent's tasks nor its other threads:
        locks of its own (the parent's are bound to the parent's event loops); refused if a
        call held the session at the fork, in the middle of a change."""
        held = [*self._locks.values()]
        self._busy_at_fork = self._turns.locked() or any(lock.locked() for lock in held)
        self._locks = weakref.WeakKeyDictionary()
        self._turns = threading.Lock()

    def _forked_busy(self) -> ForkedWhileBusyError:
        return ForkedWhileBusyError(type(self).__name__, instead=self._how_to_reopen())

    def _how_to_reopen(self) -> str:
        return (
            f"pass its id and its store's URL, and open it there: "
            f"await AsyncSession.open({self.session_id!r}, store=url)"
        )

    @classmethod
    @keyword_checked
    async def open(
        cls,
        session_id: str,
        *,
        store: str | AsyncSessionStore | SessionStore,
        model: str | None = None,
        **options: Any,
    ) -> AsyncSession:
        """Create or resume the session ``session_id``: :meth:`ctxpack.Session.open`, awaited.

        Args:
            session_id: The session's id in the store.
            store: A store URL (the async driver is used: psycopg's async pool,
                ``redis.asyncio``; SQLite in a worker thread), an
                :class:`~ctxpack.store.AsyncSessionStore`, or a
                :class:`~ctxpack.store.SessionStore` (run in a worker thread). A store
                object is yours to open and close: one that is closed fails.
            model: As for :class:`~ctxpack.Session`.
            options: The other :class:`~ctxpack.Session` options.

        Raises:
            ConfigError: a bad id, URL or option.
            StoreError: the store cannot be opened or read, or is closed.
        """
        owned = isinstance(store, str)
        # Both protocols have the same method names: whether ``load`` is a coroutine function
        # tells them apart.
        if isinstance(store, str):
            async_store: AsyncSessionStore = open_async_store(store)
        elif isinstance(store, AsyncSessionStore) and inspect.iscoroutinefunction(store.load):
            async_store = store
        elif isinstance(store, SessionStore):
            async_store = ThreadedAsyncStore(store)
        else:
            raise ConfigError(
                "store must be a store URL or a ctxpack.store.AsyncSessionStore or "
                f"SessionStore, got {type(store).__name__}"
            )
        try:
            core = await asyncio.to_thread(Session._configured, model, options)
            backing = Backing(async_store, session_id, asyncio.get_running_loop())
            core._attach(backing)
            # The core session never calls the store itself: this object does, awaiting.
            core._backing = None
            # A store it opened from the URL, at once; a store object is the caller's, which
            # its first call opens (open() would open it again after its close(), with a
            # pool nothing would close, where the call fails).
            opener = getattr(async_store, "open", None) if owned else None
            if opener is not None:
                await opener()
            session = cls._made(core, backing, async_store, owned)
            await session._sync()
        except BaseException as exc:
            # Nobody else can close a store opened from the URL: the caller has no session.
            # Its own error is the one to raise, not one from closing; a cancellation that
            # came while closing is raised in its place.
            if owned:
                with contextlib.suppress(Exception):
                    cancelled = await _closed(async_store)
                    if cancelled is not None and not isinstance(exc, asyncio.CancelledError):
                        raise cancelled from exc
            raise
        return session

    @property
    def session_id(self) -> str:
        return self._backing.session_id

    @property
    def provider(self) -> Provider:
        """The provider the messages came from (see :attr:`ctxpack.Session.provider`)."""
        return self._core.provider

    @property
    def counter(self) -> TokenCounter:
        """The token counter (see :attr:`ctxpack.Session.counter`)."""
        chosen = self._model_set
        return self._core.counter if chosen is None else chosen[0]

    @property
    def model(self) -> str | None:
        """The model the requests go to; set it to send the next requests to another, as
        :attr:`ctxpack.Session.model` (the same checks, counter and warning, at once). A call
        under way goes on with the model it started with: the next one sends to the new.

        Raises:
            ConfigError: on setting, ``model`` is not a string or ``None``.
        """
        chosen = self._model_set
        return self._core.model if chosen is None else chosen[1]

    @model.setter
    def model(self, model: str | None) -> None:
        # Kept for the next call to apply, not set on the core here: a worker thread
        # rendering may hold the core's lock while it waits on this event loop. One
        # assignment, which the loops of other threads read whole.
        self._model_set = self._core._model_switch(model)

    def _apply_model(self) -> None:
        """The model set since the last call, given to the session (no call holds it)."""
        chosen = self._model_set
        if chosen is not None and chosen is not self._model_applied:
            self._core._switch_model(chosen)
            self._model_applied = chosen

    @property
    def window(self) -> WindowPolicy | None:
        """The managed mode's policy, ``None`` without one (see :class:`ctxpack.Session`)."""
        return self._core.window

    @property
    def tools_on_demand(self) -> bool:
        """Whether your tools are sent as stubs (see :class:`ctxpack.Session`)."""
        return self._core.tools_on_demand

    async def _sync(self) -> None:
        backing = self._backing
        try:
            stored = await backing.store.load(self.session_id, since=backing.version)  # type: ignore[misc]
            if await self._caught_up(stored):
                stored = await backing.store.load(self.session_id)  # type: ignore[misc]
                await self._caught_up(stored)
        except Exception as exc:
            raise backing.failed("read", exc) from exc

    async def _caught_up(self, stored: StoredSession) -> bool:
        """:meth:`Backing.catch_up`, in a worker thread when there are entries to apply: a
        long session opened (each request of a server may open one) decoded and validated
        its every message on the event loop, which served no one else meanwhile."""
        if not stored.entries:
            return self._backing.catch_up(self._core, stored)
        return await _in_thread(self._backing.catch_up, self._core, stored)

    # ------------------------------------------------------------------------------- input

    @keyword_checked
    async def append(
        self,
        message: Mapping[str, Any] | Message,
        *,
        provider: Provider | None = None,
        after: PackResult | None = None,
    ) -> None:
        """Add one message; see :meth:`ctxpack.Session.append` (``after=``: the result of
        this session's :meth:`render` the message answers, refused once the session was erased
        since)."""
        await self.extend([message], provider=provider, after=after)

    @keyword_checked
    async def extend(
        self,
        messages: Iterable[Mapping[str, Any] | Message],
        *,
        provider: Provider | None = None,
        after: PackResult | None = None,
    ) -> None:
        """Add messages in order, all or none; see :meth:`ctxpack.Session.extend`.

        Raises:
            InvalidMessageError: a message is malformed or reuses an id.
            SessionErasedError: ``after`` was rendered from a life of the session erased or
                expired since; none was stored.
            StoreError: the store failed; the session is unchanged.
        """
        batch = extend_batch(messages)
        core = self._core
        change = core._answering(after, lambda: core._extend(batch, provider))
        await self._commit(change, ("extend", batch, provider))

    async def _commit(
        self, change: Callable[[], None], retry: tuple[Any, ...] | None = None
    ) -> None:
        """:meth:`ctxpack.Session._change` for an async store: ``change`` (run in a worker
        thread, reading the state it changes) applied and stored, all or nothing, again on top
        of other writers' appends when they came first. ``retry``: the call's name and
        arguments, for a retry of a write the store took unacknowledged to be let through
        (see ``_internal/lost_replies.py``)."""
        core, backing = self._core, self._backing
        async with self._turn():
            for attempt in range(MAX_ATTEMPTS):
                await self._sync()
                if backing.lost.retried(retry):
                    return
                before = await _in_thread(
                    backing.transact, lambda: core._transact(change), undo=core._restore
                )
                cancelled, failed = await self._written(before)
                if failed is None:
                    backing.committed()
                    if cancelled is not None:
                        backing.lost.unacknowledged(retry, landed=True)
                        raise cancelled
                    return
                core._restore(before)
                backing.lost.unacknowledged(retry)  # a conflict too (see Backing.commit)
                if cancelled is not None:
                    raise cancelled
                if not isinstance(failed, Exception):
                    raise failed  # the write cancelled by the loop shutting down
                if not isinstance(failed, StoreConflictError):
                    raise backing.failed("append to", failed) from failed
                await asyncio.sleep(backoff_delay(attempt))
            raise backing.gave_up()

    async def _written(
        self, before: Snapshot
    ) -> tuple[asyncio.CancelledError | None, BaseException | None]:
        """The append applied since ``before`` written to the store, to its end even if the
        caller is cancelled meanwhile: cancelled as the store commits, the session read it as
        not stored while the store held it, and a retry stored it twice (and a store's
        connection was left in the middle of a command). Return the cancellation that came
        meanwhile, and the store's error."""
        backing = self._backing
        try:
            arguments = backing.prepare(self._core, before)
        except Exception as exc:
            return None, exc
        writing = asyncio.ensure_future(self.store.append(self.session_id, **arguments))
        cancelled = await to_end(writing)
        if writing.cancelled():  # by the loop shutting down: nothing was acknowledged
            return cancelled, asyncio.CancelledError()
        return cancelled, writing.exception()

    # ------------------------------------------------------------------------------ output

    @keyword_checked
    async def render(
        self,
        budget: int | None = None,
        *,
        query: str | None = None,
        provider: Provider | None = None,
        reserve: int = 0,
        tools: Sequence[Mapping[str, Any]] | None = None,
        system: str | Mapping[str, Any] | None = None,
        strict: bool = False,
        tool_choice: Any = None,
    ) -> PackResult:
        """The request to send; see :meth:`ctxpack.Session.render`."""
        with system_opening(system) as opening:
            args = (opening, budget, query, provider, reserve, tools)
            return await self._render_opening(
                *args, strict=flag(strict, "strict"), choice=tool_choice
            )

    async def _render_opening(
        self,
        opening: Any,
        budget: int | None = None,
        query: str | None = None,
        provider: Provider | None = None,
        reserve: int = 0,
        tools: Sequence[Mapping[str, Any]] | None = None,
        whole: Collection[str] = (),
        strict: bool = False,
        choice: Any = None,
    ) -> PackResult:
        """:meth:`render`, opening with the system prompt ``opening`` unless ``None`` (see
        ``Session._render_opening``)."""
        core = self._core
        args = (opening, budget, query, provider, reserve, tools, whole, strict, choice)
        if core._renders_state(tools):
            # Stored like an append (see Session.render).
            results: list[PackResult] = []
            await self._commit(lambda: results.append(core._render_with(*args)))
            return results[-1]
        async with self._turn():
            await self._sync()
            return await _in_thread(core._render_opening, *args)

    async def transcript(self) -> list[Message]:
        """The full record; see :meth:`ctxpack.Session.transcript`."""
        async with self._turn():
            await self._sync()
            return self._core.transcript()

    async def compact(self) -> list[Message]:
        """The compact record; see :meth:`ctxpack.Session.compact`."""
        async with self._turn():
            await self._sync()
            return self._core.compact()

    async def records(self) -> list[FilterRecord]:
        """One record per tool output; see :attr:`ctxpack.Session.records`."""
        async with self._turn():
            await self._sync()
            return self._core.records

    @property
    def window_state(self) -> WindowState:
        """The managed mode's state as of the last call (see
        :attr:`ctxpack.Session.window_state`)."""
        return self._core.window_state

    @keyword_checked
    async def pin(
        self,
        text: str,
        *,
        name: str,
        kind: Literal["memory", "skill"] = "skill",
        after: PackResult | None = None,
    ) -> None:
        """Add a memory file or a skill to the conversation; see :meth:`ctxpack.Session.pin`."""
        message = await asyncio.to_thread(pinned_message, text, name, kind)
        await self.append(message, after=after)

    @keyword_checked
    def context_management(self, provider: Provider | None = None) -> dict[str, Any]:
        """The request fields handing the window to the provider (no I/O); see
        :meth:`ctxpack.Session.context_management`."""
        return self._core.context_management(provider)

    @keyword_checked
    async def record_response(
        self, response: Any, *, append: bool = True, after: PackResult | None = None
    ) -> list[Decision]:
        """Read what the provider's context management did; see
        :meth:`ctxpack.Session.record_response`."""
        recorded: list[Decision] = []
        core = self._core

        def change() -> None:
            recorded[:] = core._record_response(response, append)

        await self._commit(core._answering(after, change), ("record_response", response, append))
        return recorded

    @keyword_checked
    def tools(
        self,
        provider: Provider = "openai",
        *,
        api: Literal["chat", "responses"] = "chat",
        strict: bool = False,
    ) -> list[dict[str, Any]]:
        """The tool definitions the session adds to a request (no I/O; see
        :meth:`ctxpack.Session.tools`)."""
        return self._core.tools(provider, api=api, strict=strict)

    @keyword_checked
    async def retrieve(
        self,
        artifact: str,
        *,
        lines: str | tuple[int, int] | None = None,
        regex: str | None = None,
        context: int = 2,
        json_path: str | None = None,
        page: int = 1,
        max_chars: int = 8_000,
    ) -> Retrieval:
        """Read an original of the session; see :meth:`ctxpack.Session.retrieve`."""
        async with self._turn():
            await self._sync()  # the secret values another replica found, hunted in it
        return await _in_thread(
            self._core.retrieve,
            artifact,
            lines=lines,
            regex=regex,
            context=context,
            json_path=json_path,
            page=page,
            max_chars=max_chars,
        )

    @keyword_checked
    async def handle(self, call: Mapping[str, Any] | SDKObject | str) -> str:
        """Answer the model's call to the retrieve tool (or, with ``tools_on_demand``, to
        ``describe_tool``): a dict, the SDK's own object or the call's arguments as JSON, as
        :meth:`ctxpack.Session.handle` takes it."""
        async with self._turn():
            # describe_tool answers from the tools rendered last; a retrieve answer is hunted
            # for the secret values another replica found.
            await self._sync()
        return await _in_thread(self._core.handle, call)

    async def close(self) -> None:
        """Close the store if the session opened it from a URL; cancelled meanwhile, it is
        closed to the end all the same, and the cancellation raised."""
        if self._owned:
            cancelled = await _closed(self.store)
            if cancelled is not None:
                raise cancelled

    def __len__(self) -> int:
        # Not through the core's lock: a worker thread rendering may hold it while it waits
        # on this event loop (a stage storing an original).
        return len(self._core._raw)

    def __repr__(self) -> str:
        return f"<AsyncSession: session_id={self.session_id!r}, {len(self)} messages>"
