"""Where a warning ctxpack gives should point: the user's line, not ctxpack's."""

from __future__ import annotations

import sys
from pathlib import Path

__all__: list[str] = []

_PACKAGE = str(Path(__file__).resolve().parents[1])


def caller_level() -> int:
    """The ``stacklevel`` of the first frame outside ctxpack, seen from the function that calls
    this one: a warning then names the user's line, however deep the call that raised it."""
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level
