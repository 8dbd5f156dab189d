"""Hostile input at every public entry point: ctxpack's own error, naming what is wrong.

Each case calls the public API with one bad argument (or one bad message among good ones) and
asserts the error type and that the message names the argument, or for a message its index and
field. No ``TypeError``, ``AttributeError``, ``RecursionError`` or ``UnicodeEncodeError`` may
escape, and nothing wrong may be accepted silently (a NaN priority, a truthy string for a flag,
a compaction window above the window). The Hypothesis tests at the end throw random values at
the same arguments and require either a result or a ctxpack error.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import threading
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import (
    ConfigError,
    CtxpackError,
    GreedyPacker,
    InvalidMessageError,
    Message,
    Pipeline,
    Session,
    context_usage,
    count_tokens,
    from_anthropic,
    from_openai,
    get_counter,
    pack,
    simulate,
    to_anthropic,
    to_openai,
)
from ctxpack.adapters import validate_anthropic, validate_openai
from ctxpack.cost import Price
from ctxpack.editing import evidence_terms, extractive_digest
from ctxpack.errors import StoreError
from ctxpack.filters import ToolOutputFilter
from ctxpack.selection import Selection, Workspace, apply_selection
from ctxpack.store import SQLiteArtifactStore, SQLiteStore, open_store
from ctxpack.tokens import count_tokens_approx

USER = {"role": "user", "content": "Where is the invoice?"}
PRICE = Price(input=3, output=15, cache_write_5m=3.75, cache_write_1h=6, cache_read=0.3)
CALL = {
    "id": "c1",
    "type": "function",
    "function": {"name": "lookup", "arguments": "{}"},
}
TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
LOCK = threading.Lock()  # a value no deepcopy can copy


def nested(depth: int) -> dict[str, Any]:
    """``{"a": {"a": ...}}`` ``depth`` levels deep, built without recursion."""
    root: dict[str, Any] = {}
    node = root
    for _ in range(depth):
        node["a"] = {}
        node = node["a"]
    return root


def nested_list(depth: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(depth):
        node.append([])
        node = node[0]
    return root


def session(*messages: dict[str, Any]) -> Session:
    s = Session(model="gpt-4")
    s.extend(list(messages) or [USER])
    return s


@dataclass(frozen=True)
class Case:
    """One hostile call: ``call()`` must raise ``error`` and its message hold ``names``."""

    id: str
    call: Callable[[], object]
    error: type[CtxpackError]
    names: tuple[str, ...]


def case(id: str, call: Callable[[], object], error: type[CtxpackError], *names: str) -> Case:
    return Case(id, call, error, names)


# ------------------------------------------------------------------- arguments (not messages)

NOT_A_LIST: list[tuple[str, Any]] = [
    ("a request payload", {"model": "gpt-4", "messages": [USER]}),
    ("None", None),
    ("int", 5),
    ("float", 1.5),
    ("bytes", b"hi"),
    ("one dict", USER),
    ("one Message", Message(role="user", content="hi")),
    ("object", object()),
]
MESSAGE_LISTS: dict[str, Callable[[Any], object]] = {
    "pack": lambda m: pack(m, budget=100),
    "count_tokens": lambda m: count_tokens(m),
    "context_usage": lambda m: context_usage(m),
    "to_openai": to_openai,
    "to_anthropic": to_anthropic,
    "from_openai": from_openai,
    "from_anthropic": from_anthropic,
    "Session.extend": lambda m: Session().extend(m),
}


def _message_list_cases() -> Iterator[Case]:
    for fname, func in MESSAGE_LISTS.items():
        for vname, value in NOT_A_LIST:
            if fname == "Session.extend" and vname == "one dict":
                continue  # extend() names append() for one message; tested below
            yield case(
                f"{fname}({vname})", lambda f=func, v=value: f(v), InvalidMessageError, "messages"
            )


def _function(**function: Any) -> dict[str, Any]:
    """An OpenAI function tool named ``f`` with ``function``'s fields."""
    return {"type": "function", "function": {"name": "f", **function}}


def _tool_cases() -> Iterator[Case]:
    bad_tools: list[tuple[Any, ...]] = [
        ("str", "lookup", "tools"),
        ("int", 5, "tools"),
        ("one dict", TOOL, "tools"),
        ("[1]", [1], "tools[0]"),
        ("[str]", ["lookup"], "tools[0]"),
        ("[{}]", [TOOL, {}], "tools[1]"),
        ("function type, no function", [{"type": "function"}], "tools[0]"),
        ("function not an object", [{"type": "function", "function": 5}], "tools[0].function"),
        ("function without name", [{"type": "function", "function": {}}], "tools[0].function"),
        ("name not a string", [{"name": 5, "input_schema": {}}], "tools[0].name"),
        ("nested 5000 deep", [{"name": "f", "input_schema": nested(5000)}], "tools[0]"),
        # Each was counted into the budget and left for the provider to refuse.
        ("parameters a str", [_function(parameters="x")], "tools[0].function.parameters"),
        ("parameters an object", [_function(parameters=object())], "tools[0].function.parameters"),
        ("a set in parameters", [_function(parameters={"x": {1, 2}})], "parameters.x", "set"),
        ("NaN in parameters", [_function(parameters={"maximum": math.nan})], "maximum"),
        ("an int key", [_function(parameters={"properties": {1: {}}})], "properties", "key 1"),
        ("description an int", [_function(description=5)], "tools[0].function.description"),
        ("empty name", [_function(name="")], "tools[0].function.name", "non-empty"),
        ("input_schema an int", [{"name": "f", "input_schema": 5}], "tools[0].input_schema"),
        ("input_schema None", [{"name": "f", "input_schema": None}], "tools[0].input_schema"),
        ("empty Anthropic name", [{"name": "", "input_schema": {}}], "tools[0].name"),
        (
            "bare function's parameters",
            [{"type": "function", "name": "f", "parameters": 5}],
            "tools[0].parameters",
        ),
    ]
    calls: dict[str, Callable[[Any], object]] = {
        "pack": lambda t: pack([USER], budget=1000, tools=t),
        "count_tokens": lambda t: count_tokens([USER], tools=t),
        "context_usage": lambda t: context_usage([USER], tools=t),
        "Session.render": lambda t: session().render(tools=t),
    }
    for fname, func in calls.items():
        for tname, tools, *named in bad_tools:
            yield case(f"{fname}(tools={tname})", lambda f=func, t=tools: f(t), ConfigError, *named)


