"""Clearing: old tool results (and thinking blocks) replaced by a placeholder, in batches that
pay for the cache they break."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, NamedTuple

from pydantic import Field, field_validator

from .._internal.arguments import optional_text, tool_definitions
from .._internal.cache_points import billed_tool_tokens, rewritten_tokens
from .._internal.originals import message_original
from .._internal.server_results import (
    call_arguments,
    clearable_results,
    original_result,
    tool_names,
    with_inputs_cleared,
    with_results_cleared,
)
from .._internal.thinking import without_thinking as _without_thinking
from .._internal.tool_items import is_textless_output
from ..cost import Price, price
from ..errors import ConfigError
from ..filters import original_note
from ..messages import Message
from ..pipeline import Decision, PackContext, check_context
from ..sdk import RESPONSES_META
from ..store import ArtifactStore, artifact_id, put_original
from ..tokens import REPLY_PRIMING, TokenCounter, message_sizes
from ._shared import _history, _original_text, _request_points, _StoreModel

__all__ = ["DEFAULT_PLACEHOLDER", "ClearBatch", "ToolResultClearer"]

DEFAULT_PLACEHOLDER = original_note("old tool result cleared to save context", "{artifact}")
# Prices used when neither the stage nor the context names a priced model.
_DEFAULT_PRICED_MODEL = "claude-sonnet-4-5"
# By default a batch waits until re-sending the clearable tokens has cost this many times the
# rewrite: it then expects (re-sends so far) / _PATIENCE more. At 1 (break even) a clear made
# shortly before a session ends costs more than it saves.
_PATIENCE = 2.0


def _rewrite_pays(
    rent: float, rewritten: float, p: Price, ttl: Literal["5m", "1h"], patience: float = _PATIENCE
) -> bool:
    """Whether ``rent`` (dollars: re-sending what an edit removes, at the cache-read price) pays,
    with the margin ``patience``, for the edit's rewrite: the ``rewritten`` tokens the request
    writes to the cache (at the write price of ``ttl``) that it would have read without the edit
    (not what was appended since the request before, written either way). The one rule of
    every edit's timing: the clearer's, and the managed window's clearing and compaction."""
    return rent / patience > (p.cache_write(ttl) - p.cache_read) * rewritten


