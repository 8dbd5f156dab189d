"""What fuzzing the public API with generated conversations and contexts found, kept as tests.

A conversation in the shapes users send (OpenAI and Anthropic messages, content parts and
blocks, tool calls) with a few odd fields (wrong types, missing keys, extra keys, values JSON
cannot hold) must give, at every entry point, either a result that keeps the promises or
ctxpack's own error naming the message index and the field. The cases below it are the
failures the fuzzing found: a custom stage handing back a context with a bad field, the
decision log and the tool output taking anything, and a stored session keeping values that its
store gives back changed.
"""

from __future__ import annotations

import asyncio
import copy
import datetime
import importlib
import inspect
import json
import math
import pkgutil
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

import ctxpack
from ctxpack import (
    ConfigError,
    CtxpackError,
    Decision,
    InvalidMessageError,
    Message,
    Pipeline,
    SelectionError,
    Session,
    get_counter,
    pack,
)
from ctxpack.code import FileHit, GrepHit, RetrievalResult, SearchHit
from ctxpack.cost import Price, Request
from ctxpack.editing import extractive_digest
from ctxpack.filters import ToolOutput, ToolOutputFilter
from ctxpack.managed import WindowPolicy, WindowState
from ctxpack.pipeline import DecisionLog, PackContext
from ctxpack.selection import ItemReason, Selection, SelectorUsage
from ctxpack.store import MemoryStore

from .strategies import conversations
from .test_adversarial import Case, case, check_case

USER = {"role": "user", "content": "Where is the invoice?"}
HISTORY = [Message(role="user", content="Where is the invoice?", id="u1")]
BUDGET = 300
HIT = dict(path="a.py", name="f", kind="function", start_line=1, end_line=2, score=1.0, text="")
PRICE = Price(input=3, output=15, cache_write_5m=3.75, cache_write_1h=6, cache_read=0.3)

# ------------------------------------------------------------------ generated conversations

# Values a field may hold by mistake, or legitimately but oddly.
ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(
        [
            [],
            {},
            [{}],
            [{"type": "text"}],
            [{"type": "text", "text": "a", "extra": {"deep": [1, 2]}}],
            [{"type": "image_url", "image_url": {"url": ""}}],
            [{"type": "text", "text": "a"}, {"type": "tool_use", "id": "q", "name": "n"}],
            {"k": ("a", "tuple")},
            {"k": datetime.datetime(2025, 1, 1)},
            {"important": "yes"},
            {1: "an int key"},
            [{"id": "dup", "function": {"name": "f", "arguments": "{}"}}] * 2,
            [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "no json"}}],
            [{"id": "c1", "function": {"name": "f", "arguments": "{}"}, "extra": 1}],
            "msg1",
            "2025-01-01T00:00:00",
        ]
    ),
)
FIELDS = st.sampled_from(
    ["content", "metadata", "extras", "name", "id", "tool_calls", "tool_call_id", "priority",
     "pinned", "source", "timestamp", "role", "refusal", "cache_control"]
)  # fmt: skip


@st.composite
def odd_conversations(draw: st.DrawFn) -> list[Any]:
    """A generated conversation (dicts and Messages) with one to three fields of its dicts
    changed to an odd value or removed."""
    items = list(draw(conversations(max_turns=6)).items)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        k = draw(st.integers(min_value=0, max_value=len(items) - 1))
        if isinstance(items[k], Message):
            items[k] = items[k].model_dump(exclude_defaults=True)
        field = draw(FIELDS)
        if draw(st.integers(min_value=0, max_value=4)) == 0:
            items[k].pop(field, None)
        else:
            items[k][field] = draw(ODD)
    return items


def _stored(items: list[Any]) -> None:
    store = MemoryStore()
    session = Session.open("fuzz", store=store)
    session.extend(items)
    # Another replica reads each message as it was given.
    assert Session.open("fuzz", store=store).transcript() == session.transcript()
    session.render()


async def _async(items: list[Any]) -> None:
    session = await ctxpack.AsyncSession.open("fuzz", store="memory://")
    await session.extend(items)
    await session.render()


ENTRY_POINTS = {
    "pack": lambda items: pack(items, budget=BUDGET),
    "pack for Anthropic": lambda items: pack(items, budget=BUDGET, provider="anthropic"),
    "Session": lambda items: Session().extend(items),
    "managed Session": lambda items: Session(window=4_000).extend(items),
    "stored Session": _stored,
    "AsyncSession": lambda items: asyncio.run(_async(items)),
    "to_openai": ctxpack.to_openai,
    "to_anthropic": ctxpack.to_anthropic,
    "count_messages": get_counter().count_messages,
}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(odd_conversations())
def test_odd_conversations_give_a_result_or_an_error_naming_the_message(items: list[Any]) -> None:
    before = copy.deepcopy(items)
    for name, call in ENTRY_POINTS.items():
        try:
            result = call(items)
        except InvalidMessageError as exc:
            assert exc.index is not None and exc.field, f"{name}: {exc}"
        except CtxpackError:
            pass
        else:
            if isinstance(result, ctxpack.PackResult):
                assert result.tokens <= BUDGET, name
        # Compared as text: NaN != NaN, so a conversation holding one never equals its copy.
        assert repr(items) == repr(before), f"{name} mutated its input"


# Values a content part or an extra field (both sent as they are) may hold that JSON cannot.
NOT_JSON = st.sampled_from(
    [math.nan, math.inf, {1, 2}, b"bytes", object(), datetime.datetime(2025, 1, 1)]
)


@st.composite
def unsendable_conversations(draw: st.DrawFn) -> list[Any]:
    """A generated conversation with a value JSON cannot carry in a content part of one of its
    dicts, or in an extra field beside it."""
    items = list(draw(conversations(max_turns=6)).items)
    k = draw(st.integers(min_value=0, max_value=len(items) - 1))
    if isinstance(items[k], Message):
        items[k] = items[k].model_dump(exclude_defaults=True)
    odd = draw(NOT_JSON)
    if draw(st.booleans()):
        items[k]["cache_control"] = {"type": odd}
    else:
        text = items[k].get("content")
        text = text if isinstance(text, str) and text.strip() else "some text"
        items[k]["content"] = [{"type": "text", "text": text, "cache_control": odd}]
    return items


