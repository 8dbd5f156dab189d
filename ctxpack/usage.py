"""What fills the context window: a request's tokens in five buckets, and what to do about it.

The five buckets are the system prompt, the tool definitions, the memory files (CLAUDE.md and
the like), the tool results (files read, command output) and the message history. The first
three are fixed: paid on every request of a session. The last two grow. :func:`context_usage`
counts them exactly as :func:`ctxpack.count_tokens` counts the request, so the buckets add up to
the request's total.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ConfigDict, Field

from ._internal.arguments import keyed, keyword_checked, tool_definitions
from ._internal.arguments import tokens as check_tokens
from ._internal.jsontext import read_json
from ._internal.options import FieldErrorModel
from ._internal.paths import shown_path
from ._internal.spans import Spans
from ._internal.tool_schemas import tool_tokens
from .adapters.read import counted_messages
from .errors import ConfigError
from .messages import Message
from .providers import provider_from_model, tool_name, tools_as_sent
from .tokens import (
    CounterLike,
    TokenCounter,
    checked_tool_tokens,
    get_counter,
    message_sizes,
)

__all__ = [
    "ContextUsage",
    "context_usage",
]

SYSTEM = "system prompt"
TOOLS = "tool definitions"
MEMORY = "memory files"
TOOL_RESULTS = "tool results"
HISTORY = "message history"
BUCKETS = (SYSTEM, TOOLS, MEMORY, TOOL_RESULTS, HISTORY)
FIXED = frozenset({SYSTEM, TOOLS, MEMORY})

# Anthropic's guidance for CLAUDE.md: keep it under 200 lines.
MEMORY_LINES_LIMIT = 200
# A tool result or a tool schema worth a suggestion: this many tokens, re-sent on every request.
LARGE_TOOL_RESULT = 2_000
LARGE_TOOL_SCHEMA = 1_000
SUGGESTIONS_PER_KIND = 3
# MCP tools are named mcp__<server>__<tool> by Claude Code and the MCP SDKs.
MCP_PREFIX = "mcp__"


class UsageItem(FieldErrorModel):
    """One thing in a bucket: a message, a tool's schema, a memory file."""

    model_config = ConfigDict(frozen=True)

    name: str
    tokens: int


