"""The ``history`` signal of :class:`~ctxpack.code.CodeIndex`: commit messages as a bridge from an
issue's words to the files that change for them.

When the root is a git work tree, the messages of the commits before ``HEAD`` (subject and body,
merges left out, at most :data:`MAX_COMMITS` of the newest) are read with one ``git log`` and
ranked by BM25 against the query; each of the best :data:`TOP_COMMITS` lends its score to the
indexed files it touched, divided by the square root of how many files it touched (a commit
that touched one file says more about that file than a sweep over fifty). Nothing goes over the
network, and nothing is read past ``HEAD``. A root that is not in a git work tree, or a machine
without git, has no history: the signal is then zero everywhere.

What ``git log`` gave is kept in the index's SQLite file under the ``HEAD`` it was read at, so
an index reopened on the same commit runs one ``git rev-parse`` and no ``git log``.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ..signals.bm25 import InvertedIndex
from .terms import code_terms

__all__ = [
    "MAX_COMMITS",
    "TOP_COMMITS",
    "Commit",
    "CommitHistory",
    "cached_history",
    "head_of",
    "read_history",
]

MAX_COMMITS = 10_000
"""How many of the newest commits before ``HEAD`` are read."""

TOP_COMMITS = 20
"""How many of the commits that best match a query lend their score to files."""

# A commit touching more files than this is a sweep (a reformat, a licence header, a rename of
# a package): it says nothing about any one of them.
_MAX_FILES = 50
_GIT_TIMEOUT = 60.0
# Separators that commit messages and paths practically never hold (ASCII record and unit
# separators): a message holding one loses its tail, nothing worse.
_START, _END = "\x1e", "\x1f"


class Commit(NamedTuple):
    """One commit: its message and the paths it touched, relative to the index's root."""

    message: str
    files: tuple[str, ...]


def _git(root: Path, *args: str) -> str | None:
    """Run git in ``root``; ``None`` when git is missing or fails (no repository, no commit)."""
    # GIT_DIR and friends in the caller's environment would point git at another repository.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_TERMINAL_PROMPT"] = "0"
    try:
        done = subprocess.run(
            ["git", "-c", "core.quotepath=off", "-C", str(root), *args],
            capture_output=True,
            env=env,
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", errors="replace")


def head_of(root: Path) -> str | None:
    """The commit ``HEAD`` names when ``root`` is inside a git work tree, else ``None``."""
    out = _git(root, "rev-parse", "--is-inside-work-tree", "HEAD")
    lines = (out or "").split()
    if len(lines) != 2 or lines[0] != "true":
        return None
    return lines[1]


def read_history(root: Path, head: str, limit: int = MAX_COMMITS) -> list[Commit] | None:
    """The newest ``limit`` commits reachable from ``head`` (newest first), with the paths each
    touched under ``root``; ``None`` when git cannot tell."""
    out = _git(
        root,
        "log",
        f"--max-count={limit}",
        "--no-merges",
        "--no-renames",
        "--relative",
        "--name-only",
        f"--format={_START}%B{_END}",
        head,
        "--",
    )
    if out is None:
        return None
    commits = []
    for record in out.split(_START)[1:]:
        message, _, names = record.partition(_END)
        # git quotes a path holding a quote, a backslash or a control character: rare, and
        # unquoting it is not worth a parser, so such a path is left out.
        files = tuple(p for p in names.splitlines() if p and not p.startswith('"'))
        commits.append(Commit(message.strip(), files))
    return commits


def cached_history(conn: sqlite3.Connection, root: Path) -> list[Commit] | None:
    """The history of ``root`` at its current ``HEAD``, read through the cache in ``conn``."""
    head = head_of(root)
    if head is None:
        return None
    key = f"{head}:{MAX_COMMITS}"
    conn.execute("CREATE TABLE IF NOT EXISTS history (key TEXT PRIMARY KEY, commits TEXT)")
    row = conn.execute("SELECT commits FROM history WHERE key = ?", (key,)).fetchone()
    if row is not None:
        return [Commit(m, tuple(f)) for m, f in json.loads(row[0])]
    commits = read_history(root, head)
    if commits is None:
        return None
    # One HEAD at a time: the history of an older checkout is no use to this one.
    conn.execute("DELETE FROM history")
    conn.execute("INSERT INTO history VALUES (?, ?)", (key, json.dumps(commits)))
    conn.commit()
    return commits


class CommitHistory:
    """Commit messages indexed for BM25, each with the positions of the files it touched.

    Args:
        commits: The commits, newest first.
        paths: The index's files, by position.
    """

    def __init__(self, commits: Sequence[Commit], paths: Sequence[str]) -> None:
        import numpy as np

        at = {p: i for i, p in enumerate(paths)}
        self._size = len(paths)
        self._index = InvertedIndex()
        self._touched: list[Any] = []
        self._share: list[float] = []
        for commit in commits:
            if len(commit.files) > _MAX_FILES:
                continue
            where = sorted({at[f] for f in commit.files if f in at})
            if not where:
                continue
            self._index.append_terms("", code_terms(commit.message))
            self._touched.append(np.array(where, dtype=np.int64))
            self._share.append(1.0 / math.sqrt(len(commit.files)))

    def __len__(self) -> int:
        return len(self._touched)

    def lent(self, weighted: Mapping[str, float], *, k1: float, b: float) -> Any:
        """Per file, the score the best-matching commits lend it for the weighted query terms."""
        import numpy as np

        out = np.zeros(self._size)
        if not self._touched:
            return out
        scores = self._index.bm25(weighted, k1=k1, b=b)
        best = np.argsort(-scores, kind="stable")[:TOP_COMMITS]
        for c in best.tolist():
            if scores[c] <= 0:
                break
            out[self._touched[c]] += scores[c] * self._share[c]
        return out
