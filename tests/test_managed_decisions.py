"""A managed session's decisions account, message by message, for what each edit took out."""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ctxpack import Decision, Message, Session
from ctxpack.managed import WindowPolicy, WindowState

from .test_managed import CLEARING, COUNTER, SYSTEM, TASK, step


def _assert_decisions_add_up(
    session: Session, steps: int, skills: Mapping[int, str] = MappingProxyType({})
) -> list[str]:
    """Render ``steps`` requests, checking that the decisions of each add up to what it sends
    of the request before and the messages appended since, pinning the skill ``skills`` gives
    for a step before it; the ids of the summaries made. A request no edit made keeps the one
    before as its prefix (what the prompt cache holds)."""
    state = session.window_state
    summaries: list[str] = []
    sent: list[Message] = []
    recorded = tokens = 0
    for i in range(steps):
        decided, edited = len(state.decisions), len(state.events)
        summarised = len(state.compacted)
        request = session.render().messages
        events = state.events[edited:]
        decisions = [d for d in state.decisions[decided:] if d.action != "warned"]
        made = {d.message_id for d in decisions if d.reason.startswith("summary of")}
        removed = sum(
            d.tokens_before - d.tokens_after for d in decisions if d.message_id not in made
        )
        added = sum(d.tokens_after for d in decisions if d.message_id in made)
        if sent:
            appended = sum(map(COUNTER.count_message, session.compact()[recorded:]))
            assert removed - added == tokens + appended - state.last_tokens, i
            if not events:
                assert request[: len(sent)] == sent, i
        sent, recorded, tokens = request, len(session.compact()), state.last_tokens
        if made:
            (summary,) = made
            (decision,) = [d for d in decisions if d.message_id == summary]
            # What the summary replaces: the messages it summarises now (a pin re-injected
            # whole, cut or dropped), the summary before.
            replaced = {*state.compacted[summarised:], *summaries[-1:]}
            merged = [
                d
                for d in decisions
                if d.action in ("merged", "compressed", "dropped") and d.message_id in replaced
            ]
            assert decision.tokens_before == sum(d.tokens_before for d in merged)
            if summaries:
                assert summaries[-1] in {d.message_id for d in decisions}
            summaries.append(summary)
        if i in skills:
            session.pin(skills[i], name=f"skill-{i}")
        session.extend(step(i))
    return summaries


def test_the_decisions_of_each_request_add_up_to_what_its_edits_removed() -> None:
    # A second compaction replaced the summary before it with no decision: the request lost
    # that summary's tokens, which no decision named, and the new summary's tokens_before
    # left them out.
    session = Session(counter=COUNTER, filters=False, window=WindowPolicy(window=8_000))
    session.extend([SYSTEM, TASK])
    assert len(_assert_decisions_add_up(session, 60)) >= 2


def test_the_decisions_add_up_with_pinned_content_re_injected() -> None:
    # The pins' decisions counted their texts, not the message re-injecting them: its framing
    # (its header, the lines between the pieces, a message's own tokens) was in no decision.
    session = Session(counter=COUNTER, filters=False, window=WindowPolicy(window=8_000))
    session.extend([SYSTEM, TASK])
    session.pin(
        "Run the tests with pytest -x; never push to main.", name="CLAUDE.md", kind="memory"
    )
    session.pin("deploy: build the wheel, then upload it to the index.", name="deploy")
    assert len(_assert_decisions_add_up(session, 60)) >= 2
    pinned = [d for d in session.window_state.decisions if d.message_id == "ctxpack-pinned"]
    assert [(d.action, d.tokens_before) for d in pinned[:1]] == [("merged", 0)]
    assert pinned[0].tokens_after


def test_the_decisions_add_up_when_a_later_pin_changes_the_framing() -> None:
    # A skill pinned after the first compaction, re-injected by a later one: the lines between
    # the texts change the framing's tokens (19 -> 18 here), which the framing's decision follows.
    session = Session(counter=COUNTER, filters=False, window=WindowPolicy(window=8_000))
    session.extend([SYSTEM, TASK])
    session.pin(
        "Run the tests with pytest -x; never push to main.", name="CLAUDE.md", kind="memory"
    )
    assert len(_assert_decisions_add_up(session, 60, {15: "\n\n  - deploy: build"})) >= 2
    pinned = [d for d in session.window_state.decisions if d.message_id == "ctxpack-pinned"]
    framing = [(d.tokens_before, d.tokens_after) for d in pinned if d.action == "merged"]
    assert len(framing) == 2 and framing[1][0] == framing[0][1] != framing[1][1]


def _pinned_session(skill: str) -> Session:
    session = Session(counter=COUNTER, filters=False, window=WindowPolicy(window=8_000))
    session.extend([SYSTEM, TASK])
    session.pin(
        "Run the tests with pytest -x; never push to main.", name="CLAUDE.md", kind="memory"
    )
    session.pin(skill, name="deploy")
    return session


