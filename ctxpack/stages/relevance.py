"""Score each message's relevance to the query (BM25), spreading some of it to neighbours."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field

from ..lexical import shared_index, terms
from ..pipeline import Decision, PackContext
from ._base import StageModel

__all__ = ["RelevanceScorer", "spread_to_neighbors"]


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


class RelevanceScorer(StageModel):
    """Set the ``relevance`` signal (0 to 1) of every message from its BM25 score for the query.

    Terms are lower-cased, stemmed words without stop words. Scores are divided by the best one,
    so the most relevant message gets 1. A message near a relevant one inherits ``neighbor_share
    ** d`` of its relevance at distance ``d <= neighbors`` (an answer often sits in the turn
    after the one that names the topic). The index behind it is cached per conversation and
    grows with it, so a new question on the same history only analyses the question.

    Args:
        neighbors: How many messages on each side receive a share.
        neighbor_share: Share of a message's relevance its direct neighbours receive.
        k1: BM25 term-frequency saturation.
        b: BM25 length normalisation.
    """

    name: Literal["relevance"] = Field(default="relevance", exclude=True, repr=False)

    neighbors: int = Field(default=2, ge=0)
    neighbor_share: float = Field(default=0.5, ge=0.0, le=1.0)
    k1: float = Field(default=1.2, gt=0)
    b: float = Field(default=0.75, ge=0.0, le=1.0)

    def __call__(self, ctx: PackContext, /) -> PackContext:
        if not ctx.query:
            return ctx
        query = terms(ctx.query)
        messages = ctx.messages
        index = shared_index([m.text for m in messages])
        raw = index.bm25(query, k1=self.k1, b=self.b)
        protected = [i for i, m in enumerate(messages) if m.id in ctx.protected]
        raw[protected] = 0.0
        best = float(raw.max(initial=0.0))
        if best <= 0:
            return ctx
        own = raw / best
        final = spread_to_neighbors(own, self.neighbors, self.neighbor_share)
        final[protected] = 0.0
        nonzero = np.flatnonzero(final)
        signal = {messages[i].id: float(final[i]) for i in nonzero}
        decisions = [
            Decision.trusted(
                self.name,
                "selected",
                messages[i].id,
                f"relevance {final[i]:.2f} to the query"
                + ("" if final[i] == own[i] else " (neighbour of a relevant message)"),
                float(final[i]),
            )
            for i in np.flatnonzero(final >= 0.25).tolist()
        ]
        return ctx.with_signal("relevance", signal).decide(*decisions)
