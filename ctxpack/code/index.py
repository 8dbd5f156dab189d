"""``CodeIndex``: symbol units of a repository in an incremental SQLite index, ranked for a query.

The index keeps, per source file, its modification time, size, SHA-256, token count and parsed
symbol units. :meth:`CodeIndex.refresh` re-reads only files whose time or size changed, and
re-parses only those whose content hash changed; deleted files leave the index.

Ranking mixes named signals, each normalised to [0, 1] over the repository's files before it is
weighed (see :data:`DEFAULT_WEIGHTS`):

- ``symbol``: BM25 of the best symbol units of the file (code-aware terms, path terms);
- ``file``: BM25 of the whole file;
- ``mention``: the query names the file (``requests/models.py``, ``_pytest.capture``,
  ``capture.py``);
- ``definition``: the query names a function, class or type the file defines;
- ``tested``: the file is under test by a test file that matches the query (a test names the
  code it exercises: ``tests/test_models.py`` tests ``models.py``, and what it imports);
- ``graph``: PageRank over the import/call graph, personalised by the strongest files (where
  the code they import and call is defined).

Test files are evidence, rarely answers: their score is scaled by :data:`TEST_SHARE` unless the
query names them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from .._internal.paths import confined_file
from ..errors import ConfigError
from ..signals.bm25 import InvertedIndex
from ..tokens import CounterLike, TokenCounter, get_counter
from .files import language_of_path, list_files, resolve_root
from .graph import CodeGraph
from .roles import is_test_path, tested_modules
from .semantic import file_summary, reciprocal_rank_fusion
from .symbols import ParsedFile, Symbol, parse_source
from .terms import code_terms, identifiers, path_terms

if TYPE_CHECKING:
    from ..signals.embeddings import Embedder

__all__ = ["DEFAULT_WEIGHTS", "TEST_SHARE", "CodeIndex", "FileHit", "RefreshStats", "SearchHit"]

# Bump when what is stored per file changes: an index written by another version is rebuilt.
_SCHEMA = "3"

DEFAULT_WEIGHTS: Mapping[str, float] = {
    "symbol": 1.0,
    "file": 0.5,
    "mention": 1.0,
    "definition": 0.5,
    "tested": 0.5,
    "graph": 0.1,
}
"""How much each ranking signal weighs (signals are normalised to [0, 1] first)."""

TEST_SHARE = 0.3
"""What a test file's score is scaled by, unless the query names it."""

# How many of the strongest files seed the personalised PageRank of the graph signal.
_GRAPH_SEEDS = 5
# A mention this sure names the file itself (its path or dotted module, not a bare file name).
_SURE_MENTION = 0.9
_PAGERANK_STEPS = 20
_PAGERANK_DAMPING = 0.85
_BM25_K1 = 1.2
_BM25_B = 0.75


class SearchHit(BaseModel):
    """A symbol unit that matched a query.

    Attributes:
        path: Repository-relative path of its file.
        name: Symbol name (``"<module>"`` for lines outside any symbol).
        kind: ``function``, ``method``, ``class``, ``interface``, ``type``, ``impl``, ``module``.
        start_line: First line (1-based).
        end_line: Last line (inclusive).
        score: The unit's own BM25 score plus its file's score.
        text: The unit's source.
    """

    model_config = ConfigDict(frozen=True)

    path: str
    name: str
    kind: str
    start_line: int
    end_line: int
    score: float
    text: str


class FileHit(BaseModel):
    """A file ranked for a query, with the signals that put it there and its best units.

    Attributes:
        path: Repository-relative path.
        score: Weighted sum of the signals.
        signals: Each signal's normalised value (see :data:`DEFAULT_WEIGHTS`).
        units: Its symbol units that matched, best first.
    """

    model_config = ConfigDict(frozen=True)

    path: str
    score: float
    signals: dict[str, float]
    units: tuple[SearchHit, ...] = ()


class RefreshStats(BaseModel):
    """What :meth:`CodeIndex.refresh` did: files parsed anew, removed, and left as they were."""

    model_config = ConfigDict(frozen=True)

    parsed: int
    removed: int
    unchanged: int


