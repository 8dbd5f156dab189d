"""Neighbours share: context around a relevant message rides along."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import Field

from ._base import Adjustment, Query, ScoreSignal

__all__ = ["Neighbors", "spread_to_neighbors"]


def spread_to_neighbors(
    values: Sequence[float] | npt.NDArray[Any], neighbors: int, share: float
) -> npt.NDArray[np.float64]:
    """Each value, raised to ``share ** d`` of the value ``d`` positions away (``d <=
    neighbors``) when that is larger: context around a relevant message rides along.

    Example:
        >>> spread_to_neighbors([0.0, 1.0, 0.0, 0.0], 2, 0.5).tolist()
        [0.5, 1.0, 0.5, 0.25]
    """
    own = np.asarray(values, dtype=np.float64)
    out = own.copy()
    for d in range(1, min(neighbors, len(own) - 1) + 1):
        shared = own * share**d
        np.maximum(out[:-d], shared[d:], out=out[:-d])
        np.maximum(out[d:], shared[:-d], out=out[d:])
    return out  # type: ignore[no-any-return]


class Neighbors(ScoreSignal):
    """A message near a relevant one inherits ``share ** d`` of its relevance at distance
    ``d <= distance``: an answer often sits in the turn after the question that names the
    topic. A message raised this way is explained as ``neighbour of a relevant message``.

    Args:
        distance: How many messages on each side receive a share (0 turns it off).
        share: Share of a message's relevance its direct neighbours receive.

    Example:
        >>> Neighbors(distance=1).spread([0.0, 1.0, 0.0, 0.0]).tolist()
        [0.5, 1.0, 0.5, 0.0]
    """

    name: ClassVar[str] = "neighbors"
    note: ClassVar[str] = "neighbour of a relevant message"

    distance: int = Field(default=2, ge=0)
    share: float = Field(default=0.5, ge=0.0, le=1.0)

    def spread(self, values: Sequence[float] | npt.NDArray[Any]) -> npt.NDArray[np.float64]:
        """``values`` with each raised to its neighbours' share (see
        :func:`spread_to_neighbors`)."""
        return spread_to_neighbors(values, self.distance, self.share)

    def adjust(self, scores: npt.NDArray[np.float64], query: Query) -> Adjustment | None:
        if not self.distance:
            return None
        return Adjustment(self.spread(scores), self.note)
