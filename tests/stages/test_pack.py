"""GreedyPacker: by score while it fits, then chronological order; protected messages first."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import BudgetExceededError, GreedyPacker
from ctxpack.stages._pack import _IN_PROGRESS

from ..helpers import call, ctx_of, ids
from ..strategies import Conversation, conversations

# Role weights alone decide, so each test isolates one rule.
ROLES_ONLY = GreedyPacker(recency_weight=0.0, signal_weights={})


def _size(message: dict[str, Any]) -> int:
    return ctx_of([message]).tokens(ctx_of([message]).messages[0])


def _room_for(*messages: dict[str, Any]) -> int:
    return 3 + sum(_size(m) for m in messages)  # 3: reply priming


def test_role_weights_order_and_chronological_output() -> None:
    a = {"role": "assistant", "content": "alpha beta", "id": "a"}
    u = {"role": "user", "content": "alpha beta", "id": "u"}
    d = {"role": "developer", "content": "alpha beta", "id": "d"}
    history: list[dict[str, Any]] = [a, u, d]
    assert ids(ROLES_ONLY(ctx_of(history, budget=_room_for(d)))) == ["d"]
    # Chosen by score (developer 8, then user 6), emitted in the original order.
    assert ids(ROLES_ONLY(ctx_of(history, budget=_room_for(d, u)))) == ["u", "d"]
    assert ids(ROLES_ONLY(ctx_of(history, budget=_room_for(d, u, a)))) == ["a", "u", "d"]


def test_default_role_weights_follow_the_seed() -> None:
    weights = GreedyPacker().role_weights
    assert weights["system"] > weights["developer"] > weights["user"] > weights["assistant"]
    assert (weights["system"], weights["developer"], weights["user"], weights["assistant"]) == (
        10.0,
        8.0,
        6.0,
        4.0,
    )


def test_greedy_skips_what_does_not_fit_and_keeps_going() -> None:
    big = {"role": "developer", "content": "word " * 50, "id": "big"}
    small = {"role": "assistant", "content": "ok", "id": "small"}
    out = ROLES_ONLY(ctx_of([big, small], budget=_room_for(small) + 5))
    assert ids(out) == ["small"]
    dropped = next(d for d in out.decisions if d.message_id == "big")
    assert dropped.action == "dropped"
    assert dropped.tokens_after == 0
    assert f"needs {_size(big)} tokens" in dropped.reason


def test_priority_adds_to_the_score() -> None:
    a = {"role": "assistant", "content": "alpha beta", "id": "a", "priority": 3.0}
    u = {"role": "user", "content": "alpha beta", "id": "u"}
    assert ids(ROLES_ONLY(ctx_of([u, a], budget=_room_for(a)))) == ["a"]


def test_recency_breaks_ties_between_equal_roles() -> None:
    old = {"role": "user", "content": "alpha beta", "id": "old"}
    new = {"role": "user", "content": "gamma delta", "id": "new"}
    assert ids(GreedyPacker()(ctx_of([old, new], budget=_room_for(new)))) == ["new"]
    # Without recency the tie goes to the more recent unit as well.
    assert ids(ROLES_ONLY(ctx_of([old, new], budget=_room_for(new)))) == ["new"]


def test_signals_count_with_their_weights() -> None:
    a = {"role": "assistant", "content": "alpha beta", "id": "a"}
    u = {"role": "user", "content": "alpha beta", "id": "u"}
    ctx = ctx_of([a, u], budget=_room_for(a)).with_signal("relevance", {"a": 1.0})
    assert ids(GreedyPacker(recency_weight=0.0)(ctx)) == ["a"]
    assert ids(ROLES_ONLY(ctx)) == ["u"]


def test_a_tool_exchange_is_one_unit() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "run it", "id": "u"},
        {"role": "assistant", "content": None, "id": "c", "tool_calls": [call("1"), call("2")]},
        {"role": "tool", "content": "first result", "tool_call_id": "1", "id": "t1"},
        {"role": "tool", "content": "second result", "tool_call_id": "2", "id": "t2"},
        {"role": "assistant", "content": "done", "id": "a"},
    ]
    ctx = ctx_of(history)
    whole = 3 + sum(ctx.tokens(m) for m in ctx.messages)
    assert ids(ROLES_ONLY(ctx_of(history, budget=whole))) == ["u", "c", "t1", "t2", "a"]
    # One token short for the exchange: all three of its messages go, nothing else.
    exchange = sum(ctx.tokens(m) for m in ctx.messages[1:4])
    out = ROLES_ONLY(ctx_of(history, budget=whole - 1))
    assert ids(out) == ["u", "a"]
    for mid in ("c", "t1", "t2"):
        (decision,) = [d for d in out.decisions if d.message_id == mid]
        assert decision.action == "dropped"
        assert f"with its tool exchange, {exchange} tokens" in decision.reason
    # The unit scores as its best member: the assistant's 4, not the tools' 3.
    assert decision.score == 4.0


def test_protected_messages_are_kept_first() -> None:
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "be brief", "id": "s"},
        {"role": "assistant", "content": "pinned answer", "id": "p", "pinned": True},
        {"role": "developer", "content": "alpha beta", "id": "d"},
        {"role": "user", "content": "the question", "id": "q"},
    ]
    ctx = ctx_of(history, protected=["q"])
    budget = 3 + sum(ctx.tokens(m) for m in ctx.messages if m.id != "d")
    out = GreedyPacker()(ctx_of(history, budget=budget, protected=["q"]))
    assert ids(out) == ["s", "p", "q"]
    reasons = {d.message_id: d.reason for d in out.decisions}
    assert reasons["s"] == "protected: system prompt"
    assert reasons["p"] == "protected: pinned"
    assert reasons["q"].startswith("protected: an earlier stage")


def test_budget_exceeded_error_carries_data() -> None:
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "rule " * 40, "id": "s"},
        {"role": "user", "content": "pinned fact", "id": "p", "pinned": True},
        {"role": "assistant", "content": "droppable", "id": "a"},
    ]
    ctx = ctx_of(history)
    needed = 3 + ctx.tokens(ctx.messages[0]) + ctx.tokens(ctx.messages[1])
    with pytest.raises(BudgetExceededError) as info:
        GreedyPacker()(ctx_of(history, budget=needed + 5, reserve=10))
    err = info.value
    assert err.required == needed + 10
    assert err.budget == needed + 5
    assert err.pinned_ids == ["s", "p"]
    assert isinstance(err, ValueError)
    assert str(needed + 10) in str(err)
    assert "'s', 'p'" in str(err)
    # Exactly enough room works.
    assert ids(GreedyPacker()(ctx_of(history, budget=needed + 10, reserve=10))) == ["s", "p"]


def test_reserve_is_left_free() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "alpha beta", "id": "u1"},
        {"role": "user", "content": "gamma delta", "id": "u2"},
    ]
    both = _room_for(*history)
    assert ids(GreedyPacker()(ctx_of(history, budget=both))) == ["u1", "u2"]
    out = GreedyPacker()(ctx_of(history, budget=both, reserve=1))
    assert ids(out) == ["u2"]
    assert out.counter.count_messages(out.messages) <= both - 1


def test_every_message_gets_a_decision_with_its_tokens() -> None:
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "s", "id": "s"},
        {"role": "user", "content": "alpha beta", "id": "u1"},
        {"role": "assistant", "content": "gamma delta " * 20, "id": "a1"},
    ]
    ctx = ctx_of(history, budget=_room_for(*history[:2]) + 2)
    out = GreedyPacker()(ctx)
    by_id = {d.message_id: d for d in out.decisions}
    assert set(by_id) == {"s", "u1", "a1"}
    assert by_id["a1"].action == "dropped"
    assert by_id["u1"].action == "kept"
    assert by_id["u1"].tokens_before == by_id["u1"].tokens_after == ctx.tokens(ctx.messages[1])
    assert by_id["u1"].score is not None


def test_packer_is_a_stage() -> None:
    assert isinstance(GreedyPacker(), ctxpack.pipeline.Stage)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.integers(min_value=60, max_value=600))
def test_decisions_carry_the_score_and_its_breakdown(conv: Conversation, budget: int) -> None:
    messages = ctxpack.messages.ensure_messages(conv.items)
    query = "budget token Marie"
    ctx = ctx_of(messages, budget=budget, query=query, protected=[messages[0].id])
    ctx = ctxpack.RelevanceScorer()(ctxpack.MemorySelector()(ctx))
    packer = GreedyPacker()
    try:
        out = packer(ctx)
    except BudgetExceededError:
        return
    scores = packer.scores(ctx)
    count = len(ctx.messages)
    for i, msg in enumerate(ctx.messages):
        total, words = packer.score(msg, i, count, ctx)
        assert scores[i] == pytest.approx(total)
        decision = next((d for d in out.decisions if d.message_id == msg.id), None)
        if decision is None or decision.action != "kept" or decision.reason.startswith("protected"):
            continue
        if msg.is_tool_exchange:
            # A unit scores as its best member: each member still shows its own breakdown.
            assert f"= {words} (with its tool exchange, " in decision.reason
        else:
            # A message of the turn in progress says so first.
            reason = decision.reason.removeprefix(f"{_IN_PROGRESS}; ")
            assert reason == f"score {total:.2f} = {words}"
            assert decision.score == pytest.approx(total)
