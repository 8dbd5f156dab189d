"""Text read through the escapes that hide a secret's shape, with a map back to where each
character was written: JSON's ``\\/`` (``"postgres:\\/\\/app:pw@db"``), JSON's ``\\u``
escapes of printable ASCII (Go's encoder writes every ``&`` of a URL's query as ``\\u0026``),
JSON escaped twice (a tool's JSON holding a command's JSON holding JSON), a URL
percent-encoded inside other text (a redirect's or a callback's URL as a query's value),
terminal codes (``jq -C``, ``grep --color`` marking a match inside a token) and the NUL after
each character of UTF-16 text read as UTF-8."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

from .jsontext import slashes_unescaped

__all__ = ["TERMINAL_CODE", "escaped_views", "through_views"]


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
    return views


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
