"""Managed mode: a session whose every request fits its window, and stays cheap with a prompt cache.

:class:`WindowPolicy` says how (the window, the room kept for the reply, when to clear, when to
compact); :class:`WindowState` is everything the managed mode remembers between requests, one
JSON-serialisable object (:meth:`WindowState.to_json`, :meth:`WindowState.from_json`) that a
session store can keep next to the messages. :func:`render_window` builds one request.

Each request is the session's compact record (tool outputs already filtered at arrival), with
three kinds of edit, each applied rarely because each makes the provider's prompt cache write
again what follows the edit point:

1. **Clearing.** Once the prompt passes ``clear_at`` of the room, the old tool results (all but
   the ``keep`` most recent) are replaced by a placeholder naming their stored original, in one
   batch, once re-sending them has cost twice the cache write the batch causes (what follows
   the edit point is written again), or at once when the prompt passes ``compact_at`` and the
   batch brings it back down.
2. **Compaction.** Once the prompt passes ``compact_at`` of the room even so, everything before
   the last ``keep_recent`` messages is replaced by a summary (the extractive digest unless a
   summarizer is given), except the system prompt and every user instruction, which stay
   verbatim; pinned content (memory files, skills) is then re-injected within its budgets.
3. **Emergency clearing.** A request that would still not fit has every tool result cleared.

Every removed message stays in the session's store, named by the placeholder or the summary's
index artifact, and every edit is a decision with the tokens the cache writes again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .cost import price
from .editing import Summarizer, extractive_digest
from .editing.clear import _without_thinking
from .editing.compact import _verbatim as _never_summarised
from .errors import BudgetExceededError, ConfigError
from .filters import RETRIEVE_TOOL_NAME
from .messages import Message
from .pipeline import Decision
from .store import ArtifactStore
from .tokens import REPLY_PRIMING, TokenCounter

__all__ = [
    "DEFAULT_PINNED_BUDGET",
    "DEFAULT_SKILL_BUDGET",
    "PinnedText",
    "WindowEvent",
    "WindowPolicy",
    "WindowState",
    "cache_warnings",
    "fit_digest",
    "render_window",
]

DEFAULT_SKILL_BUDGET = 5_000
DEFAULT_PINNED_BUDGET = 25_000
# Prices that decide whether a clearing batch pays, when the session's model is not priced.
_DEFAULT_PRICED_MODEL = "claude-sonnet-4-5"
_PINNED_KEY = "pinned_kind"
# A batch is cleared once re-sending its tokens has cost this many times the cache write it
# causes (the rule of ToolResultClearer): at 1, a batch cleared just before the session ends
# costs more than it saves.
_PATIENCE = 2.0


class PinnedText(BaseModel):
    """Content re-injected after a compaction: a memory file (whole) or a skill (within budgets).

    Attributes:
        name: What it is called (``"CLAUDE.md"``, ``"deploy-skill"``).
        text: Its content.
        kind: ``"memory"`` (re-injected whole) or ``"skill"`` (cut to its head within budgets).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    text: str
    kind: Literal["memory", "skill"] = "skill"

    def message(self) -> Message:
        """The user message that brings it into the conversation (what ``Session.pin`` adds)."""
        return Message(
            role="user",
            content=self.text,
            metadata={"ctxpack": {_PINNED_KEY: self.kind, "pinned_name": self.name}},
        )


