"""Bad input at the public entry points the adversarial suite did not reach yet: each call must
raise ctxpack's own error naming the argument (or the field), never an ``AttributeError``,
``TypeError`` or raw pydantic ``ValidationError`` from deep inside, and never accept nonsense
that would corrupt a later result (an infinite price, a NaN weight).

Cases share the shape of :mod:`tests.test_adversarial`: a call, the error it must raise, and the
words its message must hold.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from ctxpack import (
    CitationInheritor,
    ConfigError,
    Decision,
    Deduplicator,
    ExtractiveCompressor,
    FunctionCall,
    GreedyPacker,
    InvalidMessageError,
    MemorySelector,
    Message,
    PromptComposer,
    RelevanceScorer,
    Session,
    ToolCall,
    TurnAlternator,
)
from ctxpack.code import Judgement, RankingJudge
from ctxpack.cost import Price
from ctxpack.editing import Compactor, ToolResultClearer
from ctxpack.errors import CtxpackError
from ctxpack.managed import WindowPolicy
from ctxpack.selection import Selection
from ctxpack.signals import Neighbors, QueryWords

from .test_adversarial import Case, case

USER = {"role": "user", "content": "Where is the invoice?"}
MESSAGES = [USER, {"role": "assistant", "content": "In the drawer."}]


def _session() -> Session:
    s = Session(model="gpt-4")
    s.append(USER)
    return s


# ------------------------------------------------------------- options must be finite numbers

FINITE_CASES = [
    case(
        "Price(input=inf)",
        lambda: Price(input=math.inf, output=1, cache_write_5m=1, cache_write_1h=1, cache_read=1),
        ConfigError,
        "input",
        "finite",
    ),
    case(
        "MemorySelector(important_priority=nan)",
        lambda: MemorySelector(important_priority=math.nan),
        ConfigError,
        "important_priority",
    ),
    case(
        "GreedyPacker(role_weights={'user': inf})",
        lambda: GreedyPacker(role_weights={"user": math.inf}),
        ConfigError,
        "role_weights.user",
    ),
    case("RelevanceScorer(k1=inf)", lambda: RelevanceScorer(k1=math.inf), ConfigError, "k1"),
    case("QueryWords(weight=inf)", lambda: QueryWords(weight=math.inf), ConfigError, "weight"),
]

# ------------------------------------------------- public models: ctxpack's error, not pydantic's

MODEL_CASES = [
    case(
        "FunctionCall(name=5)",
        lambda: FunctionCall(name=5, arguments="{}"),
        InvalidMessageError,
        "name",
    ),  # type: ignore[arg-type]
    case(
        "ToolCall(id=5)",
        lambda: ToolCall(id=5, function=FunctionCall(name="f", arguments="{}")),  # type: ignore[arg-type]
        InvalidMessageError,
        "id",
    ),
    case(
        "ToolCall(function without arguments)",
        lambda: ToolCall(id="c1", function={"name": "f"}),  # type: ignore[arg-type]
        InvalidMessageError,
        "function.arguments",
    ),
    case(
        "Decision(action='nope')",
        lambda: Decision(stage="s", action="nope", message_id="m", reason="r"),  # type: ignore[arg-type]
        ConfigError,
        "Decision",
        "action",
    ),
    case(
        "Decision(no reason)",
        lambda: Decision(stage="s", action="kept", message_id="m"),  # type: ignore[call-arg]
        ConfigError,
        "reason",
    ),
    case("WindowPolicy(window=10)", lambda: WindowPolicy(window=10), ConfigError, "window"),
    case(
        "WindowPolicy(clear_at=2)",
        lambda: WindowPolicy(window=64_000, clear_at=2),
        ConfigError,
        "clear_at",
    ),
    case(
        "Judgement(relevance=2)",
        lambda: Judgement(path="a.py", relevance=2),
        ConfigError,
        "relevance",
    ),
    case(
        "RankingJudge(score_share=-1)",
        lambda: RankingJudge(score_share=-1),
        ConfigError,
        "score_share",
    ),
    case(
        "Selection(include_messages=5)",
        lambda: Selection(include_messages=5),  # type: ignore[arg-type]
        ConfigError,
        "include_messages",
    ),
]

# ------------------------------------------------------ a stage called on something else

STAGES: list[Callable[[], Any]] = [
    CitationInheritor,
    Deduplicator,
    ExtractiveCompressor,
    GreedyPacker,
    MemorySelector,
    PromptComposer,
    RelevanceScorer,
    TurnAlternator,
    Compactor,
    ToolResultClearer,
]

STAGE_CASES = [
    case(
        f"{make.__name__}()(messages)",  # type: ignore[attr-defined]
        lambda make=make: make()(MESSAGES),
        ConfigError,
        make.__name__,  # type: ignore[attr-defined]
        "PackContext",
        "ctxpack.pack",
    )
    for make in STAGES
]

# ------------------------------------------------------------------------------ the session

SESSION_CASES = [
    case(
        "Session(tools_on_demand='yes')",
        lambda: Session(tools_on_demand="yes"),
        ConfigError,
        "tools_on_demand",
    ),  # type: ignore[arg-type]
    case(
        "Session(redact_secrets=0)",
        lambda: Session(redact_secrets=0),
        ConfigError,
        "redact_secrets",
    ),  # type: ignore[arg-type]
    case(
        "Session(flag_injections=1)",
        lambda: Session(flag_injections=1),
        ConfigError,
        "flag_injections",
    ),  # type: ignore[arg-type]
    case(
        "Session.render(provider=0)",
        lambda: _session().render(1000, provider=0),  # type: ignore[arg-type]
        ConfigError,
        "provider",
    ),
    case(
        "Session.context_management(5)",
        lambda: _session().context_management(5),  # type: ignore[arg-type]
        ConfigError,
        "provider",
    ),
]

ALL_CASES: list[Case] = [*FINITE_CASES, *MODEL_CASES, *STAGE_CASES, *SESSION_CASES]


def test_case_ids_are_unique() -> None:
    assert len({c.id for c in ALL_CASES}) == len(ALL_CASES)


@pytest.mark.parametrize("c", ALL_CASES, ids=lambda c: c.id)
def test_bad_argument_raises_ctxpacks_own_error_naming_it(c: Case) -> None:
    with pytest.raises(c.error) as info:
        c.call()
    assert isinstance(info.value, CtxpackError)
    text = str(info.value)
    for name in c.names:
        assert name in text, f"{name!r} not named in: {text}"
    assert "\n" not in text, text


# ------------------------------------------------------------- valid input keeps working


def test_a_tool_call_built_from_parts_or_dicts_is_unchanged() -> None:
    call = ToolCall(id="c1", function=FunctionCall(name="f", arguments="{}"))
    assert ToolCall(id="c1", function={"name": "f", "arguments": "{}"}) == call  # type: ignore[arg-type]
    message = Message(role="assistant", tool_calls=[call])
    assert message.tool_calls == [call]


def test_a_bad_tool_call_inside_a_message_names_the_whole_path() -> None:
    with pytest.raises(InvalidMessageError) as info:
        Message(
            role="assistant",
            tool_calls=[{"id": "c1", "function": {"name": 5, "arguments": "{}"}}],  # type: ignore[list-item]
        )
    assert "tool_calls[0].function.name" in str(info.value)
    assert info.value.field == "tool_calls"


def test_a_decision_is_still_built_and_frozen() -> None:
    d = Decision(stage="s", action="kept", message_id="m", reason="r", score=math.nan)
    assert d.action == "kept" and math.isnan(d.score or 0.0)
    assert d.model_fields_set == {"stage", "action", "message_id", "reason", "score"}


def test_the_session_s_own_provider_still_applies_when_none_is_given() -> None:
    s = _session()
    assert s.render(1000, provider=None).messages
    assert Session(redact_secrets="all", flag_injections="quarantine").guard.redact_secrets == "all"


def test_finite_options_are_still_accepted() -> None:
    assert Neighbors(share=0.0).share == 0.0
    assert GreedyPacker(role_weights={"user": 1e9}).role_weights["user"] == 1e9
