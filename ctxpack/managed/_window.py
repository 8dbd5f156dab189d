"""One request within the window: clear, compact, then clear everything if need be."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..cost import Price
from ..editing import COMPACTION_FLOOR
from ..errors import BudgetExceededError
from ..messages import Message
from ..pipeline import Decision
from ..providers import provider_from_model
from ..store import ArtifactStore
from ..tokens import REPLY_PRIMING, TokenCounter
from ._compaction import _compact, _send_reinjected_once, _within, fit_digest
from ._policy import WindowPolicy
from ._rent import (
    COMPACTION_PATIENCE,
    _cache_points,
    _cache_price,
    _extra_rewrite,
    _forget_expired,
    _is_whole,
    _pays,
    _rent,
    _request_sent,
    _rewrite_tool_tokens,
    _rewritten,
    _written_anyway,
)
from ._room import _Room
from ._state import WindowEvent, WindowState
from .clearing import (
    _answer_batch,
    _clear,
    _clear_batch,
    _edit_point,
    _edited,
    _emergency_batch,
)
from .view import _PINNED_ID, _SYSTEM, _build, _Context, _pinned_kind, _verbatim, _View

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
    arrived: Callable[[int], Message] | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    provider: str | None = None,
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
        arrived: ``position`` -> the record's message at ``position`` as it arrived (the
            results of the provider's tools in it unfiltered), whose results a clearing
            stores; ``None``: the record's own.
        tools: The tool definitions sent with the request: an edit that rewrites the whole
            prompt writes them again, counted as the provider whose cache times the edits
            bills them (Claude's for a policy and session naming no model); ``None``: counted
            as ``tool_tokens``.
        provider: The provider the request is for, whose context management a server-side
            policy hands the window to; ``None``: the ``model``'s.

    Raises:
        ConfigError: ``tools`` holds something that is not a tool definition, named.
        BudgetExceededError: the messages that are never removed (system prompt, user
            instructions, pinned content within its budgets) do not fit in the window with the
            reply room.
    """
    now = time.time()
    cached_tools = _rewrite_tool_tokens(policy, model, counter, tools, tool_tokens)
    ctx = _Context(
        record, counter, store, original_artifact, retrievable, model, arrived, cached_tools
    )
    room = policy.room(tool_tokens=tool_tokens)
    if state.summary_id is not None and state.compacted_length is None:
        # A state saved without it: the last request re-injected the pins of its record (of
        # this one, as the render before did, when that length is unknown too).
        state.compacted_length = state.rendered or len(record)
    _send_reinjected_once(state, policy, ctx)
    view = _build(state, policy, ctx)
    if policy.server_side:
        anthropic = (provider or provider_from_model(ctx.model)) == "anthropic"
        _server_side(state, policy, view, room, tool_tokens, anthropic=anthropic)
    else:
        # Rendered again with nothing appended (a retry): the rent was paid by the request
        # before, and an edit it times would rewrite a prefix the provider may have cached;
        # unless it no longer fits (more tools, a longer system prompt): a new request then.
        again = state.requests > 0 and state.rendered == len(record) and view.tokens() <= room
        _forget_expired(state, policy, now)
        view = _manage(state, policy, ctx, view, room, timed=not again)
        if view.tokens() > room:
            raise _too_large(policy, ctx, view, tool_tokens)
    _request_sent(state, view)
    # The request leaves once the render returns, after any summarizer's model call: its
    # entry lives from then, not from when the render began.
    state.rendered_at = time.time()
    state.requests += 1
    state.rendered = len(record)
    state.last_tokens = view.tokens()
    return view.messages


def _server_side(
    state: WindowState,
    policy: WindowPolicy,
    view: _View,
    room: int,
    tool_tokens: int,
    *,
    anthropic: bool,
) -> None:
    """The provider edits what a server-side session sends, past its triggers, but never the
    system prompt: that must fit. Anthropic's compaction cannot trigger under its floor, said
    at the first request when the floor is above the room (only clearing then edits), for a
    request to ``anthropic`` (the provider whose field the session sends, not only a Claude
    model's: a session naming no model sends Anthropic's for Anthropic's messages)."""
    system = [m.id for m in view.messages if m.role in _SYSTEM]
    tokens = sum(size for m, size in zip(view.messages, view.sizes, strict=True) if m.id in system)
    if tokens > room:
        raise BudgetExceededError(
            required=tokens + REPLY_PRIMING + policy.reserve + tool_tokens,
            budget=policy.window,
            pinned_ids=system,
            tool_tokens=tool_tokens,
            what="the system prompt, which the provider's context management never edits,",
            fixes=f"raise window, lower reply_room ({policy.reserve})",
            remedy="shorten",
        )
    if anthropic and state.requests == 0 and room < COMPACTION_FLOOR:
        _room_warning(
            state,
            view,
            f"Anthropic's compaction cannot trigger under {COMPACTION_FLOOR} input tokens, over "
            f"the {room} tokens a request may hold: only tool-result clearing edits this session "
            "server-side, and a request it does not bring within the window fails; raise "
            "window, or manage it client-side",
        )


