"""What a forked child does with the connections its parent's objects hold.

A child made by ``os.fork`` (``multiprocessing``'s ``fork`` start method, gunicorn's
``--preload``, celery's prefork pool) gets a copy of every object, connections included, but
not the parent's other threads: a lock one of them held stays held in the child, and a
connection is the parent's socket or file. Used from the child, a PostgreSQL connection
interleaves two processes' messages on one socket; an SQLite connection, or only its copy in
the child's memory, makes SQLite believe that the child holds the parent's file locks, so that
the parent, closing, deletes the write-ahead log under the child, whose acknowledged writes
are then lost. Each owner of such a connection registers here, and is told in the child, at
once, to drop what it inherited and open its own at its next use.
"""

from __future__ import annotations

import inspect
import os
import threading
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, Protocol

from ..errors import ForkedWhileBusyError, NotPicklableError

__all__: list[str] = []

# How long a fork waits for another thread's call into a session or a code index to end (a
# filter, a stage, a store write): its copy in the child is then unusable (see Quiesced).
CALL_WAIT = 5.0

# Why a store in memory cannot be used in a child that forked while another thread changed it.
BUSY_STORE = (
    "another thread was using this in-memory store when the process forked; "
    "its copy in this process cannot be read: open a new store"
)


class ForkAware(Protocol):
    def after_fork(self) -> None:
        """Called in a forked child, before anything else runs there: drop (do not close,
        unless it is only the child's) what belongs to the parent, and reset the locks."""


class ProcessBound:
    """An object bound to its process (its locks, its connections, its state in memory): it
    refuses to be pickled, to go to another process, saying what to pass there instead. A
    store made from a URL says to pass the URL: not pickled as it, as the URL may hold a
    password, and what a ``memory://`` store holds is not in it."""

    def _how_to_reopen(self) -> str:
        url = getattr(self, "url", None)
        if not isinstance(url, str):  # an object whose repr is how it is made
            return f"make it again there: {self!r}"
        if url.startswith("memory:") or url.endswith(":memory:"):
            return (
                "a store in memory is its process's: to share sessions between processes, "
                "use a store on SQLite, PostgreSQL or Redis"
            )
        return (
            f"pass its store URL ({url}; the password is yours to add) and open it there, "
            "with ctxpack.store.open_store(url), or Session.open(session_id, store=url)"
        )

    def __reduce__(self) -> str | tuple[Any, ...]:
        raise NotPicklableError(type(self).__name__, instead=self._how_to_reopen())


class Guarded(ProcessBound):
    """An object whose state one reentrant lock, ``_lock``, guards, taken by each of its
    calls: a fork waits for another thread's call to end, at most ``CALL_WAIT`` seconds;
    past that, the child's copy, perhaps half changed, refuses every call, saying what to do
    instead (the lock, held by a thread the child does not have, would never be released)."""

    _guard: Quiesced
    _lock: AbstractContextManager[Any]

    def _guard_state(self, rank: int = 1) -> None:
        self._guard = Quiesced(CALL_WAIT, reentrant=True, rank=rank)
        self._lock = self._guard.lock
        track(self)

    def after_fork(self) -> None:
        if not self._guard.after_fork_in_child():
            self._lock = Unusable(self._forked_busy)

    def _forked_busy(self) -> ForkedWhileBusyError:
        return ForkedWhileBusyError(type(self).__name__, instead=self._how_to_reopen())


