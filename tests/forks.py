"""Forked children for the tests of objects made before a fork and used after it."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="this platform has no fork")


def fork(work: Callable[[], None]) -> int:
    """Run ``work`` in a forked child, which exits 0 if it returned, 1 (its traceback on
    stderr) if it raised; the child's pid."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child, seen through its exit code
        code = 1
        try:
            work()
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    return pid


def succeeded(pid: int, timeout: float = 60.0) -> bool:
    """Whether the child ``pid`` exited 0 (waited for). A child still running after
    ``timeout`` seconds (a deadlock: only a guard, not a measure) is killed, and fails the
    test."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status) == 0
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"the forked child was still running after {timeout:.0f} s")
        time.sleep(0.01)


def forked_while_held(
    *locks: AbstractContextManager[Any],
    child: Callable[[], None],
    release_after: float | None = None,
) -> int:
    """Fork, ``child`` the child's work, while another thread holds ``locks`` (in the middle
    of a call); that thread lets go once the child is forked, or ``release_after`` seconds
    after it took them (for a fork that waits for the call). The child's pid."""
    entered, go_on = threading.Event(), threading.Event()

    def busy() -> None:
        held = [lock.__enter__() for lock in locks]
        try:
            entered.set()
            go_on.wait(30)
        finally:
            for lock in reversed(locks[: len(held)]):
                lock.__exit__(None, None, None)

    thread = threading.Thread(target=busy)
    thread.start()
    entered.wait(30)
    if release_after is not None:
        threading.Timer(release_after, go_on.set).start()
    pid = fork(child)
    go_on.set()
    thread.join()
    return pid
