"""SemanticScorer: embedding similarity mixed into the relevance signal, with a fake embedder."""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import ctxpack
from ctxpack import ConfigError, Pipeline, RelevanceScorer
from ctxpack.packing import semantic_pipeline
from ctxpack.signals import Neighbors
from ctxpack.stages import SemanticScorer
from ctxpack.testing import check_stage

from ..helpers import ctx_of

# Words that mean the same concept to the fake embedder (and nothing alike to BM25).
CONCEPTS = {
    "postgres": "database",
    "db": "database",
    "database": "database",
    "dumps": "backup",
    "dumped": "backup",
    "backup": "backup",
    "backups": "backup",
    "nightly": "night",
    "night": "night",
}

DIMS = 1024


def fake_embed(texts: Sequence[str]) -> np.ndarray[Any, Any]:
    """Bag of concepts hashed into DIMS dimensions, normalised: deterministic, no model."""
    out = np.zeros((len(texts), DIMS))
    for row, text in enumerate(texts):
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            out[row, zlib.crc32(CONCEPTS.get(word, word).encode()) % DIMS] += 1.0
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


QUERY = "When does the database backup run?"
HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Postgres gets dumped nightly at two.", "id": "para"},
    {"role": "assistant", "content": "Noted.", "id": "ack"},
    {"role": "user", "content": "Our frontend uses React and Vite.", "id": "react"},
    {"role": "assistant", "content": "Fast builds, good choice.", "id": "vite"},
    {"role": "user", "content": "Lunch is at noon on Fridays.", "id": "lunch"},
    {"role": "assistant", "content": "Enjoy your meal.", "id": "meal"},
    {"role": "user", "content": "I also want a backup of the wiki.", "id": "wiki"},
    {"role": "assistant", "content": "Which wiki pages?", "id": "pages"},
    {"role": "user", "content": QUERY, "id": "q"},
]


def relevance(ctx: ctxpack.pipeline.PackContext) -> dict[str, float]:
    return dict(ctx.signal("relevance"))


def scored(stage: SemanticScorer, history: list[dict[str, Any]] = HISTORY) -> tuple[Any, Any]:
    """(context after BM25, context after BM25 then ``stage``) with the question protected.

    Plain BM25 (no document or query expansion), so that only the semantic stage reaches the
    paraphrase.
    """
    plain = RelevanceScorer(expansion=()).without("related")
    lexical = plain(ctx_of(history, query=QUERY, protected=["q"]))
    return lexical, stage(lexical)


def test_a_paraphrase_without_shared_words_gets_relevance() -> None:
    lexical, out = scored(SemanticScorer(embedder=fake_embed, weight=0.5))
    # BM25 sees nothing in common between the paraphrase and the question...
    assert "para" not in relevance(lexical)
    assert relevance(lexical)["wiki"] == 1.0  # "backup" matches
    # ...the embedder does: the paraphrase now ranks second only to the message both match.
    mixed = relevance(out)
    assert mixed["para"] == pytest.approx(0.5)  # weight 0.5 x semantic score 1
    assert sorted(mixed, key=mixed.__getitem__, reverse=True)[:2] == ["wiki", "para"]
    # Its neighbours inherit a share, as with BM25 relevance: half, then a quarter.
    assert mixed["ack"] == pytest.approx(0.25)
    assert mixed["react"] == pytest.approx(0.125)
    assert "vite" not in mixed  # three away from the paraphrase


def test_neighbours_share_like_bm25_relevance() -> None:
    assert SemanticScorer().neighbors == RelevanceScorer()["neighbors"]
    _, out = scored(SemanticScorer(embedder=fake_embed, neighbors=None))
    assert "ack" not in relevance(out)
    _, near = scored(SemanticScorer(embedder=fake_embed, neighbors=Neighbors(distance=1)))
    assert "ack" in relevance(near) and "react" not in relevance(near)


def test_the_mix_follows_the_weight() -> None:
    lexical, out = scored(SemanticScorer(embedder=fake_embed, weight=0.25))
    old, new = relevance(lexical), relevance(out)
    assert new["para"] == pytest.approx(0.25)
    # The BM25 match keeps three quarters of its relevance plus a quarter of its semantic score.
    assert 0.75 * old["wiki"] <= new["wiki"] <= 0.75 * old["wiki"] + 0.25
    full = SemanticScorer(embedder=fake_embed, weight=1.0)(lexical)
    assert relevance(full)["para"] == pytest.approx(1.0)


def test_weight_zero_leaves_relevance_unchanged() -> None:
    def never(texts: Sequence[str]) -> np.ndarray[Any, Any]:
        raise AssertionError("weight 0 must not embed anything")

    lexical, out = scored(SemanticScorer(embedder=never, weight=0.0))
    assert relevance(out) == relevance(lexical)
    assert out.decisions == lexical.decisions


