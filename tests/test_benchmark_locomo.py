"""The LoCoMo benchmark's own bookkeeping: what counts as recalled, and where a loss ranked.

The benchmark's figures are not tested (benchmarks measure); the rules that turn a pack into
those figures are, on a conversation small enough to reason about.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from .helpers import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "locomo.py"


@pytest.fixture(scope="module")
def locomo() -> ModuleType:
    return load_script(SCRIPT, "locomo_benchmark")


PLACES = ["the market", "the gym", "my aunt's", "the library", "the beach", "the office"]
DAYS = ["Monday", "Tuesday", "Friday", "Sunday"]


def _sample() -> dict[str, Any]:
    # Distinct small talk (the deduplicator would fold repeats), none of it about painting.
    filler = [f"On {day} I went to {place}." for day in DAYS for place in PLACES]
    turns = [("Ann", "I painted a sunset by the lake.")]
    turns += [("Bob" if i % 2 == 0 else "Ann", text) for i, text in enumerate(filler[:18])]
    # The second evidence turn shares no word with the question but Ann's name, which the
    # benchmark does not count, and sits far from the first: no neighbour leads to it either.
    turns += [("Ann", "It took me the whole of May.")]
    turns += [("Ann" if i % 2 == 0 else "Bob", text) for i, text in enumerate(filler[18:])]
    session = [
        {"speaker": speaker, "dia_id": f"D1:{i + 1}", "text": text}
        for i, (speaker, text) in enumerate(turns)
    ]
    last = next(t["dia_id"] for t in session if t["text"].startswith("It took"))
    return {
        "sample_id": "tiny",
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1": session,
        "qa": [
            {"question": "What did Ann paint?", "evidence": ["D1:1", last], "category": 1},
            {"question": "Trick question", "evidence": ["D1:2"], "category": 5},
        ],
    }


@pytest.fixture(scope="module")
def conversation(locomo: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("locomo") / "tiny.json"
    path.write_text(json.dumps(_sample()), encoding="utf-8")
    (conv,) = locomo.load_conversations([path])
    return conv


def test_adversarial_questions_are_skipped(conversation: Any) -> None:
    assert [q.question for q in conversation.questions] == ["What did Ann paint?"]


def test_a_turn_counts_only_with_most_of_its_words(locomo: ModuleType) -> None:
    words = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
    original = {"a": {"role": "user", "content": " ".join(words)}}
    whole = [{"id": "a", "content": " ".join(words)}]
    eight = [{"id": "a", "content": " ".join(words[:8])}]
    seven = [{"id": "a", "content": " ".join(words[:7])}]
    assert locomo.evidence_outcomes(whole, original, ["a", "unknown"]) == {"a": True}
    assert locomo.evidence_outcomes(eight, original, ["a"]) == {"a": True}
    assert locomo.evidence_outcomes(seven, original, ["a"]) == {"a": False}
    assert locomo.evidence_recall(seven, original, ["a", "unknown"]) == (0, 1)


def _records(locomo: ModuleType, conversation: Any, budgets: list[int]) -> list[Any]:
    counter = locomo.TokenCounter()
    methods, skipped = locomo.make_methods(["ctxpack", "recency"], counter)
    assert not skipped
    return list(locomo.run([conversation], methods, budgets, counter))


def test_placements_say_where_the_lost_evidence_ranked(
    locomo: ModuleType, conversation: Any
) -> None:
    small, large = 80, 4000
    records = _records(locomo, conversation, [small, large])
    by_key = {(r.method, r.budget): r for r in records}
    assert not by_key["recency", small].placements  # only ctxpack can say where things ranked

    tight = by_key["ctxpack", small].placements
    assert [p.evidence_id for p in tight] == list(conversation.questions[0].evidence)
    painted, may = tight
    # The only turn with "paint" in it is the packer's first choice, and it fits.
    assert (painted.recalled, painted.rank, painted.shares_word) == (True, 1, True)
    # The other one shares no word with the question: lost, far behind what was kept.
    assert not may.recalled and not may.shares_word
    assert may.rank > 2 * may.kept_turns >= 2
    assert by_key["ctxpack", small].hits == 1

    # With room for the whole conversation nothing is lost, and the ranks stay the same.
    roomy = by_key["ctxpack", large].placements
    assert all(p.recalled for p in roomy)
    assert [p.rank for p in roomy] == [p.rank for p in tight]
    assert roomy[0].kept_turns == len(conversation.turns)


def test_summary_and_report_split_recall_by_shared_words(
    locomo: ModuleType, conversation: Any
) -> None:
    records = _records(locomo, conversation, [80])
    summary = locomo.summarize(records, ["ctxpack", "recency"], [80])
    assert "misses" not in summary["recency"]["80"]
    misses = summary["ctxpack"]["80"]["misses"]["overall"]
    assert misses["missed"] == misses["no_shared_word"] == 1
    assert misses["rank_beyond_4x_kept"] + misses["rank_2x_to_4x_kept"] == 1
    assert (misses["recall_sharing_a_word"], misses["recall_sharing_no_word"]) == (1.0, 0.0)
    assert summary["ctxpack"]["80"]["misses"]["by_category"]["1"] == misses

    report = locomo.render_markdown(summary, records, [conversation], [80], {}, None)
    assert "## What ctxpack loses" in report
    assert "| ctxpack | 80 | 100.0 (1 turns) | 0.0 (1 turns) |" in report
