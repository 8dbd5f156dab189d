"""Which file region a shell command shows: ``cat f``, ``nl -ba f | sed -n '10,40p'``...

A session uses it to tell when a later view of a file supersedes an earlier one.
"""

from __future__ import annotations

import re
import shlex
from typing import NamedTuple

__all__ = ["FileRegion", "view_region"]

_RANGE = re.compile(r"^(\d+)(?:,(\d+))?p$")
_WHOLE = (1, 10**9)


class FileRegion(NamedTuple):
    """Lines ``start..end`` (1-based, inclusive) of ``path``; a whole file ends at 10**9."""

    path: str
    start: int
    end: int

    def covers(self, other: FileRegion) -> bool:
        """Whether this region shows everything ``other`` showed, of the same file."""
        return self.path == other.path and self.start <= other.start and self.end >= other.end


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment)
    except ValueError:
        return segment.split()


def _range_of(words: list[str]) -> tuple[int, int] | None:
    """The range a ``sed -n 'A,Bp'``, ``head -n N`` or ``head -N`` shows, if that is all."""
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    if program == "sed" and "-n" in words:
        for word in words[1:]:
            match = _RANGE.match(word)
            if match:
                start = int(match[1])
                return start, int(match[2]) if match[2] else start
        return None
    if program == "head":
        for i, word in enumerate(words[1:], start=1):
            if word == "-n" and i + 1 < len(words) and words[i + 1].isdigit():
                return 1, int(words[i + 1])
            if re.fullmatch(r"-n?\d+", word):
                return 1, int(word.lstrip("-n"))
        return 1, 10
    return None


def view_region(command: str) -> FileRegion | None:
    """The file region a command shows, or ``None`` when it is not a plain view of one file.

    Example:
        >>> view_region("cd /repo && nl -ba src/a.py | sed -n '10,40p'")
        FileRegion(path='src/a.py', start=10, end=40)
        >>> view_region("cat src/a.py").end
        1000000000
        >>> view_region("grep -n foo src/a.py") is None
        True
    """
    segment = re.split(r"&&|;|\|\|", command)[-1]
    stages = [_words(part) for part in segment.split("|")]
    if not stages or not stages[0]:
        return None
    reader = stages[0]
    program = reader[0].rsplit("/", 1)[-1]
    args = [w for w in reader[1:] if not w.startswith("-")]
    if program in ("cat", "nl"):
        if len(args) != 1 or any(c in args[0] for c in "*?[>"):
            return None
        region: tuple[int, int] | None = _WHOLE
    elif program in ("sed", "head"):
        operands = [w for w in args if not _RANGE.match(w) and not w.isdigit()]
        if len(operands) != 1:
            return None
        region = _range_of(reader)
        args = operands
    else:
        return None
    for stage in stages[1:]:
        narrowed = _range_of(stage)
        if narrowed is None or region is None:
            return None
        # A range of a range: offsets into what the reader showed.
        start = region[0] + narrowed[0] - 1
        region = (start, min(region[1], region[0] + narrowed[1] - 1))
    if region is None:
        return None
    return FileRegion(args[0], region[0], region[1])
