"""File views (``cat``, ``nl``, ``sed -n``, ``head``, an editor's view) and diffs: kept whole up
to a size; above it, windows around the lines the goal names, line numbers preserved."""

from __future__ import annotations

import re
from collections import Counter
from itertools import pairwise

from .._internal.arguments import tokens
from ._base import Extract, ToolOutput, assemble, goal_terms

__all__ = ["DiffFilter", "FileViewFilter"]

_VIEW_PROGRAMS = frozenset(
    ["cat", "nl", "head", "tail", "sed", "less", "more", "bat", "view", "type"]
)
_VIEW_TOOLS = re.compile(r"read|view|open|cat|str_replace_editor|file", re.IGNORECASE)
_NUMBERED = re.compile(r"^\s*(\d+)(?:[\t:|]|\s{2,})")
_DEFINITION = re.compile(
    r"^\s*(async\s+def|def|class|function|func|fn|pub(\(crate\))?\s+(fn|struct|enum|trait)|"
    r"impl|struct|enum|interface|type|export\s+(default\s+)?(function|class|const|interface)|"
    r"(public|private|protected)\s+[\w<>\[\]]+\s+\w+\s*\()\b"
)
_STRIP_NUMBER = re.compile(r"^\s*\d+[\t:|]\s?")
_MAX_DEFINITIONS = 12
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")

_DIFF_COMMAND = re.compile(r"\b(git (diff|show|log -p|format-patch)|diff\s)")
_HUNK_MARKS = ("@@ ", "diff --git ", "diff -", "--- ", "+++ ", "Index: ")
_DIFF_HEAD = re.compile(
    r"^(diff --git |diff -|Index: |--- |\+\+\+ |@@ |index [0-9a-f]+|new file|"
    r"deleted file|similarity|rename (from|to)|commit [0-9a-f]{7,})"
)


def _numbered_lines(body: list[str]) -> bool:
    """Whether most of ``body``'s lines open with a line number, counting up one by one as a
    file view's do (``cat -n``, ``nl``, an editor's view). A log's ``12:00:03`` and a grep's
    ``1500:`` open with a number too, but not one that counts lines: read as a file view, its
    head, tail and the goal's windows were kept, and the error in its middle hidden."""
    numbers = [int(m[1]) for line in body if (m := _NUMBERED.match(line))]
    if len(numbers) < 0.8 * len(body):
        return False
    steps = sum(b == a + 1 for a, b in pairwise(numbers))
    return steps >= 0.8 * (len(numbers) - 1)


def _locating_terms(output: ToolOutput) -> frozenset[str]:
    """The goal's words, minus those of the command (a file's path names every line of it)."""
    return output.goal_words - goal_terms(output.command or "")


