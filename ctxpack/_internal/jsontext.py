"""JSON that a model or a tool wrote (a tool call's arguments, a judge's or a selector's answer, a
tool output that looks like JSON), read with one rule for what cannot be read.

``json.loads`` fails on such text in three ways: ``JSONDecodeError`` for malformed text, a bare
``ValueError`` for an integer longer than Python's digit limit, ``RecursionError`` for arrays or
objects nested past the recursion limit. A model or a tool may write any of them; a caller that
caught only the first let the others escape from deep inside ``to_anthropic()`` or a session's
``render()``.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["read_json", "slashes_unescaped"]


def read_json(text: str) -> Any:
    """The value the JSON ``text`` holds.

    Raises:
        ValueError: ``text`` is not JSON, or not JSON Python can read (an integer of thousands
            of digits, nesting thousands deep); ``json.JSONDecodeError`` for malformed text.

    Example:
        >>> read_json('{"path": "a.py"}')
        {'path': 'a.py'}
        >>> read_json("[" * 100_000 + "]" * 100_000)
        Traceback (most recent call last):
        ...
        ValueError: the JSON is nested too deep to read
    """
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise ValueError("the JSON is nested too deep to read") from exc


def slashes_unescaped(text: str) -> tuple[str, list[int], list[int]]:
    """``text`` with JSON's optional ``\\/`` escapes read as ``/`` (PHP's ``json_encode`` writes
    every slash so: ``"postgres:\\/\\/app:pw@db"``), and for each character of it where it starts
    and ends in ``text``, so that a span found in the one is a span of the other.

    Example:
        >>> view, starts, ends = slashes_unescaped("a:\\\\/\\\\/b")
        >>> view, view[2:4], (starts[2], ends[3])
        ('a://b', '//', (2, 6))
    """
    pieces = text.split("\\/")
    starts: list[int] = []
    ends: list[int] = []
    at = 0
    for k, piece in enumerate(pieces):
        starts.extend(range(at, at + len(piece)))
        ends.extend(range(at + 1, at + len(piece) + 1))
        at += len(piece)
        if k < len(pieces) - 1:  # the "/" read from the two characters "\/"
            starts.append(at)
            ends.append(at + 2)
            at += 2
    return "/".join(pieces), starts, ends
