"""``CodeIndex``: symbol units of a repository in an incremental SQLite index, ranked for a query.

The index keeps, per source file, its times, size, SHA-256, token count and parsed symbol
units. :meth:`CodeIndex.refresh` re-reads only files whose times or size changed, and re-parses
only those whose content hash changed; deleted files and files too large to be code leave it.

Ranking mixes named signals, each normalised to [0, 1] over the repository's files before it is
weighed (see :data:`DEFAULT_WEIGHTS`):

- ``symbol``: BM25 of the best symbol units of the file (code-aware terms, path terms): the best
  unit plus half of each of the next two;
- ``file``: BM25 of the whole file;
- ``mention``: the query names the file (``requests/models.py``, ``_pytest.capture``,
  ``capture.py``);
- ``definition``: the query names a function, class or type the file defines;
- ``tested``: the file is under test by one of the few test files that best match the query (a
  test names the code it exercises: ``tests/test_models.py`` tests ``models.py``, and what it
  imports);
- ``message``: the query quotes a message (an error, a warning) the file's string literals
  hold (see :mod:`ctxpack.code.literals`);
- ``graph``: PageRank over the import/call graph, personalised by the strongest files (where
  the code they import and call is defined);
- ``history``: when the root is a git work tree, the commits whose messages best match the
  query lend their score to the files they touched (see ``_history``; weighed 0 by default).

Test files, docs and examples are evidence, rarely answers: their score is scaled by
:data:`TEST_SHARE` unless the query names them (see :mod:`ctxpack.code.roles`). An issue
template's hidden HTML comments and a listing of the reporter's installed packages are left out
of the query (see :mod:`ctxpack.code._issue`).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._internal import forks
from .._internal.arguments import callback, keyword_checked, nonblank, string, strings
from .._internal.arguments import tokens as check_tokens
from .._internal.arguments import weights as check_weights
from .._internal.paths import read_confined
from ..errors import ConfigError
from ..signals.bm25 import InvertedIndex
from ..tokens import CounterLike, TokenCounter, get_counter
from ._files import resolve_root
from ._graph import CodeGraph, personalised_pagerank
from ._history import CommitHistory
from ._hits import FileHit, SearchHit
from ._issue import issue_words
from ._parallel import decoded
from ._storage import FileStore, RefreshStats, check_db
from ._symbols import ParsedFile, Symbol
from .literals import LiteralIndex
from .naming import QueryNames
from .roles import is_doc_path, is_test_path, outside_packages, tested_modules
from .semantic import file_summary, reciprocal_rank_fusion
from .terms import CountedTerms, code_terms

if TYPE_CHECKING:
    from ..signals.embeddings import Embedder

__all__ = ["DEFAULT_WEIGHTS", "TEST_SHARE", "CodeIndex", "FileHit", "SearchHit"]

DEFAULT_WEIGHTS: Mapping[str, float] = {
    "symbol": 1.0,
    "file": 0.5,
    "mention": 1.0,
    "definition": 0.5,
    "tested": 0.5,
    "graph": 0.1,
    "message": 0.5,
    "history": 0.0,
}
"""How much each ranking signal weighs (signals are normalised to [0, 1] first)."""

TEST_SHARE = 0.3
"""What the score of a test, doc or example file is scaled by, unless the query names it."""

# How many of the strongest files seed the personalised PageRank of the graph signal.
_GRAPH_SEEDS = 5
# A mention this sure names the file itself (its path or dotted module, not a bare file name).
_SURE_MENTION = 0.9
# A file's symbol score: its best unit plus this share of each of the next two.
_NEXT_UNITS = 0.5
# How many of the test files that best match the query lend their score to the code they test:
# a test further down is one of the many that merely share the query's words.
_EVIDENCE_TESTS = 5
# What the words of a query's first line weigh on top of their count, when more lines follow:
# an issue's title says in a few words what its body tells at length.
_TITLE_WEIGHT = 2.0
_BM25_K1 = 1.2
_BM25_B = 0.75


class CodeIndex(forks.Guarded):
    """A searchable index of a repository's symbol units, persisted in SQLite.

    Nothing is read until the first search (or :meth:`refresh`); later searches reuse what is
    in memory, and a new ``CodeIndex`` on the same root re-parses only files that changed.

    Args:
        root: The repository's root folder.
        db: The SQLite file (``":memory:"`` keeps nothing on disk). Default: a file per root in
            ``$XDG_CACHE_HOME/ctxpack/code/`` (``~/.cache`` when unset; memory if it fails).
        counter: How tokens are counted (see :func:`ctxpack.get_counter`; default cl100k_base).
        weights: Weights of the ranking signals, replacing :data:`DEFAULT_WEIGHTS` key by key.
        embedder: Optional: any ``list[str] -> array (n, d)`` callable (such as
            :class:`ctxpack.signals.embeddings.MiniLMEmbedder`). Files are then also ranked by
            the similarity of their summary (path, module docstring, names defined) to the
            query, and the two rankings are fused by reciprocal rank fusion (see
            :mod:`ctxpack.code.semantic`): a hit's ``score`` is then the fused score and its
            ``semantic`` signal the cosine similarity. Files are embedded at the first query.
        workers: Processes that parse a refresh's files when over 64 (1: none, this process
            does). Default: one per CPU, at most 8, but 1 under a script, which ``spawn`` runs
            again in each: a script passing it needs the ``if __name__ == "__main__":`` guard.

    Raises:
        ConfigError: ``root`` is not a folder, ``db`` is a folder or a file that is not an
            SQLite database, ``counter`` is no counter :func:`ctxpack.get_counter` takes,
            ``weights`` names an unknown signal, ``embedder`` is no plain one-argument
            callable, or ``workers`` is not >= 1.

    Example:
        >>> import pathlib, tempfile
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (root / "limits.py").write_text("def throttle(request):\\n    '''Rate limit.'''\\n")
        >>> _ = (root / "users.py").write_text("def profile(user):\\n    return user.name\\n")
        >>> [hit.path for hit in CodeIndex(root, db=":memory:").search("throttle requests", k=1)]
        ['limits.py']
    """

    @keyword_checked
    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        db: str | os.PathLike[str] | None = None,
        counter: CounterLike | None = None,
        weights: Mapping[str, float] | None = None,
        embedder: Embedder | None = None,
        workers: int | None = None,
    ) -> None:
        self.root = resolve_root(root)
        self.workers = (
            None if workers is None else check_tokens(workers, "workers", unit="processes")
        )
        self.embedder = embedder
        if embedder is not None:
            callback(embedder, "embedder", "list[str] -> array (n, d)", 1)
        self._vectors: Any = None
        self.db = check_db(db, self.root)
        weights = check_weights(weights, "weights")
        if unknown := set(weights) - set(DEFAULT_WEIGHTS):
            raise ConfigError(
                f"weights: unknown ranking signal(s) {sorted(unknown)}; the signals are "
                f"{sorted(DEFAULT_WEIGHTS)}"
            )
        self.weights = {**DEFAULT_WEIGHTS, **weights}
        self._counter = get_counter(None, counter)  # resolved now: a bad one fails here
        self._guard_state()  # one lock, which a fork waits for
        self._store: FileStore | None = None
        self._parsed: dict[str, ParsedFile] = {}
        self._tokens: dict[str, int] = {}
        self._terms: dict[str, CountedTerms] = {}
        self._grams: dict[str, str] = {}
        self._built = False

    def __repr__(self) -> str:
        return f"CodeIndex({str(self.root)!r}, db={self.db!r})"

    # ---- Storage ----

    @property
    def counter(self) -> TokenCounter:
        """The token counter of this index."""
        return self._counter

    def _file_store(self) -> FileStore:
        if self._store is None:
            self._store = FileStore(self.root, self.db, self.counter, self.workers)
        return self._store

    def close(self) -> None:
        """Close the SQLite connection (the next search opens it again)."""
        with self._lock:
            if self._store is not None:
                self._store.close()

    def __enter__(self) -> CodeIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Close the connection at the block's end, rather than when the index is collected
        (each open index holds the database file and its write-ahead log open)."""
        self.close()

    def refresh(self) -> RefreshStats:
        """Bring the index up to date with the files on disk; parse only what changed.

        Returns:
            How many files were parsed, removed, and left unchanged; the files too large.

        Raises:
            ConfigError: the root is no longer a folder (the index is left as it was).
            StoreError: the index's file cannot be read or written (read-only, or busy 30 s).
        """
        with self._lock:
            store = self._file_store()
            stats = store.refresh()
            self._parsed, self._tokens, self.db = store.parsed, store.tokens, store.db
            self._terms, self._grams = store.terms, store.grams
            if store.changed or not self._built:  # else what ranks stands: no rebuild
                self._build()
            # Read only when weighed: an index that ignores history spawns no git.
            commits = store.history() if self.weights["history"] else None
            self._history = CommitHistory(commits or (), self._paths)
            self._built = True
            return stats

    def _ensure(self) -> None:
        if not self._built:
            self.refresh()

    # ---- In-memory structures ----

    def _build(self) -> None:
        import numpy as np

        self._vectors = None
        self._paths: list[str] = sorted(self._parsed)
        self._units: list[Symbol] = []
        self._unit_file: list[int] = []
        self._file_terms: list[frozenset[str]] = []
        for position, path in enumerate(self._paths):
            self._units.extend(self._parsed[path].symbols)
            self._unit_file.extend([position] * len(self._parsed[path].symbols))
            self._file_terms.append(frozenset(self._terms[path][1][0]))
        self._unit_index = InvertedIndex()
        self._unit_index.extend_counted(u for p in self._paths for u in self._terms[p][0])
        self._file_index = InvertedIndex()
        self._file_index.extend_counted(self._terms[p][1] for p in self._paths)
        self._unit_file_array = np.array(self._unit_file, dtype=np.int64)
        self._graph = CodeGraph(self._parsed)
        self._names = QueryNames(self._paths, self._parsed, self._graph.definers)
        self._literals = LiteralIndex(self._paths, self._grams)
        self._position = at = {p: i for i, p in enumerate(self._paths)}
        scripts = outside_packages(self._paths, self.root)
        self._evidence = np.array(
            [is_test_path(p) or is_doc_path(p) or p in scripts for p in self._paths], dtype=bool
        )
        links = [
            (at[test], at[source], sureness)
            for test, sources in tested_modules(self._paths, self._graph.imports).items()
            for source, sureness in sources.items()
        ]
        self._edges = self._graph.edge_arrays(self._paths)
        self._test_links = (
            np.array([t for t, _, _ in links], dtype=np.int64),
            np.array([s for _, s, _ in links], dtype=np.int64),
            np.array([w for _, _, w in links], dtype=float),
        )

    # ---- Queries ----

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
        string(path, "path")
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
                since indexing), is gone or no regular file, or has several hard links.
        """
        self.parsed(path)
        # Checked again now, and as it is opened: the tree may have changed since it was indexed.
        return decoded(read_confined(self.root, path))

    def definitions(self, name: str) -> list[Symbol]:
        """Every symbol unit named ``name`` (where it is defined)."""
        string(name, "name")
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
        string(name, "name")
        with self._lock:
            self._ensure()
            return [u for u in self._units if name in u.references]

    def search(self, query: str, k: int = 10) -> list[SearchHit]:
        """The ``k`` symbol units that best match ``query``, best first.

        A unit's score is its own BM25 score (normalised) plus its file's ranking score, so that
        units of the files that matter come first.

        Raises:
            ConfigError: ``k`` is not positive, or ``query`` is empty.
        """
        check_tokens(k, "k", unit="hits")
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
            query: Free text: an issue, a task, identifiers, paths. When more lines follow,
                the first one (an issue's title) weighs more.
            k: How many files.
            exclude: Paths never to return.
            boost: Extra weight per query term, on top of the query's own terms (the loop adds
                the codebase's own words for what the task describes this way).
        """
        check_tokens(k, "k", unit="files")
        query = issue_words(nonblank(query, "query"))
        excluded = set(strings(exclude, "exclude", what="paths"))
        boost = check_weights(boost, "boost")
        with self._lock:
            self._ensure()
            return self._rank(query, k, excluded, boost)

    def _query_terms(self, query: str, boost: Mapping[str, float]) -> dict[str, float]:
        counts = Counter(code_terms(query))
        weighted = {t: 1.0 + math.log(c) for t, c in counts.items()}
        title, _, body = query.strip().partition("\n")
        if body.strip():
            for term in set(code_terms(title)):
                weighted[term] += _TITLE_WEIGHT
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
            "mention": self._names.mentions(query),
            "definition": _normalised(self._names.definitions(query)),
            "message": _normalised(self._literals.matches(query)),
            "history": _normalised(self._history.lent(weighted, k1=_BM25_K1, b=_BM25_B)),
        }
        score = sum(self.weights[name] * value for name, value in signals.items())
        signals["tested"] = self._tested(score)
        score = score + self.weights["tested"] * signals["tested"]
        # A test or an example the query names is what the task is about; any other is evidence.
        named = signals["mention"] >= _SURE_MENTION
        score = np.where(self._evidence & ~named, TEST_SHARE * score, score)
        graph = self._graph_signal(score) if self.weights["graph"] else np.zeros(n)
        signals["graph"] = graph
        score = score + self.weights["graph"] * graph
        if self.embedder is not None:
            signals["semantic"] = self._similarity(query)
            meaning = np.where(self._evidence & ~named, TEST_SHARE, 1.0) * signals["semantic"]
            score = reciprocal_rank_fusion([score, meaning])
        ranked = [int(i) for i in np.argsort(-score, kind="stable") if score[i] > 0]
        out: list[FileHit] = []
        top_unit = float(unit_scores.max(initial=0.0)) or 1.0
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
        """Per file, its matching units best first, and its symbol score: the best unit plus
        half of each of the next two (a file with several matching symbols beats one with a
        single lucky match)."""
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
        share = np.where(place == 0, 1.0, np.where(place < 3, _NEXT_UNITS, 0.0))
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
        from .._internal.vectors import embedded  # numpy's import only when it is needed

        assert self.embedder is not None
        if self._vectors is None:
            summaries = [file_summary(p, self._parsed[p]) for p in self._paths]
            self._vectors = embedded(self.embedder, summaries, "float32")
        wanted = embedded(self.embedder, [query], "float32")[0]
        return (self._vectors @ wanted).clip(min=0.0).astype(float)

    def _tested(self, score: Any) -> Any:
        """Per source file, the best score of one of the test files that best match the query
        (:data:`_EVIDENCE_TESTS` of them) among those that test it, times how surely."""
        import numpy as np

        tests, sources, sureness = self._test_links
        out = np.zeros(len(self._paths))
        if len(tests):
            candidates = np.unique(tests)
            best = candidates[np.argsort(-score[candidates], kind="stable")[:_EVIDENCE_TESTS]]
            kept = np.isin(tests, best) & (score[tests] > 0)
            np.maximum.at(out, sources[kept], score[tests[kept]] * sureness[kept])
        return _normalised(out)

    def _graph_signal(self, score: Any) -> Any:
        """PageRank over the import/call graph, personalised by the strongest files: where the
        code that the best-matching files import and call is defined."""
        import numpy as np

        seeds = [int(i) for i in np.argsort(-score, kind="stable")[:_GRAPH_SEEDS] if score[i] > 0]
        start = np.zeros(len(self._paths))
        start[seeds] = score[seeds]
        rank = personalised_pagerank(self._edges, start)
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

    def symbols_of(self, path: str) -> tuple[Symbol, ...]:
        """The symbol units of an indexed file, in line order."""
        return self.parsed(path).symbols

    def unit_scores(
        self, query: str, paths: Sequence[str], *, boost: Mapping[str, float] | None = None
    ) -> dict[str, list[tuple[Symbol, float]]]:
        """BM25 score of every symbol unit of ``paths`` for ``query`` (units with no match left
        out), best first per file."""
        words = issue_words(string(query, "query"))
        paths = strings(paths, "paths", what="paths")
        boost = check_weights(boost, "boost")
        with self._lock:
            self._ensure()
            scores = self._unit_index.bm25(self._query_terms(words, boost))
            wanted = {p: i for i, p in enumerate(self._paths) if p in set(paths)}
            out: dict[str, list[tuple[Symbol, float]]] = {p: [] for p in paths}
            for u, unit in enumerate(self._units):
                if self._paths[self._unit_file[u]] in wanted and scores[u] > 0:
                    out[unit.path].append((unit, float(scores[u])))
            for units in out.values():
                units.sort(key=lambda x: -x[1])
            return out

    def file_terms(self, path: str) -> frozenset[str]:
        """The index terms of an indexed file."""
        self.parsed(path)
        with self._lock:
            self._ensure()
            return self._file_terms[self._position[path]]

    def idf(self, term: str) -> float:
        """Inverse document frequency of a term over the indexed files."""
        string(term, "term")
        with self._lock:
            self._ensure()
            return self._file_index.idf(term)


def _normalised(values: Any) -> Any:
    top = float(values.max()) if len(values) else 0.0
    return values / top if top > 0 else values * 0.0
