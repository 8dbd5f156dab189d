"""Static stem vectors: related words for query expansion, without a model at run time.

The table ``ctxpack/data/stem_vectors.npz`` maps each stem of :func:`ctxpack.signals.lexical.terms`
to a 128-dimensional unit vector distilled from all-MiniLM-L6-v2 (each vocabulary word run alone
through the model, averaged per stem, projected by SVD, stored as int8). Stems with similar meanings
have close vectors, so a query about a "bicycle" can also look for "bike". The table is built by
``scripts/build_word_vectors.py``; see ``ctxpack/data/NOTICE.md`` for its origin and licence.

Example:
    >>> table = default_stem_vectors()
    >>> candidates = ["tax", "cyclist", "walk", "bike"]
    >>> [stem for stem, _ in table.related("bicycl", candidates, table.matrix(candidates))]
    ['bike', 'cyclist']
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import IO

import numpy as np
import numpy.typing as npt

from ..caches import LRUCache

__all__: list[str] = []

FloatArray = npt.NDArray[np.float32]

_DATA_FILE = "stem_vectors.npz"


class StemVectors:
    """A read-only table of unit vectors keyed by stem.

    Args:
        path: The npz written by ``scripts/build_word_vectors.py`` (arrays ``stems``, a
            newline-joined string; ``vectors``, int8 ``n x d``; ``scale``, float32 ``n``).
            Defaults to the table shipped in the package.

    Raises:
        FileNotFoundError: ``path`` does not exist, or (without ``path``) the package data is
            missing.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        if path is None:
            resource = resources.files("ctxpack").joinpath("data").joinpath(_DATA_FILE)
            if not resource.is_file():
                raise FileNotFoundError(
                    f"ctxpack's package data {_DATA_FILE} is missing (a broken install?); "
                    "reinstall ctxpack, or in a source checkout rebuild it with: "
                    "python scripts/build_word_vectors.py"
                )
            with resource.open("rb") as handle:
                self._read(handle)
        else:
            with open(path, "rb") as handle:
                self._read(handle)

    def _read(self, handle: IO[bytes]) -> None:
        with np.load(handle, allow_pickle=False) as data:
            stems = str(data["stems"]).split("\n")
            quantised = data["vectors"]
            scale = data["scale"].astype(np.float32)
            neighbours = data["neighbours"] if "neighbours" in data.files else None
            neighbour_cosines = (
                data["neighbour_cosines"] if "neighbour_cosines" in data.files else None
            )
        if quantised.ndim != 2 or len(quantised) != len(stems) or len(scale) != len(stems):
            raise ValueError(
                f"inconsistent stem table: {len(stems)} stems, vectors of shape "
                f"{quantised.shape}, {len(scale)} scales"
            )
        self._index = {stem: row for row, stem in enumerate(stems)}
        self._stems = stems
        self._nearest: LRUCache[tuple[str, int], tuple[tuple[str, float], ...]] = LRUCache(
            100_000, maxbytes=16 * 2**20, name="nearest words"
        )
        # Precomputed by the build script (see neighbour_lists): nearest() is then a lookup.
        self._neighbours = neighbours
        self._neighbour_cosines = neighbour_cosines
        # One extra zero row at the end: the row that matrix() gives an unknown stem, so that a
        # whole list is looked up with a single fancy index.
        vectors = np.zeros((len(stems) + 1, quantised.shape[1]), dtype=np.float32)
        np.multiply(quantised, scale[:, None], out=vectors[:-1])
        # int8 rounding moves the norm a little; cosines are plain dot products only on unit rows.
        norms = np.linalg.norm(vectors[:-1], axis=1, keepdims=True)
        vectors[:-1] /= np.maximum(norms, 1e-12)
        # Shared by every caller of default_stem_vectors(): nobody may write into it.
        vectors.flags.writeable = False
        self._vectors = vectors

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, stem: object) -> bool:
        return stem in self._index

    @property
    def dim(self) -> int:
        """The number of dimensions of a vector."""
        return int(self._vectors.shape[1])

    def vector(self, stem: str) -> FloatArray | None:
        """The unit vector of ``stem`` (a read-only view), or ``None`` if it is not in the table."""
        row = self._index.get(stem)
        return None if row is None else self._vectors[row]

    def matrix(self, stems: Sequence[str]) -> FloatArray:
        """The vectors of ``stems``: a new float32 array, one unit row per stem, in order.

        A stem not in the table gets a zero row, so its cosine with anything is 0.
        """
        missing = len(self._index)
        rows = [self._index.get(stem, missing) for stem in stems]
        return self._vectors[np.asarray(rows, dtype=np.intp)]

    def related(
        self,
        stem: str,
        candidates: Sequence[str],
        candidate_matrix: FloatArray,
        *,
        top: int = 5,
        threshold: float = 0.5,
    ) -> list[tuple[str, float]]:
        """The candidates closest in meaning to ``stem``, with their cosine similarity.

        Args:
            stem: The stem to expand (as given by :func:`ctxpack.signals.lexical.terms`).
            candidates: The stems it may expand to, e.g. the vocabulary of a conversation.
            candidate_matrix: ``matrix(candidates)``; passed in so that a caller can compute it
                once per vocabulary and reuse it for every query.
            top: At most this many results.
            threshold: Only candidates whose cosine is strictly above this value.

        Returns:
            Up to ``top`` ``(candidate, cosine)`` pairs, best first (ties in candidate order),
            never ``stem`` itself nor a candidate missing from the table. Empty if ``stem`` is
            not in the table.

        Raises:
            ValueError: ``candidate_matrix`` does not have one row per candidate, or ``top`` is
                negative.
        """
        if top < 0:
            raise ValueError(f"top must be >= 0, got {top}")
        if candidate_matrix.shape != (len(candidates), self.dim):
            raise ValueError(
                f"candidate_matrix has shape {candidate_matrix.shape}, expected "
                f"({len(candidates)}, {self.dim}): pass matrix(candidates)"
            )
        query = self.vector(stem)
        if query is None or top == 0 or not candidates:
            return []
        cosines = candidate_matrix @ query
        keep = np.flatnonzero(cosines > threshold)
        # The zero rows of unknown candidates score 0, which a negative threshold would admit.
        keep = keep[candidate_matrix[keep].any(axis=1)]
        # sorted() is stable and keep is ascending, so equal cosines stay in candidate order.
        ranked = sorted(
            (i for i in keep.tolist() if candidates[i] != stem), key=lambda i: -cosines[i]
        )
        return [(candidates[i], float(cosines[i])) for i in ranked[:top]]

    def nearest(self, stem: str, top: int = 32) -> tuple[tuple[str, float], ...]:
        """The ``top`` stems of the whole table closest to ``stem``, best first, with their
        cosine similarity; ``stem`` itself excluded, empty if it is not in the table.

        Cached per stem: a conversation's questions share most of their words, and a
        conversation's own related words are found by filtering this list.
        """
        key = (stem, top)
        hit = self._nearest.get(key)
        if hit is not None:
            return hit
        row = self._index.get(stem)
        found: tuple[tuple[str, float], ...] = ()
        stored, stored_cosines = self._neighbours, self._neighbour_cosines
        if row is not None and top > 0:
            if stored is not None and stored_cosines is not None and top <= stored.shape[1]:
                rows = stored[row, :top].tolist()
                cosines = stored_cosines[row, :top].astype(float).tolist()
            else:
                ranked, scores = neighbour_lists(self._vectors[:-1], top, rows=[row])
                rows, cosines = ranked[0].tolist(), scores[0].astype(float).tolist()
            found = tuple((self._stems[i], c) for i, c in zip(rows, cosines, strict=True))
        self._nearest.put(key, found)
        return found