class WindowPolicy(BaseModel):
    """How a managed session keeps every request within its window.

    Args:
        window: The model's context window, in tokens.
        reply_room: Tokens kept free for the reply; by default an eighth of the window, at most
            8,192.
        clear_at: Clear old tool results once the prompt passes this share of the room (the
            window less the reply room and the tool definitions).
        keep: How many of the most recent tool results a clearing keeps.
        compact_at: Compact once the prompt still passes this share of the room.
        keep_recent: How many of the most recent messages a compaction keeps as they are.
        summary_share: The share of the room a summary may take (the digest is cut to it).
        summarizer: ``(messages, instructions) -> text``; by default
            :func:`~ctxpack.editing.extractive_digest`, which needs no model.
        instructions: What a summary must keep, in words.
        keep_thinking: Keep the thinking blocks of this many of the last assistant turns (as
            Anthropic's ``clear_thinking_20251015``); the older ones go with the next clearing.
            ``None`` keeps them all.
        skill_budget: Tokens each skill may take when re-injected (its head is kept).
        pinned_budget: Tokens all skills together may take when re-injected (oldest dropped
            first).
        server_side: Leave the edits to the provider: :func:`render_window` only checks the
            window, and the session produces the provider's ``context_management`` field.
        model: Whose prices decide whether a clearing pays; by default the session's model when
            it is priced, else ``claude-sonnet-4-5``.

    Example:
        >>> policy = WindowPolicy(window=64_000)
        >>> policy.room(tool_tokens=0)
        56000
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    window: int = Field(ge=1_024)
    reply_room: int | None = Field(default=None, ge=0)
    clear_at: float = Field(default=0.35, gt=0, le=1)
    keep: int = Field(default=3, ge=0)
    compact_at: float = Field(default=0.6, gt=0, le=1)
    keep_recent: int = Field(default=6, ge=1)
    summary_share: float = Field(default=0.15, gt=0, lt=1)
    summarizer: Summarizer | None = Field(default=None, exclude=True)
    instructions: str | None = None
    keep_thinking: int | None = Field(default=None, ge=0)
    skill_budget: int = Field(default=DEFAULT_SKILL_BUDGET, ge=0)
    pinned_budget: int = Field(default=DEFAULT_PINNED_BUDGET, ge=0)
    server_side: bool = False
    model: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> WindowPolicy:
        if self.reply_room is not None and self.reply_room >= self.window:
            raise ValueError(
                f"reply_room ({self.reply_room}) must be smaller than the window ({self.window})"
            )
        if self.clear_at > self.compact_at:
            raise ValueError(
                f"clear_at ({self.clear_at}) must not exceed compact_at ({self.compact_at}): "
                "clearing comes before compaction"
            )
        if self.model is not None:
            price(self.model)  # raises ConfigError listing the known models
        return self

    @property
    def reserve(self) -> int:
        """The tokens kept for the reply."""
        return self.reply_room if self.reply_room is not None else min(8_192, self.window // 8)

    def room(self, *, tool_tokens: int) -> int:
        """The tokens the messages may take: the window less the reply room and the tools."""
        return self.window - self.reserve - tool_tokens


class WindowEvent(BaseModel):
    """One edit the managed mode made, at one request.

    Attributes:
        request: The request's number (0 for the first render).
        action: ``"cleared"``, ``"compacted"`` or ``"emergency"``.
        tokens_before: The prompt's tokens before the edit.
        tokens_after: Its tokens after.
        rewritten: Tokens the prompt cache writes again (from the edit point on).
    """

    model_config = ConfigDict(frozen=True)

    request: int
    action: Literal["cleared", "compacted", "emergency"]
    tokens_before: int
    tokens_after: int
    rewritten: int


class WindowState(BaseModel):
    """What a managed session remembers between requests: one JSON-serialisable object.

    Attributes:
        requests: Renders so far.
        cleared: Message id -> artifact id of its original, for each cleared tool result.
        thinking_cleared: Ids of assistant messages sent without their thinking blocks.
        boundary: Messages of the compact record before this position are summarised (except
            the system prompt and user instructions).
        summary: The summary's text, once a compaction happened.
        summary_id: The summary message's id.
        index_artifact: The artifact listing every summarised message and its original.
        compacted: Ids of the messages the summary replaces.
        decisions: Every edit, as recorded decisions.
        events: Every edit, with its cache effect.
        last_fingerprint: Model, tools and system prompt of the last request (cache-bust
            warnings).
        last_tokens: The last request's prompt tokens.
        rent: What re-sending the clearable tokens has cost since the last clearing, in
            dollars per million tokens (the clearing rule).
    """

    model_config = ConfigDict(extra="forbid")

    requests: int = 0
    cleared: dict[str, str] = {}
    thinking_cleared: list[str] = []
    boundary: int = 0
    summary: str | None = None
    summary_id: str | None = None
    index_artifact: str | None = None
    compacted: list[str] = []
    decisions: list[Decision] = []
    events: list[WindowEvent] = []
    last_fingerprint: dict[str, str | None] | None = None
    last_tokens: int = 0
    rent: float = 0.0

    def to_json(self) -> str:
        """The state as JSON (what a session store saves)."""
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str | bytes) -> WindowState:
        """A state back from :meth:`to_json`.

        Raises:
            ConfigError: the text is not a saved window state.
        """
        try:
            return cls.model_validate_json(text)
        except ValueError as exc:
            raise ConfigError(f"not a saved WindowState: {exc}") from exc


# ----------------------------------------------------------------------------------- the view


class _View:
    """The request being built: its messages and their sizes."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.messages: list[Message] = []
        self.sizes: list[int] = []

    def add(self, msg: Message) -> None:
        self.messages.append(msg)
        self.sizes.append(self.counter.count_message(msg))

    def tokens(self) -> int:
        return REPLY_PRIMING + sum(self.sizes)