def _model_cases() -> Iterator[Case]:
    calls: dict[str, Callable[[Any], object]] = {
        "pack": lambda m: pack([USER], budget=100, model=m),
        "count_tokens": lambda m: count_tokens("hi", model=m),
        "context_usage": lambda m: context_usage([USER], model=m),
        "get_counter": lambda m: get_counter(model=m),
        "Session": lambda m: Session(model=m),
    }
    for fname, func in calls.items():
        for vname, value in [("int", 123), ("list", ["gpt-4"]), ("bytes", b"gpt-4")]:
            yield case(
                f"{fname}(model={vname})", lambda f=func, v=value: f(v), ConfigError, "model"
            )


ARGUMENT_CASES: list[Case] = [
    *_message_list_cases(),
    *_tool_cases(),
    *_model_cases(),
    # pack()
    case("pack(budget=None)", lambda: pack([USER], budget=None), ConfigError, "budget"),  # type: ignore[arg-type]
    case("pack(budget='100')", lambda: pack([USER], budget="100"), ConfigError, "budget"),  # type: ignore[arg-type]
    case("pack(budget=1.5)", lambda: pack([USER], budget=1.5), ConfigError, "budget"),  # type: ignore[arg-type]
    case("pack(budget=nan)", lambda: pack([USER], budget=math.nan), ConfigError, "budget"),  # type: ignore[arg-type]
    case("pack(budget=True)", lambda: pack([USER], budget=True), ConfigError, "budget"),
    case("pack(budget=0)", lambda: pack([USER], budget=0), ConfigError, "budget"),
    case("pack(budget=-5)", lambda: pack([USER], budget=-5), ConfigError, "budget"),
    case(
        "pack(reserve=None)", lambda: pack([USER], budget=100, reserve=None), ConfigError, "reserve"
    ),  # type: ignore[arg-type]
    case("pack(reserve=-1)", lambda: pack([USER], budget=100, reserve=-1), ConfigError, "reserve"),
    case(
        "pack(reserve=budget)",
        lambda: pack([USER], budget=100, reserve=100),
        ConfigError,
        "reserve",
    ),
    case(
        "pack(reserve='1')", lambda: pack([USER], budget=100, reserve="1"), ConfigError, "reserve"
    ),  # type: ignore[arg-type]
    case("pack(query=123)", lambda: pack([USER], budget=100, query=123), ConfigError, "query"),  # type: ignore[arg-type]
    case("pack(query=[...])", lambda: pack([USER], budget=100, query=["a"]), ConfigError, "query"),  # type: ignore[arg-type]
    case("pack(provider=5)", lambda: pack([USER], budget=100, provider=5), ConfigError, "provider"),  # type: ignore[arg-type]
    case(
        "pack(provider='google')",
        lambda: pack([USER], budget=100, provider="google"),
        ConfigError,
        "provider",
    ),  # type: ignore[arg-type]
    case("pack(pipeline=5)", lambda: pack([USER], budget=100, pipeline=5), ConfigError, "pipeline"),  # type: ignore[arg-type]
    case(
        "pack(pipeline='x')",
        lambda: pack([USER], budget=100, pipeline="x"),
        ConfigError,
        "pipeline",
    ),  # type: ignore[arg-type]
    case("pack(counter=5)", lambda: pack([USER], budget=100, counter=5), ConfigError, "counter"),  # type: ignore[arg-type]
    case(
        "pack(counter=1.5)", lambda: pack([USER], budget=100, counter=1.5), ConfigError, "counter"
    ),  # type: ignore[arg-type]
    case(
        "pack(counter -> -1)",
        lambda: pack([USER], budget=100, counter=lambda t: -1),
        ConfigError,
        "counter",
    ),
    case(
        "pack(counter -> 'x')",
        lambda: pack([USER], budget=100, counter=lambda t: "x"),
        ConfigError,
        "counter",
    ),  # type: ignore[arg-type,return-value]
    case(
        "pack(counter -> nan)",
        lambda: pack([USER], budget=100, counter=lambda t: math.nan),
        ConfigError,
        "counter",
    ),  # type: ignore[arg-type,return-value]
    # get_counter()
    case("get_counter(counter=1.5)", lambda: get_counter(counter=1.5), ConfigError, "counter"),  # type: ignore[arg-type]
    case("get_counter(counter=[])", lambda: get_counter(counter=[]), ConfigError, "counter"),  # type: ignore[arg-type]
    # context_usage()
    *[
        case(
            f"context_usage({arg}={value!r})",
            lambda a=arg, v=value: context_usage([USER], **{a: v}),
            ConfigError,
            arg,
        )
        for arg in ("window", "compaction_window")
        for value in (0, -1, "8k", 1.5, math.nan, True)
    ],
    case(
        "context_usage(compaction_window > window)",
        lambda: context_usage([USER], window=1000, compaction_window=2000),
        ConfigError,
        "compaction_window",
        "window",
    ),
    case(
        "context_usage(memory_files=5)",
        lambda: context_usage([USER], memory_files=5),
        ConfigError,
        "memory_files",
    ),  # type: ignore[arg-type]
    case(
        "context_usage(memory_files=[...])",
        lambda: context_usage([USER], memory_files=["a"]),
        ConfigError,
        "memory_files",
    ),  # type: ignore[arg-type]
    case(
        "context_usage(memory_files={'a': 5})",
        lambda: context_usage([USER], memory_files={"a": 5}),
        ConfigError,
        "memory_files['a']",
    ),  # type: ignore[dict-item]
    case(
        "context_usage(memory_files={1: 'x'})",
        lambda: context_usage([USER], memory_files={1: "x"}),
        ConfigError,
        "memory_files[1]",
    ),  # type: ignore[dict-item]
    case(
        "context_usage(memory file not sent)",
        lambda: context_usage([USER], memory_files={"A.md": "zz"}),
        ConfigError,
        "A.md",
    ),
    # simulate()
    case("simulate(None)", lambda: simulate(None, price=PRICE), ConfigError, "requests"),  # type: ignore[arg-type]
    case("simulate(5)", lambda: simulate(5, price=PRICE), ConfigError, "requests"),  # type: ignore[arg-type]
    case("simulate('abc')", lambda: simulate("abc", price=PRICE), ConfigError, "requests"),  # type: ignore[arg-type]
    case(
        "simulate(one request dict)",
        lambda: simulate({"messages": [USER]}, price=PRICE),
        ConfigError,
        "requests",
    ),  # type: ignore[arg-type]
    case("simulate([5])", lambda: simulate([5], price=PRICE), ConfigError, "request 0"),  # type: ignore[list-item]
    case(
        "simulate([{bad request}])",
        lambda: simulate([{"msgs": []}], price=PRICE),
        ConfigError,
        "request 0",
    ),
    case("simulate(price=None)", lambda: simulate([[USER]], price=None), ConfigError, "price"),  # type: ignore[arg-type]
    case("simulate(price=5)", lambda: simulate([[USER]], price=5), ConfigError, "price"),  # type: ignore[arg-type]
    case(
        "simulate(price='gpt-5')", lambda: simulate([[USER]], price="gpt-5"), ConfigError, "price"
    ),  # type: ignore[arg-type]
    case(
        "simulate(price={'default': 5})",
        lambda: simulate([[USER]], price={"default": 5}),
        ConfigError,
        "price['default']",
    ),  # type: ignore[dict-item]
    case(
        "simulate(price={} no default)",
        lambda: simulate([[USER]], price={"m": PRICE}),
        ConfigError,
        "request 0",
        "default",
    ),
    case("simulate(ttl=5)", lambda: simulate([[USER]], price=PRICE, ttl=5), ConfigError, "ttl"),  # type: ignore[arg-type]
    case("simulate(ttl=[])", lambda: simulate([[USER]], price=PRICE, ttl=[]), ConfigError, "ttl"),  # type: ignore[arg-type]
    case(
        "simulate(ttl='1d')", lambda: simulate([[USER]], price=PRICE, ttl="1d"), ConfigError, "ttl"
    ),  # type: ignore[arg-type]
    case(
        "simulate(cache_points='x')",
        lambda: simulate([[USER]], price=PRICE, cache_points="x"),
        ConfigError,
        "cache_points",
    ),  # type: ignore[arg-type]
    case(
        "simulate(min_cacheable_tokens='x')",
        lambda: simulate([[USER]], price=PRICE, min_cacheable_tokens="x"),
        ConfigError,
        "min_cacheable_tokens",
    ),  # type: ignore[arg-type]
    case(
        "simulate(min_cacheable_tokens=-1)",
        lambda: simulate([[USER]], price=PRICE, min_cacheable_tokens=-1),
        ConfigError,
        "min_cacheable_tokens",
    ),
    case(
        "simulate(min_cacheable_tokens=1.5)",
        lambda: simulate([[USER]], price=PRICE, min_cacheable_tokens=1.5),
        ConfigError,
        "min_cacheable_tokens",
    ),  # type: ignore[arg-type]
    case(
        "simulate(lookback=0)",
        lambda: simulate([[USER]], price=PRICE, lookback=0),
        ConfigError,
        "lookback",
    ),
    case(
        "simulate(lookback='x')",
        lambda: simulate([[USER]], price=PRICE, lookback="x"),
        ConfigError,
        "lookback",
    ),  # type: ignore[arg-type]
    case(
        "simulate(timestamps=5)",
        lambda: simulate([[USER]], price=PRICE, timestamps=5),
        ConfigError,
        "timestamps",
    ),  # type: ignore[arg-type]
    case(
        "simulate(timestamps='1')",
        lambda: simulate([[USER]], price=PRICE, timestamps="1"),
        ConfigError,
        "timestamps",
    ),  # type: ignore[arg-type]
    case(
        "simulate(timestamps=[nan])",
        lambda: simulate([[USER]], price=PRICE, timestamps=[math.nan]),
        ConfigError,
        "timestamps[0]",
    ),
    case(
        "simulate(timestamps=['x'])",
        lambda: simulate([[USER]], price=PRICE, timestamps=["x"]),
        ConfigError,
        "timestamps[0]",
    ),  # type: ignore[list-item]
    case(
        "simulate(timestamps=[True])",
        lambda: simulate([[USER]], price=PRICE, timestamps=[True]),
        ConfigError,
        "timestamps[0]",
    ),
    case(
        "simulate(timestamps wrong length)",
        lambda: simulate([[USER]], price=PRICE, timestamps=[1, 2]),
        ConfigError,
        "timestamps",
    ),
    case(
        "simulate(timestamps back in time)",
        lambda: simulate([[USER], [USER]], price=PRICE, timestamps=[5, 1]),
        ConfigError,
        "timestamps",
    ),
    # Session()
    case("Session(counter=5)", lambda: Session(counter=5), ConfigError, "counter"),  # type: ignore[arg-type]
    case("Session(store=5)", lambda: Session(store=5), ConfigError, "store"),  # type: ignore[arg-type]
    case("Session(filters=5)", lambda: Session(filters=5), ConfigError, "filters"),  # type: ignore[arg-type]
    case("Session(filters='x')", lambda: Session(filters="x"), ConfigError, "filters must be"),  # type: ignore[arg-type]
    case(
        "Session(filters=[5])",
        lambda: Session(filters=[5]),
        ConfigError,
        "filters[0]: int is not an output filter",
    ),  # type: ignore[list-item]
    case(
        "Session(retrieve_tool='no')",
        lambda: Session(retrieve_tool="no"),
        ConfigError,
        "retrieve_tool",
    ),  # type: ignore[arg-type]
    case(
        "Session(retrieve_tool=1)", lambda: Session(retrieve_tool=1), ConfigError, "retrieve_tool"
    ),  # type: ignore[arg-type]
    case("Session(filter_when='x')", lambda: Session(filter_when="x"), ConfigError, "filter_when"),  # type: ignore[arg-type]
    case(
        "Session(supersede_batch=0)",
        lambda: Session(supersede_batch=0),
        ConfigError,
        "supersede_batch",
    ),
    case(
        "Session(supersede_batch='x')",
        lambda: Session(supersede_batch="x"),
        ConfigError,
        "supersede_batch",
    ),  # type: ignore[arg-type]
    case(
        "Session(supersede_batch=True)",
        lambda: Session(supersede_batch=True),
        ConfigError,
        "supersede_batch",
    ),
    case("Session(pipeline=5)", lambda: Session(pipeline=5), ConfigError, "pipeline"),  # type: ignore[arg-type]
    case("Session.extend(one dict)", lambda: Session().extend(USER), InvalidMessageError, "append"),
    case("Session.append(None)", lambda: Session().append(None), InvalidMessageError, "message 0"),  # type: ignore[arg-type]
    case("Session.append(5)", lambda: Session().append(5), InvalidMessageError, "message 0"),  # type: ignore[arg-type]
    case("Session.append('hi')", lambda: Session().append("hi"), InvalidMessageError, "message 0"),  # type: ignore[arg-type]
    case(
        "Session.append(provider=5)",
        lambda: Session().append(USER, provider=5),
        ConfigError,
        "provider",
    ),  # type: ignore[arg-type]
    case(
        "Session.append(id reused)",
        lambda: session({**USER, "id": "a"}).append({**USER, "id": "a"}),
        InvalidMessageError,
        "message 1",
        "id",
    ),
    case("Session.render(empty)", lambda: Session().render(), ConfigError, "empty"),
    case("Session.render(budget=0)", lambda: session().render(0), ConfigError, "budget"),
    case("Session.render(budget='x')", lambda: session().render("x"), ConfigError, "budget"),  # type: ignore[arg-type]
    case(
        "Session.render(reserve=-1)", lambda: session().render(reserve=-1), ConfigError, "reserve"
    ),
    case(
        "Session.render(reserve='x')", lambda: session().render(reserve="x"), ConfigError, "reserve"
    ),  # type: ignore[arg-type]
    case("Session.render(query=5)", lambda: session().render(query=5), ConfigError, "query"),  # type: ignore[arg-type]
    case(
        "Session.render(provider=5)", lambda: session().render(provider=5), ConfigError, "provider"
    ),  # type: ignore[arg-type]
    case("Session.tools(5)", lambda: Session().tools(5), ConfigError, "provider"),  # type: ignore[arg-type]
    case("Session.handle(None)", lambda: Session().handle(None), ConfigError, "call"),  # type: ignore[arg-type]
    case("Session.handle(5)", lambda: Session().handle(5), ConfigError, "call"),  # type: ignore[arg-type]
    # adapters
    case(
        "from_anthropic(system=5)",
        lambda: from_anthropic([USER], system=5),
        InvalidMessageError,
        "system",
    ),  # type: ignore[arg-type]
    case(
        "from_anthropic(system=[5])",
        lambda: from_anthropic([USER], system=[5]),
        InvalidMessageError,
        "system[0]",
    ),  # type: ignore[list-item]
    case("validate_openai(None)", lambda: validate_openai(None), InvalidMessageError, "list"),
    case("validate_anthropic(5)", lambda: validate_anthropic(5), InvalidMessageError, "list"),
    case("validate_anthropic({})", lambda: validate_anthropic({}), InvalidMessageError, "messages"),
    # Pipeline and stages
    case("Pipeline(None)", lambda: Pipeline(None), ConfigError, "steps"),  # type: ignore[arg-type]
    case("Pipeline(5)", lambda: Pipeline(5), ConfigError, "steps"),  # type: ignore[arg-type]
    case("Pipeline([5])", lambda: Pipeline([5]), ConfigError, "step 0"),  # type: ignore[list-item]
    case("Pipeline([('a',)])", lambda: Pipeline([("a",)]), ConfigError, "step 0"),  # type: ignore[list-item]
    case(
        "Pipeline(same name twice)",
        lambda: Pipeline([GreedyPacker(), GreedyPacker()]),
        ConfigError,
        "step 1",
        "pack",
    ),
    case("GreedyPacker(x=1)", lambda: GreedyPacker(x=1), ConfigError, "x=1"),  # type: ignore[call-arg]
    case(
        "GreedyPacker(recency_weight='x')",
        lambda: GreedyPacker(recency_weight="x"),
        ConfigError,
        "recency_weight",
    ),  # type: ignore[arg-type]
    case(
        "GreedyPacker(role_weights=5)",
        lambda: GreedyPacker(role_weights=5),
        ConfigError,
        "role_weights",
    ),  # type: ignore[arg-type]
    case(
        "RelevanceScorer(weights=5)",
        lambda: ctxpack.RelevanceScorer(weights=5),
        ConfigError,
        "weights",
    ),  # type: ignore[call-arg]
    # prices and requests
    case(
        "Price(input=nan)",
        lambda: Price(input=math.nan, output=1, cache_write_5m=1, cache_write_1h=1, cache_read=1),
        ConfigError,
        "input",
    ),
    case("Price(input=1)", lambda: Price(input=1), ConfigError, "output is required"),  # type: ignore[call-arg]
    case(
        "Price(input='cheap')",
        lambda: Price(input="cheap", output=1, cache_write_5m=1, cache_write_1h=1, cache_read=1),  # type: ignore[arg-type]
        ConfigError,
        "input",
    ),
    case("Request(messages=5)", lambda: ctxpack.cost.Request(messages=5), ConfigError, "messages"),  # type: ignore[arg-type]
    # counters, filters, editing
    case(
        "count_tokens_approx('x')", lambda: count_tokens_approx("x"), ConfigError, "chars_per_token"
    ),  # type: ignore[arg-type]
    case(
        "count_tokens_approx(nan)",
        lambda: count_tokens_approx(math.nan),
        ConfigError,
        "chars_per_token",
    ),
    case("count_tokens_approx(0)", lambda: count_tokens_approx(0), ConfigError, "chars_per_token"),
    case(
        "count_tokens_approx(safety_margin=nan)",
        lambda: count_tokens_approx(safety_margin=math.nan),
        ConfigError,
        "safety_margin",
    ),
    case("ToolOutputFilter(5)", lambda: ToolOutputFilter(5), ConfigError, "filters"),  # type: ignore[arg-type]
    case(
        "ToolOutputFilter([5])",
        lambda: ToolOutputFilter([5]),
        ConfigError,
        "filters[0]: int is not an output filter",
    ),  # type: ignore[list-item]
    case(
        "extractive_digest(None)", lambda: extractive_digest(None), InvalidMessageError, "messages"
    ),  # type: ignore[arg-type]
    case(
        "extractive_digest([dict])",
        lambda: extractive_digest([USER]),
        InvalidMessageError,
        "message 0",
    ),  # type: ignore[list-item]
    case(
        "extractive_digest(instructions=5)",
        lambda: extractive_digest([], instructions=5),
        ConfigError,
        "instructions",
    ),  # type: ignore[arg-type]
    case("Pipeline()(5)", lambda: ctxpack.default_pipeline()(5), ConfigError, "PackContext"),  # type: ignore[arg-type]
    case(
        "simulate(request tools=[{}])",
        lambda: simulate([{"messages": [USER], "tools": [{}]}], price=PRICE),
        ConfigError,
        "request 0",
        "tools",
    ),
    case(
        "evidence_terms(None)",
        lambda: evidence_terms(None),  # type: ignore[arg-type]
        ConfigError,
        "text",
    ),
    # selection and results
    case(
        "apply_selection(None, ws)",
        lambda: apply_selection(None, Workspace([USER])),  # type: ignore[arg-type]
        ConfigError,
        "selection",
    ),
    case(
        "apply_selection(sel, [msgs])",
        lambda: apply_selection(Selection(), [USER]),  # type: ignore[arg-type]
        ConfigError,
        "workspace",
    ),
    case(
        "apply_selection(budget='x')",
        lambda: apply_selection(Selection(), Workspace([USER]), budget="x"),  # type: ignore[arg-type]
        ConfigError,
        "budget",
    ),
    case(
        "Workspace(None)",
        lambda: Workspace(None),  # type: ignore[arg-type]
        InvalidMessageError,
        "messages",
    ),
    case(
        "PackResult.report(width='x')",
        lambda: pack([USER], budget=100).report(width="x"),  # type: ignore[arg-type]
        ConfigError,
        "width",
    ),
    case(
        "PackResult.report(width=0)",
        lambda: pack([USER], budget=100).report(width=0),
        ConfigError,
        "width",
    ),
    # client wrappers
    case(
        "wrap_openai(model=5)",
        lambda: ctxpack.wrap_openai(object(), window=100, model=5),
        ConfigError,
        "model",
    ),  # type: ignore[arg-type]
    case(
        "wrap_openai(pipeline=5)",
        lambda: ctxpack.wrap_openai(object(), window=100, pipeline=5),
        ConfigError,
        "pipeline",
    ),  # type: ignore[arg-type]
    case(
        "wrap_anthropic(session=5)",
        lambda: ctxpack.wrap_anthropic(object(), window=100, counter="cl100k_base", session=5),
        ConfigError,
        "session",
    ),  # type: ignore[arg-type]
    case(
        "wrap_openai(window=0)",
        lambda: ctxpack.wrap_openai(object(), window=0),
        ConfigError,
        "window",
    ),
    case(
        "wrap_openai(window='8k')",
        lambda: ctxpack.wrap_openai(object(), window="8k"),  # type: ignore[arg-type]
        ConfigError,
        "window",
    ),
    case(
        "wrap_openai(no window, no budget)",
        lambda: ctxpack.wrap_openai(object()),
        ConfigError,
        "window",
    ),
    case(
        "wrap_openai(budget=0)",
        lambda: ctxpack.wrap_openai(object(), budget=0),
        ConfigError,
        "budget",
    ),
    case(
        "wrap_anthropic(reserve=-1)",
        lambda: ctxpack.wrap_anthropic(object(), window=100, counter="cl100k_base", reserve=-1),
        ConfigError,
        "reserve",
    ),
]


