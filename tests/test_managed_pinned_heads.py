"""A skill re-injected after a compaction keeps its head, whatever its lines."""

from __future__ import annotations

from ctxpack import Session
from ctxpack.managed import WindowPolicy

from .test_managed import COUNTER, SYSTEM, TASK, pinned_after_compaction


def test_a_one_line_skill_over_its_budget_keeps_its_first_words() -> None:
    # It was cut by whole lines: its one line passed the budget, and the skill was re-injected
    # as nothing, with no word of it left.
    policy = WindowPolicy(window=12_000, skill_budget=300, pinned_budget=500)
    session = Session(counter=COUNTER, filters=False, window=policy)
    session.extend([SYSTEM, TASK])
    session.pin("Deploy: " + " ".join(f"then run deploy_{j}" for j in range(400)), name="deploy")
    pinned = pinned_after_compaction(session)
    assert "Deploy: then run deploy_0 then run deploy_1" in pinned.text
    assert "deploy_399" not in pinned.text
    head = pinned.text.split("\n\n", 1)[1]
    assert 250 <= COUNTER.count(head) <= 300
    assert not head.endswith(("deploy", "deploy_"))  # cut between words
