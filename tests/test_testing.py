"""ctxpack.testing.check_stage: every built-in stage passes; broken stages fail, each for the
rule it breaks."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

import ctxpack
from ctxpack import ConfigError, Decision
from ctxpack.pipeline import PackContext
from ctxpack.testing import check_stage, sample_contexts

BUILT_IN: list[Any] = [
    ctxpack.PromptComposer(),
    ctxpack.PromptComposer(system="Cite sources.", developer="Be brief."),
    ctxpack.MemorySelector(),
    ctxpack.Deduplicator(),
    ctxpack.CitationInheritor(),
    ctxpack.RelevanceScorer(),
    ctxpack.ExtractiveCompressor(),
    ctxpack.ExtractiveCompressor(max_lines=3, min_tokens=0, only_when_over_budget=False),
    ctxpack.GreedyPacker(),
    ctxpack.default_pipeline(),
]


@pytest.mark.parametrize("stage", BUILT_IN, ids=lambda s: type(s).__name__)
def test_every_built_in_stage_conforms(stage: Any) -> None:
    check_stage(stage)


def test_samples_make_the_stages_act() -> None:
    # The check is only as good as its samples: on them, stages must actually drop, dedupe,
    # compress and cite, or a stage that breaks the rules when acting would pass.
    actions: set[str] = set()
    for _, ctx in sample_contexts():
        actions |= {d.action for d in ctxpack.default_pipeline()(ctx).decisions}
    assert {"dropped", "deduped", "compressed", "cited", "kept", "selected"} <= actions


def drop_old_assistants(ctx: PackContext, /) -> PackContext:
    """A user's stage: drops assistant turns before the last user message, and says so."""
    last_user = max((i for i, m in enumerate(ctx.messages) if m.role == "user"), default=-1)
    gone = [m for i, m in enumerate(ctx.messages) if m.role == "assistant" and i < last_user]
    gone_ids = {m.id for m in gone}
    return ctx.decide(
        *(
            Decision(stage="mine", action="dropped", message_id=m.id, reason="old answer")
            for m in gone
        ),
        messages=tuple(m for m in ctx.messages if m.id not in gone_ids),
    )


def test_a_user_function_stage_conforms() -> None:
    check_stage(drop_old_assistants)
    check_stage(ctxpack.Pipeline([drop_old_assistants, ctxpack.GreedyPacker(signal_weights={})]))


def test_examples_replace_the_samples() -> None:
    seen: list[int] = []

    def spy(ctx: PackContext, /) -> PackContext:
        seen.append(len(ctx.messages))
        return ctx

    check_stage(spy, examples=[[{"role": "user", "content": "hi"}]])
    assert seen == [1, 1]  # run twice on the one example: the determinism check


# Each broken stage below breaks exactly one rule.


def returns_a_list(ctx: PackContext, /) -> Any:
    return list(ctx.messages)


def drops_silently(ctx: PackContext, /) -> PackContext:
    return ctx.evolve(messages=ctx.messages[:-1])


def adds_silently(ctx: PackContext, /) -> PackContext:
    extra = ctxpack.Message(role="assistant", content="made up", id="invented")
    return ctx.evolve(messages=(*ctx.messages, extra))


def rewrites_silently(ctx: PackContext, /) -> PackContext:
    first = ctx.messages[0].model_copy(update={"content": "something else"})
    return ctx.evolve(messages=(first, *ctx.messages[1:]))


def mutates_metadata(ctx: PackContext, /) -> PackContext:
    ctx.messages[0].metadata["seen"] = True
    return ctx


def shortens_without_the_original(ctx: PackContext, /) -> PackContext:
    # Recorded as compressed, yet result.original() would find nothing: the original is lost.
    def cut(m: ctxpack.Message) -> ctxpack.Message:
        return m.model_copy(update={"content": "[cut]"}) if m.role == "tool" else m

    return ctx.decide(
        *(
            Decision(stage="bad", action="compressed", message_id=m.id, reason="cut")
            for m in ctx.messages
            if m.role == "tool"
        ),
        messages=tuple(map(cut, ctx.messages)),
    )


