"""The rewrite an edit of the managed mode records, and times edits by, is the one the provider's
prompt cache bills: where one breakpoint ends each request (Anthropic), an edit further back
than the lookback writes the whole prompt again."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any, Literal

import pytest

from ctxpack import ConfigError, Session
from ctxpack.cost import Bill, price, simulate
from ctxpack.managed import WindowEvent, WindowPolicy, WindowState, render_window
from ctxpack.messages import ensure_messages
from ctxpack.store import SQLiteArtifactStore
from ctxpack.tokens import REPLY_PRIMING

from .test_managed import COUNTER, SYSTEM, TASK, premiums, step

# Clears well before it compacts, a few results kept: each batch edits far back in the prompt.
POLICY = WindowPolicy(window=32_000, clear_at=0.2, compact_at=0.9, keep=5)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]

# Tool definitions of several thousand tokens (an agent's many tools); the room a 64k window
# manages (managed_room) is the same with or without them.
LONG_TOOLS = [
    *TOOLS,
    {
        "type": "function",
        "function": {
            "name": "editor",
            "description": " ".join(f"Rule {k}: edit files with care." for k in range(600)),
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    },
]
WIDE = WindowPolicy(window=64_000, clear_at=0.2, compact_at=0.9, keep=5)


def replay(
    model: str | None,
    steps: int = 90,
    policy: WindowPolicy = POLICY,
    *,
    every: int = 1,
    lines: int = 25,
) -> tuple[list[WindowEvent], Bill]:
    """The session's clearings, and the bill of the requests it sent (one every ``every``
    steps), the cache modelled as ``model``'s provider keeps it."""
    session = Session(model=model, counter=COUNTER, filters=False, window=policy)
    session.extend([SYSTEM, TASK])
    requests = []
    for i in range(steps):
        if i % every == 0:
            result = session.render(tools=TOOLS)
            # The agent's tools, then the session's retrieve tool: what render() counted.
            requests.append({"messages": result.to_openai(), "tools": TOOLS + session.tools()})
        session.extend(step(i, lines))
    points: Literal["request", "message"] = (
        "request" if model is None or model.startswith("claude") else "message"
    )
    bill = simulate(
        requests,
        price=price("claude-sonnet-4-5" if points == "request" else "gpt-5"),
        counter=COUNTER,
        cache_points=points,
    )
    cleared = [e for e in session.window_state.events if e.action == "cleared"]
    return cleared, bill


def test_a_clearing_deep_in_an_anthropic_session_reports_the_whole_prompt_billed() -> None:
    # One breakpoint at the end of each request, found within 20 blocks: a batch clearing
    # results 10 steps back finds no entry, and the whole prompt (tools too) is written again,
    # not only what follows the edit point.
    cleared, bill = replay("claude-sonnet-4-5")
    assert cleared
    for event in cleared:
        row = bill.requests[event.request]
        assert row.cache_read_tokens == 0  # nothing reachable: the figure below is the whole
        assert abs(event.rewritten - row.cache_write_tokens) <= REPLY_PRIMING
        assert event.rewritten > event.tokens_after  # the tool definitions too


def test_a_session_naming_no_model_is_timed_as_the_model_whose_prices_time_it() -> None:
    # claude-sonnet-4-5 prices its edits, so its cache decides what they rewrite: the whole
    # prompt, its tools counted as Claude bills them (as Anthropic tools, with Anthropic's
    # tool-use prompt), not in the OpenAI form the session sends them in.
    cleared, bill = replay(None)
    assert cleared
    for event in cleared:
        row = bill.requests[event.request]
        assert row.cache_read_tokens == 0
        assert abs(event.rewritten - row.cache_write_tokens) <= REPLY_PRIMING
        assert event.rewritten > event.tokens_after


