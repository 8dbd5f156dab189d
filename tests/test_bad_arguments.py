"""Bad input at the public entry points the adversarial suite did not reach yet: each call must
raise ctxpack's own error naming the argument (or the field), never an ``AttributeError``,
``TypeError`` or raw pydantic ``ValidationError`` from deep inside, and never accept nonsense
that would corrupt a later result (an infinite price, a NaN weight).

Cases share the shape of :mod:`tests.test_adversarial`: a call, the error it must raise, and the
words its message must hold.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
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
    count_tokens,
    wrap_anthropic,
    wrap_openai,
)
from ctxpack import pack as ctxpack_pack
from ctxpack import simulate as simulate_bill
from ctxpack.adapters import validate_anthropic, validate_openai
from ctxpack.anthropic_tokens import calibrate
from ctxpack.caches import memoize
from ctxpack.code import (
    CodeIndex,
    Judgement,
    RankingJudge,
    decide_loading,
    grep,
    iterative_retrieve,
    parse_source,
)
from ctxpack.cost import Price, PriceTable, filtering_economics, price, shipped_prices
from ctxpack.editing import Compactor, ToolResultClearer
from ctxpack.errors import CtxpackError, WorkspacePathError
from ctxpack.filters import ToolOutput, ToolOutputFilter, assemble
from ctxpack.guard import ArrivalGuard
from ctxpack.injection import find_injections
from ctxpack.integrations.langchain_agent import PackingMiddleware
from ctxpack.managed import WindowEvent, WindowPolicy, WindowState
from ctxpack.messages import ensure_messages
from ctxpack.packing import semantic_pipeline
from ctxpack.plot import plot_bills, plot_context_usage
from ctxpack.providers import detect_provider, tool_definition
from ctxpack.redaction import find_secrets, redact, redact_message
from ctxpack.retrieval import handle_retrieve_call, read_artifact
from ctxpack.selection import (
    LexicalSelector,
    ModelSelector,
    Selection,
    Workspace,
    selection_prompt,
)
from ctxpack.signals import Neighbors, QueryWords, signal_from
from ctxpack.signals.embeddings import MiniLMEmbedder
from ctxpack.stages import compress_lines
from ctxpack.store import (
    MemoryStore,
    SQLiteArtifactStore,
    SQLiteStore,
    open_async_store,
    open_store,
)
from ctxpack.testing import check_stage
from ctxpack.tokens import (
    CharsPerTokenApproxCounter,
    anthropic_approx_counter,
    encoding_for_model,
    get_counter,
    tool_definition_tokens,
)
from ctxpack.tools_on_demand import on_demand_saving

from .test_adversarial import Case, case


async def _async_summarizer(messages: Any, instructions: str | None) -> str:
    return "summary"


class _AsyncSummarizer:
    async def __call__(self, messages: Any, instructions: str | None) -> str:
        return "summary"


async def _async_counter(text: str) -> int:
    return len(text)


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

# ------------------------------------------------- flags are bools, numbers are not bools

FLAG_CASES = [
    # pydantic alone reads these as flags, and True as the number 1.
    case(
        "Deduplicator(case_sensitive='yes')",
        lambda: Deduplicator(case_sensitive="yes"),  # type: ignore[arg-type]
        ConfigError,
        "case_sensitive",
    ),
    case(
        "PromptComposer(keep_last_user=0)",
        lambda: PromptComposer(keep_last_user=0),  # type: ignore[arg-type]
        ConfigError,
        "keep_last_user",
    ),
    case("MemorySelector(window=True)", lambda: MemorySelector(window=True), ConfigError, "window"),
    case(
        "Price(input=True)",
        lambda: Price(input=True, output=1, cache_write_5m=1, cache_write_1h=1, cache_read=1),
        ConfigError,
        "input",
    ),
    case(
        "WindowPolicy(server_side=1)",
        lambda: WindowPolicy(window=64_000, server_side=1),  # type: ignore[arg-type]
        ConfigError,
        "server_side",
    ),
    case("Neighbors(distance=True)", lambda: Neighbors(distance=True), ConfigError, "distance"),
    # A misspelt role matched no message: the stage did nothing, silently.
    case(
        "ExtractiveCompressor(roles=('tool', 'users'))",
        lambda: ExtractiveCompressor(roles=("tool", "users")),  # type: ignore[arg-type]
        ConfigError,
        "roles",
    ),
    # A negative weight ranked a message lower for matching; the docs give it no meaning.
    case(
        "GreedyPacker(recency_weight=-1)",
        lambda: GreedyPacker(recency_weight=-1),
        ConfigError,
        "recency_weight=-1",
    ),
    case(
        "GreedyPacker(role_weights={'user': -1})",
        lambda: GreedyPacker(role_weights={"user": -1}),
        ConfigError,
        "role_weights.user=-1",
    ),
    case(
        "GreedyPacker(signal_weights={'relevance': -40})",
        lambda: GreedyPacker(signal_weights={"relevance": -40}),
        ConfigError,
        "signal_weights.relevance=-40",
    ),
    case(
        "GreedyPacker(role_weights={'users': 5})",
        lambda: GreedyPacker(role_weights={"users": 5}),
        ConfigError,
        "role_weights",
        "users",
    ),
    case(
        "CitationInheritor(roles=('robot',))",
        lambda: CitationInheritor(roles=("robot",)),  # type: ignore[arg-type]
        ConfigError,
        "roles",
    ),
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
        "WindowState.from_json(bad field)",
        lambda: WindowState.from_json('{"requests": "x"}'),
        ConfigError,
        "not a saved WindowState",
        "requests",
    ),
    case(
        "WindowState(requests=-1)",
        lambda: WindowState(requests=-1),
        ConfigError,
        "WindowState",
        "requests",
    ),
    case(
        "WindowState(unknown field)",
        lambda: WindowState(request=3),  # type: ignore[call-arg]
        ConfigError,
        "unknown option",
    ),
    case(
        "WindowEvent(no request)",
        lambda: WindowEvent(action="cleared", tokens_before=1, tokens_after=0, rewritten=0),  # type: ignore[call-arg]
        ConfigError,
        "WindowEvent",
        "request is required",
    ),
    case(
        "WindowState.from_json(negative)",
        lambda: WindowState.from_json('{"requests": -2}'),
        ConfigError,
        "not a saved WindowState",
        "greater than or equal to 0",
    ),
    # A callback of the wrong arity failed with a bare TypeError at its first call, deep inside.
    case(
        "WindowPolicy(summarizer=lambda: ...)",
        lambda: WindowPolicy(window=64_000, summarizer=lambda: "x"),  # type: ignore[arg-type]
        ConfigError,
        "summarizer",
        "(messages, instructions) -> text",
    ),
    case(
        "Compactor(summarizer=lambda m: ...)",
        lambda: Compactor(summarizer=lambda m: "x"),  # type: ignore[arg-type,misc]
        ConfigError,
        "summarizer",
        "(messages, instructions) -> text",
    ),
    # A coroutine function was taken, and its first call deep inside a render returned a
    # coroutine no one awaited: a ConfigError hours into a session, for a mistake made at once.
    case(
        "WindowPolicy(summarizer=async def)",
        lambda: WindowPolicy(window=64_000, summarizer=_async_summarizer),
        ConfigError,
        "summarizer",
        "coroutine function",
    ),
    case(
        "Compactor(summarizer=async __call__)",
        lambda: Compactor(summarizer=_AsyncSummarizer()),  # type: ignore[arg-type]
        ConfigError,
        "summarizer",
        "coroutine function",
    ),
    case(
        "get_counter(counter=async def)",
        lambda: get_counter(counter=_async_counter),  # type: ignore[arg-type]
        ConfigError,
        "counter",
        "coroutine function",
    ),
    case(
        "pack(pipeline=lambda: 1)",
        lambda: ctxpack_pack([USER], budget=100, pipeline=lambda: 1),  # type: ignore[arg-type,misc]
        ConfigError,
        "cannot be called with the context",
        "(ctx: PackContext, /) -> PackContext",
    ),
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
    # On an empty session the error was "the session is empty", whatever the argument.
    case(
        "Session().render(budget=-1), empty",
        lambda: Session().render(-1),
        ConfigError,
        "budget",
    ),
    case(
        "Session().render(tools=5), empty",
        lambda: Session().render(1000, tools=5),  # type: ignore[arg-type]
        ConfigError,
        "tools",
    ),
    case(
        "Session.context_management(5)",
        lambda: _session().context_management(5),  # type: ignore[arg-type]
        ConfigError,
        "provider",
    ),
]

# ------------------------------------------------------- text, names and paths where they go

LINES = "\n".join(f"line {i}" for i in range(20))
TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
LONG_INT_TOOL = {
    "type": "function",
    "function": {"name": "lookup", "parameters": {"type": "object", "maximum": 10**5000}},
}
NAN_TOOL = {
    "type": "function",
    "function": {"name": "lookup", "parameters": {"type": "object", "maximum": math.nan}},
}


# Removed when the test process ends.
_SCRATCH = tempfile.TemporaryDirectory(prefix="ctxpack-bad-arguments-")


def _price_file(rows: dict[str, Any]) -> str:
    path = os.path.join(_SCRATCH.name, "rows.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"_meta": {"date": "2026-12-01"}, **rows}, fh)
    return path


def _binary_file() -> str:
    path = os.path.join(_SCRATCH.name, "prices.json")
    with open(path, "wb") as fh:
        fh.write(b"\xff\xfe\x00binary")
    return path


TEXT_CASES = [
    case(
        "pack(counter='gpt-4o')",
        lambda: ctxpack_pack([USER], budget=100, counter="gpt-4o"),
        ConfigError,
        "counter='gpt-4o' is a model's name, not an encoding's: pass model='gpt-4o'",
    ),
    case(
        "Session(counter='claude-sonnet-4-5')",
        lambda: Session(counter="claude-sonnet-4-5"),
        ConfigError,
        "counter='claude-sonnet-4-5' is a model's name",
    ),
    case("compress_lines(None)", lambda: compress_lines(None, max_lines=3), ConfigError, "text"),  # type: ignore[arg-type]
    case(
        "compress_lines(max_lines=1.5)",
        lambda: compress_lines(LINES, max_lines=1.5),  # type: ignore[arg-type]
        ConfigError,
        "max_lines",
    ),
    case(
        "compress_lines(query=5)",
        lambda: compress_lines(LINES, max_lines=3, query=5),  # type: ignore[arg-type]
        ConfigError,
        "query",
    ),
    case(
        "compress_lines(proper_nouns='x')",
        lambda: compress_lines(LINES, max_lines=3, proper_nouns="x"),  # type: ignore[arg-type]
        ConfigError,
        "proper_nouns",
    ),
    case("price(None)", lambda: price(None), ConfigError, "model"),  # type: ignore[arg-type]
    case("PriceTable.price(5)", lambda: shipped_prices().price(5), ConfigError, "model"),  # type: ignore[arg-type]
    case("PriceTable.merge({})", lambda: shipped_prices().merge({}), ConfigError, "PriceTable"),  # type: ignore[arg-type]
    case("PriceTable.load(None)", lambda: PriceTable.load(None), ConfigError, "path"),  # type: ignore[arg-type]
    case(
        "PriceTable.load(a binary file)",
        lambda: PriceTable.load(_binary_file()),
        ConfigError,
        "not a JSON text file",
    ),
    case(
        "PriceTable.load(a bad row)",
        lambda: PriceTable.load(_price_file({"m": {"input": "x"}})),
        ConfigError,
        "model 'm'",
        "input",
    ),
    case("encoding_for_model(None)", lambda: encoding_for_model(None), ConfigError, "model"),  # type: ignore[arg-type]
    case(
        "tool_definition_tokens(None)",
        lambda: tool_definition_tokens(None, get_counter("gpt-4")),  # type: ignore[arg-type]
        ConfigError,
        "tools",
    ),
    case(
        "tool_definition_tokens(counter='gpt-4')",
        lambda: tool_definition_tokens([TOOL], "gpt-4"),  # type: ignore[arg-type]
        ConfigError,
        "counter",
    ),
    case(
        "on_demand_saving(one dict)",
        lambda: on_demand_saving(TOOL, get_counter("gpt-4")),  # type: ignore[arg-type]
        ConfigError,
        "tools",
        "wrap a single tool",
    ),
    case("redact_message(None)", lambda: redact_message(None), InvalidMessageError, "message 0"),  # type: ignore[arg-type]
    # An int with more digits than Python writes: a bare ValueError from the JSON encoder
    # (from formatting the error itself, in simulate()); a NaN was counted by on_demand_saving().
    case(
        "tool_definition_tokens(an int too long to write)",
        lambda: tool_definition_tokens([LONG_INT_TOOL], get_counter("gpt-4")),
        ConfigError,
        "tools[0].function.parameters.maximum",
        "more digits than Python writes",
    ),
    case(
        "simulate(tools with an int too long to write)",
        lambda: simulate_bill(
            [{"messages": [USER], "tools": [LONG_INT_TOOL]}], price=price("gpt-4o")
        ),
        ConfigError,
        "request 0",
        "more digits than Python writes",
    ),
    case(
        "on_demand_saving(a NaN in a tool)",
        lambda: on_demand_saving([NAN_TOOL], get_counter("gpt-4")),
        ConfigError,
        "tools[0].function.parameters.maximum",
        "nan",
    ),
]

# ------------------------------------------------ a session store keeps strings, nothing else

STORES: list[Callable[[], Any]] = [SQLiteStore, MemoryStore]

STORE_CASES = [
    c
    for make in STORES
    for c in [
        case(
            f"{make.__name__}.append(entry=5)",  # type: ignore[attr-defined]
            lambda make=make: make().append("s1", 5, version=0, state="{}"),
            ConfigError,
            "entry",
        ),
        case(
            f"{make.__name__}.append(state=None)",  # type: ignore[attr-defined]
            lambda make=make: make().append("s1", "e", version=0, state=None),
            ConfigError,
            "state",
        ),
        case(
            f"{make.__name__}.append(artifacts={{'a': None}})",  # type: ignore[attr-defined]
            lambda make=make: make().append(
                "s1", "e", version=0, state="{}", artifacts={"a": None}
            ),
            ConfigError,
            "artifact 'a'",
        ),
        case(
            f"{make.__name__}.put_artifact(text=None)",  # type: ignore[attr-defined]
            lambda make=make: make().put_artifact("s1", "a1", None),
            ConfigError,
            "artifact 'a1'",
        ),
        case(
            f"{make.__name__}.get_artifact(['a'])",  # type: ignore[attr-defined]
            lambda make=make: make().get_artifact("s1", ["a"]),
            ConfigError,
            "artifact id",
        ),
        # A lone surrogate: SQLite (and the servers) failed with UnicodeEncodeError, the memory
        # store kept what no other store can.
        case(
            f"{make.__name__}.load('\\ud800')",  # type: ignore[attr-defined]
            lambda make=make: make().load("\ud800"),
            ConfigError,
            "session_id",
            "lone surrogate",
        ),
        case(
            f"{make.__name__}.append(entry='\\ud800')",  # type: ignore[attr-defined]
            lambda make=make: make().append("s1", "\ud800", version=0, state="{}"),
            ConfigError,
            "entry",
            "lone surrogate",
        ),
        case(
            f"{make.__name__}.put_artifact(text='\\ud800')",  # type: ignore[attr-defined]
            lambda make=make: make().put_artifact("s1", "a1", "x\ud800"),
            ConfigError,
            "artifact 'a1'",
            "lone surrogate",
        ),
        case(
            f"{make.__name__}.get_artifact('\\ud800')",  # type: ignore[attr-defined]
            lambda make=make: make().get_artifact("s1", "\ud800"),
            ConfigError,
            "artifact id",
            "lone surrogate",
        ),
    ]
]

# ------------------------------------------------------------------------- code retrieval


def _repo() -> str:
    """A one-file repository, and a secret file beside it (outside its root)."""
    root = os.path.join(_SCRATCH.name, "repo")
    if not os.path.isdir(root):
        os.makedirs(os.path.join(root, "pkg"))
        with open(os.path.join(root, "pkg", "a.py"), "w", encoding="utf-8") as fh:
            fh.write("def invoice_total(x):\n    return x + 1\n")
        with open(os.path.join(_SCRATCH.name, "secret.txt"), "w", encoding="utf-8") as fh:
            fh.write("password = hunter2\n")
    return root


def _index() -> CodeIndex:
    return CodeIndex(_repo(), db=":memory:")


CODE_CASES = [
    case("CodeIndex(None)", lambda: CodeIndex(None), ConfigError, "root", "NoneType"),  # type: ignore[arg-type]
    case(
        "CodeIndex(weights={'file': 'x'})",
        lambda: CodeIndex(_repo(), db=":memory:", weights={"file": "x"}),  # type: ignore[dict-item]
        ConfigError,
        "weights['file']",
    ),
    case("CodeIndex.search(None)", lambda: _index().search(None), ConfigError, "query"),  # type: ignore[arg-type]
    case("CodeIndex.search(k=1.5)", lambda: _index().search("x", k=1.5), ConfigError, "k"),  # type: ignore[arg-type]
    case(
        "CodeIndex.rank_files(exclude='pkg/a.py')",
        lambda: _index().rank_files("invoice", exclude="pkg/a.py"),
        ConfigError,
        "exclude",
    ),
    case(
        "CodeIndex.rank_files(boost={'x': 'y'})",
        lambda: _index().rank_files("invoice", boost={"x": "y"}),  # type: ignore[dict-item]
        ConfigError,
        "boost['x']",
    ),
    case(
        "CodeIndex.unit_scores(paths='pkg/a.py')",
        lambda: _index().unit_scores("invoice", "pkg/a.py"),
        ConfigError,
        "paths",
    ),
    case("CodeIndex.read(['a'])", lambda: _index().read(["a"]), ConfigError, "path"),  # type: ignore[arg-type]
    case(
        "CodeIndex.file_terms(not indexed)",
        lambda: _index().file_terms("nope.py"),
        ConfigError,
        "nope.py",
    ),
    case("CodeIndex.idf(5)", lambda: _index().idf(5), ConfigError, "term"),  # type: ignore[arg-type]
    case("grep(pattern=5)", lambda: grep(_repo(), 5), ConfigError, "pattern"),  # type: ignore[arg-type]
    case("grep(context=None)", lambda: grep(_repo(), "x", context=None), ConfigError, "context"),  # type: ignore[arg-type]
    case(
        "grep(paths='pkg/a.py')", lambda: grep(_repo(), "x", paths="pkg/a.py"), ConfigError, "paths"
    ),
    case(
        "grep(paths=['../secret.txt'])",
        lambda: grep(_repo(), "password", paths=["../secret.txt"], engine="python"),
        WorkspacePathError,
        "../secret.txt",
    ),
    case(
        "grep(paths=[absolute])",
        lambda: grep(
            _repo(), "password", paths=[os.path.join(_SCRATCH.name, "secret.txt")], engine="python"
        ),
        WorkspacePathError,
        "absolute",
    ),
    case(
        "iterative_retrieve(None)", lambda: iterative_retrieve(None, _index()), ConfigError, "task"
    ),  # type: ignore[arg-type]
    # An empty task or query matched nothing: an empty result, as if nothing were relevant.
    case(
        "iterative_retrieve('')",
        lambda: iterative_retrieve("", _index()),
        ConfigError,
        "task must be a non-empty string",
    ),
    case(
        "iterative_retrieve('   ')",
        lambda: iterative_retrieve("  \n ", _index()),
        ConfigError,
        "task must be a non-empty string",
    ),
    case(
        "decide_loading('')",
        lambda: decide_loading("", _index(), window=1000),
        ConfigError,
        "task must be a non-empty string",
    ),
    case(
        "CodeIndex.search('')",
        lambda: _index().search(""),
        ConfigError,
        "query must be a non-empty string",
    ),
    case(
        "CodeIndex.rank_files(' ')",
        lambda: _index().rank_files(" "),
        ConfigError,
        "query must be a non-empty string",
    ),
    case(
        "iterative_retrieve(max_cycles=None)",
        lambda: iterative_retrieve("fix", _index(), max_cycles=None),  # type: ignore[arg-type]
        ConfigError,
        "max_cycles",
    ),
    case(
        "iterative_retrieve(judge=5)",
        lambda: iterative_retrieve("fix", _index(), judge=5),  # type: ignore[arg-type]
        ConfigError,
        "judge",
    ),
    case(
        "iterative_retrieve(judge=lambda: [])",
        lambda: iterative_retrieve("fix", _index(), judge=lambda: []),  # type: ignore[arg-type,misc]
        ConfigError,
        "judge",
        "(task, candidates) -> judgements",
    ),
    case(
        "decide_loading(window=inf)",
        lambda: decide_loading("fix", _index(), window=math.inf),  # type: ignore[arg-type]
        ConfigError,
        "window",
    ),
    case(
        "decide_loading(share=None)",
        lambda: decide_loading("fix", _index(), window=1000, share=None),  # type: ignore[arg-type]
        ConfigError,
        "share",
    ),
    case(
        "decide_loading(whole_task='yes')",
        lambda: decide_loading("fix", _index(), window=1000, whole_task="yes"),  # type: ignore[arg-type]
        ConfigError,
        "whole_task",
    ),
    case(
        "parse_source(source=None)",
        lambda: parse_source("a.py", "python", None),
        ConfigError,
        "source",
    ),  # type: ignore[arg-type]
]

# ------------------------------------------------------------------------------ selection


def _workspace() -> Workspace:
    return Workspace([USER])


SELECTION_CASES = [
    case("Workspace(root=5)", lambda: Workspace([USER], 5), ConfigError, "root"),  # type: ignore[arg-type]
    case(
        "Workspace(search='grep')",
        lambda: Workspace([USER], search="grep"),  # type: ignore[arg-type]
        ConfigError,
        "search",
    ),
    # A string is an iterable of characters: each would have become a note.
    case(
        "Workspace.add_notes('a note')",
        lambda: _workspace().add_notes("a note"),
        ConfigError,
        "notes",
    ),
    case(
        "Workspace.forget_note(None)", lambda: _workspace().forget_note(None), ConfigError, "note"
    ),  # type: ignore[arg-type]
    case(
        "Workspace.from_session([])",
        lambda: Workspace.from_session([]),  # type: ignore[arg-type]
        ConfigError,
        "session",
    ),
    case("selection_prompt([], goal)", lambda: selection_prompt([], "g"), ConfigError, "workspace"),  # type: ignore[arg-type]
    case(
        "selection_prompt(goal=None)",
        lambda: selection_prompt(_workspace(), None),
        ConfigError,
        "goal",
    ),  # type: ignore[arg-type]
    case(
        "selection_prompt(preview_chars=None)",
        lambda: selection_prompt(_workspace(), "g", preview_chars=None),  # type: ignore[arg-type]
        ConfigError,
        "preview_chars",
    ),
    case(
        "LexicalSelector()(ws, None)",
        lambda: LexicalSelector()(_workspace(), None),
        ConfigError,
        "goal",
    ),  # type: ignore[arg-type]
    case(
        "LexicalSelector()(None, goal)",
        lambda: LexicalSelector()(None, "g"),  # type: ignore[arg-type]
        ConfigError,
        "workspace",
    ),
    case(
        "ModelSelector(request_options=5)",
        lambda: ModelSelector(object(), model="m", provider="openai", request_options=5),  # type: ignore[arg-type]
        ConfigError,
        "request_options",
    ),
]

# ----------------------------------------------------------------- filters and originals

LOG = "\n".join(f"tests/test_{i}.py::test_ok PASSED" for i in range(200))

FILTER_CASES = [
    case(
        "ToolOutputFilter(min_saving=None)",
        lambda: ToolOutputFilter(min_saving=None),  # type: ignore[arg-type]
        ConfigError,
        "min_saving",
    ),
    case(
        "ToolOutputFilter(retrievable='no')",
        lambda: ToolOutputFilter(retrievable="no"),  # type: ignore[arg-type]
        ConfigError,
        "retrievable",
    ),
    case(
        "ToolOutputFilter()(tool=5)", lambda: ToolOutputFilter()(LOG, tool=5), ConfigError, "tool"
    ),  # type: ignore[arg-type]
    case(
        "ToolOutputFilter()(command=['pytest'])",
        lambda: ToolOutputFilter()(LOG, command=["pytest"]),  # type: ignore[arg-type]
        ConfigError,
        "command",
    ),
    case(
        "ToolOutputFilter()(store='db')",
        lambda: ToolOutputFilter()(LOG, store="db"),  # type: ignore[arg-type]
        ConfigError,
        "store",
        "ArtifactStore",
    ),
    case(
        "ToolOutputFilter.detect(text)",
        lambda: ToolOutputFilter().detect(LOG),
        ConfigError,
        "ToolOutput",
    ),  # type: ignore[arg-type]
    case(
        "read_artifact(store={})",
        lambda: read_artifact({}, "art_x"),  # type: ignore[arg-type]
        ConfigError,
        "store",
    ),
    case(
        "handle_retrieve_call(call=None)",
        lambda: handle_retrieve_call(SQLiteArtifactStore(), None),  # type: ignore[arg-type]
        ConfigError,
        "call",
    ),
    case(
        "handle_retrieve_call(store=None)",
        lambda: handle_retrieve_call(None, {"artifact": "art_x"}),  # type: ignore[arg-type]
        ConfigError,
        "store",
    ),
]

# ----------------------------------------------------------------------------- the rest


def _result() -> Any:
    return ctxpack_pack(MESSAGES, budget=1000)


def _economics(**change: Any) -> object:
    gpt = price("gpt-4o")
    options: dict[str, Any] = {
        "large": gpt,
        "small": gpt,
        "raw_input": 1000,
        "filtered_input": 100,
        "large_output": 10,
        "small_output": 10,
    }
    return filtering_economics(**{**options, **change})


OTHER_CASES = [
    case("PackResult.tokens_of(dict)", lambda: _result().tokens_of(USER), ConfigError, "message"),
    case("PackResult.original([])", lambda: _result().original([]), ConfigError, "message_id"),
    # Given a Message rather than its id, it answered [] as for a message nobody decided about.
    case(
        "PackResult.decisions_for(Message)",
        lambda: _result().decisions_for(_result().messages[0]),  # type: ignore[arg-type]
        ConfigError,
        "message_id",
    ),
    case(
        "validate_openai(tool_pairing='no')",
        lambda: validate_openai([USER], tool_pairing="no"),  # type: ignore[arg-type]
        ConfigError,
        "tool_pairing",
    ),
    case(
        "validate_anthropic(tool_pairing=None)",
        lambda: validate_anthropic([USER], tool_pairing=None),  # type: ignore[arg-type]
        ConfigError,
        "tool_pairing",
    ),
    case(
        "ensure_messages(check=5)", lambda: ensure_messages([USER], check=5), ConfigError, "check"
    ),  # type: ignore[arg-type]
    case("signal_from(None)", lambda: signal_from(None), ConfigError, "options"),  # type: ignore[arg-type]
    case("check_stage(5)", lambda: check_stage(5), ConfigError, "stage"),  # type: ignore[arg-type]
    case(
        "check_stage(examples=5)",
        lambda: check_stage(TurnAlternator(), examples=5),  # type: ignore[arg-type]
        ConfigError,
        "examples",
    ),
    case("filtering_economics(small=None)", lambda: _economics(small=None), ConfigError, "small"),
    case(
        "filtering_economics(raw_input=nan)",
        lambda: _economics(raw_input=math.nan),
        ConfigError,
        "raw_input",
    ),
    case("calibrate(None, None)", lambda: calibrate(None, None), ConfigError, "requests"),  # type: ignore[arg-type]
    case(
        "calibrate(coverage=None)",
        lambda: calibrate(
            [{"messages": [USER]}],
            [{"input_tokens": 5}],
            coverage=None,  # type: ignore[arg-type]
        ),
        ConfigError,
        "coverage",
    ),
]

# ------------------------------------------------------------------- wrapped clients


class _Completions:
    def create(self, **kwargs: Any) -> dict[str, Any]:
        return {"choices": [{"message": {"role": "assistant", "content": "ok"}}], "sent": kwargs}


class _OpenAIClient:
    def __init__(self) -> None:
        self.chat = type("Chat", (), {"completions": _Completions()})()


def _create(**kwargs: Any) -> Any:
    packed = wrap_openai(_OpenAIClient(), window=8_000, model="gpt-4")
    return packed.chat.completions.create(model="gpt-4", **kwargs)


CLIENT_CASES = [
    case("wrap_openai(None)", lambda: wrap_openai(None, window=8_000), ConfigError, "client"),
    case(
        "wrap_anthropic(an OpenAI client)",
        lambda: wrap_anthropic(_OpenAIClient(), window=8_000, counter="cl100k_base"),
        ConfigError,
        "client",
        "messages",
    ),
    case("create(messages=5)", lambda: _create(messages=5), InvalidMessageError, "messages"),
    case("create(messages=None)", lambda: _create(messages=None), InvalidMessageError, "messages"),
    case("create() without messages", lambda: _create(), InvalidMessageError, "messages"),
    case(
        "wrap_openai(session='x')",
        lambda: wrap_openai(_OpenAIClient(), session="x"),  # type: ignore[arg-type]
        ConfigError,
        "session",
        "Session",
    ),
    case(
        "wrap_openai(budget > window)",
        lambda: wrap_openai(_OpenAIClient(), window=1_000, budget=5_000),
        ConfigError,
        "budget (5000)",
        "window (1000)",
    ),
    case(
        "PackingMiddleware(budget > window)",
        lambda: PackingMiddleware(window=1_000, budget=5_000),
        ConfigError,
        "budget (5000)",
        "window (1000)",
    ),
    case("create(tools=5)", lambda: _create(messages=[USER], tools=5), ConfigError, "tools"),
    case(
        "create(tools=[parameters a str])",
        lambda: _create(
            messages=[USER],
            tools=[{"type": "function", "function": {"name": "f", "parameters": "x"}}],
        ),
        ConfigError,
        "tools[0].function.parameters",
        "JSON Schema object",
    ),
    case(
        "PackingMiddleware(provider='google')",
        lambda: PackingMiddleware(window=8_000, provider="google"),  # type: ignore[arg-type]
        ConfigError,
        "provider",
    ),
    case(
        "PackingMiddleware(pipeline=5)",
        lambda: PackingMiddleware(window=8_000, pipeline=5),  # type: ignore[arg-type]
        ConfigError,
        "pipeline",
    ),
    case(
        "PackingMiddleware.pack_request(None)",
        lambda: PackingMiddleware(window=8_000).pack_request(None),  # type: ignore[arg-type]
        ConfigError,
        "ModelRequest",
    ),
]

# ----------------------------------------------------------------- counters, caches, tools

SMALL_CASES = [
    case(
        "MemorySelector(3)",
        lambda: MemorySelector(3),  # type: ignore[misc]
        ConfigError,
        "MemorySelector takes keyword arguments only",
        "window",
    ),
    case("CodeIndex('')", lambda: CodeIndex(""), ConfigError, "root is empty"),
    case(
        "count_tokens(counter=predicate)",
        lambda: count_tokens([USER], counter=lambda text: True),
        ConfigError,
        "returned True",
    ),
    # A counter of the wrong arity failed with a bare TypeError at its first count, and one
    # returning an int past 2**53 with an OverflowError inside a stage.
    case(
        "pack(counter=lambda: 1)",
        lambda: ctxpack_pack([USER], budget=100, counter=lambda: 1),  # type: ignore[arg-type,misc]
        ConfigError,
        "counter",
        "text -> int",
    ),
    case(
        "Session(counter=lambda a, b: 1).render()",
        lambda: Session(counter=lambda a, b: 1).render(100),  # type: ignore[arg-type,misc]
        ConfigError,
        "counter",
        "text -> int",
    ),
    case(
        "pack(counter returning 10**30)",
        lambda: ctxpack_pack([USER], budget=100, counter=lambda text: 10**30),
        ConfigError,
        "token counter",
        "up to 2**53",
    ),
    # Ints too large for a float: refused by name, not an OverflowError from deep inside.
    case(
        "pack(budget=10**400)", lambda: ctxpack_pack([USER], budget=10**400), ConfigError, "budget"
    ),
    case("Session(window=10**400)", lambda: Session(window=10**400), ConfigError, "window"),
    case(
        "simulate(timestamps=[10**400])",
        lambda: simulate_bill([[USER]], price=price("gpt-4o"), timestamps=[10**400]),
        ConfigError,
        "timestamps[0]",
    ),
    case(
        "decide_loading(window=10**400)",
        lambda: decide_loading("Fix the crash", ".", window=10**400),
        ConfigError,
        "window",
    ),
    case(
        "decide_loading(share=10**400)",
        lambda: decide_loading("Fix the crash", ".", window=1000, share=10**400),
        ConfigError,
        "share",
        "finite number",
    ),
    # Ints with more digits than Python writes as text: named by their size, not a ValueError
    # from the repr() that quoted them in the message.
    case(
        "pack(budget=10**5000)",
        lambda: ctxpack_pack([USER], budget=10**5000),
        ConfigError,
        "budget",
        "an int of 16610 bits",
    ),
    case(
        "pack(reserve=10**5000)",
        lambda: ctxpack_pack([USER], budget=100, reserve=10**5000),
        ConfigError,
        "reserve",
    ),
    case(
        "pack(redact_secrets=10**5000)",
        lambda: ctxpack_pack([USER], budget=100, redact_secrets=10**5000),  # type: ignore[arg-type]
        ConfigError,
        "redact_secrets",
    ),
    case(
        "pack(provider=10**5000)",
        lambda: ctxpack_pack([USER], budget=100, provider=10**5000),  # type: ignore[arg-type]
        ConfigError,
        "provider",
    ),
    case(
        "pack(role=10**5000)",
        lambda: ctxpack_pack([{"role": 10**5000, "content": "hi"}], budget=100),
        InvalidMessageError,
        "message 0",
        "role",
    ),
    case(
        "ensure_messages(role=10**5000)",
        lambda: ensure_messages([{"role": 10**5000, "content": "hi"}]),
        InvalidMessageError,
        "message 0",
        "role an int of 16610 bits",
    ),
    case(
        "Session(filter_when=10**5000)",
        lambda: Session(filter_when=10**5000),  # type: ignore[arg-type]
        ConfigError,
        "filter_when",
    ),
    case(
        "Session(store_secrets=[10**5000])",
        lambda: Session(store_secrets=[10**5000]),  # type: ignore[arg-type]
        ConfigError,
        "store_secrets",
        "a list holding an int too long",
    ),
    case(
        "Session.render(budget=10**5000)",
        lambda: _session().render(10**5000),
        ConfigError,
        "budget",
    ),
    case(
        "simulate(ttl=10**5000)",
        lambda: simulate_bill([[USER]], price=price("gpt-4o"), ttl=10**5000),  # type: ignore[arg-type]
        ConfigError,
        "ttl",
    ),
    case(
        "wrap_openai(budget=10**5000)",
        lambda: wrap_openai(_fake_client(), budget=10**5000),
        ConfigError,
        "budget",
    ),
    case("SQLiteStore(ttl=10**5000)", lambda: SQLiteStore(ttl=10**5000), ConfigError, "ttl"),
    case(
        "MemoryStore().load(10**5000)",
        lambda: MemoryStore().load(10**5000),  # type: ignore[arg-type]
        ConfigError,
        "session_id",
    ),
    case(
        "grep(engine=10**5000)",
        lambda: grep(".", "x", engine=10**5000),  # type: ignore[arg-type]
        ConfigError,
        "engine",
    ),
    case(
        "anthropic_approx_counter(nan)",
        lambda: anthropic_approx_counter(math.nan),
        ConfigError,
        "factor",
    ),
    case(
        "anthropic_approx_counter(inf)",
        lambda: anthropic_approx_counter(math.inf),
        ConfigError,
        "factor",
    ),
    case(
        "CharsPerTokenApproxCounter(-10**5000)",
        lambda: CharsPerTokenApproxCounter(-(10**5000)),
        ConfigError,
        "chars_per_token",
    ),
    case(
        "CharsPerTokenApproxCounter(safety_margin=10**5000)",
        lambda: CharsPerTokenApproxCounter(safety_margin=10**5000),
        ConfigError,
        "safety_margin",
    ),
    case(
        "anthropic_approx_counter(-10**5000)",
        lambda: anthropic_approx_counter(-(10**5000)),
        ConfigError,
        "factor",
    ),
    case("memoize(maxsize='x')", lambda: memoize(maxsize="x", maxbytes=10), ConfigError, "maxsize"),  # type: ignore[arg-type]
    case(
        "memoize(skip=5)",
        lambda: memoize(maxsize=10, maxbytes=10, skip=5),  # type: ignore[arg-type]
        ConfigError,
        "skip",
    ),
    case(
        "tool_definition(name=None)",
        lambda: tool_definition(None, "d", {}, "openai"),  # type: ignore[arg-type]
        ConfigError,
        "name",
    ),
    case(
        "tool_definition(provider='google')",
        lambda: tool_definition("n", "d", {}, "google"),  # type: ignore[arg-type]
        ConfigError,
        "provider",
    ),
    case("SQLiteStore(timeout=nan)", lambda: SQLiteStore(timeout=math.nan), ConfigError, "timeout"),
    case(
        "open_store(ttl=10**400)", lambda: open_store("memory://", ttl=10**400), ConfigError, "ttl"
    ),
    case(
        "open_store(sqlite timeout='x')",
        lambda: open_store("sqlite://", timeout="x"),
        ConfigError,
        "timeout",
    ),
    case(
        "open_store(postgres timeout=None)",
        lambda: open_store("postgresql://nohost", timeout=None),
        ConfigError,
        "timeout",
    ),
    case(
        "open_store(postgres timeout=inf)",
        lambda: open_store("postgresql://nohost", timeout=math.inf),
        ConfigError,
        "timeout",
    ),
    case(
        "open_store(redis timeout='x')",
        lambda: open_store("redis://nohost.invalid", timeout="x"),
        ConfigError,
        "timeout",
    ),
    case(
        "open_async_store(postgres timeout=None)",
        lambda: open_async_store("postgresql://nohost", timeout=None),
        ConfigError,
        "timeout",
    ),
    case(
        "open_store(postgres pool_size=2.5)",
        lambda: open_store("postgresql://nohost?pool_size=2.5"),
        ConfigError,
        "pool_size",
    ),
    case(
        "open_store(sqlite URL option misspelt)",
        lambda: open_store("sqlite://?timout=30"),
        ConfigError,
        "timout",
    ),
    case(
        "open_store(memory URL option misspelt)",
        lambda: open_store("memory://?tll=30"),
        ConfigError,
        "tll",
    ),
    case(
        "open_store(read_only=maybe)",
        lambda: open_store("sqlite://?read_only=maybe"),
        ConfigError,
        "read_only",
    ),
    case(
        "SQLiteArtifactStore(read_only='no')",
        lambda: SQLiteArtifactStore(read_only="no"),  # type: ignore[arg-type]
        ConfigError,
        "read_only",
    ),
]

# ------------------------------------------------------ editing, filters' helpers, the guard

HISTORY = [Message(role="user", content="Where is the invoice?")]
OUTPUT = ToolOutput("\n".join(f"line {i}" for i in range(50)))

HELPER_CASES = [
    case(
        "ToolResultClearer.batches(dicts)",
        lambda: ToolResultClearer().batches([USER], counter=get_counter("gpt-4")),
        InvalidMessageError,
        "message 0",
    ),
    case(
        "ToolResultClearer.batches(counter='gpt-4')",
        lambda: ToolResultClearer().batches(HISTORY, counter="gpt-4"),  # type: ignore[arg-type]
        ConfigError,
        "counter",
    ),
    case(
        "Compactor.points(protected=None)",
        lambda: Compactor().points(HISTORY, counter=get_counter("gpt-4"), protected=None),  # type: ignore[arg-type]
        ConfigError,
        "protected",
    ),
    # A negative index would have kept a line counted from the end.
    case("assemble(keep=[-1])", lambda: assemble(OUTPUT, [-1]), ConfigError, "keep", "-1"),
    case("assemble(keep=[50])", lambda: assemble(OUTPUT, [50]), ConfigError, "keep", "50"),
    case("assemble(text)", lambda: assemble("text", [1]), ConfigError, "ToolOutput"),  # type: ignore[arg-type]
    case(
        "assemble(notes={1: 5})",
        lambda: assemble(OUTPUT, [1], notes={1: 5}),  # type: ignore[dict-item]
        ConfigError,
        "notes",
    ),
    case("redact(findings='x')", lambda: redact("text", findings="x"), ConfigError, "findings"),  # type: ignore[arg-type]
    case(
        "ArrivalGuard()(dict)",
        lambda: ArrivalGuard()(USER, get_counter("gpt-4"), SQLiteArtifactStore()),  # type: ignore[arg-type]
        ConfigError,
        "Message",
    ),
    case(
        "Workspace.resolve_path(5)",
        lambda: Workspace([USER], _repo()).resolve_path(5),  # type: ignore[arg-type]
        ConfigError,
        "path",
    ),
]

# ------------------------------------------------------------------------------ embeddings

EMBEDDING_CASES = [
    case(
        "semantic_pipeline(embedder=5)",
        lambda: semantic_pipeline(5),
        ConfigError,
        "embedder",
    ),
    case(
        "MiniLMEmbedder(max_length=0)",
        lambda: MiniLMEmbedder(max_length=0),
        ConfigError,
        "max_length",
    ),
    case(
        "MiniLMEmbedder(batch_size=None)",
        lambda: MiniLMEmbedder(batch_size=None),  # type: ignore[arg-type]
        ConfigError,
        "batch_size",
    ),
    # Each character would have been embedded on its own.
    case("MiniLMEmbedder()('text')", lambda: MiniLMEmbedder()("text"), ConfigError, "texts"),
]

# ---------------------------------------------------------------------------------- plots


def _bill() -> Any:
    return simulate_bill([MESSAGES], price=price("gpt-4o"))


PLOT_CASES = [
    case("plot_bills(a bill)", lambda: plot_bills(_bill()), ConfigError, "bills", "name it"),
    case("plot_bills({'a': 5})", lambda: plot_bills({"a": 5}), ConfigError, "bills['a']"),  # type: ignore[dict-item]
    case("plot_bills(ax=5)", lambda: plot_bills({"a": _bill()}, ax=5), ConfigError, "ax"),  # type: ignore[arg-type]
    case(
        "plot_context_usage(messages)",
        lambda: plot_context_usage(MESSAGES),  # type: ignore[arg-type]
        ConfigError,
        "ContextUsage",
    ),
]

# ------------------------------------------------ helpers and options an audit found unchecked


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def _stored_artifact() -> tuple[SQLiteArtifactStore, str]:
    store = SQLiteArtifactStore()
    return store, store.put("line 1\nline 2\n")


UNCHECKED_CASES = [
    # Past 2**53, as every other int option is refused.
    case(
        "Session(supersede_batch=10**100)",
        lambda: Session(supersede_batch=10**100),
        ConfigError,
        "supersede_batch",
        "2**53",
    ),
    # A definition the provider refuses was built and handed back for the request.
    case(
        "tool_definition(name='')",
        lambda: tool_definition("", "Search.", {"type": "object"}, "openai"),
        ConfigError,
        "name",
    ),
    case(
        "tool_definition(schema='x')",
        lambda: tool_definition("grep", "Search.", "x", "openai"),
        ConfigError,
        "parameters",
        "JSON Schema object",
    ),
    case(
        "tool_definition(schema={1, 2}, anthropic)",
        lambda: tool_definition("grep", "Search.", {1, 2}, "anthropic"),
        ConfigError,
        "input_schema",
    ),
    # AttributeError ('int' object has no attribute 'lower') and TypeError from inside.
    case(
        "detect_provider(model=5)",
        lambda: detect_provider(None, 5, []),  # type: ignore[arg-type]
        ConfigError,
        "model",
    ),
    case(
        "detect_provider(messages=None)",
        lambda: detect_provider(None, None, None),  # type: ignore[arg-type]
        ConfigError,
        "messages",
    ),
    case(
        "detect_provider(messages=[dict])",
        lambda: detect_provider(None, None, [USER]),  # type: ignore[list-item]
        ConfigError,
        "messages[0]",
        "Message",
    ),
    # A bare TypeError, where count() of the same text raises the ConfigError.
    case("find_secrets(None)", lambda: find_secrets(None), ConfigError, "text"),  # type: ignore[arg-type]
    case("redact(5)", lambda: redact(5), ConfigError, "text"),  # type: ignore[arg-type]
    case("find_injections(b'x')", lambda: find_injections(b"x"), ConfigError, "text"),  # type: ignore[arg-type]
    case(
        "SQLiteArtifactStore.put(bytes)",
        lambda: SQLiteArtifactStore().put(b"raw"),  # type: ignore[arg-type]
        ConfigError,
        "text",
        "bytes",
    ),
    case(
        "Session.open(...).store.put(bytes)",
        lambda: Session.open("s1", store="memory://").store.put(b"raw"),  # type: ignore[arg-type]
        ConfigError,
        "text",
        "bytes",
    ),
    # None passed the check (taken for "no wrong item"); a list was hashed: TypeErrors.
    case(
        "assemble(keep=[1, None])",
        lambda: assemble(OUTPUT, [1, None]),  # type: ignore[list-item]
        ConfigError,
        "keep",
        "None",
    ),
    case("assemble(keep=[[1]])", lambda: assemble(OUTPUT, [[1]]), ConfigError, "keep", "[1]"),  # type: ignore[list-item]
    # A truthy string or None was read as a yes or a no.
    case(
        "grep(regex='no')",
        lambda: grep(_repo(), "invoice", regex="no"),  # type: ignore[arg-type]
        ConfigError,
        "regex",
    ),
    case(
        "grep(ignore_case=None)",
        lambda: grep(_repo(), "invoice", ignore_case=None),  # type: ignore[arg-type]
        ConfigError,
        "ignore_case",
    ),
    case(
        "read_artifact(redact_secrets='no')",
        lambda: read_artifact(*_stored_artifact(), redact_secrets="no"),  # type: ignore[arg-type]
        ConfigError,
        "redact_secrets",
    ),
    # Read as a no: the model was answered with the artifact's secrets.
    case(
        "handle_retrieve_call(redact_secrets=None)",
        lambda: handle_retrieve_call(
            _stored_artifact()[0],
            {"id": "c1", "function": {"name": "retrieve_original", "arguments": "{}"}},
            redact_secrets=None,  # type: ignore[arg-type]
        ),
        ConfigError,
        "redact_secrets",
    ),
    # Said "(tokens)" of a count of blocks.
    case(
        "simulate(lookback=0)",
        lambda: simulate_bill([[USER]], price=price("gpt-4o"), lookback=0),
        ConfigError,
        "lookback",
        "blocks",
    ),
    # Python's ValueError about digits, writing the number into the error.
    case(
        "create(max_tokens=10**5000)",
        lambda: _create(messages=[USER], max_tokens=10**5000),
        ConfigError,
        "max_tokens",
    ),
    # Taken, then repr() of the filter failed.
    case(
        "ToolOutputFilter(min_chars=10**5000)",
        lambda: ToolOutputFilter(min_chars=10**5000),
        ConfigError,
        "min_chars",
    ),
    # A RecursionError from showing the value in the error.
    case(
        "pack(redact_secrets=nested)",
        lambda: ctxpack_pack(MESSAGES, budget=100, redact_secrets=_nested(5000)),
        ConfigError,
        "redact_secrets",
    ),
]

ALL_CASES: list[Case] = [
    *FINITE_CASES,
    *FLAG_CASES,
    *MODEL_CASES,
    *STAGE_CASES,
    *SESSION_CASES,
    *TEXT_CASES,
    *STORE_CASES,
    *CODE_CASES,
    *SELECTION_CASES,
    *FILTER_CASES,
    *OTHER_CASES,
    *CLIENT_CASES,
    *SMALL_CASES,
    *HELPER_CASES,
    *EMBEDDING_CASES,
    *PLOT_CASES,
    *UNCHECKED_CASES,
]


# ------------------------------------------------ arguments an entry point does not take


def _fake_client() -> Any:
    return object()


ARGUMENT_CASES = [
    case(
        "Session(windw=)",
        lambda: Session(windw=64_000),  # type: ignore[call-arg]
        TypeError,
        "Session()",
        "'windw'",
        "did you mean 'window'?",
        "flag_injections",
    ),
    case(
        "session.render(bugdet=)",
        lambda: _session().render(bugdet=4000),  # type: ignore[call-arg]
        TypeError,
        "Session.render()",
        "did you mean 'budget'?",
    ),
    case(
        "session.render(4000, 100)",
        lambda: _session().render(4000, 100),  # type: ignore[misc]
        TypeError,
        "Session.render() takes budget by position",
        "reserve=",
    ),
    case(
        "session.pin(text) without a name",
        lambda: _session().pin("x"),  # type: ignore[call-arg]
        TypeError,
        "Session.pin()",
        "'name'",
    ),
    case(
        "session.pin(bytes)",
        lambda: _session().pin(b"rules", name="m"),  # type: ignore[arg-type]
        ConfigError,
        "pin(): text=",
    ),
    case(
        "session.pin(lone surrogate)",
        lambda: _session().pin("\ud800", name="m"),
        ConfigError,
        "pin(): text=",
        "lone surrogate",
    ),
    case(
        "count_tokens(lone surrogate)",
        lambda: count_tokens("\ud800", model="gpt-4"),
        InvalidMessageError,
        "messages_or_text",
        "lone surrogate",
    ),
    case(
        "session.retrieve(linez=)",
        lambda: _session().retrieve("art_0", linez="1-3"),  # type: ignore[call-arg]
        TypeError,
        "did you mean 'lines'?",
    ),
    case(
        "Session.open(store=) without an id",
        lambda: Session.open(store="memory://"),  # type: ignore[call-arg]
        TypeError,
        "Session.open()",
        "'session_id'",
    ),
    case(
        "Session(64000)",
        lambda: Session(64_000),  # type: ignore[misc]
        TypeError,
        "keyword arguments only",
        "window=",
    ),
    case(
        "pack(messages, 100)",
        lambda: ctxpack_pack(MESSAGES, 100),  # type: ignore[misc]
        TypeError,
        "pack() takes messages by position",
        "budget=",
    ),
    case(
        "pack()",
        lambda: ctxpack_pack(),  # type: ignore[call-arg]
        TypeError,
        "pack()",
        "'messages'",
    ),
    case(
        "pack(modle=, zzz=)",
        lambda: ctxpack_pack(MESSAGES, budget=100, modle="gpt-4", zzz=1),  # type: ignore[call-arg]
        TypeError,
        "no arguments 'modle' (did you mean 'model'?), 'zzz'",
    ),
    case(
        "wrap_openai(windw=)",
        lambda: wrap_openai(_fake_client(), windw=8000),  # type: ignore[call-arg]
        TypeError,
        "wrap_openai()",
        "did you mean 'window'?",
    ),
    case(
        "wrap_anthropic(sesion=)",
        lambda: wrap_anthropic(_fake_client(), sesion=1),  # type: ignore[call-arg]
        TypeError,
        "did you mean 'session'?",
    ),
    case(
        "count_tokens(modle=)",
        lambda: count_tokens(MESSAGES, modle="gpt-4"),  # type: ignore[call-arg]
        TypeError,
        "count_tokens()",
        "'model'",
    ),
    case(
        "CodeIndex(dbb=)",
        lambda: CodeIndex(".", dbb=":memory:"),  # type: ignore[call-arg]
        TypeError,
        "CodeIndex()",
        "'db'",
    ),
    case(
        "iterative_retrieve(max_cycle=)",
        lambda: iterative_retrieve("t", ".", max_cycle=2),  # type: ignore[call-arg]
        TypeError,
        "iterative_retrieve()",
        "'max_cycles'",
    ),
    case(
        "simulate(prise=)",
        lambda: simulate_bill([], prise=1),  # type: ignore[call-arg]
        TypeError,
        "simulate()",
        "'price'",
    ),
    case(
        "PackingMiddleware(windw=)",
        lambda: PackingMiddleware(windw=1),  # type: ignore[call-arg]
        TypeError,
        "PackingMiddleware()",
        "'window'",
    ),
]

ALL_CASES += ARGUMENT_CASES


def test_a_type_error_inside_an_entry_point_is_not_taken_for_a_bad_argument() -> None:
    """Arguments that bind are not blamed: the function's own TypeError goes through as it was."""

    def counter(text: str) -> int:
        raise TypeError("the caller's own bug")

    with pytest.raises(TypeError, match="the caller's own bug") as info:
        count_tokens("some text", counter=counter)
    assert not isinstance(info.value, CtxpackError)