def reverses(ctx: PackContext, /) -> PackContext:
    return ctx.evolve(messages=tuple(reversed(ctx.messages)))


_calls = itertools.count()


def not_deterministic(ctx: PackContext, /) -> PackContext:
    return ctx.evolve(query=f"call {next(_calls)}")


def drops_protected(ctx: PackContext, /) -> PackContext:
    gone = [m for m in ctx.messages if m.id in ctx.protected]
    return ctx.decide(
        *(Decision(stage="bad", action="dropped", message_id=m.id, reason="x") for m in gone),
        messages=tuple(m for m in ctx.messages if m.id not in ctx.protected),
    )


def forgets_decisions(ctx: PackContext, /) -> PackContext:
    return ctx.evolve(decisions=())


def _with_a_decision(ctx: PackContext) -> PackContext:
    return ctx.decide(Decision(stage="x", action="kept", message_id="sys", reason="r"))


@pytest.mark.parametrize(
    ("stage", "expected"),
    [
        (returns_a_list, "returned list, not a PackContext"),
        (drops_silently, "removed message .* without a Decision"),
        (adds_silently, "added message 'invented' without a Decision"),
        (rewrites_silently, "rewrote message .* without a Decision"),
        (shortens_without_the_original, "rewrote message 't1' without keeping its original"),
        (mutates_metadata, "mutated its input context"),
        (reverses, "reordered the messages"),
        (not_deterministic, "is not deterministic"),
        (drops_protected, "dropped protected messages"),
    ],
    ids=lambda v: getattr(v, "__name__", "msg"),
)
def test_a_broken_stage_fails_the_check(stage: Callable[..., Any], expected: str) -> None:
    with pytest.raises(AssertionError, match=expected) as info:
        check_stage(stage)
    assert repr(stage.__name__) in str(info.value), "the message names the stage"
    assert "on sample" in str(info.value), "the message names the sample"


def test_losing_earlier_decisions_fails_the_check() -> None:
    examples = [_with_a_decision(ctx) for _, ctx in sample_contexts()]
    with pytest.raises(AssertionError, match="lost or rewrote earlier decisions"):
        check_stage(forgets_decisions, examples=examples)


def test_no_examples_is_refused_rather_than_passed() -> None:
    # An empty list ran nothing and returned: any stage, however broken, passed.
    with pytest.raises(ConfigError, match="examples is empty"):
        check_stage(returns_a_list, examples=[])


def overwrites_the_original(ctx: PackContext, /) -> PackContext:
    # artifacts[id] = msg rather than setdefault: a second cut keeps the first cut as "original".
    artifacts = dict(ctx.artifacts)
    messages, decisions = [], []
    for m in ctx.messages:
        if m.id in artifacts:
            artifacts[m.id] = m
            m = m.model_copy(update={"content": "[cut again]"})
            decisions.append(
                Decision(stage="bad", action="compressed", message_id=m.id, reason="r")
            )
        messages.append(m)
    return ctx.decide(*decisions, messages=tuple(messages), artifacts=artifacts)


def forgets_the_originals(ctx: PackContext, /) -> PackContext:
    return ctx.evolve(artifacts={})


@pytest.mark.parametrize("stage", [overwrites_the_original, forgets_the_originals])
def test_losing_an_earlier_original_fails_the_check(stage: Callable[..., Any]) -> None:
    # Both passed: only the messages a stage rewrote were checked, not the originals it got.
    cut = ctxpack.ExtractiveCompressor(max_lines=3, min_tokens=0, only_when_over_budget=False)
    examples = [cut(ctx) for _, ctx in sample_contexts()]
    with pytest.raises(AssertionError, match=r"lost or replaced the originals \['a4', 't1'\]"):
        check_stage(stage, examples=examples)