def _pinned_kind(msg: Message) -> str | None:
    """``"memory"`` or ``"skill"`` for a message added by ``Session.pin``, else ``None``."""
    meta = msg.metadata.get("ctxpack")
    if isinstance(meta, Mapping):
        kind = meta.get(_PINNED_KEY)
        return kind if isinstance(kind, str) else None
    return None


def _verbatim(msg: Message) -> bool:
    """Never summarised (as for :class:`~ctxpack.editing.Compactor`): the system prompt, user
    instructions, pinned messages and a provider's own compaction block; but not the content
    ``Session.pin`` added, which is re-injected after a compaction within its budgets."""
    return _pinned_kind(msg) is None and _never_summarised(msg, frozenset())


def _placeholder(artifact: str, retrievable: bool) -> str:
    how = f'; {RETRIEVE_TOOL_NAME}(artifact="{artifact}") reads it' if retrievable else ""
    return (
        f"[ctxpack: old tool output cleared to fit the window; original: artifact {artifact}{how}]"
    )


@dataclass(frozen=True)
class _Context:
    """What :func:`render_window` needs from the session."""

    record: Sequence[Message]
    counter: TokenCounter
    store: ArtifactStore
    original_artifact: Callable[[int, bool], str]
    retrievable: bool
    model: str | None


def _build(state: WindowState, policy: WindowPolicy, ctx: _Context) -> _View:
    """The request the state gives: verbatim head, summary, re-injected pins, edited tail."""
    view = _View(ctx.counter)
    record = ctx.record
    b = min(state.boundary, len(record))
    for msg in record[:b]:
        if _verbatim(msg):
            view.add(msg)
    if state.summary is not None and state.summary_id is not None:
        view.add(_summary_message(state, ctx))
        pins = _reinjection(record[:b], record[b:], policy, ctx.counter)
        if pins is not None:
            view.add(pins)
    thinking = set(state.thinking_cleared)
    for msg in record[b:]:
        if msg.id in state.cleared:
            msg = msg.model_copy(
                update={"content": _placeholder(state.cleared[msg.id], ctx.retrievable)}
            )
        elif msg.id in thinking:
            msg = _without_thinking(msg) or msg
        view.add(msg)
    return view


def _summary_message(state: WindowState, ctx: _Context) -> Message:
    index = state.index_artifact
    how = (
        f'; {RETRIEVE_TOOL_NAME}(artifact="{index}", regex="...") searches it'
        if ctx.retrievable
        else ""
    )
    head = (
        f"[ctxpack: summary of {len(state.compacted)} earlier messages, replaced to fit the "
        f"window. Each original is kept as an artifact, listed (message, tool, command, "
        f"artifact) in artifact {index}{how}.]"
    )
    return Message(
        role="user",
        id=state.summary_id,
        content=f"{head}\n\n{state.summary}",
        metadata={"ctxpack": {"summary_of": list(state.compacted)}},
    )


