"""A regex search through an artifact's lines that a hostile pattern cannot hang.

The model writes the pattern. Compiling nested counted repeats can take minutes, so they are
refused first; the search itself runs under a time budget, per line and in all.
"""

from __future__ import annotations

import re
import time
from typing import Any

import regex as regex_engine

from ..errors import ConfigError

__all__: list[str] = []

_MAX_EXPANSION = 500_000
_COUNTED = re.compile(r"\{(\d+)(?:,(\d*))?\}")


def _search(pattern: Any, line: str, deadline: float) -> bool:
    """Whether ``pattern`` matches in ``line``, searched until this thread's CPU time reaches
    ``deadline``: a line's wall-time timeout that ran out while the thread waited for the
    processor (a busy machine) is searched again with the CPU time left."""
    while (remaining := deadline - time.thread_time()) > 0:
        try:
            return pattern.search(line, timeout=remaining) is not None
        except TimeoutError:
            continue
    raise TimeoutError


def _expansion(pattern: str) -> int:
    """How many atoms ``pattern`` holds once its counted repeats are unrolled, roughly (group
    headers count as atoms, alternatives add up): the ``regex`` package unrolls nested counted
    repeats when it compiles, so ``(?:(?:a{1000}){1000}){1000}`` would take minutes to compile,
    before any time limit applies."""
    frames = [[0, 0]]  # per open group: [atoms so far, atoms of the last item]
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        counted = _COUNTED.match(pattern, i) if ch == "{" else None
        if counted:
            low, high = counted.group(1), counted.group(2)
            times = int(high or low) if len(high or low) < 7 else 10**6
            frame = frames[-1]
            frame[0] += frame[1] * (times - 1)
            frame[1] *= times
            i = counted.end()
            continue
        if ch == "(":
            frames.append([0, 0])
        elif ch == ")" and len(frames) > 1:
            size = frames.pop()[0]
            frames[-1][0] += size
            frames[-1][1] = size
        else:
            if ch == "\\":
                i += 1
            elif ch == "[":
                # A character class is one atom: skip to its closing bracket.
                close = pattern.find("]", i + 2)
                i = close if close != -1 else n
            frames[-1][0] += 1
            frames[-1][1] = 1
        i += 1
    return sum(frame[0] for frame in frames)


def grep(all_lines: list[str], regex: str, context: int, seconds: float) -> tuple[list[str], int]:
    """The lines matching ``regex`` with ``context`` lines around them, numbered as grep does
    (``12:`` a match, ``13-`` context, ``--`` between runs), and how many lines matched.

    The search runs with the ``regex`` package for ``seconds`` of CPU time at most, so a pattern
    that backtracks without end (``(a+)+$``) is abandoned, not waited for.

    Raises:
        ConfigError: the pattern is invalid, nests counted repeats too deep, or took too long.
    """
    if _expansion(regex) > _MAX_EXPANSION:
        raise ConfigError(
            f"regex={regex!r} nests counted repeats too deep (such as (?:(?:a{{1000}}){{1000}})"
            f"); unrolled it would hold over {_MAX_EXPANSION:,} atoms, too many to compile"
        )
    try:
        pattern = regex_engine.compile(regex)
    except (regex_engine.error, OverflowError, RecursionError) as exc:
        raise ConfigError(f"regex={regex!r} is not a valid regular expression: {exc}") from exc
    # The budget is this thread's CPU time, checked between lines too: wall time would fail a
    # plain search through a large artifact whenever the machine is busy elsewhere, and a
    # pattern that backtracks spends CPU time as fast as wall time. Each line's own timeout
    # (wall time, the most the regex package offers) is what is left of it.
    deadline = time.thread_time() + seconds
    hits: list[int] = []
    try:
        for i, line in enumerate(all_lines):
            if _search(pattern, line, deadline):
                hits.append(i)
    except TimeoutError as exc:
        raise ConfigError(
            f"regex={regex!r} took more than {seconds:.3g} s on this artifact and was "
            "stopped; simplify it (nested repetition such as (a+)+ backtracks without end) or "
            "read a line range with lines='START-END'"
        ) from exc
    total, hit_set = len(all_lines), set(hits)
    selected: list[str] = []
    shown_to = -1  # the last line shown: each line is shown once, whatever the context
    for i in hits:
        start, end = max(i - context, shown_to + 1), min(total - 1, i + context)
        if selected and start > shown_to + 1:
            selected.append("--")
        selected.extend(
            f"{k + 1}{':' if k in hit_set else '-'}{all_lines[k]}" for k in range(start, end + 1)
        )
        shown_to = max(shown_to, end)
    return selected, len(hits)
