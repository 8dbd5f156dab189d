"""The optional embedding layer: files ranked by meaning, fused with the lexical ranking."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ctxpack import ConfigError
from ctxpack.code import CodeIndex
from ctxpack.code.semantic import RRF_K, reciprocal_rank_fusion

# A stand-in embedder: one dimension per concept, whatever the words that say it.
CONCEPTS = (
    {"cache", "cached", "memo", "memoised"},
    {"count", "counts", "tally", "tallies"},
    {"token", "tokens"},
    {"invoice", "bill"},
)


def concept_embedder(texts: Sequence[str]) -> np.ndarray:
    rows = []
    for text in texts:
        words = re.findall(r"[a-z]+", text.lower())
        rows.append([sum(w in concept for w in words) for concept in CONCEPTS])
    return np.array(rows, dtype=np.float32)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "memo.py").write_text(
        '"""Memoised tallies of tokens."""\n\n\ndef remember(text, tally):\n    return tally\n'
    )
    (tmp_path / "billing.py").write_text(
        '"""Invoices."""\n\n\ndef bill(customer):\n    return customer\n'
    )
    (tmp_path / "paths.py").write_text(
        '"""Where files go."""\n\n\ndef cache_dir(home):\n    return home\n'
    )
    return tmp_path


QUERY = "where are token counts cached?"


def test_without_an_embedder_the_words_decide(root: Path) -> None:
    ranked = CodeIndex(root, db=":memory:").rank_files(QUERY)
    assert ranked[0].path == "paths.py"  # "cache" is the only word shared
    assert all("semantic" not in h.signals for h in ranked)


def test_an_embedder_brings_the_file_that_means_it(root: Path) -> None:
    index = CodeIndex(root, db=":memory:", embedder=concept_embedder)
    ranked = index.rank_files(QUERY)
    paths = [h.path for h in ranked]
    assert paths[0] == "memo.py"
    by_path = {h.path: h for h in ranked}
    assert by_path["memo.py"].signals["semantic"] > by_path["paths.py"].signals["semantic"]
    assert "billing.py" not in paths  # neither the words nor the meaning
    # The score is the fused one: first in meaning, second in words.
    assert by_path["memo.py"].score == pytest.approx(1 / (RRF_K + 1) + 1 / (RRF_K + 2))


def test_reciprocal_rank_fusion_counts_only_what_each_ranking_found() -> None:
    fused = reciprocal_rank_fusion([np.array([2.0, 1.0, 0.0]), np.array([0.0, 0.5, 0.9])])
    assert fused[0] == pytest.approx(1 / (RRF_K + 1))
    assert fused[1] == pytest.approx(1 / (RRF_K + 2) + 1 / (RRF_K + 2))
    assert fused[2] == pytest.approx(1 / (RRF_K + 1))


@pytest.mark.parametrize(
    "embedder",
    [
        lambda texts: [[1.0]] * max(1, len(texts) - 1),  # a vector short
        lambda texts: [1.0] * len(texts),  # one number per text
        lambda texts: None,
        lambda texts: [["a", "b"]] * len(texts),
    ],
)
def test_an_embedder_returning_no_vector_per_text_is_a_config_error(
    root: Path, embedder: Any
) -> None:
    # It came back as numpy's IndexError or AxisError from inside the ranking.
    with pytest.raises(ConfigError, match=r"embedder: .*one vector"):
        CodeIndex(root, db=":memory:", embedder=embedder).rank_files(QUERY)


def test_a_root_that_is_a_loop_of_symlinks_is_named(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(ConfigError, match=r"root .* cannot be read"):
        CodeIndex(tmp_path / "a", db=":memory:")
