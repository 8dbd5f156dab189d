"""Pipeline: named steps that can be listed and replaced; itself a stage."""

from __future__ import annotations

import copy
import pickle
import sys
from typing import Any

import pytest
from pydantic import ValidationError

import ctxpack
from ctxpack import ConfigError, Decision, Deduplicator, GreedyPacker, Pipeline, PromptComposer
from ctxpack._internal.decisions import trusted_decision
from ctxpack.pipeline import PackContext
from ctxpack.stages import SemanticScorer

from .helpers import ctx_of, ids

HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "be brief", "id": "s"},
    {"role": "user", "content": "hello", "id": "u1"},
    {"role": "user", "content": "hello", "id": "u2"},
]


def drop_assistants(ctx: PackContext, /) -> PackContext:
    """A user stage written as a plain function."""
    gone = [m for m in ctx.messages if m.role == "assistant"]
    return ctx.decide(
        *(
            Decision(stage="drop_assistants", action="dropped", message_id=m.id, reason="no")
            for m in gone
        ),
        messages=tuple(m for m in ctx.messages if m.role != "assistant"),
    )


def test_steps_are_named_after_their_stage_and_listed_in_order() -> None:
    p = Pipeline(
        [PromptComposer(), Deduplicator(), drop_assistants, GreedyPacker(signal_weights={})]
    )
    assert p.names == ["compose", "dedupe", "drop_assistants", "pack"]
    assert len(p) == 4
    assert [name for name, _ in p] == p.names
    assert isinstance(p["dedupe"], Deduplicator)
    assert p.steps[2] == ("drop_assistants", drop_assistants)


def test_explicit_names_and_duplicate_names() -> None:
    p = Pipeline([("first", Deduplicator()), ("second", Deduplicator(case_sensitive=True))])
    assert p.names == ["first", "second"]
    with pytest.raises(ConfigError, match="'dedupe' is already used") as caught:
        Pipeline([Deduplicator(), Deduplicator()])
    # The suggested pair is Python the caller can paste (it read ('dedupe'_2, stage)).
    assert "('dedupe_2', stage)" in str(caught.value)


def test_unknown_step_name_lists_the_names() -> None:
    p = Pipeline([Deduplicator(), GreedyPacker(signal_weights={})])
    with pytest.raises(KeyError, match=r"\['dedupe', 'pack'\]"):
        p["nope"]
    edits = [
        lambda: p.replace("nope", Deduplicator()),
        lambda: p.without("nope"),
        lambda: p.insert("nope", Deduplicator()),
    ]
    for edit in edits:
        # ctxpack's own error, which code written for the builtin KeyError still catches.
        with pytest.raises(ConfigError, match=r"no step named 'nope'; steps are \['dedupe'"):
            edit()
        with pytest.raises(KeyError):
            edit()


def test_replace_without_insert_return_new_pipelines() -> None:
    p = Pipeline([PromptComposer(), Deduplicator(), GreedyPacker(signal_weights={})])
    strict = Deduplicator(case_sensitive=True)
    replaced = p.replace("dedupe", strict)
    assert replaced.names == p.names
    assert replaced["dedupe"] is strict
    assert p["dedupe"] is not strict, "the original pipeline is unchanged"
    assert p.without("dedupe").names == ["compose", "pack"]
    inserted = p.insert("pack", drop_assistants)
    assert inserted.names == ["compose", "dedupe", "drop_assistants", "pack"]
    assert p.insert("compose", ("mine", drop_assistants)).names[0] == "mine"
    assert p.names == ["compose", "dedupe", "pack"]


def test_runs_steps_in_order() -> None:
    seen: list[str] = []

    def first(ctx: PackContext, /) -> PackContext:
        seen.append("first")
        return ctx

    def second(ctx: PackContext, /) -> PackContext:
        seen.append("second")
        return ctx

    Pipeline([second, first])(ctx_of(HISTORY))
    assert seen == ["second", "first"]


def test_a_plain_function_is_a_stage() -> None:
    history: list[dict[str, Any]] = [*HISTORY, {"role": "assistant", "content": "hi", "id": "a"}]
    out = Pipeline([drop_assistants])(ctx_of(history))
    assert ids(out) == ["s", "u1", "u2"]
    result = ctxpack.pack(
        history, budget=100, pipeline=Pipeline([drop_assistants, GreedyPacker(signal_weights={})])
    )
    assert "a" in result.dropped_ids
    assert result.decisions_for("a")[0].stage == "drop_assistants"


