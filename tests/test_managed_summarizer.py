"""A user's summarizer in the managed mode: what it returns is checked, named after it."""

from __future__ import annotations

import re
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


def test_a_summary_over_its_share_is_cut_to_it_and_kept_whole_as_an_artifact() -> None:
    # A model's summary of 9,000 tokens at a 16k window left every request above where a
    # compaction is due at once: each request compacted again, calling the model every turn.
    calls: list[int] = []

    def verbose(messages: Sequence[Message], instructions: str | None) -> str:
        calls.append(len(messages))
        return "\n".join(f"- step {k}: the agent probed value_{k} and moved on" for k in range(700))

    policy = WindowPolicy(window=16_000, summarizer=verbose)
    session = Session(counter=COUNTER, filters=False, window=policy)
    requests = run(session, 60)
    compactions = [e for e in session.window_state.events if e.action == "compacted"]
    assert 1 <= len(calls) == len(compactions) <= 6
    summary = next(m for m in requests[-1].messages if m.id.startswith("summary-"))
    usable = policy.room(tool_tokens=0) - COUNTER.count_messages([SYSTEM, TASK])
    assert COUNTER.count(summary.text) <= policy.summary_share * usable + 100
    assert "- step 0: the agent probed value_0" in summary.text  # its head is kept
    [artifact] = re.findall(r"cut to its head.*original: artifact (\S+?)[;\]]", summary.text)
    assert session.store.get(artifact).endswith(
        "- step 699: the agent probed value_699 and moved on"
    )
    decisions = session.window_state.decisions
    cut = [d for d in decisions if d.message_id == summary.id and d.action == "merged"]
    assert cut and artifact in cut[-1].reason


def test_a_render_that_fails_leaves_an_in_memory_session_as_it_was() -> None:
    # A stored session restored its state; one in memory kept what the render had done before
    # the summarizer failed (the rents it added, an edit made), then did it again on the retry.
    failures = [TypeError("a bug in the summarizer")]

    def flaky(messages: Sequence[Message], instructions: str | None) -> str:
        if failures:
            raise failures.pop()
        return "the agent probed files"

    policy = WindowPolicy(window=8_000, summarizer=flaky, clear_at=0.05, keep=1)
    session = Session(counter=COUNTER, filters=False, window=policy)
    session.extend([SYSTEM, TASK])
    for i in range(60):
        session.extend(step(i))
        before = session.window_state.to_json()
        try:
            session.render()
        except TypeError:
            assert session.window_state.to_json() == before
            break
    else:
        pytest.fail("the summarizer was never called")
    session.render()
    assert session.window_state.summary == "the agent probed files"


def test_a_summarizer_that_fails_gives_way_to_the_digest_and_says_why() -> None:
    # Its error failed the render: a model down for the summaries took the agent's own
    # requests down with it, at every request past compact_at.
    calls: list[int] = []

    def down(messages: Sequence[Message], instructions: str | None) -> str:
        calls.append(len(messages))
        raise ConnectionError("the summarizing model is down")

    policy = WindowPolicy(window=8_000, summarizer=down)
    session = Session(counter=COUNTER, filters=False, window=policy)
    requests = run(session, 60)
    assert calls and session.window_state.compacted
    room = policy.room(tool_tokens=0)
    assert max(r.tokens for r in requests) <= room
    summary = next(m for m in requests[-1].messages if m.id.startswith("summary-"))
    assert "## " in summary.text  # the extractive digest's sections
    merged = [
        d
        for d in session.window_state.decisions
        if d.message_id.startswith("summary-") and d.reason.startswith("summary of")
    ]
    assert len(merged) == len(calls)
    assert all(
        "the summarizer raised ConnectionError: the summarizing model is down" in d.reason
        and "extractive digest" in d.reason
        for d in merged
    )


@pytest.mark.parametrize("mistake", [TypeError, NameError, AttributeError, AssertionError])
def test_a_summarizer_with_a_programming_error_fails_the_render(
    mistake: type[Exception],
) -> None:
    # A digest standing in would hide the bug from the one who must fix it.
    def broken(messages: Sequence[Message], instructions: str | None) -> str:
        raise mistake("a bug in the summarizer")

    policy = WindowPolicy(window=8_000, summarizer=broken)
    session = Session(counter=COUNTER, filters=False, window=policy)
    with pytest.raises(mistake, match="a bug in the summarizer"):
        run(session, 60)
    assert not session.window_state.compacted


def test_a_compactor_whose_summarizer_fails_gives_way_to_the_digest_and_says_why() -> None:
    # The managed session fell back to the digest; a Compactor raised the summarizer's error
    # out of pack(), at every pack() past its trigger.
    calls: list[int] = []

    def down(messages: Sequence[Message], instructions: str | None) -> str:
        calls.append(len(messages))
        raise ConnectionError("the summarizing model is down")

    compactor = Compactor(summarizer=down, trigger=50_000, keep_recent=2)
    history = [SYSTEM, TASK, *(m for i in range(60) for m in step(i, lines=60))]
    first = pack(history, budget=200_000, counter=COUNTER, pipeline=Pipeline([compactor]))
    assert calls
    summary = next(m for m in first.messages if m.id.startswith("summary-"))
    assert "## " in summary.text  # the extractive digest's sections
    merged = next(d for d in first.decisions if d.message_id == summary.id)
    assert "the summarizer raised ConnectionError: the summarizing model is down" in merged.reason
    assert "extractive digest" in merged.reason
    assert first.tokens < 50_000
    # Memoised as a summary is: the same history keeps the same prefix, the model is not
    # called again at every pack(); clear_cache() tries it again.
    made = len(calls)
    again = pack(history, budget=200_000, counter=COUNTER, pipeline=Pipeline([compactor]))
    assert len(calls) == made and again.messages == first.messages
    compactor.clear_cache()
    pack(history, budget=200_000, counter=COUNTER, pipeline=Pipeline([compactor]))
    assert len(calls) == 2 * made


@pytest.mark.parametrize("mistake", [TypeError, NameError, AttributeError, AssertionError])
def test_a_compactor_whose_summarizer_has_a_programming_error_raises_it(
    mistake: type[Exception],
) -> None:
    def broken(messages: Sequence[Message], instructions: str | None) -> str:
        raise mistake("a bug in the summarizer")

    compactor = Compactor(summarizer=broken, trigger=50_000, keep_recent=2)
    history = [SYSTEM, TASK, *(m for i in range(60) for m in step(i, lines=60))]
    with pytest.raises(mistake, match="a bug in the summarizer"):
        pack(history, budget=200_000, counter=COUNTER, pipeline=Pipeline([compactor]))