def _call_names(messages: Sequence[Message]) -> dict[str, tuple[str, int]]:
    """Tool call id -> (tool name, position of the assistant message that made the call), for
    the client's calls and for the calls of the tools the provider ran (by the id that pairs
    each with its result)."""
    out: dict[str, tuple[str, int]] = {}
    for i, m in enumerate(messages):
        for call in m.tool_calls or ():
            out[call.id] = (call.function.name, i)
        if m.role == "assistant":
            out.update((rid, (name, i)) for rid, name in tool_names(m.content))
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
        tokens_after_edit: What the prompt cache must write again: the edited prompt after the
            last entry the provider still finds before the first edited message. Where every
            message boundary is cached, that message on; for a Claude model (one breakpoint
            at the end of each request, found within 20 blocks), the end of an earlier
            request within that reach, else the whole prompt, tool definitions too.
    """

    position: int
    message_ids: tuple[str, ...]
    tokens_removed: int
    tokens_after_edit: int


class _Result(NamedTuple):
    """A tool result clearing may replace."""

    position: int  # of its message: a tool message, or the assistant turn holding it
    rid: str | None  # the id of a provider tool result (a part of its turn); None: the message
    saving: int
    edit: int  # the first message clearing it rewrites


class _Plan(NamedTuple):
    tools: list[_Result]  # eligible results, oldest first
    thinking_positions: list[int]
    thinking_saving: list[int]


class _Found(NamedTuple):
    """A batch, and what it clears: the tool results, and the turns that lose their
    thinking (positions)."""

    batch: ClearBatch
    tools: tuple[_Result, ...]
    thinking: tuple[int, ...]


class ToolResultClearer(_StoreModel):
    """Replace old tool results by a placeholder, batched so that the prompt cache survives.

    With ``cache_aware=False`` it follows Anthropic's ``clear_tool_uses_20250919``: when the
    prompt exceeds ``trigger`` tokens, every tool result except the ``keep`` most recent ones is
    cleared (unless that would clear fewer than ``clear_at_least`` tokens), results of
    ``exclude_tools`` are never cleared (nor a Responses API ``computer_call_output``, whose
    screenshot has no text form to send in its place), and the calls' inputs stay unless
    ``clear_tool_inputs``. Like the API, it decides again at every request, so the boundary
    moves with each new tool result and the cache is written again from there every turn.

    A tool result is a client's (an Anthropic ``tool_result``, an OpenAI ``tool`` message) or,
    as the API counts them too, that of a tool the provider ran, which comes back inside the
    assistant's turn (``web_fetch_tool_result``, ``bash_code_execution_tool_result``,
    ``mcp_tool_result``..., a Responses API ``mcp_call``, ``code_interpreter_call`` or
    ``file_search_call`` item): all of them, oldest first, share the ``keep`` most recent. A
    provider's result stays in its turn with its type and ids, and so does its call (with
    ``clear_tool_inputs``, its input ``{}`` as a client's call's arguments); only its text
    fields get the placeholder. One with no text form (a web search's encrypted results, an
    image) is not cleared, nor is its call's input. ``exclude_tools`` names a provider's tool
    as its call does (``web_fetch``, an MCP tool's name; a Responses item without one by its
    tool's type, ``code_interpreter``).

    With ``cache_aware=True`` (the default) it replays the history request by request; a batch
    is cleared at a request whose prompt, with the earlier batches applied, exceeds ``trigger``,
    and only when the batch pays for the cache it breaks: tokens removed x expected re-sends x
    cache-read price > (cache-write price - cache-read price) x tokens the cache writes again
    that it would have read without the clear (``ClearBatch.tokens_after_edit``, less what was
    appended since the request before, which the request writes either way; for a Claude
    model, an edit beyond the cache's reach writes the whole prompt). Unless
    ``expected_resends`` is given, the re-sends expected are those the clearable tokens have
    already had since the last batch (while the prompt was over the trigger): a batch is
    cleared once what re-sending them has cost pays for the rewrite. The same history always
    gives the same batches, and a longer history the same first batches.

    Args:
        trigger: Clear when the prompt exceeds this many tokens.
        keep: How many of the most recent tool results (client's and provider's) stay.
        clear_at_least: A batch that would remove fewer tokens is not cleared.
        exclude_tools: Tool names whose results are never cleared.
        clear_tool_inputs: Also replace the cleared results' calls' arguments by ``{}`` (a
            provider tool's call: its ``input``, a Responses item's ``arguments``).
        placeholder: The text a cleared result becomes; ``{artifact}`` is replaced by the
            original's artifact id (:func:`ctxpack.store.artifact_id`).
        cache_aware: Clear only in batches that pay (see above); ``False`` gives the plain
            Anthropic semantics.
        clear_thinking: Also remove thinking blocks (OpenAI reasoning items, and the
            ``thinking_blocks`` and ``reasoning_content`` LiteLLM holds beside a message) from
            assistant messages, except those of the last ``clear_thinking`` assistant messages
            that have some; ``None`` keeps them all.
        model: Whose prices decide whether a batch pays (:func:`ctxpack.cost.price`); by default
            the context's model when it is priced, else ``claude-sonnet-4-5``. Its provider's
            cache (by default the context's model's, else Claude's) decides what a batch
            writes again: with the whole prompt, the context's tool definitions
            (``ctx.tools``, as that provider bills them).
        price: A :class:`~ctxpack.cost.Price` to use instead.
        ttl: The cache lifetime paid for: ``"5m"`` or ``"1h"`` (picks the write price).
        expected_resends: How many more requests will re-send a removed token; by default as
            many as the clearable tokens have been re-sent since the last batch.
        store: Where originals are also put; they are always in ``result.artifacts``. In a
            :class:`~ctxpack.Session`'s pipeline, leave it unset: the session's store is used.

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

    def _cleared_results(self, msg: Message, refs: dict[str, str]) -> Message:
        """``msg`` with each provider tool result whose id is in ``refs`` cleared to the
        placeholder naming its artifact: only its text fields, its type and ids kept."""
        notes = {rid: self.placeholder.replace("{artifact}", ref) for rid, ref in refs.items()}
        return msg.model_copy(update={"content": with_results_cleared(msg.content, notes)})

    def _plan(self, messages: Sequence[Message], counter: TokenCounter) -> _Plan:
        sizes = message_sizes(counter, messages)
        calls = _call_names(messages)
        tools: list[_Result] = []
        for i, m in enumerate(messages):
            if m.pinned:
                continue
            if m.role == "tool":
                tools.extend(self._client_result(messages, i, calls, sizes[i], counter))
            elif m.role == "assistant":
                tools.extend(self._provider_results(messages, i, calls, sizes[i], counter))
        thinking_positions: list[int] = []
        thinking_saving: list[int] = []
        if self.clear_thinking is not None:
            for i, m in enumerate(messages):
                stripped = _without_thinking(m)
                if stripped is not None:
                    thinking_positions.append(i)
                    thinking_saving.append(sizes[i] - counter.count_message(stripped))
        return _Plan(tools, thinking_positions, thinking_saving)

    def _client_result(
        self,
        messages: Sequence[Message],
        i: int,
        calls: dict[str, tuple[str, int]],
        size: int,
        counter: TokenCounter,
    ) -> list[_Result]:
        """The tool message at ``i`` as a result to clear, if it is one (none or one)."""
        m = messages[i]
        # A computer's screenshot has no text form to send in its place.
        if is_textless_output(m.metadata, RESPONSES_META):
            return []
        name, at = calls.get(m.tool_call_id or "", ("", i))
        if name in self.exclude_tools:
            return []
        # Sized with the content-hash id: nothing is stored until the batch is cleared.
        saving = size - counter.count_message(self._cleared_tool(m, artifact_id(_original_text(m))))
        if self.clear_tool_inputs and at != i:
            call = next(c for c in messages[at].tool_calls or () if c.id == m.tool_call_id)
            saving += _input_saving(call.function.arguments, counter)
        if saving <= 0:
            return []  # already short: clearing it would only break the cache
        return [_Result(i, None, saving, at if self.clear_tool_inputs else i)]

    def _provider_results(
        self,
        messages: Sequence[Message],
        i: int,
        calls: dict[str, tuple[str, int]],
        size: int,
        counter: TokenCounter,
    ) -> list[_Result]:
        """The results of the tools the provider ran that the assistant turn at ``i`` holds
        with a text to clear, in order; with ``clear_tool_inputs``, each with its call's input
        (in that turn, or in an earlier one that the result answers)."""
        m = messages[i]
        out = []
        for _, rid in clearable_results(m.content):
            name, at = calls.get(rid, ("", i))
            if name in self.exclude_tools:
                continue
            cleared = self._cleared_results(m, {rid: artifact_id(original_result(m.content, rid))})
            saving = size - counter.count_message(cleared)
            if saving <= 0:
                continue
            if self.clear_tool_inputs:
                saving += _input_saving(call_arguments(messages[at].content, rid), counter)
            out.append(_Result(i, rid, saving, at if self.clear_tool_inputs else i))
        return out

    def batches(
        self,
        messages: Sequence[Message],
        *,
        counter: TokenCounter,
        model: str | None = None,
        protected: frozenset[str] = frozenset(),
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[ClearBatch]:
        """The batches this clearer makes on ``messages``, in order.

        ``batches(history[:k])`` is the list of ``batches(history)`` that happen at or before
        ``k``, whenever ``k`` is a request point (``history[k]`` is an assistant message, or
        ``k == len(history)``). With ``cache_aware=False`` there is at most one batch, for the
        current request. ``tools`` are the tool definitions sent with each request (as
        :func:`ctxpack.pack` takes them, which hands the stage its own): a batch that
        rewrites the whole prompt writes them again.

        Raises:
            ConfigError: ``tools`` holds something that is not a tool definition, named.
        """
        messages = _history(messages, counter, protected)
        optional_text(model, "model")
        given = () if tools is None else tuple(tool_definitions(tools))
        found = self._replay(messages, counter, model, protected, given)
        return [f.batch for f in found]

    def _replay(
        self,
        messages: Sequence[Message],
        counter: TokenCounter,
        model: str | None,
        protected: frozenset[str],
        definitions: Sequence[Mapping[str, Any]],
    ) -> list[_Found]:
        """The batches, with what each clears: the history replayed request by request, each
        request sending the tool ``definitions`` first."""
        plan = self._plan(messages, counter)
        sizes = list(message_sizes(counter, messages))
        tools = [r for r in plan.tools if messages[r.position].id not in protected]
        positions = [r.position for r in tools]
        thinking = list(zip(plan.thinking_positions, plan.thinking_saving, strict=True))
        thinking_at = [p for p, _ in thinking]
        points = _request_points(messages)
        if not self.cache_aware:
            points = points[-1:]
        p_price = _resolve_price(self.price, self.model, model)
        read = p_price.cache_read
        # Whose provider's cache the rewrite is counted in: as with the prices, the stage's
        # model, else the context's, else the default.
        cache_model = self.model or model or _DEFAULT_PRICED_MODEL
        tool_tokens = billed_tool_tokens(definitions, cache_model, counter)
        current = sizes[:]  # each message's size with the batches so far applied
        cleared_tools = 0
        cleared_thinking = 0
        # What re-sending the clearable tokens has cost since the last batch, at the read price.
        rent = 0.0
        out: list[_Found] = []
        for before, p in zip([None, *points[:-1]], points, strict=True):
            prompt = REPLY_PRIMING + (sum(current[:p]) if self.cache_aware else sum(sizes[:p]))
            if prompt <= self.trigger:
                continue
            # Results in the turn at ``p`` come after this request: bisect_left leaves them.
            new_tools = max(cleared_tools, bisect_left(positions, p) - self.keep)
            new_thinking = cleared_thinking
            if self.clear_thinking is not None:
                new_thinking = max(
                    cleared_thinking, bisect_left(thinking_at, p) - self.clear_thinking
                )
            batch_tools = tools[cleared_tools:new_tools]
            batch_thinking = thinking[cleared_thinking:new_thinking]
            removed = sum(r.saving for r in batch_tools) + sum(s for _, s in batch_thinking)
            rent += removed * read  # this request re-sends them unless it clears them
            if removed <= 0 or removed < self.clear_at_least:
                continue
            edited, edit = _apply_batch(current, batch_tools, batch_thinking)
            after = rewritten_tokens(
                messages[:p],
                edited[:p],
                edit,
                model=cache_model,
                min_cacheable=p_price.min_cacheable_tokens,
                tool_tokens=tool_tokens,
            )
            # The request writes what was appended since the one ``before`` whether or not it
            # clears: only the rest of the rewrite would have been read.
            anyway = rewritten_tokens(
                messages[:p],
                current[:p],
                p,
                model=cache_model,
                min_cacheable=p_price.min_cacheable_tokens,
                tool_tokens=tool_tokens,
                sent=() if before is None else (before,),
            )
            extra = max(0, after - anyway)
            if self.cache_aware and not self._pays(removed, rent, extra, p_price):
                continue
            ids = _batch_ids(messages, batch_tools, batch_thinking)
            batch = ClearBatch(p, ids, removed, after)
            out.append(_Found(batch, tuple(batch_tools), tuple(q for q, _ in batch_thinking)))
            current = edited
            cleared_tools, cleared_thinking = new_tools, new_thinking
            rent = 0.0
        return out

    def _pays(self, removed: int, rent: float, rewritten: int, p: Price) -> bool:
        """Whether clearing ``removed`` tokens saves more than writing the ``rewritten`` tokens
        the edit makes the cache write instead of read costs (:func:`_rewrite_pays`)."""
        # Without a given number of re-sends, expect as many as these tokens have already had
        # while clearable: clear once their rent has paid for the rewrite (the break-even rule:
        # never more than twice the cost of the best choice made knowing the future, and it
        # batches, since the rent starts again at 0).
        if self.expected_resends:
            expected = removed * p.cache_read * self.expected_resends
            return _rewrite_pays(expected, rewritten, p, self.ttl, patience=1.0)
        return _rewrite_pays(rent, rewritten, p, self.ttl)

    # ---------------------------------------------------------------------------- the stage

    def __call__(self, ctx: PackContext, /) -> PackContext:
        check_context(ctx, self)
        messages = ctx.messages
        found = self._replay(messages, ctx.counter, ctx.model, ctx.protected, ctx.tools)
        if not found:
            return ctx
        edits, cleared_calls = _edits(messages, found, self.clear_tool_inputs)
        calls = _call_names(messages)
        out = list(messages)
        decisions: list[Decision] = []
        artifacts = dict(ctx.artifacts)
        mode = "cache-aware batch" if self.cache_aware else "cleared"
        for i, edit in sorted(edits.items()):
            msg, batch = messages[i], edit.batch
            if msg.role == "tool":
                new, what = self._clear_result(msg, calls.get(msg.tool_call_id or "", ("?", i))[0])
            else:
                new, what = self._clear_assistant(msg, cleared_calls, edit, calls)
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
        return ctx.decide(*decisions, messages=tuple(out), artifacts=artifacts)

    def _clear_result(self, msg: Message, tool: str) -> tuple[Message, list[str]]:
        """A tool result replaced by the placeholder (its original put in the store, under the
        id the store gives: a stored session's ids are its own, not the content hash)."""
        text = _original_text(msg)
        ref = (
            artifact_id(text)
            if self.store is None
            else put_original(self.store, text, message_id=msg.id, tool=tool, kind="tool_result")
        )
        return self._cleared_tool(msg, ref), [f"tool result of {tool!r}"]

    def _clear_assistant(
        self,
        msg: Message,
        cleared_calls: set[str | None],
        edit: _Edit,
        calls: dict[str, tuple[str, int]],
    ) -> tuple[Message, list[str]]:
        """An assistant message without the inputs of its cleared calls, the results of the
        tools the provider ran that ``edit`` clears (each original put in the store as a tool
        result is) and, when ``edit`` says so, its thinking blocks (the original put in the
        store); ``msg`` itself when nothing changes."""
        new = msg
        what = []
        if msg.tool_calls and cleared_calls & {c.id for c in msg.tool_calls}:
            new = _without_inputs(new, cleared_calls)
        served = with_inputs_cleared(new.content, cleared_calls)
        if served is not new.content:
            new = new.model_copy(update={"content": served})
        if new is not msg:
            what.append("tool inputs")
        stripped = _without_thinking(new) if edit.thinking else None
        if stripped is not None:
            new = stripped
            what.append("thinking blocks")
        if self.store is not None and new is not msg:
            put_original(
                self.store, message_original(msg), message_id=msg.id, kind="assistant_message"
            )
        refs: dict[str, str] = {}
        for rid in edit.results:
            text, tool = original_result(msg.content, rid), calls.get(rid, ("?", 0))[0]
            refs[rid] = (
                artifact_id(text)
                if self.store is None
                else put_original(
                    self.store, text, message_id=msg.id, tool=tool, kind="tool_result"
                )
            )
            what.append(f"result of the provider's tool {tool!r} ({rid})")
        if refs:
            new = self._cleared_results(new, refs)
        return new, what


@dataclass
class _Edit:
    """What the batches change in one message."""

    batch: ClearBatch  # the first batch that edits it
    results: list[str] = field(default_factory=list)  # the provider tool results it clears
    thinking: bool = False  # whether it loses its thinking blocks


def _edits(
    messages: Sequence[Message], found: Sequence[_Found], inputs: bool
) -> tuple[dict[int, _Edit], set[str | None]]:
    """The edit of each message the batches change (by position), and the calls whose
    arguments become ``{}``."""
    edits: dict[int, _Edit] = {}
    cleared_calls: set[str | None] = set()
    for batch, tools, thinking in found:
        for r in tools:
            edit = edits.setdefault(r.position, _Edit(batch))
            if r.rid is not None:
                edit.results.append(r.rid)
            if inputs:
                edits.setdefault(r.edit, _Edit(batch))
                cleared_calls.add(r.rid or messages[r.position].tool_call_id)
        for q in thinking:
            edits.setdefault(q, _Edit(batch)).thinking = True
    return edits, cleared_calls


def _input_saving(arguments: str, counter: TokenCounter) -> int:
    """The tokens saved by sending a call's ``arguments`` as ``{}``."""
    return max(0, counter.count(arguments) - counter.count("{}")) if arguments else 0


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
    batch_tools: Sequence[_Result],
    batch_thinking: Sequence[tuple[int, int]],
) -> tuple[list[int], int]:
    """The message sizes once a batch is cleared, and its edit point (the first message it
    rewrites)."""
    edit = min([r.edit for r in batch_tools] + [q for q, _ in batch_thinking])
    edited = current[:]
    for r in batch_tools:
        edited[r.position] -= r.saving
    for q, s in batch_thinking:
        edited[q] -= s
    return edited, edit


def _batch_ids(
    messages: Sequence[Message],
    batch_tools: Sequence[_Result],
    batch_thinking: Sequence[tuple[int, int]],
) -> tuple[str, ...]:
    """The ids of the messages a batch rewrites, in history order."""
    at = {r.position for r in batch_tools} | {r.edit for r in batch_tools}
    at |= {q for q, _ in batch_thinking}
    return tuple(messages[i].id for i in sorted(at))