def _room_warning(state: WindowState, view: _View, reason: str) -> None:
    """A warning about the room a request has, which only the caller can change. Not a
    "window" decision: those are the edits, one per event."""
    state.decisions.append(
        Decision(
            stage="room",
            action="warned",
            message_id=view.messages[0].id,
            reason=reason,
            tokens_before=view.tokens(),
            tokens_after=view.tokens(),
        )
    )


def _too_large(
    policy: WindowPolicy, ctx: _Context, view: _View, tool_tokens: int
) -> BudgetExceededError:
    """The error of a request that no edit brings within the window: what it cannot remove, and
    which arguments make room for it."""
    plan = _Room.of(policy, view, policy.room(tool_tokens=tool_tokens), ctx)
    kept = [m.id for m in ctx.record if ctx.verbatim(m) or _pinned_kind(m) is not None]
    # What the edits left besides the floor (the summary, the turns a compaction keeps whole):
    # without it, a request that fails on a long last answer blames the instructions alone.
    rest = [
        (size, m.id)
        for m, size in zip(view.messages, view.sizes, strict=True)
        if not ctx.verbatim(m) and m.id != _PINNED_ID
    ]
    floor = [
        (size, m.id)
        for m, size in zip(view.messages, view.sizes, strict=True)
        if ctx.verbatim(m) and m.id != _PINNED_ID
    ]
    # The one to shorten first: a pasted log among short instructions.
    biggest = "; the largest, {1!r}, has {0}".format(*max(floor)) if floor else ""
    left = ""
    if rest:
        size, largest = max(rest)
        left = (
            f", and the rest of the request, which clearing and compaction shorten no further "
            f"({sum(s for s, _ in rest)} tokens; the largest message, {largest!r}, has {size})"
        )
    return BudgetExceededError(
        required=view.tokens() + policy.reserve + tool_tokens,
        budget=policy.window,
        pinned_ids=kept,
        tool_tokens=tool_tokens,
        what=(
            f"the system prompt and user messages ({plan.floor - plan.pinned} tokens{biggest}) "
            "with the "
            f"pinned content as a compaction re-injects it ({plan.pinned} tokens: memory files "
            f"whole, skills within skill_budget={policy.skill_budget} and "
            f"pinned_budget={policy.pinned_budget}){left}"
        ),
        fixes=f"raise window, lower reply_room ({policy.reserve}), skill_budget or pinned_budget",
        # The system prompt and the task are kept without being pinned: they can only shrink.
        remedy="shorten or unpin some of",
    )


def _manage(
    state: WindowState,
    policy: WindowPolicy,
    ctx: _Context,
    view: _View,
    room: int,
    *,
    timed: bool = True,
) -> _View:
    """Clear, compact, then clear every tool result and, if need be, the answers kept whole,
    until the view fits ``room``; without ``timed``, only the edits that make it fit (the
    request before decided the others on the same record). When the request finds no cache
    entry (the cache expired, or an edit of this request left none it can find), an edit
    rewrites nothing the request would not write anyway: it goes once it has any rent."""
    if timed:
        plan = _Room.of(policy, view, room, ctx)
        released = _release_instructions(state, policy, ctx, view, plan)
        if released is not view:
            view, plan = released, _Room.of(policy, released, room, ctx)
        _warn_if_crowded(state, plan, view)
        p = _cache_price(policy, ctx.model)
        if view.tokens() > plan.level(policy.clear_at):
            view = _maybe_clear(state, policy, ctx, view, plan, p)
        # Every request since the last compaction re-sends what the next one would remove:
        # its rent runs from there, not from compact_at, which only says how early it may go.
        state.compact_rent += _rent(max(0.0, view.tokens() - _next_landing(state, plan)), p)
        if view.tokens() > plan.level(policy.compact_at):
            view = _maybe_compact(state, policy, ctx, view, plan, p)
    view = _emergency(state, policy, ctx, view, room)
    if view.tokens() > room:
        # Nothing but the floor and the summary is left: the instructions crowd the window
        # now, not only past instructions_share, and the oldest give way as they would there.
        plan = _Room.of(policy, view, room, ctx)
        released = _release_instructions(state, policy, ctx, view, plan, stuck=True)
        if released is not view:
            view = _emergency(state, policy, ctx, released, room)
    view = _shrink_summary(state, policy, ctx, view, room)
    if view.tokens() > room:
        view = _summarise_the_rest(state, policy, ctx, view, room)
    return _drop_summary(state, policy, ctx, view, room)