def default_db_path(root: Path) -> Path:
    """Where an index lives when no ``db`` is given: the user's cache folder, one file per root."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    digest = hashlib.sha256(str(root).encode("utf-8")).hexdigest()[:16]
    return Path(cache) / "ctxpack" / "code" / f"{root.name}-{digest}.sqlite"


class CodeIndex:
    """A searchable index of a repository's symbol units, persisted in SQLite.

    Nothing is read until the first search (or :meth:`refresh`); later searches reuse what is
    in memory, and a new ``CodeIndex`` on the same root re-parses only files that changed.

    Args:
        root: The repository's root folder.
        db: The SQLite file (``":memory:"`` keeps nothing on disk). Default: a file per root in
            ``$XDG_CACHE_HOME/ctxpack/code/`` (``~/.cache`` when unset).
        counter: How tokens are counted (see :func:`ctxpack.get_counter`; default cl100k_base).
        weights: Weights of the ranking signals, replacing :data:`DEFAULT_WEIGHTS` key by key.
        embedder: Optional: any ``list[str] -> array (n, d)`` callable (such as
            :class:`ctxpack.signals.embeddings.MiniLMEmbedder`). Files are then also ranked by
            the similarity of their summary (path, module docstring, names defined) to the
            query, and the two rankings are fused by reciprocal rank fusion (see
            :mod:`ctxpack.code.semantic`): a hit's ``score`` is then the fused score and its
            ``semantic`` signal the cosine similarity. Files are embedded at the first query.

    Raises:
        ConfigError: ``root`` is not a folder, or ``weights`` names an unknown signal.

    Example:
        >>> import pathlib, tempfile
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (root / "limits.py").write_text("def throttle(request):\\n    '''Rate limit.'''\\n")
        >>> _ = (root / "users.py").write_text("def profile(user):\\n    return user.name\\n")
        >>> [hit.path for hit in CodeIndex(root, db=":memory:").search("throttle requests", k=1)]
        ['limits.py']
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        db: str | os.PathLike[str] | None = None,
        counter: CounterLike | None = None,
        weights: Mapping[str, float] | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.root = resolve_root(root)
        self.embedder = embedder
        self._vectors: Any = None
        self.db = str(db) if db is not None else str(default_db_path(self.root))
        unknown = set(weights or {}) - set(DEFAULT_WEIGHTS)
        if unknown:
            raise ConfigError(
                f"unknown ranking signal(s) {sorted(unknown)}; the signals are "
                f"{sorted(DEFAULT_WEIGHTS)}"
            )
        self.weights = {**DEFAULT_WEIGHTS, **(weights or {})}
        self._counter_arg = counter
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._parsed: dict[str, ParsedFile] = {}
        self._tokens: dict[str, int] = {}
        self._built = False

    def __repr__(self) -> str:
        return f"CodeIndex({str(self.root)!r}, db={self.db!r})"

    # ----------------------------------------------------------------------------------------
    # Storage

    @property
    def counter(self) -> TokenCounter:
        """The token counter of this index."""
        return get_counter(None, self._counter_arg)

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            if self.db != ":memory:":
                Path(self.db).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.db, check_same_thread=False)
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            counter = self.counter.name
            crow = conn.execute("SELECT value FROM meta WHERE key = 'counter'").fetchone()
            if row is None or row[0] != _SCHEMA or crow is None or crow[0] != counter:
                conn.execute("DROP TABLE IF EXISTS files")
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (_SCHEMA,))
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('counter', ?)", (counter,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, mtime_ns INTEGER,"
                " size INTEGER, sha256 TEXT, tokens INTEGER, parsed TEXT)"
            )
            conn.commit()
            self._conn = conn
        return self._conn

    def close(self) -> None:
        """Close the SQLite connection (the next search opens it again)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def refresh(self) -> RefreshStats:
        """Bring the index up to date with the files on disk; parse only what changed.

        Returns:
            How many files were parsed, removed, and left unchanged.
        """
        with self._lock:
            conn = self._connect()
            stored = {
                row[0]: (row[1], row[2], row[3])
                for row in conn.execute("SELECT path, mtime_ns, size, sha256 FROM files")
            }
            current = list_files(self.root)
            parsed = unchanged = 0
            fresh: dict[str, ParsedFile] = {}
            tokens: dict[str, int] = {}
            for rel in current:
                full = self.root / rel
                try:
                    stat = full.stat()
                except OSError:
                    continue
                old = stored.get(rel)
                if old is not None and old[0] == stat.st_mtime_ns and old[1] == stat.st_size:
                    if rel in self._parsed:
                        fresh[rel] = self._parsed[rel]
                        tokens[rel] = self._tokens[rel]
                    else:
                        fresh[rel], tokens[rel] = self._load_row(conn, rel)
                    unchanged += 1
                    continue
                raw = full.read_bytes()
                digest = hashlib.sha256(raw).hexdigest()
                if old is not None and old[2] == digest:
                    conn.execute(
                        "UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?",
                        (stat.st_mtime_ns, stat.st_size, rel),
                    )
                    fresh[rel], tokens[rel] = self._load_row(conn, rel)
                    unchanged += 1
                    continue
                text = raw.decode("utf-8", errors="replace")
                language = language_of_path(rel) or "text"
                pf = parse_source(rel, language, text)
                count = self.counter.count(text)
                conn.execute(
                    "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)",
                    (rel, stat.st_mtime_ns, stat.st_size, digest, count, pf.model_dump_json()),
                )
                fresh[rel], tokens[rel] = pf, count
                parsed += 1
            gone = set(stored) - set(fresh)
            conn.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in sorted(gone)])
            conn.commit()
            self._parsed, self._tokens = fresh, tokens
            self._build()
            self._built = True
            return RefreshStats(parsed=parsed, removed=len(gone), unchanged=unchanged)

    def _load_row(self, conn: sqlite3.Connection, rel: str) -> tuple[ParsedFile, int]:
        row = conn.execute("SELECT parsed, tokens FROM files WHERE path = ?", (rel,)).fetchone()
        return ParsedFile.model_validate_json(row[0]), int(row[1])

    def _ensure(self) -> None:
        if not self._built:
            self.refresh()

    # ----------------------------------------------------------------------------------------
    # In-memory structures

    def _build(self) -> None:
        import numpy as np

        self._vectors = None
        self._paths: list[str] = sorted(self._parsed)
        self._units: list[Symbol] = []
        self._unit_file: list[int] = []
        self._unit_index = InvertedIndex()
        self._file_index = InvertedIndex()
        self._file_terms: list[set[str]] = []
        for position, path in enumerate(self._paths):
            pf = self._parsed[path]
            where = path_terms(path)
            file_terms: list[str] = list(where)
            for unit in pf.symbols:
                name_terms = code_terms(unit.name) if unit.kind != "module" else []
                parent_terms = code_terms(unit.parent) if unit.parent else []
                unit_terms = [*code_terms(unit.text), *name_terms, *parent_terms, *where]
                self._units.append(unit)
                self._unit_file.append(position)
                self._unit_index.append_terms("", unit_terms)
                file_terms.extend(unit_terms)
            self._file_index.append_terms("", file_terms)
            self._file_terms.append(set(file_terms))
        self._unit_file_array = np.array(self._unit_file, dtype=np.int64)
        self._graph = CodeGraph(self._parsed)
        # Where each method is defined, by its class: ``Expression.compile`` in a query names
        # one file where ``compile`` alone names dozens.
        self._members: dict[str, set[str]] = {}
        for path, pf in self._parsed.items():
            for unit in pf.symbols:
                if unit.parent:
                    self._members.setdefault(f"{unit.parent}.{unit.name}", set()).add(path)
        at = {p: i for i, p in enumerate(self._paths)}
        self._is_test = np.array([is_test_path(p) for p in self._paths], dtype=bool)
        links = [
            (at[test], at[source], sureness)
            for test, sources in tested_modules(self._paths, self._graph.imports).items()
            for source, sureness in sources.items()
        ]
        self._edges = _graph_edges(self._graph, at)
        self._test_links = (
            np.array([t for t, _, _ in links], dtype=np.int64),
            np.array([s for _, s, _ in links], dtype=np.int64),
            np.array([w for _, _, w in links], dtype=float),
        )
        # Every way a query can name a file, looked up by the path-like pieces of the query.
        self._named_by: dict[str, list[tuple[int, float]]] = {}
        names = _mention_names(self._paths)
        for i, path in enumerate(self._paths):
            for name, strength in names[path]:
                self._named_by.setdefault(name, []).append((i, strength))

    # ----------------------------------------------------------------------------------------
    # Queries

    @property
    def files(self) -> tuple[str, ...]:
        """The indexed files (repository-relative, sorted)."""
        with self._lock:
            self._ensure()
            return tuple(self._paths)

    @property
    def graph(self) -> CodeGraph:
        """The import/call graph of the indexed files."""
        with self._lock:
            self._ensure()
            return self._graph

    def parsed(self, path: str) -> ParsedFile:
        """The parsed form of one indexed file.

        Raises:
            ConfigError: ``path`` is not an indexed file.
        """
        with self._lock:
            self._ensure()
            try:
                return self._parsed[path]
            except KeyError:
                raise ConfigError(
                    f"{path!r} is not an indexed source file of {self.root}; "
                    "paths are repository-relative with '/' (see CodeIndex.files)"
                ) from None

    def tokens(self, path: str | None = None) -> int:
        """Tokens of one indexed file, or of every indexed file when ``path`` is ``None``."""
        with self._lock:
            self._ensure()
            if path is None:
                return sum(self._tokens.values())
            self.parsed(path)
            return self._tokens[path]

    def read(self, path: str) -> str:
        """The current text of an indexed file.

        Raises:
            ConfigError: ``path`` is not an indexed file.
            WorkspacePathError: the file now leads outside the root (a symlink swapped in
                since indexing) or has several hard links.
        """
        self.parsed(path)
        # Checked again now: the tree may have changed since it was indexed.
        return confined_file(self.root, path).read_text(encoding="utf-8", errors="replace")

    def definitions(self, name: str) -> list[Symbol]:
        """Every symbol unit named ``name`` (where it is defined)."""
        with self._lock:
            self._ensure()
            return [
                s
                for path in sorted(self._graph.definers.get(name, ()))
                for s in self._parsed[path].symbols
                if s.name == name
            ]

    def callers(self, name: str) -> list[Symbol]:
        """Every symbol unit that calls or uses ``name``: the blast radius of changing it."""
        with self._lock:
            self._ensure()
            return [u for u in self._units if name in u.references]

    def search(self, query: str, k: int = 10) -> list[SearchHit]:
        """The ``k`` symbol units that best match ``query``, best first.

        A unit's score is its own BM25 score (normalised) plus its file's ranking score, so that
        units of the files that matter come first.

        Raises:
            ConfigError: ``k`` is not positive.
        """
        if k < 1:
            raise ConfigError(f"k must be at least 1, got {k}")
        files = self.rank_files(query, k=max(k, 20))
        hits = [unit for hit in files for unit in hit.units]
        hits.sort(key=lambda h: -h.score)
        return hits[:k]

    def rank_files(
        self,
        query: str,
        k: int = 10,
        *,
        exclude: Iterable[str] = (),
        boost: Mapping[str, float] | None = None,
    ) -> list[FileHit]:
        """The ``k`` files that best match ``query``, best first, with their signals.

        Args:
            query: Free text: an issue, a task, identifiers, paths.
            k: How many files.
            exclude: Paths never to return.
            boost: Extra weight per query term, on top of the query's own terms (the loop adds
                the codebase's own words for what the task describes this way).
        """
        if k < 1:
            raise ConfigError(f"k must be at least 1, got {k}")
        with self._lock:
            self._ensure()
            return self._rank(query, k, set(exclude), boost or {})

    def _query_terms(self, query: str, boost: Mapping[str, float]) -> dict[str, float]:
        counts = Counter(code_terms(query))
        weighted = {t: 1.0 + math.log(c) for t, c in counts.items()}
        for term, weight in boost.items():
            weighted[term] = weighted.get(term, 0.0) + weight
        return weighted

    def _rank(
        self, query: str, k: int, exclude: set[str], boost: Mapping[str, float]
    ) -> list[FileHit]:
        import numpy as np

        n = len(self._paths)
        if n == 0:
            return []
        weighted = self._query_terms(query, boost)
        unit_scores = self._unit_index.bm25(weighted, k1=_BM25_K1, b=_BM25_B)
        file_scores = self._file_index.bm25(weighted, k1=_BM25_K1, b=_BM25_B)
        best, per_file = self._best_units(unit_scores)
        signals = {
            "symbol": _normalised(best),
            "file": _normalised(file_scores),
            "mention": self._mentions(query),
            "definition": self._defined(query),
        }
        score = sum(self.weights[name] * value for name, value in signals.items())
        signals["tested"] = self._tested(score)
        score = score + self.weights["tested"] * signals["tested"]
        # A test file the query names is what the task is about; any other is evidence only.
        named = signals["mention"] >= _SURE_MENTION
        score = np.where(self._is_test & ~named, TEST_SHARE * score, score)
        graph = self._graph_signal(score) if self.weights["graph"] else np.zeros(n)
        signals["graph"] = graph
        score = score + self.weights["graph"] * graph
        if self.embedder is not None:
            signals["semantic"] = self._similarity(query)
            meaning = np.where(self._is_test & ~named, TEST_SHARE, 1.0) * signals["semantic"]
            score = reciprocal_rank_fusion([score, meaning])
        ranked = [int(i) for i in np.argsort(-score, kind="stable") if score[i] > 0]
        out: list[FileHit] = []
        top_unit = float(unit_scores.max()) or 1.0
        for i in ranked:
            path = self._paths[i]
            if path in exclude:
                continue
            matched = tuple(
                self._unit_hit(u, float(score[i] + unit_scores[u] / top_unit))
                for u in per_file.get(i, ())[:5]
            )
            out.append(
                FileHit(
                    path=path,
                    score=float(score[i]),
                    signals={name: float(value[i]) for name, value in signals.items()},
                    units=matched,
                )
            )
            if len(out) == k:
                break
        return out

    def _best_units(self, unit_scores: Any) -> tuple[Any, dict[int, list[int]]]:
        """Per file, its matching units best first, and its symbol score: the best unit plus a
        little of the next two (a file with several matching symbols beats one with a single
        lucky match)."""
        import numpy as np

        best = np.zeros(len(self._paths))
        hit = np.flatnonzero(unit_scores > 0)
        if not len(hit):
            return best, {}
        files = self._unit_file_array[hit]
        # By file, then best unit first (ties in unit order, for a stable result).
        order = np.lexsort((hit, -unit_scores[hit], files))
        hit, files = hit[order], files[order]
        firsts = np.flatnonzero(np.r_[True, files[1:] != files[:-1]])
        place = np.arange(len(hit)) - np.repeat(firsts, np.diff(np.r_[firsts, len(hit)]))
        share = np.where(place == 0, 1.0, np.where(place < 3, 0.25, 0.0))
        np.add.at(best, files, share * unit_scores[hit])
        ends = np.r_[firsts[1:], len(hit)]
        units = hit.tolist()
        per_file = {
            f: units[a:b]
            for f, a, b in zip(files[firsts].tolist(), firsts.tolist(), ends.tolist(), strict=True)
        }
        return best, per_file

    def _similarity(self, query: str) -> Any:
        """Cosine similarity of the query to each file's summary (0 for opposite meanings)."""
        import numpy as np

        assert self.embedder is not None
        if self._vectors is None:
            summaries = [file_summary(p, self._parsed[p]) for p in self._paths]
            self._vectors = _unit_rows(np.asarray(self.embedder(summaries), dtype=np.float32))
        wanted = _unit_rows(np.asarray(self.embedder([query]), dtype=np.float32))[0]
        return np.maximum(self._vectors @ wanted, 0.0).astype(float)

    def _tested(self, score: Any) -> Any:
        """Per source file, the best score of a test file that tests it, times how surely."""
        import numpy as np

        tests, sources, sureness = self._test_links
        out = np.zeros(len(self._paths))
        if len(tests):
            np.maximum.at(out, sources, score[tests] * sureness)
        return _normalised(out)

    def _graph_signal(self, score: Any) -> Any:
        """PageRank over the import/call graph, personalised by the files' scores: where the
        code that the best-matching files import and call is defined."""
        import numpy as np

        n = len(self._paths)
        src, dst, share = self._edges
        seeds = [int(i) for i in np.argsort(-score, kind="stable")[:_GRAPH_SEEDS] if score[i] > 0]
        start = np.zeros(n)
        start[seeds] = score[seeds]
        if not len(src) or not seeds:
            return np.zeros(n)
        start /= start.sum()
        rank = start.copy()
        for _ in range(_PAGERANK_STEPS):
            flow = np.zeros(n)
            np.add.at(flow, dst, rank[src] * share)
            rank = (1 - _PAGERANK_DAMPING) * start + _PAGERANK_DAMPING * flow
        # The seeds' own mass is their score already; the signal is what flows elsewhere.
        rank[seeds] = 0.0
        return _normalised(rank)

    def _unit_hit(self, u: int, score: float) -> SearchHit:
        unit = self._units[u]
        return SearchHit(
            path=self._paths[self._unit_file[u]],
            name=unit.name,
            kind=unit.kind,
            start_line=unit.start_line,
            end_line=unit.end_line,
            score=score,
            text=unit.text,
        )

    def _mentions(self, query: str) -> Any:
        import numpy as np

        out = np.zeros(len(self._paths))
        for name in _pieces(query.lower()) & self._named_by.keys():
            for i, strength in self._named_by[name]:
                out[i] = max(out[i], strength)
        return out

    def _defined(self, query: str) -> Any:
        import numpy as np

        out = np.zeros(len(self._paths))
        position = {p: i for i, p in enumerate(self._paths)}
        # Each name once, in the query's order (a set's order would follow the hash seed, and
        # with it the floating-point sum below).
        for name in dict.fromkeys(identifiers(query)):
            # Short or plain words ("get", "data") are prose as often as code.
            if len(name) < 4 or (name.islower() and "_" not in name):
                continue
            definers = self._graph.definers.get(name)
            if not definers:
                continue
            for path in definers:
                out[position[path]] += 1.0 / len(definers)
        for name in dict.fromkeys(_QUALIFIED.findall(query)):
            for pair in _member_pairs(name):
                members = self._members.get(pair)
                if members:
                    for path in members:
                        out[position[path]] += 1.0 / len(members)
        return _normalised(out)

    def symbols_of(self, path: str) -> tuple[Symbol, ...]:
        """The symbol units of an indexed file, in line order."""
        return self.parsed(path).symbols

    def unit_scores(
        self, query: str, paths: Sequence[str], *, boost: Mapping[str, float] | None = None
    ) -> dict[str, list[tuple[Symbol, float]]]:
        """BM25 score of every symbol unit of ``paths`` for ``query`` (units with no match left
        out), best first per file."""
        with self._lock:
            self._ensure()
            scores = self._unit_index.bm25(self._query_terms(query, boost or {}))
            wanted = {p: i for i, p in enumerate(self._paths) if p in set(paths)}
            out: dict[str, list[tuple[Symbol, float]]] = {p: [] for p in paths}
            for u, unit in enumerate(self._units):
                if self._paths[self._unit_file[u]] in wanted and scores[u] > 0:
                    out[unit.path].append((unit, float(scores[u])))
            for units in out.values():
                units.sort(key=lambda x: -x[1])
            return out

    def file_terms(self, path: str) -> set[str]:
        """The index terms of an indexed file."""
        with self._lock:
            self._ensure()
            return self._file_terms[self._paths.index(path)]

    def idf(self, term: str) -> float:
        """Inverse document frequency of a term over the indexed files."""
        with self._lock:
            self._ensure()
            return self._file_index.idf(term)


