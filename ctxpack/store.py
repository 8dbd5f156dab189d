"""Artifacts: originals that were shortened, cleared or compacted, kept retrievable by id.

An artifact store is content-addressed: the same text always gets the same id, so putting an
original twice stores it once, and an id read from an old request still resolves. The default
backend is SQLite (a file, or ``":memory:"``); any object with ``put`` and ``get`` can replace it,
and :func:`read_artifact` reads parts of an artifact (a line range, the lines matching a regex
with context, a JSON path), a page at a time, from any of them.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from .errors import ArtifactNotFoundError, ConfigError

__all__ = [
    "MAX_PAGE_CHARS",
    "ArtifactStore",
    "Retrieval",
    "SQLiteArtifactStore",
    "artifact_id",
    "read_artifact",
]


def artifact_id(text: str) -> str:
    """The id an artifact store gives ``text``: ``"art_"`` and 16 hex digits of its SHA-256.

    Example:
        >>> artifact_id("hello")
        'art_2cf24dba5fb0a30e'
    """
    return "art_" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@runtime_checkable
class ArtifactStore(Protocol):
    """Where originals are kept: ``put`` returns an id, ``get`` gives the text back."""

    def put(self, text: str, **metadata: Any) -> str: ...

    def get(self, artifact: str) -> str: ...


class SQLiteArtifactStore:
    """Artifacts in SQLite: content-addressed, durable once ``put()`` returns, safe under threads.

    Args:
        path: A database file (created if missing) or ``":memory:"``.

    Example:
        >>> store = SQLiteArtifactStore(":memory:")
        >>> ref = store.put("pytest output ...", tool="bash")
        >>> store.get(ref)
        'pytest output ...'
        >>> store.metadata(ref)
        {'tool': 'bash'}
    """

    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        # One connection shared by threads under a lock: SQLite serialises writers anyway, and a
        # connection per thread would make ":memory:" stores invisible to each other.
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        with self._lock:
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
            # FULL: a put() that returned survives the process being killed, and a power cut.
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS artifacts ("
                " id TEXT PRIMARY KEY, text TEXT NOT NULL, metadata TEXT NOT NULL)"
            )

    def put(self, text: str, **metadata: Any) -> str:
        """Store ``text`` (once, whatever the number of calls) and return its id.

        Metadata must be JSON-serialisable; the first ``put`` of a text sets it.
        """
        if not isinstance(text, str):
            raise TypeError(f"an artifact is a str, got {type(text).__name__}")
        ref = artifact_id(text)
        meta = json.dumps(metadata, sort_keys=True, default=str)
        with self._lock:
            self._conn.execute(
                "INSERT OR IGNORE INTO artifacts (id, text, metadata) VALUES (?, ?, ?)",
                (ref, text, meta),
            )
        return ref

    def get(self, artifact: str) -> str:
        """The text stored under ``artifact``.

        Raises:
            ArtifactNotFoundError: no such id in this store.
        """
        return str(self._row(artifact)[0])

    def metadata(self, artifact: str) -> dict[str, Any]:
        """The metadata given when ``artifact`` was first put."""
        meta: dict[str, Any] = json.loads(self._row(artifact)[1])
        return meta

    def __contains__(self, artifact: object) -> bool:
        if not isinstance(artifact, str):
            return False
        with self._lock:
            row = self._conn.execute("SELECT 1 FROM artifacts WHERE id = ?", (artifact,))
            return row.fetchone() is not None

    def __len__(self) -> int:
        with self._lock:
            (n,) = self._conn.execute("SELECT COUNT(*) FROM artifacts").fetchone()
        return int(n)

    def retrieve(
        self,
        artifact: str,
        *,
        lines: str | tuple[int, int] | None = None,
        regex: str | None = None,
        context: int = 2,
        json_path: str | None = None,
        page: int = 1,
        max_chars: int = 8_000,
    ) -> Retrieval:
        """Read part of an artifact, a page at a time: see :func:`read_artifact`."""
        return read_artifact(
            self,
            artifact,
            lines=lines,
            regex=regex,
            context=context,
            json_path=json_path,
            page=page,
            max_chars=max_chars,
        )

    def close(self) -> None:
        """Close the connection; the file keeps everything that was put."""
        with self._lock:
            self._conn.close()

    def _row(self, artifact: str) -> tuple[str, str]:
        with self._lock:
            row = self._conn.execute(
                "SELECT text, metadata FROM artifacts WHERE id = ?", (artifact,)
            ).fetchone()
        if row is None:
            raise ArtifactNotFoundError(artifact, store=self.path)
        return (row[0], row[1])

    def __repr__(self) -> str:
        return f"SQLiteArtifactStore({self.path!r})"


# ------------------------------------------------------------------------------------ retrieval

MAX_PAGE_CHARS = 50_000
"""The largest page :func:`read_artifact` returns, whatever ``max_chars`` asks for."""


class Retrieval(BaseModel):
    """One page of an artifact, as :func:`read_artifact` read it.

    Attributes:
        artifact: The artifact's id.
        selector: What was asked for, in words (``"lines 10-40"``, ``"regex 'Error' (3 lines of
            context)"``, ``"json path $.items[0]"``, ``"whole"``).
        text: The page: verbatim lines for a line range or the whole artifact; for a regex, the
            matching lines and their context as ``grep -n`` prints them (``12:match``,
            ``11-context``, ``--`` between groups); for a JSON path, the matches as JSON.
        page: This page's number, from 1.
        pages: How many pages the selection fills.
        total_lines: Lines in the whole artifact.
        matches: Matching lines (regex) or values (JSON path); ``None`` otherwise.
    """

    model_config = ConfigDict(frozen=True)

    artifact: str
    selector: str
    text: str
    page: int
    pages: int
    total_lines: int
    matches: int | None = None

    def render(self) -> str:
        """The page with a one-line header saying what it is and how to get the next page,
        as a retrieve tool answers the model."""
        head = f"[{self.artifact}: {self.selector}, {self.total_lines} lines in all"
        if self.matches is not None:
            head += f", {self.matches} matches"
        if self.pages > 1:
            head += f"; page {self.page} of {self.pages}"
            if self.page < self.pages:
                head += f", ask for page={self.page + 1} for more"
        return head + "]\n" + self.text


def _line_range(lines: str | tuple[int, int], total: int) -> tuple[int, int]:
    if isinstance(lines, tuple):
        start, end = lines
    else:
        match = re.fullmatch(r"\s*(\d+)\s*(?:[-:,]\s*(\d*)\s*)?", str(lines))
        if match is None:
            raise ConfigError(
                f"lines={lines!r}: expected 'START-END' (1-based, inclusive, e.g. '120-180'), "
                "'START-' for the rest, or a single line number"
            )
        start = int(match[1])
        end = (
            int(match[2])
            if match[2]
            else (total if match[0].strip().endswith(("-", ":", ",")) else start)
        )
    if start < 1 or end < start:
        raise ConfigError(f"lines={lines!r}: need 1 <= start <= end (lines count from 1)")
    return start, min(end, max(total, 1))


_PATH_TOKEN = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+|\*)\]|\[\s*['\"](.*?)['\"]\s*\]|\.\*")


def _json_steps(path: str) -> list[str | int | None]:
    """``$.a.b[0]['c d'][*]`` -> ``["a", "b", 0, "c d", None]`` (``None`` is a wildcard)."""
    rest = path.strip()
    if rest.startswith("$"):
        rest = rest[1:]
    steps: list[str | int | None] = []
    pos = 0
    while pos < len(rest):
        match = _PATH_TOKEN.match(rest, pos)
        if match is None:
            raise ConfigError(
                f"json_path={path!r}: cannot read {rest[pos:]!r}; use $.key, [index], ['key'] "
                "and [*] (for example $.items[0].name or $.items[*].id)"
            )
        if match[1] is not None:
            steps.append(match[1])
        elif match[2] is not None:
            steps.append(None if match[2] == "*" else int(match[2]))
        elif match[3] is not None:
            steps.append(match[3])
        else:
            steps.append(None)
        pos = match.end()
    return steps


def _walk(value: Any, steps: list[str | int | None]) -> Iterator[Any]:
    if not steps:
        yield value
        return
    step, rest = steps[0], steps[1:]
    if step is None:
        children = (
            value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        )
        for child in children:
            yield from _walk(child, rest)
    elif isinstance(step, int):
        if isinstance(value, list) and -len(value) <= step < len(value):
            yield from _walk(value[step], rest)
    elif isinstance(value, dict) and step in value:
        yield from _walk(value[step], rest)


def _pages(lines: list[str], max_chars: int) -> list[list[str]]:
    """Whole lines per page while they fit; a line longer than a page is cut into pieces."""
    pages: list[list[str]] = [[]]
    size = 0
    for line in lines:
        pieces = [line[i : i + max_chars] for i in range(0, len(line), max_chars)] or [""]
        for piece in pieces:
            if pages[-1] and size + len(piece) + 1 > max_chars:
                pages.append([])
                size = 0
            pages[-1].append(piece)
            size += len(piece) + 1
    return pages


def read_artifact(
    store: ArtifactStore,
    artifact: str,
    *,
    lines: str | tuple[int, int] | None = None,
    regex: str | None = None,
    context: int = 2,
    json_path: str | None = None,
    page: int = 1,
    max_chars: int = 8_000,
) -> Retrieval:
    r"""Read an artifact whole or in part, one page at a time, from any :class:`ArtifactStore`.

    At most one selector: ``lines`` (a 1-based inclusive range), ``regex`` (matching lines with
    ``context`` lines around them), or ``json_path`` (``$.key``, ``[index]``, ``['key']``,
    ``[*]``); none reads the whole artifact. The selection is cut into pages of at most
    ``max_chars`` characters (never more than :data:`MAX_PAGE_CHARS`), on line boundaries.

    Args:
        store: Where the artifact is.
        artifact: Its id.
        lines: ``"120-180"``, ``"120-"`` (to the end), ``"120"`` or ``(120, 180)``.
        regex: A Python regular expression, searched in each line.
        context: Lines shown before and after each regex match.
        json_path: A path into an artifact that is JSON.
        page: Which page, from 1.
        max_chars: Page size cap.

    Returns:
        A :class:`Retrieval`; ``.render()`` gives the text a retrieve tool sends back.

    Raises:
        ArtifactNotFoundError: no such id in ``store``.
        ConfigError: two selectors, a malformed range, regex or path, a page out of range, or an
            artifact that is not JSON for ``json_path``.

    Example:
        >>> store = SQLiteArtifactStore(":memory:")
        >>> ref = store.put("\n".join(f"line {i}" for i in range(1, 101)))
        >>> read_artifact(store, ref, lines="42-43").text
        'line 42\nline 43'
        >>> print(read_artifact(store, ref, regex=r"line 7\d$", context=0, max_chars=33).render())
        [art_...: regex 'line 7\\d$' (0 lines of context), 100 lines in all, 10 matches;
        page 1 of 4, ask for page=2 for more]
        70:line 70
        71:line 71
        72:line 72
    """
    _check_read(lines, regex, json_path, page, max_chars, context)
    max_chars = min(max_chars, MAX_PAGE_CHARS)
    text = store.get(artifact)
    all_lines = text.split("\n")
    total = len(all_lines)
    matches: int | None = None
    if lines is not None:
        start, end = _line_range(lines, total)
        selected = all_lines[start - 1 : end]
        selector = f"lines {start}-{end}"
    elif regex is not None:
        selected, matches = _grep(all_lines, regex, context)
        selector = f"regex {regex!r} ({context} lines of context)"
    elif json_path is not None:
        selected, matches = _json_select(text, json_path, artifact)
        selector = f"json path {json_path}"
    else:
        selected = all_lines
        selector = "whole"
    pages = _pages(selected, max_chars)
    if page > len(pages):
        raise ConfigError(f"page={page} is past the end: the selection has {len(pages)} pages")
    return Retrieval(
        artifact=artifact,
        selector=selector,
        text="\n".join(pages[page - 1]),
        page=page,
        pages=len(pages),
        total_lines=total,
        matches=matches,
    )


def _check_read(
    lines: object, regex: object, json_path: object, page: int, max_chars: int, context: int
) -> None:
    """Refuse :func:`read_artifact`'s arguments that are out of range or conflict."""
    chosen = [
        name
        for name, v in (("lines", lines), ("regex", regex), ("json_path", json_path))
        if v is not None
    ]
    if len(chosen) > 1:
        raise ConfigError(f"give at most one of lines, regex and json_path, not {chosen}")
    if isinstance(page, bool) or not isinstance(page, int) or page < 1:
        raise ConfigError(f"page must be an int >= 1, got {page!r}")
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise ConfigError(f"max_chars must be a positive int, got {max_chars!r}")
    if isinstance(context, bool) or not isinstance(context, int) or context < 0:
        raise ConfigError(f"context must be an int >= 0, got {context!r}")


