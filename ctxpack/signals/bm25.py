"""BM25 over a conversation: an inverted index that grows with it, and a pool of indexes.

Texts are analysed into terms by :func:`ctxpack.signals.lexical.terms`.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from .._internal import forks
from ..caches import register
from .lexical import Language, terms

__all__: list[str] = []


def bm25_scores(
    query: Sequence[str],
    documents: Sequence[Sequence[str]],
    *,
    k1: float = 1.2,
    b: float = 0.75,
) -> list[float]:
    """Okapi BM25 score of every document for ``query`` (both given as term sequences).

    Repeated query terms count once. Uses the non-negative IDF ``log(1 + (N - df + 0.5) /
    (df + 0.5))`` so that a term present everywhere scores ~0 rather than negative. The same
    formula as :meth:`InvertedIndex.bm25`, through a throw-away index.
    """
    index = InvertedIndex()
    for doc in documents:
        index.append_terms("", doc)
    return [float(x) for x in index.bm25(query, k1=k1, b=b)]


class InvertedIndex:
    """A BM25 index over a list of texts that grows with the conversation.

    :meth:`sync` makes the index describe exactly ``texts``: it keeps the longest prefix it
    already indexed and only analyses what changed after it, so packing the same history with a
    new question costs the question, not the history. Texts are analysed as ``language``.
    """

    def __init__(self, language: Language = "en") -> None:
        self.language: Language = language
        self.texts: list[str] = []
        self._doc_terms: list[dict[str, int]] = []
        self._lengths = array("d")
        self._postings: dict[str, tuple[array[int], array[int]]] = {}
        self._total_length = 0.0

    def __len__(self) -> int:
        return len(self.texts)

    def __contains__(self, term: object) -> bool:
        """Whether some indexed text holds ``term``."""
        return term in self._postings

    def terms_at(self, position: int) -> Mapping[str, int]:
        """The terms of the text at ``position``, with how often it holds each."""
        return self._doc_terms[position]

    def idf(self, term: str) -> float:
        """The inverse document frequency :meth:`bm25` gives ``term`` in this index."""
        entry = self._postings.get(term)
        return float(_idf(len(self.texts), 0 if entry is None else len(entry[0])))

    def common_prefix(self, texts: Sequence[str]) -> int:
        """How many leading texts the index shares with ``texts``."""
        n = min(len(texts), len(self.texts))
        if n and self.texts[:n] == list(texts[:n]):
            return n
        # The common case on a chatbot's next turn: only the last message (the question) changed.
        if n > 1 and self.texts[: n - 1] == list(texts[: n - 1]):
            return n - 1
        lo, hi = 0, n - 1
        # Binary search on prefix equality: histories usually share a long prefix.
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.texts[:mid] == list(texts[:mid]):
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _truncate(self, n: int) -> None:
        touched: set[str] = set()
        for doc in range(n, len(self.texts)):
            touched.update(self._doc_terms[doc])
            self._total_length -= self._lengths[doc]
        for term in touched:
            docs, counts = self._postings[term]
            # Postings are appended in document order, so the removed ones sit at the end.
            while docs and docs[-1] >= n:
                docs.pop()
                counts.pop()
            if not docs:
                del self._postings[term]
        del self.texts[n:]
        del self._doc_terms[n:]
        del self._lengths[n:]

    def sync(self, texts: Sequence[str]) -> None:
        """Make the index cover exactly ``texts`` (in order)."""
        keep = self.common_prefix(texts)
        if keep < len(self.texts):
            self._truncate(keep)
        for position in range(keep, len(texts)):
            self.append_terms(texts[position], terms(texts[position], self.language))

    def append_terms(self, text: str, doc_terms: Sequence[str]) -> None:
        """Index one more document, given its text (for :meth:`sync`) and its terms."""
        position = len(self.texts)
        tf: dict[str, int] = {}
        for term in doc_terms:
            tf[term] = tf.get(term, 0) + 1
        length = float(len(doc_terms))
        self.texts.append(text)
        self._doc_terms.append(tf)
        self._lengths.append(length)
        self._total_length += length
        for term, count in tf.items():
            entry = self._postings.get(term)
            if entry is None:
                entry = (array("i"), array("i"))
                self._postings[term] = entry
            entry[0].append(position)
            entry[1].append(count)

    def extend_counted(self, documents: Iterable[tuple[dict[str, int], int]]) -> None:
        """Index many more documents at once, each given as its term counts (kept by the index,
        not copied) and its length in terms, their texts left empty: the index
        :meth:`append_terms` would build one by one, with the postings gathered by one sort
        instead of an append per term of each text."""
        start = len(self.texts)
        keys: list[str] = []
        counts: list[int] = []
        sizes = array("q")
        for tf, length in documents:
            self._doc_terms.append(tf)
            self._lengths.append(float(length))
            self._total_length += float(length)
            keys.extend(tf)
            counts.extend(tf.values())
            sizes.append(len(tf))
        self.texts.extend([""] * len(sizes))
        if not keys:
            return
        ids = dict.fromkeys(keys, 0)
        for number, term in enumerate(ids):
            ids[term] = number
        term_ids = np.fromiter(map(ids.__getitem__, keys), dtype=np.int64, count=len(keys))
        # Stable: each term's postings stay in document order, as appends leave them.
        order = np.argsort(term_ids, kind="stable")
        docs = np.repeat(
            np.arange(start, start + len(sizes), dtype=np.int32), np.frombuffer(sizes, np.int64)
        )[order]
        tf_sorted = np.array(counts, dtype=np.int32)[order]
        ends = np.cumsum(np.bincount(term_ids, minlength=len(ids))).tolist()
        docs_bytes, tf_bytes = docs.tobytes(), tf_sorted.tobytes()
        width = docs.itemsize
        begin = 0
        for term, end in zip(ids, ends, strict=True):
            entry = self._postings.get(term)
            if entry is None:
                entry = (array("i"), array("i"))
                self._postings[term] = entry
            entry[0].frombytes(docs_bytes[begin * width : end * width])
            entry[1].frombytes(tf_bytes[begin * width : end * width])
            begin = end

    def bm25(
        self,
        query: Sequence[str] | Mapping[str, float],
        *,
        k1: float = 1.2,
        b: float = 0.75,
        spread: Sequence[float] = (),
        silent: Sequence[int] = (),
    ) -> npt.NDArray[Any]:
        """BM25 score of every indexed text for ``query`` (see :func:`bm25_scores`).

        Args:
            query: Terms, or terms with weights (a weighted term adds ``weight`` times its score).
            k1: Term-frequency saturation.
            b: Length normalisation.
            spread: Document expansion: each text also counts ``spread[d - 1]`` times the terms
                (and length) of the texts ``d`` positions before and after it. In a dialogue
                the answer often only makes sense with the question next to it.
            silent: Positions whose terms are not lent to their neighbours (the current
                question: it would otherwise make the turn just before it match every query).
        """
        n = len(self.texts)
        scores = np.zeros(n)
        if n == 0:
            return scores
        lengths = np.frombuffer(self._lengths, dtype=np.float64)
        if spread:
            lengths = _spread(lengths, spread, silent)
        avg = float(lengths.mean()) or 1.0
        norm = k1 * (1.0 - b + b * lengths / avg)
        # Each term once, in the order given: a set's order changes from one process to the next
        # (string hashing), and with it the last digits of the sums.
        weighted = (
            query.items() if isinstance(query, Mapping) else dict.fromkeys(query, 1.0).items()
        )
        found = [(self._postings[t], w) for t, w in weighted if w and t in self._postings]
        if not found:
            return scores
        # Every term at once: each posting counts for its text and, with document expansion,
        # lends ``spread[d - 1]`` of its count to the texts d away; one bincount sums the counts
        # per (term, text).
        # array.extend copies in C: cheaper than a numpy view of each posting list to concatenate.
        docs_buffer, tf_buffer = array("i"), array("i")
        for (term_docs, term_tf), _ in found:
            docs_buffer.extend(term_docs)
            tf_buffer.extend(term_tf)
        docs = np.frombuffer(docs_buffer, dtype=np.int32)
        tf = np.frombuffer(tf_buffer, dtype=np.int32)
        df = np.array([len(entry[0]) for entry, _ in found])
        idfs = np.array([w for _, w in found]) * _idf(n, df)
        row = np.repeat(np.arange(len(found)), df)
        # Each term's row has ``reach`` spare columns on both sides, so a count lent past either
        # end of the conversation lands there instead of being masked out first.
        reach = len(spread)
        width = n + 2 * reach
        at = row * width + reach + docs
        keys, counts = [at], [tf.astype(np.float64)]
        if reach:
            muted = np.zeros(n, dtype=bool)
            muted[list(silent)] = True
            lend = ~muted[docs]
            lenders, lent = at[lend], tf[lend].astype(np.float64)
            for d, share in enumerate(spread, start=1):
                shared = share * lent
                keys += [lenders - d, lenders + d]
                counts += [shared, shared]
        expanded = np.bincount(
            np.concatenate(keys), np.concatenate(counts), minlength=len(found) * width
        ).reshape(len(found), width)[:, reach : reach + n]
        if norm.min() > 0:
            saturation = expanded / (expanded + norm)
        else:
            # Only where a count is: an empty text with b = 1 has a zero norm.
            saturation = np.divide(
                expanded, expanded + norm, out=np.zeros_like(expanded), where=expanded > 0
            )
        scores += (idfs * (k1 + 1.0)) @ saturation
        return scores


def _idf(n: int, df: Any) -> Any:
    """BM25's non-negative IDF of terms held by ``df`` of ``n`` texts (numbers or arrays)."""
    return np.log(1.0 + (n - df + 0.5) / (df + 0.5))


