"""The fallback for any other output: repeated lines folded, the head and the tail, and in
between the lines with errors or failure states, then warnings, the odd lines of a listing of
records, the goal's words, numbers or paths."""

from __future__ import annotations

import re
from collections import Counter

from .._internal.arguments import flag, tokens
from ._base import Extract, ToolOutput, add_gap, assemble

__all__ = ["GenericFilter"]

_SIGNAL = re.compile(
    r"\b\w*(error|exception|fail|fatal|denied|refused|timeout|traceback|panic|backoff|"
    r"crash|abort|killed|evicted|unhealthy|segfault)\w*\b|"
    r"\bnot found\b|\bmissing\b|\binvalid\b",
    re.IGNORECASE,
)
# Warnings are looked for after errors: a log warning every tenth line (a slow query, a
# deprecation) filled the budget before the one error in its middle.
_WARNING = re.compile(r"\b\w*warning\w*\b", re.IGNORECASE)
_PATH_OR_NUMBER = re.compile(r"[\w.-]*/[\w./-]+|\b\d+(\.\d+)?\b")
# What varies between the lines one template prints (counts, ids, hashes, addresses): a
# line with these masked is its template.
_VARIABLE = re.compile(r"[0-9a-f]*\d[0-9a-f]*")
# An output is a listing of records when most of its lines repeat a template at least this
# many times; a line whose template is its own is then the odd one out (a pod that does not
# start among ninety that run, a log line among thousands of the same three).
_REPEATED = 3


class GenericFilter:
    """Any output: runs of identical lines folded to the first (with a count), the first
    ``head`` and last ``tail`` lines, and, up to ``max_lines``, the lines with errors or failure
    states, then those with warnings, then, when most lines repeat a template (numbers and hex
    ids aside), the lines whose template is their own, then those sharing a word with the goal,
    then those with a path or a number; a line the same as one already kept is not kept again.
    ``odd_lines=False`` leaves the odd lines to the other passes.

    Example:
        >>> from ctxpack.filters import ToolOutput
        >>> out = ["starting"] + ["retrying connection"] * 57 + ["ERROR: gave up"]
        >>> print(GenericFilter(head=2, tail=1).extract(ToolOutput("\\n".join(out))).text)
        starting
        retrying connection
        [… repeated 56 more times: lines 3-58]
        ERROR: gave up
    """

    kind = "generic"

    def __init__(
        self, *, head: int = 15, tail: int = 15, max_lines: int = 80, odd_lines: bool = True
    ) -> None:
        self.head = tokens(head, "head", minimum=0, unit="lines")
        self.tail = tokens(tail, "tail", minimum=0, unit="lines")
        self.max_lines = tokens(max_lines, "max_lines", minimum=0, unit="lines")
        self.odd_lines = flag(odd_lines, "odd_lines")

    def __repr__(self) -> str:
        return (
            f"GenericFilter(head={self.head}, tail={self.tail}, max_lines={self.max_lines}, "
            f"odd_lines={self.odd_lines})"
        )

    def detect(self, output: ToolOutput, /) -> float:
        return 0.01

    def extract(self, output: ToolOutput, /) -> Extract | None:
        lines = output.lines
        body = output.body
        # Runs of identical lines: the first stands for the run.
        first_of_run: list[int] = []
        runs: dict[int, int] = {}  # first line of a run of copies -> its last line
        run_start = None
        for n, i in enumerate(body):
            if n and lines[i] == lines[body[n - 1]] and i == body[n - 1] + 1:
                continue
            if run_start is not None and body[n - 1] > run_start:
                runs[run_start] = body[n - 1]
            run_start = i
            first_of_run.append(i)
        if run_start is not None and body and body[-1] > run_start:
            runs[run_start] = body[-1]
        keep: set[int] = set(output.envelope)
        keep.update(first_of_run[: self.head])
        keep.update(first_of_run[-self.tail :] if self.tail else [])
        middle = first_of_run[self.head : len(first_of_run) - self.tail]
        odd: set[str] | None = None

        def is_odd(line: str) -> bool:
            # Found when the pass first asks: an output whose errors fill the budget needs none.
            nonlocal odd
            if odd is None:
                odd = _odd_lines(lines, first_of_run) if self.odd_lines else set()
            return line in odd

        # A line the same as one kept says nothing more: a listing of records repeats its
        # fields' lines, and those would fill the budget before the records further down.
        shown = {lines[i].strip() for i in keep}
        for pattern_hit in (
            lambda line: bool(_SIGNAL.search(line)),
            lambda line: bool(_WARNING.search(line)),
            is_odd,
            output.mentions_goal,
            lambda line: bool(_PATH_OR_NUMBER.search(line)),
        ):
            for i in middle:
                if len(keep) >= self.max_lines:
                    break
                line = lines[i]
                if i not in keep and line.strip() not in shown and pattern_hit(line):
                    keep.add(i)
                    shown.add(line.strip())
        if len(keep) >= len(lines) - 1:
            return None
        text = _fold_notes(output, keep, runs) if runs else assemble(output, keep)
        return Extract(text, f"{len(keep)} of {len(lines)} lines kept")


def _odd_lines(lines: list[str], indices: list[int]) -> set[str]:
    """The lines whose template no other line has, when most lines repeat a template: the
    odd records of a listing. Empty for an output that is no such listing."""
    body = [lines[i] for i in indices]
    # One substitution over the whole body: per line, the calls cost more than the matching.
    templates = [t.strip() for t in _VARIABLE.sub("#", "\n".join(body)).split("\n")]
    counts = Counter(templates)
    repeated = sum(n for n in counts.values() if n >= _REPEATED)
    if repeated * 2 < len(templates):
        return set()
    return {line for line, t in zip(body, templates, strict=True) if counts[t] == 1 and t}


def _fold_notes(output: ToolOutput, keep: set[int], runs: dict[int, int]) -> str:
    """Like :func:`assemble`, but a kept line that starts a run of copies is followed by the
    number of copies instead of a gap note."""
    lines = output.lines
    out: list[str] = []
    previous = -1
    for i in sorted(keep):
        gap_start = previous + 1
        end = runs.get(previous)
        if end is not None and end >= gap_start:
            copies = end - previous
            out.append(
                f"[… repeated {copies} more time{'s' if copies > 1 else ''}: lines "
                f"{previous + 2}-{end + 1}]"
            )
            gap_start = end + 1
        add_gap(out, lines, gap_start, i)
        out.append(lines[i])
        previous = i
    end = runs.get(previous)
    if end is not None:
        copies = end - previous
        out.append(f"[… repeated {copies} more times: lines {previous + 2}-{end + 1}]")
        previous = end
    add_gap(out, lines, previous + 1, len(lines))
    return "\n".join(out)
