"""The allowlists of secret rules: what a rule's match may be and still be spared (gitleaks'
shape: regexes on the secret, the match or its line, and stopwords in the secret)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import regex

from .text_lines import TextLines
from .word_trie import trie_pattern

__all__: list[str] = []


@dataclass(frozen=True)
class Allowlist:
    target: str  # "secret", "match" or "line"
    patterns: tuple[Any, ...]
    # Its stopwords as one pattern (a trie: gitleaks' generic rule has 1,446 of them, each
    # looked for in each value it finds), or None.
    stopwords: re.Pattern[str] | None

    def allows(self, secret: str, match: str, lines: TextLines, line: tuple[int, int]) -> bool:
        """Whether this allowlist spares ``secret``, found in ``match`` on ``line`` (its
        bounds in the text of ``lines``)."""
        if self.target == "line":
            # Many findings may share one long line: it is searched once.
            if lines.allowed(self, self.patterns, line):
                return True
        elif any(p.search(match if self.target == "match" else secret) for p in self.patterns):
            return True
        return self.stopwords is not None and self.stopwords.search(secret.lower()) is not None


def compile_rule(pattern: str, engine: str = "regex") -> Any:
    if engine == "re":
        return re.compile(pattern)
    # Version 1 reads an inline flag in the middle of a pattern as Go's RE2 does: to the end of
    # its group.
    return regex.compile(pattern, regex.V1)


def allowlist(entry: dict[str, Any]) -> Allowlist:
    regexes = entry.get("regexes", ())
    patterns = tuple(compile_rule(p) for p in regexes)
    if len(patterns) > 1 and not any(p.groups for p in patterns):
        # One search, not one a pattern (the global allowlist has 13, each tried on each
        # value found): a search for "(?:a)|(?:b)" finds one where either finds one, and an
        # inline flag holds to the end of its group (version 1). A group could be referred to
        # by number, which joining would shift.
        patterns = (compile_rule("|".join(f"(?:{p})" for p in regexes)),)
    return Allowlist(
        entry.get("target", "secret"), patterns, _stopwords(entry.get("stopwords", ()))
    )


def _stopwords(words: Sequence[str]) -> re.Pattern[str] | None:
    return re.compile(trie_pattern(words)) if words else None