def _graph_edges(graph: CodeGraph, position: Mapping[str, int]) -> tuple[Any, Any, Any]:
    """The graph's links from a file to what it imports and calls, as arrays of source, target
    and the share of the source's weight each link carries."""
    import numpy as np

    out: dict[tuple[int, int], float] = {}
    for path, targets in graph.imports.items():
        for target in targets:
            out[position[path], position[target]] = 1.0
    for path, weights in graph.calls.items():
        for target, weight in weights.items():
            key = (position[path], position[target])
            out[key] = out.get(key, 0.0) + weight
    pairs = sorted(out)
    src = np.array([a for a, _ in pairs], dtype=np.int64)
    dst = np.array([b for _, b in pairs], dtype=np.int64)
    strength = np.array([out[k] for k in pairs], dtype=float)
    total = np.zeros(len(position))
    np.add.at(total, src, strength)
    share = strength / total[src] if len(pairs) else strength
    return src, dst, share


_QUALIFIED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def _member_pairs(dotted: str) -> list[str]:
    """The ``Class.member`` pairs of a dotted name: ``a.Model.save`` gives ``Model.save`` (and
    ``a.Model``, which names nothing unless ``a`` is a class)."""
    parts = dotted.split(".")
    return [f"{a}.{b}" for a, b in itertools.pairwise(parts)]


