"""Text read through the escapes that hide a secret's shape, with a map back to where each
character was written: JSON's ``\\/`` (``"postgres:\\/\\/app:pw@db"``), JSON's ``\\u``
escapes of printable ASCII (Go's encoder writes every ``&`` of a URL's query as ``\\u0026``),
JSON escaped twice (a tool's JSON holding a command's JSON holding JSON), a URL
percent-encoded inside other text (a redirect's or a callback's URL as a query's value),
terminal codes (``jq -C``, ``grep --color`` marking a match inside a token), the NUL after
each character of UTF-16 text read as UTF-8, and what a model reads where a reader sees nothing
(a zero-width space, a soft hyphen) or letters in another form (full-width ``ｇｈｐ＿``,
mathematical ``𝐠𝐡𝐩``): the text without the one, the other read as the ASCII it stands for."""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Iterable
from functools import cache
from typing import Protocol, TypeVar

from .jsontext import slashes_unescaped

__all__ = ["INVISIBLE", "TERMINAL_CODE", "escaped_views", "through_views"]


class Places(Protocol):
    """Where each character of a view is in the text it was read from, by its position."""

    def __getitem__(self, position: int, /) -> int: ...


# A view of a text: the text read, and where each of its characters starts and ends in the text.
View = tuple[str, Places, Places]
_T = TypeVar("_T")

TERMINAL_CODE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[@-Z\\-_]")
"""A terminal's control sequence: a colour, a cursor move, a link (OSC 8). The filters remove
them from the lines they keep, and redaction reads a text without them: inside a secret they
hide its shape, and a filter would then hand it on whole."""

# Characters a reader does not see: every format character (Unicode category Cf: zero-width,
# bidirectional, soft hyphen, tags), the variation selectors, the combining grapheme joiner and
# the Hangul fillers. A model reads the text around them as if they were not there: one inside
# a token or a secret's name hid it from the rules (and "ignore" from the injection phrases).
INVISIBLE = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160"
    "\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]+"
)
# Letters and digits in a form NFKC reads as ASCII ones, which a model reads as those: the
# full-width forms (CJK input methods) and the mathematical alphanumerics (bold, italic,
# monospace...). Their punctuation is read too, but only a text holding such a letter or digit
# is read so: CJK prose writes its commas, colons and brackets full-width, and holds no secret
# in them alone.
_LOOKALIKE_FORMS = ((0xFF01, 0xFF5E), (0x1D400, 0x1D7FF))
_LOOKALIKE = "\uff10-\uff19\uff21-\uff3a\uff41-\uff5a\U0001d400-\U0001d7ff"
_AS_READ = re.compile(INVISIBLE.pattern[:-2] + _LOOKALIKE + "]")


@cache
def _ascii_forms() -> dict[int, str]:
    """For each character of :data:`_LOOKALIKE_FORMS` that NFKC reads as one ASCII character,
    that character (a table for ``str.translate``: one character for one, so that a place in
    the text read is the same place in the text)."""
    table = {}
    for first, last in _LOOKALIKE_FORMS:
        for code in range(first, last + 1):
            read = unicodedata.normalize("NFKC", chr(code))
            if len(read) == 1 and read.isascii():
                table[code] = read
    return table


# A NUL between characters: UTF-16 text (a file PowerShell wrote) read as UTF-8.
_NULS = re.compile("\x00+")
# A quote escaped twice (JSON inside a JSON string inside JSON), read once: JSON escaped once
# is what the rules read.
_TWICE = '\\\\\\"'
_ONCE = re.compile(r'\\(["\\/])')

# A URL percent-encoded inside other text: its "://" written so.
_ENCODED_URL = re.compile(r"%3[Aa]%2[Ff]%2[Ff]")


def escaped_views(text: str) -> list[View]:
    """The views of ``text`` with its escapes read, for each kind of escape it holds."""
    views: list[View] = []
    if "\\/" in text:
        views.append(slashes_unescaped(text))
    if _JSON_ASCII.search(text):
        views.append(_read(text, _JSON_ASCII))
    if _TWICE in text:
        views.append(_read(text, _ONCE, _escaped))
    if _ENCODED_URL.search(text):
        views.append(percent_decoded(text))
    if "\x1b" in text:
        views.append(_without(text, TERMINAL_CODE))
    if "\x00" in text:
        views.append(_without(text, _NULS))
    # An ASCII text holds none (str knows it is ASCII: no search of a long output).
    if not text.isascii() and _AS_READ.search(text):
        views.append(as_read(text))
    return views