def test_a_clearing_in_an_openai_session_reports_the_prompt_from_the_edit() -> None:
    # Automatic prefix caching keeps every message boundary: only what follows the edit point
    # is written again, as the bill at message cache points writes it.
    cleared, bill = replay("gpt-5")
    assert len(cleared) >= 2
    for event in cleared:
        row = bill.requests[event.request]
        assert abs(event.rewritten - row.cache_write_tokens) <= REPLY_PRIMING
    # The first batch edits within the model's minimum cacheable length of the start, which
    # was never an entry: the whole prompt. The later ones keep the prefix before the edit.
    assert bill.requests[cleared[0].request].cache_read_tokens == 0
    for event in cleared[1:]:
        assert bill.requests[event.request].cache_read_tokens > 0
        assert event.rewritten < event.tokens_after


def first_clearing(model: str, tools: list[dict[str, Any]]) -> int:
    session = Session(model=model, counter=COUNTER, filters=False, window=WIDE)
    session.extend([SYSTEM, TASK])
    for i in range(120):
        session.render(tools=tools)
        if session.window_state.events:
            return session.window_state.events[0].request
        session.extend(step(i))
    raise AssertionError("no clearing")


def test_the_clearing_rule_pays_for_the_tool_definitions_an_anthropic_rewrite_writes() -> None:
    # The rent rule prices the rewrite the provider bills: an Anthropic batch writes the tool
    # definitions again with the whole prompt, so long definitions make it wait; where every
    # message boundary is cached they stay read, and make no batch wait.
    assert first_clearing("claude-sonnet-4-5", LONG_TOOLS) > first_clearing(
        "claude-sonnet-4-5", TOOLS
    )
    assert first_clearing("gpt-5", LONG_TOOLS) <= first_clearing("gpt-5", TOOLS)


def test_render_window_refuses_tools_that_are_not_tool_definitions() -> None:
    # The tools a rewrite writes again are counted from their definitions: a bad one is the
    # caller's mistake, named, not a TypeError from the counter.
    with pytest.raises(ConfigError, match=r"tools\[1\]"):
        render_window(
            WindowState(),
            POLICY,
            record=ensure_messages([SYSTEM, TASK]),
            counter=COUNTER,
            store=SQLiteArtifactStore(":memory:"),
            original_artifact=lambda position, store: "a",
            tools=[*TOOLS, "bash"],
        )


# Long outputs and one result kept: each batch is small, and edits close to the prompt's end,
# within the 20 blocks an Anthropic request looks back.
CLOSE = WindowPolicy(window=64_000, clear_at=0.1, compact_at=0.9, keep=1)


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "gpt-5"])
@pytest.mark.parametrize("every", [1, 2, 3])
def test_a_clearing_reports_what_the_requests_actually_sent_left_cached(
    model: str, every: int
) -> None:
    # Only the ends of requests really sent are entries, and only while what precedes them is
    # sent unchanged: not a point a reply follows when renders skip replies, nor the end of a
    # request sent before an earlier clearing edited what it held.
    cleared, bill = replay(model, 40, CLOSE, every=every, lines=400)
    assert len(cleared) >= 3
    for event in cleared:
        row = bill.requests[event.request]
        assert abs(event.rewritten - row.cache_write_tokens) <= REPLY_PRIMING


def test_a_state_saved_before_the_request_ends_were_kept_goes_on_and_keeps_them() -> None:
    # Without them, the request after reads every point a reply follows as an entry (the
    # estimate it always made); from then on it knows the ends it sends.
    one = Session(model="claude-sonnet-4-5", counter=COUNTER, filters=False, window=CLOSE)
    one.extend([SYSTEM, TASK])
    for i in range(12):
        one.render(tools=TOOLS)
        one.extend(step(i, 400))
    saved = json.loads(one.window_state.to_json())
    assert saved.pop("cache_ends")
    two = Session(
        model="claude-sonnet-4-5",
        counter=COUNTER,
        filters=False,
        window=CLOSE,
        store=one.store,
        window_state=WindowState.from_json(json.dumps(saved)),
    )
    two.extend(one.transcript())
    assert two.render(tools=TOOLS).messages == one.render(tools=TOOLS).messages
    last = two.render(tools=TOOLS).messages[-1].id
    assert two.window_state.cache_ends == [last]
    assert (one.window_state.cache_ends or [])[-1:] == [last]