def _summarise_the_rest(
    state: WindowState, policy: WindowPolicy, ctx: _Context, view: _View, room: int
) -> _View:
    """Summarise every message after the summary, the last call and its results too, once
    their notes alone leave the request over ``room`` (a window of a few thousand tokens, a
    call made in parallel many times): the request is then the instructions, the pins and the
    summary, which the model reads back through the index its header names, rather than none.
    """
    plan = _Room.of(policy, view, room, ctx)
    why = "the notes standing for the last call and its results left no room"
    if not _compact(state, policy, ctx, plan, keep_recent=0, why=why, force=True):
        return view
    state.compact_rent = 0.0
    new = _build(state, policy, ctx)
    view = _edited(state, policy, ctx, "compacted", view, new, _first_change(view, new))
    return _shrink_summary(state, policy, ctx, view, room)


def _shrink_summary(
    state: WindowState, policy: WindowPolicy, ctx: _Context, view: _View, room: int
) -> _View:
    """The summary cut by what the request is still over ``room``, once nothing else can go:
    a compaction fitted it to the room as it was, and the floor grew under it since (a long
    question). The digest loses its oldest lines first, a summarizer's text keeps its head
    (whole in an artifact); the index artifact still lists every summarised original."""
    over = view.tokens() - room
    if over <= 0 or not state.summary:
        return view
    counter = ctx.counter
    tokens = counter.count(state.summary)
    budget = max(0, tokens - over)
    if policy.summarizer is None:
        text, how = fit_digest(state.summary, budget, counter), "its oldest lines dropped"
    else:
        text, how = _within(state.summary, budget, ctx)[0], "cut to its head"
    if counter.count(text) > budget:
        text, how = "", "emptied (its header names the index of the originals)"
    state.summary = text
    new = _build(state, policy, ctx)
    at = _edit_point(view, {state.summary_id or ""})
    if at < len(view.messages):
        state.decisions.append(
            Decision(
                stage="window",
                action="compressed",
                message_id=view.messages[at].id,
                reason=f"summary {how}: the request would not fit the window",
                tokens_before=view.sizes[at],
                tokens_after=new.sizes[at],
            )
        )
    return _edited(state, policy, ctx, "emergency", view, new, at)


def _drop_summary(
    state: WindowState, policy: WindowPolicy, ctx: _Context, view: _View, room: int
) -> _View:
    """The summary left out of the request, once nothing but its header is left of it and
    that header alone leaves the request over ``room``: what is left is what the request
    must carry. Until the next compaction, which makes a new one; the index of the
    originals stays stored (``state.index_artifact``), every original in it."""
    if view.tokens() <= room or state.summary is None or state.summary_id is None:
        return view
    at = _edit_point(view, {state.summary_id})
    state.summary = None
    new = _build(state, policy, ctx)
    state.decisions.append(
        Decision(
            stage="window",
            action="dropped",
            message_id=state.summary_id,
            reason=f"summary left out until the next compaction: even its header would not fit "
            f"the window; the index of the originals is artifact {state.index_artifact}",
            tokens_before=view.sizes[at],
            tokens_after=0,
        )
    )
    return _edited(state, policy, ctx, "emergency", view, new, at)


