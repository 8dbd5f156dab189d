"""The selection strategies of benchmarks/agent_sessions.py, on a session small enough to check.

The benchmark's figures are not tested (benchmarks measure); what each strategy sends, and what
it records for billing the selector, is.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ctxpack import get_counter

from ..helpers import load_script
from .helpers import session_messages

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "agent_sessions.py"


@pytest.fixture(scope="module")
def harness() -> ModuleType:
    return load_script(SCRIPT, "agent_sessions_for_selection")


def _session(harness: ModuleType) -> Any:
    messages = session_messages()
    # One more step: the agent reads the file the failing test names.
    messages += [
        {
            "role": "assistant",
            "content": "Reading it.",
            "tool_calls": [
                {
                    "id": "call_3",
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": "cat a"})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_3", "content": "refreshToken returns session"},
        {"role": "assistant", "content": "refreshToken in src/auth.ts never sets expiresAt."},
    ]
    return harness.AgentSession(id="fixture", messages=messages)


def _replay(harness: ModuleType, name: str, factory: Any) -> tuple[Any, list[Any]]:
    made: list[Any] = []

    def keep(info: Any) -> Any:
        made.append(factory(info))
        return made[-1]

    counter = get_counter(counter=harness.ENCODING)
    billing = harness.Billing.parse("claude-sonnet-4-5@request")
    run = harness.replay(_session(harness), name, keep, counter, [billing])
    return run, made


def test_both_strategies_are_registered(harness: ModuleType) -> None:
    assert "select-lexical-16k" in harness.STRATEGIES
    assert "select-lexical-when-over-32k" in harness.STRATEGIES


def test_selecting_before_each_step_calls_the_selector_each_step(harness: ModuleType) -> None:
    def factory(info: Any) -> Any:
        # A budget the session exceeds, so that something is left out.
        return harness.SelectBeforeEachStep(info, budget=150)

    run, (strategy,) = _replay(harness, "s", factory)
    steps = len(run.main)
    assert steps == 5  # one per assistant message
    assert len(strategy.selector_requests) == steps
    call = strategy.selector_requests[-1]
    assert call["messages"][0]["content"].startswith("You choose what a large model reads")
    assert call["messages"][1]["content"].startswith("Goal: ")
    assert call["output_tokens"] > 0
    # The request is the applied selection: the context message, listing what was left out,
    # comes last.
    last = run.requests[run.main[-1]].messages
    assert last[-1]["content"].startswith("[Context selected for this step by LexicalSelector]")
    assert "Left out of this step: messages" in last[-1]["content"]


def test_selecting_when_over_a_trigger_is_append_only_below_it(harness: ModuleType) -> None:
    low = harness.STRATEGIES["select-lexical-when-over-32k"]
    run, (strategy,) = _replay(harness, "w", low)
    assert strategy.selector_requests == []  # never over 32k tokens
    requests = [run.requests[i].messages for i in run.main]
    for before, after in itertools.pairwise(requests):
        assert after[: len(before)] == before


def test_selecting_when_over_a_small_trigger_reselects_then_extends(harness: ModuleType) -> None:
    def factory(info: Any) -> Any:
        return harness.SelectWhenOver(info, budget=120, trigger=150)

    run, (strategy,) = _replay(harness, "w", factory)
    assert len(strategy.selector_requests) >= 1
    assert len(strategy.selector_requests) < len(run.main)
    assert run.evidence_total >= run.evidence_present


def test_the_goal_is_the_agents_last_message_and_what_answered_it(harness: ModuleType) -> None:
    history = session_messages()[:6]
    goal = harness.step_goal(history)
    assert goal.endswith("Tests: 1 failed, 14 passed, 15 total")
    assert harness.step_goal([]) == ""