SENT = {
    "to_openai(pack())": lambda items: pack(items, budget=10_000).to_openai(),
    "to_anthropic(pack())": lambda items: pack(items, budget=10_000).to_anthropic(),
    "to_openai": ctxpack.to_openai,
    "to_anthropic": ctxpack.to_anthropic,
    "Session": lambda items: _session_render(items).to_openai(),
}


def _session_render(items: list[Any]) -> Any:
    session = Session()
    session.extend(items)
    return session.render()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(odd_conversations(), unsendable_conversations()))
def test_what_is_packed_or_converted_is_sent_as_json_or_refused_naming_the_field(
    items: list[Any],
) -> None:
    for name, call in SENT.items():
        try:
            sent = call(items)
        except InvalidMessageError as exc:
            assert exc.index is not None and exc.field, f"{name}: {exc}"
        except CtxpackError:
            pass
        else:
            json.dumps(sent, allow_nan=False)


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"role": "user", "content": [{"type": "text", "text": "x", "c": {1}}]}, "content[0].c"),
        (
            {"role": "user", "content": [{"type": "text", "text": "x", "n": [math.inf]}]},
            "content[0].n[0]",
        ),
        ({**USER, "audio": {"data": b"raw"}}, "audio.data"),
        ({**USER, "trace": object()}, "trace"),
    ],
)
@pytest.mark.parametrize("entry", ["pack", "Session.append", "Message"])
def test_a_value_json_cannot_carry_where_it_is_sent_is_refused_naming_it(
    message: dict[str, Any], field: str, entry: str
) -> None:
    with pytest.raises(InvalidMessageError, match="sent as JSON") as info:
        if entry == "pack":
            pack([USER, message], budget=BUDGET)
        elif entry == "Session.append":
            Session().extend([USER, message])
        else:
            extras = {k: v for k, v in message.items() if k not in Message.model_fields}
            Message(**{k: message[k] for k in message.keys() - extras.keys()}, extras=extras)
    assert info.value.field == field
    assert info.value.index == (None if entry == "Message" else 1)


# ------------------------------------------------------ what a custom stage hands back


def _through(**changes: Any) -> Any:
    """pack() with a pipeline whose one stage returns its context with ``changes``."""
    return pack([USER], budget=200, pipeline=Pipeline([lambda ctx: ctx.evolve(**changes)]))


def _before_the_default(**changes: Any) -> Any:
    steps = [("odd", lambda ctx: ctx.evolve(**changes)), *ctxpack.default_pipeline().steps]
    return pack([USER], budget=200, pipeline=Pipeline(steps))


STAGE_CASES = [
    case(
        "stage returns dicts as messages",
        lambda: _through(messages=[{"role": "user", "content": "x"}]),
        InvalidMessageError,
        "message 0",
        "PackContext.messages",
        "dict",
    ),
    case(
        "stage returns messages=None",
        lambda: _through(messages=None),
        InvalidMessageError,
        "messages",
    ),
    case(
        "stage returns decisions=None", lambda: _through(decisions=None), ConfigError, "decisions"
    ),
    case("stage returns budget='5'", lambda: _through(budget="5"), ConfigError, "budget"),
    case("stage returns reserve=None", lambda: _through(reserve=None), ConfigError, "reserve"),
    case("stage returns counter=None", lambda: _through(counter=None), ConfigError, "counter"),
    case("stage returns query=5", lambda: _through(query=5), ConfigError, "query"),
    case(
        "stage returns artifacts of text",
        lambda: _through(artifacts={"u": "text"}),
        ConfigError,
        "artifacts['u']",
        "Message",
    ),
    case("stage returns artifacts=[1]", lambda: _through(artifacts=[1]), ConfigError, "artifacts"),
    case("stage returns protected='u'", lambda: _through(protected="u"), ConfigError, "protected"),
    case(
        "stage sets a signal to a number",
        lambda: _before_the_default(signals={"relevance": 5}),
        ConfigError,
        "signals['relevance']",
    ),
    case(
        "stage sets a score to a string",
        lambda: _before_the_default(signals={"relevance": {"m": "high"}}),
        ConfigError,
        "signals['relevance']['m']",
    ),
    case(
        "stage sets a score to NaN",
        lambda: _before_the_default(signals={"relevance": {"m": math.nan}}),
        ConfigError,
        "signals['relevance']['m']",
    ),
    case(
        "stage evolves a field that does not exist",
        lambda: _through(messsages=()),
        ConfigError,
        "messsages",
        "messages",
    ),
    # model_copy(update=...) does not validate: the context took any Message object.
    case(
        "stage copies a message with content=5",
        lambda: _copied_by_a_stage(content=5),
        InvalidMessageError,
        "message 0",
        "content",
        "step 'copy'",
    ),
    case(
        "stage copies a message with role='robot'",
        lambda: _copied_by_a_stage(role="robot"),
        InvalidMessageError,
        "message 0",
        "role",
        "step 'copy'",
    ),
    case(
        "stage copies a user message with tool calls",
        lambda: _copied_by_a_stage(tool_calls=[{"id": "c1"}]),
        InvalidMessageError,
        "message 0",
        "tool_calls",
    ),
    case(
        "stage copies a message with a lone surrogate",
        lambda: _copied_by_a_stage(content="\ud800"),
        InvalidMessageError,
        "message 0",
        "content",
    ),
    case(
        "stage builds a message with model_construct",
        lambda: _through(messages=[Message.model_construct(role="user", content=None, id="u")]),
        InvalidMessageError,
        "message 0",
        "content",
    ),
    case(
        "a subclass of a built-in stage copies a message with content=5",
        lambda: pack([USER], budget=200, pipeline=Pipeline([_CopyingPacker(signal_weights={})])),
        InvalidMessageError,
        "message 0",
        "content",
        "step 'pack'",
    ),
    case(
        "a lone stage, not a Pipeline, copies a message with content=5",
        lambda: pack(
            [USER],
            budget=200,
            pipeline=lambda ctx: ctx.evolve(
                messages=[ctx.messages[0].model_copy(update={"content": 5})]
            ),
        ),
        InvalidMessageError,
        "message 0",
        "content",
    ),
    # An artifact (an original) a custom stage copied or put in place was not checked again:
    # the result handed out content=5, and a value put into the mapping stopped pack() at an
    # AttributeError.
    case(
        "stage keeps an original with content=5",
        lambda: _kept_by_a_stage(content=5),
        InvalidMessageError,
        "the artifact 'u'",
        "content",
        "step 'keep'",
    ),
    case(
        "stage keeps an original whose id is not a string",
        lambda: _kept_by_a_stage(id=5),
        InvalidMessageError,
        "the artifact 'u'",
        "id",
        "step 'keep'",
    ),
    case(
        "stage keeps an original whose tool calls are dicts",
        lambda: _kept_by_a_stage(tool_calls=[{"id": "c1"}]),
        InvalidMessageError,
        "the artifact 'u'",
        "tool_calls",
        "step 'keep'",
    ),
    case(
        "stage puts text into the artifacts in place",
        lambda: _put_in_place("text"),
        ConfigError,
        "step 'put'",
        "PackContext.artifacts['u']",
        "Message",
    ),
    case(
        "a lone stage, not a Pipeline, keeps an original with content=5",
        lambda: pack(
            [USER],
            budget=200,
            # No guard step to run first: pack() runs the stage itself, not in a Pipeline.
            redact_secrets=False,
            flag_injections=False,
            pipeline=lambda ctx: ctx.evolve(
                artifacts={"u": ctx.messages[0].model_copy(update={"content": 5})}
            ),
        ),
        InvalidMessageError,
        "the artifact 'u'",
        "content",
        "the pipeline",
    ),
]


