"""pack() never leaves an orphaned tool call or result, for OpenAI and for Anthropic.

Random conversations full of tool exchanges are packed at random budgets; the output is checked
with checkers written here, independent of ctxpack's own validators.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import BudgetExceededError, count_tokens, from_anthropic, pack
from ctxpack.errors import ConfigError
from ctxpack.messages import ensure_messages
from ctxpack.packing import default_pipeline
from ctxpack.pipeline import Decision, PackContext, Pipeline
from ctxpack.stages import GreedyPacker, TurnAlternator, turn_rule_breaks
from ctxpack.testing import check_stage
from ctxpack.tokens import get_counter
from tests.api_rules import anthropic_problems, openai_problems

WORDS = ["weather", "oslo", "paris", "flight", "price", "hotel", "check", "please", "file", "42"]


def _text(draw: st.DrawFn, most: int) -> str:
    return " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=most)))


@st.composite
def conversations(draw: st.DrawFn) -> dict[str, Any]:
    """A provider-neutral conversation: turns of a user text, tool rounds, an answer."""
    turns = []
    next_id = 0
    for _ in range(draw(st.integers(1, 5))):
        rounds = []
        for _ in range(draw(st.integers(0, 2))):
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                calls.append(
                    (f"call_{next_id}", {"q": _text(draw, 6)}, _text(draw, 60), draw(st.booleans()))
                )
                next_id += 1
            rounds.append((draw(st.sampled_from([None, "Let me check."])), calls))
        answer = draw(st.one_of(st.none(), st.just(_text(draw, 30))))
        turns.append((_text(draw, 25), rounds, answer))
    trailing = draw(st.booleans())
    return {"system": "You are a careful travel agent.", "turns": turns, "trailing": trailing}


def as_openai(conv: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": conv["system"]}]
    for question, rounds, answer in conv["turns"]:
        out.append({"role": "user", "content": question})
        for text, calls in rounds:
            out.append(
                {
                    "role": "assistant",
                    "content": text,
                    "tool_calls": [
                        {
                            "id": cid,
                            "type": "function",
                            "function": {"name": "search", "arguments": json.dumps(args)},
                        }
                        for cid, args, _, _ in calls
                    ],
                }
            )
            out.extend({"role": "tool", "tool_call_id": c[0], "content": c[2]} for c in calls)
        if answer is not None:
            out.append({"role": "assistant", "content": answer})
    if conv["trailing"]:
        call = {"id": "pending", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})
    return out


def as_anthropic(conv: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def say(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for question, rounds, answer in conv["turns"]:
        say("user", [{"type": "text", "text": question}])
        for text, calls in rounds:
            blocks = [{"type": "text", "text": text}] if text else []
            blocks += [
                {"type": "tool_use", "id": cid, "name": "search", "input": args}
                for cid, args, _, _ in calls
            ]
            say("assistant", blocks)
            say(
                "user",
                [
                    {"type": "tool_result", "tool_use_id": cid, "content": res, "is_error": err}
                    for cid, _, res, err in calls
                ],
            )
        if answer is not None:
            say("assistant", [{"type": "text", "text": answer}])
    if conv["trailing"]:
        say("assistant", [{"type": "tool_use", "id": "pending", "name": "f", "input": {}}])
    return out


def assert_valid_openai(messages: list[dict[str, Any]]) -> None:
    called: set[str] = set()
    answered: set[str] = set()
    for i, msg in enumerate(messages):
        if msg["role"] == "tool":
            assert msg["tool_call_id"] in called, f"orphaned tool message at {i}"
            assert msg["tool_call_id"] not in answered, f"second result of one call at {i}"
            answered.add(msg["tool_call_id"])
        for call in msg.get("tool_calls") or []:
            called.add(call["id"])
            if i == len(messages) - 1:
                continue
            later = {m.get("tool_call_id") for m in messages[i + 1 :]}
            assert call["id"] in later, f"unanswered call {call['id']} at {i}"


def assert_valid_anthropic(payload: dict[str, Any]) -> None:
    messages = payload["messages"]
    assert messages[0]["role"] == "user"
    for prev, cur in itertools.pairwise(messages):
        assert prev["role"] != cur["role"], "roles must alternate"

    def blocks(m: dict[str, Any], kind: str) -> list[dict[str, Any]]:
        content = m["content"]
        return [b for b in content if b["type"] == kind] if isinstance(content, list) else []

    for i, msg in enumerate(messages):
        answered = [b["tool_use_id"] for b in blocks(msg, "tool_result")]
        assert len(set(answered)) == len(answered), f"second result of one call at {i}"
        for result in blocks(msg, "tool_result"):
            assert i > 0
            ids = {b["id"] for b in blocks(messages[i - 1], "tool_use")}
            assert result["tool_use_id"] in ids, f"orphaned tool_result at {i}"
        if i + 1 < len(messages):
            answered = {b["tool_use_id"] for b in blocks(messages[i + 1], "tool_result")}
            for use in blocks(msg, "tool_use"):
                assert use["id"] in answered, f"unanswered tool_use at {i}"


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(conv=conversations(), data=st.data())
def test_openai_packs_never_orphan_a_tool_message(conv: dict[str, Any], data: Any) -> None:
    messages = as_openai(conv)
    full = count_tokens(messages, model="gpt-4")
    budget = data.draw(st.integers(1, full + 10), label="budget")
    last_user = next(m for m in reversed(messages) if m["role"] == "user")
    must = count_tokens([messages[0], last_user], model="gpt-4")
    try:
        result = pack(messages, budget=budget, model="gpt-4")
    except BudgetExceededError:
        assert must > budget, "raised although system + last user fit"
        return
    out = result.to_openai()
    assert_valid_openai(out)
    ctxpack.adapters.validate_openai(out)
    assert result.tokens <= budget
    assert out[0] == messages[0] and last_user in out


@SETTINGS
@given(conv=conversations(), data=st.data())
def test_anthropic_packs_stay_valid(conv: dict[str, Any], data: Any) -> None:
    messages = as_anthropic(conv)
    system = conv["system"]
    converted = from_anthropic(messages, system=system)
    full = count_tokens(converted)
    budget = data.draw(st.integers(1, full + 10), label="budget")
    last_user = next(m for m in reversed(converted) if m.role == "user")
    must = count_tokens([converted[0], last_user])
    try:
        result = pack(converted, budget=budget)
    except BudgetExceededError:
        assert must > budget, "raised although system + last user fit"
        return
    payload = result.to_anthropic()
    assert payload["system"] == system
    assert_valid_anthropic(payload)
    ctxpack.adapters.validate_anthropic(payload)
    assert result.tokens <= budget


@pytest.mark.parametrize("budget", range(40, 400, 7))
def test_openai_fixture_at_many_budgets(budget: int) -> None:
    from .test_roundtrip import _load

    messages = _load("openai_tools.json")
    result = pack(messages, budget=budget, model="gpt-4")
    assert_valid_openai(result.to_openai())
    assert result.tokens <= budget


@pytest.mark.parametrize("budget", range(30, 2600, 37))
def test_anthropic_fixture_at_many_budgets(budget: int) -> None:
    from .test_roundtrip import _load

    payload = _load("anthropic_tools.json")
    result = pack(from_anthropic(payload["messages"], system=payload["system"]), budget=budget)
    assert_valid_anthropic(result.to_anthropic())
    assert result.tokens <= budget


def _call(cid: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": "f", "arguments": "{}"}}


def test_a_tool_exchange_is_kept_or_dropped_whole() -> None:
    messages = [
        {"role": "user", "content": "old question"},
        {"role": "assistant", "content": None, "tool_calls": [_call("a"), _call("b")]},
        {"role": "tool", "tool_call_id": "a", "content": "short"},
        {"role": "tool", "tool_call_id": "b", "content": "long result " * 200},
        {"role": "user", "content": "new question"},
    ]
    for budget in range(20, 700, 10):
        kept = {m.get("tool_call_id") for m in pack(messages, budget=budget).to_openai()}
        assert {"a", "b"} <= kept or not {"a", "b"} & kept


def test_unanswered_calls_are_removed_and_recorded() -> None:
    messages = [
        {"role": "user", "content": "q", "id": "u1"},
        {"role": "assistant", "content": "checking", "tool_calls": [_call("a"), _call("b")],
         "id": "a1"},
        {"role": "tool", "tool_call_id": "a", "content": "1", "id": "t1"},
        {"role": "user", "content": "and?", "id": "u2"},
    ]  # fmt: skip
    result = pack(messages, budget=1000)
    out = result.to_openai()
    assert [c["id"] for c in out[1]["tool_calls"]] == ["a"]
    assert any(d.action == "cleared" and "'b'" in d.reason for d in result.decisions_for("a1"))
    assert result.original("a1") is not None
    assert_valid_openai(out)


def test_a_trailing_call_waits_for_its_result() -> None:
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [_call("a")]},
    ]
    out = pack(messages, budget=1000).to_openai()
    assert out[-1]["tool_calls"][0]["id"] == "a"


def test_orphaned_results_are_dropped_not_rejected() -> None:
    messages = [
        {"role": "user", "content": "q"},
        {"role": "tool", "tool_call_id": "gone", "content": "stale", "id": "t"},
        {"role": "user", "content": "next"},
    ]
    result = pack(messages, budget=1000)
    assert "t" in result.dropped_ids
    assert "orphan" in result.decisions_for("t")[-1].reason


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_second_result_of_one_call_is_dropped_and_recorded(provider: str) -> None:
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [_call("a")]},
        {"role": "tool", "tool_call_id": "a", "content": "Tool execution aborted", "id": "t1"},
        {"role": "tool", "tool_call_id": "a", "content": "No files found", "id": "t2"},
        {"role": "user", "content": "next"},
    ]
    result = pack(messages, budget=1000, provider=provider)  # type: ignore[arg-type]
    assert [m.id for m in result.messages if m.role == "tool"] == ["t1"]
    assert "t2" in result.dropped_ids
    assert "second result" in result.decisions_for("t2")[-1].reason
    assert_valid_openai(result.to_openai())
    assert_valid_anthropic(result.to_anthropic())


def test_anthropic_merges_and_leading_drops_are_recorded() -> None:
    messages = [
        {"role": "user", "content": "first " * 300},
        {"role": "assistant", "content": "reply one"},
        {"role": "user", "content": "second"},
        {"role": "assistant", "content": "reply two " * 300},
        {"role": "user", "content": "third"},
    ]
    converted = from_anthropic(messages)
    # Room for the two short user turns and the short reply but not the long ones.
    budget = count_tokens([converted[i] for i in (1, 2, 4)]) + 1
    result = pack(converted, budget=budget)
    payload = result.to_anthropic()
    assert_valid_anthropic(payload)
    # "reply one" would lead once "first" is gone; "second" and "third" become one user turn.
    assert [m.text for m in result.messages] == ["second", "third"]
    leading, merged = converted[1].id, converted[4].id
    # The packer leaves it out itself, so that its room can go to the next message by score.
    last = result.decisions_for(leading)[-1]
    assert (last.stage, last.action) == ("pack", "dropped")
    assert "start with a user message; its room went to the next messages" in last.reason
    assert ("alternate", "merged") in [(d.stage, d.action) for d in result.decisions_for(merged)]
    second, third = ({"type": "text", "text": t} for t in ("second", "third"))
    assert payload["messages"] == [{"role": "user", "content": [second, third]}]


def test_the_room_of_an_assistant_turn_that_would_lead_goes_to_the_next_messages() -> None:
    # The fill took a0 first (its priority) and a1, then had no room for u1; the alternation
    # dropped a0 for leading, then a1 for leading in turn: 114 of 164 tokens stood unused and
    # only the question was sent. Left out by the packer itself, a0's room goes to u1.
    def turn(role: str, name: str, priority: float = 0.0) -> dict[str, Any]:
        return {"role": role, "content": f"{name} " * 50, "id": name, "priority": priority}

    messages = [
        turn("user", "u0"),
        turn("assistant", "a0", priority=10),
        turn("user", "u1"),
        turn("assistant", "a1", priority=5),
        {"role": "user", "content": "and now?", "id": "u2"},
    ]
    sizes = {m["id"]: count_tokens([m]) for m in messages}
    budget = count_tokens([messages[1], messages[3], messages[4]]) + 10
    result = pack(messages, budget=budget, provider="anthropic")
    assert result.kept_ids == ["u1", "a1", "u2"]
    assert_valid_anthropic(result.to_anthropic())
    assert result.tokens <= budget and result.tokens > sizes["u2"] + sizes["a1"]
    last = result.decisions_for("a0")[-1]
    assert (last.stage, last.action) == ("pack", "dropped")
    # For OpenAI an assistant turn may lead: the same fill keeps it.
    assert pack(messages, budget=budget).kept_ids == ["a0", "a1", "u2"]


def _chat_then(turn: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ten old turns about Oslo, the question, then ``turn``: what the model did since."""
    old: list[dict[str, Any]] = []
    for i in range(10):
        old.append({"role": "user", "content": f"Old question {i} about Oslo " * 30})
        old.append({"role": "assistant", "content": f"Old answer {i} " * 30})
    question = {"role": "user", "content": "Weather in Oslo?", "id": "q"}
    return [{"role": "system", "content": "You are an agent."}, *old, question, *turn]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_turn_in_progress_is_filled_before_older_turns(provider: str) -> None:
    # The call the model is waiting on and its result (322 tokens of 1,000) were dropped while
    # old turns naming Oslo were kept: the model, blind to its own call, calls the tool again.
    call = {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    messages = _chat_then(
        [
            {"role": "assistant", "content": None, "tool_calls": [call], "id": "a"},
            {"role": "tool", "tool_call_id": "c1", "content": "3C " * 100, "id": "t"},
        ]
    )
    result = pack(messages, budget=1000, provider=provider)
    assert result.kept_ids[-3:] == ["q", "a", "t"]
    assert result.tokens <= 1000
    assert any(m.role == "user" and m.id != "q" for m in result.messages)  # room left, filled
    assert "the turn in progress" in result.decisions_for("t")[-1].reason


def test_an_answer_prefilled_for_the_model_is_filled_first() -> None:
    prefill = {"role": "assistant", "content": 'The forecast, as JSON: {"answer": ' * 3, "id": "p"}
    result = pack(_chat_then([prefill]), budget=900, provider="anthropic")
    assert result.kept_ids[-2:] == ["q", "p"]
    assert result.to_anthropic()["messages"][-1]["role"] == "assistant"


def test_a_leading_exchange_the_packer_must_keep_is_left_to_the_alternate_step() -> None:
    # Its pinned result keeps the exchange whatever the budget, so it has no place in the
    # fill's order: leaving it out of the fill struck another unit (u1) in its place.
    call = {"id": "c0", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [
        {"role": "assistant", "content": None, "id": "a0", "tool_calls": [call]},
        {
            "role": "tool",
            "tool_call_id": "c0",
            "content": "pinned result",
            "id": "t0",
            "pinned": True,
        },
        {"role": "user", "content": "question one " * 5, "id": "u1"},
        {"role": "assistant", "content": "answer one " * 5, "id": "a1"},
        {"role": "user", "content": "final?", "id": "u2"},
    ]
    result = pack(messages, budget=2000, provider="anthropic")
    assert result.kept_ids == ["u1", "a1", "u2"]
    assert result.decisions_for("a0")[-1].stage == "alternate"


@pytest.mark.parametrize("blank", ["  \n", "", [{"type": "text", "text": " "}]])
def test_a_blank_user_message_does_not_open_the_conversation_for_anthropic(blank: Any) -> None:
    # to_anthropic() leaves a blank message out (the API refuses it): the assistant reply
    # after it would lead the request, which the API refuses too.
    messages = [
        {"role": "user", "content": blank, "id": "u0"},
        {"role": "assistant", "content": "hello", "id": "a0"},
        {"role": "user", "content": "what now?", "id": "u1"},
    ]
    result = pack(messages, budget=1000, provider="anthropic")
    assert_valid_anthropic(result.to_anthropic())
    assert "a0" in result.dropped_ids
    assert "start with a user message" in result.decisions_for("a0")[-1].reason


def test_provider_anthropic_can_be_forced_for_openai_shaped_messages() -> None:
    messages = [
        {"role": "system", "content": "s"},
        {"role": "assistant", "content": "I start the conversation.", "id": "a0"},
        {"role": "user", "content": "hello", "id": "u1"},
    ]
    result = pack(messages, budget=1000, provider="anthropic")
    assert result.kept_ids == [m.id for m in result.messages]
    assert "a0" in result.dropped_ids
    assert "start with a user message" in result.decisions_for("a0")[-1].reason
    assert_valid_anthropic(result.to_anthropic())
    with pytest.raises(ctxpack.ConfigError):
        pack(messages, budget=1000, provider="gemini")  # type: ignore[arg-type]


def test_the_checkers_catch_orphans() -> None:
    with pytest.raises(AssertionError):
        assert_valid_openai(
            [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "x"}]
        )
    calling = {"role": "assistant", "content": None, "tool_calls": [_call("a")]}
    with pytest.raises(AssertionError):
        assert_valid_openai([calling, {"role": "user", "content": "q"}])
    twice = [{"role": "tool", "tool_call_id": "a", "content": str(k)} for k in range(2)]
    with pytest.raises(AssertionError):
        assert_valid_openai([{"role": "user", "content": "q"}, calling, *twice])
    use = {"type": "tool_use", "id": "t", "name": "f", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "t", "content": "1"}
    with pytest.raises(AssertionError):
        assert_valid_anthropic(
            {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": [use]},
                          {"role": "user", "content": [result, result]}]}
        )  # fmt: skip
    with pytest.raises(AssertionError):
        assert_valid_anthropic(
            {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": [use]},
                          {"role": "user", "content": "no result"}]}
        )  # fmt: skip


