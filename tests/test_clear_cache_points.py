"""The rewrite a clearing batch reports, and is timed by, is the one the provider's prompt cache
bills: where one breakpoint ends each request (Anthropic), a batch editing further back than the
lookback writes the whole prompt again; where every message boundary is cached, what follows the
edit point."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import pytest

import ctxpack
from ctxpack import ConfigError, Pipeline
from ctxpack.cost import Bill, price, simulate
from ctxpack.editing import ClearBatch, ToolResultClearer
from ctxpack.messages import ensure_messages
from ctxpack.pipeline import PackContext
from ctxpack.tokens import REPLY_PRIMING

from .test_managed import COUNTER, SYSTEM, TASK, step
from .test_managed_cache_points import LONG_TOOLS, TOOLS

HISTORY = ensure_messages([SYSTEM, TASK, *(m for i in range(60) for m in step(i))])
# Request points: before each assistant message, and now.
POINTS = [i for i, m in enumerate(HISTORY) if m.role == "assistant" and i > 0] + [len(HISTORY)]


def replay(model: str) -> tuple[list[ClearBatch], list[int], Bill]:
    """The clearer's batches on a long tool session, the tokens of each batch's request from
    its edit point on (the figure of a cache at every message boundary), and the bill of the
    requests it sent, the cache modelled as ``model``'s provider keeps it."""
    clearer = ToolResultClearer(trigger=6_000, keep=5, model=model)
    requests: list[dict[str, Any]] = []
    for p in POINTS:
        result = ctxpack.pack(
            HISTORY[:p], budget=1_000_000, counter=COUNTER, pipeline=Pipeline([clearer])
        )
        requests.append({"messages": result.to_openai()})
    points: Literal["request", "message"] = "request" if model.startswith("claude") else "message"
    bill = simulate(requests, price=price(model), counter=COUNTER, cache_points=points)
    batches = clearer.batches(HISTORY, counter=COUNTER)
    sent = [requests[POINTS.index(b.position)]["messages"] for b in batches]
    edits = [min(HISTORY.index(m) for m in HISTORY if m.id in b.message_ids) for b in batches]
    from_edit = [
        REPLY_PRIMING + sum(COUNTER.count_message(m) for m in ensure_messages(s)[e:])
        for s, e in zip(sent, edits, strict=True)
    ]
    return batches, from_edit, bill


def test_a_clearing_deep_in_an_anthropic_session_reports_the_whole_prompt_billed() -> None:
    # One breakpoint at the end of each request, found within 20 blocks: a batch clearing
    # results 5 steps back finds no entry, and the whole prompt is written again, not only
    # what follows the edit point.
    batches, from_edit, bill = replay("claude-sonnet-4-5")
    assert len(batches) >= 2
    for batch, after in zip(batches, from_edit, strict=True):
        row = bill.requests[POINTS.index(batch.position)]
        assert row.cache_read_tokens == 0
        assert batch.tokens_after_edit == row.cache_write_tokens
        assert batch.tokens_after_edit > after  # the prefix before the edit point too


def test_a_clearing_in_an_openai_session_reports_the_prompt_from_the_edit() -> None:
    # Automatic prefix caching keeps every message boundary: only what follows the edit point
    # is written again, from the last of OpenAI's 128-token increments before it, as the bill
    # at message cache points writes it.
    batches, from_edit, bill = replay("gpt-5")
    assert len(batches) >= 2
    for batch in batches:
        row = bill.requests[POINTS.index(batch.position)]
        assert batch.tokens_after_edit == row.cache_write_tokens
    # The first batch edits within the model's minimum cacheable length of the start, which
    # was never an entry: the whole prompt. The later ones keep the prefix before the edit.
    assert bill.requests[POINTS.index(batches[0].position)].cache_read_tokens == 0
    for batch, after in zip(batches[1:], from_edit[1:], strict=True):
        row = bill.requests[POINTS.index(batch.position)]
        assert row.cache_read_tokens > 0
        kept = row.input_tokens - after  # the prefix before the edit point
        assert batch.tokens_after_edit == after + kept % 128


def clearer() -> ToolResultClearer:
    return ToolResultClearer(trigger=6_000, keep=5, model="claude-sonnet-4-5")


def cleared_at(tools: Sequence[dict[str, Any]]) -> list[int]:
    """The requests at which pack() with ``tools`` clears a result it sent whole before."""
    stage = clearer()
    out, seen = [], 0
    for p in POINTS:
        result = ctxpack.pack(
            HISTORY[:p], budget=1_000_000, counter=COUNTER, tools=tools, pipeline=Pipeline([stage])
        )
        cleared = sum(d.action == "cleared" for d in result.decisions)
        if cleared > seen:
            out.append(p)
        seen = cleared
    return out


def test_an_anthropic_batch_reports_the_tool_definitions_the_whole_prompt_rewrite_writes() -> None:
    # The tools come first in the cached prefix: a batch that finds no entry writes them
    # again, as Claude bills them (Anthropic tools, with its tool-use prompt), whatever form
    # the caller gives them in.
    stage = clearer()
    requests = []
    for p in POINTS:
        result = ctxpack.pack(
            HISTORY[:p], budget=1_000_000, counter=COUNTER, tools=TOOLS, pipeline=Pipeline([stage])
        )
        requests.append({"messages": result.to_openai(), "tools": TOOLS})
    bill = simulate(requests, price=price("claude-sonnet-4-5"), counter=COUNTER)
    batches = stage.batches(HISTORY, counter=COUNTER, tools=TOOLS)
    assert len(batches) >= 2
    # pack() hands the stage its tools: it clears where batches() given them does.
    assert [b.position for b in batches] == cleared_at(TOOLS)
    for batch in batches:
        row = bill.requests[POINTS.index(batch.position)]
        assert row.cache_read_tokens == 0
        assert batch.tokens_after_edit == row.cache_write_tokens


def test_the_clearing_rule_pays_for_the_tool_definitions_an_anthropic_rewrite_writes() -> None:
    # Long definitions make a whole-prompt rewrite dearer: the first batch waits longer.
    assert cleared_at(LONG_TOOLS)[0] > cleared_at(TOOLS)[0]


def test_tools_that_are_not_tool_definitions_are_refused_by_name() -> None:
    with pytest.raises(ConfigError, match=r"^tools\[1\]"):
        clearer().batches(HISTORY, counter=COUNTER, tools=[*TOOLS, "bash"])
    with pytest.raises(ConfigError, match=r"PackContext\.tools\[0\]"):
        PackContext(messages=HISTORY, budget=1_000, counter=COUNTER, tools=["bash"])


def first_batch(model: str, long_at: int | None = None) -> int:
    """Where the clearer's first batch goes on a tool session whose output appended just
    before request point ``long_at`` is 300 lines long (the others 25)."""
    steps = [
        step(i, 300 if long_at is not None and 2 + 2 * (i + 1) == long_at else 25)
        for i in range(60)
    ]
    history = ensure_messages([SYSTEM, TASK, *(m for s in steps for m in s)])
    clearer = ToolResultClearer(trigger=2_000, keep=5, model=model)
    return clearer.batches(history, counter=COUNTER)[0].position


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "gpt-5"])
def test_what_a_request_appends_does_not_delay_a_batch(model: str) -> None:
    # A request writes what was appended since the one before whether or not it clears: only
    # the tokens the batch makes the cache write instead of read cost more. Priced whole, the
    # rewrite made a long output arriving just before a batch that had paid delay it.
    position = first_batch(model)
    assert first_batch(model, long_at=position) == position
