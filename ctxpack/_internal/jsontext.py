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

__all__ = ["read_json"]


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