def test_a_pipeline_is_a_stage_inside_another() -> None:
    inner = Pipeline([PromptComposer(), Deduplicator()])
    outer = Pipeline([("clean", inner), GreedyPacker(signal_weights={})])
    assert isinstance(inner, ctxpack.pipeline.Stage)
    assert outer.names == ["clean", "pack"]
    out = outer(ctx_of(HISTORY, budget=1000))
    assert ids(out) == ["s", "u2"]
    assert [d.stage for d in out.decisions if d.message_id == "u1"] == ["dedupe"]


@pytest.mark.parametrize("bad_return", [None, [], "ctx"])
def test_a_stage_returning_the_wrong_type_is_named(bad_return: Any) -> None:
    def broken(ctx: PackContext, /) -> Any:
        return bad_return

    p = Pipeline([Deduplicator(), ("my_step", broken), GreedyPacker(signal_weights={})])
    with pytest.raises(ConfigError, match="step 'my_step' returned") as info:
        p(ctx_of(HISTORY))
    assert "PackContext" in str(info.value)
    with pytest.raises(ConfigError, match="'my_step'"):
        ctxpack.pack(HISTORY, budget=100, pipeline=p)


def test_a_step_that_cannot_take_the_context_is_named_but_its_own_errors_pass() -> None:
    def no_argument() -> PackContext:
        raise AssertionError("never called")

    def broken(ctx: PackContext, /) -> PackContext:
        return len(5)  # type: ignore[arg-type,return-value]

    history = [{"role": "user", "content": "hi"}]
    with pytest.raises(ConfigError, match=r"step 'no_argument': .*no_argument\(\) cannot be"):
        ctxpack.pack(history, budget=100, pipeline=Pipeline([no_argument]))  # type: ignore[list-item]
    # A TypeError raised inside a stage that takes the context is the stage's, unchanged.
    with pytest.raises(TypeError, match="has no len") as caught:
        ctxpack.pack(history, budget=100, pipeline=Pipeline([broken]))
    assert not isinstance(caught.value, ConfigError)


def test_a_non_callable_step_is_rejected_up_front() -> None:
    with pytest.raises(ConfigError, match=r"step 1 .* not callable"):
        Pipeline([Deduplicator(), 42])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="step 0: expected a stage or a"):
        Pipeline([(1, Deduplicator())])  # type: ignore[list-item]


def test_a_custom_pipeline_without_a_packer_cannot_overflow_silently() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "word " * 100}]
    with pytest.raises(ConfigError, match="must end with a packer"):
        ctxpack.pack(history, budget=20, pipeline=Pipeline([Deduplicator()]))


def test_a_stage_that_moves_the_budget_cannot_overflow_the_callers() -> None:
    # The check once read the budget and reserve off the returned context: a stage that raised
    # ctx.budget tenfold got 508 tokens past a budget of 200 with no error.
    history: list[dict[str, Any]] = [
        {"role": "user", "content": f"message {i} " + "word " * 40} for i in range(10)
    ]

    def raise_budget(ctx: PackContext, /) -> PackContext:
        return ctx.evolve(budget=ctx.budget * 10)

    def drop_reserve(ctx: PackContext, /) -> PackContext:
        return ctx.evolve(reserve=0)

    packer = GreedyPacker(signal_weights={})
    with pytest.raises(ConfigError, match="changed the context's budget or reserve"):
        ctxpack.pack(history, budget=200, pipeline=Pipeline([raise_budget, packer]))
    with pytest.raises(ConfigError, match=r"budget of 300 \(reserve 100\)"):
        ctxpack.pack(history, budget=300, reserve=100, pipeline=Pipeline([drop_reserve, packer]))


def test_a_message_no_stage_decided_about_keeps_its_tokens_in_the_result() -> None:
    # pack()'s own kept/dropped decisions carried no tokens: through a pipeline that decides
    # nothing, tokens_of() read 0 for every message sent, and report() showed '-' for each.
    def keep_all_but_the_first_user(ctx: PackContext, /) -> PackContext:
        return ctx.evolve(messages=tuple(m for m in ctx.messages if m.id != "u1"))

    pipeline = Pipeline([keep_all_but_the_first_user])
    result = ctxpack.pack(HISTORY, budget=1000, pipeline=pipeline)
    counter = ctxpack.tokens.get_counter()
    each = [result.tokens_of(m) for m in result.messages]
    assert each == [counter.count_message(m) for m in result.messages]
    assert sum(each) + counter.count_messages([]) == result.tokens
    (dropped,) = result.decisions_for("u1")
    assert (dropped.action, dropped.tokens_after) == ("dropped", 0)
    assert dropped.tokens_before == counter.count_message(ctxpack.Message(**HISTORY[1]))