# Provider rules are a pipeline step: "alternate", last in the default pipeline.


def test_the_provider_rules_are_the_last_step_of_the_default_pipeline() -> None:
    pipeline = default_pipeline()
    assert pipeline.names[-2:] == ["pack", "alternate"]
    assert isinstance(pipeline["alternate"], TurnAlternator)


def test_pack_tells_the_stages_whose_rules_apply() -> None:
    seen: list[str] = []

    def spy(ctx: PackContext, /) -> PackContext:
        seen.append(ctx.provider)
        return ctx

    pipeline = default_pipeline().insert("compose", spy)
    messages = [{"role": "user", "content": "hi"}]
    pack(messages, budget=100, pipeline=pipeline)
    pack(messages, budget=100, pipeline=pipeline, provider="anthropic")
    pack(from_anthropic(messages), budget=100, pipeline=pipeline)
    pack(from_anthropic(messages), budget=100, pipeline=pipeline, provider="openai")
    assert seen == ["openai", "anthropic", "anthropic", "openai"]


LEADING_ASSISTANT = [
    {"role": "system", "content": "s", "id": "s"},
    {"role": "assistant", "content": "I start the conversation.", "id": "a0"},
    {"role": "user", "content": "hello", "id": "u1"},
]


def test_the_alternator_acts_only_for_anthropic() -> None:
    ctx = PackContext(
        messages=tuple(ensure_messages(LEADING_ASSISTANT)), budget=1000, counter=get_counter()
    )
    assert TurnAlternator()(ctx) is ctx
    fixed = TurnAlternator()(ctx.evolve(provider="anthropic"))
    assert [m.id for m in fixed.messages] == ["s", "u1"]
    assert [(d.stage, d.action, d.message_id) for d in fixed.decisions] == [
        ("alternate", "dropped", "a0")
    ]
    assert turn_rule_breaks(fixed) == []
    assert [d.message_id for d in turn_rule_breaks(ctx)] == ["a0"]
    check_stage(TurnAlternator())


