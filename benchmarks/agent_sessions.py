"""What context strategies cost and lose on real coding-agent sessions, replayed step by step.

Each session (an OpenAI message list: system, task, then assistant turns calling ``bash`` and the
tool results) is replayed once per strategy. Before each assistant message the strategy turns the
history so far into the request it would send; the harness bills the requests with
:func:`ctxpack.cost.simulate` (a prompt-cache model) at each price point, and checks **evidence
survival**: the identifiers, file paths and numbers the agent's message uses that first appeared
in a tool result, and whether each is still in the request sent at that step (or recoverable
through a retrieval handle the request holds). No task is re-run: survival is a proxy for
success, and the agent's actual messages are the outputs billed for every strategy.

The strategy interface
----------------------
A strategy is registered under a name in ``STRATEGIES`` (the marked registry below) as a factory
``factory(session: SessionInfo) -> Strategy``. The harness calls the factory once per session
(a fresh instance, so a strategy may keep state: a ctxpack session it appends to, the batch
boundaries of a clearer), then calls the instance once per step, in order::

    request = strategy(history)   # history: the OpenAI message dicts before this assistant turn

``history`` grows by the previous assistant message and its tool result(s) between calls; its
dicts are the session's own, so never mutate them. The strategy returns either a message list
(OpenAI dicts or ``ctxpack.Message``) or a mapping::

    {"messages": [...],            # the prompt actually sent (required)
     "tools": [...],               # tool definitions sent with it (optional)
     "side_requests": [...]}       # other model calls the strategy made first (optional), each
                                   # {"messages": [...], "output_tokens": n, "model": name|None}
                                   # e.g. a compaction's summary request; billed, in order,
                                   # before the main request (model None = the billed model)

Optionally, a strategy has ``recoverable(request_messages) -> Iterable[str]``: the texts the
model could get back through retrieval handles present in that request (artifact ids of an
``ArtifactStore``, say). Evidence absent from the request but present in those texts counts as
"recoverable", not lost. ``SessionInfo`` gives the session id, the shared token counter and a
cached ``tokens(messages)``. Adding a strategy is a class (or function) and one registry line.

Usage (from the repository root)::

    python benchmarks/agent_sessions.py --data ../shared/data/agent-sessions
    python benchmarks/agent_sessions.py --data DIR --out DIR --strategies raw,clear-30k-keep3
    python benchmarks/agent_sessions.py --data DIR --limit 5 --prices claude-sonnet-4-5

Other scripts may load this file by path and reuse :func:`load_sessions`, :func:`replay`,
:func:`evidence_terms` and the strategies; nothing runs on import.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import ctxpack
import ctxpack.editing
import ctxpack.selection
from ctxpack import Message, get_counter
from ctxpack.cost import Bill, Price, Request, price, simulate
from ctxpack.editing import COMPACTION_FLOOR
from ctxpack.messages import ensure_messages, owned_messages
from ctxpack.signals.evidence import labelled_evidence_terms
from ctxpack.store import ArtifactStore, SQLiteArtifactStore
from ctxpack.tokens import TokenCounter, message_sizes

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = (REPO_ROOT / ".." / "shared" / "data" / "agent-sessions").resolve()
DEFAULT_OUT = Path(__file__).resolve().parent / "results"
# How each strategy is billed: model of the price table @ where the cache writes entries.
# Sonnet-class prices (reads 0.1x, writes 1.25x) with one cache breakpoint at the end of each
# request (Anthropic's automatic caching, what agent harnesses do) is the headline; the same
# prices with an entry at every message boundary is the optimistic bound (as if every message
# were a breakpoint); OpenAI's prices (no write premium, reads 0.1x) with its automatic prefix
# caching, approximated at message boundaries, are the other price point.
DEFAULT_BILLINGS = ("claude-sonnet-4-5@request", "claude-sonnet-4-5@message", "gpt-5@message")
# The encoding that counts every strategy's requests: the sessions' model (Gemini) has no public
# tokenizer, and one exact encoding for all strategies keeps the comparison fair.
ENCODING = "cl100k_base"


# --------------------------------------------------------------------------------------------
# The strategy interface


@dataclass
class SessionInfo:
    """What a strategy factory gets for one session."""

    id: str
    counter: TokenCounter
    resolved: bool | None = None
    # The agent's own tool definitions: every request carries them, whatever the strategy.
    tools: Sequence[Mapping[str, Any]] = ()

    def tokens(self, messages: Sequence[Any], tools: Sequence[Mapping[str, Any]] = ()) -> int:
        """The prompt tokens of ``messages`` with the agent's tools (and ``tools``), as billed."""
        sent = [*self.tools, *tools]
        return ctxpack.count_tokens(messages, counter=self.counter, tools=sent or None)

    def message_tokens(self, messages: Sequence[Any]) -> list[int]:
        """Tokens each message adds to a prompt (framing included)."""
        return list(message_sizes(self.counter, owned_messages(messages)))


class Strategy(Protocol):
    def __call__(self, history: list[dict[str, Any]]) -> Sequence[Any] | Mapping[str, Any]: ...


StrategyFactory = Callable[[SessionInfo], Strategy]


# --------------------------------------------------------------------------------------------
# Baseline strategies


