"""Context editing: clear old tool results and compact the history, without breaking the cache.

Two operations, two stages, each usable alone in a :class:`~ctxpack.Pipeline`:

- :class:`ToolResultClearer` replaces old tool results by a short placeholder (the calls stay,
  so the model still sees what it did), with the names and defaults of Anthropic's
  ``clear_tool_uses_20250919`` edit.
- :class:`Compactor` replaces the older history by a summary; system and developer messages and
  user messages are never summarised, they stay verbatim.

Both keep every original: in ``result.artifacts`` (``result.original(message_id)``) and, when a
store is given, in an :class:`~ctxpack.store.ArtifactStore`.

**The cache-aware rule.** An edit rewrites the prompt from the first edited message on, so the
provider's prompt cache is lost from there: the next request pays the cache-write price for
everything after the edit point instead of the cache-read price. Clearing pays only when::

    removed tokens x expected re-sends x cache-read price > cache-write price x tokens after edit

and then it should happen rarely, in batches, at points that do not depend on when ``pack()``
happens to be called. Both stages therefore replay the history from its start, request by
request (a request is sent before each assistant message, and one is being prepared now), and
edit where the prompt as it would have been sent then crosses the trigger. Each decision depends
only on the messages before that request, so packing a longer version of the same history
reaches the same edits at the same places: appending messages never moves an earlier boundary,
it can only add a new batch.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import ClassVar, Literal, NamedTuple

from pydantic import ConfigDict, Field, PrivateAttr, field_validator

from ._internal.arguments import message_items, optional_text
from .cost import Price, price
from .errors import ConfigError, InvalidMessageError
from .messages import Message
from .pipeline import Decision, PackContext
from .stages import StageModel
from .store import ArtifactStore, artifact_id
from .tokens import REPLY_PRIMING, TokenCounter, message_sizes

__all__ = [
    "COMPACTION_FLOOR",
    "DEFAULT_PLACEHOLDER",
    "NOT_ENOUGH_MESSAGES",
    "ClearBatch",
    "CompactionPoint",
    "Compactor",
    "Summarizer",
    "ToolResultClearer",
    "evidence_terms",
    "extractive_digest",
]

DEFAULT_PLACEHOLDER = (
    "[Old tool result cleared to save context. The original is kept as artifact {artifact}.]"
)
# Prices used when neither the stage nor the context names a priced model.
_DEFAULT_PRICED_MODEL = "claude-sonnet-4-5"
# By default a batch waits until re-sending the clearable tokens has cost this many times the
# rewrite: it then expects (re-sends so far) / _PATIENCE more. At 1 (break even) a clear made
# shortly before a session ends costs more than it saves.
_PATIENCE = 2.0
# Anthropic's compaction refuses a trigger under this many input tokens.
COMPACTION_FLOOR = 50_000
NOT_ENOUGH_MESSAGES = "Not enough messages to compact."

Summarizer = Callable[[Sequence[Message], str | None], str]
"""Any callable ``(messages, instructions) -> summary text``."""

_THINKING = frozenset({"thinking", "redacted_thinking"})


def _request_points(messages: Sequence[Message]) -> list[int]:
    """Where requests were sent: before each assistant message, and now (the end)."""
    points = [i for i, m in enumerate(messages) if m.role == "assistant" and i > 0]
    if not points or points[-1] != len(messages):
        points.append(len(messages))
    return points


def _call_names(messages: Sequence[Message]) -> dict[str, tuple[str, int]]:
    """Tool call id -> (tool name, position of the assistant message that made the call)."""
    out: dict[str, tuple[str, int]] = {}
    for i, m in enumerate(messages):
        for call in m.tool_calls or ():
            out[call.id] = (call.function.name, i)
    return out


def _original_text(msg: Message) -> str:
    content = msg.content
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def _resolve_price(own: Price | None, model: str | None, ctx_model: str | None) -> Price:
    if own is not None:
        return own
    if model is not None:
        return price(model)
    if ctx_model is not None:
        try:
            return price(ctx_model)
        except ConfigError:
            pass  # a tokenizer name such as "gpt-4" need not be in the price table
    return price(_DEFAULT_PRICED_MODEL)


class _StoreModel(StageModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


# --------------------------------------------------------------------------------- clearing


class ClearBatch(NamedTuple):
    """One batch of clears, decided at the request sent with ``messages[:position]``.

    Attributes:
        position: The request's position: the prompt was ``messages[:position]``.
        message_ids: Ids of the messages edited in this batch, in order.
        tokens_removed: Tokens the batch removes from every later prompt.
        tokens_after_edit: Tokens of the edited prompt from the first edited message on: what
            the cache must write again.
    """

    position: int
    message_ids: tuple[str, ...]
    tokens_removed: int
    tokens_after_edit: int


class _Plan(NamedTuple):
    tool_positions: list[int]  # eligible results, ascending
    tool_saving: list[int]
    tool_edit: list[int]  # first message a clear of this result rewrites
    thinking_positions: list[int]
    thinking_saving: list[int]


class ToolResultClearer(_StoreModel):
    """Replace old tool results by a placeholder, batched so that the prompt cache survives.

    With ``cache_aware=False`` it follows Anthropic's ``clear_tool_uses_20250919``: when the
    prompt exceeds ``trigger`` tokens, every tool result except the ``keep`` most recent ones is
    cleared (unless that would clear fewer than ``clear_at_least`` tokens), results of
    ``exclude_tools`` are never cleared, and the calls' inputs stay unless
    ``clear_tool_inputs``. Like the API, it decides again at every request, so the boundary
    moves with each new tool result and the cache is written again from there every turn.

    With ``cache_aware=True`` (the default) it replays the history request by request; a batch
    is cleared at a request whose prompt, with the earlier batches applied, exceeds ``trigger``,
    and only when the batch pays for the cache it breaks: tokens removed x expected re-sends x
    cache-read price > cache-write price x tokens after the edit point. Unless
    ``expected_resends`` is given, the re-sends expected are those the clearable tokens have
    already had since the last batch (while the prompt was over the trigger): a batch is
    cleared once what re-sending them has cost pays for the rewrite. The same history always
    gives the same batches, and a longer history the same first batches.

    Args:
        trigger: Clear when the prompt exceeds this many tokens.
        keep: How many of the most recent tool results stay.
        clear_at_least: A batch that would remove fewer tokens is not cleared.
        exclude_tools: Tool names whose results are never cleared.
        clear_tool_inputs: Also replace the cleared calls' arguments by ``{}``.
        placeholder: The text a cleared result becomes; ``{artifact}`` is replaced by the
            original's artifact id (:func:`ctxpack.store.artifact_id`).
        cache_aware: Clear only in batches that pay (see above); ``False`` gives the plain
            Anthropic semantics.
        clear_thinking: Also remove thinking blocks from assistant messages, except those of the
            last ``clear_thinking`` assistant messages that have some; ``None`` keeps them all.
        model: Whose prices decide whether a batch pays (:func:`ctxpack.cost.price`); by default
            the context's model when it is priced, else ``claude-sonnet-4-5``.
        price: A :class:`~ctxpack.cost.Price` to use instead.
        ttl: The cache lifetime paid for: ``"5m"`` or ``"1h"`` (picks the write price).
        expected_resends: How many more requests will re-send a removed token; by default as
            many as the clearable tokens have been re-sent since the last batch.
        store: Where originals are also put; they are always in ``result.artifacts``.

    Example:
        >>> import ctxpack
        >>> call = {"id": "c1", "type": "function",
        ...         "function": {"name": "cat", "arguments": '{"path": "a.py"}'}}
        >>> history = [
        ...     {"role": "user", "content": "Read a.py", "id": "u"},
        ...     {"role": "assistant", "content": None, "tool_calls": [call], "id": "a"},
        ...     {"role": "tool", "tool_call_id": "c1", "content": "x = 1\\n" * 400, "id": "t"},
        ...     {"role": "assistant", "content": "Done.", "id": "b"},
        ...     {"role": "user", "content": "Thanks", "id": "u2"},
        ... ]
        >>> clearer = ctxpack.editing.ToolResultClearer(trigger=100, keep=0, cache_aware=False)
        >>> result = ctxpack.pack(history, budget=10_000, pipeline=ctxpack.Pipeline([clearer]))
        >>> result.messages[2].text.startswith("[Old tool result cleared")
        True
        >>> result.original("t").text == history[2]["content"]
        True
    """

    name: ClassVar[str] = "clear"

    trigger: int = Field(default=100_000, ge=0)
    keep: int = Field(default=3, ge=0)
    clear_at_least: int = Field(default=0, ge=0)
    exclude_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool = False
    placeholder: str = DEFAULT_PLACEHOLDER
    cache_aware: bool = True
    clear_thinking: int | None = Field(default=None, ge=1)
    model: str | None = None
    price: Price | None = None
    ttl: Literal["5m", "1h"] = "5m"
    expected_resends: int | None = Field(default=None, ge=1)
    store: ArtifactStore | None = Field(default=None, exclude=True)

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str | None) -> str | None:
        if value is not None:
            price(value)  # raises ConfigError listing the known models
        return value

    # ------------------------------------------------------------------ what to clear, where

    def _cleared_tool(self, msg: Message, ref: str) -> Message:
        return msg.model_copy(update={"content": self.placeholder.replace("{artifact}", ref)})

    def _plan(self, messages: Sequence[Message], counter: TokenCounter) -> _Plan:
        sizes = message_sizes(counter, messages)
        calls = _call_names(messages)
        excluded = set(self.exclude_tools)
        tool_positions: list[int] = []
        tool_saving: list[int] = []
        tool_edit: list[int] = []
        for i, m in enumerate(messages):
            if m.role != "tool" or m.pinned:
                continue
            name, at = calls.get(m.tool_call_id or "", ("", i))
            if name in excluded:
                continue
            # Sized with the content-hash id: nothing is stored until the batch is cleared.
            cleared = self._cleared_tool(m, artifact_id(_original_text(m)))
            saving = sizes[i] - counter.count_message(cleared)
            if self.clear_tool_inputs and at != i:
                call = next(c for c in messages[at].tool_calls or () if c.id == m.tool_call_id)
                saving += max(0, counter.count(call.function.arguments) - counter.count("{}"))
            if saving <= 0:
                continue  # already short: clearing it would only break the cache
            tool_positions.append(i)
            tool_saving.append(saving)
            tool_edit.append(at if self.clear_tool_inputs else i)
        thinking_positions: list[int] = []
        thinking_saving: list[int] = []
        if self.clear_thinking is not None:
            for i, m in enumerate(messages):
                stripped = _without_thinking(m)
                if stripped is not None:
                    thinking_positions.append(i)
                    thinking_saving.append(sizes[i] - counter.count_message(stripped))
        return _Plan(tool_positions, tool_saving, tool_edit, thinking_positions, thinking_saving)

    def batches(
        self,
        messages: Sequence[Message],
        *,
        counter: TokenCounter,
        model: str | None = None,
        protected: frozenset[str] = frozenset(),
    ) -> list[ClearBatch]:
        """The batches this clearer makes on ``messages``, in order.

        ``batches(history[:k])`` is the list of ``batches(history)`` that happen at or before
        ``k``, whenever ``k`` is a request point (``history[k]`` is an assistant message, or
        ``k == len(history)``). With ``cache_aware=False`` there is at most one batch, for the
        current request.
        """
        messages = tuple(messages)
        plan = self._plan(messages, counter)
        sizes = list(message_sizes(counter, messages))
        tools = [
            (p, s, e)
            for p, s, e in zip(plan.tool_positions, plan.tool_saving, plan.tool_edit, strict=True)
            if messages[p].id not in protected
        ]
        positions = [p for p, _, _ in tools]
        thinking = list(zip(plan.thinking_positions, plan.thinking_saving, strict=True))
        thinking_at = [p for p, _ in thinking]
        points = _request_points(messages)
        if not self.cache_aware:
            points = points[-1:]
        p_price = _resolve_price(self.price, self.model, model)
        write = p_price.cache_write_5m if self.ttl == "5m" else p_price.cache_write_1h
        read = p_price.cache_read
        current = sizes[:]  # each message's size with the batches so far applied
        cleared_tools = 0
        cleared_thinking = 0
        # What re-sending the clearable tokens has cost since the last batch, at the read price.
        rent = 0.0
        out: list[ClearBatch] = []
        for p in points:
            prompt = REPLY_PRIMING + (sum(current[:p]) if self.cache_aware else sum(sizes[:p]))
            if prompt <= self.trigger:
                continue
            new_tools = max(cleared_tools, bisect_left(positions, p) - self.keep)
            new_thinking = cleared_thinking
            if self.clear_thinking is not None:
                new_thinking = max(
                    cleared_thinking, bisect_left(thinking_at, p) - self.clear_thinking
                )
            batch_tools = tools[cleared_tools:new_tools]
            batch_thinking = thinking[cleared_thinking:new_thinking]
            removed = sum(s for _, s, _ in batch_tools) + sum(s for _, s in batch_thinking)
            rent += removed * read  # this request re-sends them unless it clears them
            if removed <= 0 or removed < self.clear_at_least:
                continue
            edited, edit = _apply_batch(current, batch_tools, batch_thinking)
            after = REPLY_PRIMING + sum(edited[edit:p])
            if self.cache_aware and not self._pays(removed, rent, read, write * after):
                continue
            ids = _batch_ids(messages, batch_tools, batch_thinking)
            out.append(ClearBatch(p, ids, removed, after))
            current = edited
            cleared_tools, cleared_thinking = new_tools, new_thinking
            rent = 0.0
        return out

    def _pays(self, removed: int, rent: float, read: float, rewrite: float) -> bool:
        """Whether clearing ``removed`` tokens saves more than ``rewrite`` (the cache write
        of everything after the edit point) costs."""
        # Without a given number of re-sends, expect as many as these tokens have already had
        # while clearable: clear once their rent has paid for the rewrite (the break-even rule:
        # never more than twice the cost of the best choice made knowing the future, and it
        # batches, since the rent starts again at 0).
        if self.expected_resends:
            return removed * read * self.expected_resends > rewrite
        return rent / _PATIENCE > rewrite

    # ---------------------------------------------------------------------------- the stage

    def __call__(self, ctx: PackContext, /) -> PackContext:
        messages = ctx.messages
        found = self.batches(
            messages, counter=ctx.counter, model=ctx.model, protected=ctx.protected
        )
        if not found:
            return ctx
        by_id = {m.id: i for i, m in enumerate(messages)}
        batch_of: dict[str, ClearBatch] = {}
        for batch in found:
            for mid in batch.message_ids:
                batch_of.setdefault(mid, batch)
        calls = _call_names(messages)
        cleared_calls = {
            m.tool_call_id
            for m in messages
            if m.role == "tool" and m.id in batch_of and self.clear_tool_inputs
        }
        out = list(messages)
        decisions: list[Decision] = []
        artifacts = dict(ctx.artifacts)
        mode = "cache-aware batch" if self.cache_aware else "cleared"
        for mid, batch in batch_of.items():
            i = by_id[mid]
            msg = messages[i]
            if msg.role == "tool":
                new, what = self._clear_result(msg, calls.get(msg.tool_call_id or "", ("?", i))[0])
            else:
                new, what = self._clear_assistant(msg, cleared_calls)
            if new is msg:
                continue
            out[i] = new
            artifacts.setdefault(msg.id, msg)
            decisions.append(
                Decision(
                    stage=self.name,
                    action="cleared",
                    message_id=msg.id,
                    reason=(
                        f"{' and '.join(what)} cleared ({mode} at message {batch.position}: "
                        f"{batch.tokens_removed} tokens removed, {batch.tokens_after_edit} to "
                        "re-cache); original kept as an artifact"
                    ),
                    tokens_before=ctx.tokens(msg),
                    tokens_after=ctx.tokens(new),
                )
            )
        if not decisions:
            return ctx
        decisions.sort(key=lambda d: by_id[d.message_id])
        return ctx.decide(*decisions, messages=tuple(out), artifacts=artifacts)

    def _clear_result(self, msg: Message, tool: str) -> tuple[Message, list[str]]:
        """A tool result replaced by the placeholder (its original put in the store, under the
        id the store gives: a stored session's ids are its own, not the content hash)."""
        text = _original_text(msg)
        ref = (
            artifact_id(text)
            if self.store is None
            else self.store.put(text, message_id=msg.id, tool=tool, kind="tool_result")
        )
        return self._cleared_tool(msg, ref), [f"tool result of {tool!r}"]

    def _clear_assistant(
        self, msg: Message, cleared_calls: set[str | None]
    ) -> tuple[Message, list[str]]:
        """An assistant message without the inputs of its cleared calls and, when asked, its
        thinking blocks (the original put in the store); ``msg`` itself when nothing changes."""
        new = msg
        what = []
        if msg.tool_calls and cleared_calls & {c.id for c in msg.tool_calls}:
            new = _without_inputs(new, cleared_calls)
            what.append("tool inputs")
        stripped = _without_thinking(new) if self.clear_thinking is not None else None
        if stripped is not None:
            new = stripped
            what.append("thinking blocks")
        if self.store is not None and new is not msg:
            self.store.put(_as_json(msg), message_id=msg.id, kind="assistant_message")
        return new, what


def _as_json(msg: Message) -> str:
    """A message whole, tool calls included, as the store keeps an original that is not a tool
    output."""
    return json.dumps(msg.model_dump(mode="json"), ensure_ascii=False)


def _without_inputs(msg: Message, cleared_calls: set[str | None]) -> Message:
    """``msg`` with the arguments of its calls in ``cleared_calls`` replaced by ``{}``."""
    calls = [
        c.model_copy(update={"function": c.function.model_copy(update={"arguments": "{}"})})
        if c.id in cleared_calls
        else c
        for c in msg.tool_calls or ()
    ]
    return msg.model_copy(update={"tool_calls": calls})


def _apply_batch(
    current: list[int],
    batch_tools: Sequence[tuple[int, int, int]],
    batch_thinking: Sequence[tuple[int, int]],
) -> tuple[list[int], int]:
    """The message sizes once a batch is cleared, and its edit point (the first message it
    rewrites)."""
    edit = min([e for _, _, e in batch_tools] + [q for q, _ in batch_thinking])
    edited = current[:]
    for q, s, _ in batch_tools:
        edited[q] -= s
    for q, s in batch_thinking:
        edited[q] -= s
    return edited, edit


def _batch_ids(
    messages: Sequence[Message],
    batch_tools: Sequence[tuple[int, int, int]],
    batch_thinking: Sequence[tuple[int, int]],
) -> tuple[str, ...]:
    """The ids of the messages a batch rewrites, in history order."""
    ids = (
        {messages[q].id for q, _, _ in batch_tools}
        | {messages[e].id for _, _, e in batch_tools}
        | {messages[q].id for q, _ in batch_thinking}
    )
    return tuple(sorted(ids, key={m.id: i for i, m in enumerate(messages)}.__getitem__))


def _without_thinking(msg: Message) -> Message | None:
    """``msg`` without its thinking blocks, or ``None`` when it has none (or only those)."""
    if msg.role != "assistant" or not isinstance(msg.content, list):
        return None
    kept = [part for part in msg.content if part.get("type") not in _THINKING]
    if len(kept) == len(msg.content) or (not kept and not msg.tool_calls):
        return None
    return msg.model_copy(update={"content": kept or None})


# ------------------------------------------------------------------------ the extractive digest

_PATH = re.compile(
    r"(?<![\w/.-])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:py|pyi|js|ts|tsx|"
    r"jsx|json|toml|yaml|yml|cfg|ini|txt|md|rst|c|h|cc|cpp|go|rs|java|rb|sh|html|"
    r"css|sql|lock|diff|patch)\b"
)
_IDENT = re.compile(
    r"\b(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*\b"  # dotted.names
    r"|\b[a-z]\w*_\w+\b|\b_\w+\b"  # snake_case and _private
    r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b"  # CamelCase
    r"|\b[A-Za-z_]\w*(?=\()"  # called names
)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)*(?![\w])")
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_ERROR_LINE = re.compile(
    r"Traceback|Error\b|Exception\b|\bFAILED\b|\bFAIL\b|error:|\bassert(?:ion)?\b|"
    r"No such file|not found|command not found|SyntaxError|^\s*File \"",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(?:I'll|I will|I need to|I should|we should|we need|let's|let me|decided?|instead|"
    r"the (?:fix|issue|problem|bug|cause) is|root cause|because|so that|plan)\b",
    re.IGNORECASE,
)
_PLAN_LINE = re.compile(
    r"^\s*(?:\d+[.)]\s|[-*]\s\[[ x]\]|TODO|FIXME|Next(?: step)?s?:|Plan:)", re.IGNORECASE
)
_WRITES = re.compile(
    r"\bsed\s+-i|>>?\s*\S|\btee\b|\bpatch\b|\bgit\s+(?:apply|checkout|restore)|\bmv\b|\bcp\b|"
    r"\brm\b|\btouch\b|\bmkdir\b|\bcreate\b|\bstr_replace\b|\bwrite\b|\bedit\b|open\([^)]*['\"]w",
    re.IGNORECASE,
)
_SECTIONS = ("instructions", "decisions", "files", "commands", "errors", "plan", "diff", "evidence")
_SECTION_WORDS = {
    "decisions": ("decision", "decisions", "decided"),
    "files": ("file", "files", "path", "paths"),
    "commands": ("command", "commands"),
    "errors": ("error", "errors", "failure", "failures", "traceback"),
    "plan": ("plan", "todo", "todos", "next"),
    "diff": ("diff", "diffs", "patch", "patches", "change", "changes"),
    "evidence": ("identifier", "identifiers", "number", "numbers", "id", "ids"),
}
_STOP = frozenset(
    {"the", "a", "an", "and", "or", "of", "on", "in", "to", "for", "with", "only", "keep"}
    | {"focus", "what", "that", "this", "is", "are", "be", "it", "its", "from", "by", "at"}
    | {"as", "about", "into", "all", "any"}
)


def evidence_terms(text: str) -> list[str]:
    """The identifiers, paths and numbers of ``text`` (what an agent needs verbatim), in order,
    without repeats.

    Example:
        >>> evidence_terms("Fixed auth/token.py:88, refresh_token() now returns 3600")
        ['auth/token.py', '88', 'refresh_token', '3600']
    """
    if not isinstance(text, str):
        raise ConfigError(f"text must be a string, got {type(text).__name__}")
    found: dict[str, int] = {}
    for pattern in (_PATH, _IDENT, _NUMBER):
        for match in pattern.finditer(text):
            term = match.group().strip(".")
            if len(term) < 2 or term in found:
                continue
            if pattern is _IDENT and any(term in p for p in found if "/" in p or "." in p):
                continue  # part of a path already found
            found[term] = match.start()
    return sorted(found, key=found.__getitem__)


def _call_text(msg: Message) -> list[tuple[str, str, str]]:
    """(call id, tool name, command or arguments) of each call ``msg`` makes."""
    out = []
    for call in msg.tool_calls or ():
        args = call.function.arguments
        try:
            value = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            value = args
        if isinstance(value, dict) and len(value) == 1:
            value = next(iter(value.values()))
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        out.append((call.id, call.function.name, text))
    return out


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _wanted_sections(instructions: str | None) -> tuple[set[str], list[str]]:
    """Sections to write and focus words, read from the instruction."""
    if not instructions:
        return set(_SECTIONS), []
    words = [w.lower() for w in re.findall(r"[\w./-]+", instructions)]
    named = {s for s, cues in _SECTION_WORDS.items() if any(w in cues for w in words)}
    cue_words = {w for cues in _SECTION_WORDS.values() for w in cues}
    focus = [w for w in words if w not in _STOP and w not in cue_words and len(w) > 2]
    if "only" in words and named:
        return named | {"instructions"}, focus
    return set(_SECTIONS), focus


def extractive_digest(messages: Sequence[Message], instructions: str | None = None) -> str:
    """A summary without a model: what an agent needs to go on, copied verbatim from ``messages``.

    It keeps every user instruction (verbatim), the decisions the assistant stated, the files
    touched with the last command on each and its return code, the commands run, the errors
    still open (those of the latest failing outputs), the current plan and TODOs, the diff
    lines, and an index of the identifiers, paths and numbers the assistant's words and commands
    name. The instruction steers it: ``"keep only the plan and the diff"`` writes only those
    sections (user instructions are always kept); other words (``"focus on the auth bug fix"``)
    add a section with every line that names them.

    Args:
        messages: The messages to summarise, chronological.
        instructions: What to keep, in words; ``None`` keeps every section.

    Returns:
        The digest, as Markdown sections.

    Example:
        >>> from ctxpack import Message, ToolCall, FunctionCall
        >>> call = ToolCall(id="c1", function=FunctionCall(
        ...     name="bash", arguments='{"command": "pytest tests/test_auth.py"}'))
        >>> digest = extractive_digest([
        ...     Message(role="user", content="Fix the refresh bug. Never touch cookies."),
        ...     Message(role="assistant", content="I'll run the auth tests.", tool_calls=[call]),
        ...     Message(role="tool", tool_call_id="c1",
        ...             content="<returncode>1</returncode>\\nFAILED test_x - KeyError: 'exp'"),
        ... ])
        >>> "Never touch cookies." in digest and "KeyError: 'exp'" in digest
        True
    """
    optional_text(instructions, "instructions")
    for index, msg in enumerate(message_items(messages)):
        if not isinstance(msg, Message):
            raise InvalidMessageError(
                f"expected a Message, got {type(msg).__name__}", index=index, field=None
            )
    sections, focus = _wanted_sections(instructions)
    digest = _Digest(focus)
    for msg in messages:
        digest.read(msg)
    return digest.render(sections)


class _Digest:
    """What :func:`extractive_digest` collects from the messages, section by section."""

    def __init__(self, focus: list[str]) -> None:
        self.focus = focus
        self.commands: dict[str, tuple[str, str]] = {}  # call id -> (tool, command)
        self.user: list[str] = []
        self.decisions: list[str] = []
        self.ran: list[str] = []
        self.files: dict[str, str] = {}
        self.errors: dict[str, None] = {}
        self.plan: list[str] = []
        self.diff: list[str] = []
        self.focus_lines: dict[str, None] = {}
        self.said: list[str] = []  # assistant text and commands: where the index terms come from

    def read(self, msg: Message) -> None:
        text = msg.text
        if self.focus:
            for line in text.splitlines():
                low = line.lower()
                if line.strip() and any(w in low for w in self.focus):
                    self.focus_lines[_clip(line, 300)] = None
        if msg.role in ("user", "system", "developer"):
            if text.strip():
                self.user.append(text.strip())
        elif msg.role == "assistant":
            self._assistant(msg, text)
        else:
            self._tool_result(msg, text)

    def _assistant(self, msg: Message, text: str) -> None:
        self.said.append(text)
        kept = [s for s in _sentences(text) if _DECISION.search(s)]
        self.decisions.extend(_clip(s, 300) for s in kept[:3])
        current_plan = [line.strip() for line in text.splitlines() if _PLAN_LINE.match(line)]
        if current_plan:
            self.plan = current_plan  # the latest plan replaces the earlier ones
        for call_id, tool, command in _call_text(msg):
            self.commands[call_id] = (tool, command)
            self.said.append(command)

    def _tool_result(self, msg: Message, text: str) -> None:
        """How its command ended, what it touched, what failed."""
        tool, command = self.commands.get(msg.tool_call_id or "", ("tool", ""))
        code = _RETURNCODE.search(text)
        status = f"rc {code.group(1)}" if code else "done"
        self.ran.append(f"`{_clip(command, 200)}` ({tool}, {status})")
        for path in _PATH.findall(command):
            verb = "modified" if _WRITES.search(command) else "read"
            self.files[path] = f"{verb} by `{_clip(command, 120)}` ({status})"
        failing = [line for line in text.splitlines() if _ERROR_LINE.search(line)]
        if failing or (code and code.group(1) != "0"):
            for line in failing[-8:] or text.strip().splitlines()[-3:]:
                self.errors[_clip(line, 300)] = None
        elif command:
            # A command that now succeeds closes the errors an earlier run of it left open.
            self.errors = {e: None for e in self.errors if command not in e}
        if re.search(r"^diff --git|^@@ ", text, re.MULTILINE):
            self.diff.extend(
                line
                for line in text.splitlines()
                if line.startswith(("+", "-", "@@", "diff --git"))
                and not line.startswith(("+++", "---"))
            )

    def render(self, sections: set[str]) -> str:
        """The sections asked for, as Markdown, then the index of what is named elsewhere."""
        out: list[str] = []

        def section(key: str, title: str, lines: Sequence[str]) -> None:
            if key in sections and lines:
                out.append(f"## {title}\n" + "\n".join(lines))

        files = [f"- {p}: {s}" for p, s in self.files.items()]
        section("instructions", "User instructions (verbatim)", [f"> {u}" for u in self.user])
        section("decisions", "Decisions", [f"- {d}" for d in dict.fromkeys(self.decisions)])
        section("files", "Files touched (last known state)", files)
        section("commands", "Commands run", [f"- {r}" for r in self.ran])
        section("errors", "Open errors", [f"- {e}" for e in list(self.errors)[-20:]])
        section("plan", "Current plan and TODOs", [f"- {p}" for p in self.plan])
        section("diff", "Diff", ["```diff", *self.diff[-200:], "```"] if self.diff else [])
        if self.focus:
            out.append(
                f"## Lines about: {' '.join(self.focus)}\n"
                + "\n".join(f"- {f}" for f in self.focus_lines)
            )
        written = "\n".join(out)
        index = [t for t in evidence_terms("\n".join(self.said)) if t not in written]
        section(
            "evidence", "Identifiers, paths and numbers named", [", ".join(index)] if index else []
        )
        return "\n\n".join(out)


# ---------------------------------------------------------------------------------- compaction


class CompactionPoint(NamedTuple):
    """One compaction, decided at the request sent with ``messages[:position]``.

    Attributes:
        position: The request's position.
        start: First position of the history it compacts (after the previous compaction).
        end: Position of the first message kept as is after the summary.
        replaced: Ids of the messages the summary replaces (a previous summary's included).
        summary: The summary message.
    """

    position: int
    start: int
    end: int
    replaced: tuple[str, ...]
    summary: Message


def _verbatim(msg: Message, protected: frozenset[str]) -> bool:
    """Never summarised: instructions (system, developer, user), pinned and protected messages,
    and a provider's own compaction block (it must be sent back byte for byte)."""
    if msg.role in ("system", "developer", "user") or msg.pinned or msg.id in protected:
        return not _is_summary(msg)
    return isinstance(msg.content, list) and any(
        part.get("type") == "compaction" for part in msg.content
    )


def _is_summary(msg: Message) -> bool:
    meta = msg.metadata.get("ctxpack")
    return isinstance(meta, dict) and "summary_of" in meta


class Compactor(_StoreModel):
    """Replace the older history by a summary when the prompt exceeds ``trigger`` tokens.

    System and developer messages, user messages (instructions and constraints), pinned and
    protected messages are never summarised: they stay, verbatim and in order, before the
    summary. What is summarised are the assistant turns and tool exchanges before the last
    ``keep_recent`` messages (never splitting a tool exchange); the summary is a user message
    whose ``metadata["ctxpack"]["summary_of"]`` lists the ids it replaces, and each original
    stays in ``result.artifacts`` (and in ``store`` when given); the summary names the artifact
    id of each tool output it replaces (:func:`ctxpack.store.artifact_id` of its text). When
    there is too little to summarise, the context is left as it is and a ``kept`` decision says
    ``"Not enough messages to compact."``.

    Like :class:`ToolResultClearer`, it replays the history request by request and compacts
    where the prompt, with the earlier compactions applied, crosses ``trigger``: the same
    history always gets the same summaries at the same places, and a longer one the same first
    ones. Summaries are memoised by content on the stage (:meth:`clear_cache`), so a model is
    called once per compaction, not once per ``pack()``.

    Args:
        summarizer: Any callable ``(messages, instructions) -> text``; by default
            :func:`extractive_digest`, which needs no model.
        trigger: Compact when the prompt exceeds this many tokens; at least 50,000 (the floor
            Anthropic's compaction sets).
        keep_recent: How many of the most recent messages stay as they are.
        instructions: What the summary must keep, in words (``"focus on the auth bug fix"``);
            passed to the summarizer.
        store: Where originals are also put; they are always in ``result.artifacts``.

    Example:
        >>> import ctxpack
        >>> seen = []
        >>> def summarize(messages, instructions):
        ...     seen.append((len(messages), instructions))
        ...     return "The agent listed the files."
        >>> call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        >>> history = [
        ...     {"role": "system", "content": "You are a coding agent."},
        ...     {"role": "user", "content": "Never delete files."},
        ...     {"role": "assistant", "content": None, "tool_calls": [call]},
        ...     {"role": "tool", "tool_call_id": "c1", "content": "file.py\\n" * 30_000},
        ...     {"role": "assistant", "content": "There are many files."},
        ...     {"role": "user", "content": "Open the first."},
        ... ]
        >>> compactor = ctxpack.editing.Compactor(
        ...     summarizer=summarize,
        ...     trigger=50_000,
        ...     keep_recent=1,
        ...     instructions="keep the file names",
        ... )
        >>> result = ctxpack.pack(history, budget=200_000, pipeline=ctxpack.Pipeline([compactor]))
        >>> [m.role for m in result.messages]
        ['system', 'user', 'user', 'user']
        >>> seen
        [(3, 'keep the file names')]
    """

    name: ClassVar[str] = "compact"

    summarizer: Summarizer | None = Field(default=None, exclude=True)
    trigger: int = 150_000
    keep_recent: int = Field(default=6, ge=0)
    instructions: str | None = None
    store: ArtifactStore | None = Field(default=None, exclude=True)

    _cache: OrderedDict[str, str] = PrivateAttr(default_factory=OrderedDict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    _CACHE_SIZE = 256

    @field_validator("trigger")
    @classmethod
    def _floor(cls, value: int) -> int:
        if value < COMPACTION_FLOOR:
            raise ValueError(
                f"must be at least {COMPACTION_FLOOR:,} tokens (Anthropic's floor); compacting a "
                "shorter prompt costs a cache rewrite for little gain"
            )
        return value

    def clear_cache(self) -> None:
        """Forget the memoised summaries."""
        with self._lock:
            self._cache.clear()

    def _summarize(self, messages: Sequence[Message]) -> str:
        key = hashlib.sha256(
            json.dumps(
                [[m.id, m.role, _original_text(m)] for m in messages] + [self.instructions],
                ensure_ascii=False,
            ).encode()
        ).hexdigest()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        summarize = self.summarizer or extractive_digest
        text = summarize(list(messages), self.instructions)
        if not isinstance(text, str):
            raise ConfigError(
                f"the summarizer returned {type(text).__name__}, not str; a summarizer is a "
                "callable (messages, instructions) -> text"
            )
        with self._lock:
            self._cache[key] = text
            while len(self._cache) > self._CACHE_SIZE:
                self._cache.popitem(last=False)
        return text

    def _tail_start(self, messages: Sequence[Message], start: int, p: int) -> int:
        t = max(start, p - self.keep_recent)
        # Never split a tool exchange: a tail that would open on results takes their call too.
        while t > start and messages[t].role == "tool" if t < p else False:
            t -= 1
        return t

    def points(
        self,
        messages: Sequence[Message],
        *,
        counter: TokenCounter,
        protected: frozenset[str] = frozenset(),
    ) -> tuple[list[CompactionPoint], int | None]:
        """The compactions made on ``messages``, and the position of a request that crossed the
        trigger with too little to compact (``None`` if none did).

        ``points(history[:k])`` is the list of ``points(history)`` that happen at or before
        ``k`` whenever ``k`` is a request point. With a ``store``, the tool outputs a summary
        names are put in it, for the summary to name them by the ids the store gives.
        """
        messages = tuple(messages)
        sizes = message_sizes(counter, messages)
        verbatim = [_verbatim(m, protected) for m in messages]
        by_id = {m.id: m for m in messages}
        done: list[CompactionPoint] = []
        kept_tokens = 0  # verbatim messages before the compacted boundary
        summary_tokens = 0
        start = 0
        refused: int | None = None
        for p in _request_points(messages):
            prompt = REPLY_PRIMING + kept_tokens + summary_tokens + sum(sizes[start:p])
            if prompt <= self.trigger:
                continue
            end = self._tail_start(messages, start, p)
            region = [
                m for m, v in zip(messages[start:end], verbatim[start:end], strict=True) if not v
            ]
            if len(region) < 2:
                refused = p
                continue
            previous = done[-1].summary if done else None
            replaced = (tuple(done[-1].replaced) if done else ()) + tuple(m.id for m in region)
            text = self._summarize(([previous] if previous else []) + region)
            digest = hashlib.blake2b("\x00".join(replaced).encode(), digest_size=6).hexdigest()
            summary_id = f"summary-{digest}"
            # The tool outputs' artifact ids, so that the model can ask for an original back.
            handles = ", ".join(
                f"{mid}={self._tool_artifact(by_id[mid], summary_id)}"
                for mid in replaced
                if by_id[mid].role == "tool"
            )
            summary = Message(
                role="user",
                id=summary_id,
                content=(
                    f"[Summary of {len(replaced)} earlier messages, replaced to save context; "
                    "the originals are kept as artifacts"
                    + (f" (tool outputs: {handles})" if handles else "")
                    + f".]\n\n{text}"
                ),
                metadata={
                    "ctxpack": {"summary_of": list(replaced), "instructions": self.instructions}
                },
            )
            kept_tokens += sum(
                s for s, v in zip(sizes[start:end], verbatim[start:end], strict=True) if v
            )
            summary_tokens = counter.count_message(summary)
            done.append(CompactionPoint(p, start, end, replaced, summary))
            start = end
            refused = None
        return done, refused

    def _tool_artifact(self, msg: Message, summary_id: str) -> str:
        """The artifact id of a summarised tool output: the store's (stored now), or without a
        store the content hash."""
        text = _original_text(msg)
        if self.store is None:
            return artifact_id(text)
        return self.store.put(text, message_id=msg.id, kind="compacted_message", summary=summary_id)

    def __call__(self, ctx: PackContext, /) -> PackContext:
        messages = ctx.messages
        done, refused = self.points(messages, counter=ctx.counter, protected=ctx.protected)
        if not done:
            if refused is None or not messages:
                return ctx
            return ctx.decide(
                Decision(
                    stage=self.name,
                    action="kept",
                    message_id=messages[-1].id,
                    reason=NOT_ENOUGH_MESSAGES,
                )
            )
        last = done[-1]
        by_id = {m.id: m for m in messages}
        replaced = [mid for mid in last.replaced if mid in by_id]
        gone = set(replaced)
        head = [m for m in messages[: last.end] if m.id not in gone]
        artifacts = dict(ctx.artifacts)
        decisions: list[Decision] = []
        for mid in replaced:
            msg = by_id[mid]
            artifacts.setdefault(mid, msg)
            if self.store is not None and msg.role != "tool":
                # Whole, calls included (a tool output was stored by points(), under the id
                # the summary names).
                self.store.put(
                    _as_json(msg), message_id=mid, kind="compacted_message", summary=last.summary.id
                )
            decisions.append(
                Decision(
                    stage=self.name,
                    action="merged",
                    message_id=mid,
                    reason=f"compacted into {last.summary.id}; original kept as an artifact",
                    tokens_before=ctx.tokens(msg),
                    tokens_after=0,
                )
            )
        before = sum(ctx.tokens(by_id[mid]) for mid in replaced)
        decisions.append(
            Decision(
                stage=self.name,
                action="merged",
                message_id=last.summary.id,
                reason=(
                    f"summary of {len(last.replaced)} messages (compaction {len(done)} at message "
                    f"{last.position})"
                ),
                tokens_before=before,
                tokens_after=ctx.tokens(last.summary),
            )
        )
        out = (*head, last.summary, *messages[last.end :])
        return ctx.decide(*decisions, messages=out, artifacts=artifacts)