def _grep(all_lines: list[str], regex: str, context: int) -> tuple[list[str], int]:
    """The lines matching ``regex`` with ``context`` lines around them, numbered as grep does
    (``12:`` a match, ``13-`` context, ``--`` between runs), and how many lines matched."""
    try:
        pattern = re.compile(regex)
    except re.error as exc:
        raise ConfigError(f"regex={regex!r} is not a valid regular expression: {exc}") from exc
    total = len(all_lines)
    hits = [i for i, line in enumerate(all_lines) if pattern.search(line)]
    shown: set[int] = set()
    for i in hits:
        shown.update(range(max(0, i - context), min(total, i + context + 1)))
    hit_set = set(hits)
    selected: list[str] = []
    previous = None
    for i in sorted(shown):
        if previous is not None and i != previous + 1:
            selected.append("--")
        selected.append(f"{i + 1}{':' if i in hit_set else '-'}{all_lines[i]}")
        previous = i
    return selected, len(hits)


def _json_select(text: str, json_path: str, artifact: str) -> tuple[list[str], int]:
    """What ``json_path`` finds in the JSON ``text``, indented, as lines; and how many values."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"json_path needs an artifact that is JSON; {artifact} is not ({exc.msg} at line "
            f"{exc.lineno}); use lines= or regex= instead"
        ) from exc
    found = list(_walk(document, _json_steps(json_path)))
    dumped = found[0] if len(found) == 1 else found
    return json.dumps(dumped, indent=1, ensure_ascii=False).split("\n"), len(found)