def test_the_decisions_add_up_when_a_re_injected_skill_is_pinned_again() -> None:
    # The skill re-injected after the first compaction, pinned again before the next: the next
    # request dropped it from the message re-injecting it (45 -> 32 tokens) with no decision,
    # rewriting the prompt cache from there on between two compactions. It stays re-injected;
    # the copy pinned again is sent as a note naming its stored original, a decision saying so.
    skill = "deploy: build the wheel, then upload it to the index."
    session = _pinned_session(skill)
    assert len(_assert_decisions_add_up(session, 40, {14: skill})) >= 2
    # The request after the next, before the next compaction: the text sent once.
    session = _pinned_session(skill)
    _assert_decisions_add_up(session, 16, {14: skill})
    request = session.render()
    assert not session.window_state.events[1:]
    (again,) = [m for m in session.transcript() if m.text == skill][1:]
    assert sum(m.text.count(skill) for m in request.messages) == 1
    assert request.original(again.id) == again
    (deduped,) = [d for d in session.window_state.decisions if d.message_id == again.id]
    assert deduped.action == "deduped"
    assert deduped.tokens_before == COUNTER.count_message(again)


def _thinking_turn(i: int) -> list[dict[str, Any]]:
    """An assistant turn that thinks, runs an MCP tool (its result in the turn) and calls bash,
    and the bash output."""
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": f"thinking of probe {i} " * 33, "signature": "s"},
                {
                    "type": "mcp_tool_use",
                    "id": f"m{i}",
                    "name": "search_issues",
                    "server_name": "tracker",
                    "input": {"q": f"bug {i}"},
                },
                {
                    "type": "mcp_tool_result",
                    "tool_use_id": f"m{i}",
                    "is_error": False,
                    "content": [{"type": "text", "text": f"issue {i} " * 120}],
                },
                {"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"command": "ls"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x\n" * 50}],
        },
    ]


def test_a_turn_cleared_twice_is_sized_as_sent_by_each_decision() -> None:
    # A turn whose provider tool result was cleared and later its thinking: the thinking's
    # decision sized the turn as recorded (the result whole), 620 -> 454 tokens, while the
    # request carried it at 309 -> 143.
    policy = CLEARING.model_copy(update={"window": 8_000, "keep_thinking": 3})
    session = Session(counter=COUNTER, filters=False, window=policy)
    session.extend([SYSTEM, TASK])
    state = session.window_state
    last: dict[str, Decision] = {}
    checked = 0
    for i in range(30):
        decided = len(state.decisions)
        result = session.render()
        sent = {m.id: COUNTER.count_message(m) for m in result.messages}
        for d in state.decisions[decided:]:
            if d.action != "cleared":
                continue
            if d.message_id in last:
                assert d.tokens_before == last[d.message_id].tokens_after, d.message_id
                checked += 1
            last[d.message_id] = d
        # The last edit of each message still sent gives its size in this request.
        for message_id, d in last.items():
            if message_id in sent:
                assert d.tokens_after == sent[message_id], message_id
        session.extend(_thinking_turn(i))
    assert checked


# Three skills, of which pinned_budget=60 re-injects the newest only: the middle one passes it.
_SKILLS = (
    "alpha: a short skill.",
    "beta: " + "a longer skill that passes the budget with the newest one. " * 6,
    "gamma: the newest skill, " + "kept whole within the budget. " * 5,
)


def _budgeted_session() -> Session:
    policy = WindowPolicy(window=8_000, pinned_budget=60, skill_budget=100)
    session = Session(counter=COUNTER, filters=False, window=policy)
    session.extend([SYSTEM, TASK])
    for name, skill in zip("abc", _SKILLS, strict=True):
        session.pin(skill, name=name)
    return session


def test_the_re_injected_skills_stay_when_a_skill_dropped_for_budget_is_pinned_again() -> None:
    # The middle skill, dropped past pinned_budget by the first compaction, pinned again
    # before the next: the next request left it out of the budget and re-injected the oldest,
    # which it had dropped too, with no event and no decision, rewriting the prompt cache
    # from the system prompt on between two compactions.
    alpha, beta, gamma = _SKILLS
    session = _budgeted_session()
    assert len(_assert_decisions_add_up(session, 30, {14: beta})) >= 2
    # The request after, before the next compaction: re-injected as the compaction left it.
    session = _budgeted_session()
    _assert_decisions_add_up(session, 16, {14: beta})
    assert len(session.window_state.events) == 1
    (pinned,) = [m for m in session.render().messages if m.id == "ctxpack-pinned"]
    assert (alpha in pinned.text, beta in pinned.text, gamma in pinned.text) == (
        False,
        False,
        True,
    )


def test_a_state_saved_without_the_compaction_s_length_keeps_its_re_injected_skills() -> None:
    # A state saved before it knew the record's length at its last compaction: the pins are
    # re-injected as its last request re-injected them, not from the whole record.
    alpha, beta, gamma = _SKILLS
    one = _budgeted_session()
    _assert_decisions_add_up(one, 15, {14: beta})
    saved = json.loads(one.window_state.to_json())
    assert saved.pop("compacted_length") is not None
    state = WindowState.from_json(json.dumps(saved))
    policy = WindowPolicy(window=8_000, pinned_budget=60, skill_budget=100)
    two = Session(
        counter=COUNTER, filters=False, window=policy, store=one.store, window_state=state
    )
    two.extend(one.transcript())
    assert two.render().messages == one.render().messages
    assert len(state.events) == 1
    (pinned,) = [m for m in one.render().messages if m.id == "ctxpack-pinned"]
    assert (alpha in pinned.text, beta in pinned.text, gamma in pinned.text) == (
        False,
        False,
        True,
    )