# Removed when the test process ends.
_SCRATCH = tempfile.TemporaryDirectory(prefix="ctxpack-adversarial-")


def _folder() -> str:
    return tempfile.mkdtemp(dir=_SCRATCH.name)


def _not_a_database() -> str:
    path = os.path.join(_folder(), "notes.db")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("these are notes, not a database\n" * 100)
    return path


def _session_with_an_original() -> tuple[Session, str]:
    """A session whose one tool output (101 lines) was shortened, and its original's id."""
    log = [f"tests/test_{i}.py::test_ok PASSED" for i in range(100)]
    s = session(
        USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "pytest -q"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": "\n".join([*log, "FAILED tests/test_auth.py::test_refresh - KeyError"]),
        },
    )
    artifact = s.records[0].artifact
    assert artifact is not None
    return s, artifact


def _retrieve(**selector: Any) -> object:
    s, artifact = _session_with_an_original()
    return s.retrieve(artifact, **selector)


STORE_CASES: list[Case] = [
    case(
        "Session.retrieve(lines past the end)",
        lambda: _retrieve(lines="500-600"),
        ConfigError,
        "lines",
        "101 lines",
    ),
    case("Session.retrieve(lines='b-a')", lambda: _retrieve(lines="20-10"), ConfigError, "lines"),
    case("Session.retrieve(regex='(')", lambda: _retrieve(regex="("), ConfigError, "regex"),
    case("Session.retrieve(page=0)", lambda: _retrieve(page=0), ConfigError, "page"),
    case(
        "open_store(a folder)",
        lambda: open_store(f"sqlite:///{_folder()}"),
        StoreError,
        "folder",
        "sqlite:///",
    ),
    case(
        "open_store(not a database)",
        lambda: open_store(f"sqlite:///{_not_a_database()}"),
        StoreError,
        "not a database",
        "notes.db",
    ),
    case(
        "Session.open(store=a folder)",
        lambda: Session.open("u1", store=f"sqlite:///{_folder()}"),
        StoreError,
        "folder",
    ),
    case(
        "SQLiteArtifactStore(a folder)",
        lambda: SQLiteArtifactStore(_folder()),
        StoreError,
        "folder",
    ),
    case(
        "SQLiteArtifactStore(not a database)",
        lambda: SQLiteArtifactStore(_not_a_database()),
        StoreError,
        "notes.db",
    ),
    # str() of these would quietly create a database file named "5" or "None" in the cwd.
    case("SQLiteArtifactStore(5)", lambda: SQLiteArtifactStore(5), ConfigError, "path", "int"),  # type: ignore[arg-type]
    case("SQLiteArtifactStore(b'x')", lambda: SQLiteArtifactStore(b"x"), ConfigError, "path"),  # type: ignore[arg-type]
    case("SQLiteStore(None)", lambda: SQLiteStore(None), ConfigError, "path", "NoneType"),  # type: ignore[arg-type]
]


