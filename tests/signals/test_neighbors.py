"""Neighbors: context around a relevant message rides along."""

from __future__ import annotations

import numpy as np
import pytest

import ctxpack
from ctxpack.signals import Neighbors, signal_from, spread_to_neighbors

from .helpers import query_of


def test_spread_to_neighbors() -> None:
    assert spread_to_neighbors([0.0, 0.0, 1.0, 0.0, 0.0], 1, 0.5).tolist() == [
        0.0,
        0.5,
        1.0,
        0.5,
        0.0,
    ]
    assert spread_to_neighbors([1.0, 0.0, 0.8], 1, 0.5).tolist() == [1.0, 0.5, 0.8]
    assert spread_to_neighbors([], 2, 0.5).tolist() == []
    assert spread_to_neighbors([0.3], 2, 0.5).tolist() == [0.3]


def test_adjust_spreads_and_leaves_the_scores_it_is_given() -> None:
    scores = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    scores.flags.writeable = False
    query = query_of(["a"] * 6, "a")
    adjusted = Neighbors().adjust(scores, query)
    assert adjusted is not None
    assert adjusted.scores.tolist() == [0.25, 0.5, 1.0, 0.5, 0.25, 0.0]
    assert adjusted.note == "neighbour of a relevant message"
    assert scores.tolist() == [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    wider = Neighbors(distance=3, share=0.8).adjust(scores, query)
    assert wider is not None and wider.scores[5] == pytest.approx(0.8**3)
    assert Neighbors(distance=0).adjust(scores, query) is None


def test_options_are_validated() -> None:
    with pytest.raises(ctxpack.ConfigError, match=r"Neighbors \(signal 'neighbors'\): share=1\.5"):
        Neighbors(share=1.5)
    with pytest.raises(ctxpack.ConfigError, match="distance=-1"):
        Neighbors(distance=-1)


def test_a_dump_names_the_signal() -> None:
    dumped = Neighbors(distance=1).model_dump()
    assert dumped == {"name": "neighbors", "distance": 1, "share": 0.5}
    assert Neighbors(**dumped) == signal_from(dumped) == Neighbors(distance=1)
    with pytest.raises(ctxpack.ConfigError, match="is the signal 'neighbors', not 'speaker'"):
        Neighbors(name="speaker")