def _kept_by_a_stage(**update: Any) -> Any:
    def keep_first(ctx: PackContext) -> PackContext:
        first = ctx.messages[0]
        return ctx.evolve(artifacts={**ctx.artifacts, "u": first.model_copy(update=update)})

    # Last: no later stage reads the artifacts, pack() hands them out.
    steps = [*ctxpack.default_pipeline().steps, ("keep", keep_first)]
    return pack([{**USER, "id": "u"}], budget=200, pipeline=Pipeline(steps))


def _put_in_place(value: Any) -> Any:
    def put(ctx: PackContext) -> PackContext:
        ctx.artifacts["u"] = value  # type: ignore[index]
        return ctx

    # The step before gives the context a dict of its own, as the built-in stages do.
    steps = [
        ("own", lambda ctx: ctx.evolve(artifacts={})),
        ("put", put),
        ctxpack.GreedyPacker(signal_weights={}),
    ]
    return pack([USER], budget=200, pipeline=Pipeline(steps))


class _CopyingPacker(ctxpack.GreedyPacker):
    """A user's stage built on a built-in one: its messages are checked like any custom stage's."""

    def __call__(self, ctx: PackContext, /) -> PackContext:
        out = super().__call__(ctx)
        return out.evolve(messages=[m.model_copy(update={"content": 5}) for m in out.messages])


def _copied_by_a_stage(**update: Any) -> Any:
    def copy_first(ctx: PackContext) -> PackContext:
        first = ctx.messages[0].model_copy(update=update)
        return ctx.evolve(messages=(first, *ctx.messages[1:]))

    steps = [("copy", copy_first), *ctxpack.default_pipeline().steps]
    return pack([USER], budget=200, pipeline=Pipeline(steps))


def _context(**fields: Any) -> PackContext:
    values: dict[str, Any] = {"messages": tuple(HISTORY), "budget": 100, "counter": get_counter()}
    return PackContext(**{**values, **fields})


CONTEXT_CASES = [
    case(
        "PackContext(messages=None)",
        lambda: _context(messages=None),
        InvalidMessageError,
        "messages",
    ),
    case("PackContext(budget=0)", lambda: _context(budget=0), ConfigError, "budget"),
    case("PackContext(reserve=-1)", lambda: _context(reserve=-1), ConfigError, "reserve"),
    case("PackContext(protected={5})", lambda: _context(protected={5}), ConfigError, "protected"),
    case("PackContext(signals=None)", lambda: _context(signals=None), ConfigError, "signals"),
    case(
        "with_signal(name, None)",
        lambda: _context().with_signal("relevance", None),  # type: ignore[arg-type]
        ConfigError,
        "signals['relevance']",
    ),
    case(
        "with_signal(5, scores)",
        lambda: _context().with_signal(5, {"u1": 1.0}),  # type: ignore[arg-type]
        ConfigError,
        "signal names",
    ),
    case("DecisionLog(None)", lambda: DecisionLog(None), ConfigError, "decisions"),  # type: ignore[arg-type]
    case("DecisionLog(5)", lambda: DecisionLog(5), ConfigError, "decisions"),  # type: ignore[arg-type]
    case("DecisionLog() + 5", lambda: DecisionLog() + 5, ConfigError, "decisions"),  # type: ignore[operator]
    case(
        "DecisionLog.deferred(5, build)",
        lambda: DecisionLog.deferred(5, list),  # type: ignore[arg-type]
        ConfigError,
        "message_ids",
    ),
    case(
        "DecisionLog.deferred(ids, None)",
        lambda: DecisionLog.deferred(["u1"], None),  # type: ignore[arg-type]
        ConfigError,
        "build",
    ),
    case("ToolOutput(None)", lambda: ToolOutput(None), ConfigError, "ToolOutput.text"),  # type: ignore[arg-type]
    case(
        "ToolOutput(command=['ls'])",
        lambda: ToolOutput("x", command=["ls"]),  # type: ignore[arg-type]
        ConfigError,
        "ToolOutput.command",
    ),
    case("ToolOutput(goal=5)", lambda: ToolOutput("x", goal=5), ConfigError, "ToolOutput.goal"),  # type: ignore[arg-type]
    case("ToolOutput(tool=5)", lambda: ToolOutput("x", tool=5), ConfigError, "ToolOutput.tool"),  # type: ignore[arg-type]
    case(
        "ToolOutput(terms='ab')",
        lambda: ToolOutput("x", terms="ab"),  # type: ignore[arg-type]
        ConfigError,
        "ToolOutput.terms",
    ),
    case("ToolOutputFilter()(5)", lambda: ToolOutputFilter()(5), ConfigError, "text"),  # type: ignore[arg-type]
    # A list reached SQLite (a StoreError about binding a parameter), None was "no artifact".
    case("Session.retrieve(None)", lambda: Session().retrieve(None), ConfigError, "artifact"),  # type: ignore[arg-type]
    case(
        "Session.retrieve([id])",
        lambda: Session().retrieve(["art_x"]),  # type: ignore[arg-type]
        ConfigError,
        "artifact",
    ),
    case(
        "Session.retrieve(json_path=5)",
        lambda: Session().retrieve("art_x", json_path=5),  # type: ignore[arg-type]
        ConfigError,
        "json_path",
    ),
]