def test_a_pipeline_without_the_alternate_step_must_return_valid_anthropic_turns() -> None:
    def as_given(ctx: PackContext, /) -> PackContext:
        return ctx

    custom = Pipeline([as_given])
    with pytest.raises(ConfigError, match=r"'a0'.*'alternate' step.*TurnAlternator\(\)"):
        pack(LEADING_ASSISTANT, budget=1000, pipeline=custom, provider="anthropic")
    # The fix the error names.
    fixed = pack(
        LEADING_ASSISTANT,
        budget=1000,
        pipeline=Pipeline([*custom.steps, TurnAlternator()]),
        provider="anthropic",
    )
    assert fixed.kept_ids == ["s", "u1"]
    assert_valid_anthropic(fixed.to_anthropic())
    # Valid turns pass as the pipeline returned them: no hidden step runs after it.
    valid = [*LEADING_ASSISTANT[:1], *LEADING_ASSISTANT[2:], LEADING_ASSISTANT[1]]
    result = pack(valid, budget=1000, pipeline=custom, provider="anthropic")
    assert result.kept_ids == ["s", "u1", "a0"]
    assert_valid_anthropic(result.to_anthropic())
    # For OpenAI an assistant turn may come first.
    assert pack(LEADING_ASSISTANT, budget=1000, pipeline=custom).kept_ids == ["s", "a0", "u1"]
    # The packer alone already leaves out, for Anthropic, an assistant turn that would lead.
    packer = Pipeline([GreedyPacker(signal_weights={})])
    assert pack(LEADING_ASSISTANT, budget=1000, pipeline=packer, provider="anthropic").kept_ids == [
        "s",
        "u1",
    ]