def _emergency(
    state: WindowState, policy: WindowPolicy, ctx: _Context, view: _View, room: int
) -> _View:
    """Clear tool results and thinking turns, then the answers kept whole, until the view
    fits ``room``, untimed: the request cannot be sent otherwise."""
    # The fewest tool results and thinking turns first, the oldest first; then every one (a
    # count may differ a little from the view's once built).
    for least in (True, False):
        if view.tokens() <= room:
            break
        tools, thinking, removed = (
            _emergency_batch(state, policy, ctx, view.tokens() - room)
            if least
            else _clear_batch(state, policy, ctx, keep=0, keep_thinking=0)
        )
        if removed > 0:
            edit = _edit_point(
                view, {ctx.record[i].id for i in [*(j for j, _ in tools), *thinking]}
            )
            _clear(state, ctx, tools, thinking, "the request would not fit the window")
            new = _build(state, policy, ctx)
            view = _edited(state, policy, ctx, "emergency", view, new, edit)
    if view.tokens() > room:
        answers = _answer_batch(state, ctx, view.tokens() - room)
        if answers:
            edit = _edit_point(view, {ctx.record[i].id for i in answers})
            _clear(state, ctx, (), (), "the request would not fit the window", answers)
            new = _build(state, policy, ctx)
            view = _edited(state, policy, ctx, "emergency", view, new, edit)
    return view


def _release_instructions(
    state: WindowState,
    policy: WindowPolicy,
    ctx: _Context,
    view: _View,
    plan: _Room,
    stuck: bool = False,
) -> _View:
    """Once the user messages after the first pass ``instructions_share`` of the room, compact
    the oldest of them with the history, down to half the share: the floor no edit removes
    would otherwise grow with every turn of a chat until no request fits. Half, so that the
    cache is written again once per so many turns, not at every one. ``stuck``: the request is
    over the room with nothing else left to remove; every one that may go goes."""
    share = policy.instructions_share
    if share is None:
        return view
    users = [
        (m, size)
        for m, size in zip(view.messages, view.sizes, strict=True)
        if m.role == "user" and _verbatim(m) and m.id != _PINNED_ID
    ]
    tokens = sum(size for m, size in users[1:] if not m.pinned)
    if tokens <= share * plan.room and not stuck:
        return view
    # Over the room, every one that may go goes: releasing just what is over would rewrite the
    # cache again at the next user message.
    release = tokens if stuck else tokens - int(share * plan.room / 2)
    # A message of the tail waits to leave it, unless no request can hold the floor (or the
    # floor and the summary): none could be sent to bring the messages that push it out. The
    # tail then opens on the last user message, the question.
    users_at = [i for i, m in enumerate(ctx.record) if m.role == "user" and _verbatim(m)]
    opens = stuck or plan.floor > plan.room
    tail = len(ctx.record) - users_at[-1] if opens and users_at else None
    why = (
        f"the user messages after the first passed instructions_share={share} of the room"
        if not stuck
        else "with the rest of the request, the user messages after the first left no room: "
        "no request could be sent"
    )
    if not _compact(state, policy, ctx, plan, release=release, keep_recent=tail, why=why):
        return view
    state.compact_rent = 0.0
    new = _build(state, policy, ctx)
    return _edited(state, policy, ctx, "compacted", view, new, _first_change(view, new))


def _warn_if_crowded(state: WindowState, plan: _Room, view: _View) -> None:
    """Warn once the floor takes over half the room, and again each time it has grown by a
    tenth of the room since: what is left is too small to manage cheaply, and the caller is
    the one who can make room (the floor is never edited)."""
    if plan.floor <= plan.room // 2 or plan.floor < state.crowded_floor + plan.room // 10:
        return
    state.crowded_floor = plan.floor
    left = plan.room - plan.floor
    pinned = f" ({plan.pinned} tokens as a compaction re-injects it)" if plan.pinned else ""
    _room_warning(
        state,
        view,
        f"the system prompt, user messages and pinned content{pinned} take {plan.floor} of the "
        f"{plan.room} tokens a request may hold: {left} are left for the conversation, so "
        "clearings and compactions come often and each rewrites the prompt cache; raise "
        "window, lower skill_budget or pinned_budget, or pin less",
    )