@pytest.mark.parametrize("c", STAGE_CASES + CONTEXT_CASES, ids=lambda c: c.id)
def test_a_bad_field_is_ctxpacks_own_error_naming_it(c: Case) -> None:
    check_case(c)


def test_what_a_stage_may_give_in_another_form_is_stored_in_the_context_s_own() -> None:
    ctx = _context(messages=list(HISTORY), protected={"u1"})
    assert ctx.messages == tuple(HISTORY) and ctx.protected == frozenset({"u1"})
    assert ctx.evolve(protected=["u1", "u2"]).protected == frozenset({"u1", "u2"})
    evolved = ctx.evolve(messages=[*HISTORY, HISTORY[0].model_copy(update={"id": "u2"})])
    assert isinstance(evolved.messages, tuple) and len(evolved.messages) == 2
    # A signal computed with numpy holds numpy floats; ints are scores too.
    scored = ctx.with_signal("relevance", {"u1": np.float32(0.5), "u2": 1})
    assert scored.signal("relevance") == {"u1": 0.5, "u2": 1}
    assert ctx.decide(Decision(stage="s", action="kept", message_id="u1", reason="r")).decisions


def test_the_digest_of_a_generator_is_the_digest_of_its_messages() -> None:
    # The check consumed the generator and the digest was then made of nothing.
    messages = [Message(role="user", content="Fix the refresh bug. Never touch cookies.")]
    assert extractive_digest(m for m in messages) == extractive_digest(messages) != ""


HISTORY_OF_THREE = [
    {"role": "system", "content": "Be brief.", "id": "s"},
    {"role": "user", "content": "Where is the invoice?", "id": "u"},
    {"role": "assistant", "content": "In the drawer.", "id": "a"},
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    field=st.sampled_from(sorted(Message.model_fields)),
    value=ODD,
    position=st.integers(min_value=0, max_value=2),
    custom_steps_only=st.booleans(),
)
def test_a_message_a_stage_copied_without_validation_is_refused_naming_it(
    field: str, value: Any, position: int, custom_steps_only: bool
) -> None:
    def copy_one(ctx: PackContext) -> PackContext:
        messages = list(ctx.messages)
        messages[position] = messages[position].model_copy(update={field: value})
        return ctx.evolve(messages=messages)

    default = [] if custom_steps_only else ctxpack.default_pipeline().steps
    pipeline = Pipeline([("copy", copy_one), *default])
    try:
        Message.model_validate({**HISTORY_OF_THREE[position], field: value})
    except InvalidMessageError:
        with pytest.raises(InvalidMessageError) as info:
            pack(HISTORY_OF_THREE, budget=BUDGET, pipeline=pipeline)
        assert info.value.index == position and "step 'copy'" in str(info.value)
        return
    try:
        # A valid value: packed, or refused by a later check (a repeated id) with ctxpack's error.
        result = pack(HISTORY_OF_THREE, budget=BUDGET, pipeline=pipeline)
    except CtxpackError:
        return
    for message in result.messages:
        Message.model_validate(dict(message))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    field=st.sampled_from(sorted(Message.model_fields)),
    value=ODD,
    custom_steps_only=st.booleans(),
)
# Found by the fuzzing: an extra field is named as the caller wrote it (its own key, beside the
# message), not as "extras".
@example(field="extras", value={"k": datetime.datetime(2025, 1, 1)}, custom_steps_only=False)
def test_an_original_a_stage_kept_without_validation_is_refused_naming_it(
    field: str, value: Any, custom_steps_only: bool
) -> None:
    def keep_one(ctx: PackContext) -> PackContext:
        original = ctx.messages[1].model_copy(update={field: value})
        return ctx.evolve(artifacts={**ctx.artifacts, "u": original})

    default = [] if custom_steps_only else ctxpack.default_pipeline().steps
    pipeline = Pipeline([*default, ("keep", keep_one)])
    try:
        Message.model_validate({**HISTORY_OF_THREE[1], field: value})
    except InvalidMessageError:
        with pytest.raises(InvalidMessageError) as info:
            pack(HISTORY_OF_THREE, budget=BUDGET, pipeline=pipeline)
        named = (
            (field, *map(str, value)) if field == "extras" and isinstance(value, dict) else field
        )
        assert (info.value.field or "").startswith(named), info.value
        assert "the artifact 'u' of step 'keep'" in str(info.value)
        return
    try:
        result = pack(HISTORY_OF_THREE, budget=BUDGET, pipeline=pipeline)
    except CtxpackError:
        return
    Message.model_validate(dict(result.artifacts["u"]))


# ---------------------------------------------------------------- a stored session's values