def test_text_of_another_type_is_still_the_type_error_it_was() -> None:
    """Refused as ctxpack's error, and still caught by ``except TypeError`` as before."""
    for call in (
        lambda: find_secrets(b"x"),  # type: ignore[arg-type]
        lambda: redact(None),  # type: ignore[arg-type]
        lambda: find_injections(5),  # type: ignore[arg-type]
        lambda: SQLiteArtifactStore().put(b"raw"),  # type: ignore[arg-type]
    ):
        with pytest.raises(TypeError) as info:
            call()
        assert isinstance(info.value, ConfigError)


def test_a_good_call_of_a_checked_entry_point_is_unchanged() -> None:
    import inspect

    assert "window" in inspect.signature(Session).parameters
    assert (
        ctxpack_pack(MESSAGES, budget=100).kept_ids == ctxpack_pack(MESSAGES, budget=100).kept_ids
    )


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


def test_an_int_is_still_a_float_option_and_none_an_optional_one() -> None:
    assert GreedyPacker(recency_weight=2).recency_weight == 2.0
    assert CitationInheritor(max_distance=None).max_distance is None
    assert Deduplicator(case_sensitive=True).case_sensitive is True


def test_finite_options_are_still_accepted() -> None:
    assert Neighbors(share=0.0).share == 0.0
    assert GreedyPacker(role_weights={"user": 1e9}).role_weights["user"] == 1e9


