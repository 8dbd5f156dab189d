"""The lexical layer: find text in a repository's source files, with ripgrep when it is there.

:func:`grep` runs the ``rg`` binary when one is installed (on ``PATH`` or beside the Python
interpreter, where the ``ripgrep`` package puts it) and a pure-Python scan otherwise. Both
search exactly the files :func:`~ctxpack.code._files.list_files` lists, so ``.gitignore`` is
respected the same way and the hits are the same whichever engine ran.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict

from .._internal.arguments import flag, shown, string, strings
from .._internal.arguments import tokens as check_tokens
from .._internal.options import FieldErrorModel
from .._internal.paths import check_relative, inside_root, read_regular
from ..errors import ConfigError, WorkspacePathError
from ._files import list_files, resolve_root

__all__ = ["GrepHit", "grep", "ripgrep_path"]

Engine = Literal["auto", "ripgrep", "python"]

# Paths handed to one rg process: well under the smallest ARG_MAX in use.
_BATCH = 500

# Characters of a line shown by default: code lines are far shorter, and a minified bundle or
# a data file is one line of megabytes that an agent would otherwise paste whole into a prompt.
MAX_COLUMNS = 1_000


class GrepHit(FieldErrorModel):
    """One matching line: where it is, what it says, and the lines around it.

    Attributes:
        path: Repository-relative POSIX path.
        line: 1-based line number.
        text: The matching line, without its line end.
        before: Up to ``context`` lines before it.
        after: Up to ``context`` lines after it.
    """

    model_config = ConfigDict(frozen=True)

    path: str
    line: int
    text: str
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()


@cache
def ripgrep_path() -> str | None:
    """The ``rg`` binary grep uses, or ``None`` when none is installed.

    Install one with ``pip install "ctxpack[code]"`` (the ``ripgrep`` package) or your system's
    package manager; without it :func:`grep` scans in Python and finds the same lines.
    """
    found = shutil.which("rg")
    if found:
        return found
    for folder in {sysconfig.get_path("scripts"), os.path.dirname(sys.executable)}:
        candidate = os.path.join(folder, "rg")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def grep(
    root: str | os.PathLike[str],
    pattern: str,
    *,
    regex: bool = False,
    ignore_case: bool = True,
    context: int = 2,
    engine: Engine = "auto",
    paths: Sequence[str] | None = None,
    max_columns: int | None = MAX_COLUMNS,
) -> list[GrepHit]:
    """Every line of the repository's source files that matches ``pattern``.

    Both engines read lines as ripgrep does: a line ends at ``"\n"`` (a ``"\r"`` before it is
    left out of the text shown), ``^`` and ``$`` anchor at each line, and a file that goes away
    or changes while grep runs is skipped rather than failing the search.

    Args:
        root: The repository's root folder.
        pattern: A literal string, or a regular expression when ``regex`` is true (in the
            syntax Python's ``re`` and ripgrep share, both engines find the same lines: classes,
            groups, ``|``, ``\\b``, ``\\w``).
        regex: Read ``pattern`` as a regular expression.
        ignore_case: Match regardless of case.
        context: Lines of context kept before and after each hit.
        engine: ``"ripgrep"``, ``"python"`` or ``"auto"`` (ripgrep when installed, the
            Python scan for an expression only Python's ``re`` takes).
        paths: Search only these repository-relative files (default: every listed source file).
        max_columns: The most characters of a line shown, ``None`` for whole lines. A longer
            matching line is cut to that many characters around its first match, a longer
            context line to its head, and each cut is marked in the text with the number of
            characters left out (``"[... 52,110 characters cut]"``).

    Returns:
        The hits, sorted by path and line.

    Raises:
        ConfigError: ``root`` is not a folder, ``pattern`` is empty or not a valid expression,
            or ``engine="ripgrep"`` and no ``rg`` is installed.
        WorkspacePathError: a path of ``paths`` is absolute, climbs out with ``..``, or leads
            outside the root through a symlink (a file swapped so after the check is skipped).

    Example:
        >>> import pathlib, tempfile
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (root / "app.py").write_text("def throttle():\\n    pass\\n")
        >>> [(h.path, h.line, h.text) for h in grep(root, "THROTTLE", engine="python")]
        [('app.py', 1, 'def throttle():')]
    """
    base = resolve_root(root)
    string(pattern, "pattern")
    check_tokens(context, "context", minimum=0, unit="lines")
    if max_columns is not None:
        check_tokens(max_columns, "max_columns", minimum=1, unit="characters")
    if not pattern:
        raise ConfigError("grep needs a non-empty pattern")
    flags = re.IGNORECASE if flag(ignore_case, "ignore_case") else 0
    try:
        compiled = re.compile(pattern if flag(regex, "regex") else re.escape(pattern), flags)
    except re.error as exc:
        raise ConfigError(f"invalid regular expression {pattern!r}: {exc}") from exc
    files = _relative(paths, base) if paths is not None else list_files(base)
    real = _confined(base, files)
    rg = _ripgrep_for(engine, pattern)
    found = None if rg is None else _ripgrep(rg, base, files, pattern, regex, ignore_case)
    if isinstance(found, str) and engine == "ripgrep":
        raise ConfigError(f"ripgrep failed on {pattern!r}: {found}")
    # An expression ripgrep refused and Python's re took (a look-around, a back-reference):
    # the Python scan finds its lines.
    matches = found if isinstance(found, dict) else _python(base, real, compiled)
    return _with_context(base, real, matches, context, _Cutter(compiled, max_columns))


def _ripgrep_for(engine: Any, pattern: str) -> str | None:
    """The ``rg`` binary to run for ``engine`` and ``pattern``; ``None``: the Python scan.

    Raises:
        ConfigError: an unknown engine, or ``"ripgrep"`` that cannot run.
    """
    if engine not in ("auto", "ripgrep", "python"):
        raise ConfigError(f"engine must be 'auto', 'ripgrep' or 'python', got {shown(engine)}")
    rg = ripgrep_path() if engine != "python" and _argument_for_rg(pattern) else None
    if engine == "ripgrep" and rg is None:
        if not _argument_for_rg(pattern):
            raise ConfigError(
                "ripgrep cannot take this pattern as an argument (a NUL byte, a lone surrogate, "
                "or over 100,000 bytes); use engine='python' or 'auto'"
            )
        raise ConfigError(
            "ripgrep is not installed; pip install 'ctxpack[code]' (or your system's ripgrep), "
            "or use engine='python'"
        )
    return rg


def _argument_for_rg(pattern: str) -> bool:
    """Whether ``pattern`` can be a command-line argument: the system refuses a NUL byte, an
    argument over its limit (128 KiB on Linux) and text that is not valid Unicode."""
    try:
        size = len(pattern.encode("utf-8"))
    except UnicodeEncodeError:
        return False
    return "\0" not in pattern and size <= 100_000


def _relative(paths: Any, base: Path) -> list[str]:
    """``paths`` if each is a path relative to ``base`` that stays inside it: an absolute path
    or one climbing out with ``..`` would be searched (and its lines returned) all the same."""
    files = strings(paths, "paths", what="repository-relative paths")
    for rel in files:
        # The string test first: the workspace's search passes every file on each call.
        if not rel or rel.startswith(("/", "\\")) or ".." in rel or ":" in rel or "\x00" in rel:
            check_relative(rel, base)
    return files


def _confined(base: Path, files: list[str]) -> dict[str, str]:
    """Each file's path with its symlinks resolved, checked to stay inside ``base``: the walk
    follows none, but a caller's path may pass one, and a folder may have been swapped for one
    since the walk. Each folder is resolved once (the workspace's search passes every file).

    Raises:
        WorkspacePathError: a file leads outside ``base`` through a symlink.
    """
    folders: dict[str, tuple[str, bool]] = {}  # resolved, and whether inside ``base``
    real: dict[str, str] = {}
    for rel in files:
        parent, _, name = rel.rpartition("/")
        known = folders.get(parent)
        if known is None:
            folder = Path(os.path.realpath(base / parent))
            known = folders[parent] = (str(folder), folder == base or base in folder.parents)
        full = os.path.join(known[0], name)
        if not known[1] or os.path.islink(full):
            full = str(inside_root(base, base / rel, rel))  # names ``rel`` if it leads out
        real[rel] = full
    return real


def _ripgrep(
    rg: str, base: Path, files: list[str], pattern: str, regex: bool, ignore_case: bool
) -> dict[str, list[int]] | str:
    """The lines of ``files`` that match, by path; or, for an expression ripgrep refuses, its
    message."""
    found: dict[str, list[int]] = {}
    args = [rg, "--json", "--no-config", "--line-number", "--text"]
    args += ["--ignore-case"] if ignore_case else ["--case-sensitive"]
    if not regex:
        args.append("--fixed-strings")
    args += ["--regexp", pattern, "--"]
    for start in range(0, len(files), _BATCH):
        batch = files[start : start + _BATCH]
        proc = subprocess.run(
            [*args, *batch], cwd=base, capture_output=True, text=True, check=False
        )
        events = [json.loads(raw) for raw in proc.stdout.splitlines()]
        # 0: matches, 1: none. 2 with a summary: the search ran, and a file could not be read
        # (gone since the listing, as the Python scan skips it); 2 without: a bad expression.
        searched = any(event.get("type") == "summary" for event in events)
        if proc.returncode not in (0, 1) and not (proc.returncode == 2 and searched):
            return proc.stderr.strip()
        for event in events:
            if event.get("type") != "match":
                continue
            data = event["data"]
            path = data["path"].get("text")
            if path is None:
                continue
            found.setdefault(path, []).append(int(data["line_number"]))
    return found


def _python(base: Path, real: dict[str, str], compiled: re.Pattern[str]) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    # A file with no match anywhere is skipped whole; ^ and $ then anchor at every line, as
    # they do in the scan of each line below.
    anywhere = re.compile(compiled.pattern, compiled.flags | re.MULTILINE)
    for rel, full in real.items():
        text = _text(base, full, rel)
        if text is None or not anywhere.search(text):
            continue
        lines = [n for n, line in enumerate(_lines(text), start=1) if compiled.search(line)]
        if lines:
            found[rel] = lines
    return found


def _text(base: Path, full: str, rel: str) -> str | None:
    """The text of ``full`` (``rel`` resolved), checked again as it is read (``None``: gone,
    unreadable, or no longer a regular file)."""
    try:
        raw = read_regular(base, full, rel)
    except (OSError, WorkspacePathError):
        return None
    # Line ends as they are: ripgrep ends a line at "\n" only.
    return raw.decode("utf-8", errors="replace")


def _lines(text: str) -> list[str]:
    """Lines as ripgrep numbers and matches them: split at ``"\n"`` only (a ``"\r"`` stays
    part of its line), and none after a final line end."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


class _Cutter:
    """Cuts lines longer than ``width`` characters, marking each cut with its size."""

    def __init__(self, compiled: re.Pattern[str], width: int | None) -> None:
        self.compiled = compiled
        self.width = width

    def around_match(self, line: str) -> str:
        if self.width is None or len(line) <= self.width:
            return line
        found = self.compiled.search(line)
        # The window starts a third of its width before the match, so the code leading to it
        # shows; a match ripgrep found and re misses (none in the syntax both share) shows
        # the head.
        start = 0 if found is None else max(0, found.start() - self.width // 3)
        return _window(line, min(start, len(line) - self.width), self.width)

    def head(self, line: str) -> str:
        if self.width is None or len(line) <= self.width:
            return line
        return _window(line, 0, self.width)


def _window(line: str, start: int, width: int) -> str:
    end = start + width
    before = f"[... {start:,} characters cut] " if start else ""
    after = f" [... {len(line) - end:,} characters cut]" if end < len(line) else ""
    return before + line[start:end] + after


def _with_context(
    base: Path,
    real: dict[str, str],
    matches: dict[str, list[int]],
    context: int,
    cut: _Cutter,
) -> list[GrepHit]:
    hits: list[GrepHit] = []
    for rel in sorted(matches):
        if rel not in real:  # ripgrep's name for a file is not one it was given
            continue
        text = _text(base, real[rel], rel)
        if text is None:
            continue
        lines = [line.rstrip("\r") for line in _lines(text)]
        for number in sorted(set(matches[rel])):
            if number > len(lines):
                continue  # the file was cut short since the match
            i = number - 1
            hits.append(
                GrepHit(
                    path=rel,
                    line=number,
                    text=cut.around_match(lines[i]),
                    before=tuple(map(cut.head, lines[max(0, i - context) : i])),
                    after=tuple(map(cut.head, lines[i + 1 : i + 1 + context])),
                )
            )
    return hits
