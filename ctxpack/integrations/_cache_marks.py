"""Anthropic's prompt-cache breakpoints (``cache_control``) in a request: counted, checked
against the API's limit, and left out (those between the first and the newest first, beyond the
limit), wherever a request's blocks, messages and tools carry
them (not in a caller's own data: a tool call's input, a tool's schema)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError

__all__ = [
    "MAX_CACHE_MARKS",
    "cache_marks",
    "check_cache_marks",
    "without_marks",
    "without_middle_marks",
]

# Anthropic: "A maximum of 4 blocks with cache_control may be provided" (prompt caching,
# counted over the tools, the system prompt and the messages).
MAX_CACHE_MARKS = 4


# Where a request holds the caller's own data (a tool call's input, a tool's schema), in which a
# key named cache_control is no breakpoint.
_DATA = frozenset({"input", "input_schema", "parameters", "cache_control"})


def cache_marks(value: Any) -> int:
    """The ``cache_control`` breakpoints in a request's field (blocks, messages, tools)."""
    if isinstance(value, Mapping):
        inner = sum(cache_marks(v) for k, v in value.items() if k not in _DATA)
        return (value.get("cache_control") is not None) + inner
    if isinstance(value, (list, tuple)):
        return sum(map(cache_marks, value))
    return 0


def check_cache_marks(marks: int, whose: str) -> None:
    """A ``ConfigError`` for more ``cache_control`` breakpoints than Anthropic takes."""
    if marks > MAX_CACHE_MARKS:
        raise ConfigError(
            f"cache_control: {whose} {marks} blocks with cache_control, and Anthropic takes at "
            f"most {MAX_CACHE_MARKS} in a request (tools, system and messages together); keep "
            "the last few breakpoints only"
        )


def without_middle_marks(value: Any, excess: int, *, keep: int) -> tuple[Any, int]:
    """``value`` (a request's messages) without ``excess`` of its ``cache_control``
    breakpoints, those right after its first ``keep``, in document order, as new dicts and
    lists where one is dropped; and how many are left to drop.

    The first breakpoint of a request caches the prefix every conversation with it shares (the
    tools, the system prompt, a document the first turn holds), and the newest cache the
    conversation as it grows: Anthropic finds an earlier entry only within 20 blocks before a
    breakpoint, so a long conversation is read from the cache through its newest marks. The
    breakpoints between them, left from earlier requests, are worth least, and go first.
    """
    out, _, left = _without(value, keep, excess)
    return out, left


def _without(value: Any, keep: int, excess: int) -> tuple[Any, int, int]:
    if excess <= 0:
        return value, keep, 0
    if isinstance(value, Mapping):
        out = dict(value)
        if out.get("cache_control") is not None:
            if keep:
                keep -= 1
            else:
                del out["cache_control"]
                excess -= 1
        for key, item in out.items():
            if key not in _DATA:
                out[key], keep, excess = _without(item, keep, excess)
        return out, keep, excess
    if isinstance(value, list):
        items = []
        for item in value:
            item, keep, excess = _without(item, keep, excess)
            items.append(item)
        return items, keep, excess
    return value, keep, excess


def without_marks(value: Any) -> Any:
    """``value`` (a message, a system prompt) without its ``cache_control`` breakpoints: what
    it says, not where a caller marks the cache (see :func:`without_middle_marks`)."""
    return without_middle_marks(value, cache_marks(value), keep=0)[0]
