"""The rule that times an edit in the managed mode: it goes once its rent pays for the rewrite.

An edit (a clearing batch, a compaction) makes the prompt cache write again everything after
the last entry the provider still finds before its edit point (:func:`_rewritten`). Until it
is made, every request re-sends, at the cache-read price, the tokens it
would remove: their *rent*. The edit goes once the rent since the last edit of its kind has cost
its *patience* times what writing the rewritten tokens again costs over reading them from the
cache: only those the request would have read (:func:`_extra_rewrite`), since it writes what was
appended since the last request (:func:`_written_anyway`) edited or not. The caller accumulates
the rent (``state.rent``, ``state.compact_rent``); :func:`_pays` only answers.

A clearing waits ``PATIENCE`` times (the margin of :class:`~ctxpack.editing.ToolResultClearer`):
it may never be needed, a compaction soon summarising what it would clear. A compaction is
certain to come, the window forcing it, so only its cadence is chosen: the prompt grows from
where the last one left it, and the cadence that minimises the reads of that growth plus the
rewrites is the one where each compaction's rent equals its rewrite (the economic order
quantity: with the prompt growing by ``g`` tokens a request, compacting every ``n`` requests
costs ``read * g * n / 2`` a request in rent and ``(write - read) * rewritten / n`` in
rewrites, least where the two are equal): ``COMPACTION_PATIENCE`` is 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._internal.arguments import tool_definitions
from .._internal.cache_points import (
    DEFAULT_LOOKBACK,
    TTL_SECONDS,
    CachePoints,
    billed_tool_tokens,
    cache_points_of,
    rewritten_tokens,
)
from ..cost import Price
from ..editing import DEFAULT_PRICED_MODEL, PATIENCE, resolve_price, rewrite_pays
from ..tokens import TokenCounter
from ._policy import WindowPolicy
from ._state import WindowState
from .view import _Context, _View

__all__: list[str] = []  # the managed mode's internals: used by its other modules only

COMPACTION_PATIENCE = 1.0


def _cache_price(policy: WindowPolicy, model: str | None) -> Price:
    """The prices that time the edits: the policy's model, else the session's when it is
    priced, else those :class:`~ctxpack.editing.ToolResultClearer` falls back to."""
    return resolve_price(None, policy.model, model)


def _rent(tokens: float, p: Price) -> float:
    """What one request pays to re-send ``tokens`` an edit would remove (read from the cache)."""
    return tokens * p.cache_read


def _pays(
    rent: float,
    rewritten: float,
    p: Price,
    policy: WindowPolicy,
    patience: float = PATIENCE,
) -> bool:
    """Whether ``rent`` accumulated since the last edit pays, with the margin ``patience``, for
    writing ``rewritten`` tokens again (at the write price of the policy's ``ttl``) rather
    than reading them (the edit's :func:`_extra_rewrite`): the edit then goes (and its rent
    starts again at 0). The rule of :class:`~ctxpack.editing.ToolResultClearer`, at the
    policy's ``ttl``."""
    return rewrite_pays(rent, rewritten, p, policy.ttl, patience)


def _cache_model(policy: WindowPolicy, model: str | None) -> str:
    """The model whose provider's cache an edit is timed by: the policy's, else the
    session's, else the one whose prices time the edits then (``claude-sonnet-4-5``)."""
    return policy.model or model or DEFAULT_PRICED_MODEL


def _cache_points(policy: WindowPolicy, model: str | None) -> tuple[CachePoints, int | None]:
    """Where the provider caches the prompt, and how far back it looks for an entry: as
    :func:`_cache_model`'s provider does."""
    return cache_points_of(_cache_model(policy, model))


def _rewrite_tool_tokens(
    policy: WindowPolicy,
    ctx_model: str | None,
    counter: TokenCounter,
    tools: Sequence[Mapping[str, Any]] | None,
    tool_tokens: int,
) -> int:
    """Tokens of the tool definitions a rewrite of the whole prompt writes again: ``tools``
    as the provider of :func:`_cache_model` bills them, which need not be the form they are
    sent in (a session naming no model sends OpenAI's, timed by Claude's cache); without
    them, ``tool_tokens``."""
    if tools is None:
        return tool_tokens
    return billed_tool_tokens(tool_definitions(tools), _cache_model(policy, ctx_model), counter)


def _rewritten(
    policy: WindowPolicy,
    ctx: _Context,
    view: _View,
    edit: int,
    removed: int = 0,
    *,
    ends: Sequence[str] | None,
) -> int:
    """Tokens the prompt cache writes again when ``view`` is sent edited from its position
    ``edit`` on (less ``removed``, for the view before a clearing that removes them), as the
    provider of :func:`_cache_model` caches it (:func:`rewritten_tokens`, the rule
    :func:`ctxpack.cost.simulate` bills with), its entries at the ends of the earlier
    requests (``ends``: ``WindowState.cache_ends``)."""
    sent = None
    if ends is not None:
        last = set(ends)
        sent = {k + 1 for k, m in enumerate(view.messages) if m.id in last}
    written = rewritten_tokens(
        view.messages,
        view.sizes,
        edit,
        model=_cache_model(policy, ctx.model),
        min_cacheable=_cache_price(policy, ctx.model).min_cacheable_tokens,
        tool_tokens=ctx.tool_tokens,
        sent=sent,
    )
    return written - removed


def _forget_expired(state: WindowState, policy: WindowPolicy, now: float) -> None:
    """Forget every entry once the last request was rendered longer ago than the policy's
    ``ttl`` before ``now``: each it used or wrote has expired since."""
    if state.rendered_at is not None and now - state.rendered_at > TTL_SECONDS[policy.ttl]:
        state.cache_ends = []


def _written_anyway(state: WindowState, policy: WindowPolicy, ctx: _Context, view: _View) -> int:
    """Tokens the request ``view`` writes to the prompt cache unedited: the prompt after the
    last entry it finds (what was appended since the last request; the whole prompt, tool
    definitions too, when it finds none)."""
    return _rewritten(policy, ctx, view, len(view.messages), ends=state.cache_ends)


def _writes_whole(state: WindowState, policy: WindowPolicy, ctx: _Context, view: _View) -> bool:
    """Whether the request ``view`` finds no entry of the prompt cache (it expired since the
    last request, an earlier edit of the request left none it can find): it writes the whole
    prompt, tool definitions too, so an edit now costs nothing more in rewrites."""
    return _is_whole(_written_anyway(state, policy, ctx, view), ctx, view)


def _is_whole(written: int, ctx: _Context, view: _View) -> bool:
    """Whether ``written`` tokens of the request ``view`` are all of it, tool definitions too."""
    return written >= view.tokens() + ctx.tool_tokens


def _extra_rewrite(rewritten: float, anyway: int) -> float:
    """What an edit that makes the cache write ``rewritten`` tokens costs over the request
    unedited, which writes ``anyway`` (:func:`_written_anyway`) of them in any case: only the
    tokens it would have read are written instead, so only those are priced."""
    return max(0.0, rewritten - anyway)


def _request_sent(state: WindowState, view: _View) -> None:
    """Record ``view`` sent: its end is an entry of the prompt cache (the most recent ones
    kept, as many as an Anthropic request looks back blocks: no older one is found)."""
    ends = [] if state.cache_ends is None else state.cache_ends
    if view.messages and view.messages[-1].id not in ends[-1:]:
        ends = [*ends, view.messages[-1].id]
    state.cache_ends = ends[-(DEFAULT_LOOKBACK + 1) :]


def _entries_edited(
    state: WindowState, policy: WindowPolicy, ctx: _Context, before: _View, edit: int
) -> None:
    """Forget the entries an edit of ``before`` from its position ``edit`` on changes: the
    ends of earlier requests after it (or summarised away). Where every message boundary is
    cached, the prefix up to the edit point stays an entry if an earlier request sent it."""
    if state.cache_ends is None:
        return
    ids = [m.id for m in before.messages]
    ends = [ids.index(end) + 1 for end in state.cache_ends if end in ids[:edit]]
    sent_past = any(end in ids[edit:] for end in state.cache_ends)
    if _cache_points(policy, ctx.model)[0] == "message" and sent_past and edit > 0:
        ends.append(edit)
    state.cache_ends = [ids[end - 1] for end in sorted(set(ends))]