# ------------------------------------------------------------------------------ messages

# (case name, the bad message, the field the error must name)
BAD_MESSAGES: list[tuple[str, Any, str]] = [
    ("None", None, ""),
    ("int", 5, ""),
    ("str", "hello", ""),
    ("list", [USER], ""),
    ("role missing", {"content": "x"}, "role"),
    ("role int", {"role": 5, "content": "x"}, "role"),
    ("role list", {"role": [], "content": "x"}, "role"),
    ("role unknown", {"role": "robot", "content": "x"}, "role"),
    ("content int", {"role": "user", "content": 5}, "content"),
    ("content missing", {"role": "user"}, "content"),
    ("content [int]", {"role": "user", "content": [5]}, "content"),
    ("content part type int", {"role": "user", "content": [{"type": 5}]}, "content"),
    ("content lone surrogate", {"role": "user", "content": "ok \ud800"}, "content"),
    (
        "content part lone surrogate",
        {"role": "user", "content": [{"type": "text", "text": "\udfff"}]},
        "content",
    ),
    (
        "content nested 5000 deep",
        {"role": "user", "content": [{"type": "text", "text": "x", "x": nested_list(5000)}]},
        "content",
    ),
    ("name int", {"role": "user", "content": "x", "name": 5}, "name"),
    ("name lone surrogate", {"role": "user", "content": "x", "name": "\ud800"}, "name"),
    ("id int", {"role": "user", "content": "x", "id": 5}, "id"),
    ("id lone surrogate", {"role": "user", "content": "x", "id": "\ud800"}, "id"),
    (
        "id lone surrogate, list content",
        {"role": "user", "content": [{"type": "text", "text": "x"}], "id": "a\udfff"},
        "id",
    ),
    ("source lone surrogate", {"role": "user", "content": "x", "source": "\ud800"}, "source"),
    ("priority NaN", {"role": "user", "content": "x", "priority": math.nan}, "priority"),
    ("priority inf", {"role": "user", "content": "x", "priority": math.inf}, "priority"),
    ("priority str", {"role": "user", "content": "x", "priority": "high"}, "priority"),
    ("pinned str", {"role": "user", "content": "x", "pinned": "maybe"}, "pinned"),
    ("metadata int", {"role": "user", "content": "x", "metadata": 5}, "metadata"),
    (
        "metadata nested 5000 deep",
        {"role": "user", "content": "x", "metadata": nested(5000)},
        "metadata",
    ),
    (
        "extra key nested 5000 deep",
        {"role": "user", "content": "x", "audio": nested(5000)},
        "audio",
    ),
    ("timestamp bad", {"role": "user", "content": "x", "timestamp": "yesterday"}, "timestamp"),
    # Ints with more digits than Python writes: accepted, then repr() of the result and every
    # JSON encoder (a provider SDK's, a stored session's) failed with a bare ValueError.
    (
        "content part int too long to write",
        {"role": "user", "content": [{"type": "text", "text": "x", "n": 10**5000}]},
        "content",
    ),
    (
        "metadata int too long to write",
        {"role": "user", "content": "x", "metadata": {"n": [10**5000]}},
        "metadata",
    ),
    (
        "extra key int too long to write",
        {"role": "user", "content": "x", "audio": {"n": 10**5000}},
        "audio",
    ),
    # Values deepcopy cannot copy: a bare TypeError ("cannot pickle ...") from inside the copy.
    (
        "content part a mappingproxy",
        {"role": "user", "content": [types.MappingProxyType({"type": "text", "text": "x"})]},
        "content",
    ),
    (
        "metadata holds a lock",
        {"role": "user", "content": "x", "metadata": {"l": LOCK}},
        "metadata",
    ),
    ("extra key holds a lock", {"role": "user", "content": "x", "audio": {"l": LOCK}}, "audio"),
    ("key not a string", {"role": "user", "content": "x", 5: "five"}, "5"),
    (
        "extras a list, beside an unknown key",
        {"role": "user", "content": "x", "extras": [1], "audio": {}},
        "extras",
    ),
    (
        "tool result with a block type that is an object",
        {"role": "tool", "tool_call_id": "c", "content": [{"type": {"a": 1}}]},
        "content",
    ),
    ("tool without call id", {"role": "tool", "content": "x"}, "tool_call_id"),
    ("tool_calls on a user", {"role": "user", "content": "x", "tool_calls": [CALL]}, "tool_calls"),
    (
        "tool_calls not a list",
        {"role": "assistant", "content": None, "tool_calls": 5},
        "tool_calls",
    ),
    ("tool call empty", {"role": "assistant", "content": None, "tool_calls": [{}]}, "tool_calls"),
    (
        "tool call arguments dict",
        {"role": "assistant", "tool_calls": [{**CALL, "function": {"name": "f", "arguments": {}}}]},
        "tool_calls",
    ),
    (
        "tool call arguments surrogate",
        {
            "role": "assistant",
            "tool_calls": [{**CALL, "function": {"name": "f", "arguments": '"\ud800"'}}],
        },
        "tool_calls",
    ),
    # A lone surrogate outside a text field (an image's URL, a refusal) was taken, to fail
    # as a UnicodeEncodeError in the SDK sending it.
    (
        "content part url lone surrogate",
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "a\udce9"}}]},
        "content",
    ),
    (
        "extra field lone surrogate",
        {"role": "assistant", "content": "x", "refusal": "\udce9"},
        "refusal",
    ),
]
# Each bad message comes second, after a good one: the error must say "message 1".
MESSAGE_ENTRY_POINTS: dict[str, Callable[[list[Any]], object]] = {
    "pack": lambda m: pack(m, budget=1000),
    "count_tokens": lambda m: count_tokens(m),
    "context_usage": lambda m: context_usage(m),
    "to_openai": to_openai,
    "from_openai": from_openai,
    "Session.extend": lambda m: Session().extend(m),
}