class Raw:
    """Everything, every time: the history as it is (the prompt cache does the rest)."""

    def __init__(self, session: SessionInfo) -> None:
        self.session = session

    def __call__(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return history


# Anthropic's context editing (clear_tool_uses_20250919) leaves this kind of placeholder where a
# tool result was; the exact wording is Anthropic's and not published, so ours is a stand-in.
CLEARED_PLACEHOLDER = "[tool result cleared to save context]"


class ClearToolResults:
    """Anthropic-style clearing of old tool results (``clear_tool_uses_20250919``).

    Applied to each request as the server applies it: when the full prompt exceeds ``trigger``
    input tokens, every tool result but the ``keep`` most recent is replaced by a placeholder;
    tool inputs (the calls) stay. ``clear_at_least`` is not modelled (default: unset), so once
    above the trigger each step clears one more result, just before the kept ones.
    """

    def __init__(self, session: SessionInfo, *, trigger: int, keep: int = 3) -> None:
        self.session, self.trigger, self.keep = session, trigger, keep

    def __call__(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.session.tokens(history) <= self.trigger:
            return history
        tools = [i for i, m in enumerate(history) if m.get("role") == "tool"]
        cleared = set(tools[: max(0, len(tools) - self.keep)])
        return [
            {**m, "content": CLEARED_PLACEHOLDER} if i in cleared else m
            for i, m in enumerate(history)
        ]


class ThresholdCompaction:
    """Threshold compaction (Anthropic's ``compact_20260112`` shape) with a summary stand-in.

    When the request would exceed ``trigger`` tokens, a summary request is made (billed as a
    side request: the whole prompt plus an instruction, answered by the summary) and everything
    but the system prompt is replaced by the summary; later steps send the system prompt, the
    summary and what came after it, until the trigger is crossed again.

    No model runs offline, so the summary is a deterministic stand-in, not a model's summary:
    the task message (its first ``task_chars`` characters), one line per earlier step (the first
    line of the agent's reasoning and its command, each cut to 160 characters; the most recent
    steps first when over ``summary_tokens``), and the last tool result verbatim up to
    ``last_result_chars``. A real summary may keep more facts, or fewer.
    """

    INSTRUCTION = (
        "Summarize the work so far for a continuation: the task, what was tried, what was "
        "found (files, functions, line numbers, errors), and what remains."
    )

    def __init__(
        self,
        session: SessionInfo,
        *,
        trigger: int,
        summary_tokens: int = 2000,
        task_chars: int = 3000,
        last_result_chars: int = 2000,
    ) -> None:
        self.session, self.trigger, self.summary_tokens = session, trigger, summary_tokens
        self.task_chars, self.last_result_chars = task_chars, last_result_chars
        self.summary: dict[str, Any] | None = None
        self.since = 0  # history index the summary covers up to (exclusive)

    def _prompt(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        head = [m for m in history[:1] if m.get("role") == "system"]
        if self.summary is None:
            return history
        return [*head, self.summary, *history[self.since :]]

    def _stand_in(self, history: list[dict[str, Any]]) -> str:
        task = next((m for m in history if m.get("role") == "user"), None)
        steps = []
        for m in history:
            if m.get("role") != "assistant":
                continue
            text = str(m.get("content") or "").strip()
            first = text.splitlines()[0][:160] if text else ""
            calls = [
                json.loads(c["function"]["arguments"]).get("command", "")
                if c["function"]["arguments"].startswith("{")
                else c["function"]["arguments"]
                for c in m.get("tool_calls") or ()
            ]
            steps.append(" ".join([first, *(f"$ {str(c)[:160]}" for c in calls)]))
        last = next((m for m in reversed(history) if m.get("role") == "tool"), None)
        head = "<summary>\nTask: " + (str(task["content"])[: self.task_chars] if task else "")
        tail = ""
        if last is not None:
            tail = "\nLast result:\n" + str(last["content"])[: self.last_result_chars]
        budget = self.summary_tokens - self.session.counter.count(head + tail)
        kept: list[str] = []
        for line in reversed(steps):
            cost = self.session.counter.count(line) + 1
            if cost > budget:
                break
            kept.append(line)
            budget -= cost
        return head + "\nSteps so far:\n" + "\n".join(reversed(kept)) + tail + "\n</summary>"

    def __call__(self, history: list[dict[str, Any]]) -> Mapping[str, Any]:
        prompt = self._prompt(history)
        if self.session.tokens(prompt) <= self.trigger:
            return {"messages": prompt}
        ask = [*prompt, {"role": "user", "content": self.INSTRUCTION}]
        text = self._stand_in(history)
        self.summary = {"role": "user", "content": text}
        self.since = len(history)
        summary_call = {
            "messages": ask,
            "output_tokens": self.session.counter.count(text),
        }
        return {"messages": self._prompt(history), "side_requests": [summary_call]}


class TrimMessages:
    """LangChain ``trim_messages(strategy="last")`` under ``budget`` tokens, system kept.

    By default ``start_on=("human", "ai")`` so that a kept window never starts with an orphan
    tool result (which a provider would reject); the task message goes once it is old enough, as
    it does with this trimmer. ``start_on="human"`` is LangChain's documented setting for chat
    models: in an agent session, where user messages are rare, the window then shrinks to what
    follows the last user message, or to the system prompt alone. Tokens are counted with the
    benchmark's counter, message by message.
    """

    def __init__(
        self,
        session: SessionInfo,
        *,
        budget: int,
        start_on: str | tuple[str, ...] = ("human", "ai"),
    ) -> None:
        from langchain_core.messages import trim_messages

        self._trim = trim_messages
        self.session, self.budget, self.start_on = session, budget, start_on
        self._lc: dict[int, tuple[dict[str, Any], Any, int]] = {}

    def _convert(self, history: list[dict[str, Any]]) -> list[Any]:
        missing = [m for m in history if id(m) not in self._lc]
        if missing:
            converted = ctxpack.adapters.to_langchain(missing)
            sizes = self.session.message_tokens(missing)
            for m, lc, n in zip(missing, converted, sizes, strict=True):
                self._lc[id(m)] = (m, lc, n)
        return [self._lc[id(m)][1] for m in history]

    def __call__(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        lc = self._convert(history)
        size = {id(entry[1]): entry[2] for entry in self._lc.values()}
        back = {id(entry[1]): entry[0] for entry in self._lc.values()}
        kept = self._trim(
            lc,
            max_tokens=self.budget,
            strategy="last",
            token_counter=lambda ms: 3 + sum(size[id(m)] for m in ms),
            include_system=True,
            start_on=self.start_on,
        )
        return [back[id(m)] for m in kept]


class Pack:
    """``ctxpack.pack()`` of the whole history at ``budget`` tokens, every step."""

    def __init__(self, session: SessionInfo, *, budget: int) -> None:
        self.session, self.budget = session, budget

    def __call__(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        result = ctxpack.pack(history, budget=self.budget, counter=self.session.counter)
        return result.to_openai()


# Issue 14: ctxpack.Session, tool outputs filtered once on arrival, originals in a store.
_ARTIFACT = re.compile(r"\bart_[0-9a-f]{16}\b")


class SessionStrategy:
    """``ctxpack.Session``: each new message appended once (tool outputs filtered on arrival,
    originals stored), the compact record rendered whole and sent, with the retrieve tool's
    definition when it is offered. ``recoverable`` reads the originals whose artifact ids the
    request names. ``append_seconds`` times the appends alone, per message, and
    ``render_seconds`` the renders, per request."""

    def __init__(self, session: SessionInfo, **options: Any) -> None:
        self.session = ctxpack.Session(counter=session.counter, **options)
        self.agent_tools = list(session.tools)
        self.seen = 0
        self.append_seconds: list[float] = []
        self.render_seconds: list[float] = []

    def __call__(self, history: list[dict[str, Any]]) -> Mapping[str, Any]:
        for message in history[self.seen :]:
            t0 = time.perf_counter()
            self.add(message)
            self.append_seconds.append(time.perf_counter() - t0)
        self.seen = len(history)
        t0 = time.perf_counter()
        # The agent's tools are counted where the window is (replay sends them); the request
        # adds the session's own.
        result = self.session.render(tools=self.agent_tools or None)
        self.render_seconds.append(time.perf_counter() - t0)
        return {"messages": result.to_openai(), "tools": self.session.tools() or None}

    def add(self, message: Mapping[str, Any]) -> None:
        """Give the session one new message of the history."""
        self.session.append(message)

    def recoverable(self, request_messages: Sequence[Any]) -> list[str]:
        if not self.session.retrieve_tool:
            return []  # the model has no way to read them
        ids = {a for m in request_messages for a in _ARTIFACT.findall(message_text(m))}
        return [self.session.store.get(a) for a in sorted(ids) if a in self.session.store]


# Issue 15: ctxpack's clearing and compaction stages (ctxpack.editing).
class EditingStrategy:
    """A ctxpack editing stage as the only stage of ``pack()`` on the whole history, every step
    (the stateless use: the stage replays the history to find its batches). Originals go to a
    store; ``recoverable`` reads those whose artifact ids the request names (the placeholders
    of cleared results name theirs)."""

    def __init__(self, session: SessionInfo, *, stage: Callable[[ArtifactStore], Any]) -> None:
        self.session = session
        self.store = SQLiteArtifactStore(":memory:")
        self.pipeline = ctxpack.Pipeline([stage(self.store)])

    def __call__(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # The agent's tools go with every request, so a stage that rewrites the whole prompt
        # counts them as the bill does.
        result = ctxpack.pack(
            history,
            budget=10**9,
            counter=self.session.counter,
            pipeline=self.pipeline,
            tools=list(self.session.tools) or None,
        )
        return result.to_openai()

    def recoverable(self, request_messages: Sequence[Any]) -> list[str]:
        ids = {a for m in request_messages for a in _ARTIFACT.findall(message_text(m))}
        return [self.store.get(a) for a in sorted(ids) if a in self.store]


def _session_with(stage: Callable[[ArtifactStore], Any]) -> StrategyFactory:
    """Issue 14's Session (filters on arrival) with an issue-15 stage at render time, sharing
    the session's store."""

    def factory(session: SessionInfo) -> Strategy:
        store = SQLiteArtifactStore(":memory:")
        return SessionStrategy(session, store=store, pipeline=ctxpack.Pipeline([stage(store)]))

    return factory


def _digest_compactor(trigger: int) -> Callable[[ArtifactStore], Any]:
    # Measurement only: Compactor() refuses a trigger under Anthropic's 50,000-token floor, and
    # few of these sessions reach it; model_construct skips that check to see what the default
    # digest keeps at the trigger the other compaction strategy uses.
    def make(store: ArtifactStore) -> Any:
        if trigger >= COMPACTION_FLOOR:
            return ctxpack.editing.Compactor(trigger=trigger, store=store)
        defaults = ctxpack.editing.Compactor(store=store)
        return ctxpack.editing.Compactor.model_construct(
            **{**{k: getattr(defaults, k) for k in type(defaults).model_fields}, "trigger": trigger}
        )

    return make


def _with(cls: Callable[..., Strategy], **config: Any) -> StrategyFactory:
    return lambda session: cls(session, **config)


# ============================================================================================
# STRATEGY REGISTRY: name -> factory(SessionInfo) -> strategy. Add yours here (one line each).
# ============================================================================================
STRATEGIES: dict[str, StrategyFactory] = {
    "raw": Raw,
    "clear-30k-keep3": _with(ClearToolResults, trigger=30_000, keep=3),
    "clear-100k-keep3": _with(ClearToolResults, trigger=100_000, keep=3),
    "compact-30k": _with(ThresholdCompaction, trigger=30_000),
    "trim_messages-16k": _with(TrimMessages, budget=16_000),
    "trim_messages-32k": _with(TrimMessages, budget=32_000),
    "trim_messages-16k-human": _with(TrimMessages, budget=16_000, start_on="human"),
    "pack-16k": _with(Pack, budget=16_000),
    "pack-32k": _with(Pack, budget=32_000),
    # issue 14: tool-output filters in a Session
    "session": _with(SessionStrategy),
    "session-no-retrieve": _with(SessionStrategy, retrieve_tool=False),
    "session-answered": _with(SessionStrategy, filter_when="answered"),
    # issue 15: cache-aware clearing, plain Anthropic clearing, compaction with the digest
    "ctxpack-clear-30k-keep3": _with(
        EditingStrategy,
        stage=lambda st: ctxpack.editing.ToolResultClearer(trigger=30_000, store=st),
    ),
    "ctxpack-clear-30k-keep3-plain": _with(
        EditingStrategy,
        stage=lambda st: ctxpack.editing.ToolResultClearer(
            trigger=30_000, cache_aware=False, store=st
        ),
    ),
    "ctxpack-compact-50k": _with(EditingStrategy, stage=_digest_compactor(50_000)),
    "ctxpack-compact-30k-below-floor": _with(EditingStrategy, stage=_digest_compactor(30_000)),
    "session+ctxpack-clear-30k": _session_with(
        lambda st: ctxpack.editing.ToolResultClearer(trigger=30_000, store=st)
    ),
    "session+ctxpack-compact-30k-below-floor": _session_with(_digest_compactor(30_000)),
}


# -- issue 16: a selector chooses the context before each step -------------------------------
def step_goal(history: list[dict[str, Any]], chars: int = 2000) -> str:
    """What the next step is about: the agent's last message and what answered it (the last
    tool result or user message), each cut to ``chars`` characters."""
    last = message_text(history[-1])[:chars] if history else ""
    said = next((m for m in reversed(history) if m.get("role") == "assistant"), None)
    return (message_text(said)[:chars] + "\n" if said is not None else "") + last


class SelectBeforeEachStep:
    """Before each step, ``ctxpack.selection.LexicalSelector(budget=...)`` chooses from the whole
    history for :func:`step_goal`, and ``ctxpack.selection.apply_selection`` builds the request
    (user messages always kept, tool exchanges whole). No repository is replayed, so no file is
    selected.

    ``selector_requests`` keeps, per step, what a ``ModelSelector`` call would have sent (its
    system prompt and the workspace listing) and answered (this selection as JSON), so that the
    selector can be billed at a small model's price (``benchmarks/selection_sessions.py``); the
    harness bills only the main requests, all at one model's price.
    """

    def __init__(self, session: SessionInfo, *, budget: int) -> None:
        from ctxpack.selection import SYSTEM_PROMPT

        self.session = session
        self.selector = ctxpack.selection.LexicalSelector(budget=budget)
        self.system = SYSTEM_PROMPT
        self.selector_requests: list[dict[str, Any]] = []

    def select(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The request a selection over ``history`` builds; records the selector's call."""
        from ctxpack.selection import selection_prompt

        workspace = ctxpack.selection.Workspace(history, counter=self.session.counter)
        goal = step_goal(history)
        selection = self.selector(workspace, goal)
        result = ctxpack.selection.apply_selection(selection, workspace)
        listing = selection_prompt(workspace, goal)
        answer = json.dumps(selection.answer())
        self.selector_requests.append(
            {
                "messages": [
                    {"role": "system", "content": self.system},
                    {"role": "user", "content": listing},
                ],
                "output_tokens": self.session.counter.count(answer),
            }
        )
        return result.to_openai()

    def __call__(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self.select(history)


class SelectWhenOver(SelectBeforeEachStep):
    """Selection at the steps that need it: the request grows append-only (the prompt cache
    keeps working) until it would exceed ``trigger`` tokens; then ``LexicalSelector(budget)``
    chooses from the whole history and the selected context becomes the new prefix, which the
    next steps extend. The selector is called (and billed) only at those steps."""

    def __init__(self, session: SessionInfo, *, budget: int, trigger: int) -> None:
        super().__init__(session, budget=budget)
        self.trigger = trigger
        self.prefix: list[dict[str, Any]] | None = None
        self.since = 0

    def __call__(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        request = history if self.prefix is None else [*self.prefix, *history[self.since :]]
        if self.session.tokens(request) <= self.trigger:
            return request
        self.prefix, self.since = self.select(history), len(history)
        return self.prefix


STRATEGIES["select-lexical-16k"] = _with(SelectBeforeEachStep, budget=16_000)
STRATEGIES["select-lexical-when-over-32k"] = _with(SelectWhenOver, budget=16_000, trigger=32_000)
STRATEGIES["select-lexical-when-over-16k"] = _with(SelectWhenOver, budget=8_000, trigger=16_000)
# -- end of issue 16 ---------------------------------------------------------------------------

DEFAULT_STRATEGIES = tuple(STRATEGIES)


# --------------------------------------------------------------------------------------------
# Data


@dataclass
class AgentSession:
    id: str
    messages: list[dict[str, Any]]
    resolved: bool | None = None
    source: str = ""
    # Where each task starts, for sessions joined from several (see ``session_evidence``).
    task_starts: tuple[int, ...] = ()


def load_sessions(data: str | Path, limit: int | None = None) -> list[AgentSession]:
    """Every ``*.json`` session of ``data`` (a folder or one file), sorted by id."""
    path = Path(data)
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    if not files or not all(f.is_file() for f in files):
        raise FileNotFoundError(f"no session files (*.json) at {path}")
    sessions = []
    for file in files:
        raw = json.loads(file.read_text("utf-8"))
        if not isinstance(raw, dict) or not isinstance(raw.get("messages"), list):
            raise ValueError(f"{file}: a session is an object with a 'messages' list")
        ensure_messages(raw["messages"])  # fail on a malformed message here, naming it
        sessions.append(
            AgentSession(
                id=str(raw.get("id", file.stem)),
                messages=raw["messages"],
                resolved=raw.get("resolved"),
                source=str(raw.get("source", "")),
            )
        )
    sessions.sort(key=lambda s: s.id)
    return sessions[:limit] if limit is not None else sessions


# --------------------------------------------------------------------------------------------
# Evidence: what the agent's message uses that it first saw in a tool result

# The report labels each term with its kind, as the committed results name them.
_LABELS = {"path": "path", "identifier": "id", "number": "num"}
_TERMS_CACHE: dict[str, frozenset[str]] = {}


def evidence_terms(text: str) -> frozenset[str]:
    """The identifiers, file paths and numbers in ``text``, as ctxpack's extractor finds them
    (:func:`ctxpack.signals.evidence.labelled_evidence_terms`), each labelled with its kind
    (``path:``, ``id:``, ``num:``); cached by content."""
    hit = _TERMS_CACHE.get(text)
    if hit is not None:
        return hit
    result = frozenset(f"{_LABELS[kind]}:{term}" for kind, term in labelled_evidence_terms(text))
    if len(_TERMS_CACHE) > 500_000:
        _TERMS_CACHE.clear()
    _TERMS_CACHE[text] = result
    return result


def message_text(message: Any) -> str:
    """A message's text and tool-call arguments (dict or ``ctxpack.Message``)."""
    if isinstance(message, Message):
        parts = [message.text]
        parts += [c.function.arguments for c in message.tool_calls or ()]
        return "\n".join(parts)
    content = message.get("content")
    if isinstance(content, list):
        content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    parts = [content or ""]
    for call in message.get("tool_calls") or ():
        parts.append(str(call.get("function", {}).get("arguments", "")))
    return "\n".join(parts)


def _role(message: Any) -> str:
    return message.role if isinstance(message, Message) else str(message.get("role"))


@dataclass
class Evidence:
    """One term an assistant message uses that first appeared in a tool result."""

    step: int  # index of the assistant message in the session
    term: str
    source: int  # index of the tool message where it first appeared


def session_evidence(
    messages: Sequence[Mapping[str, Any]], task_starts: Sequence[int] = ()
) -> dict[int, list[Evidence]]:
    """Per assistant message index, the evidence it uses (see :class:`Evidence`).

    ``task_starts``: the indices where a new task begins, in a session joined from separate
    ones. Each ran on its own: a term one task uses cannot come from another task's outputs (a
    line number or ``runtests.py`` seen in task 2 and named in task 8 is a coincidence), so the
    terms seen are forgotten at each start."""
    first_seen: dict[str, tuple[int, str]] = {}
    out: dict[int, list[Evidence]] = {}
    starts = set(task_starts)
    for index, message in enumerate(messages):
        if index in starts:
            first_seen.clear()
        terms = evidence_terms(message_text(message))
        role = _role(message)
        if role == "assistant":
            out[index] = [
                Evidence(index, term, first_seen[term][0])
                for term in sorted(terms)
                if term in first_seen and first_seen[term][1] == "tool"
            ]
        for term in terms:
            first_seen.setdefault(term, (index, role))
    return out


# --------------------------------------------------------------------------------------------
# Replay


@dataclass
class StrategyRun:
    """One strategy on one session."""

    strategy: str
    session: str
    requests: list[Request] = field(default_factory=list)
    main: list[int] = field(default_factory=list)  # indices of the main requests in `requests`
    seconds: list[float] = field(default_factory=list)
    evidence_total: int = 0
    evidence_present: int = 0
    evidence_recoverable: int = 0
    lost: list[dict[str, Any]] = field(default_factory=list)
    bills: dict[str, Bill] = field(default_factory=dict)


@dataclass(frozen=True)
class Billing:
    """One way to bill the requests: a price, and where the cache writes its entries."""

    model: str
    price: Price
    cache_points: Literal["request", "message"] = "request"

    @property
    def label(self) -> str:
        return f"{self.model}@{self.cache_points}"

    @classmethod
    def parse(cls, spec: str) -> Billing:
        model, _, points = spec.partition("@")
        points = points or "request"
        if points not in ("request", "message"):
            raise ValueError(f"{spec!r}: the cache points are 'request' or 'message'")
        return cls(model=model, price=price(model), cache_points=points)  # type: ignore[arg-type]


def _as_request(
    returned: Any, default_model: str | None = None, tools: Sequence[Mapping[str, Any]] = ()
) -> tuple[Request, list[Request]]:
    """The request (and side requests) a strategy returned, each with ``tools`` (the agent's)
    before the tools it returned."""

    def sent(own: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
        return [dict(t) for t in (*tools, *(own or ()))] or None

    if isinstance(returned, Mapping):
        side = [
            Request(
                messages=list(s["messages"]),
                tools=sent(s.get("tools")),
                output_tokens=int(s.get("output_tokens", 0)),
                model=s.get("model", default_model),
            )
            for s in returned.get("side_requests", ())
        ]
        return Request(messages=list(returned["messages"]), tools=sent(returned.get("tools"))), side
    return Request(messages=list(returned), tools=sent(None)), []


def replay(
    session: AgentSession,
    name: str,
    factory: StrategyFactory,
    counter: TokenCounter,
    billings: Sequence[Billing],
    tools: Sequence[Mapping[str, Any]] = (),
) -> StrategyRun:
    """Run one strategy over one session: requests, timings, evidence, bills. ``tools``: the
    agent's own tool definitions, sent first in every request (side requests too) before any
    the strategy adds, as a provider requires of a request holding tool calls."""
    info = SessionInfo(id=session.id, counter=counter, resolved=session.resolved, tools=tools)
    strategy = factory(info)
    recoverable = getattr(strategy, "recoverable", None)
    evidence = session_evidence(session.messages, session.task_starts)
    run = StrategyRun(strategy=name, session=session.id)
    messages = session.messages
    for step, message in enumerate(messages):
        if message.get("role") != "assistant" or step == 0:
            continue
        history = list(messages[:step])
        t0 = time.perf_counter()
        returned = strategy(history)
        run.seconds.append(time.perf_counter() - t0)
        request, side = _as_request(returned, tools=tools)
        output = counter.count_message(owned_messages([message])[0])
        run.requests.extend(side)
        run.main.append(len(run.requests))
        run.requests.append(request.model_copy(update={"output_tokens": output}))
        used = evidence.get(step, [])
        if not used:
            continue
        term_sets = [evidence_terms(message_text(m)) for m in request.messages]
        extra: list[frozenset[str]] | None = None
        for item in used:
            run.evidence_total += 1
            if any(item.term in s for s in term_sets):
                run.evidence_present += 1
                continue
            if extra is None:
                texts = recoverable(request.messages) if recoverable is not None else ()
                extra = [evidence_terms(t) for t in texts]
            found = any(item.term in s for s in extra)
            run.evidence_recoverable += found
            run.lost.append(
                {
                    "session": session.id,
                    "step": step,
                    "term": item.term,
                    "first_seen": item.source,
                    "recoverable": found,
                }
            )
    run.evidence_recoverable += run.evidence_present
    for billing in billings:
        run.bills[billing.label] = simulate(
            run.requests, price=billing.price, counter=counter, cache_points=billing.cache_points
        )
    return run


# --------------------------------------------------------------------------------------------
# Summaries and report


def summarize(runs: Sequence[StrategyRun], billings: Sequence[Billing]) -> dict[str, Any]:
    """Per strategy: dollars per billing, tokens, cache share, peak, time, evidence.

    Token figures come from the first billing (the headline); ``cost_usd`` too.
    """
    by_strategy: dict[str, list[StrategyRun]] = {}
    for r in runs:
        by_strategy.setdefault(r.strategy, []).append(r)
    labels = [b.label for b in billings]
    primary = labels[0]
    out: dict[str, Any] = {}
    for name, group in by_strategy.items():
        costs = {m: sum(r.bills[m].cost for r in group) for m in labels}
        input_costs = {
            b.label: costs[b.label]
            - sum(r.bills[b.label].output_tokens for r in group) * b.price.output / 1e6
            for b in billings
        }
        bills = [r.bills[primary] for r in group]
        input_tokens = sum(b.input_tokens for b in bills)
        read = sum(b.cache_read_tokens for b in bills)
        main_rows = [b.requests[i] for r, b in zip(group, bills, strict=True) for i in r.main]
        seconds = [s for r in group for s in r.seconds]
        total = sum(r.evidence_total for r in group)
        out[name] = {
            "cost_usd": costs[primary],
            "cost_usd_by_billing": costs,
            "input_cost_usd": input_costs[primary],
            "input_cost_usd_by_billing": input_costs,
            "input_tokens": input_tokens,
            "cache_read_tokens": read,
            "cache_write_tokens": sum(b.cache_write_tokens for b in bills),
            "uncached_input_tokens": sum(b.uncached_input_tokens for b in bills),
            "output_tokens": sum(b.output_tokens for b in bills),
            "cache_read_share": read / input_tokens if input_tokens else 0.0,
            "requests": sum(len(b.requests) for b in bills),
            "side_requests": sum(
                len(b.requests) - len(r.main) for r, b in zip(group, bills, strict=True)
            ),
            "peak_request_tokens": max((row.input_tokens for row in main_rows), default=0),
            "mean_request_tokens": statistics.fmean(row.input_tokens for row in main_rows)
            if main_rows
            else 0.0,
            # The median: the first call of a strategy may load models (spaCy for pack()).
            "ms_per_step": 1000 * statistics.median(seconds) if seconds else 0.0,
            "ms_per_step_mean": 1000 * statistics.fmean(seconds) if seconds else 0.0,
            "evidence_total": total,
            "evidence_survival": sum(r.evidence_present for r in group) / total if total else 1.0,
            "evidence_recoverable": sum(r.evidence_recoverable for r in group) / total
            if total
            else 1.0,
            "lost_evidence": [item for r in group for item in r.lost],
            "per_session": {
                r.session: {
                    "cost_usd": r.bills[primary].cost,
                    "evidence_total": r.evidence_total,
                    "evidence_present": r.evidence_present,
                    "evidence_recoverable": r.evidence_recoverable,
                }
                for r in group
            },
        }
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def render_markdown(
    summary: Mapping[str, Any],
    sessions: Sequence[AgentSession],
    billings: Sequence[Billing],
    failed: Mapping[str, str],
) -> str:
    labels = [b.label for b in billings]
    raw = summary.get("raw")
    steps = sum(
        1 for s in sessions for i, m in enumerate(s.messages) if i and m["role"] == "assistant"
    )
    out = ["# Agent sessions: cost and evidence survival", ""]
    models = {b.model: b.price for b in billings}
    out.append(
        f"{len(sessions)} sessions, {steps} steps (one request per assistant message). Tokens: "
        f"{ENCODING}. Prices, dollars per million: "
        + "; ".join(
            f"{m} ({p.input:g} in, {p.cache_write_5m:g} cache write, {p.cache_read:g} cache "
            f"read, {p.output:g} out)"
            for m, p in models.items()
        )
        + ". Cache: 5-minute TTL, a continuous session (nothing expires), minimum 1024 tokens; "
        "`@request`: one breakpoint at the end of each request, found within 20 blocks; "
        "`@message`: an entry at every message boundary."
    )
    out.append("")
    header = [
        "strategy",
        *(f"$ {label}" for label in labels),
        *(f"% of raw ({label})" for label in labels[:2]),
        f"input only, % of raw ({labels[:2][-1]})",
        "input tokens",
        "cache reads",
        "peak request",
        "evidence present",
        "present or recoverable",
        "ms/step",
    ]
    out.append("| " + " | ".join(header) + " |")
    out.append("|" + "---|" * len(header))
    for name, s in summary.items():
        shares = [
            _pct(s["cost_usd_by_billing"][label] / raw["cost_usd_by_billing"][label])
            if raw and raw["cost_usd_by_billing"][label]
            else "n/a"
            for label in labels[:2]
        ]
        last = labels[:2][-1]
        base = raw["input_cost_usd_by_billing"][last] if raw else 0.0
        shares.append(_pct(s["input_cost_usd_by_billing"][last] / base) if base else "n/a")
        out.append(
            "| "
            + " | ".join(
                [
                    name,
                    *(f"{s['cost_usd_by_billing'][label]:.2f}" for label in labels),
                    *shares,
                    f"{s['input_tokens'] / 1e6:.2f}M",
                    _pct(s["cache_read_share"]),
                    f"{s['peak_request_tokens']:,}",
                    _pct(s["evidence_survival"]),
                    _pct(s["evidence_recoverable"]),
                    f"{s['ms_per_step']:.1f}",
                ]
            )
            + " |"
        )
    out.append("")
    out.append(
        f"Dollars include output (the agent's actual messages, the same for every strategy) and "
        f"side requests (a compaction's summary call). Tokens and cache reads are on the "
        f"{labels[0]} bill. ms/step is the strategy's median time per step. Evidence: "
        f"{_evidence_count(summary)}."
    )
    if raw:
        out.append("")
        out.append(
            f"raw, input only ({labels[0]}): ${raw['input_cost_usd']:.2f} "
            f"({_pct(raw['cache_read_share'])} of input read from the cache)."
        )
    for name, reason in failed.items():
        out.extend(["", f"**{name} failed**: {reason}"])
    out.extend(["", "## Lost evidence", ""])
    out.append(
        "Every term an assistant message used, first seen in a tool result, that the request "
        "sent at that step no longer held (all of them are in agent_sessions.json). Counts by "
        "kind, and the first few:"
    )
    for name, s in summary.items():
        lost = s["lost_evidence"]
        if not lost:
            continue
        kinds: dict[str, int] = {}
        for item in lost:
            kind = item["term"].split(":", 1)[0]
            kinds[kind] = kinds.get(kind, 0) + 1
        recoverable = sum(item["recoverable"] for item in lost)
        out.extend(
            [
                "",
                f"### {name}: {len(lost)} lost ({recoverable} recoverable through a handle); "
                + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())),
                "",
            ]
        )
        for item in lost[:8]:
            out.append(
                f"- {item['session']} step {item['step']}: `{item['term']}` (first seen in "
                f"message {item['first_seen']}){' (recoverable)' if item['recoverable'] else ''}"
            )
    return "\n".join(out)


def _evidence_count(summary: Mapping[str, Any]) -> str:
    totals = {s["evidence_total"] for s in summary.values()}
    return f"{totals.pop()} uses" if len(totals) == 1 else "see per-strategy totals"


def plot(summary: Mapping[str, Any], path: Path) -> bool:
    """Cost (% of raw) against evidence survival, one point per strategy and billing.

    Filled points are the headline billing (the first); hollow ones the second, joined to them.
    Strategies that land on the same point share one label.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(
            "note: matplotlib is not installed; no plot (pip install matplotlib)", file=sys.stderr
        )
        return False
    labels = list(next(iter(summary.values()))["cost_usd_by_billing"])
    raw = summary.get("raw")

    def share(s: Mapping[str, Any], label: str) -> float:
        base = raw["cost_usd_by_billing"][label] if raw else 1.0
        return 100 * s["cost_usd_by_billing"][label] / base

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    names_at: dict[tuple[float, float], list[str]] = {}
    for index, (name, s) in enumerate(summary.items()):
        colour = f"C{index % 10}"
        y = 100 * s["evidence_survival"]
        x = share(s, labels[0])
        ax.scatter([x], [y], color=colour, zorder=3)
        if len(labels) > 1:
            x2 = share(s, labels[1])
            ax.scatter([x2], [y], facecolors="none", edgecolors=colour, zorder=3)
            ax.plot([x, x2], [y, y], color=colour, linewidth=0.8, alpha=0.6)
        names_at.setdefault((round(x, 1), round(y, 1)), []).append(name)
    for (x, y), names in names_at.items():
        ax.annotate(", ".join(names), (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xlabel(
        f"bill, % of raw: filled {labels[0]}" + (f", hollow {labels[1]}" if len(labels) > 1 else "")
    )
    ax.set_ylabel("evidence present in the request, %")
    ax.set_title("Agent sessions: cost against evidence survival")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


# --------------------------------------------------------------------------------------------
# Command line


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of session JSON")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where results go")
    parser.add_argument(
        "--strategies",
        default=",".join(DEFAULT_STRATEGIES),
        help=f"comma-separated, from: {', '.join(STRATEGIES)}",
    )
    parser.add_argument(
        "--prices",
        default=",".join(DEFAULT_BILLINGS),
        help="comma-separated MODEL@request or MODEL@message (models of ctxpack's price table; "
        "where the cache writes entries); the first is the headline",
    )
    parser.add_argument("--limit", type=int, default=None, help="only the first N sessions")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    names = [n.strip() for n in args.strategies.split(",") if n.strip()]
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown or not names:
        print(
            f"error: unknown strategies {unknown}; registered: {', '.join(STRATEGIES)}",
            file=sys.stderr,
        )
        return 2
    try:
        billings = [Billing.parse(b.strip()) for b in args.prices.split(",") if b.strip()]
        if not billings:
            raise ValueError("--prices names no billing")
        sessions = load_sessions(args.data, args.limit)
    except (ctxpack.CtxpackError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    counter = get_counter(counter=ENCODING)
    runs: list[StrategyRun] = []
    failed: dict[str, str] = {}
    started = time.perf_counter()
    for name in names:
        t0 = time.perf_counter()
        try:
            for session in sessions:
                runs.append(replay(session, name, STRATEGIES[name], counter, billings))
        except Exception as exc:
            failed[name] = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
            runs = [r for r in runs if r.strategy != name]
            continue
        print(f"  {name}: {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    summary = summarize(runs, billings)
    markdown = render_markdown(summary, sessions, billings, failed)
    print(markdown)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "agent_sessions.md").write_text(markdown + "\n", encoding="utf-8")
    payload = {
        "config": {
            "data": str(Path(args.data).resolve()),
            "sessions": [s.id for s in sessions],
            "strategies": names,
            "failed": failed,
            "billings": {
                b.label: {"cache_points": b.cache_points, **b.price.model_dump()} for b in billings
            },
            "encoding": ENCODING,
            "seconds": time.perf_counter() - started,
        },
        "results": summary,
    }
    (out / "agent_sessions.json").write_text(json.dumps(payload, indent=1) + "\n", "utf-8")
    if summary:
        plot(summary, out / "agent_sessions.png")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