class UsageBucket(FieldErrorModel):
    """One of the five buckets.

    Attributes:
        name: ``system prompt``, ``tool definitions``, ``memory files``, ``tool results`` or
            ``message history``.
        tokens: Its share of the request's tokens.
        fixed: Whether it is paid on every request (the first three) or grows.
        items: What it holds, largest first. Tool items are each tool's (or MCP server's)
            definitions without the tool block's own framing, which the bucket holds once, so
            they add up to a little less than the bucket (at most the bucket when the counter
            asks the provider: an item is then what the request would save without it).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    tokens: int
    fixed: bool
    items: list[UsageItem] = Field(default_factory=list)


class ContextUsage(FieldErrorModel):
    """What fills a request's context window (see :func:`context_usage`).

    Attributes:
        total: The request's tokens; the buckets add up to it.
        buckets: The five buckets, in the order of the prompt.
        window: The model's context window, if known.
        compaction_window: Where compaction starts, if given.
        free: ``window - total`` (negative when over), or ``None`` without a window.
        warnings: The window or the compaction window is exceeded.
        suggestions: The largest tool results and tool schemas, a memory file over 200 lines.
        counter: The token counter's name; ``exact`` whether its counts are the model's own.
    """

    model_config = ConfigDict(frozen=True)

    total: int
    buckets: list[UsageBucket]
    window: int | None = None
    compaction_window: int | None = None
    free: int | None = None
    warnings: list[str] = Field(default_factory=list)
    suggestions: list[str] = Field(default_factory=list)
    counter: str = ""
    exact: bool = True

    @property
    def fixed_tokens(self) -> int:
        """Tokens paid on every request: system prompt, tool definitions, memory files."""
        return sum(b.tokens for b in self.buckets if b.fixed)

    @property
    def growing_tokens(self) -> int:
        """Tokens that grow with the session: tool results and message history."""
        return sum(b.tokens for b in self.buckets if not b.fixed)

    def bucket(self, name: str) -> UsageBucket:
        """The bucket called ``name``.

        Raises:
            ConfigError: no such bucket (the message lists the five).
        """
        for b in self.buckets:
            if b.name == name:
                return b
        raise ConfigError(f"no bucket {name!r}; the buckets are {', '.join(BUCKETS)}")

    def report(self) -> str:
        """A plain-text table: one row per bucket, then free space, warnings, suggestions."""
        width = max(len(b.name) for b in self.buckets)
        lines = [f"{'bucket':<{width}}  {'tokens':>9}  {'share':>6}  kind"]
        for b in self.buckets:
            share = f"{b.tokens / self.total:.1%}" if self.total else "-"
            kind = "fixed" if b.fixed else "growing"
            lines.append(f"{b.name:<{width}}  {b.tokens:>9,}  {share:>6}  {kind}")
        lines.append(f"{'total':<{width}}  {self.total:>9,}")
        if self.window is not None and self.free is not None:
            lines.append(f"{'free':<{width}}  {max(self.free, 0):>9,}  of a {self.window:,} window")
        lines += [f"warning: {w}" for w in self.warnings]
        lines += [f"suggestion: {s}" for s in self.suggestions]
        return "\n".join(lines)

    def to_json(self) -> str:
        """The usage as JSON (every field, and ``fixed_tokens`` / ``growing_tokens``)."""
        data = self.model_dump()
        data["fixed_tokens"] = self.fixed_tokens
        data["growing_tokens"] = self.growing_tokens
        return json.dumps(data, indent=2)


def _k(tokens: int) -> str:
    """Tokens the way /context writes them: 94k, 200k, 1.2M."""
    if abs(tokens) >= 1_000_000:
        return f"{tokens / 1_000_000:.1f}M".replace(".0M", "M")
    if abs(tokens) >= 1_000:
        return f"{round(tokens / 1_000)}k"
    return str(tokens)


def _tool_items(
    tools: list[Mapping[str, Any]], counter: TokenCounter, total: int
) -> list[UsageItem]:
    """One item per tool or MCP server: its definitions without the tool block's framing, which
    the bucket holds once (counted with each group alone, every item carried it, and the items
    added up to more than the bucket)."""
    groups: dict[str, list[int]] = {}
    for at, tool in enumerate(tools):
        name = shown_path(str(tool_name(tool) or "?"))
        if name.startswith(MCP_PREFIX) and "__" in name[len(MCP_PREFIX) :]:
            server = name[len(MCP_PREFIX) :].split("__", 1)[0]
            groups.setdefault(f"MCP server {server}", []).append(at)
        else:
            groups.setdefault(name, []).append(at)
    # A counter that asks the provider counts a list whole, framing included: an item is then
    # what the request would save without it, where the framing cancels out.
    asks = callable(getattr(counter, "count_tools", None))
    items = []
    for name, group in groups.items():
        label = f"{name} ({len(group)} tools)" if name.startswith("MCP server") else name
        if asks:
            members = set(group)
            others = [tool for at, tool in enumerate(tools) if at not in members]
            rest = checked_tool_tokens(others, counter) if others else 0
            tokens = max(total - rest, 0)
        else:
            tokens = sum(tool_tokens(tools[at], counter) for at in group)
        items.append(UsageItem(name=label, tokens=tokens))
    return sorted(items, key=lambda i: -i.tokens)


def _call_names(messages: list[Message]) -> dict[str, str]:
    names = {}
    for m in messages:
        for call in m.tool_calls or ():
            args = call.function.arguments
            try:
                parsed = read_json(args)
            except ValueError:
                parsed = None
            # A call with one string argument (a command, a path) reads best as that string.
            if isinstance(parsed, dict) and len(parsed) == 1:
                (only,) = parsed.values()
                args = only if isinstance(only, str) else args
            # Printable: a name is shown on a terminal, where a control sequence in a command
            # the model wrote (a title, a screen clear) would act rather than show.
            args = shown_path(" ".join(args.split()))
            short = args if len(args) <= 48 else args[:45] + "..."
            names[call.id] = f"{shown_path(call.function.name)} {short}"
    return names


@keyword_checked
def context_usage(
    messages: Iterable[Message | Mapping[str, Any]],
    *,
    model: str | None = None,
    tools: Iterable[Mapping[str, Any]] | None = None,
    memory_files: Mapping[str, str] | None = None,
    window: int | None = None,
    compaction_window: int | None = None,
    counter: CounterLike | None = None,
) -> ContextUsage:
    """Split a request's tokens into the five buckets of a context window.

    System and developer messages are the system prompt; ``tool`` messages the tool results;
    user and assistant messages (tool calls included) and the reply priming the message history.
    A memory file's text is looked up in the messages and its tokens move from the message that
    holds it to the memory bucket. The buckets add up to exactly
    ``count_tokens(messages, model=model, counter=counter, tools=tools)``; where a message is
    split between a memory file and the rest, the split is the memory text counted alone, which
    may differ by a token or two from how the whole message tokenizes.

    Args:
        messages: The request's messages (``Message`` objects, OpenAI-style dicts, or
            Anthropic's, read as :func:`ctxpack.from_anthropic` reads them).
        model: Model name: picks the tokenizer and, when ``window`` is not given, the window from
            the shipped price table (:mod:`ctxpack.cost`).
        tools: Tool definitions sent with the request; ``mcp__<server>__<tool>`` names are
            grouped per MCP server.
        memory_files: Name to text of the memory files the request loaded (``CLAUDE.md``...);
            each text must appear in a message. Each file takes a copy of its text no earlier
            file took: files whose text the request holds once (the same text, or one inside
            another) count it once, the later ones at 0 tokens.
        window: The context window in tokens.
        compaction_window: Where compaction starts, when below the window.
        counter: A token counter instead of the model's (see :func:`ctxpack.get_counter`).

    Returns:
        A :class:`ContextUsage`.

    Raises:
        ConfigError: a memory file is not in any message, a window is not a positive int, the
            compaction window is larger than the window, or an argument has the wrong type.
        InvalidMessageError: a message is malformed.

    Example:
        >>> usage = context_usage(
        ...     [{"role": "system", "content": "You are terse."},
        ...      {"role": "user", "content": "List the files."}],
        ...     model="gpt-4", window=8192)
        >>> [(b.name, b.tokens) for b in usage.buckets if b.tokens]
        [('system prompt', 8), ('message history', 11)]
        >>> usage.total, usage.free
        (19, 8173)
    """
    if memory_files is not None:
        keyed(memory_files, "memory_files", values=str, what="file names to their text")
    resolved = get_counter(model, counter)
    msgs = list(counted_messages(messages))  # read only, never handed out
    tool_list = tool_definitions(tools) if tools is not None else []
    tool_list = tools_as_sent(tool_list, provider_from_model(model))  # counted as sent
    window = _window(window, compaction_window, model)
    buckets, tool_items = _buckets(msgs, tool_list, memory_files or {}, resolved)
    total = sum(b.tokens for b in buckets)
    return ContextUsage(
        total=total,
        buckets=buckets,
        window=window,
        compaction_window=compaction_window,
        free=window - total if window is not None else None,
        warnings=_warnings(total, window, compaction_window),
        suggestions=_suggestions(buckets[3].items, tool_items, memory_files or {}),
        counter=resolved.name,
        exact=resolved.exact,
    )


def _window(window: int | None, compaction_window: int | None, model: str | None) -> int | None:
    """The window: the one given, else the model's from the price table; both checked."""
    for name, value in (("window", window), ("compaction_window", compaction_window)):
        if value is not None:
            check_tokens(value, name)
    if window is None and model is not None:
        window = known_window(model)
    if window is not None and compaction_window is not None and compaction_window > window:
        raise ConfigError(
            f"compaction_window ({compaction_window}) is larger than the window ({window}); "
            "compaction starts below the window, or leave compaction_window out"
        )
    return window


