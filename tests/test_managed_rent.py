"""The rule that times a clearing counts only what re-sending the clearable results has cost."""

from __future__ import annotations

import itertools
from typing import Any, Literal

import pytest

from ctxpack import Session
from ctxpack.managed import WindowPolicy

from .test_managed import COUNTER, SYSTEM, TASK, run, step


def test_a_compaction_leaves_no_rent_for_the_next_clearing() -> None:
    # The rent paid on the results a compaction summarised stayed: three requests after each
    # compaction a clearing went on it, a second rewrite of the prompt cache that the few
    # results sent since had not paid for.
    policy = WindowPolicy(window=32_000, keep=5, clear_at=0.2)
    session = Session(counter=COUNTER, filters=False, window=policy)
    run(session, 100)
    events = session.window_state.events
    assert [e.action for e in events].count("compacted") >= 2
    soon = [
        (a.request, b.request)
        for a, b in itertools.pairwise(events)
        if a.action == "compacted" and b.action == "cleared" and b.request - a.request <= 5
    ]
    assert not soon


@pytest.mark.parametrize(
    ("action", "options"),
    [
        ("cleared", {"window": 64_000, "keep": 5, "clear_at": 0.1, "compact_at": 0.6}),
        ("compacted", {"window": 64_000}),
    ],
)
def test_with_the_one_hour_cache_an_edit_waits_longer(action: str, options: Any) -> None:
    # The rule priced every rewrite at the 5-minute write (1.25x input), also for a caller
    # whose requests ask for the 1-hour cache, where a rewrite costs 2x: edits went too early.
    def first(ttl: Literal["5m", "1h"]) -> int:
        policy = WindowPolicy(ttl=ttl, **options)
        session = Session(counter=COUNTER, filters=False, window=policy)
        run(session, 40)
        return next(e.request for e in session.window_state.events if e.action == action)

    assert first("1h") > first("5m")


def first_edit(model: str | None, long_at: int | None = None) -> tuple[int, str]:
    """The request and action of a session's first edit, the output appended just before
    request ``long_at`` 300 lines long (the others 25)."""
    policy = WindowPolicy(window=64_000, clear_at=0.1, compact_at=0.9, keep=5)
    session = Session(model=model, counter=COUNTER, filters=False, window=policy)
    session.extend([SYSTEM, TASK])
    for i in range(60):
        session.render()
        if session.window_state.events:
            event = session.window_state.events[0]
            return event.request, event.action
        session.extend(step(i, 300 if session.window_state.requests == long_at else 25))
    raise AssertionError("no edit")


@pytest.mark.parametrize("model", [None, "gpt-5"], ids=["claude cache", "every boundary cached"])
def test_what_a_request_appends_does_not_delay_an_edit(model: str | None) -> None:
    # A request writes what was appended since the last one whether or not it edits: only the
    # tokens the edit makes the cache write instead of read cost more. The rule priced the whole
    # rewrite, so a long output arriving just before a batch had paid for itself delayed it
    # by five requests here (until that output was itself clearable), each re-sending it.
    request, action = first_edit(model)
    assert action == "cleared"
    assert first_edit(model, long_at=request) == (request, "cleared")
