"""The lines of a text that redaction reads around each finding, each line read once."""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

__all__: list[str] = []


class TextLines:
    """The lines of one text, for the findings in it: the line around a span, whether it
    holds a keyword, and a line allowlist's verdict, each without reading the line again. A
    tool output may be one long line holding thousands of matches (minified JSON), and
    reading that line for each match made redaction quadratic: 10 s for 400 kB."""

    def __init__(self, text: str, lowered: str, places: Mapping[str, int] | None = None) -> None:
        self.text = text
        self._breaks: list[int] | None = None  # found at the first match: most texts have none
        # Positions in the lowered text are the text's only if lowering kept every length
        # (a character such as "İ" lowers to two).
        self.lowered = lowered if len(lowered) == len(text) else None
        self.ascii = text.isascii()
        self._places: dict[tuple[str, ...], list[int]] = {}
        # How often a keyword occurs: where no two occurrences of it can overlap, the number
        # of places it occurs at (``places``, counted in the text's one reading for keywords).
        self._counts = {k: n for k, n in (places or {}).items() if not overlaps_itself(k)}
        self._keyword_at: dict[str, list[int]] = {}
        self._verdicts: dict[tuple[int, int, int], bool] = {}

    def around(self, start: int, end: int) -> tuple[int, int]:
        """The bounds of the line(s) holding ``start..end``, line breaks excluded."""
        if self._breaks is None:
            self._breaks = [m.start() for m in re.finditer("\n", self.text)]
        breaks = self._breaks
        i = bisect.bisect_left(breaks, start)
        j = bisect.bisect_left(breaks, end, lo=i)
        return (breaks[i - 1] + 1 if i else 0), (breaks[j] if j < len(breaks) else len(self.text))

    def holds(self, keywords: Iterable[str], line: tuple[int, int], part: str = "") -> bool:
        """Whether one of ``keywords`` (lower-case ASCII) occurs in ``line``, case ignored;
        ``part``, a part of the line (most rules' matches name a keyword), is read first."""
        if part:
            # Lowered alone, a part reads as in the lowered line: only a Greek sigma lowers
            # by what surrounds it, and no keyword holds one.
            lowered = part.lower()
            if any(k in lowered for k in keywords):
                return True
        begin, end = line
        if self.lowered is None:
            lowered = self.text[begin:end].lower()
            return any(k in lowered for k in keywords)
        for keyword in keywords:
            at = self.occurrences(keyword)
            i = bisect.bisect_left(at, begin)
            if i < len(at) and at[i] + len(keyword) <= end:
                return True
        return False

    def occurrences(self, keyword: str) -> list[int]:
        """Where ``keyword`` (lower-case) starts in the text, case ignored (needs ``lowered``)."""
        assert self.lowered is not None
        at = self._keyword_at.get(keyword)
        if at is None:
            at = self._keyword_at[keyword] = _occurrences(self.lowered, keyword)
        return at

    def count(self, keyword: str) -> int:
        """How often ``keyword`` (lower-case) occurs in the text, case ignored, without
        overlaps (``str.count``; needs ``lowered``). Several rules share a keyword."""
        assert self.lowered is not None
        n = self._counts.get(keyword)
        if n is None:
            n = self._counts[keyword] = self.lowered.count(keyword)
        return n

    def places(self, keywords: tuple[str, ...]) -> list[int]:
        """Where one of ``keywords`` (lower-case) starts in the text, case ignored, in order
        (needs ``lowered``)."""
        at = self._places.get(keywords)
        if at is None:
            merged = {i for k in keywords for i in self.occurrences(k)}
            at = self._places[keywords] = sorted(merged)
        return at

    def starts_holding(self, keywords: Iterable[str], present: Collection[str]) -> list[int]:
        """Where the lines holding one of ``keywords`` (lower-case; those not in ``present``,
        the text's keywords, skipped) start, in order (needs ``lowered``)."""
        around = self.around
        at = {around(i, i)[0] for k in keywords if k in present for i in self.occurrences(k)}
        return sorted(at)

    def allowed(self, owner: object, patterns: Sequence[Any], line: tuple[int, int]) -> bool:
        """Whether one of ``patterns`` (``owner``'s, an allowlist's) is found in ``line``
        (once per line and owner)."""
        key = (id(owner), *line)
        verdict = self._verdicts.get(key)
        if verdict is None:
            text = self.text[line[0] : line[1]]
            verdict = self._verdicts[key] = any(p.search(text) for p in patterns)
        return verdict


def _occurrences(text: str, word: str) -> list[int]:
    """Where ``word`` starts in ``text``, overlapping occurrences included, in order."""
    found, at = [], text.find(word)
    while at != -1:
        found.append(at)
        at = text.find(word, at + 1)
    return found


def overlaps_itself(word: str) -> bool:
    """Whether two occurrences of ``word`` can overlap (it ends as it begins)."""
    # Only where the word's first character occurs again can a second occurrence begin.
    at = word.find(word[:1], 1)
    while at != -1:
        if word.startswith(word[at:]):
            return True
        at = word.find(word[:1], at + 1)
    return False
