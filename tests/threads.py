"""Threads for the concurrency tests: switching as often as the interpreter allows, and run to
the end with every error they raise reported."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any


@contextmanager
def switching_often() -> Iterator[None]:
    """Threads switch every microsecond: any unguarded shared state shows up."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def run_threads(target: Callable[[int], None], count: int) -> None:
    """Run ``target(0)`` to ``target(count - 1)`` on as many threads; fail with their errors."""
    errors: list[BaseException] = []

    def guarded(worker: int) -> None:
        try:
            target(worker)
        except BaseException as exc:  # the test fails on it below
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(w,)) for w in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)


def claude_conversation_in_threads(
    clients: Sequence[Any],
    *,
    workers: int,
    turns: int,
    repeat: int,
    system: Callable[[int], str] = lambda worker: "Be brief.",
) -> list[dict[str, Any]]:
    """One conversation carried on by ``workers`` threads switching often, each sending its
    turns through ``clients[worker % len(clients)]`` (wrapped Anthropic clients) with the
    history as it read it and the system prompt ``system(worker)``; returns the whole
    history."""
    history: list[dict[str, Any]] = []
    lock = threading.Lock()
    start = threading.Barrier(workers)

    def work(worker: int) -> None:
        start.wait()
        for turn in range(turns):
            with lock:
                if history:
                    history.append({"role": "assistant", "content": "Noted."})
                text = f"Worker {worker}, turn {turn}. " * repeat
                history.append({"role": "user", "content": text})
                snapshot = list(history)
            clients[worker % len(clients)].messages.create(
                model="claude-sonnet-4-5",
                max_tokens=200,
                system=system(worker),
                messages=snapshot,
            )

    with switching_often():
        run_threads(work, workers)
    return history