@pytest.mark.parametrize(
    ("message", "field", "where"),
    [
        ({**USER, "metadata": {"k": ("a", "b")}}, "metadata", "metadata.k"),
        (
            {**USER, "metadata": {"when": datetime.datetime(2025, 1, 1)}},
            "metadata",
            "metadata.when",
        ),
        ({**USER, "metadata": {"score": math.nan}}, "metadata", "metadata.score"),
        ({**USER, "metadata": {"k": {1: "x"}}}, "metadata", "metadata.k"),
        # Bytes or an object there are refused by every session, as no request can send them.
        ({**USER, "audio": {"data": (1, 2)}}, "extras", "extras.audio.data"),
        ({**USER, "trace": ("a", "b")}, "extras", "extras.trace"),
        (
            {"role": "user", "content": [{"type": "text", "text": "hi", "ids": (1, 2)}]},
            "content",
            "content[0].ids",
        ),
    ],
)
def test_a_stored_session_refuses_values_its_store_would_give_back_changed(
    message: dict[str, Any], field: str, where: str
) -> None:
    session = Session.open("s", store="memory://")
    session.append(USER)
    with pytest.raises(InvalidMessageError) as info:
        session.append(message)
    assert (info.value.index, info.value.field) == (1, field)
    assert where in str(info.value)
    assert len(session) == 1, "a refused append leaves the session as it was"


def test_every_replica_of_a_stored_session_reads_a_message_as_it_was_given(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    given = {
        **USER,
        "metadata": {"tags": ["a", "b"], "n": 2**70, "score": 0.5, "ok": True, "none": None},
        "cache_control": {"type": "ephemeral"},
    }
    writer = Session.open("s", store=url)
    writer.append(given)
    reader = Session.open("s", store=url)
    assert reader.transcript() == writer.transcript()
    assert reader.transcript()[0].metadata == given["metadata"]
    writer.close()
    reader.close()


def test_an_async_stored_session_refuses_them_too() -> None:
    async def run() -> tuple[InvalidMessageError, int]:
        session = await ctxpack.AsyncSession.open("s", store="memory://")
        with pytest.raises(InvalidMessageError) as info:
            await session.append({**USER, "metadata": {"k": {1, 2}}})
        size = len(session)
        await session.close()
        return info.value, size

    error, size = asyncio.run(run())
    assert (error.index, error.field, size) == (0, "metadata", 0)


# ------------------------------------------------------------ what a session hands out

PYTEST_OUTPUT = "\n".join(
    ["======== test session starts ========"]
    + [f"tests/test_mod{i}.py::test_case_{i} PASSED  [{i}%]" for i in range(300)]
    + ["======== 300 passed in 3.2s ========"]
)


def _edit(message: Message) -> None:
    """Edit a handed-out message in place, as a caller might."""
    if isinstance(message.content, list):
        message.content[0]["text"] = "EDITED"
    message.metadata.setdefault("tags", []).append("edited")
    message.extras["extra"] = "edited"


@pytest.mark.parametrize("window", [None, 4_000])
@pytest.mark.parametrize(
    "handed_out", ["render", "render(budget)", "transcript", "compact", "original"]
)
def test_editing_what_a_session_hands_out_leaves_the_session_as_it_was(
    handed_out: str, window: int | None
) -> None:
    session = Session(window=window)
    session.extend(
        [
            {"role": "user", "content": [{"type": "text", "text": "Run the tests."}],
             "metadata": {"tags": ["a"]}},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c", "type": "function",
                 "function": {"name": "bash", "arguments": '{"command": "pytest"}'}}]},
            {"role": "tool", "tool_call_id": "c", "content": PYTEST_OUTPUT,
             "metadata": {"tags": ["b"]}},
        ]
    )  # fmt: skip
    sent = [m.model_dump() for m in session.render().messages]
    kept = [m.model_dump() for m in session.transcript()]
    if handed_out == "original":
        result = session.render()
        original = result.original(result.messages[-1].id)
        assert original is not None, "the tool output was shortened: its original is kept"
        _edit(original)
    elif handed_out == "render(budget)" and window is None:
        for message in session.render(5_000).messages:
            _edit(message)
    else:
        get = {"render": lambda: session.render().messages, "transcript": session.transcript}
        for message in get.get(handed_out, session.compact)():
            _edit(message)
    assert [m.model_dump() for m in session.render().messages] == sent
    assert [m.model_dump() for m in session.transcript()] == kept


@pytest.mark.parametrize("stored", [False, True])
def test_editing_a_message_after_appending_it_leaves_the_session_as_it_was(stored: bool) -> None:
    # A Message was kept as given: its content parts and metadata were the caller's own.
    message = Message(role="user", content=[{"type": "text", "text": "hi"}], metadata={"a": [1]})
    session = Session.open("s", store=MemoryStore()) if stored else Session()
    session.append(message)
    sent = [m.model_dump() for m in session.render().messages]
    _edit(message)
    assert [m.model_dump() for m in session.render().messages] == sent


# ------------------------------------------------------------------- a provider's response

ANTHROPIC_REPLY = {
    "role": "assistant",
    "type": "message",
    "content": [{"type": "text", "text": "ok"}],
}


def _cleared(tokens: Any) -> dict[str, Any]:
    edit = {
        "type": "clear_tool_uses_20250919",
        "cleared_tool_uses": 2,
        "cleared_input_tokens": tokens,
    }
    return {**ANTHROPIC_REPLY, "context_management": {"applied_edits": [edit]}}


@pytest.mark.parametrize(
    ("response", "field"),
    [
        (_cleared("abc"), "context_management.applied_edits[0].cleared_input_tokens"),
        (_cleared([1]), "context_management.applied_edits[0].cleared_input_tokens"),
        (_cleared(math.inf), "context_management.applied_edits[0].cleared_input_tokens"),
        (_cleared(-5), "context_management.applied_edits[0].cleared_input_tokens"),
        ({**ANTHROPIC_REPLY, "context_management": {"applied_edits": 5}},
         "context_management.applied_edits"),
        ({**ANTHROPIC_REPLY, "content": 5}, "content"),
        ({"id": "resp_1", "output": 5}, "output"),
        # These were ignored, or recorded "the provider's None cleared 0 thinking turns".
        ({**ANTHROPIC_REPLY, "context_management": 5}, "context_management"),
        ({**ANTHROPIC_REPLY, "context_management": {"applied_edits": [5]}},
         "context_management.applied_edits[0]"),
        ({**ANTHROPIC_REPLY, "context_management": {"applied_edits": [{}]}},
         "context_management.applied_edits[0].type"),
        ({**ANTHROPIC_REPLY, "context_management": {"applied_edits": [
            {"type": "clear_tool_uses_20250919", "cleared_tool_uses": "all"}]}},
         "context_management.applied_edits[0].cleared_tool_uses"),
        ({**ANTHROPIC_REPLY, "content": [5]}, "content[0]"),
        ({"id": "resp_1", "object": "response", "output": [5]}, "output[0]"),
    ],
)  # fmt: skip
def test_a_malformed_response_is_refused_naming_its_field(
    response: dict[str, Any], field: str
) -> None:
    # It raised ValueError, TypeError or OverflowError, or recorded -5 cleared tokens.
    session = Session()
    session.append(USER)
    with pytest.raises(InvalidMessageError) as info:
        session.record_response(response)
    assert info.value.field == field and field in str(info.value)
    assert len(session) == 1 and not session.window_state.decisions