def neighbour_lists(
    vectors: FloatArray, top: int, *, rows: Sequence[int] | None = None, chunk: int = 1024
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]:
    """For each of ``rows`` (default: all), the ``top`` other rows of ``vectors`` with the
    highest dot product, best first (ties: the earlier row first), and those products.

    ``vectors`` are unit rows, so the products are cosines. The build script stores these lists
    in the table, so that finding a stem's related words costs a lookup, not a pass over the
    table.
    """
    wanted = list(range(len(vectors))) if rows is None else list(rows)
    count = min(top, len(vectors) - 1)
    ranked = np.zeros((len(wanted), max(count, 0)), dtype=np.int32)
    scores = np.zeros((len(wanted), max(count, 0)), dtype=np.float32)
    if count <= 0:
        return ranked, scores
    for start in range(0, len(wanted), chunk):
        block = wanted[start : start + chunk]
        cosines = vectors[block] @ vectors.T
        cosines[np.arange(len(block)), block] = -np.inf  # never a row's own neighbour
        for k, line in enumerate(cosines):
            # Sorted by position, then stably by cosine: equal cosines keep table order.
            best = np.sort(np.argpartition(-line, count - 1)[:count])
            best = best[np.argsort(-line[best], kind="stable")]
            ranked[start + k] = best
            scores[start + k] = line[best]
    return ranked, scores


@functools.cache
def default_stem_vectors() -> StemVectors:
    """The stem table shipped with ctxpack, loaded once per process.

    Raises:
        FileNotFoundError: the package data file is missing.
    """
    return StemVectors()