def _message_cases() -> Iterator[Case]:
    for fname, func in MESSAGE_ENTRY_POINTS.items():
        for mname, bad, field in BAD_MESSAGES:
            names = ("message 1", field) if field else ("message 1",)
            yield case(
                f"{fname}([ok, {mname}])",
                lambda f=func, b=bad: f([USER, b]),
                InvalidMessageError,
                *names,
            )


MESSAGE_CASES = list(_message_cases())

MESSAGE_MODEL_CASES: list[Case] = [
    case(
        "pack([ok, Message(metadata holds a lock)])",
        lambda: pack([USER, Message(role="user", content="x", metadata={"l": LOCK})], budget=100),
        InvalidMessageError,
        "message 1",
        "metadata",
        "cannot be copied",
    ),
    case("Message(role=5)", lambda: Message(role=5, content="x"), InvalidMessageError, "role"),  # type: ignore[arg-type]
    case(
        "Message(content=5)",
        lambda: Message(role="user", content=5),
        InvalidMessageError,
        "content",
    ),  # type: ignore[arg-type]
    case(
        "Message(content surrogate)",
        lambda: Message(role="user", content="\ud800"),
        InvalidMessageError,
        "content",
    ),
    case(
        "Message(priority=nan)",
        lambda: Message(role="user", content="x", priority=math.nan),
        InvalidMessageError,
        "priority",
    ),
    case(
        "Message(metadata deep)",
        lambda: Message(role="user", content="x", metadata=nested(5000)),
        InvalidMessageError,
        "metadata",
    ),
    case(
        "Message(tool, no call id)",
        lambda: Message(role="tool", content="x"),
        InvalidMessageError,
        "tool_call_id",
    ),
    case(
        "Message(unknown field)",
        lambda: Message(role="user", content="x", colour="red"),
        InvalidMessageError,
        "colour",
    ),  # type: ignore[call-arg]
    case(
        "from_anthropic(deep tool input)",
        lambda: from_anthropic(
            [
                USER,
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "t", "name": "f", "input": nested(5000)}
                    ],
                },
            ]
        ),
        InvalidMessageError,
        "message 1",
        "content",
    ),
    case(
        "from_anthropic(surrogate text)",
        lambda: from_anthropic([{"role": "user", "content": [{"type": "text", "text": "\ud800"}]}]),
        InvalidMessageError,
        "content",
    ),
]

