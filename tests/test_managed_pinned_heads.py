"""A skill re-injected after a compaction keeps its head, whatever its lines."""

from __future__ import annotations

import json
import re

from ctxpack import Session

from .test_managed import (
    COUNTER,
    DEPLOY_SKILL,
    MEMORY,
    OLD_SKILL,
    PIN_POLICY,
    SYSTEM,
    TASK,
    pinned_after_compaction,
    session_with_pins,
)


def test_a_one_line_skill_over_its_budget_keeps_its_first_words() -> None:
    # It was cut by whole lines: its one line passed the budget, and the skill was re-injected
    # as nothing, with no word of it left.
    session = Session(counter=COUNTER, filters=False, window=PIN_POLICY)
    session.extend([SYSTEM, TASK])
    session.pin("Deploy: " + " ".join(f"then run deploy_{j}" for j in range(400)), name="deploy")
    pinned = pinned_after_compaction(session)
    assert "Deploy: then run deploy_0 then run deploy_1" in pinned.text
    assert "deploy_399" not in pinned.text
    head = pinned.text.split("\n\n", 1)[1]
    assert 250 <= COUNTER.count(head) <= 300
    assert not head.endswith(("deploy", "deploy_"))  # cut between words


def test_each_pin_cut_or_dropped_at_its_reinjection_is_a_decision_naming_the_whole() -> None:
    # The pins summarised had a "compacted into the summary" decision of 0 tokens after, and
    # nothing said that a skill went back in cut to its head, or not at all.
    session = session_with_pins()
    memory_id, old_id, deploy_id = (m.id for m in session.transcript()[2:5])
    pinned = pinned_after_compaction(session)
    decisions = session.window_state.decisions
    [kept] = [d for d in decisions if d.message_id == memory_id]
    assert kept.tokens_after == COUNTER.count(MEMORY)
    assert "re-injected whole" in kept.reason
    [cut] = [d for d in decisions if d.message_id == deploy_id]
    assert cut.action == "compressed" and "skill_budget=300" in cut.reason
    assert cut.tokens_before == COUNTER.count_message(session.transcript()[4])
    assert 250 <= (cut.tokens_after or 0) <= 300
    assert (cut.tokens_after or 0) < COUNTER.count(pinned.text)
    [dropped] = [d for d in decisions if d.message_id == old_id]
    assert dropped.action == "dropped" and dropped.tokens_after == 0
    assert "pinned_budget=500" in dropped.reason
    for decision, text in ((cut, DEPLOY_SKILL), (dropped, OLD_SKILL)):
        [artifact] = re.findall(r"artifact (art_\w+)", decision.reason)
        assert json.loads(session.store.get(artifact))["content"] == text


def test_a_pin_a_newer_skill_pushes_out_at_a_later_compaction_gets_its_decision() -> None:
    session = Session(counter=COUNTER, filters=False, window=PIN_POLICY)
    session.extend([SYSTEM, TASK])
    session.pin("\n".join(f"first skill line {j}" for j in range(35)), name="first")
    first_id = session.transcript()[-1].id
    pinned_after_compaction(session)
    session.pin("\n".join(f"second skill line {j}" for j in range(200)), name="second")
    pinned = pinned_after_compaction(session)
    assert "second skill line 0" in pinned.text and "first skill" not in pinned.text
    first = [d for d in session.window_state.decisions if d.message_id == first_id]
    assert [d.action for d in first] == ["merged", "dropped"]
    assert first[1].tokens_before == first[0].tokens_after and first[1].tokens_after == 0