def _spread(
    values: npt.NDArray[np.float64], weights: Sequence[float], silent: Sequence[int]
) -> npt.NDArray[np.float64]:
    """``values`` plus ``weights[d - 1]`` times the values ``d`` positions away on each side."""
    lent = values.copy()
    if len(silent):
        lent[list(silent)] = 0.0
    out: npt.NDArray[np.float64] = values.copy()
    for d, weight in enumerate(weights, start=1):
        if d >= len(values):
            break
        out[d:] += weight * lent[:-d]
        out[:-d] += weight * lent[d:]
    return out


class IndexPool:
    """The indexes of the conversations packed last, each lent to one caller at a time.

    :meth:`borrow` hands out the index that shares the longest prefix with the conversation
    (found by its first texts, then checked text by text; at least half of the index), synced
    to it; no other caller can
    use that index until it is given back. Two conversations that begin alike each keep an index
    of their own, and two threads packing the same conversation at once each get one (the
    second builds a new one). At most ``size`` indexes are kept, the least recently used
    forgotten first.
    """

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self._free: list[InvertedIndex] = []  # least recently used first
        self._lock = forks.freed_in_child(threading.Lock(), self.clear)
        register(self)

    def clear(self) -> None:
        """Forget every index that is not lent out."""
        with self._lock:
            self._free = []

    def _take(self, texts: Sequence[str], language: Language) -> InvertedIndex:
        head = list(texts[:3])
        with self._lock:
            best, best_shared = -1, -1
            for at, index in enumerate(self._free):
                if index.language == language and index.texts[:3] == head:
                    shared = index.common_prefix(texts)
                    # Another conversation that only begins alike keeps its index: taking it
                    # would re-index both on every call when they are packed in turn.
                    if shared > best_shared and 2 * shared >= len(index):
                        best, best_shared = at, shared
            if best >= 0:
                return self._free.pop(best)
        return InvertedIndex(language)

    @contextmanager
    def borrow(self, texts: Sequence[str], language: Language = "en") -> Iterator[InvertedIndex]:
        """The index for ``texts`` analysed as ``language``, synced, for the ``with`` block."""
        index = self._take(texts, language)
        index.sync(texts)
        try:
            yield index
        finally:
            with self._lock:
                self._free.append(index)
                del self._free[: -self.size]


INDEXES = IndexPool()
"""The process's pool of conversation indexes, used by :class:`ctxpack.RelevanceScorer`."""