ALL_CASES = [*ARGUMENT_CASES, *STORE_CASES, *MESSAGE_CASES, *MESSAGE_MODEL_CASES]


def test_there_are_at_least_150_cases() -> None:
    assert len(ALL_CASES) >= 150
    assert len({c.id for c in ALL_CASES}) == len(ALL_CASES), "case ids must be unique"


def check_case(c: Case) -> None:
    """``c.call()`` raises ``c.error``, in one line naming each of ``c.names``."""
    with pytest.raises(c.error) as info:
        c.call()
    text = str(info.value)
    for name in c.names:
        assert name in text, f"{name!r} not named in: {text}"
    # One line a user can read, never pydantic's multi-line dump.
    assert "\n" not in text or "problem(s)" in text, text


@pytest.mark.parametrize("c", ALL_CASES, ids=lambda c: c.id)
def test_hostile_input_raises_ctxpacks_own_error_naming_the_field(c: Case) -> None:
    check_case(c)


@pytest.mark.parametrize(
    ("mname", "bad", "field"),
    [pytest.param(*b, id=b[0]) for b in BAD_MESSAGES if b[2]],
)
def test_a_bad_message_carries_its_index_and_field(mname: str, bad: Any, field: str) -> None:
    with pytest.raises(InvalidMessageError) as info:
        pack([USER, bad], budget=1000)
    assert info.value.index == 1
    assert info.value.field is not None and info.value.field.startswith(field), info.value.field


