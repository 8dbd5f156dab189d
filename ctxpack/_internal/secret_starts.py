"""Where a secret rule's matches can begin, read from its pattern, so that a text holding its
words everywhere (a dump of keys, a log of tokens) is searched only at them.

A search tries a pattern at every position, and one that opens with words to be matched case
ignored (gitleaks' generic rule: ``(?i)(?:access|auth|...|token)``) gives the regular
expression engine no letter to skip to: the text's every position costs a try of each word.
Where the pattern says its match begins with one of a few words, and the text is ASCII (the
long s ``ſ`` matches ``s`` case ignored, yet lowers to itself), each match begins where the
lowered text holds one of them, and trying the pattern there alone finds what a search finds.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from typing import Any

from .text_lines import TextLines

__all__: list[str] = []

# gitleaks' generic rule, once its lazy run of name characters is cut (ctxpack.redaction):
# each alternative's match, lowered, begins with one of the words.
_GENERIC = "(?i)(?:access|auth|(?-i:[Aa]pi|API)|credential|creds|key|passw(?:or)?d|secret|token)("
_GENERIC_WORDS: tuple[str, ...] = (
    "access",
    "auth",
    "api",
    "credential",
    "creds",
    "key",
    "passw",
    "secret",
    "token",
)
# A group of words, case ignored, then another group: "(?i)(?:plaid)(", "(?i)(?:a|b)(".
_WORD_GROUP = re.compile(r"\(\?i\)\(\?:(\w+(?:\|\w+)*)\)\(", re.ASCII)
# What a pattern's top level is read through: an escape, a class, a group's bounds, a "|".
_TOKENS = re.compile(r"\\.|\[\^?\]?(?:\\.|[^\]\\])*\]|[()|]", re.DOTALL)


def start_words(pattern: str) -> tuple[str, ...]:
    """The words (lower case) one of which begins every match of ``pattern``, case ignored;
    none when the pattern does not say so in a form read here."""
    if pattern.startswith(_GENERIC):
        words = _GENERIC_WORDS
    elif (group := _WORD_GROUP.match(pattern)) is not None:
        words = tuple(w.lower() for w in group.group(1).split("|"))
    else:
        return ()
    # An alternative at the top level ("(?i)(?:a)(...)|b") may begin anywhere.
    depth = 0
    for token in _TOKENS.finditer(pattern):
        text = token.group()
        depth += (text == "(") - (text == ")")
        if text == "|" and depth == 0:
            return ()
    return words


Search = Callable[[int, int], Any]


def anchored(pattern: Any, words: tuple[str, ...], lines: TextLines) -> Search | None:
    """``pattern.search(text, at, limit)`` for the text of ``lines``, tried only where one of
    ``words`` begins; ``None`` where that could miss a match (no words, a text not ASCII)."""
    if not words or not lines.ascii:
        return None
    places = lines.places(words)
    text, match = lines.text, pattern.match

    def search(at: int, limit: int) -> Any:
        i = bisect.bisect_left(places, at)
        while i < len(places) and places[i] < limit:
            found = match(text, places[i], limit)
            if found is not None:
                return found
            i += 1
        return None

    return search


def every(search: Search, size: int) -> Iterator[Any]:
    """The matches ``search`` finds in a text of ``size`` characters, as ``finditer`` gives
    them (none is empty: each holds a word)."""
    at = 0
    while (found := search(at, size)) is not None:
        yield found
        at = found.end()