def _maybe_clear(
    state: WindowState,
    policy: WindowPolicy,
    ctx: _Context,
    view: _View,
    plan: _Room,
    p: Price,
) -> _View:
    """Past ``clear_at``, clear a batch once its rent pays for the rewrite, or at once past
    ``compact_at`` when the batch brings the prompt back down to where a compaction lands."""
    # 0 keeps none (client-side only); None keeps every turn's.
    keep_thinking = 10**9 if policy.keep_thinking is None else policy.keep_thinking
    tools, thinking, removed = _clear_batch(
        state, policy, ctx, keep=policy.keep, keep_thinking=keep_thinking
    )
    if removed <= 0:
        return view
    edit = _edit_point(view, {ctx.record[i].id for i in [*(j for j, _ in tools), *thinking]})
    # Priced: only what the batch makes the cache write that this request would have read.
    anyway = _written_anyway(state, policy, ctx, view)
    rewritten = _rewritten(policy, ctx, view, edit, removed, ends=state.cache_ends)
    after = _extra_rewrite(rewritten, anyway)
    state.rent += _rent(removed, p)
    tokens = view.tokens()
    pressed = tokens > plan.level(policy.compact_at)
    settles = tokens - removed <= plan.level(plan.landing_share)
    if not ((pressed and settles) or (not pressed and _pays(state.rent, after, p, policy))):
        return view
    if removed < policy.clear_at_least:
        return view  # its rent goes on: the batch is cleared once it is big enough
    state.rent = 0.0
    _clear(state, ctx, tools, thinking, f"batch at request {state.requests}")
    new = _build(state, policy, ctx)
    return _edited(state, policy, ctx, "cleared", view, new, edit)


def _maybe_compact(
    state: WindowState,
    policy: WindowPolicy,
    ctx: _Context,
    view: _View,
    plan: _Room,
    p: Price,
) -> _View:
    """Past ``compact_at``, compact once its rent since the last compaction equals its
    rewrite (``COMPACTION_PATIENCE``: the cadence that costs least), or at once past midway
    between ``compact_at`` and the room."""
    urgent = view.tokens() > plan.level((policy.compact_at + 1) / 2)
    # What the request appended since the last one is written with or without the compaction
    # (it is in the tail kept): only the rest of the rewrite is priced.
    anyway = _written_anyway(state, policy, ctx, view)
    cold = _is_whole(anyway, ctx, view)
    rewrite = 0.0 if cold else _extra_rewrite(_next_rewrite(state, policy, ctx, view, plan), anyway)
    if not (urgent or _pays(state.compact_rent, rewrite, p, policy, COMPACTION_PATIENCE)):
        return view
    if not _compact(state, policy, ctx, plan):
        return view
    state.compact_rent = 0.0
    new = _build(state, policy, ctx)
    return _edited(state, policy, ctx, "compacted", view, new, _first_change(view, new))


def _first_change(before: _View, after: _View) -> int:
    """Where ``after`` starts to differ from ``before``: what the cache writes again. After a
    compaction, the system prompt and the pins re-injected after it usually stay."""
    same = zip(before.messages, after.messages, strict=False)
    return next((k for k, (a, b) in enumerate(same) if a != b), len(after.messages))


def _last_compaction(state: WindowState, *, warm: bool = False) -> WindowEvent | None:
    """The last compaction (with ``warm``, the last one made while the prompt cache held an
    entry: a cold one rewrote the whole prompt, whatever a warm one would)."""
    return next(
        (e for e in reversed(state.events) if e.action == "compacted" and not (warm and e.cold)),
        None,
    )


def _next_landing(state: WindowState, plan: _Room) -> float:
    """Where the next compaction should leave the prompt: where the last one did (the landing
    is a cap, which a short summary stays well under), else the landing."""
    last = _last_compaction(state)
    return plan.level(plan.landing_share) if last is None else last.tokens_after


def _next_rewrite(
    state: WindowState, policy: WindowPolicy, ctx: _Context, view: _View, plan: _Room
) -> float:
    """The tokens the next compaction should make the cache write again: as many as the last
    one made with the cache warm did, else as many as landing at the landing would."""
    last = _last_compaction(state, warm=True)
    if last is not None:
        return last.rewritten
    return _compaction_rewrite(policy, ctx, view, plan.level(plan.landing_share))


def _compaction_rewrite(policy: WindowPolicy, ctx: _Context, view: _View, landing: float) -> float:
    """The tokens a compaction landing at ``landing`` makes the cache write again. Where every
    message boundary is cached, the cache keeps the prefix up to the first summarised message
    (the pins a compaction re-injected stay before the summary, as instructions do), the rest
    is written again. Where one breakpoint ends each request, no earlier request ended there
    (:func:`_rewritten`): the whole prompt, tool definitions too, is written again."""
    if _cache_points(policy, ctx.model)[0] == "request":
        return landing + ctx.tool_tokens
    kept = next((k for k, m in enumerate(view.messages) if not _verbatim(m)), len(view.messages))
    return max(0.0, landing - REPLY_PRIMING - sum(view.sizes[:kept]))