# ------------------------------------------------------------- nothing wrong accepted silently


def test_a_non_finite_priority_is_refused_not_packed() -> None:
    # It used to be packed, with numpy warning about an invalid value in the scores.
    with pytest.raises(InvalidMessageError, match="priority"):
        pack([USER, {"role": "user", "content": "x", "priority": math.nan}], budget=100)


def test_a_lone_surrogate_in_the_query_is_still_a_query() -> None:
    # The query is never sent, only compared with the messages: it needs no valid encoding.
    result = pack([USER], budget=100, query="invoice \ud800")
    assert result.query == "invoice \ud800"


def test_valid_non_ascii_text_is_accepted() -> None:
    text = "Où est la facture ? 請求書 🧾"
    result = pack([{"role": "user", "content": text, "name": "zoé"}], budget=100)
    assert result.messages[0].text == text


def test_nesting_up_to_the_limit_is_accepted() -> None:
    from ctxpack._internal.arguments import MAX_NESTING

    # The message is level 0 and metadata level 1: the deepest object sits at MAX_NESTING - 1.
    ok = {"role": "user", "content": "x", "metadata": nested(MAX_NESTING - 2)}
    assert pack([ok], budget=100).messages[0].metadata == ok["metadata"]
    too_deep = {**ok, "metadata": nested(MAX_NESTING)}
    with pytest.raises(InvalidMessageError, match="metadata"):
        pack([too_deep], budget=100)


def test_a_built_in_tool_without_a_name_is_accepted() -> None:
    # Provider-side tools (OpenAI's web_search) have a type and no name.
    assert pack([USER], budget=1000, tools=[{"type": "web_search"}]).tool_tokens > 0


