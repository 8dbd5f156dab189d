"""The rule that times an edit in the managed mode: it goes once its rent pays for the rewrite.

An edit (a clearing batch, a compaction) makes the prompt cache write again everything after
the last entry the provider still finds before its edit point (:func:`_rewritten`). Until it
is made, every request re-sends, at the cache-read price, the tokens it
would remove: their *rent*. The edit goes once the rent since the last edit of its kind has cost
its *patience* times what writing the rewritten tokens again costs over reading them from the
cache. The caller accumulates the rent (``state.rent``, ``state.compact_rent``); :func:`_pays`
only answers.

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

from itertools import accumulate

from .._internal.cache_points import CachePoints, blocks_of, cache_points_of, found_point
from ..cost import Price
from ..editing import DEFAULT_PRICED_MODEL, PATIENCE, resolve_price, rewrite_pays
from ..tokens import REPLY_PRIMING
from ._policy import WindowPolicy
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
    than reading them: the edit then goes (and its rent starts again at 0). The rule of
    :class:`~ctxpack.editing.ToolResultClearer`, at the policy's ``ttl``."""
    return rewrite_pays(rent, rewritten, p, policy.ttl, patience)


def _cache_points(policy: WindowPolicy, model: str | None) -> tuple[CachePoints, int | None]:
    """Where the provider caches the prompt, and how far back it looks for an entry: as the
    policy's model's provider does, else the session's model's, else that of the model whose
    prices time the edits then (``claude-sonnet-4-5``)."""
    return cache_points_of(policy.model or model or DEFAULT_PRICED_MODEL)


def _rewritten(
    policy: WindowPolicy, ctx: _Context, view: _View, edit: int, removed: int = 0
) -> int:
    """Tokens the prompt cache writes again when ``view`` is sent edited from its position
    ``edit`` on (less ``removed``, for the view before a clearing that removes them): the
    prompt after the last entry the provider finds at or before the edit point. Where every
    message boundary is cached, that is the edit point; where one breakpoint ends each request,
    the end of the last earlier request (a point that a reply follows) within the lookback,
    else none: the whole prompt, tool definitions too, is written again. A prefix shorter than
    the model's minimum cacheable length is never an entry. The rule
    :func:`ctxpack.cost.simulate` bills with."""
    points, lookback = _cache_points(policy, ctx.model)
    messages = view.messages
    blocks = list(accumulate(map(blocks_of, messages), initial=0))
    prefixes = list(accumulate(view.sizes, initial=ctx.tool_tokens))
    minimum = _cache_price(policy, ctx.model).min_cacheable_tokens

    def cached(point: int) -> bool:
        # Nothing shorter than the model's minimum cacheable length is ever written.
        if point > edit or prefixes[point] < minimum:
            return False
        return points == "message" or (
            point < len(messages) and messages[point].role == "assistant"
        )

    start = found_point(blocks, cached, points, lookback)
    written = REPLY_PRIMING + sum(view.sizes[start or 0 :]) - removed
    return written + (ctx.tool_tokens if start is None else 0)
