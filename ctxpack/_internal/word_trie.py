"""Many words as one regular expression: a trie, so that a search reads each position once
(an alternation of the words as written would try each of them there)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__: list[str] = []


def trie_pattern(words: Iterable[str]) -> str:
    """A pattern matching, at a position, the longest of ``words`` that starts there (and,
    backtracking, each shorter one that does)."""
    trie: dict[str, Any] = {}
    for word in sorted(set(words)):
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def alternation(node: dict[str, Any]) -> str:
        branches = [re.escape(ch) + alternation(child) for ch, child in node.items() if ch]
        if not branches:
            return ""
        inner = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if "" in node:
            # Greedy: a longer word first; the shorter one is its prefix.
            return "(?:" + inner + ")?" if len(branches) == 1 else inner + "?"
        return inner

    return alternation(trie)
