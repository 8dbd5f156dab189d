"""The allowlists of secret rules: what a rule's match may be and still be spared (gitleaks'
shape: regexes on the secret, the match or its line, and stopwords in the secret)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import regex

from .secret_starts import pattern_groups
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
        else:
            subject = match if self.target == "match" else secret
            for pattern in self.patterns:
                if pattern.search(subject):
                    return True
        return self.stopwords is not None and self.stopwords.search(secret.lower()) is not None


def compile_rule(pattern: str, engine: str = "regex") -> Any:
    if engine == "re":
        return re.compile(pattern)
    # Version 1 reads an inline flag in the middle of a pattern as Go's RE2 does: to the end of
    # its group.
    return regex.compile(pattern, regex.V1)


class AsciiTwin:
    """A pattern of ``re``'s syntax and ``regex``'s meaning (version 1), matched by ``re`` in
    an ASCII text, three times faster. The two engines differ in what they take for a letter
    in another case (``regex`` folds case fully: "ss" matches "ß") and in what a class such as
    ``\\w`` holds beyond ASCII, never in an ASCII text, where the pattern's characters beyond
    ASCII (the ellipsis "…") match none, in either case; nor in a pattern without ``regex``'s
    own syntax (set operations, nested classes), which the caller vouches for."""

    def __init__(self, pattern: str) -> None:
        self.pattern = compile_rule(pattern)
        folds = "".join(c.lower() + c.upper() + c.casefold() for c in pattern if not c.isascii())
        self._ascii = None if any(c.isascii() for c in folds) else re.compile(pattern)

    def match(self, text: str) -> Any:
        if self._ascii is not None and text.isascii():
            return self._ascii.match(text)
        return self.pattern.match(text)


def allowlist(entry: dict[str, Any]) -> Allowlist:
    regexes = entry.get("regexes", ())
    patterns = tuple(compile_rule(p) for p in regexes)
    if len(patterns) > 1 and not any(p.groups for p in patterns):
        # One search, not one a pattern (the global allowlist has 13, each tried on each
        # value found): a search for "(?:a)|(?:b)" finds one where either finds one, and an
        # inline flag holds to the end of its group (version 1). A group could be referred to
        # by number, which joining would shift.
        patterns = (compile_rule("|".join(f"(?:{p})" for p in regexes)),)
    else:
        patterns = tuple(folded(p.pattern) or p for p in patterns)
    return Allowlist(
        entry.get("target", "secret"), patterns, _stopwords(entry.get("stopwords", ()))
    )


def _stopwords(words: Sequence[str]) -> re.Pattern[str] | None:
    return re.compile(trie_pattern(words)) if words else None


class Folded:
    """A pattern ``(?i)(?:A|B|...)`` searched as its alternatives are: those whose case is
    ignored in lower case, in the lowered text, those in ``(?-i:...)`` as written, in the text;
    an ASCII text only (the pattern itself otherwise), and by ``re`` where it reads them as
    ``regex`` does. gitleaks' generic rule's allowlist of key names is one such: tried at every
    position of each value the rule finds, its dozens of alternatives cost 30 us a value with
    their case ignored, a third of that so.

    Of an ASCII text, the lowered text holds a letter in lower case wherever the text holds it
    in either case, and each alternative whose case is ignored is written here with no upper
    case letter and nothing that reads the case (see :func:`folded`): it matches the lowered
    text where it matched the text. A search of alternatives finds one where one of them does.
    """

    def __init__(self, pattern: Any, lowered: Sequence[str], exact: Sequence[str]) -> None:
        self.pattern = pattern
        self._lowered = _joined(lowered)
        self._exact = _joined(exact)

    def search(self, text: str) -> bool:
        if not text.isascii():
            return self.pattern.search(text) is not None
        if self._lowered and any(p.search(text.lower()) for p in self._lowered):
            return True
        return any(p.search(text) for p in self._exact)


# What ``re`` reads otherwise than ``regex``: a nested class, set operations (and a reference,
# a recursion, a branch reset, which it rejects).
_REGEX_ONLY = re.compile(r"\[\[|--|&&|\|\||~~")


def _joined(alternatives: Sequence[str]) -> tuple[Any, ...]:
    """``alternatives`` as at most two patterns: those ``re`` reads as ``regex`` does in an
    ASCII text (twice as fast), and the others."""
    plain, other = [], []
    for alternative in alternatives:
        try:
            if _REGEX_ONLY.search(alternative):
                raise re.error("regex's own syntax")
            re.compile(alternative)
            plain.append(alternative)
        except re.error:
            other.append(alternative)
    patterns = [re.compile("|".join(f"(?:{a})" for a in plain))] if plain else []
    return (*patterns, *([compile_rule("|".join(f"(?:{a})" for a in other))] if other else []))


# What an alternative whose case is ignored may hold to be searched in lower case: no flag,
# group name or reference (the alternatives are searched apart), no escape but of a
# punctuation mark or of a class that reads no case (\w, \s, \d, \b, \t, \n, \r), and no
# class holding an upper case letter (a range such as [A-z] would change in lower case).
_UNFOLDABLE = re.compile(r"\\[^\W_wsdbtnr]|\(\?[^:=!<]|\(\?<[^=!]|\[(?:\\.|[^\]\\])*[A-Z]")
# A reference to a group by number or name: the alternatives' groups are numbered apart.
_REFERENCE = re.compile(r"\\[1-9g]|\(\?P[=>]|\(\?(?:[R&]|[+-]?\d)")


def folded(pattern: str) -> Folded | None:
    """``pattern`` as a :class:`Folded`, if it is of that form (ASCII), else ``None``."""
    if not pattern.startswith("(?i)(?:") or not pattern.isascii() or _REFERENCE.search(pattern):
        return None
    outer = pattern_groups(pattern)
    bars, close = outer.get(4, ([], -1))
    if close != len(pattern) - 1 or outer[-1][0]:
        return None
    lowered, exact = [], []
    for begin, end in zip([7, *(b + 1 for b in bars)], [*bars, close], strict=True):
        alternative = pattern[begin:end]
        if alternative.startswith("(?-i:") and outer.get(begin, ([], -1))[1] == end - 1:
            exact.append(alternative[5:-1])
        elif _UNFOLDABLE.search(alternative):
            return None
        else:
            lowered.append(alternative.lower())
    return Folded(compile_rule(pattern), lowered, exact)