def test_a_custom_pipeline_cannot_return_tool_messages_openai_rejects() -> None:
    # Checked for Anthropic only: a stage dropping the call 'a1' but keeping its result 't1'
    # gave an OpenAI request that OpenAI refuses (a tool message answering no call).
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "look it up", "id": "u1"},
        {"role": "assistant", "content": None, "id": "a1", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "found", "id": "t1"},
        {"role": "assistant", "content": "done", "id": "a2"},
        {"role": "user", "content": "thanks", "id": "u2"},
    ]

    def without(gone: str) -> Any:
        def drop(ctx: PackContext, /) -> PackContext:
            return ctx.decide(
                Decision(stage="drop", action="dropped", message_id=gone, reason="test"),
                messages=tuple(m for m in ctx.messages if m.id != gone),
            )

        return drop

    with pytest.raises(ConfigError, match="'t1': the tool result for 'c1' answers no call"):
        ctxpack.pack(history, budget=1000, pipeline=Pipeline([without("a1")]))
    with pytest.raises(ConfigError, match=r"'a1': its tool calls \['c1'\] have no result"):
        ctxpack.pack(history, budget=1000, pipeline=Pipeline([without("t1")]))
    # A call in the last message may still wait for its result.
    result = ctxpack.pack(history[:2], budget=1000, pipeline=Pipeline([without("none")]))
    assert result.kept_ids == ["u1", "a1"]


def _drops_the_system_prompt(ctx: PackContext, /) -> PackContext:
    gone = [m for m in ctx.messages if m.role == "system"]
    return ctx.decide(
        *(Decision(stage="mine", action="dropped", message_id=m.id, reason="x") for m in gone),
        messages=tuple(m for m in ctx.messages if m not in gone),
    )


def _drops_the_question(ctx: PackContext, /) -> PackContext:
    return ctx.decide(
        Decision(stage="mine", action="dropped", message_id=ctx.messages[-1].id, reason="x"),
        messages=ctx.messages[:-1],
    )


def _reverses(ctx: PackContext, /) -> PackContext:
    return ctx.evolve(messages=tuple(reversed(ctx.messages)))


def _repeats_a_message(ctx: PackContext, /) -> PackContext:
    return ctx.evolve(messages=(*ctx.messages, ctx.messages[1]))


_CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse.", "id": "sys"},
    {"role": "user", "content": "Name a prime.", "id": "u1"},
    {"role": "assistant", "content": "7", "id": "a1"},
    {"role": "user", "content": "Another one?", "id": "u2"},
]


@pytest.mark.parametrize(
    ("stage", "expected"),
    [
        (_drops_the_system_prompt, r"step '_drops_the_system_prompt' dropped protected .*'sys'"),
        (_reverses, r"step '_reverses' reordered the messages: 'a1' \(input index 2\)"),
        (_repeats_a_message, r"step '_repeats_a_message' .*repeated ids: 'u1' at indices 1 and 4"),
    ],
    ids=lambda v: getattr(v, "__name__", "msg"),
)
def test_pack_holds_a_custom_step_to_the_packers_promises(stage: Any, expected: str) -> None:
    # A custom stage dropped the system prompt, reversed the history or sent a message twice,
    # and pack() returned it: ['u1', 'a1', 'u2'], ['u2', 'a1', 'u1', 'sys'], [..., 'u2', 'u1'].
    for pipeline in (
        stage,
        Pipeline([PromptComposer(), stage, GreedyPacker(signal_weights={})]),
        Pipeline([PromptComposer(), GreedyPacker(signal_weights={}), stage]),
    ):
        with pytest.raises(ConfigError, match=expected):
            ctxpack.pack(_CHAT, budget=1000, pipeline=pipeline)


def test_pack_refuses_a_custom_step_dropping_the_protected_question() -> None:
    pipeline = Pipeline([PromptComposer(), _drops_the_question])
    with pytest.raises(ConfigError, match=r"step '_drops_the_question' dropped protected .*'u2'"):
        ctxpack.pack(_CHAT, budget=1000, pipeline=pipeline)
    # Without the compose step nothing protects the question: dropping it is the stage's call.
    assert ctxpack.pack(_CHAT, budget=1000, pipeline=_drops_the_question).kept_ids == [
        "sys",
        "u1",
        "a1",
    ]


def test_repr_lists_the_steps() -> None:
    p = Pipeline([Deduplicator()])
    assert repr(p) == "Pipeline([('dedupe', Deduplicator(case_sensitive=False))])"


