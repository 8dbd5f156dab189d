"""A render again without an append in between is the same request."""

from __future__ import annotations

from ctxpack import Session

from .test_managed import COUNTER, SYSTEM, TASK, step


def _sent(session: Session) -> tuple[list[dict[str, object]], list[dict[str, object]], int]:
    result = session.render()
    messages = [m.model_dump(mode="json") for m in result.messages]
    decisions = [d.model_dump(mode="json") for d in result.decisions]
    return messages, decisions, result.tokens


def test_rendering_the_same_history_again_sends_the_same_request() -> None:
    # Each render added the rent of the tokens an edit would remove, as if the request had been
    # sent again: a caller retrying a failed call (or a wrapper and its caller both rendering)
    # had the second render compact the history the first had sent whole, and rewrite the
    # prompt cache, with nothing appended.
    session = Session(counter=COUNTER, filters=False, window=8_000)
    session.extend([SYSTEM, TASK])
    for i in range(40):
        session.extend(step(i))
        first = _sent(session)
        events = len(session.window_state.events)
        for _ in range(20):
            assert _sent(session) == first, f"after step {i}"
        assert len(session.window_state.events) == events
    assert session.window_state.compacted  # the session did compact, at its own pace


def test_a_render_again_leaves_the_edits_to_come_where_they_were() -> None:
    # The renders again add nothing to what times the next edit: the session edits at the same
    # request as a session rendered once per step.
    once = Session(counter=COUNTER, filters=False, window=8_000)
    twice = Session(counter=COUNTER, filters=False, window=8_000)
    for session in (once, twice):
        session.extend([SYSTEM, TASK])
    for i in range(40):
        for session in (once, twice):
            session.extend(step(i))
            session.render()
        twice.render()
    assert [e.action for e in once.window_state.events] == [
        e.action for e in twice.window_state.events
    ]
    assert once.window_state.rent == twice.window_state.rent
    assert once.window_state.compact_rent == twice.window_state.compact_rent


def test_a_render_again_with_more_tools_than_fit_still_fits() -> None:
    session = Session(counter=COUNTER, filters=False, window=8_000)
    session.extend([SYSTEM, TASK])
    for i in range(6):
        session.extend(step(i))
    first = session.render()
    assert not session.window_state.events
    words = " ".join(f"field{k}" for k in range(2_400))
    tools = [{"type": "function", "function": {"name": "big", "description": words}}]
    again = session.render(tools=tools)
    assert again.tokens <= 8_000 - session.window.reserve < first.tokens + again.tool_tokens
    assert session.window_state.events  # edited to fit, and recorded