@pytest.mark.parametrize(
    ("response", "why"),
    [
        ({}, "an empty object"),
        ({"id": "r", "object": "chat.completion", "choices": [{"message": ANTHROPIC_REPLY}]},
         "Chat Completions"),
        ({"role": "user", "content": "hi"}, "its role is 'user'"),
        ({"id": "r", "content": []}, "keys ['content', 'id']"),
        (5, "got int"),
        (None, "got None"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("append", [True, False])
def test_what_is_not_a_response_is_refused_naming_the_argument(
    response: Any, why: str, append: bool
) -> None:
    # Each returned [] and recorded nothing, as for a response without context management.
    session = Session()
    session.append(USER)
    with pytest.raises(InvalidMessageError) as info:
        session.record_response(response, append=append)
    assert str(info.value).startswith(
        "response: not an Anthropic Messages or OpenAI Responses response: "
    )
    assert why in str(info.value)
    assert len(session) == 1 and not session.window_state.decisions


def test_a_well_formed_response_is_still_recorded() -> None:
    session = Session()
    session.append(USER)
    (decision,) = session.record_response(_cleared(1200))
    assert (decision.action, decision.tokens_before) == ("cleared", 1200)
    assert session.transcript()[-1].text == "ok"
    # An edit type this code does not know yet is recorded by the tokens it cleared.
    edit = {"type": "clear_future_20270101", "cleared_input_tokens": 300}
    reply = {**ANTHROPIC_REPLY, "context_management": {"applied_edits": [edit]}}
    (decision,) = session.record_response(reply, append=False)
    assert decision.reason == "the provider's clear_future_20270101 cleared 300 input tokens"


# ------------------------------------------------------------------------------- LangChain


def test_langchain_tool_arguments_that_are_not_json_are_refused_naming_them() -> None:
    lc = pytest.importorskip("langchain_core.messages")
    from ctxpack.adapters import from_langchain

    # Nested 5000 deep: a bare RecursionError from the JSON encoder.
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5000):
        node["a"] = node = {}
    for args in ({"when": datetime.datetime(2025, 1, 1)}, {"ids": {1, 2}}, {"x": math.nan}, deep):
        call = {"name": "f", "args": args, "id": "c1"}
        with pytest.raises(InvalidMessageError) as info:
            from_langchain([lc.HumanMessage("hi"), lc.AIMessage(content="", tool_calls=[call])])
        assert (info.value.index, info.value.field) == (1, "tool_calls")
        assert "tool_calls[0].args" in str(info.value)


@pytest.mark.parametrize(
    "kept",
    [
        "text",
        {"fields": "text"},
        {"str_parts": 5},
        {"fields": {1: "an int key"}},
        {"fields": {"type": "ai"}},
        {"fields": {"additional_kwargs": 3}},
    ],
)
def test_a_users_own_langchain_metadata_is_read_or_refused_naming_it(kept: Any) -> None:
    # metadata["langchain"] is where from_langchain() keeps LangChain's fields, but the user
    # may use the key too: a shape ctxpack did not write raised ValueError, TypeError or
    # pydantic's ValidationError.
    pytest.importorskip("langchain_core.messages")
    from ctxpack.adapters import to_langchain

    message = {"role": "user", "content": "hi", "metadata": {"langchain": kept}}
    try:
        (converted,) = to_langchain([message])
    except InvalidMessageError as exc:
        assert (exc.index, exc.field) == (0, "metadata") and "langchain" in str(exc)
    else:
        assert converted.content == "hi"


@pytest.mark.parametrize(
    "kept",
    [{"tool_use": 5}, {"tool_use": [1]}, {"tool_use": {"c1": 5}}, {"block": 5}, {"block": "ab"}],
)
def test_a_users_own_anthropic_metadata_of_another_shape_is_left_out(kept: Any) -> None:
    # from_anthropic() keeps block fields in metadata["anthropic"]; the user may use the key
    # too, and to_anthropic() raised AttributeError, TypeError or ValueError on it.
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    plain = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "out"},
    ]
    tagged = [{**m, "metadata": {"anthropic": kept}} for m in plain]
    assert ctxpack.to_anthropic(tagged) == ctxpack.to_anthropic(plain)


def test_a_users_own_openai_responses_metadata_beside_an_sdk_message_is_read() -> None:
    # An empty list under the key ctxpack keeps Responses API items in raised IndexError
    # when the list also held an SDK object.
    chat = pytest.importorskip("openai.types.chat")
    from ctxpack.adapters import validate_openai

    reply = chat.ChatCompletionMessage(role="assistant", content="In the drawer.")
    tagged = {"role": "user", "content": "Thanks", "metadata": {"openai_responses": []}}
    messages = [USER, reply, tagged]
    validate_openai(messages)
    assert [m.text for m in ctxpack.from_openai(messages)] == [
        "Where is the invoice?",
        "In the drawer.",
        "Thanks",
    ]


# --------------------------------------------------------------------------------- threads