@pytest.mark.parametrize("make", STORES, ids=lambda m: m.__name__)
def test_a_refused_append_leaves_the_store_unchanged(make: Callable[[], Any]) -> None:
    store = make()
    store.append("s1", "first", version=0, state="{}")
    with pytest.raises(ConfigError):
        store.append("s1", None, version=1, state="{}")
    assert store.load("s1").entries == ("first",)
    store.append("s1", "second", version=1, state="{}", artifacts={"a1": "text"})
    assert store.load("s1").entries == ("first", "second")
    assert store.get_artifact("s1", "a1") == "text"


def test_redact_message_takes_an_openai_dict() -> None:
    token = "ghp_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"
    cleaned, found = redact_message({"role": "tool", "tool_call_id": "c1", "content": token})
    assert isinstance(cleaned, Message)
    assert cleaned.content == "[REDACTED github-pat]" and len(found) == 1


def test_on_demand_saving_reads_a_generator_once() -> None:
    tools = [
        {
            "type": "function",
            "function": {"name": f"t{i}", "description": "Do it. " * 50, "parameters": {}},
        }
        for i in range(3)
    ]
    counter = get_counter("gpt-4")
    assert on_demand_saving(iter(tools), counter) == on_demand_saving(tools, counter) > 0


def test_grep_still_searches_the_relative_paths_it_is_given() -> None:
    hits = grep(_repo(), "invoice", paths=["pkg/a.py"], engine="python")
    assert [(h.path, h.line) for h in hits] == [("pkg/a.py", 1)]