def _buckets(
    msgs: list[Message],
    tool_list: list[Mapping[str, Any]],
    memory_files: Mapping[str, str],
    counter: TokenCounter,
) -> tuple[list[UsageBucket], list[UsageItem]]:
    """The five buckets, in the order of the window, and the tool definitions' items."""
    sizes = list(message_sizes(counter, msgs))
    memory_items = _move_memory(memory_files, msgs, sizes, counter)
    per_bucket = _message_items(msgs, sizes)
    tool_tokens = checked_tool_tokens(tool_list, counter, msgs) if tool_list else 0
    tool_items = _tool_items(tool_list, counter, tool_tokens)
    buckets = [
        _bucket(SYSTEM, per_bucket[SYSTEM]),
        _bucket(TOOLS, tool_items, tokens=tool_tokens),
        _bucket(MEMORY, memory_items),
        _bucket(TOOL_RESULTS, per_bucket[TOOL_RESULTS]),
        _bucket(HISTORY, per_bucket[HISTORY], extra=counter.count_messages([])),
    ]
    return buckets, tool_items


def _move_memory(
    memory_files: Mapping[str, str], msgs: list[Message], sizes: list[int], counter: TokenCounter
) -> list[UsageItem]:
    """One item per memory file, its tokens moved out of ``sizes`` of the message holding it.

    Each file takes a copy of its text no earlier file took: two files with the same text (or
    one inside the other) sent once are counted once, the later file at 0 tokens; sent twice,
    each copy is one file's."""
    items: list[UsageItem] = []
    taken = [Spans() for _ in msgs]  # per message, the copies files took
    for name, text in memory_files.items():
        found = [i for i, m in enumerate(msgs) if text and text in m.text]
        if not found:
            raise ConfigError(
                f"memory file {name!r} is not in any message of the request; pass the files "
                "the request loaded, with the exact text it holds"
            )
        holder = next((i for i in found if _take(msgs[i].text, text, taken[i])), None)
        moved = 0 if holder is None else min(counter.count(text), sizes[holder])
        if holder is not None:
            sizes[holder] -= moved
        items.append(UsageItem(name=name, tokens=moved))
    return items


