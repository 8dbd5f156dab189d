"""Listings (``ls -R``, ``ls -l``, ``find``, ``tree``, ``git ls-files``, ``grep``/``rg`` hits):
grouped by directory or file, long groups collapsed with the count of what they hide."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection

from .._internal.arguments import tokens
from ..signals.lexical import split_identifier
from ..signals.stop_words import GOAL_STOP_WORDS
from ._base import _WORDS, Extract, ToolOutput

__all__ = ["ListingFilter"]

_PROGRAMS = frozenset(
    [
        "ls",
        "find",
        "tree",
        "fd",
        "fdfind",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ag",
        "ack",
        "locate",
        "du",
    ]
)
_GIT_LIST = re.compile(r"\bgit (ls-files|grep|status)\b")
_LS_HEADER = re.compile(r"^(?P<dir>\S.*):$")  # "./django/conf:" in ls -R
_HIT = re.compile(r"^(?P<file>[^\s:]+):(?P<rest>\d+[:-].*|.*)$")  # grep -n hits, rg, git grep
_CONTEXT = re.compile(r"-\d+-")  # grep -C's context line: "src/a.py-11-    before = 1"
_NAMED_GROUPS = 60  # collapsed groups named (with their counts) in the closing note
_PATH = re.compile(r"^\.{0,2}/?[\w.@+-]+(/[\w.@+-]+)+/?$")  # find output, git ls-files
_MIN_PART = 4  # shorter pieces of a name ("ext", "api", "py") match too much to mean anything


def _words(text: str, goal: Collection[str] | None = None) -> frozenset[str]:
    """The words of ``text``, lower-cased, with the pieces of the names they join
    (``test_ext_napoleon`` gives ``napoleon``): a listing names files and folders by joining
    words, so an entry is about ``napoleon`` without the goal writing its whole name. With
    ``goal``, only those among its words."""
    out: set[str] = set()
    for word in _WORDS.findall(text):
        out.add(word.lower())
        out.update(
            part
            for part in split_identifier(word)
            if len(part) >= _MIN_PART and part not in GOAL_STOP_WORDS
        )
    return frozenset(out if goal is None else out.intersection(goal))


def _hit_files(lines: list[str], body: list[int]) -> frozenset[str]:
    """The files grep hits name (``src/a.py:12:...``)."""
    out = set()
    for i in body:
        hit = _HIT.match(lines[i])
        if hit and ("/" in hit["file"] or "." in hit["file"]) and hit["rest"]:
            out.add(hit["file"])
    return frozenset(out)


def _context_file(line: str, hit_files: frozenset[str], previous: str) -> str | None:
    """The file a context line of ``grep -C`` belongs to (``src/a.py-11-...``, or the ``--``
    between two hits' contexts, which goes with the hit before it); ``None`` for another line.
    Grouped apart from its hit, it would be shown away from it, in a group of its own."""
    if line == "--":
        return previous or None
    for dash in _CONTEXT.finditer(line):
        if line[: dash.start()] in hit_files:
            return line[: dash.start()]
    return None


def _top_folder(key: str) -> str:
    """The top-level folder of a group (``"src"`` for ``./src/main/java``); ``""`` for the
    listing's root."""
    parts = [p for p in key.split("/") if p not in ("", ".")]
    return parts[0] if parts else ""


def _in_turn(order: list[int], groups: list[tuple[str, list[int], int | None]]) -> list[int]:
    """``order`` taken one group per top-level folder in turn (the folders in order of first
    appearance, each folder's groups in listing order): a tree listed first, such as 400
    folders of generated javadoc before ``src``, cannot fill every group shown in full."""
    by_folder: dict[str, list[int]] = {}
    for g in order:
        by_folder.setdefault(_top_folder(groups[g][0]), []).append(g)
    queues = list(by_folder.values())
    return [q[k] for k in range(max(map(len, queues), default=0)) for q in queues if k < len(q)]


class ListingFilter:
    """Listings: per group (a directory of ``ls -R``, the files' directory for ``find``, the
    file of grep hits) the first entries, then how many more it holds; the entries that share
    the most words with the goal are shown first, counting the pieces of joined names
    (``test_ext_napoleon.py`` is about ``napoleon``) and leaving out the words over half the
    entries share (``test`` in a folder of tests says nothing about one of them). Over
    ``max_groups``, the groups naming the goal are shown in full first, then the others taken
    in turn from each top-level folder, so that a tree listed first (generated javadoc before
    ``src``) cannot take every place. Groups keep their order, and so do the entries shown.

    Args:
        per_group: Entries shown per group.
        max_groups: Groups shown in full; the others are listed with their counts only.

    Example:
        >>> from ctxpack.filters import ToolOutput
        >>> hits = [f"src/a.py:{n}:    token = refresh(x)" for n in range(1, 20)]
        >>> print(ListingFilter(per_group=2).extract(
        ...     ToolOutput("\\n".join(hits), command="grep -rn token src")).text)
        src/a.py:1:    token = refresh(x)
        src/a.py:2:    token = refresh(x)
        [… 17 more in src/a.py hidden]
    """

    kind = "listing"

    def __init__(self, *, per_group: int = 12, max_groups: int = 40) -> None:
        self.per_group = tokens(per_group, "per_group", minimum=0, unit="entries")
        self.max_groups = tokens(max_groups, "max_groups", minimum=0, unit="groups")

    def __repr__(self) -> str:
        return f"ListingFilter(per_group={self.per_group}, max_groups={self.max_groups})"

    def detect(self, output: ToolOutput, /) -> float:
        if output.program in _PROGRAMS or (output.command and _GIT_LIST.search(output.command)):
            return 1.0
        body = [output.lines[i] for i in output.body if output.lines[i].strip()]
        if len(body) < 20:
            return 0.0
        pathy = sum(1 for line in body if _PATH.match(line) or _LS_HEADER.match(line))
        return 0.5 if pathy >= len(body) * 0.6 else 0.0

    def _groups(self, output: ToolOutput) -> list[tuple[str, list[int], int | None]]:
        """(group key, entry indices, header index) in order of appearance."""
        lines = output.lines
        groups: dict[str, tuple[list[int], int | None]] = {}
        current = ""
        header: int | None = None
        hit_files = _hit_files(lines, output.body)
        context_of = ""  # the file of the last hit or context line of grep -C
        for i in output.body:
            line = lines[i]
            if not line.strip():
                continue
            key = _context_file(line, hit_files, context_of)
            if key is not None:
                context_of = key
                groups.setdefault(key, ([], None))[0].append(i)
                continue
            ls = _LS_HEADER.match(line)
            if ls and not _HIT.match(line.rstrip(":")):
                current, header = ls["dir"], i
                groups.setdefault(current, ([], header))
                continue
            hit = _HIT.match(line)
            if hit and ("/" in hit["file"] or "." in hit["file"]) and hit["rest"]:
                key = context_of = hit["file"]
                groups.setdefault(key, ([], None))[0].append(i)
                continue
            if _PATH.match(line.strip()) and not header:
                key = line.strip().rstrip("/").rsplit("/", 1)[0]
                groups.setdefault(key, ([], None))[0].append(i)
                continue
            groups.setdefault(current, ([], header))[0].append(i)
        return [(k, v[0], v[1]) for k, v in groups.items()]

    def _relevance(
        self, output: ToolOutput, groups: list[tuple[str, list[int], int | None]]
    ) -> tuple[dict[int, int], frozenset[str]]:
        """Per entry, how many goal words it holds that fewer than half the entries hold; and
        the goal words left once those common ones are out."""
        goal = set(_words(" ".join(output.goal_words)))
        shared = {i: _words(output.lines[i], goal) for _, entries, _ in groups for i in entries}
        counts = Counter(word for words in shared.values() for word in words)
        common = {w for w, c in counts.items() if c > len(shared) / 2 and len(shared) >= 4}
        return {i: len(words - common) for i, words in shared.items()}, frozenset(goal - common)

    def extract(self, output: ToolOutput, /) -> Extract | None:
        lines = output.lines
        groups = self._groups(output)
        out: list[str] = [lines[i] for i in sorted(output.envelope) if i < (output.body or [0])[0]]
        hidden_entries = 0
        score, goal = self._relevance(output, groups)
        # Groups whose name or entries mention the goal come first for the full view; the
        # others are shared in turn among the listing's top-level folders.
        on_goal = {
            g
            for g, (key, entries, _) in enumerate(groups)
            if _words(key, goal) or any(score[i] for i in entries)
        }
        others = _in_turn([g for g in range(len(groups)) if g not in on_goal], groups)
        full = set([*sorted(on_goal), *others][: self.max_groups])
        collapsed: list[str] = []
        for g, (key, entries, header) in enumerate(groups):
            if g not in full:
                collapsed.append(f"{key} ({len(entries)})")
                hidden_entries += len(entries)
                continue
            if header is not None:
                out.append(lines[header])
            if len(entries) <= self.per_group + 1:
                out.extend(lines[i] for i in entries)
                continue
            relevant = sorted((i for i in entries if score[i]), key=lambda i: -score[i])
            chosen = set(relevant[: self.per_group])
            for i in entries:
                if len(chosen) >= self.per_group:
                    break
                chosen.add(i)
            out.extend(lines[i] for i in entries if i in chosen)
            more = len(entries) - len(chosen)
            hidden_entries += more
            out.append(f"[… {more} more in {key or 'this listing'} hidden]")
        if collapsed:
            named = ", ".join(collapsed[:_NAMED_GROUPS])
            rest = len(collapsed) - _NAMED_GROUPS
            named += f" and {rest} more" if rest > 0 else ""
            out.append(f"[… {len(collapsed)} more groups hidden: {named}]")
        out.extend(lines[i] for i in sorted(output.envelope) if i > (output.body or [0])[-1])
        if not hidden_entries:
            return None
        return Extract("\n".join(out), f"{len(groups)} groups, {hidden_entries} entries hidden")