def _unit_rows(matrix: Any) -> Any:
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


def _normalised(values: Any) -> Any:
    top = float(values.max()) if len(values) else 0.0
    return values / top if top > 0 else values * 0.0


_PATHLIKE = re.compile(r"[\w./-]+")
_SEPARATORS = "/.-"
# A longer path-like word is cut at this many separators at most (a URL, a long dotted name).
_MAX_SEPARATORS = 12


def _pieces(text: str) -> set[str]:
    """Every run of a path-like word between separators (``/``, ``.``, ``-``) or its ends:
    ``src/_pytest/capture.py`` gives ``capture.py``, ``_pytest/capture.py``, ``_pytest`` ...

    Example:
        >>> sorted(_pieces("see a/b.py"))
        ['a', 'a/b', 'a/b.py', 'b', 'b.py', 'py', 'see']
    """
    out: set[str] = set()
    for word in _PATHLIKE.findall(text):
        cuts = [k for k, c in enumerate(word) if c in _SEPARATORS][:_MAX_SEPARATORS]
        starts = [0, *(k + 1 for k in cuts)]
        ends = [*cuts, len(word)]
        for i in starts:
            for j in ends:
                if j > i:
                    out.add(word[i:j])
    return out


def _mention_names(paths: Sequence[str]) -> dict[str, list[tuple[str, float]]]:
    """The ways a query can name each file, with how surely it names that one: the path, the
    dotted module, the file name (sure only when no other file has it)."""
    basenames = Counter(p.rsplit("/", 1)[-1].lower() for p in paths)
    out: dict[str, list[tuple[str, float]]] = {}
    for path in paths:
        lowered = path.lower()
        names: list[tuple[str, float]] = [(lowered, 1.0)]
        parts = lowered.split("/")
        for i in range(1, len(parts) - 1):
            names.append(("/".join(parts[i:]), 1.0))
        stem = lowered.rsplit(".", 1)[0]
        dotted = stem.replace("/", ".")
        if dotted.endswith(".__init__"):
            dotted = dotted[: -len(".__init__")]
        dparts = dotted.split(".")
        for i in range(len(dparts) - 1):
            if len(dparts) - i >= 2:
                names.append((".".join(dparts[i:]), 0.9))
        base = parts[-1]
        if not base.startswith("__init__"):
            names.append((base, 0.8 / basenames[base]))
        out[path] = names
    return out


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
