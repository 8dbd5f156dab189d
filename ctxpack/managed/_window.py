"""One request within the window: clear, compact, then clear everything if need be."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..cost import price
from ..errors import BudgetExceededError
from ..messages import Message
from ..store import ArtifactStore
from ..tokens import REPLY_PRIMING, TokenCounter
from ._compaction import _compact, _landing
from ._policy import WindowPolicy
from ._state import WindowState
from .clearing import _PATIENCE, _clear, _clear_batch, _edit_point, _event, _pays, _priced
from .view import _build, _Context, _verbatim, _View

__all__ = ["render_window"]


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
    # The shares apply to what the mode can remove: the room above the messages it never removes.
    floor = REPLY_PRIMING + sum(
        s for m, s in zip(view.messages, view.sizes, strict=True) if _verbatim(m)
    )

    def level(share: float) -> float:
        return floor + share * max(0, room - floor)

    if tokens > level(policy.clear_at):
        tools, thinking, removed = _clear_batch(
            state, policy, ctx, keep=policy.keep, keep_thinking=keep_thinking or 10**9
        )
        if removed > 0:
            ids = {ctx.record[i].id for i in [*tools, *thinking]}
            edit = _edit_point(view, ids)
            after = REPLY_PRIMING + sum(view.sizes[edit:]) - removed
            state.rent += removed * price(policy.model or _priced(ctx.model)).cache_read
            pressed = tokens > level(policy.compact_at)
            settles = tokens - removed <= level(_landing(policy))
            if (pressed and settles) or (not pressed and _pays(state, policy, ctx.model, after)):
                state.rent = 0.0
                _clear(state, ctx, tools, thinking, f"batch at request {state.requests}")
                new = _build(state, policy, ctx)
                _event(state, "cleared", view, new, edit)
                view = new
    if (
        view.tokens() > level(policy.compact_at)
        and _compaction_due(state, policy, ctx, view, level)
        and _compact(state, policy, ctx, room)
    ):
        state.compact_rent = 0.0
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


def _compaction_due(
    state: WindowState,
    policy: WindowPolicy,
    ctx: _Context,
    view: _View,
    level: Callable[[float], float],
) -> bool:
    """Past ``compact_at``, a compaction waits until re-sending what it would remove has cost
    twice the cache write it causes (the clearing's rule), unless the prompt passes midway
    between ``compact_at`` and the room: it then goes at once."""
    tokens = view.tokens()
    if tokens > level((policy.compact_at + 1) / 2):
        return True
    landing = level(_landing(policy))
    p = price(policy.model or _priced(ctx.model))
    state.compact_rent += max(0.0, tokens - landing) * p.cache_read
    # The cache keeps the prefix up to the first summarised message: the rest is written again.
    kept = next((k for k, m in enumerate(view.messages) if not _verbatim(m)), len(view.messages))
    rewritten = max(0.0, landing - REPLY_PRIMING - sum(view.sizes[:kept]))
    return state.compact_rent / _PATIENCE > (p.cache_write_5m - p.cache_read) * rewritten
