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

import os
import threading
import weakref
from typing import Protocol

__all__: list[str] = []


class ForkAware(Protocol):
    def after_fork(self) -> None:
        """Called in a forked child, before anything else runs there: drop (do not close,
        unless it is only the child's) what belongs to the parent, and reset the locks."""


class Quiesced:
    """A lock that a fork waits for: held by the forking thread across the fork, so that no
    other thread is inside the connection it guards at that moment, and the child's copy of
    the connection is idle (it can be closed there). A fork waits at most ``timeout``
    seconds (a thread held up by another process's write); then the copy is left busy."""

    def __init__(self, timeout: float) -> None:
        self.lock = threading.Lock()
        self.timeout = timeout
        self._held_for_fork = False
        _quiesced.add(self)

    def before_fork(self) -> None:
        self._held_for_fork = self.lock.acquire(timeout=self.timeout)

    def after_fork_in_parent(self) -> None:
        if self._held_for_fork:
            self._held_for_fork = False
            self.lock.release()

    def after_fork_in_child(self) -> bool:
        """A new lock for the child; whether the connection was idle at the fork."""
        idle, self._held_for_fork = self._held_for_fork, False
        self.lock = threading.Lock()
        return idle


_owners: weakref.WeakSet[ForkAware] = weakref.WeakSet()
_quiesced: weakref.WeakSet[Quiesced] = weakref.WeakSet()
# What a child inherited and may not close (closing a pooled PostgreSQL connection sends the
# server a goodbye on the parent's socket; an SQLite connection another thread was inside of
# may hold SQLite's own mutex): kept for the child's life, so that it is never collected.
_inherited: list[object] = []


def track(owner: ForkAware) -> None:
    """Tell ``owner`` of every fork from now on (in the child), for as long as it lives."""
    _owners.add(owner)


def keep(handle: object) -> None:
    """Keep ``handle``, the parent's, unclosed and uncollected in this (child) process."""
    _inherited.append(handle)


def _before() -> None:
    for lock in list(_quiesced):
        lock.before_fork()


def _in_parent() -> None:
    for lock in list(_quiesced):
        lock.after_fork_in_parent()


def _in_child() -> None:
    failed: Exception | None = None
    for owner in list(_owners):
        try:
            owner.after_fork()
        except Exception as exc:  # the other owners still let go of the parent's
            failed = failed or exc
    if failed is not None:
        raise failed  # reported by Python as an exception it could not raise


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(before=_before, after_in_parent=_in_parent, after_in_child=_in_child)
