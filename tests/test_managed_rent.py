"""The rule that times a clearing counts only what re-sending the clearable results has cost."""

from __future__ import annotations

import itertools
from typing import Any, Literal

import pytest

from ctxpack import Session
from ctxpack.managed import WindowPolicy

from .test_managed import COUNTER, run


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