def test_threads_packing_at_once_with_spacy_all_get_their_result() -> None:
    # spaCy's parser is not thread-safe: of 32 packs of tool outputs full of names run by
    # eight threads, a third failed with an OverflowError or a KeyError from inside spaCy.
    from ctxpack.stages import spacy_available

    if not spacy_available():
        pytest.skip("the spaCy pipeline is not installed")
    compressor = ctxpack.ExtractiveCompressor(proper_nouns="spacy")
    steps = [(n, compressor if n == "compress" else s) for n, s in ctxpack.default_pipeline().steps]

    def conversation(k: int) -> list[dict[str, Any]]:
        log = "\n".join(
            f"Ligne {j} du journal {k}: Marie Dupont a vu Paris et le module {k * 31 + j}"
            for j in range(20)
        )
        call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        return [
            {"role": "user", "content": f"question {k}"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c", "content": log},
            {"role": "user", "content": f"and Paris {k}?"},
        ]

    def run(k: int) -> int:
        return pack(conversation(k), budget=300, pipeline=Pipeline(steps)).tokens

    with ThreadPoolExecutor(8) as pool:
        assert all(tokens <= 300 for tokens in pool.map(run, range(32)))


# ------------------------------------------------------------- a message built from a dict


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: Message.model_validate({"role": 5}), "role"),
        (lambda: Message.model_validate_json('{"role": "robot"}'), "role"),
        (lambda: Message.model_validate({"role": "tool", "content": "42"}), "tool_call_id"),
        (lambda: ctxpack.ToolCall.model_validate({"id": 5}), "id"),
        (lambda: ctxpack.FunctionCall.model_validate_json('{"name": 1}'), "name"),
    ],
)
def test_a_message_built_from_a_dict_or_json_raises_ctxpacks_error(build: Any, field: str) -> None:
    # model_validate() skipped the constructor's translation: pydantic's ValidationError.
    with pytest.raises(InvalidMessageError) as info:
        build()
    assert info.value.field == field and field in str(info.value)


@pytest.mark.parametrize(
    "parts",
    [
        [{"type": "text", "text": 5}],
        [{"type": "text"}],
        [{"type": "text", "text": "fine"}, {"type": "input_text", "text": None}],
    ],
)
def test_a_text_part_without_its_string_is_refused_however_the_message_is_built(
    parts: list[dict[str, Any]],
) -> None:
    # As a dict it was refused; as a Message it was packed and sent as it was, for the
    # provider to refuse the request.
    index = len(parts) - 1
    builds = [
        lambda: Message(role="user", content=parts),
        lambda: Message.model_validate({"role": "user", "content": parts}),
        lambda: pack([{"role": "user", "content": parts}], budget=1000),
    ]
    for build in builds:
        with pytest.raises(InvalidMessageError) as info:
            build()
        assert info.value.field == f"content[{index}].text", str(info.value)


def test_a_valid_message_is_still_built_from_a_dict_and_json() -> None:
    message = Message.model_validate({"role": "user", "content": "hi", "id": "u1"})
    assert Message.model_validate_json(message.model_dump_json()) == message


# --------------------------------------------------------------- every other public model


def _public_models() -> list[type[BaseModel]]:
    """Every pydantic model of ctxpack a user can import from a public module, in ``__all__``
    or not (``from ctxpack.code import SearchHit`` loads a saved hit as well as any); abstract
    ones (Python itself refuses to build those) and the internal bases aside."""
    found: dict[str, type[BaseModel]] = {}
    names = [m.name for m in pkgutil.walk_packages(ctxpack.__path__, "ctxpack.")]
    for name in ["ctxpack", *names]:
        if any(part.startswith("_") for part in name.split(".")):
            continue
        try:
            module = importlib.import_module(name)
        except ImportError:  # an extra that is not installed
            continue
        for attr, value in vars(module).items():
            if (
                not attr.startswith("_")
                and isinstance(value, type)
                and issubclass(value, BaseModel)
                and value.__module__.startswith("ctxpack.")
                and not value.__module__.startswith("ctxpack._internal.")
                and not inspect.isabstract(value)
            ):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[key] for key in sorted(found)]


PUBLIC_MODELS = _public_models()


def test_the_public_models_are_all_found() -> None:
    names = {m.__name__ for m in PUBLIC_MODELS}
    assert {"Decision", "PackResult", "Price", "WindowPolicy", "Selection", "Request"} <= names
    # Results a user loads or builds in a test, importable though outside __all__.
    assert {"SearchHit", "FileHit", "GrepHit", "RetrievalResult", "ItemReason"} <= names
    assert {"SelectorUsage", "Symbol", "Bill", "Retrieval", "PinnedText"} <= names


def _check_refused(model: type[BaseModel], build: Any, given: Any = ()) -> None:
    try:
        build()
    except ValidationError as exc:
        pytest.fail(f"{model.__name__}: pydantic's own error leaked: {exc}")
    except CtxpackError as exc:
        assert isinstance(exc, ValueError), repr(exc)
        named = [*model.model_fields, *map(str, given), model.__name__, "options", "Invalid JSON"]
        assert any(name.lower() in str(exc).lower() for name in named), f"{model.__name__}: {exc}"


# Inputs that are not an object of the model: the whole input is what is wrong.
NOT_OBJECTS = st.one_of(ODD, st.just(object()), st.lists(st.integers(), max_size=2))