def as_read(text: str) -> View:
    """``text`` as a model reads it: without the characters nobody sees, and with letters,
    digits and punctuation in full-width or mathematical form read as ASCII.

    Example:
        >>> view, starts, ends = as_read("ｇｈｐ\u200b_x")
        >>> view, (starts[3], ends[3])
        ('ghp_x', (4, 5))
    """
    view, starts, ends = _without(text, INVISIBLE)
    return view.translate(_ascii_forms()), starts, ends


def through_views(
    views: Iterable[View], find: Callable[[str], Iterable[tuple[int, int, _T]]]
) -> list[tuple[int, int, _T]]:
    """What ``find`` finds (spans, each with what it is) in ``views`` (a text's
    :func:`escaped_views`), as spans of the text."""
    return [
        (starts[a], ends[b - 1], what) for view, starts, ends in views for a, b, what in find(view)
    ]


# A printable ASCII character JSON-escaped (a control character's escape, as in a terminal's
# colours, hides no secret: it is left as written).
_JSON_ASCII = re.compile(r"\\u00(?:2[0-9A-Fa-f]|[3-7][0-9A-Fa-f])")


# An encoded ASCII character: a byte over 0x7f is part of a UTF-8 sequence, left as written so
# that each character read maps to one place.
_ESCAPE = re.compile(r"%[0-7][0-9A-Fa-f]")


def percent_decoded(text: str) -> View:
    """``text`` with each ``%XX`` escape of an ASCII character read as that character, and for
    each character of it where it starts and ends in ``text``, so that a span found in the one
    is a span of the other. One level of escapes is read: ``%2521`` reads as ``%21``.

    Example:
        >>> view, starts, ends = percent_decoded("a%3A%2F%2Fb")
        >>> view, view[1:4], (starts[1], ends[3])
        ('a://b', '://', (1, 10))
    """
    return _read(text, _ESCAPE)


def _hex(escape: re.Match[str]) -> str:
    return chr(int(escape.group()[-2:], 16))


def _escaped(escape: re.Match[str]) -> str:
    return escape.group(1)


def _read(text: str, escape: re.Pattern[str], read: Callable[[re.Match[str]], str] = _hex) -> View:
    """``text`` with each match of ``escape`` read as one character (by default the one its
    last two hex digits name), and where each character of it is in ``text``."""
    pieces: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    at = 0
    for m in escape.finditer(text):
        pieces.append(text[at : m.start()])
        starts.extend(range(at, m.start()))
        ends.extend(range(at + 1, m.start() + 1))
        pieces.append(read(m))
        starts.append(m.start())
        ends.append(m.end())
        at = m.end()
    pieces.append(text[at:])
    starts.extend(range(at, len(text)))
    ends.extend(range(at + 1, len(text) + 1))
    return "".join(pieces), starts, ends


def _without(text: str, removed: re.Pattern[str]) -> View:
    """``text`` without the matches of ``removed``, and where each character of it is in
    ``text``: a span found across a removed match covers it."""
    at, gone = [0], [0]  # where in the view each match was removed, and what was, all told
    for m in removed.finditer(text):
        at.append(m.start() - gone[-1])
        gone.append(gone[-1] + m.end() - m.start())
    return removed.sub("", text), _Kept(at, gone, 0), _Kept(at, gone, 1)


class _Kept:
    """The places of a view's characters in a text some stretches were removed from: its
    position, plus what was removed before it (a terminal's codes come every few characters:
    listed, their places would cost a list as long as the text)."""

    def __init__(self, at: list[int], gone: list[int], shift: int) -> None:
        self._at, self._gone, self._shift = at, gone, shift

    def __getitem__(self, position: int, /) -> int:
        return position + self._gone[bisect_right(self._at, position) - 1] + self._shift