class Quiesced:
    """A lock that a fork waits for: held by the forking thread across the fork, so that no
    other thread is inside the connection (or the state) it guards at that moment, and the
    child's copy of it is idle (it can be closed, or used, there). A fork waits at most
    ``timeout`` seconds (a thread held up by another process's write); then the copy is left
    busy. ``reentrant``: a ``threading.RLock``, which the forking thread may already hold.
    ``rank``: above 0, the lock of an object that calls into others' under it (a wrapper into
    its session, a session into its store): the higher ranks are taken first at a fork, so
    that a thread inside the object does not wait there for an inner lock that the forking
    thread holds, while the forking thread waits for it."""

    def __init__(self, timeout: float, *, reentrant: bool = False, rank: int = 0) -> None:
        self._reentrant = reentrant
        self.lock: Any = self._new_lock()
        self.timeout = timeout
        self.rank = rank
        self._held_for_fork = False
        _quiesced.add(self)

    def _new_lock(self) -> Any:
        return threading.RLock() if self._reentrant else threading.Lock()

    def before_fork(self) -> None:
        self._held_for_fork = self.lock.acquire(timeout=self.timeout)

    def after_fork_in_parent(self) -> None:
        if self._held_for_fork:
            self._held_for_fork = False
            self.lock.release()

    def after_fork_in_child(self) -> bool:
        """The lock, free in the child; whether what it guards was idle at the fork."""
        idle, self._held_for_fork = self._held_for_fork, False
        if idle:
            # Released as in the parent: the child's one thread is the forking thread, which
            # may hold it from before (a fork from inside a session's call).
            self.lock.release()
        else:
            self.lock = self._new_lock()  # held by a thread the child does not have
        return idle


class Unusable:
    """What stands for the lock of an object that another thread was using when the process
    forked: its copy in the child may be half changed, so each call raises ``error()``."""

    def __init__(self, error: Callable[[], Exception]) -> None:
        self._error = error

    def __enter__(self) -> None:
        raise self._error()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    async def __aenter__(self) -> None:
        raise self._error()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


_owners: weakref.WeakSet[ForkAware] = weakref.WeakSet()
_quiesced: weakref.WeakSet[Quiesced] = weakref.WeakSet()
# What a child inherited and may not close (closing a pooled PostgreSQL connection sends the
# server a goodbye on the parent's socket; an SQLite connection another thread was inside of
# may hold SQLite's own mutex): kept for the child's life, so that it is never collected.
_inherited: list[object] = []


# Locks a forked child frees, each with what it then forgets (see ``freed_in_child``).
_freed: weakref.WeakKeyDictionary[Any, Callable[[], Callable[[], None] | None] | None] = (
    weakref.WeakKeyDictionary()
)


def freed_in_child(lock: Any, forget: Callable[[], None] | None = None) -> Any:
    """``lock`` (a ``threading.Lock``), which a forked child finds free: held there (by one of
    the parent's threads, which the child does not have, so never to be released), it is
    released, and ``forget()`` drops what that thread may have left half changed. For a lock
    over what a child can do without (a memo, a cache, a value built at first use), taken
    around code that does not fork: a plain lock may be released by any thread, so a lock the
    forking thread itself held across the fork would be released under it. Held weakly, and
    ``forget`` too when it is the lock's owner's method."""
    if forget is None:
        _freed[lock] = None
    elif inspect.ismethod(forget):  # not kept alive by the lock it owns
        # Not a WeakMethod, whose callback fails when it dies with its owner (Python 3.11).
        owner, function = weakref.ref(forget.__self__), forget.__func__
        _freed[lock] = lambda: None if (of := owner()) is None else function.__get__(of)
    else:
        _freed[lock] = lambda: forget
    return lock


def track(owner: ForkAware) -> None:
    """Tell ``owner`` of every fork from now on (in the child), for as long as it lives."""
    _owners.add(owner)


def keep(handle: object) -> None:
    """Keep ``handle``, the parent's, unclosed and uncollected in this (child) process."""
    _inherited.append(handle)


def _before() -> None:
    for lock in sorted(_quiesced, key=lambda q: -q.rank):  # the outer ones first
        lock.before_fork()


def _in_parent() -> None:
    for lock in list(_quiesced):
        lock.after_fork_in_parent()


def _in_child() -> None:
    failed: Exception | None = None
    for lock, forgetting in list(_freed.items()):
        if lock.locked():
            lock.release()
            forget = forgetting() if forgetting is not None else None
            try:
                if forget is not None:
                    forget()
            except Exception as exc:
                failed = failed or exc
    for owner in list(_owners):
        try:
            owner.after_fork()
        except Exception as exc:  # the other owners still let go of the parent's
            failed = failed or exc
    if failed is not None:
        raise failed  # reported by Python as an exception it could not raise


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(before=_before, after_in_parent=_in_parent, after_in_child=_in_child)
