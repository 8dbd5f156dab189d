"""A user's summarizer in the managed mode: what it returns is checked, named after it."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ctxpack import ConfigError, Message, Pipeline, Session, pack
from ctxpack.editing import Compactor
from ctxpack.managed import WindowPolicy

from .test_managed import COUNTER, SYSTEM, TASK, run, step


def _surrogate(messages: Sequence[Message], instructions: str | None) -> str:
    return "the agent read probe \ud800 files"


def test_a_summary_with_a_lone_surrogate_is_refused_naming_the_summarizer() -> None:
    # It was taken, and failed building the summary message, an InvalidMessageError about a
    # "content" no message of the caller's has.
    policy = WindowPolicy(window=8_000, summarizer=_surrogate)
    session = Session(counter=COUNTER, filters=False, window=policy)
    with pytest.raises(ConfigError, match=r"summarizer.*lone surrogate U\+D800"):
        run(session, 60)
    assert not session.window_state.compacted  # the failed render left no compaction behind


def test_a_compactor_refuses_the_same_summary_naming_the_summarizer() -> None:
    compactor = Compactor(summarizer=_surrogate, trigger=50_000, keep_recent=2)
    history = [SYSTEM, TASK, *(m for i in range(60) for m in step(i, lines=60))]
    with pytest.raises(ConfigError, match=r"summarizer.*lone surrogate U\+D800"):
        pack(history, budget=100_000, counter=COUNTER, pipeline=Pipeline([compactor]))