class Clock:
    """The wall clock the session reads, moved by hand."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def paused(clock: Clock, policy: WindowPolicy, pause: float) -> tuple[int, list[WindowEvent], Bill]:
    """The request after the first one whose batch of results waited for its rent, sent
    ``pause`` seconds after it (the others a few seconds apart); the session's edits, and the
    bill of its requests at the times they were sent."""
    session = Session(model="claude-sonnet-4-5", counter=COUNTER, filters=False, window=policy)
    session.extend([SYSTEM, TASK])
    waited = None
    requests, times = [], []
    for i in range(40):
        clock.now += pause if waited is not None and session.window_state.requests == waited else 5
        result = session.render(tools=TOOLS)
        requests.append({"messages": result.to_openai(), "tools": TOOLS + session.tools()})
        times.append(clock.now)
        if waited is None and session.window_state.rent > 0 and not session.window_state.events:
            waited = session.window_state.requests
        session.extend(step(i, 100))
    assert waited is not None
    bill = simulate(
        requests,
        price=price("claude-sonnet-4-5"),
        counter=COUNTER,
        ttl=policy.ttl,
        timestamps=times,
    )
    return waited, session.window_state.events, bill


def test_a_batch_waiting_for_its_rent_goes_once_the_cache_has_expired(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Twenty minutes after the last request nothing is cached: the next writes the whole
    # prompt whatever it edits, so the batch costs nothing more in rewrites and goes.
    clock = Clock()
    monkeypatch.setattr(time, "time", clock)
    warm_request, warm, _ = paused(clock, CLOSE, 0)
    cold_request, cold, bill = paused(clock, CLOSE, 20 * 60)
    assert warm_request == cold_request
    assert warm[0].request > warm_request  # it waited, the cache being warm
    assert cold[0].request == cold_request and cold[0].action == "cleared"
    # It writes the whole prompt, tool definitions too, as the bill at those times does.
    assert cold[0].rewritten > cold[0].tokens_after
    for event in cold:
        row = bill.requests[event.request]
        assert abs(event.rewritten - row.cache_write_tokens) <= REPLY_PRIMING
    # A cache asked to live an hour is still there twenty minutes on.
    hour = CLOSE.model_copy(update={"ttl": "1h"})
    assert paused(clock, hour, 0)[1] == paused(clock, hour, 20 * 60)[1]


# A system prompt over OpenAI's minimum cacheable length: a compaction keeps it cached.
LONG_SYSTEM = {
    "role": "system",
    "content": "You are a coding agent. "
    + " ".join(f"Rule {k}: never push to main." for k in range(200)),
}


def compacting(clock: Clock, pause_at: int | None) -> tuple[list[WindowEvent], list[int], Bill]:
    """A gpt-5 session that compacts every few requests, its request ``pause_at`` sent 20
    minutes after the one before (the others 5 seconds apart): its compactions, the prompt
    tokens of its requests (tool definitions excluded), and their bill at those times."""
    session = Session(model="gpt-5", counter=COUNTER, filters=False, window=16_000)
    session.extend([LONG_SYSTEM, TASK])
    tokens, requests, times = [], [], []
    for i in range(60):
        clock.now += 20 * 60 if session.window_state.requests == pause_at else 5
        result = session.render()
        tokens.append(result.tokens - result.tool_tokens)
        requests.append({"messages": result.to_openai(), "tools": session.tools()})
        times.append(clock.now)
        session.extend(step(i))
    bill = simulate(
        requests, price=price("gpt-5"), counter=COUNTER, cache_points="message", timestamps=times
    )
    events = session.window_state.events
    return [e for e in events if e.action == "compacted"], tokens, bill


def cold_second(monkeypatch: pytest.MonkeyPatch) -> tuple[list[WindowEvent], list[int], Bill]:
    """:func:`compacting` paused before the request of its second compaction, on a clock
    moved by hand: that compaction is made with the cache expired."""
    clock = Clock()
    monkeypatch.setattr(time, "time", clock)
    warm = compacting(clock, None)[0]
    return compacting(clock, warm[1].request)


def test_a_compaction_after_one_the_expired_cache_made_whole_is_priced_as_a_warm_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A compaction rendered after the cache expired writes the whole prompt; the next one,
    # warm, keeps the cached system prompt: it waits for the rent of the last warm one's
    # rewrite, not of that whole prompt.
    events, tokens, _ = cold_second(monkeypatch)
    first, cold, nxt = events[:3]
    assert cold.cold and not first.cold and not nxt.cold
    assert cold.rewritten > first.rewritten + 1_000  # the system prompt, written again
    p = price("gpt-5")
    carried = [*tokens[cold.request + 1 : nxt.request], nxt.tokens_before]
    rents = list(itertools.accumulate(p.cache_read * (t - cold.tokens_after) for t in carried))
    premium = premiums(p, first.rewritten, cold.tokens_after, carried)
    assert rents[-1] > premium[-1]  # it paid when it went
    assert rents[-2] <= premium[-2]  # and not a request before


def test_a_batch_waiting_for_its_rent_goes_with_an_edit_that_left_no_entry_to_find() -> None:
    # A Claude request whose release of user messages edits far back finds no cache entry and
    # writes the whole prompt: clearing the results waiting for their rent in the same request
    # costs nothing more, and spares the rewrite of clearing them at a later one.
    policy = WindowPolicy(
        window=32_000, clear_at=0.1, compact_at=0.9, keep=1, instructions_share=0.1
    )
    session = Session(model="claude-sonnet-4-5", counter=COUNTER, filters=False, window=policy)
    session.extend([SYSTEM, TASK])
    requests = []
    for i in range(30):
        notes = " ".join(f"note {i}.{k} keep going" for k in range(20))
        session.extend([{"role": "user", "content": f"Turn {i}: {notes}"}])
        result = session.render(tools=TOOLS)
        requests.append({"messages": result.to_openai(), "tools": TOOLS + session.tools()})
        session.extend(step(i, 60))
    bill = simulate(requests, price=price("claude-sonnet-4-5"), counter=COUNTER)
    events = session.window_state.events
    released = [e for e in events if e.action == "compacted"]
    assert released
    for event in released:
        row = bill.requests[event.request]
        assert row.cache_read_tokens == 0  # nothing found: the whole prompt is written
        [cleared] = [e for e in events if e.request == event.request and e is not event]
        assert cleared.action == "cleared" and cleared.cold
        assert abs(cleared.rewritten - row.cache_write_tokens) <= REPLY_PRIMING


def test_a_compaction_after_a_cold_one_reports_the_cached_prefix_it_keeps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every request since the cold compaction sent the system prompt, and cached each boundary
    # of it: the next compaction, which summarises the ends of those requests, keeps it read.
    events, _, bill = cold_second(monkeypatch)
    assert len(events) >= 4 and events[1].cold
    for event in events:
        row = bill.requests[event.request]
        assert abs(event.rewritten - row.cache_write_tokens) <= REPLY_PRIMING


def test_the_cache_is_timed_from_the_end_of_a_render_that_waited_for_its_summarizer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The request leaves when render() returns, after the summarizer's model call: its entry
    # lives from then. Timed from the start of that render, a render 4 minutes after the
    # request (6 after the render began) found the cache expired and forgot the entry.
    clock = Clock()
    monkeypatch.setattr(time, "time", clock)

    def slow(messages: Any, instructions: str) -> str:
        clock.now += 120  # the summarizing model's call
        return "Probes 0 to 9 ran; nothing failed yet."

    session = Session(
        counter=COUNTER, filters=False, window=WindowPolicy(window=8_000, summarizer=slow)
    )
    session.extend([SYSTEM, TASK])
    for i in range(60):
        clock.now += 5
        session.render()
        if session.window_state.events:
            break
        session.extend(step(i))
    assert [e.action for e in session.window_state.events] == ["compacted"]
    ends = session.window_state.cache_ends
    assert ends
    session.extend(step(60))
    clock.now += 240
    session.render()
    assert session.window_state.cache_ends == [*ends, session.transcript()[-1].id]