def _reinjection(
    before: Sequence[Message], after: Sequence[Message], policy: WindowPolicy, counter: TokenCounter
) -> Message | None:
    """Pinned content summarised away, re-injected: memory whole, skills within budgets (each cut
    to its head, the oldest dropped first when together they exceed ``pinned_budget``)."""
    in_tail = {m.text for m in after if _pinned_kind(m) is not None}
    items = [m for m in before if _pinned_kind(m) is not None and m.text not in in_tail]
    if not items:
        return None
    memory = [m for m in items if _pinned_kind(m) == "memory"]
    skills: list[str] = []
    total = 0
    for m in reversed([m for m in items if _pinned_kind(m) == "skill"]):  # newest first
        text = _head(m.text, policy.skill_budget, counter)
        size = counter.count(text)
        if total + size > policy.pinned_budget:
            break  # this one and every older one are dropped
        skills.append(text)
        total += size
    parts = [m.text for m in memory] + list(reversed(skills))
    if not parts:
        return None
    return Message(
        role="user",
        id="ctxpack-pinned",
        content="[ctxpack: pinned content, re-injected after the summary]\n\n" + "\n\n".join(parts),
    )


def _head(text: str, budget: int, counter: TokenCounter) -> str:
    """``text`` cut to its first lines within ``budget`` tokens."""
    if counter.count(text) <= budget:
        return text
    lines = text.splitlines(keepends=True)
    kept: list[str] = []
    used = 0
    for line in lines:
        size = counter.count(line)
        if used + size > budget:
            break
        kept.append(line)
        used += size
    return "".join(kept)


# ---------------------------------------------------------------------------------- the edits


def _positions(record: Sequence[Message], start: int, role: str) -> list[int]:
    return [i for i in range(start, len(record)) if record[i].role == role]


def _clear_batch(
    state: WindowState, policy: WindowPolicy, ctx: _Context, *, keep: int, keep_thinking: int
) -> tuple[list[int], list[int], int]:
    """Positions of the tool results and the thinking turns a batch would clear, and the
    tokens it removes."""
    record, counter = ctx.record, ctx.counter
    tools = _positions(record, state.boundary, "tool")
    out_tools: list[int] = []
    removed = 0
    for i in tools[: max(0, len(tools) - keep)]:
        msg = record[i]
        if msg.id in state.cleared:
            continue
        # The placeholder's size, without storing anything until the batch is cleared.
        cleared = msg.model_copy(
            update={"content": _placeholder(ctx.original_artifact(i, False), ctx.retrievable)}
        )
        saving = counter.count_message(msg) - counter.count_message(cleared)
        if saving > 0:
            out_tools.append(i)
            removed += saving
    out_thinking: list[int] = []
    turns = [
        i
        for i in _positions(record, state.boundary, "assistant")
        if _without_thinking(record[i]) is not None
    ]
    done = set(state.thinking_cleared)
    for i in turns[: max(0, len(turns) - keep_thinking)]:
        stripped = _without_thinking(record[i])
        if record[i].id in done or stripped is None:
            continue
        out_thinking.append(i)
        removed += counter.count_message(record[i]) - counter.count_message(stripped)
    return out_tools, out_thinking, removed


def _edit_point(view: _View, ids: set[str]) -> int:
    """The first position of the view that an edit of the messages ``ids`` rewrites."""
    return next((k for k, m in enumerate(view.messages) if m.id in ids), len(view.messages))


def _clear(
    state: WindowState,
    ctx: _Context,
    tools: Sequence[int],
    thinking: Sequence[int],
    why: str,
) -> None:
    """Clear a batch: record a decision per message; the caller rebuilds the view."""
    record, counter = ctx.record, ctx.counter

    def decide(msg: Message, after: Message, reason: str) -> None:
        state.decisions.append(
            Decision(
                stage="window",
                action="cleared",
                message_id=msg.id,
                reason=reason,
                tokens_before=counter.count_message(msg),
                tokens_after=counter.count_message(after),
            )
        )

    for i in tools:
        msg = record[i]
        artifact = ctx.original_artifact(i, True)
        state.cleared[msg.id] = artifact
        placeholder = msg.model_copy(update={"content": _placeholder(artifact, ctx.retrievable)})
        decide(msg, placeholder, f"old tool output cleared ({why}); original stored as {artifact}")
    for i in thinking:
        msg = record[i]
        state.thinking_cleared.append(msg.id)
        decide(msg, _without_thinking(msg) or msg, f"thinking blocks cleared ({why})")