def _take(haystack: str, text: str, spans: Spans) -> bool:
    """Take in ``spans`` the first copy of ``text`` in ``haystack`` that overlaps none of them;
    whether there was one."""
    start = haystack.find(text)
    while start >= 0:
        if spans.take(start, start + len(text)):
            return True
        start = haystack.find(text, start + 1)
    return False


def _message_items(msgs: list[Message], sizes: list[int]) -> dict[str, list[UsageItem]]:
    """Each message as an item of its bucket: system prompt, tool results or history."""
    calls = _call_names(msgs)
    per_bucket: dict[str, list[UsageItem]] = {SYSTEM: [], TOOL_RESULTS: [], HISTORY: []}
    for index, (m, tokens) in enumerate(zip(msgs, sizes, strict=True)):
        if m.role in ("system", "developer"):
            per_bucket[SYSTEM].append(UsageItem(name=f"{index}: {m.role}", tokens=tokens))
        elif m.role == "tool":
            label = calls.get(m.tool_call_id or "", shown_path(m.tool_call_id or "tool"))
            per_bucket[TOOL_RESULTS].append(UsageItem(name=f"{index}: {label}", tokens=tokens))
        else:
            per_bucket[HISTORY].append(UsageItem(name=f"{index}: {m.role}", tokens=tokens))
    return per_bucket


def _bucket(
    name: str, items: list[UsageItem], *, tokens: int | None = None, extra: int = 0
) -> UsageBucket:
    """A bucket of ``items``, largest first; its tokens are theirs (or ``tokens``) + ``extra``."""
    total = (sum(i.tokens for i in items) if tokens is None else tokens) + extra
    ranked = sorted(items, key=lambda i: -i.tokens)
    return UsageBucket(name=name, tokens=total, fixed=name in FIXED, items=ranked)


def _warnings(total: int, window: int | None, compaction_window: int | None) -> list[str]:
    warnings = []
    if window is not None and total > window:
        warnings.append(
            f"Context exceeds the {_k(window)}-token limit by {_k(total - window)} tokens"
        )
    if compaction_window is not None and total > compaction_window:
        warnings.append(
            f"Context is {_k(total - compaction_window)} tokens past the "
            f"{_k(compaction_window)}-token compaction window"
        )
    return warnings


def _suggestions(
    results: list[UsageItem], tools: list[UsageItem], memory: Mapping[str, str]
) -> list[str]:
    out = []
    for item in results[:SUGGESTIONS_PER_KIND]:
        if item.tokens >= LARGE_TOOL_RESULT:
            out.append(
                f"Tool result {item.name} takes {item.tokens:,} tokens, re-sent on every "
                "request: filter the output at the source, or read a line range"
            )
    for item in tools[:SUGGESTIONS_PER_KIND]:
        if item.tokens >= LARGE_TOOL_SCHEMA:
            out.append(
                f"Tool definitions of {item.name} take {item.tokens:,} tokens on every request: "
                "disable the tools this session does not use"
            )
    for name, text in memory.items():
        lines = len(text.splitlines())
        if lines > MEMORY_LINES_LIMIT:
            out.append(
                f"Memory file {name} has {lines} lines (over {MEMORY_LINES_LIMIT}), loaded on "
                "every request: keep what every task needs, move procedures into skills"
            )
    return out


def known_window(model: str) -> int | None:
    """The context window of ``model`` in tokens, when the shipped price table knows it."""
    from .cost import resolve_model_name, shipped_prices

    prices = shipped_prices().prices
    name = resolve_model_name(model, prices)
    return prices[name].context_window if name is not None else None