def test_the_model_s_bad_arguments_are_still_answered_in_words() -> None:
    store = SQLiteArtifactStore()
    assert handle_retrieve_call(store, {"artifact": "art_0"}).startswith("error:")
    assert handle_retrieve_call(store, "not json").startswith("error:")


def test_a_wrapped_client_still_packs_a_tuple_of_messages() -> None:
    sent = _create(messages=(USER,))["sent"]
    assert sent["messages"] == [USER]


def test_assemble_still_takes_numpy_indices() -> None:
    import numpy as np

    assert assemble(OUTPUT, [np.int64(10)]) == assemble(OUTPUT, [10])


def test_an_error_names_a_huge_value_without_carrying_it_whole() -> None:
    # The model writes a tool call's name: a hundred thousand characters of it are not echoed.
    call = {"id": "c1", "type": "function", "function": {"name": "x" * 100_000, "arguments": "{}"}}
    with pytest.raises(ConfigError) as info:
        Session().handle(call)
    assert "this call is to 'xxx" in str(info.value)
    assert "(100,002 characters)" in str(info.value) and len(str(info.value)) < 1_000
    with pytest.raises(ConfigError) as info:
        ctxpack_pack([{"role": "user", "content": "hi"}], budget=100, reserve="r" * 100_000)  # type: ignore[arg-type]
    assert "reserve" in str(info.value) and len(str(info.value)) < 1_000


