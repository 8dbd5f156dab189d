"""Clearing: old tool results (and thinking blocks) replaced by a placeholder, in batches that
pay for the cache they break."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import ClassVar, Literal, NamedTuple

from pydantic import Field, field_validator

from .._internal.arguments import optional_text
from .._internal.reasoning import REASONING
from .._internal.tool_items import is_textless_output
from ..cost import Price, price
from ..errors import ConfigError
from ..filters import original_note
from ..messages import Message
from ..pipeline import Decision, PackContext, check_context
from ..sdk import RESPONSES_META
from ..store import ArtifactStore, artifact_id
from ..tokens import REPLY_PRIMING, TokenCounter, message_sizes
from ._shared import _as_json, _history, _original_text, _request_points, _StoreModel

__all__ = ["DEFAULT_PLACEHOLDER", "ClearBatch", "ToolResultClearer"]

DEFAULT_PLACEHOLDER = original_note("old tool result cleared to save context", "{artifact}")
# Prices used when neither the stage nor the context names a priced model.
_DEFAULT_PRICED_MODEL = "claude-sonnet-4-5"
# By default a batch waits until re-sending the clearable tokens has cost this many times the
# rewrite: it then expects (re-sends so far) / _PATIENCE more. At 1 (break even) a clear made
# shortly before a session ends costs more than it saves.
_PATIENCE = 2.0

# Anthropic's thinking blocks and OpenAI's reasoning items (held as parts, see ctxpack.sdk).
_THINKING = frozenset({"thinking", "redacted_thinking", REASONING})


def _call_names(messages: Sequence[Message]) -> dict[str, tuple[str, int]]:
    """Tool call id -> (tool name, position of the assistant message that made the call)."""
    out: dict[str, tuple[str, int]] = {}
    for i, m in enumerate(messages):
        for call in m.tool_calls or ():
            out[call.id] = (call.function.name, i)
    return out


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
    ``exclude_tools`` are never cleared (nor a Responses API ``computer_call_output``, whose
    screenshot has no text form to send in its place), and the calls' inputs stay unless
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
        clear_thinking: Also remove thinking blocks (and OpenAI reasoning items) from assistant
            messages, except those of the last ``clear_thinking`` assistant messages that have
            some; ``None`` keeps them all.
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
        >>> result.messages[2].text.startswith("[ctxpack: old tool result cleared")
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
            # A computer's screenshot has no text form to send in its place.
            if m.role != "tool" or m.pinned or is_textless_output(m.metadata, RESPONSES_META):
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
        messages = _history(messages, counter, protected)
        optional_text(model, "model")
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
        check_context(ctx, self)
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
