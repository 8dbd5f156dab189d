"""Compilers, linters and type checkers (mypy, ruff, flake8, pylint, tsc, eslint, rustc, gcc,
clang, go vet): each unique diagnostic once, grouped by file, and the tool's own totals."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import PurePosixPath

from ._base import Extract, ToolOutput, any_of

__all__ = ["DiagnosticFilter"]

_PROGRAMS = frozenset(
    [
        "mypy",
        "ruff",
        "flake8",
        "pylint",
        "pyflakes",
        "pycodestyle",
        "pyright",
        "tsc",
        "eslint",
        "rustc",
        "gcc",
        "g++",
        "clang",
        "clang++",
        "cc",
        "c++",
        "javac",
        "golint",
        "staticcheck",
        "shellcheck",
        "hadolint",
        "stylelint",
        "biome",
    ]
)
_COMMAND = re.compile(r"\b(cargo (build|check|clippy)|go (vet|build)|make\b.*\blint|npm run lint)")
# path:line[:col]: message   |   path(line,col): error TS1234: message
_LOCATED = re.compile(
    r"^(?P<path>[^\s:()]+\.[\w]+)(?::(?P<line>\d+)(?::\d+)?:|\((?P<pline>\d+),\d+\):)\s*(?P<msg>.*)"
)
# rustc: "error[E0308]: mismatched types" then " --> src/main.rs:4:5"; ruff's default output
# (recent versions: 0.17) the same with the rule's code first: "F401 [*] `os` imported but unused".
_RUST_HEAD = re.compile(r"^((error|warning)(\[\w+\])?: |[A-Z]{1,5}\d{3,4} )")
_RUST_AT = re.compile(r"^\s*--> (?P<path>[^\s:]+):\d+")
# eslint's stylish format: a path line, then "  12:5  error  message  rule"
_STYLISH_ROW = re.compile(r"^\s+\d+:\d+\s+(error|warning)\s")
_TOTALS = any_of(
    (
        r"^Found \d+ errors?",
        r"^Success: no issues found",
        r"^All checks passed",
        r"^\s*✖ \d+ problems?",
        r"^\d+ (errors?|warnings?)( and \d+ warnings?)? generated",
        r"^error: (could not compile|aborting due to)",
        r"^(warning|error): .* generated \d+ (warning|error)s?",
        r"^Your code has been rated at",
        r"^\*{5,} Module ",
        r"^Found \d+ errors? in \d+ files?",
        r"^\[\*\] \d+ fixable",
        r"^\d+ files? (checked|would be reformatted)",
    )
)
_PER_FILE = 25
# Diagnostics shown in all: a run over hundreds of files showed 25 for each, 300 files 7,500
# lines. Files are shown in order until this many are, each begun file up to its own limit.
_MAX_SHOWN = 200


class DiagnosticFilter:
    """Diagnostics: each distinct message once (repeats counted), grouped by file in the order
    files first appear, with the tool's totals; code excerpts under a rustc, ruff or gcc message
    are dropped, the ``-->`` location kept. At most 25 diagnostics per file are shown, and files
    until 200 are shown in all, those the goal names by file name first; the others are counted
    in one note.

    Example:
        >>> from ctxpack.filters import ToolOutput
        >>> out = "\\n".join(["a.py:1: error: Name 'x' is not defined  [name-defined]",
        ...                  "b.py:7: note: see here", "a.py:9: error: Missing return  [return]",
        ...                  "a.py:1: error: Name 'x' is not defined  [name-defined]",
        ...                  "Found 3 errors in 2 files (checked 9 source files)"])
        >>> print(DiagnosticFilter().extract(ToolOutput(out, command="mypy .")).text)
        a.py:1: error: Name 'x' is not defined  [name-defined]
        [… repeated 1 more time]
        a.py:9: error: Missing return  [return]
        b.py:7: note: see here
        Found 3 errors in 2 files (checked 9 source files)
    """

    kind = "diagnostics"

    def detect(self, output: ToolOutput, /) -> float:
        if output.program in _PROGRAMS or (output.command and _COMMAND.search(output.command)):
            return 1.0
        body = output.body
        if len(body) < 4:
            return 0.0
        located = sum(
            1
            for i in body
            if output.lines[i]
            and _LOCATED.match(output.lines[i])
            and not output.lines[i][:1].isspace()
            and re.search(r"\b(error|warning|note|[A-Z]\d{3,4}|E\d{3}|W\d{3})\b", output.lines[i])
        )
        return 0.6 if located >= max(3, len(body) // 3) else 0.0

    def extract(self, output: ToolOutput, /) -> Extract | None:
        lines = output.lines
        groups: dict[str, list[str]] = {}
        seen: Counter[str] = Counter()
        totals: list[str] = []
        other = 0
        current: str | None = None
        pending_head: str | None = None
        for i in output.body:
            line = lines[i]
            if _TOTALS.search(line):
                totals.append(line)
                continue
            located = _LOCATED.match(line)
            if located and not line[:1].isspace():
                path = located["path"]
                current = path
                if pending_head is not None:  # a message rustc gave no location
                    self._add(groups, seen, "", pending_head)
                    pending_head = None
                self._add(groups, seen, path, line)
                continue
            if _RUST_HEAD.match(line):
                if pending_head is not None:
                    self._add(groups, seen, "", pending_head)
                pending_head = line
                continue
            at = _RUST_AT.match(line)
            if at and pending_head is not None:
                # One diagnostic: the message with its location, counted and shown as one.
                self._add(groups, seen, at["path"], f"{pending_head}\n{line}")
                pending_head = None
                continue
            if _STYLISH_ROW.match(line) and current is not None:
                self._add(groups, seen, current, line)
                continue
            if line.strip() and not line[:1].isspace() and "." in line and " " not in line:
                current = line.strip()  # eslint's stylish file header
                continue
            if line.strip():
                other += 1
        if pending_head is not None:
            self._add(groups, seen, "", pending_head)
        if not groups:
            return None
        out: list[str] = [lines[i] for i in sorted(output.envelope) if i < (output.body or [0])[0]]
        chosen = _files_shown(groups, output.goal_words)
        shown = files_hidden = items_hidden = 0
        for path, items in groups.items():
            if path not in chosen:
                files_hidden += 1
                items_hidden += len(items)
                continue
            if path and len(groups) > 1 and not any(item.startswith(path) for item in items[:1]):
                out.append(path)
            for n, item in enumerate(items):
                if n == _PER_FILE:
                    out.append(f"[… {len(items) - _PER_FILE} more diagnostics in {path} hidden]")
                    break
                out.append(item)
                shown += 1
                if seen[item] > 1:
                    out.append(
                        f"[… repeated {seen[item] - 1} more time{'s' if seen[item] > 2 else ''}]"
                    )
        if files_hidden:
            out.append(
                f"[… {files_hidden} more file{'s' if files_hidden > 1 else ''} with "
                f"{items_hidden} diagnostics hidden]"
            )
        out.extend(totals)
        out.extend(lines[i] for i in sorted(output.envelope) if i > (output.body or [0])[-1])
        unique = sum(len(v) for v in groups.values())
        summary = f"{unique} distinct diagnostics in {len([g for g in groups if g])} files"
        if other:
            summary += f"; {other} other lines (code excerpts, context) hidden"
        if files_hidden:
            summary += f"; {files_hidden} files hidden"
        return Extract("\n".join(out), summary)

    @staticmethod
    def _add(groups: dict[str, list[str]], seen: Counter[str], path: str, line: str) -> None:
        seen[line] += 1
        if seen[line] == 1:
            groups.setdefault(path, []).append(line)


def _files_shown(groups: dict[str, list[str]], goal: frozenset[str]) -> set[str]:
    """The files whose diagnostics are shown: those the goal names (by file name, the agent
    editing them) and the messages of no file first, then the others in order, until about
    ``_MAX_SHOWN`` diagnostics are (a file begun shows up to ``_PER_FILE``)."""
    named = [p for p in groups if not p or PurePosixPath(p).stem.lower() in goal]
    rest = [p for p in groups if p not in set(named)]
    chosen: set[str] = set()
    count = 0
    for path in [*named, *rest]:
        if count >= _MAX_SHOWN:
            break
        chosen.add(path)
        count += min(len(groups[path]), _PER_FILE)
    return chosen
