"""Where a provider's prompt cache keeps its entries, and which one a request finds: the one
rule that :func:`ctxpack.cost.simulate` bills with and that the managed window and
:class:`~ctxpack.editing.ToolResultClearer` estimate an edit's rewrite with."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from itertools import accumulate
from typing import Any, Literal

from ..messages import Message
from ..providers import provider_from_model, tools_as_sent
from ..tokens import REPLY_PRIMING, TokenCounter, checked_tool_tokens
from .encodings import model_encoding

__all__ = [
    "DEFAULT_LOOKBACK",
    "TTL_SECONDS",
    "CachePoints",
    "billed_tool_tokens",
    "blocks_of",
    "cache_points_of",
    "found_point",
    "read_increment",
    "rewritten_tokens",
]

CachePoints = Literal["request", "message"]
# Anthropic looks for an earlier cache entry at most this many content blocks before a
# breakpoint (its prompt-caching guide); an entry further back is not found.
DEFAULT_LOOKBACK = 20


# OpenAI's cached prefix is a whole number of these (its prompt-caching guide).
OPENAI_CACHE_INCREMENT = 128

# How long an entry lives after its last write or read, per requested ``ttl``.
TTL_SECONDS: dict[str, float] = {"5m": 300.0, "1h": 3600.0}


def cache_points_of(model: str | None) -> tuple[CachePoints, int | None]:
    """Where ``model``'s provider writes cache entries, and how far back a request looks for
    one: a Claude model's harness sets one breakpoint at the end of each request, found within
    ``DEFAULT_LOOKBACK`` blocks; every other provider caches each message boundary on its own."""
    if provider_from_model(model) == "anthropic":
        return "request", DEFAULT_LOOKBACK
    return "message", None


def billed_tool_tokens(
    tools: Sequence[Mapping[str, Any]], model: str | None, counter: TokenCounter
) -> int:
    """Tokens of the checked tool definitions ``tools`` as ``model``'s provider receives and
    bills them, as :func:`ctxpack.cost.simulate` counts them: for a Claude model each as an
    Anthropic tool, with Anthropic's tool-use prompt once, whatever form they are given in."""
    if not tools:
        return 0
    return checked_tool_tokens(tools_as_sent(tools, provider_from_model(model)), counter)


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


def rewritten_tokens(
    messages: Sequence[Message],
    sizes: Sequence[int],
    edit: int,
    *,
    model: str | None,
    min_cacheable: int,
    tool_tokens: int = 0,
    sent: Collection[int] | None = None,
) -> int:
    """Tokens the prompt cache writes again when the prompt ``messages`` (of ``sizes`` tokens,
    after ``tool_tokens`` of tool definitions), edited from its position ``edit`` on, is sent
    to ``model``: the prompt after the last entry the provider finds at or before the edit
    point. Where every message boundary is cached, that is the edit point (at most the end of
    the last request ``sent``); where one breakpoint ends each request, the end of the last
    earlier request within the lookback, else none: the whole prompt, tool definitions too,
    is written again. A prefix shorter than ``min_cacheable`` tokens is never an entry.

    ``sent``: the ends (prefix lengths) of the earlier requests whose entries still hold,
    where the caller knows them; ``None``: every point that a reply follows, as if each
    reply answered a request of the prompt before it, sent unchanged since."""
    points, lookback = cache_points_of(model)
    blocks = list(accumulate(map(blocks_of, messages), initial=0))
    prefixes = list(accumulate(sizes, initial=tool_tokens))

    def cached(point: int) -> bool:
        if point > edit or prefixes[point] < min_cacheable:
            return False
        if sent is not None:
            return point <= max(sent, default=-1) if points == "message" else point in sent
        return points == "message" or (
            point < len(messages) and messages[point].role == "assistant"
        )

    start = found_point(blocks, cached, points, lookback)
    written = REPLY_PRIMING + sum(sizes[start or 0 :])
    if start is None:
        return written + tool_tokens
    # OpenAI reads a prefix in whole increments: the tokens past the last one are written too.
    return written + (prefixes[start] % OPENAI_CACHE_INCREMENT if _openai(model) else 0)


def _openai(model: str | None) -> bool:
    """Whether ``model`` is OpenAI's (a name with an OpenAI tokenizer)."""
    return model is not None and model_encoding(model) is not None


def read_increment(model: str | None, tokens: int) -> int:
    """The part of a matched prefix of ``tokens`` that ``model``'s provider reads from the
    cache: OpenAI's prompt-caching guide gives cache hits in increments of 128 tokens (after
    the first 1,024), the rest of the prefix being processed again; others read it whole."""
    return tokens - tokens % OPENAI_CACHE_INCREMENT if _openai(model) else tokens
