"""Where a provider's prompt cache keeps its entries, and which one a request finds: the one
rule that :func:`ctxpack.cost.simulate` bills with and that the managed window estimates an
edit's rewrite with."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from ..messages import Message
from ..providers import provider_from_model

__all__ = ["DEFAULT_LOOKBACK", "CachePoints", "blocks_of", "cache_points_of", "found_point"]

CachePoints = Literal["request", "message"]
# Anthropic looks for an earlier cache entry at most this many content blocks before a
# breakpoint (its prompt-caching guide); an entry further back is not found.
DEFAULT_LOOKBACK = 20


def cache_points_of(model: str | None) -> tuple[CachePoints, int | None]:
    """Where ``model``'s provider writes cache entries, and how far back a request looks for
    one: a Claude model's harness sets one breakpoint at the end of each request, found within
    ``DEFAULT_LOOKBACK`` blocks; every other provider caches each message boundary on its own."""
    if provider_from_model(model) == "anthropic":
        return "request", DEFAULT_LOOKBACK
    return "message", None


def blocks_of(message: Message) -> int:
    """The content blocks ``message`` takes, as a lookback counts them: one, plus one per tool
    call."""
    return 1 + len(message.tool_calls or ())


def found_point(
    blocks: Sequence[int],
    cached: Callable[[int], bool],
    cache_points: CachePoints,
    lookback: int | None,
) -> int | None:
    """The longest prefix of a prompt that the cache serves: the last cache point (a prefix
    ending ``blocks[point]`` blocks into the prompt, the last point being the whole prompt)
    that is ``cached``, or ``None``. With ``"request"`` points, only an entry within
    ``lookback`` blocks of the end is found (``None``: no limit)."""
    end = blocks[-1]
    for point in range(len(blocks) - 1, -1, -1):
        if cache_points == "request" and lookback is not None and end - blocks[point] > lookback:
            return None
        if cached(point):
            return point
    return None
