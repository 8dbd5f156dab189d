"""The promises of pack(), as properties over random conversations and budgets.

pack() "holds every system, developer and pinned message and the current question, keeps or
drops each tool exchange whole, keeps the original order, and never exceeds ``budget - reserve``
tokens; every input message gets at least one recorded decision." Each test checks one part of that
sentence, plus determinism, the input never being mutated, and in-place edits between calls
giving what a fresh interpreter gives for the edited input.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack.providers import tools_as_sent
from ctxpack.tokens import TiktokenCounter

from .api_rules import anthropic_problems, openai_problems
from .strategies import Conversation, Edit, apply_edit, conversations, edits, pack_cases

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _pack(conv: Conversation, budget: int, reserve: int) -> ctxpack.PackResult | None:
    """pack() the conversation, or None when the mandatory messages cannot fit (the error is
    checked by test_never_over_budget)."""
    try:
        return ctxpack.pack(conv.items, budget=budget, reserve=reserve, **conv.pack_kwargs())
    except ctxpack.BudgetExceededError:
        return None


def _fresh_count(messages: list[ctxpack.Message], conv: Conversation) -> int:
    """The prompt's tokens by a counter made for this check alone: no cache of ctxpack's."""
    counter = TiktokenCounter("cl100k_base")
    # Claude receives each tool as an Anthropic tool, and Anthropic's tool-use prompt with them.
    sent = tools_as_sent(conv.tools or [], conv.provider)
    # The prompt's own count: OpenAI's functions cost less beside a system message.
    return ctxpack.count_tokens(messages, counter=counter, tools=sent or None)


def _mandatory(msgs: list[ctxpack.Message]) -> list[ctxpack.Message]:
    last_user = next((m for m in reversed(msgs) if m.role == "user"), None)
    return [m for m in msgs if m.role in ("system", "developer") or m.pinned or m is last_user]


@SETTINGS
@given(pack_cases())
def test_never_over_budget(case: tuple[Conversation, int, int]) -> None:
    conv, budget, reserve = case
    msgs = ctxpack.messages.ensure_messages(conv.items)
    mandatory = _mandatory(msgs)
    # A lower bound of what must be kept: protected messages are never shortened.
    floor = _fresh_count(mandatory, conv)
    try:
        result = ctxpack.pack(conv.items, budget=budget, reserve=reserve, **conv.pack_kwargs())
    except ctxpack.BudgetExceededError as exc:
        assert exc.budget == budget
        assert exc.required > budget, "required must exceed the budget (reserve included)"
        assert exc.required >= floor + reserve
        assert {m.id for m in mandatory} <= set(exc.pinned_ids)
        return
    assert floor + reserve <= budget, "mandatory messages do not fit, yet no error was raised"
    assert result.tokens <= budget - reserve
    assert result.tokens == _fresh_count(result.messages, conv)


@SETTINGS
@given(pack_cases())
def test_system_developer_and_pinned_never_dropped(case: tuple[Conversation, int, int]) -> None:
    conv, budget, reserve = case
    result = _pack(conv, budget, reserve)
    if result is None:
        return
    kept = set(result.kept_ids)
    for msg in _mandatory(ctxpack.messages.ensure_messages(conv.items)):
        assert msg.id in kept, f"{msg.role} message {msg.id} was dropped"


@SETTINGS
@given(pack_cases())
def test_tool_exchanges_kept_or_dropped_whole(case: tuple[Conversation, int, int]) -> None:
    conv, budget, reserve = case
    result = _pack(conv, budget, reserve)
    if result is None:
        return
    answered_in_input = {
        m.tool_call_id for m in ctxpack.messages.ensure_messages(conv.items) if m.role == "tool"
    }
    calls_seen: set[str] = set()
    results_seen: set[str] = set()
    for msg in result.messages:
        if msg.role == "tool":
            assert msg.tool_call_id in calls_seen, f"orphan tool result {msg.id}"
            assert msg.tool_call_id not in results_seen, f"second result {msg.id} of one call"
            results_seen.add(msg.tool_call_id or "")
        for call in msg.tool_calls or ():
            calls_seen.add(call.id)
    missing = (calls_seen & answered_in_input) - results_seen
    assert not missing, f"tool calls kept without their results: {sorted(missing)}"


@settings(SETTINGS, max_examples=150)
@given(conv=conversations(), data=st.data())
def test_the_turn_in_progress_is_kept_when_it_fits_beside_the_instructions(
    conv: Conversation, data: st.DataObject
) -> None:
    # The model's calls and their results, or an answer prefilled for it, end the request: the
    # next answer reads them first, so they are filled before any older turn by score.
    msgs = ctxpack.messages.ensure_messages(conv.items)
    if not msgs or msgs[-1].role not in ("assistant", "tool"):
        event("ends with the question")
        return
    if msgs[-1].id not in ctxpack.pack(conv.items, budget=10**7, **conv.pack_kwargs()).kept_ids:
        event("ends with a message no budget keeps (an orphan)")
        return
    users = [i for i, m in enumerate(msgs) if m.role == "user"]
    after = msgs[users[-1] + 1 :] if users else msgs
    need = _fresh_count([*_mandatory(msgs), *after], conv)
    total = _fresh_count(msgs, conv)
    budget = data.draw(st.integers(need, max(need, total + 40)), label="budget")
    reserve = data.draw(st.integers(0, min(budget - need, 60)), label="reserve")
    event("the turn fits beside the instructions")
    result = _pack(conv, budget, reserve)
    assert result is not None and msgs[-1].id in result.kept_ids


@SETTINGS
@given(pack_cases())
def test_chronological_order_kept(case: tuple[Conversation, int, int]) -> None:
    conv, budget, reserve = case
    result = _pack(conv, budget, reserve)
    if result is None:
        return
    position = {mid: i for i, mid in enumerate(result.input_ids)}
    # The default pipeline adds no message, so every output id is an input id.
    order = [position[mid] for mid in result.kept_ids]
    assert order == sorted(order)
    assert len(set(order)) == len(order)


@SETTINGS
@given(pack_cases())
def test_deterministic(case: tuple[Conversation, int, int]) -> None:
    conv, budget, reserve = case
    first = _pack(conv, budget, reserve)
    second = _pack(conv, budget, reserve)
    if first is None or second is None:
        assert first is second
        return
    assert first == second
    assert first.report() == second.report()


def _dump(items: list[Any]) -> list[Any]:
    return [
        item.model_dump() if isinstance(item, ctxpack.Message) else copy.deepcopy(item)
        for item in items
    ]


@SETTINGS
@given(pack_cases())
def test_input_never_mutated(case: tuple[Conversation, int, int]) -> None:
    conv, budget, reserve = case
    before_items = list(conv.items)
    before = _dump(conv.items)
    _pack(conv, budget, reserve)
    assert all(a is b for a, b in zip(conv.items, before_items, strict=True))
    assert _dump(conv.items) == before


@SETTINGS
@given(pack_cases())
def test_every_input_message_has_a_decision(case: tuple[Conversation, int, int]) -> None:
    conv, budget, reserve = case
    result = _pack(conv, budget, reserve)
    if result is None:
        return
    assert result.input_ids == [m.id for m in ctxpack.messages.ensure_messages(conv.items)]
    for mid in result.input_ids:
        # The stages' own decisions: pack() fills in any a (custom) pipeline forgot.
        decisions = [d for d in result.decisions_for(mid) if d.stage != "pack()"]
        assert decisions, f"no stage decided about {mid}"
        if mid in result.dropped_ids:
            assert {d.action for d in decisions} & {"dropped", "deduped"}, (
                f"{mid} was dropped without a dropped/deduped decision: {decisions}"
            )


@SETTINGS
@given(pack_cases())
def test_what_pack_returns_the_provider_accepts(case: tuple[Conversation, int, int]) -> None:
    # Late results among them: a call's result after other turns answers nothing (the call is
    # stripped, the result dropped), as Chat Completions and Anthropic want results at once.
    conv, budget, reserve = case
    result = _pack(conv, budget, reserve)
    if result is not None:
        assert openai_problems(result.to_openai()) == []
        for mid in result.dropped_ids:
            assert {d.action for d in result.decisions_for(mid)} & {"dropped", "deduped"}
    # A roomy budget too, which keeps every exchange: none is dropped by luck.
    assert (
        openai_problems(ctxpack.pack(conv.items, budget=10**7, **conv.pack_kwargs()).to_openai())
        == []
    )
    kwargs = {**conv.pack_kwargs(), "model": "claude-sonnet-4-5"}
    claude = ctxpack.pack(conv.items, budget=10**7, **kwargs)
    payload = claude.to_anthropic()
    # The tool rules only: a request without a user turn is another matter (not checked here).
    tools = [p for p in anthropic_problems(payload) if "tool_" in p] if payload["messages"] else []
    assert tools == []


def _reasoning_alone(n: int, size: int) -> dict[str, Any]:
    """An assistant message of a reasoning model's reasoning alone (raw text, counted
    exactly): a reply cut short while reasoning, which no writer sends."""
    part = {
        "type": "reasoning",
        "id": f"rs_{n}",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": "think " * size}],
    }
    return {"role": "assistant", "content": [part]}


@SETTINGS
@given(pack_cases(), st.lists(st.tuples(st.integers(1, 10_000), st.integers(1, 300)), max_size=3))
def test_reasoning_no_writer_sends_is_dropped_and_not_counted(
    case: tuple[Conversation, int, int], inserts: list[tuple[int, int]]
) -> None:
    # Reasoning with nothing of its response after it (at the end, or before any message but
    # the one it led to) goes in no request: it is dropped with a decision, never counted.
    conv, budget, reserve = case
    items = list(conv.items)
    for n, (where, size) in enumerate(inserts):
        items.insert(1 + where % len(items), _reasoning_alone(n, size))
    conv = Conversation(items, conv.query, conv.tools, conv.provider, conv.notes)
    result = _pack(conv, budget, reserve)
    if result is None:
        return
    assert result.tokens <= budget - reserve
    assert result.tokens == _fresh_count(result.messages, conv)
    sent = result.to_openai(api="responses")
    for message in result.messages:
        parts = message.content if isinstance(message.content, list) else []
        assert not any(p.get("type") == "reasoning" and p not in sent for p in parts), message.id
    for mid in result.dropped_ids:
        decisions = [d for d in result.decisions_for(mid) if d.stage != "pack()"]
        assert {d.action for d in decisions} & {"dropped", "deduped"}, (mid, decisions)


def _outcome(conv: Conversation, items: list[Any], budget: int, reserve: int) -> Any:
    """Everything a pack() gives, as plain data: the result and its decisions, or the error."""
    try:
        result = ctxpack.pack(items, budget=budget, reserve=reserve, **conv.pack_kwargs())
    except ctxpack.BudgetExceededError as exc:
        return ("error", exc.required, exc.pinned_ids)
    return (result.model_dump(), [d.model_dump() for d in result.decisions])


def _edit_payloads(result: ctxpack.PackResult) -> None:
    """What an application does with a result before sending it: edit it in place."""
    for item in result.to_openai():
        if isinstance(item.get("content"), list) and item["content"]:
            item["content"][0]["text"] = "edited " * 50
            item["content"][0]["cache_control"] = {"type": "ephemeral"}
        elif isinstance(item.get("content"), str):
            item["content"] += " edited"
    for message in result.messages:
        message.metadata["important"] = True
        if isinstance(message.content, list) and message.content:
            message.content[0]["text"] = "edited " * 50


@settings(SETTINGS, max_examples=40)
@given(pack_cases(), st.lists(edits, min_size=1, max_size=4), st.booleans())
def test_in_place_edits_give_what_a_fresh_interpreter_gives(
    case: tuple[Conversation, int, int], changes: list[Edit], edit_payloads: bool
) -> None:
    conv, budget, reserve = case
    first = _pack(conv, budget, reserve)
    if first is not None and edit_payloads:
        _edit_payloads(first)
    for change in changes:
        apply_edit(conv.items, change)
    got = _outcome(conv, conv.items, budget, reserve)
    # A fresh interpreter: nothing cached, and objects it has never seen.
    ctxpack.caches.clear_caches()
    assert got == _outcome(conv, copy.deepcopy(conv.items), budget, reserve)


@pytest.mark.parametrize("budget", [40, 80, 200])
def test_properties_hold_on_the_bundled_example(budget: int) -> None:
    # A fixed, realistic regression case next to the random ones.
    import json
    from pathlib import Path

    items = json.loads((Path(__file__).parent / "fixtures" / "chat.json").read_text())
    try:
        result = ctxpack.pack(items, budget=budget, model="gpt-4")
    except ctxpack.BudgetExceededError as exc:
        assert exc.required > budget
        return
    assert result.tokens <= budget
    assert "sys" in result.kept_ids