def _event(
    state: WindowState,
    action: Literal["cleared", "compacted", "emergency"],
    before: _View,
    after: _View,
    edit: int,
) -> None:
    rewritten = REPLY_PRIMING + sum(after.sizes[edit:])
    state.events.append(
        WindowEvent(
            request=state.requests,
            action=action,
            tokens_before=before.tokens(),
            tokens_after=after.tokens(),
            rewritten=rewritten,
        )
    )
    if edit < len(after.messages):
        state.decisions.append(
            Decision(
                stage="window",
                action="warned",
                message_id=after.messages[edit].id,
                reason=(
                    f"{action} at request {state.requests}: the prompt changes from this message "
                    f"on, so the prompt cache writes {rewritten} tokens again"
                ),
                tokens_before=before.tokens(),
                tokens_after=after.tokens(),
            )
        )


def _pays(state: WindowState, policy: WindowPolicy, model: str | None, after: int) -> bool:
    """Whether re-sending the clearable tokens has cost enough (their rent since the last
    edit, ``state.rent``) to pay for writing again the ``after`` tokens that follow the edit
    point, with a margin: a batch is cleared only once it is big (the rent starts again at 0)."""
    p = price(policy.model or _priced(model))
    return state.rent / _PATIENCE > (p.cache_write_5m - p.cache_read) * after


def _priced(model: str | None) -> str:
    if model is not None:
        try:
            price(model)
            return model
        except ConfigError:
            pass  # a tokenizer name such as "gpt-4" need not be in the price table
    return _DEFAULT_PRICED_MODEL


# --------------------------------------------------------------------------------- compaction


def _tail_start(
    record: Sequence[Message], start: int, keep_recent: int, budget: int, counter: TokenCounter
) -> int:
    """Where the messages a compaction keeps as they are begin: the last ``keep_recent``, fewer
    when they pass ``budget`` tokens, never opening on tool results (their call goes with
    them)."""
    t = max(start, len(record) - keep_recent)
    while t > start and t < len(record) and record[t].role == "tool":
        t -= 1
    size = sum(counter.count_message(m) for m in record[t:])
    while t < len(record) and size > budget:
        size -= counter.count_message(record[t])
        t += 1
        while t < len(record) and record[t].role == "tool":
            size -= counter.count_message(record[t])
            t += 1
    return t


