"""Non-overlapping spans of a text, kept sorted: the places redaction has taken, the copies of
a memory file's text ``context_usage`` has given a file."""

from __future__ import annotations

import bisect

__all__ = ["Spans"]


class Spans:
    """Non-overlapping spans of a text, sorted, taking a new one only where it is free: a
    tool output may hold thousands of findings (a token on every line of a log), so each test
    is a binary search, not a pass over those kept."""

    def __init__(self) -> None:
        # Sorted by start; the spans never overlap, so their ends are sorted too.
        self.starts: list[int] = []
        self.ends: list[int] = []

    def take(self, start: int, end: int) -> bool:
        """Keep ``start..end`` if it overlaps no span kept; whether it was kept."""
        i = bisect.bisect_right(self.starts, start)
        if (i and self.ends[i - 1] > start) or (i < len(self.starts) and self.starts[i] < end):
            return False
        self.starts.insert(i, start)
        self.ends.insert(i, end)
        return True
