"""Where a secret rule's matches can begin, read from its pattern, so that a text holding its
words everywhere (a dump of keys, a log of tokens) is searched only at them.

A search tries a pattern at every position, and one that opens with words to be matched case
ignored (gitleaks' generic rule: ``(?i)(?:access|auth|...|token)``), or after a word boundary
(``\\b((?:A3T[A-Z0-9]|AKIA|ASIA)...``), gives the regular expression engine no letter to skip
to: the text's every position costs a try of each word.
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
# What may stand before a pattern's first group and match nothing: a word boundary, a flag.
_LEADS = ("\\b", "(?i)")
_OPENERS = ("(?:", "(?i:", "(?-i:", "(")
# A literal: letters, digits, "_", "-" and escaped punctuation ("hvs\\."): a longer start word
# is found at fewer places ("s." at far fewer than "s").
_LITERAL = re.compile(r"(?:[A-Za-z0-9_-]|\\[^\w\s])+")
_ESCAPE = re.compile(r"\\(.)")
# What a pattern is read through: an escape, a class, a group's bounds, a "|".
_TOKENS = re.compile(r"\\.|\[\^?\]?(?:\\.|[^\]\\])*\]|[()|]", re.DOTALL)
_OPTIONAL = ("?", "*", "{")


def start_words(pattern: str) -> tuple[str, ...]:
    """The words (lower case) one of which begins every match of ``pattern``, case ignored;
    none when the pattern does not say so in a form read here: after a word boundary or a
    flag, groups that open one in another, the innermost a choice of alternatives each
    beginning with letters (``\\b((?:A3T[A-Z0-9]|AKIA|ASIA)...``, ``(?i)(?:plaid)...``)."""
    if pattern.startswith(_GENERIC):
        return _GENERIC_WORDS if _only_choice(pattern, [4]) else ()
    at = 0
    while lead := next((x for x in _LEADS if pattern.startswith(x, at)), None):
        at += len(lead)
    path: list[int] = []
    while opener := next((x for x in _OPENERS if pattern.startswith(x, at)), None):
        if opener == "(" and pattern.startswith("(?", at):
            return ()  # a look-around or a named group: not read here
        path.append(at)
        at += len(opener)
    groups = pattern_groups(pattern)
    bars, close = groups[path[-1]] if path else groups[-1]
    words = []
    for begin, end in zip([at, *(b + 1 for b in bars)], [*bars, close], strict=True):
        literal = _LITERAL.match(pattern, begin, end)
        word = _ESCAPE.sub(r"\1", literal.group()) if literal is not None else ""
        if literal is not None and pattern.startswith(_OPTIONAL, literal.end()):
            word = word[:-1]  # its last letter may be left out
        if not word:
            return ()
        words.append(word.lower())
    return tuple(words) if _only_choice(pattern, path) else ()


def pattern_groups(pattern: str) -> dict[int, tuple[list[int], int]]:
    """For each group (by where it opens; -1 for the whole pattern), the places of the "|"
    directly in it and where it closes."""
    groups: dict[int, tuple[list[int], int]] = {-1: ([], len(pattern))}
    stack = [-1]
    for token in _TOKENS.finditer(pattern):
        text = token.group()
        if text == "(":
            stack.append(token.start())
            groups[token.start()] = ([], -1)
        elif text == ")" and len(stack) > 1:
            opened = stack.pop()
            groups[opened] = (groups[opened][0], token.start())
        elif text == "|":
            groups[stack[-1]][0].append(token.start())
    return groups


def _only_choice(pattern: str, path: list[int]) -> bool:
    """Whether the groups opening at ``path`` (outermost first) must all match where the
    pattern does: none may be left out, and no alternative beside them (a "|" in an outer
    one, or at the top level) may match instead."""
    groups = pattern_groups(pattern)
    if (path and groups[-1][0]) or any(groups[g][0] for g in path[:-1]):
        return False
    return not any(
        groups[g][1] < 0 or pattern.startswith(_OPTIONAL, groups[g][1] + 1) for g in path
    )


# gitleaks' "semi-generic" rules (a key name, an operator, a value) start with a lazy run of
# up to 50 name characters, some with two ("[\w.-]{0,50}?(?i:[\w.-]{0,50}?okta..."). Tried at
# every position of a text it is most of the rules' cost (with two, 2,500 widths at each
# position of a run of name characters such as a lockfile's base64 hashes), and it decides
# only where the match starts: the pattern runs without it, from the key name, and the match
# is then extended back over the same characters (see match_start).
_NAME_RUN = "[\\w.-]{0,50}?"
_SEMI_GENERIC = "(?i)" + _NAME_RUN
_SEMI_GENERIC_NESTED = _NAME_RUN + "(?i:" + _NAME_RUN
NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"


def without_name_run(pattern: str) -> tuple[str, int]:
    """``pattern`` without a semi-generic rule's leading run of name characters, and how far
    back of where it then matches a match may begin (0 for a pattern without one)."""
    if pattern.startswith(_SEMI_GENERIC):
        return "(?i)" + pattern[len(_SEMI_GENERIC) :], 50
    if pattern.startswith(_SEMI_GENERIC_NESTED):
        return "(?i:" + pattern[len(_SEMI_GENERIC_NESTED) :], 100
    return pattern, 0


def match_start(text: str, start: int, back: int) -> int:
    """Where a semi-generic match that begins at ``start`` without its prefix begins with it."""
    before = text[max(0, start - back) : start]
    # The run of name characters that ends it, stripped in C, not a step of Python a character.
    return start - len(before) + len(before.rstrip(NAME_CHARS))


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
