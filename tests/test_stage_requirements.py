"""Stages declare the signals they provide and require; a pipeline checks them when built."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

import ctxpack
from ctxpack import ConfigError, GreedyPacker, Pipeline, RelevanceScorer, default_pipeline
from ctxpack.packing import semantic_pipeline
from ctxpack.pipeline import PackContext
from ctxpack.stages import MemorySelector, SemanticScorer, StageModel

HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "be brief", "id": "s"},
    {"role": "user", "content": "the parser drops comments", "id": "u1"},
    {"role": "assistant", "content": "I will look at it", "id": "a1"},
    {"role": "user", "content": "what about the parser?", "id": "u2"},
]


def test_the_default_pipeline_without_relevance_names_the_step_and_the_producer() -> None:
    with pytest.raises(ConfigError) as caught:
        default_pipeline().without("relevance")
    message = str(caught.value)
    assert message.startswith("step 'pack' (GreedyPacker) requires the signal 'relevance',")
    assert "RelevanceScorer provides 'relevance'" in message
    assert "memory" not in message  # the memory step is still there


def test_each_missing_signal_is_named_at_once() -> None:
    with pytest.raises(ConfigError, match=r"signals 'memory', 'relevance'.*MemorySelector"):
        Pipeline([GreedyPacker()])


def test_a_misspelt_signal_weight_is_refused_with_the_signals_there_are() -> None:
    # The mapping replaces the defaults: relevance would weigh 0, and 'relevnce' nothing.
    packer = GreedyPacker(signal_weights={"relevnce": 50.0})
    with pytest.raises(ConfigError) as caught:
        default_pipeline().replace("pack", packer)
    message = str(caught.value)
    assert "requires the signal 'relevnce'" in message
    assert "did you mean 'relevance'?" in message
    assert "known signals: " in message and "'memory'" in message
    with pytest.raises(ConfigError, match="did you mean 'relevance'"):
        ctxpack.pack(HISTORY, budget=1000, pipeline=packer)


def test_a_producer_after_its_consumer_is_told_to_move() -> None:
    with pytest.raises(ConfigError, match="step 'relevance' provides 'relevance' but runs after"):
        Pipeline([MemorySelector(), GreedyPacker(), RelevanceScorer()])


def test_the_semantic_scorer_refines_relevance_so_it_needs_the_lexical_scorer() -> None:
    assert semantic_pipeline(embedder=lambda texts: None).names[6:8] == ["relevance", "semantic"]
    with pytest.raises(ConfigError) as caught:
        semantic_pipeline(embedder=lambda texts: None).without("relevance")
    message = str(caught.value)
    assert message.startswith("step 'semantic' (SemanticScorer) requires the signal 'relevance'")
    # It refines the signal: no answer to its absence.
    assert "RelevanceScorer provides" in message and "SemanticScorer provides" not in message


def test_the_packer_requires_the_signals_it_weighs() -> None:
    assert GreedyPacker().requires == {"relevance", "memory"}
    assert GreedyPacker(signal_weights={"relevance": 1.0, "memory": 0.0}).requires == {"relevance"}
    assert GreedyPacker(signal_weights={}).requires == frozenset()
    assert Pipeline([GreedyPacker(signal_weights={})]).names == ["pack"]


def test_a_function_stage_declares_what_it_provides() -> None:
    def score_length(ctx: PackContext, /) -> PackContext:
        return ctx.with_signal("relevance", {m.id: len(m.text) / 100 for m in ctx.messages})

    # Undeclared, it provides nothing the pipeline can rely on.
    with pytest.raises(ConfigError, match="requires the signal 'relevance'"):
        default_pipeline().replace("relevance", score_length)
    score_length.provides = frozenset({"relevance"})  # type: ignore[attr-defined]
    mine = default_pipeline().replace("relevance", score_length)
    result = ctxpack.pack(HISTORY, budget=1000, pipeline=mine)
    assert result.kept_ids == ["s", "u1", "a1", "u2"]


def test_a_stage_that_declares_nothing_needs_nothing() -> None:
    def noop(ctx: PackContext, /) -> PackContext:
        return ctx

    pipeline = Pipeline([noop])
    assert pipeline.provides == frozenset() and pipeline.requires == frozenset()


def test_a_nested_pipeline_provides_what_its_steps_provide() -> None:
    scorers = Pipeline([MemorySelector(), RelevanceScorer()])
    assert scorers.provides == {"memory", "relevance"}
    assert Pipeline([("scorers", scorers), GreedyPacker()]).names == ["scorers", "pack"]


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        ("relevance", "provides must be a collection of signal names"),
        (5, "provides must be a collection of signal names"),
        ({"relevance": 1}, "provides must be a collection of signal names"),
        ({""}, "provides holds ''"),
        ([3], "provides holds 3"),
    ],
)
def test_a_malformed_declaration_names_the_step(declared: object, expected: str) -> None:
    def mine(ctx: PackContext, /) -> PackContext:
        return ctx

    mine.provides = declared  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=f"step 'mine' \\(function\\): {expected}"):
        Pipeline([mine])


class _Boost(StageModel):
    """A user's own stage on the public base class."""

    name: ClassVar[str] = "boost"
    provides: ClassVar[frozenset[str]] = frozenset({"boost_h29c"})
    role: str = "assistant"

    def __call__(self, ctx: PackContext, /) -> PackContext:
        return ctx.with_signal(
            "boost_h29c", {m.id: 1.0 for m in ctx.messages if m.role == self.role}
        )


def test_a_user_stage_on_the_public_base_class_is_checked_and_suggested() -> None:
    packer = GreedyPacker(signal_weights={"boost_h29c": 50.0})
    with pytest.raises(ConfigError, match="_Boost provides 'boost_h29c'"):
        Pipeline([packer])
    with pytest.raises(ConfigError, match="_Boost: role=3"):
        _Boost(role=3)
    result = ctxpack.pack(HISTORY, budget=1000, pipeline=Pipeline([_Boost(), packer]))
    assert result.kept_ids == ["s", "u1", "a1", "u2"]
    kept = {d.message_id: d.reason for d in result.decisions if d.action == "kept"}
    assert "boost_h29c 50.00" in kept["a1"]


def test_the_stage_base_class_is_public() -> None:
    import ctxpack.stages

    assert "StageModel" in ctxpack.stages.__all__
    assert issubclass(RelevanceScorer, StageModel) and issubclass(SemanticScorer, StageModel)
