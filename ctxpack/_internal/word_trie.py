"""Many words as one regular expression: a trie, so that a search reads each position once
(an alternation of the words as written would try each of them there)."""

from __future__ import annotations

import re
from collections import Counter
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


class WordCounts:
    """Many words counted in a text in one reading of it, a trie in a lookahead (so that the
    words found may overlap) finding at each position the longest word that starts there."""

    def __init__(self, words: Iterable[str]) -> None:
        self.words = tuple(sorted(set(words)))
        self._words = frozenset(self.words)
        self._finder = re.compile("(?=(" + trie_pattern(self.words) + "))")

    def counts(self, text: str) -> dict[str, int]:
        """The words that occur in ``text``, each with the number of places where it does
        (occurrences that overlap counted).

        A word that occurs at a position is a prefix of the longest word found there (the
        text decides the trie's path), and each prefix of it that is a word occurs there: a
        word occurs where the longest word found begins with it. A text holds few distinct
        longest words: their prefixes are looked up, not every word compared with each of
        them (which, a few hundred words for each text, cost more than the reading itself
        on short tool outputs).
        """
        longest = Counter(self._finder.findall(text))
        longest.pop("", None)
        counts: dict[str, int] = {}
        for match, n in longest.items():
            for end in range(1, len(match) + 1):
                if (prefix := match[:end]) in self._words:
                    counts[prefix] = counts.get(prefix, 0) + n
        return {w: counts[w] for w in sorted(counts)}
