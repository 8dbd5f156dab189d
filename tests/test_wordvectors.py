"""The static stem-vector table: the shipped data file and the StemVectors lookups.

The sanity checks use the table shipped in the package; the exact ranking rules (ties, threshold,
exclusions) use tiny hand-made tables written into ``tmp_path``, where every cosine is known.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import ctxpack.signals.wordvectors as wordvectors
from ctxpack.signals.lexical import terms
from ctxpack.signals.wordvectors import StemVectors, default_stem_vectors, neighbour_lists

SHIPPED = Path(wordvectors.__file__).parents[1] / "data" / "stem_vectors.npz"


def write_table(path: Path, rows: dict[str, Sequence[int]]) -> Path:
    """An npz in the shipped layout, with scale 1/127 so that a row of 127s is a unit axis."""
    stems = sorted(rows)
    np.savez(
        path,
        stems=np.array("\n".join(stems)),
        vectors=np.array([rows[s] for s in stems], dtype=np.int8),
        scale=np.full(len(stems), 1 / 127, dtype=np.float32),
    )
    return path


@pytest.fixture()
def tiny(tmp_path: Path) -> StemVectors:
    # Cosines with "a": b = b2 = 1, c ~ 0.707, d = 0, e = -1.
    return StemVectors(
        write_table(
            tmp_path / "tiny.npz",
            {
                "a": (127, 0),
                "b": (127, 0),
                "b2": (127, 0),
                "c": (90, 90),
                "d": (0, 127),
                "e": (-127, 0),
            },
        )
    )


# --- the shipped table -------------------------------------------------------------------------


def test_shipped_file_is_small() -> None:
    assert SHIPPED.is_file()
    assert SHIPPED.stat().st_size < 3_000_000


def test_shipped_arrays_have_the_documented_layout() -> None:
    with np.load(SHIPPED, allow_pickle=False) as data:
        stems = str(data["stems"]).split("\n")
        vectors, scale = data["vectors"], data["scale"]
    assert vectors.dtype == np.int8 and scale.dtype == np.float32
    assert vectors.shape == (len(stems), 128) and scale.shape == (len(stems),)
    assert stems == sorted(set(stems))
    assert len(stems) > 10_000
    # Quantised to the full int8 range per row: every row reaches +-127 somewhere.
    assert (np.abs(vectors.astype(np.int16)).max(axis=1) == 127).all()


def test_loaded_table_has_unit_float32_rows() -> None:
    table = default_stem_vectors()
    with np.load(SHIPPED, allow_pickle=False) as data:
        stems = str(data["stems"]).split("\n")
    assert len(table) == len(stems)
    assert table.dim == 128
    matrix = table.matrix(stems)
    assert matrix.dtype == np.float32 and matrix.shape == (len(stems), 128)
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)


def test_default_table_is_loaded_once() -> None:
    assert default_stem_vectors() is default_stem_vectors()


def test_table_is_keyed_by_index_stems() -> None:
    table = default_stem_vectors()
    for word in ["bicycles", "painting", "hiking", "jobs", "activities"]:
        (stem,) = terms(word)
        assert stem in table, word
    # Keys are stems, not words, and stop words have no entry.
    assert "bicycles" not in table
    assert "the" not in table
    assert 42 not in table


@pytest.mark.parametrize(
    ("stem", "related_stem", "unrelated_stem"),
    [
        ("bicycl", "bike", "tax"),
        ("paint", "painter", "volcano"),
        ("job", "career", "chees"),
        ("hike", "walk", "democraci"),
        ("dog", "pet", "algebra"),
    ],
)
def test_sanity_neighbours(stem: str, related_stem: str, unrelated_stem: str) -> None:
    table = default_stem_vectors()
    candidates = [unrelated_stem, "cathedr", related_stem, stem]
    found = dict(table.related(stem, candidates, table.matrix(candidates)))
    assert related_stem in found
    assert unrelated_stem not in found
    assert stem not in found


def test_bike_is_the_closest_stem_to_bicycle_in_the_whole_table() -> None:
    table = default_stem_vectors()
    with np.load(SHIPPED, allow_pickle=False) as data:
        stems = str(data["stems"]).split("\n")
    best = table.related("bicycl", stems, table.matrix(stems), top=3)
    assert best[0][0] == "bike"
    assert len(best) == 3
    assert best[0][1] > 0.85


def test_missing_default_data_says_how_to_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wordvectors, "_DATA_FILE", "no_such_table.npz")
    with pytest.raises(FileNotFoundError, match=r"scripts/build_word_vectors\.py"):
        StemVectors()


def test_missing_explicit_path_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        StemVectors(tmp_path / "absent.npz")


# --- lookups -------------------------------------------------------------------------------------


def test_vector_and_contains(tiny: StemVectors) -> None:
    assert len(tiny) == 6
    assert "c" in tiny and "z" not in tiny
    c = tiny.vector("c")
    assert c is not None
    np.testing.assert_allclose(c, [2**-0.5, 2**-0.5], atol=1e-6)
    assert tiny.vector("z") is None


def test_vector_cannot_corrupt_the_shared_table(tiny: StemVectors) -> None:
    a = tiny.vector("a")
    assert a is not None
    with pytest.raises(ValueError):
        a[0] = 5.0


def test_matrix_gives_zero_rows_for_unknown_stems(tiny: StemVectors) -> None:
    matrix = tiny.matrix(["d", "zzz", "a", "zzz"])
    assert matrix.dtype == np.float32 and matrix.shape == (4, 2)
    np.testing.assert_allclose(matrix, [[0, 1], [0, 0], [1, 0], [0, 0]], atol=1e-6)
    # A fresh array: writing into it leaves the table alone.
    matrix[2] = 9.0
    np.testing.assert_allclose(tiny.matrix(["a"]), [[1, 0]], atol=1e-6)


def test_matrix_of_nothing(tiny: StemVectors) -> None:
    assert tiny.matrix([]).shape == (0, 2)


# --- related -------------------------------------------------------------------------------------


def related(
    table: StemVectors,
    stem: str,
    candidates: Sequence[str],
    *,
    top: int = 5,
    threshold: float = 0.5,
) -> list[tuple[str, float]]:
    return table.related(stem, candidates, table.matrix(candidates), top=top, threshold=threshold)


def names(pairs: list[tuple[str, float]]) -> list[str]:
    return [name for name, _ in pairs]


def test_related_best_first_with_ties_in_candidate_order(tiny: StemVectors) -> None:
    found = related(tiny, "a", ["c", "b2", "d", "b", "e"], threshold=0.0)
    assert names(found) == ["b2", "b", "c"]
    assert [round(cos, 3) for _, cos in found] == [1.0, 1.0, 0.707]
    assert all(isinstance(cos, float) for _, cos in found)
    # The other candidate order flips the tie, not the rest.
    assert names(related(tiny, "a", ["b", "c", "b2"], threshold=0.0)) == ["b", "b2", "c"]


def test_related_keeps_at_most_top(tiny: StemVectors) -> None:
    candidates = ["c", "b2", "b"]
    assert names(related(tiny, "a", candidates, top=2, threshold=0.0)) == ["b2", "b"]
    assert names(related(tiny, "a", candidates, top=1, threshold=0.0)) == ["b2"]
    assert related(tiny, "a", candidates, top=0) == []
    with pytest.raises(ValueError, match="top"):
        related(tiny, "a", candidates, top=-1)


def test_related_threshold_is_strict(tiny: StemVectors) -> None:
    candidates = ["c", "b", "d", "e"]
    assert names(related(tiny, "a", candidates, threshold=0.7)) == ["b", "c"]
    assert names(related(tiny, "a", candidates, threshold=0.75)) == ["b"]
    # d's cosine is exactly 0: not above a threshold of 0, above one of -0.5.
    assert names(related(tiny, "a", candidates, threshold=0.0)) == ["b", "c"]
    assert names(related(tiny, "a", candidates, threshold=-0.5)) == ["b", "c", "d"]
    assert names(related(tiny, "a", candidates, threshold=-2.0)) == ["b", "c", "d", "e"]


def test_related_default_threshold_is_half(tiny: StemVectors) -> None:
    assert names(related(tiny, "c", ["a", "d", "e"])) == ["a", "d"]
    assert names(related(tiny, "e", ["a", "c", "d"])) == []


def test_related_excludes_the_stem_itself(tiny: StemVectors) -> None:
    assert names(related(tiny, "a", ["a", "b", "a"], threshold=0.0)) == ["b"]


def test_related_never_returns_unknown_candidates(tiny: StemVectors) -> None:
    # Their zero rows score 0, which a negative threshold would otherwise let through.
    assert names(related(tiny, "a", ["zzz", "e", "d"], threshold=-2.0)) == ["d", "e"]


def test_related_of_an_unknown_stem_is_empty(tiny: StemVectors) -> None:
    assert related(tiny, "zzz", ["a", "b"], threshold=-2.0) == []


def test_related_checks_the_candidate_matrix(tiny: StemVectors) -> None:
    with pytest.raises(ValueError, match="matrix"):
        tiny.related("a", ["b", "c"], tiny.matrix(["b"]))
    assert tiny.related("a", [], tiny.matrix([])) == []


def test_nearest_ranks_the_whole_table() -> None:
    table = default_stem_vectors()
    near = table.nearest("bicycl", top=10)
    assert len(near) == 10
    assert near[0][0] == "bike"
    assert all(stem != "bicycl" for stem, _ in near)
    cosines = [c for _, c in near]
    assert cosines == sorted(cosines, reverse=True)
    # The same as ranking every stem of the table by its cosine.
    every = [s for s in table._stems if s != "bicycl"]
    expected = table.related("bicycl", every, table.matrix(every), top=10, threshold=-1.0)
    assert [s for s, _ in near] == [s for s, _ in expected]
    assert table.nearest("bicycl", top=10) is near, "cached"
    assert table.nearest("zzzqqq") == ()


def test_shipped_neighbour_lists_match_the_vectors() -> None:
    # The lists in the npz are a cache of what neighbour_lists computes from the vectors: a
    # table rebuilt without them, or with stale ones, would expand queries wrongly.
    table = default_stem_vectors()
    vectors = table._vectors[:-1]
    sample = list(range(0, len(table), 997))
    ranked, cosines = neighbour_lists(vectors, 32, rows=sample)
    for k, row in enumerate(sample):
        stored = table.nearest(table._stems[row])
        assert [s for s, _ in stored] == [table._stems[i] for i in ranked[k]]
        assert np.allclose([c for _, c in stored], cosines[k], atol=1e-3)
    # Deeper than the stored lists: computed on the spot, the stored part first.
    deep = table.nearest("bicycl", top=40)
    assert len(deep) == 40
    assert [s for s, _ in deep[:32]] == [s for s, _ in table.nearest("bicycl")]