def _compact(state: WindowState, policy: WindowPolicy, ctx: _Context, room: int) -> bool:
    """Summarise the record before the tail; ``False`` when there is too little to summarise."""
    record, counter = ctx.record, ctx.counter
    end = _tail_start(record, state.boundary, policy.keep_recent, room // 2, counter)
    region = [i for i in range(state.boundary, end) if not _verbatim(record[i])]
    if sum(1 for i in region if _pinned_kind(record[i]) is None) < 2:
        return False
    budget = int(policy.summary_share * room)
    if policy.summarizer is None:
        # The extractive digest is cheap: it reads the whole summarised history again, so a
        # second compaction does not summarise a summary.
        history = [m for m in record[:end] if not _verbatim(m) and _pinned_kind(m) is None]
        text = fit_digest(extractive_digest(history, policy.instructions), budget, counter)
    else:
        previous = _summary_message(state, ctx) if state.summary is not None else None
        messages = ([previous] if previous else []) + [record[i] for i in region]
        text = policy.summarizer(messages, policy.instructions)
        if not isinstance(text, str):
            raise ConfigError(
                f"the summarizer returned {type(text).__name__}, not str; a summarizer is a "
                "callable (messages, instructions) -> text"
            )
    tokens_before = {record[i].id: counter.count_message(record[i]) for i in region}
    state.compacted = [*state.compacted, *(record[i].id for i in region)]
    state.index_artifact = ctx.store.put(
        _index(ctx, [i for i in range(end) if record[i].id in set(state.compacted)]),
        kind="compaction_index",
    )
    state.summary = text
    state.summary_id = (
        "summary-"
        + hashlib.blake2b("\x00".join(state.compacted).encode(), digest_size=6).hexdigest()
    )
    state.boundary = end
    state.cleared = {k: v for k, v in state.cleared.items() if k not in set(state.compacted)}
    for i in region:
        state.decisions.append(
            Decision(
                stage="window",
                action="merged",
                message_id=record[i].id,
                reason=f"compacted into {state.summary_id}; original kept as an artifact",
                tokens_before=tokens_before[record[i].id],
                tokens_after=0,
            )
        )
    state.decisions.append(
        Decision(
            stage="window",
            action="merged",
            message_id=state.summary_id,
            reason=f"summary of {len(state.compacted)} messages (request {state.requests})",
            tokens_before=sum(tokens_before.values()),
            tokens_after=counter.count_message(_summary_message(state, ctx)),
        )
    )
    return True


def _index(ctx: _Context, positions: Sequence[int]) -> str:
    """One line per summarised message: id, role or tool, command, artifact of its original."""
    calls: dict[str, tuple[str, str]] = {}
    for msg in ctx.record:
        for call in msg.tool_calls or ():
            calls[call.id] = (call.function.name, call.function.arguments)
    lines = ["message\ttool\tcommand\tartifact"]
    for i in positions:
        msg = ctx.record[i]
        tool, command = calls.get(msg.tool_call_id or "", (msg.role, ""))
        if msg.role == "tool":
            artifact = ctx.original_artifact(i, True)
        else:
            artifact = ctx.store.put(
                json.dumps(msg.model_dump(mode="json"), ensure_ascii=False),
                message_id=msg.id,
                kind="compacted_message",
            )
        lines.append(f"{msg.id}\t{tool}\t{' '.join(command.split())[:300]}\t{artifact}")
    return "\n".join(lines)


def fit_digest(text: str, budget: int, counter: TokenCounter) -> str:
    """``text`` (Markdown sections of bullet lines) within ``budget`` tokens: the oldest lines of
    the largest section go first; the identifier index is cut term by term.

    Example:
        >>> from ctxpack import get_counter
        >>> digest = "## Commands run\\n" + "\\n".join(f"- `ls {i}`" for i in range(100))
        >>> short = fit_digest(digest, 60, get_counter(counter="approx"))
        >>> short.splitlines()[0], short.splitlines()[-1]
        ('## Commands run', '- `ls 99`')
    """
    if counter.count(text) <= budget:
        return text
    sections: list[tuple[str, list[str], str]] = []
    for block in text.split("\n\n## "):
        block = block.removeprefix("## ")
        title, _, body = block.partition("\n")
        if title.startswith("Identifiers"):
            sections.append((title, body.split(", "), ", "))
        else:
            sections.append((title, body.split("\n"), "\n"))
    sizes = [[counter.count(item) + 1 for item in items] for _, items, _ in sections]
    total = sum(map(sum, sizes)) + sum(counter.count(t) + 2 for t, _, _ in sections)
    heads = [0] * len(sections)  # items dropped from the front of each section
    while total > budget:
        k = max(range(len(sections)), key=lambda j: sum(sizes[j][heads[j] :]))
        if heads[k] >= len(sizes[k]):
            break
        # A fenced block keeps its opening fence.
        if sections[k][1][heads[k]].startswith("```") and heads[k] == 0:
            sections[k][1].insert(1, sections[k][1][0])
            sizes[k].insert(1, sizes[k][0])
            heads[k] = 1
        total -= sizes[k][heads[k]]
        heads[k] += 1
    out = []
    for (title, items, sep), head in zip(sections, heads, strict=True):
        kept = items[head:]
        if kept:
            out.append(f"## {title}\n" + sep.join(kept))
    return "\n\n".join(out)


# ------------------------------------------------------------------------------- one request


def render_window(
    state: WindowState,
    policy: WindowPolicy,
    *,
    record: Sequence[Message],
    counter: TokenCounter,
    store: ArtifactStore,
    original_artifact: Callable[[int, bool], str],
    retrievable: bool = True,
    model: str | None = None,
    tool_tokens: int = 0,
) -> list[Message]:
    """The next request's messages from the compact ``record``, within the window; updates
    ``state`` (the edits made, their decisions and cache effects).

    Args:
        state: The managed mode's state, updated in place.
        policy: How the window is managed.
        record: The session's compact record (tool outputs as filtered).
        counter: The token counter.
        store: Where originals go.
        original_artifact: ``(position, store)`` -> the artifact id of the original of the
            record's message at ``position``; with ``store``, the original is stored if it was
            not yet.
        retrievable: Whether the model has the retrieve tool (placeholders then say how to call
            it).
        model: The session's model (prices for the clearing rule).
        tool_tokens: Tokens of the tool definitions sent with the request.

    Raises:
        BudgetExceededError: the messages that are never removed (system prompt, user
            instructions, pinned messages) do not fit in the window with the reply room.
    """
    ctx = _Context(record, counter, store, original_artifact, retrievable, model)
    room = policy.room(tool_tokens=tool_tokens)
    view = _build(state, policy, ctx)
    if not policy.server_side:
        view = _manage(state, policy, ctx, view, room)
    if view.tokens() > room and not policy.server_side:
        kept = [m.id for m in view.messages if _verbatim(m)]
        raise BudgetExceededError(
            required=view.tokens() + policy.reserve + tool_tokens,
            budget=policy.window,
            pinned_ids=kept,
        )
    state.requests += 1
    state.last_tokens = view.tokens()
    return view.messages


def _manage(
    state: WindowState, policy: WindowPolicy, ctx: _Context, view: _View, room: int
) -> _View:
    """Clear, compact, then clear everything if need be, until the view fits ``room``."""
    keep_thinking = policy.keep_thinking
    tokens = view.tokens()
    if tokens > policy.clear_at * room:
        tools, thinking, removed = _clear_batch(
            state, policy, ctx, keep=policy.keep, keep_thinking=keep_thinking or 10**9
        )
        if removed > 0:
            ids = {ctx.record[i].id for i in [*tools, *thinking]}
            edit = _edit_point(view, ids)
            after = REPLY_PRIMING + sum(view.sizes[edit:]) - removed
            state.rent += removed * price(policy.model or _priced(ctx.model)).cache_read
            pressed = tokens > policy.compact_at * room
            settles = tokens - removed <= (policy.clear_at + policy.compact_at) / 2 * room
            if (pressed and settles) or (not pressed and _pays(state, policy, ctx.model, after)):
                state.rent = 0.0
                _clear(state, ctx, tools, thinking, f"batch at request {state.requests}")
                new = _build(state, policy, ctx)
                _event(state, "cleared", view, new, edit)
                view = new
    if view.tokens() > policy.compact_at * room and _compact(state, policy, ctx, room):
        new = _build(state, policy, ctx)
        # The summary replaces the history after the system prompt and instructions.
        edit = _edit_point(new, {state.summary_id or ""})
        _event(state, "compacted", view, new, edit)
        view = new
    if view.tokens() > room:
        tools, thinking, removed = _clear_batch(state, policy, ctx, keep=0, keep_thinking=0)
        if removed > 0:
            edit = _edit_point(view, {ctx.record[i].id for i in [*tools, *thinking]})
            _clear(state, ctx, tools, thinking, "the request would not fit the window")
            new = _build(state, policy, ctx)
            _event(state, "emergency", view, new, edit)
            view = new
    return view


def cache_warnings(
    state: WindowState,
    *,
    model: str | None,
    tools: Sequence[Mapping[str, Any]],
    messages: Sequence[Message],
    tokens: int,
) -> list[Decision]:
    """Warnings for what invalidates the prompt cache since the last request: another model,
    another tool set, another system prompt. Each says how many tokens the cache writes again
    (the whole prompt: tools and system prompt come first). Updates ``state``."""
    system = [m for m in messages[:2] if m.role in ("system", "developer")]
    fingerprint: dict[str, str | None] = {
        "model": model,
        "tools": _digest(list(tools)),
        "system": _digest([m.model_dump(mode="json", include={"role", "content"}) for m in system]),
    }
    last = state.last_fingerprint
    state.last_fingerprint = fingerprint
    if last is None or not messages:
        return []
    changed = []
    if last.get("model") != model:
        changed.append(f"the model changed from {last.get('model')!r} to {model!r}")
    if last.get("tools") != fingerprint["tools"]:
        changed.append("the tool definitions changed")
    if last.get("system") != fingerprint["system"]:
        changed.append("the system prompt changed")
    if not changed:
        return []
    warning = Decision(
        stage="cache",
        action="warned",
        message_id=messages[0].id,
        reason=(
            f"{'; '.join(changed)}: the prompt cache is lost, and this request writes its "
            f"{tokens} tokens again"
        ),
        tokens_before=tokens,
        tokens_after=tokens,
    )
    state.decisions.append(warning)
    return [warning]


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]
