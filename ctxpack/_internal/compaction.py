"""Anthropic's ``compaction`` block: the summary server-side compaction returns, from which the
API reads the history (it drops every block before it), unless its null content says the
compaction failed, which makes the block a no-op."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__: list[str] = []


def is_compaction(block: Any) -> bool:
    """Whether ``block`` is a compaction block the API reads the history from (its content a
    summary, not the null of a compaction that failed)."""
    return (
        isinstance(block, Mapping)
        and block.get("type") == "compaction"
        and block.get("content") is not None
    )


def last_compaction(contents: list[Any]) -> tuple[int, int] | None:
    """(message, block) of the last compaction block the API reads the history from, among
    the messages' ``contents``; ``None`` without one."""
    for turn in range(len(contents) - 1, -1, -1):
        content = contents[turn]
        if isinstance(content, list):
            for j in range(len(content) - 1, -1, -1):
                if is_compaction(content[j]):
                    return turn, j
    return None


def read_from(
    contents: list[Any], roles: Sequence[Any]
) -> tuple[list[int], tuple[int, int] | None]:
    """The positions of the messages the API reads, given each one's ``contents`` and
    ``roles``: from the one holding the last compaction block on, and the system and developer
    messages before it (a request sends them apart, and the API keeps them); and (message,
    block) of that block, whose message is read from it on, or ``None`` without one."""
    found = last_compaction(contents)
    if found is None:
        return list(range(len(contents))), None
    start = found[0]
    kept = [i for i, role in enumerate(roles) if i >= start or role in ("system", "developer")]
    return kept, found