@pytest.mark.parametrize(
    ("build", "option"),
    [
        (lambda n: MemorySelector(window=n), "window"),
        (lambda n: Neighbors(distance=n), "distance"),
        (lambda n: ToolResultClearer(keep=n), "keep"),
        (lambda n: Compactor(keep_recent=n), "keep_recent"),
        (lambda n: WindowPolicy(window=64_000, keep=n), "keep"),
        (lambda n: Workspace([USER], max_matches=n), "max_matches"),
        (lambda n: Workspace([USER], match_context=n), "match_context"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
@pytest.mark.parametrize("n", [2**53 + 1, 10**100, 10**5000], ids=["2**53+1", "1e100", "1e5000"])
def test_an_int_option_is_bounded_as_budgets_are(
    build: Callable[[int], object], option: str, n: int
) -> None:
    # A stage's int option took any size: 10**100 was kept, and 10**5000 made the stage's
    # repr() raise ValueError, as it did every decision and error quoting it.
    with pytest.raises(ConfigError, match=rf"{option}.*2\*\*53"):
        build(n)
    assert f"{option}=9007199254740992" in repr(build(2**53)) or isinstance(build(2**53), Workspace)


@pytest.mark.parametrize(
    ("value", "shown"),
    [(10**5000, "<an int too long to show>"), ([10**5000], "<a list too long to show>")],
    ids=["int", "list"],
)
def test_a_value_too_long_to_show_is_named_by_its_type(value: object, shown: str) -> None:
    # The error read "<a int too long to show>".
    with pytest.raises(ConfigError) as info:
        Deduplicator(threshold=value)  # type: ignore[call-arg]
    assert str(info.value).startswith(f"Deduplicator: threshold={shown}: unknown option")


@pytest.mark.parametrize(
    ("build", "option"),
    [
        (lambda v: WindowPolicy(window=64_000, keep=v), "keep"),
        (lambda v: WindowPolicy(window=v), "window"),
        (lambda v: ToolResultClearer(trigger=v), "trigger"),
        (lambda v: GreedyPacker(recency_weight=v), "recency_weight"),
    ],
    ids=["policy keep", "policy window", "clearer trigger", "packer weight"],
)
def test_a_number_option_given_as_a_string_is_refused(
    build: Callable[[Any], object], option: str
) -> None:
    # pydantic read "3" as 3, where pack(budget="4000") and Session(window="64000") refuse a
    # string: an option read from the environment unconverted passed as a number here only.
    with pytest.raises(ConfigError, match=rf"{option}='3': must be a number, not a string"):
        build("3")


def test_a_number_option_is_still_read_from_strings_where_they_are_expected() -> None:
    # model_validate_strings() is for text (a form, the environment): there "3" is 3.
    assert WindowPolicy.model_validate_strings({"window": "64000", "keep": "3"}).keep == 3
    assert WindowPolicy.model_validate_json('{"window": 64000, "keep": 3}').keep == 3
    with pytest.raises(ConfigError, match="keep='3': must be a number, not a string"):
        WindowPolicy.model_validate_json('{"window": 64000, "keep": "3"}')