class FileViewFilter:
    """A file view: whole up to ``max_lines``; above, the head, the definitions (``def``,
    ``class``, ``function``...) and windows of ``radius`` lines around each line that shares a
    rare word with the goal, at most ``max_lines`` lines in all. Gaps say which lines they hide.

    Args:
        max_lines: Views up to this many lines are kept whole; longer ones are cut to it.
        radius: Lines kept on each side of a line the goal names.

    Example:
        >>> from ctxpack.filters import ToolOutput
        >>> src = [f"    x{i} = {i}" for i in range(300)]
        >>> src[150] = "    expires_at = None  # the bug"
        >>> goal = "why is expires_at None?"
        >>> view = ToolOutput("\\n".join(src), command="cat auth.py", goal=goal)
        >>> print(FileViewFilter(max_lines=20, radius=1).extract(view).text)
            x0 = 0
            x1 = 1
            x2 = 2
        [… 146 lines hidden: 4-149]
            x149 = 149
            expires_at = None  # the bug
            x151 = 151
        [… 145 lines hidden: 153-297]
            x297 = 297
            x298 = 298
            x299 = 299
    """

    kind = "file_view"

    def __init__(self, *, max_lines: int = 400, radius: int = 6) -> None:
        self.max_lines = tokens(max_lines, "max_lines", minimum=0, unit="lines")
        self.radius = tokens(radius, "radius", minimum=0, unit="lines")

    def __repr__(self) -> str:
        return f"FileViewFilter(max_lines={self.max_lines}, radius={self.radius})"

    def detect(self, output: ToolOutput, /) -> float:
        if output.program in _VIEW_PROGRAMS:
            return 1.0
        if output.tool and output.tool != "bash" and _VIEW_TOOLS.search(output.tool):
            return 0.9
        body = [output.lines[i] for i in output.body if output.lines[i].strip()]
        return 0.5 if len(body) >= 20 and _numbered_lines(body) else 0.0

    def extract(self, output: ToolOutput, /) -> Extract | None:
        lines = output.lines
        body = output.body
        if len(body) <= self.max_lines:
            return None
        terms = _locating_terms(output)
        # Only the lines naming a term count; a line under three characters holds no word.
        words_per_line: dict[int, set[str]] = {}
        for i in body if terms else ():
            if len(lines[i]) >= 3:
                words = {w.lower() for w in _WORD.findall(_STRIP_NUMBER.sub("", lines[i]))} & terms
                if words:
                    words_per_line[i] = words
        frequency: Counter[str] = Counter(w for ws in words_per_line.values() for w in ws)
        common = {w for w, n in frequency.items() if n > max(3, len(body) // 10)}
        score = {i: len(ws - common) for i, ws in words_per_line.items() if ws - common}
        keep: set[int] = set(output.envelope)
        keep.update(body[:3])
        keep.update(body[-3:])
        budget = self.max_lines
        # Windows around the lines that name the goal best, best first, while they fit.
        for i in sorted(score, key=lambda i: (-score[i], i)):
            window = {j for j in range(i - self.radius, i + self.radius + 1) if 0 <= j < len(lines)}
            if len(keep | window) > budget:
                continue
            keep |= window
        # Then the top-level definitions, which tell what the hidden lines belong to.
        definitions = 0
        for i in body:
            if len(keep) >= budget or definitions >= _MAX_DEFINITIONS:
                break
            if len(lines[i]) < 2:  # "fn" is the shortest definition
                continue
            code = _STRIP_NUMBER.sub("", lines[i])
            if not code[:1].isspace() and _DEFINITION.match(code):
                keep.add(i)
                definitions += 1
        if len(keep) >= len(lines) - 1:
            return None
        summary = f"{len(score)} lines naming the goal, {len(keep)} of {len(lines)} lines kept"
        return Extract(assemble(output, keep), summary)


class DiffFilter:
    """A diff: whole up to ``max_lines``; above, every file and hunk header and every changed
    line, with ``context`` unchanged lines around changes; a file with more than ``max_lines``
    changed lines shows its first ones and counts the rest. Past ``max_total_lines`` kept in
    all (a commit of hundreds of files, ``git log -p``), the files whose header the goal names
    come first, then the others in order, and the files past the budget keep their first
    header line alone.

    Example:
        >>> from ctxpack.filters import ToolOutput
        >>> diff = ["diff --git a/m.py b/m.py", "--- a/m.py", "+++ b/m.py", "@@ -1,60 +1,60 @@"]
        >>> diff += [f" same {i}" for i in range(30)] + ["-old = 1", "+new = 2"]
        >>> diff += [f" same {i}" for i in range(30, 58)]
        >>> print(DiffFilter(max_lines=10, context=1).extract(ToolOutput("\\n".join(diff))).text)
        diff --git a/m.py b/m.py
        --- a/m.py
        +++ b/m.py
        @@ -1,60 +1,60 @@
        [… 29 lines hidden: 5-33]
         same 29
        -old = 1
        +new = 2
         same 30
        [… 27 lines hidden: 38-64]
    """

    kind = "diff"

    def __init__(
        self, *, max_lines: int = 80, context: int = 2, max_total_lines: int = 400
    ) -> None:
        self.max_lines = tokens(max_lines, "max_lines", minimum=0, unit="lines")
        self.context = tokens(context, "context", minimum=0, unit="lines")
        self.max_total_lines = tokens(max_total_lines, "max_total_lines", unit="lines")

    def __repr__(self) -> str:
        return (
            f"DiffFilter(max_lines={self.max_lines}, context={self.context}, "
            f"max_total_lines={self.max_total_lines})"
        )

    def detect(self, output: ToolOutput, /) -> float:
        if output.command and _DIFF_COMMAND.search(output.command):
            # Not every output of git diff or show is a diff: --stat, --name-only, a commit's
            # header and message have no hunk, and this filter would hide every line of them.
            lines = output.lines
            return 1.0 if any(lines[i].startswith(_HUNK_MARKS) for i in output.body) else 0.0
        head = output.body[:400]
        hunks = any(output.lines[i].startswith(("@@ ", "diff --git")) for i in head)
        return 0.8 if hunks and any(output.lines[i].startswith("+++ ") for i in head) else 0.0

    def extract(self, output: ToolOutput, /) -> Extract | None:
        lines = output.lines
        if len(output.body) <= self.max_lines:
            return None
        # Each file (or commit) of the diff: its first line and the lines it keeps.
        files: list[tuple[int, set[int]]] = []
        kept: set[int] = set()
        changed_in_file = 0
        hidden_changes = 0
        for i in output.body:
            line = lines[i]
            if _DIFF_HEAD.match(line):
                if not files or line.startswith(("diff ", "Index: ", "commit ")):
                    files.append((i, set()))
                    kept = files[-1][1]
                    changed_in_file = 0
                kept.add(i)
                continue
            if line.startswith(("+", "-")):
                if not files:  # changes before any header: a file of their own
                    files.append((i, set()))
                    kept = files[-1][1]
                changed_in_file += 1
                if changed_in_file > self.max_lines:
                    hidden_changes += 1
                    continue
                lo, hi = max(0, i - self.context), min(len(lines), i + self.context + 1)
                kept.update(range(lo, hi))
        keep: set[int] = set(output.envelope)
        left = self.max_total_lines
        # The goal's files first (the call's reason names what it diffs for), then in order.
        order = sorted(files, key=lambda f: not output.mentions_goal(lines[f[0]]))
        skipped = 0
        for first, lines_kept in order:
            if len(lines_kept) <= left or left == self.max_total_lines:
                keep |= lines_kept
                left -= min(left, len(lines_kept))
            else:
                keep.add(first)
                skipped += 1
        if len(keep) >= len(lines) - 1:
            return None
        summary = f"headers and changed lines kept, {len(keep)} of {len(lines)} lines"
        if hidden_changes:
            summary += f"; {hidden_changes} changed lines past {self.max_lines} per file hidden"
        if skipped:
            summary += (
                f"; {skipped} files past {self.max_total_lines} lines in all shown by their "
                "first line"
            )
        return Extract(assemble(output, keep), summary)