def test_a_step_after_the_alternator_is_checked_too() -> None:
    def drop_users(ctx: PackContext, /) -> PackContext:
        users = [m for m in ctx.messages if m.role == "user"]
        return ctx.decide(
            *(Decision(stage="mine", action="dropped", message_id=m.id, reason="r") for m in users),
            messages=tuple(m for m in ctx.messages if m.role != "user"),
        )

    history = [*LEADING_ASSISTANT[:1], *LEADING_ASSISTANT[2:], LEADING_ASSISTANT[1]]
    pipeline = Pipeline([GreedyPacker(signal_weights={}), TurnAlternator(), drop_users])
    with pytest.raises(ConfigError, match="'a0': Anthropic needs the conversation to start"):
        pack(history, budget=1000, pipeline=pipeline, provider="anthropic")
    assert pack(history, budget=1000, pipeline=pipeline).kept_ids == ["s", "a0"]


@SETTINGS
@given(conv=conversations(), data=st.data())
def test_without_the_alternate_step_anthropic_packs_are_valid_or_refused(
    conv: dict[str, Any], data: Any
) -> None:
    messages = as_openai(conv)
    budget = data.draw(st.integers(1, count_tokens(messages) + 10), label="budget")
    pipeline = default_pipeline().without("alternate")
    try:
        result = pack(messages, budget=budget, pipeline=pipeline, provider="anthropic")
    except BudgetExceededError:
        return
    except ConfigError as exc:
        assert "end the pipeline with the 'alternate' step" in str(exc)
        event("refused")
        return
    event("valid as the pipeline returned it")
    assert_valid_anthropic(result.to_anthropic())
    ctxpack.adapters.validate_anthropic(result.to_anthropic())


