"""Selections over real agent histories: a call id reused, a tool re-run, a result whose call was
trimmed. Each request the selection builds must be one a provider accepts, every message must
have its decision, and an odd reference from a small model is a SelectionError, not a crash."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxpack import count_tokens, pack
from ctxpack.errors import ConfigError, SelectionError
from ctxpack.selection import (
    LexicalSelector,
    ModelSelector,
    Selection,
    Workspace,
    apply_selection,
)

from ..api_rules import openai_problems
from ..strategies import conversations
from .helpers import FakeOpenAI, answer, openai_response


def _call(call_id: str, command: str) -> dict[str, Any]:
    arguments = json.dumps({"command": command})
    return {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": arguments}}


def reused_ids() -> list[dict[str, Any]]:
    """Two exchanges under one call id, as agents on local models number each turn's calls
    from 0; then the first tool re-run, its second result appended after a user turn."""
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Why does the login test fail?"},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_0", "pytest -q")]},
        {"role": "tool", "tool_call_id": "call_0", "content": "FAILED test_login: 401"},
        {"role": "user", "content": "Now look at the config."},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_0", "cat app.cfg")]},
        {"role": "tool", "tool_call_id": "call_0", "content": "token_ttl = 0"},
        {"role": "tool", "tool_call_id": "call_0", "content": "token_ttl = 0 (re-run)"},
    ]


@pytest.mark.parametrize(
    ("selection", "shown"),
    [
        # Used to send the first call without its result (the call id pointed at the last one).
        (Selection(include_messages=[2]), "FAILED test_login: 401"),
        # Used to send the first result without the call it answers.
        (Selection(include_messages=[3]), "FAILED test_login: 401"),
        (Selection(include_tool_results=["call_0"]), "token_ttl = 0"),
    ],
)
def test_an_exchange_under_a_reused_call_id_is_sent_whole(selection: Selection, shown: str) -> None:
    ws = Workspace(reused_ids())
    result = apply_selection(selection, ws)
    payload = result.to_openai()
    assert openai_problems(payload) == []
    assert shown in [m.get("content") for m in payload]


def test_a_second_result_of_one_call_is_left_out_with_its_reason() -> None:
    ws = Workspace(reused_ids())
    repeat = ws.messages[7]
    # Used to send it after its exchange's result: two results for one call.
    result = apply_selection(Selection(include_messages=[5, 7]), ws)
    assert openai_problems(result.to_openai()) == []
    assert repeat.id not in [m.id for m in result.messages]
    (decision,) = [d for d in result.decisions if d.message_id == repeat.id]
    assert decision.action == "dropped"
    assert "second result for a call" in decision.reason
    # The workspace says which result answers the call: the first after it.
    assert ws.calls()["call_0"] == (5, 6)


def test_a_result_whose_call_was_trimmed_is_left_out_with_its_reason() -> None:
    ws = Workspace(
        [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Run the tests."},
            {"role": "tool", "tool_call_id": "gone_1", "content": "12 passed"},
        ]
    )
    result = apply_selection(Selection(include_messages=[2], omit_reason="old"), ws)
    assert openai_problems(result.to_openai()) == []
    (decision,) = [d for d in result.decisions if d.message_id == ws.messages[2].id]
    assert (decision.action, "call is not in the workspace" in decision.reason) == ("dropped", True)


def test_the_lexical_selector_takes_a_recent_result_whose_call_was_trimmed() -> None:
    ws = Workspace(
        [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Run the tests."},
            {"role": "tool", "tool_call_id": "gone_1", "content": "12 passed"},
        ]
    )
    # Used to raise a ConfigError from inside pack(): the recent orphan was pinned.
    selection = LexicalSelector(recent=4)(ws, "tests")
    assert selection.include_tool_results == []
    assert openai_problems(apply_selection(selection, ws).to_openai()) == []


def test_the_lexical_selector_names_an_earlier_result_of_a_reused_id_by_index() -> None:
    ws = Workspace(reused_ids())
    selection = LexicalSelector(budget=400, recent=0)(ws, "FAILED test_login 401")
    result = apply_selection(selection, ws)
    assert "FAILED test_login: 401" in [m.text for m in result.messages]
    assert openai_problems(result.to_openai()) == []


@pytest.mark.parametrize("ref", ["²", "٣٣٣", "9" * 5000, " 12 "])
def test_an_index_written_oddly_is_a_selection_error(ref: str) -> None:
    ws = Workspace(reused_ids())
    # "²" and 5,000 digits used to raise ValueError from int().
    with pytest.raises(SelectionError, match="message"):
        apply_selection(Selection(include_messages=[ref]), ws)
    with pytest.raises(SelectionError, match="uncertain item"):
        apply_selection(Selection(uncertain=[ref]), ws)


def test_an_index_in_other_decimal_digits_still_names_its_message() -> None:
    ws = Workspace(reused_ids())
    result = apply_selection(Selection(include_messages=["٣"]), ws)
    assert "FAILED test_login: 401" in [m.text for m in result.messages]


def test_a_model_answering_an_odd_index_is_asked_again() -> None:
    ws = Workspace(reused_ids())
    client = FakeOpenAI(
        openai_response(json.dumps(answer(include_messages=["²"]))),
        openai_response(json.dumps(answer(include_messages=[3]))),
    )
    # Used to raise ValueError out of the selector, neither retried nor fallen back from.
    selection = ModelSelector(client, model="small")(ws, "login")
    assert selection.include_messages == [3]
    assert "'²'" in client.requests[1]["messages"][-1]["content"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv=conversations(), data=st.data())
def test_any_selection_of_any_history_is_a_request_the_provider_accepts(
    conv: Any, data: st.DataObject
) -> None:
    before = copy.deepcopy(conv.items)
    ws = Workspace(conv.items)
    n = len(ws.messages)
    chosen = data.draw(st.lists(st.integers(0, n - 1), max_size=6))
    calls = sorted(ws.calls())
    picked = data.draw(st.lists(st.sampled_from(calls), max_size=3)) if calls else []
    selection = Selection(include_messages=list(chosen), include_tool_results=picked)
    result = apply_selection(selection, ws)
    payload = result.to_openai()
    assert openai_problems(payload) == []
    # Every message has its decision of the selection (a call left without its result, as
    # one whose result came late, has a second: its call removed); nothing else changed the
    # input.
    ids = [m.id for m in ws.messages]
    decided = [d.message_id for d in result.decisions if d.stage == "selection"]
    assert sorted({i for i in decided if i in ids}) == sorted(ids)
    assert conv.items == before
    assert result.tokens >= count_tokens(payload)
    # The same selection of the same history gives the same request.
    again = apply_selection(selection, Workspace(copy.deepcopy(before)))
    assert again.to_openai() == payload


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv=conversations(), budget=st.integers(200, 3_000), recent=st.integers(0, 5))
def test_the_lexical_selection_of_any_history_applies(conv: Any, budget: int, recent: int) -> None:
    ws = Workspace(conv.items)
    selection = LexicalSelector(budget=budget, recent=recent)(ws, conv.query or "login token")
    assert openai_problems(apply_selection(selection, ws).to_openai()) == []


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather of a city, today or on a date.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "date": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def test_the_tools_a_request_carries_count_in_its_budget_and_tokens() -> None:
    ws = Workspace(reused_ids())
    selection = Selection(include_tool_results=["call_0"])
    alone = apply_selection(selection, ws)
    with_tools = apply_selection(selection, ws, tools=[WEATHER])
    assert with_tools.tokens == count_tokens(with_tools.to_openai(), tools=[WEATHER])
    assert with_tools.input_tokens == count_tokens(list(ws.messages), tools=[WEATHER])
    # A budget the messages fit but the request does not: used to pass, and the request sent
    # exceeded it by the tools' tokens.
    with pytest.raises(SelectionError, match="over the budget"):
        apply_selection(selection, ws, budget=alone.tokens, tools=[WEATHER])
    with pytest.raises(SelectionError, match="and the tool definitions"):
        apply_selection(selection, ws, budget=alone.tokens - 30, tools=[WEATHER])


def test_the_tools_of_an_anthropic_request_are_counted_as_anthropic_frames_them() -> None:
    from ctxpack import from_anthropic

    history = from_anthropic(
        [{"role": "user", "content": "What is the weather in Paris?"}], system="Be brief."
    )
    tool = {
        "name": "get_weather",
        "description": "The weather of a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
    ws = Workspace(history)
    result = apply_selection(Selection(include_messages=[0]), ws, tools=[tool])
    assert result.tokens == count_tokens(result.to_openai(), tools=[tool])
    assert result.tokens > apply_selection(Selection(), ws).tokens
    with pytest.raises(ConfigError, match="provider"):
        apply_selection(Selection(), ws, provider="mistral")  # type: ignore[arg-type]


def test_a_stored_original_named_twice_is_shown_once() -> None:
    from ctxpack.store import SQLiteArtifactStore

    store = SQLiteArtifactStore(":memory:")
    ref = store.put("FAIL tests/auth.test.ts\n" + "noise\n" * 50)
    ws = Workspace(reused_ids(), store=store)
    # Used to be shown three times, each with its decision: its tokens paid three times.
    result = apply_selection(Selection(include_tool_results=[ref, ref], uncertain=[ref]), ws)
    assert result.messages[-1].text.count(f"Stored original {ref}:") == 1
    assert [d.message_id for d in result.decisions].count(f"artifact:{ref}") == 1


def unanswered() -> list[dict[str, Any]]:
    """An agent whose tool crashed before it answered: its call has no result, and the user
    went on."""
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Why does the login test fail?"},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_1", "pytest -q")]},
        {"role": "user", "content": "The runner crashed; read app.cfg instead."},
        {
            "role": "assistant",
            "content": "Reading it.",
            "tool_calls": [_call("call_2", "cat app.cfg"), _call("call_3", "ls")],
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "token_ttl = 0"},
        {"role": "user", "content": "And?"},
    ]


@pytest.mark.parametrize(
    "selection",
    [
        Selection(include_messages=[2, 4]),
        Selection(include_tool_results=["call_1", "call_3"]),
        Selection(uncertain=["call_1", "4"]),
    ],
)
def test_a_call_without_its_result_is_not_sent_and_says_why(selection: Selection) -> None:
    ws = Workspace(unanswered())
    # Used to send call_1 and call_3 as they were: every provider refuses a call unanswered.
    result = apply_selection(selection, ws)
    assert openai_problems(result.to_openai()) == []
    sent = [c.id for m in result.messages for c in m.tool_calls or ()]
    assert sent == ["call_2"]
    (dropped,) = [d for d in result.decisions_for(ws.messages[2].id) if d.action == "dropped"]
    assert "'call_1'" in dropped.reason and "no results" in dropped.reason
    (cleared,) = [d for d in result.decisions_for(ws.messages[4].id) if d.action == "cleared"]
    assert "'call_3'" in cleared.reason
    assert result.original(ws.messages[4].id) == ws.messages[4]  # kept, as pack() keeps it
    assert result.tokens == count_tokens(result.to_openai())


def test_a_last_call_waits_for_its_results_as_in_pack_unless_the_context_follows_it() -> None:
    # It ends with the agent's calls: their results may be on the way.
    history = [unanswered()[0], unanswered()[3], unanswered()[4]]
    ws = Workspace(history)
    # As pack() does, the last message's calls are sent: the caller appends their results.
    alone = apply_selection(Selection(include_messages=[2]), ws)
    assert [c.id for c in alone.messages[-1].tool_calls or ()] == ["call_2", "call_3"]
    assert alone.messages[-1].tool_calls == pack(history, budget=10_000).messages[-1].tool_calls
    # With a context message after them they are no longer last, and no result can follow.
    noted = apply_selection(Selection(include_messages=[2], durable_notes=["ttl is 0"]), ws)
    assert noted.messages[-1].id == "selection-context"
    assert openai_problems(noted.to_openai()) == []
    assert noted.messages[-2].text == "Reading it." and not noted.messages[-2].tool_calls


def _later(items: list[Any], call_id: str, turns: int) -> list[Any]:
    """``items`` with the first result of ``call_id`` moved past the next ``turns`` messages
    that are not tool results (as far as there are)."""
    at = next(
        (i for i, m in enumerate(items) if m.role == "tool" and m.tool_call_id == call_id), -1
    )
    if at < 0:
        return items  # lost too
    moved, rest = items[at], items[:at] + items[at + 1 :]
    to = at
    for _ in range(turns):
        while to < len(rest) and rest[to].role == "tool":
            to += 1
        to = min(to + 1, len(rest))
    return [*rest[:to], moved, *rest[to:]]


def test_a_result_after_other_turns_is_left_out_and_its_call_removed() -> None:
    ws = Workspace(
        [
            {"role": "system", "content": "s"},
            {"role": "assistant", "content": None, "tool_calls": [_call("c1", "ls")]},
            {"role": "user", "content": "wait"},
            {"role": "assistant", "content": "ok"},
            {"role": "tool", "tool_call_id": "c1", "content": "res"},
            {"role": "user", "content": "go on"},
        ]
    )
    assert ws.calls()["c1"] == (1, None)  # its turn closed unanswered
    result = apply_selection(Selection(include_messages=[1, 2, 3, 4]), ws)
    assert openai_problems(result.to_openai()) == []
    assert [m.content for m in result.messages][:4] == ["s", "wait", "ok", "go on"]
    assert "Left out of this step: messages 4." in result.messages[-1].text
    ids = [m.id for m in ws.messages]
    late = [d for d in result.decisions if d.message_id == ids[4]]
    assert [d.action for d in late] == ["dropped"] and "after other turns" in late[0].reason
    assert {m.id for m in ws.messages} <= {d.message_id for d in result.decisions}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv=conversations(), data=st.data())
def test_any_selection_of_a_history_that_lost_results_is_accepted(
    conv: Any, data: st.DataObject
) -> None:
    items = list(Workspace(conv.items).messages)
    answered = sorted({m.tool_call_id or "" for m in items if m.role == "tool"})
    lost = data.draw(st.lists(st.sampled_from(answered), max_size=2)) if answered else []
    late = data.draw(st.lists(st.sampled_from(answered), max_size=2)) if answered else []
    # Their tools crashed: no result at all.
    items = [m for m in items if not (m.role == "tool" and m.tool_call_id in lost)]
    # Or their results came after other turns, which answers nothing (conversations() makes
    # some too).
    for call_id in late:
        items = _later(items, call_id, data.draw(st.integers(1, 3)))
    ws = Workspace(items)
    chosen = data.draw(st.lists(st.integers(0, len(items) - 1), max_size=6))
    calls = sorted(ws.calls())
    picked = data.draw(st.lists(st.sampled_from(calls), max_size=3)) if calls else []
    for selection in (
        Selection(include_messages=list(chosen), include_tool_results=picked),
        LexicalSelector(budget=data.draw(st.integers(300, 3_000)))(ws, "lookup"),
    ):
        result = apply_selection(selection, Workspace(items))
        assert openai_problems(result.to_openai()) == []
        decided = {d.message_id for d in result.decisions}
        assert {m.id for m in ws.messages} <= decided
        assert result.tokens >= count_tokens(result.to_openai())