def test_protected_messages_get_no_semantic_score() -> None:
    history = [
        {"role": "system", "content": "Database backup runbook.", "id": "sys"},
        *HISTORY,
    ]
    ctx = ctx_of(history, query=QUERY, protected=["sys", "q"])
    out = SemanticScorer(embedder=fake_embed)(ctx)
    # "sys" and "q" are the closest texts to the question, yet they get nothing.
    assert "sys" not in relevance(out)
    assert "q" not in relevance(out)
    assert {d.message_id for d in out.decisions} & {"sys", "q"} == set()
    assert relevance(out)["para"] == pytest.approx(0.3)  # the default weight x semantic 1


@pytest.mark.parametrize("query", [None, ""])
def test_no_query_is_a_no_op(query: str | None) -> None:
    def never(texts: Sequence[str]) -> np.ndarray[Any, Any]:
        raise AssertionError("no query: nothing to embed")

    ctx = ctx_of(HISTORY, query=query)
    assert SemanticScorer(embedder=never)(ctx) is ctx


def test_decisions_name_the_similarity() -> None:
    lexical, out = scored(SemanticScorer(embedder=fake_embed))
    new = out.decisions[len(lexical.decisions) :]
    by_id = {d.message_id: d for d in new}
    assert set(by_id) == {"para", "wiki"}
    para = by_id["para"]
    assert (para.stage, para.action, para.score) == ("semantic", "selected", 1.0)
    cosine = float(fake_embed([QUERY, HISTORY[0]["content"]]).prod(axis=0).sum())
    assert para.reason.startswith(f"semantic similarity {cosine:.2f} to the query")
    assert all(d.score is not None and d.score >= 0.5 for d in new)


def test_every_text_and_the_query_are_embedded_in_one_call() -> None:
    calls: list[list[str]] = []

    def spy(texts: Sequence[str]) -> np.ndarray[Any, Any]:
        calls.append(list(texts))
        return fake_embed(texts)

    scored(SemanticScorer(embedder=spy))
    assert calls == [[QUERY, *(m["content"] for m in HISTORY[:-1])]]


def test_a_wrong_shape_from_the_embedder_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="one vector per text"):
        scored(SemanticScorer(embedder=lambda texts: np.ones(3)))


def test_configuration_is_validated_and_loads_nothing() -> None:
    with pytest.raises(ConfigError, match=r"SemanticScorer: weight=1\.5"):
        SemanticScorer(weight=1.5)
    with pytest.raises(ConfigError, match=r"embeder=.*unknown option"):
        SemanticScorer(embeder=fake_embed)  # type: ignore[call-arg]
    # No model is loaded until the stage runs.
    assert SemanticScorer().embedder is None
    assert "weight=0.3" in repr(SemanticScorer())


def test_the_stage_keeps_the_contract() -> None:
    check_stage(SemanticScorer(embedder=fake_embed))
    check_stage(Pipeline([RelevanceScorer(), SemanticScorer(embedder=fake_embed)]))


def test_semantic_pipeline_runs_right_after_relevance() -> None:
    pipeline = semantic_pipeline(embedder=fake_embed, weight=0.3)
    assert pipeline.names == [
        "redact",
        "flag",
        "compose",
        "memory",
        "dedupe",
        "citations",
        "relevance",
        "semantic",
        "compress",
        "pack",
        "alternate",
    ]
    stage = pipeline["semantic"]
    assert isinstance(stage, SemanticScorer)
    assert (stage.embedder, stage.weight) == (fake_embed, 0.3)
    assert stage.neighbors == RelevanceScorer()["neighbors"]
    assert "semantic" not in ctxpack.default_pipeline().names


def test_pack_keeps_the_paraphrase_the_lexical_default_drops() -> None:
    history = [{"role": "system", "content": "You are the ops assistant.", "id": "sys"}, *HISTORY]
    budget = 75
    lexical = ctxpack.pack(history, budget=budget, model="gpt-4")
    semantic = ctxpack.pack(
        history, budget=budget, model="gpt-4", pipeline=semantic_pipeline(embedder=fake_embed)
    )
    assert "para" in lexical.dropped_ids
    assert "para" in semantic.kept_ids
    assert semantic.tokens <= budget
    assert any(d.stage == "semantic" and d.message_id == "para" for d in semantic.decisions)


def test_the_configuration_round_trips_through_a_dump() -> None:
    scorer = SemanticScorer(weight=0.5, neighbors=Neighbors(share=0.7))
    assert SemanticScorer(**scorer.model_dump()) == scorer
    assert SemanticScorer(**SemanticScorer(neighbors=None).model_dump()).neighbors is None