@pytest.mark.parametrize("model", PUBLIC_MODELS, ids=lambda m: m.__name__)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_public_model_refuses_bad_input_with_ctxpacks_error_naming_the_field(
    model: type[BaseModel], data: st.DataObject
) -> None:
    fields = sorted(model.model_fields) or ["unknown"]
    given = data.draw(
        st.dictionaries(st.sampled_from([*fields, "zz_unknown"]), ODD, max_size=3), label="given"
    )
    _check_refused(model, lambda: model.model_validate(given), given)
    _check_refused(model, lambda: model(**given), given)
    _check_refused(model, lambda: model.model_validate_strings(given), given)
    whole = data.draw(NOT_OBJECTS, label="whole")
    _check_refused(
        model, lambda: model.model_validate(whole), whole if isinstance(whole, dict) else ()
    )
    text = data.draw(st.sampled_from(["", "{", "[1]", "null", '{"zz_unknown": 1}']), label="text")
    _check_refused(model, lambda: model.model_validate_json(text))


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (
            lambda: Decision.model_validate({"stage": "s", "action": "kept", "message_id": 5}),
            "message_id",
        ),
        (lambda: ctxpack.PackResult.model_validate_json('{"messages": 5}'), "messages"),
        (lambda: Price.model_validate({"input": -1.0, "output": 1.0}), "input"),
        (lambda: WindowPolicy.model_validate({"window": "big"}), "window"),
        (lambda: Selection.model_validate({"include_messages": [True]}), "include_messages"),
        (lambda: Request.model_validate({"messages": 5}), "messages"),
        # Results outside __all__, loaded from what a script saved: they gave pydantic's error.
        (lambda: SearchHit.model_validate({**HIT, "start_line": "first"}), "SearchHit: start_line"),
        (
            lambda: FileHit.model_validate(
                {"path": "a.py", "score": 1.0, "signals": {}, "units": [{}]}
            ),
            "FileHit: units.0.path",
        ),
        (lambda: GrepHit.model_validate_json('{"path": "a.py", "line": "x"}'), "GrepHit: line"),
        (lambda: ItemReason(item=3, reason="r"), "ItemReason: item=3"),
        (lambda: SelectorUsage(calls=-1), "SelectorUsage: calls=-1"),
        (lambda: RetrievalResult.model_validate_json('{"task": 1}'), "RetrievalResult: task"),
    ],
)
def test_a_model_built_from_a_dict_or_json_names_the_field(build: Any, field: str) -> None:
    # model_validate() and model_validate_json() gave pydantic's ValidationError.
    with pytest.raises(ConfigError, match=field) as info:
        build()
    assert not isinstance(info.value, ValidationError)
    assert isinstance(info.value.__cause__, ValidationError)


def test_the_callers_that_word_a_model_s_error_again_still_do() -> None:
    # A bill names the request's position, a selector's answer lists every problem, a saved
    # window state says it is not one: each read pydantic's error, which is now the cause.
    with pytest.raises(ConfigError, match="request 1: messages"):
        ctxpack.simulate([[USER], {"messages": 5}], price=PRICE)
    with pytest.raises(SelectionError, match="2 problem") as info:
        Selection.from_answer({"include_messages": [True], "include_files": [{"lines": "1-2"}]})
    assert any("include_files" in p for p in info.value.problems)
    with pytest.raises(ConfigError, match="not a saved WindowState: requests"):
        WindowState.from_json('{"requests": -1}')
    with pytest.raises(ConfigError, match=r"^pin\(\): name='': String should have at least 1"):
        ctxpack.Session().pin("text", name="")


# ------------------------------------------------- a tool call's arguments Python cannot read

# JSON a model may write that json.loads refuses with a bare ValueError or a RecursionError,
# not the JSONDecodeError of malformed text: a number past Python's digit limit, nesting past
# the recursion limit.
UNREADABLE_ARGUMENTS = {
    "a number of 5000 digits": '{"command": ' + "9" * 5000 + "}",
    "arrays 100000 deep": "[" * 100_000 + "]" * 100_000,
}


def _called(arguments: str, tool: str) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": tool, "arguments": arguments}}
    return [
        USER,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "the drawer\n" * 40},
    ]


@pytest.mark.parametrize("tool", ["bash", "Read", "lookup"])
@pytest.mark.parametrize("arguments", UNREADABLE_ARGUMENTS.values(), ids=list(UNREADABLE_ARGUMENTS))
def test_tool_call_arguments_python_cannot_read_are_kept_as_text(arguments: str, tool: str) -> None:
    # Read as broken JSON is: to_anthropic() keeps the text, a session and the usage report go
    # on. They escaped as ValueError or RecursionError from to_anthropic(), Session.extend(),
    # context_usage() and the compaction's digest.
    messages = _called(arguments, tool)
    (use,) = ctxpack.to_anthropic(messages)["messages"][1]["content"]
    assert use["input"] == {"arguments": arguments}
    session = Session(model="gpt-4")
    session.extend(messages)
    assert session.render(BUDGET).messages
    assert ctxpack.context_usage(messages).total > 0
    assert extractive_digest(ctxpack.from_openai(messages))


def test_a_describe_tool_call_python_cannot_read_is_answered_in_words() -> None:
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
    session = Session(model="gpt-4", tools_on_demand=True)
    session.append(USER)
    session.render(2000, tools=[tool])
    for arguments in UNREADABLE_ARGUMENTS.values():
        call = {"id": "c", "type": "function", "function": {"name": "describe_tool"}}
        call["function"]["arguments"] = arguments
        assert isinstance(session.handle(call), str)


@pytest.mark.parametrize("answer", UNREADABLE_ARGUMENTS.values(), ids=list(UNREADABLE_ARGUMENTS))
def test_a_model_s_answer_python_cannot_read_is_the_selector_s_error(answer: str) -> None:
    with pytest.raises(SelectionError, match="not JSON"):
        Selection.from_answer(answer)


SEARCH_CALL = {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"q": "x"}}


@pytest.mark.parametrize(
    "message",
    [
        {
            "role": "assistant",
            "content": [
                SEARCH_CALL,
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "s1",
                    "content": [{"type": ["web_search_result"], "url": "https://a", "title": "t"}],
                },
            ],
        },
        {"role": "assistant", "content": "x", "thinking_blocks": [{"type": ["thinking"]}]},
    ],
    ids=["a provider result's entry", "LiteLLM's thinking block"],
)
def test_a_type_that_is_not_a_string_where_any_shape_is_taken_is_no_type(
    message: dict[str, Any],
) -> None:
    # What a provider's tool result holds, and LiteLLM's blocks beside a message, are taken in
    # any shape; a list as a "type" there was looked up in a set: "unhashable type: 'list'"
    # from inside count_tokens and Session.extend. It is no type, as item_type() says.
    history = [USER, message]
    assert ctxpack.count_tokens(history) > ctxpack.count_tokens([USER])
    session = Session()
    session.extend(history)
    assert session.render().messages[-1].role == "assistant"
