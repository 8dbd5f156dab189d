"""Score each message's relevance to the query (BM25), spreading some of it to neighbours."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..lexical import bm25_scores, terms
from ..pipeline import Decision, PackContext

__all__ = ["RelevanceScorer"]


class RelevanceScorer(BaseModel):
    """Set the ``relevance`` signal (0 to 1) of every message from its BM25 score for the query.

    Scores are divided by the best one, so the most relevant message gets 1. A message next to a
    relevant one inherits ``neighbor_share`` of its relevance (an answer often sits in the turn
    after the question that names the topic), up to ``neighbors`` positions away.

    Args:
        neighbors: How many messages on each side receive a share.
        neighbor_share: Share of a message's relevance its neighbours receive.
        k1: BM25 term-frequency saturation.
        b: BM25 length normalisation.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: Literal["relevance"] = Field(default="relevance", exclude=True, repr=False)

    neighbors: int = Field(default=1, ge=0)
    neighbor_share: float = Field(default=0.5, ge=0.0, le=1.0)
    k1: float = Field(default=1.2, gt=0)
    b: float = Field(default=0.75, ge=0.0, le=1.0)

    def __call__(self, ctx: PackContext, /) -> PackContext:
        if not ctx.query:
            return ctx
        query = terms(ctx.query)
        messages = ctx.messages
        raw = bm25_scores(query, [terms(m.text) for m in messages], k1=self.k1, b=self.b)
        for i, m in enumerate(messages):
            if m.id in ctx.protected:
                raw[i] = 0.0
        best = max(raw, default=0.0)
        if best <= 0:
            return ctx
        own = [r / best for r in raw]
        final = list(own)
        for i, value in enumerate(own):
            if value <= 0:
                continue
            for d in range(1, self.neighbors + 1):
                share = value * self.neighbor_share**d
                for j in (i - d, i + d):
                    if 0 <= j < len(final) and final[j] < share:
                        final[j] = share
        signal = {m.id: v for m, v in zip(messages, final, strict=True) if v > 0}
        decisions = [
            Decision(
                stage=self.name,
                action="selected",
                message_id=m.id,
                reason=f"relevance {v:.2f} to the query"
                + ("" if v == own[i] else " (neighbour of a relevant message)"),
                score=v,
            )
            for i, (m, v) in enumerate(zip(messages, final, strict=True))
            if v >= 0.25
        ]
        return ctx.with_signal("relevance", signal).decide(*decisions)