def test_default_pipeline_order() -> None:
    assert ctxpack.default_pipeline().names == [
        "redact",
        "flag",
        "compose",
        "memory",
        "dedupe",
        "citations",
        "relevance",
        "compress",
        "pack",
        "alternate",
    ]


def test_the_context_says_whose_rules_apply() -> None:
    ctx = ctx_of([])
    assert ctx.provider == "openai"
    assert ctx.evolve(provider="anthropic").provider == "anthropic"
    with pytest.raises(ConfigError, match="provider must be 'openai' or 'anthropic'"):
        ctx.evolve(provider="gemini")


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: ctxpack.MemorySelector(window=-1), "MemorySelector: window=-1"),
        (lambda: ctxpack.GreedyPacker(recency_weight="x"), "GreedyPacker: recency_weight='x'"),
        (lambda: ctxpack.Deduplicator(case_sensitve=True), "valid options are case_sensitive"),
        (lambda: ctxpack.RelevanceScorer(b=2.0), "RelevanceScorer: b=2.0"),
    ],
)
def test_bad_stage_options_raise_config_error(make: Any, expected: str) -> None:
    with pytest.raises(ctxpack.ConfigError, match=expected) as info:
        make()
    assert isinstance(info.value, ValueError)


def test_trusted_decisions_equal_validated_ones_and_copy_safely() -> None:
    made = [trusted_decision("pack", "dropped", "m1", "r", 1.5, 7, 0) for _ in range(2)]
    validated = ctxpack.Decision(
        stage="pack",
        action="dropped",
        message_id="m1",
        reason="r",
        score=1.5,
        tokens_before=7,
        tokens_after=0,
    )
    assert made[0] == validated and made[0].model_dump() == validated.model_dump()
    assert made[0].model_fields_set == set(ctxpack.Decision.model_fields)
    # Trusted decisions share one set of field names: a copy must not write into it.
    copy = made[0].model_copy(update={"reason": "changed"})
    assert copy.reason == "changed" and made[1].reason == "r"
    assert made[1].model_fields_set == set(ctxpack.Decision.model_fields)
    with pytest.raises(ValueError):
        made[0].reason = "x"


BUILT_IN_STAGES = [
    ctxpack.PromptComposer,
    ctxpack.MemorySelector,
    ctxpack.Deduplicator,
    ctxpack.CitationInheritor,
    ctxpack.RelevanceScorer,
    ctxpack.ExtractiveCompressor,
    ctxpack.GreedyPacker,
    ctxpack.TurnAlternator,
    SemanticScorer,
]


@pytest.mark.parametrize("stage_type", BUILT_IN_STAGES, ids=lambda t: t.__name__)
def test_a_stage_name_is_its_class_not_an_option(stage_type: type[Any]) -> None:
    # The step name is fixed by the class: a constructor argument that accepts one value only
    # would be an option in name only.
    assert isinstance(stage_type.name, str) and stage_type.name
    with pytest.raises(ConfigError, match="name='x': unknown option"):
        stage_type(name="x")


@pytest.mark.parametrize("stage_type", BUILT_IN_STAGES, ids=lambda t: t.__name__)
def test_a_stage_configuration_cannot_change(stage_type: type[Any]) -> None:
    stage = stage_type()
    for option in type(stage).model_fields:
        with pytest.raises(ValidationError):
            setattr(stage, option, getattr(stage, option))
    for option, value in stage:
        # Collections are tuples or read-only maps, never lists, sets or dicts.
        assert not isinstance(value, list | set | dict), f"{stage_type.__name__}.{option}"


def test_weight_tables_are_read_only_and_round_trip() -> None:
    packer = ctxpack.GreedyPacker(role_weights={"user": 9})
    with pytest.raises(TypeError):
        packer.role_weights["user"] = 99  # type: ignore[index]
    assert packer.role_weights == {"user": 9.0}
    assert ctxpack.GreedyPacker(**packer.model_dump()) == packer
    assert pickle.loads(pickle.dumps(packer)) == packer
    assert copy.deepcopy(packer) == packer


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes came with Python 3.11")
def test_an_exception_from_a_custom_step_names_the_step_in_a_note() -> None:
    # A traceback through a pipeline of several steps did not say which step raised.
    def broken(ctx: Any) -> Any:
        raise KeyError("score")

    pipeline = ctxpack.default_pipeline().insert("pack", ("rescore", broken))
    messages = [{"role": "user", "content": "Hello"}]
    with pytest.raises(KeyError) as caught:  # the stage's own type, for callers who catch it
        ctxpack.pack(messages, budget=1_000, pipeline=pipeline)
    assert caught.value.__notes__ == ["ctxpack: raised in pipeline step 'rescore' (broken)"]