def test_tool_definitions_as_sdks_and_providers_write_them_are_accepted() -> None:
    tools = [
        # An SDK model dumped without exclude_none: its optional fields as None.
        _function(description=None, parameters=None, strict=None),
        # A schema written with tuples: JSON sends them as lists.
        _function(parameters={"type": "object", "required": ("a",), "properties": {"a": {}}}),
        {"type": "function", "name": "g", "parameters": {"type": "object"}},
        {"name": "h", "description": "Do it.", "input_schema": {"type": "object"}},
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
    ]
    assert count_tokens([USER], tools=tools) > count_tokens([USER])


# ---------------------------------------------------------------------------- Hypothesis

HYPOTHESIS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.binary(max_size=5),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _ctxpack_error_or_result(call: Callable[[], object]) -> CtxpackError | None:
    try:
        call()
    except CtxpackError as exc:
        return exc
    return None


@HYPOTHESIS
@given(value=JUNK.filter(lambda v: not isinstance(v, (str, list))))
def test_any_non_list_of_messages_is_refused_naming_messages(value: Any) -> None:
    for name, func in MESSAGE_LISTS.items():
        with pytest.raises(InvalidMessageError, match="messages"):
            func(value)
        assert name


@HYPOTHESIS
@given(value=JUNK.filter(lambda v: v is not None and not isinstance(v, str)))
def test_any_non_string_model_or_query_is_refused(value: Any) -> None:
    with pytest.raises(ConfigError, match="model"):
        pack([USER], budget=100, model=value)
    with pytest.raises(ConfigError, match="query"):
        pack([USER], budget=100, query=value)


@HYPOTHESIS
@given(
    field=st.sampled_from(
        [
            "role",
            "content",
            "name",
            "id",
            "priority",
            "pinned",
            "metadata",
            "timestamp",
            "tool_calls",
            "tool_call_id",
            "source",
        ]
    ),
    value=JUNK,
)
def test_any_value_in_any_field_gives_a_result_or_an_error_naming_the_field(
    field: str, value: Any
) -> None:
    bad = {"role": "user", "content": "x", field: value}
    error = _ctxpack_error_or_result(lambda: pack([USER, bad], budget=1000))
    if error is not None:
        assert isinstance(error, InvalidMessageError)
        assert error.index == 1
        assert field in str(error), str(error)


@HYPOTHESIS
@given(text=st.text(alphabet=st.characters(codec=None, exclude_categories=[]), max_size=20))
def test_any_text_is_packed_or_refused_as_invalid_unicode(text: str) -> None:
    msg = {"role": "user", "content": text, "name": "n"}
    error = _ctxpack_error_or_result(lambda: pack([msg], budget=10_000))
    surrogate = any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)
    if surrogate:
        assert isinstance(error, InvalidMessageError) and error.field == "content", error
    else:
        assert error is None, error


@HYPOTHESIS
@given(tools=st.lists(JUNK, min_size=1, max_size=3))
def test_any_junk_tool_list_is_refused_naming_the_tool(tools: list[Any]) -> None:
    with pytest.raises(ConfigError, match=r"tools\[\d\]"):
        count_tokens([USER], tools=tools)


@HYPOTHESIS
@given(
    block=st.dictionaries(
        st.sampled_from(["type", "text", "id", "name", "input", "tool_use_id", "content"]),
        JUNK,
        max_size=4,
    )
)
def test_any_anthropic_block_gives_messages_or_an_error_naming_the_content(
    block: dict[str, Any],
) -> None:
    payload = [USER, {"role": "assistant", "content": [block]}]
    error = _ctxpack_error_or_result(lambda: from_anthropic(payload))
    if error is not None:
        assert isinstance(error, InvalidMessageError)
        assert error.index == 1 and "content[0]" in str(error), str(error)


@HYPOTHESIS
@given(field=st.sampled_from(["content", "name", "tool_call_id", "tool_calls"]), value=JUNK)
def test_any_value_appended_to_a_session_is_kept_or_refused_leaving_it_unchanged(
    field: str, value: Any
) -> None:
    s = session()
    error = _ctxpack_error_or_result(lambda: s.append({"role": "assistant", field: value}))
    if error is not None:
        assert isinstance(error, InvalidMessageError)
        assert error.index == 1, str(error)
        assert len(s) == 1, "a refused message must leave the session as it was"
    else:
        assert len(s) == 2


_LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5))
_NESTED = st.recursive(
    _LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["type", "text", "id", "name", "input", "content", "function"]),
            inner,
            max_size=3,
        ),
    ),
    max_leaves=8,
)
_FIELDS = [
    "content",
    "name",
    "id",
    "tool_calls",
    "tool_call_id",
    "priority",
    "pinned",
    "metadata",
    "timestamp",
    "source",
    "function_call",
    "refusal",
    "audio",
    "extras",
]
_MESSAGES = st.builds(
    lambda role, content, extra: {"role": role, "content": content, **extra},
    st.sampled_from(["user", "assistant", "tool", "system", "developer"]),
    _NESTED,
    st.dictionaries(st.sampled_from(_FIELDS[1:]), _NESTED, max_size=2),
)
_ENTRY_POINTS = {
    **MESSAGE_ENTRY_POINTS,
    "pack(provider='anthropic')": lambda m: pack(m, budget=1000, provider="anthropic"),
    "to_anthropic": to_anthropic,
    "from_anthropic": from_anthropic,
    "Session.render": lambda m: (lambda s: (s.extend(m), s.render(budget=1000)))(Session()),
}


@HYPOTHESIS
@given(message=_MESSAGES, entry=st.sampled_from(sorted(_ENTRY_POINTS)))
def test_any_nested_message_through_any_entry_point_gives_a_result_or_a_ctxpack_error(
    message: dict[str, Any], entry: str
) -> None:
    # _ctxpack_error_or_result lets any other exception through: the test fails on it.
    _ctxpack_error_or_result(lambda: _ENTRY_POINTS[entry]([USER, message]))


def test_the_model_asking_past_the_end_is_answered_in_words() -> None:
    s, artifact = _session_with_an_original()
    call = {
        "id": "c2",
        "type": "function",
        "function": {
            "name": "retrieve_original",
            "arguments": json.dumps({"artifact": artifact, "lines": "500-600"}),
        },
    }
    answer = s.handle(call)
    assert answer.startswith("error:") and "101 lines" in answer
