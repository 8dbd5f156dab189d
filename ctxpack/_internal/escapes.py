"""Text read through the escapes that hide a secret's shape, with a map back to where each
character was written: JSON's ``\\/`` (``"postgres:\\/\\/app:pw@db"``), JSON's ``\\u``
escapes of printable ASCII (Go's encoder writes every ``&`` of a URL's query as ``\\u0026``)
and a URL percent-encoded inside other text (a redirect's or a callback's URL as a query's
value)."""

from __future__ import annotations

import re

from .jsontext import slashes_unescaped

__all__: list[str] = []

# A view of a text: the text read, and where each of its characters starts and ends in the text.
View = tuple[str, list[int], list[int]]

# A URL percent-encoded inside other text: its "://" written so.
_ENCODED_URL = re.compile(r"%3[Aa]%2[Ff]%2[Ff]")


def escaped_views(text: str) -> list[View]:
    """The views of ``text`` with its escapes read, for each kind of escape it holds."""
    views = []
    if "\\/" in text:
        views.append(slashes_unescaped(text))
    if _JSON_ASCII.search(text):
        views.append(_read(text, _JSON_ASCII))
    if _ENCODED_URL.search(text):
        views.append(percent_decoded(text))
    return views


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


def _read(text: str, escape: re.Pattern[str]) -> View:
    """``text`` with each match of ``escape`` read as the character its last two hex digits
    name, and where each character of it is in ``text``."""
    pieces: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    at = 0
    for m in escape.finditer(text):
        pieces.append(text[at : m.start()])
        starts.extend(range(at, m.start()))
        ends.extend(range(at + 1, m.start() + 1))
        pieces.append(chr(int(m.group()[-2:], 16)))
        starts.append(m.start())
        ends.append(m.end())
        at = m.end()
    pieces.append(text[at:])
    starts.extend(range(at, len(text)))
    ends.extend(range(at + 1, len(text) + 1))
    return "".join(pieces), starts, ends