def _late_result() -> list[dict[str, Any]]:
    """A call whose result comes after other turns: its turn closed without it."""
    return [
        {"role": "system", "content": "s", "id": "s"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c1")], "id": "a1"},
        {"role": "user", "content": "wait", "id": "u1"},
        {"role": "assistant", "content": "ok", "id": "a2"},
        {"role": "tool", "tool_call_id": "c1", "content": "res", "id": "t1"},
        {"role": "user", "content": "go on", "id": "u2"},
    ]


def test_a_result_after_other_turns_answers_nothing() -> None:
    # Chat Completions wants a call's results right after it, Anthropic in the next user turn:
    # the late result is a stray, dropped, and its call unanswered, dropped with its message.
    result = pack(_late_result(), budget=1000, model="gpt-4o")
    out = result.to_openai()
    assert openai_problems(out) == []
    assert [m.get("content") for m in out] == ["s", "wait", "ok", "go on"]
    (late,) = [d for d in result.decisions_for("t1") if d.action == "dropped"]
    assert "other turns came between" in late.reason
    assert any(d.action == "dropped" and "'c1'" in d.reason for d in result.decisions_for("a1"))
    claude = pack(_late_result(), budget=1000, model="claude-sonnet-4-5", counter="cl100k_base")
    assert [m.id for m in claude.messages] == ["s", "u1", "a2", "u2"]
    assert anthropic_problems(claude.to_anthropic()) == []


def test_a_call_with_words_keeps_them_and_its_original_when_its_result_comes_late() -> None:
    messages = _late_result()
    messages[1]["content"] = "Looking."
    result = pack(messages, budget=1000, model="gpt-4o")
    assert openai_problems(result.to_openai()) == []
    assert result.messages[1].id == "a1" and result.messages[1].tool_calls is None
    assert [c.id for c in result.original("a1").tool_calls or ()] == ["c1"]
