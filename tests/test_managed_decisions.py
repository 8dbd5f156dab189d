"""A managed session's decisions account, message by message, for what each edit took out."""

from __future__ import annotations

from ctxpack import Session
from ctxpack.managed import WindowPolicy

from .test_managed import COUNTER, SYSTEM, TASK, step


def test_the_decisions_of_each_request_add_up_to_what_its_edits_removed() -> None:
    # A second compaction replaced the summary before it with no decision: the request lost
    # that summary's tokens, which no decision named, and the new summary's tokens_before
    # left them out.
    session = Session(counter=COUNTER, filters=False, window=WindowPolicy(window=8_000))
    session.extend([SYSTEM, TASK])
    state = session.window_state
    summaries: list[str] = []
    for i in range(60):
        decided, edited = len(state.decisions), len(state.events)
        session.render()
        events = state.events[edited:]
        if events:
            decisions = [d for d in state.decisions[decided:] if d.action != "warned"]
            made = {d.message_id for d in decisions if d.reason.startswith("summary of")}
            removed = sum(
                d.tokens_before - d.tokens_after for d in decisions if d.message_id not in made
            )
            added = sum(d.tokens_after for d in decisions if d.message_id in made)
            assert removed - added == events[0].tokens_before - events[-1].tokens_after
            if made:
                (summary,) = made
                (decision,) = [d for d in decisions if d.message_id == summary]
                merged = [d for d in decisions if d.action == "merged" and d is not decision]
                assert decision.tokens_before == sum(d.tokens_before for d in merged)
                if summaries:
                    assert summaries[-1] in {d.message_id for d in decisions}
                summaries.append(summary)
        session.extend(step(i))
    assert len(summaries) >= 2
