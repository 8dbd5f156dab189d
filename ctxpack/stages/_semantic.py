"""Mix a sentence-embedding similarity into the ``relevance`` signal (opt-in, after BM25)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import ConfigDict, Field, field_validator

from .._internal.vectors import embedded
from ..pipeline import Decision, PackContext, check_context
from ..signals import Neighbors
from ..signals.embeddings import MiniLMEmbedder
from ._base import StageModel

__all__ = ["SemanticScorer"]

_SHARED: MiniLMEmbedder | None = None


def _shared_embedder() -> MiniLMEmbedder:
    # One model per process: its per-text cache then serves every later pack of the same chat.
    global _SHARED
    if _SHARED is None:
        _SHARED = MiniLMEmbedder()
    return _SHARED


class SemanticScorer(StageModel):
    """Mix each message's embedding similarity to the query into its ``relevance`` signal.

    Runs after :class:`RelevanceScorer` (BM25) and finds what BM25 cannot: a message that says
    the same thing in other words. The query and every unprotected message with text are
    embedded; cosines are rescaled so that the median message gets 0 and the best gets 1
    (``clip((cos - median) / (max - median), 0, 1)``), spread to neighbours like BM25 relevance
    (``neighbors``), and mixed in: ``relevance = (1 - weight) x bm25 + weight x semantic``.
    Protected messages score 0. Messages with a semantic score of at least 0.5 get a
    ``selected`` decision.

    Args:
        embedder: A callable ``list[str] -> array (n, d)`` of unit vectors. ``None``: the
            shared :class:`~ctxpack.signals.embeddings.MiniLMEmbedder`, created on first use (needs
            the optional model, see the docs' semantic stage page).
        weight: Share of the semantic score in the mixed relevance, 0 to 1 (0: the stage does
            nothing).
        neighbors: How the semantic score spreads to the messages around (``share ** d`` at
            distance ``d``), the relevance stage's :class:`~ctxpack.signals.Neighbors` signal;
            ``None``: it does not spread.

    Raises:
        ConfigError: the embedder returns an array of the wrong shape, or (default embedder)
            the model or the ``tokenizers`` package is not installed.

    Example:
        >>> import numpy as np
        >>> from ctxpack import get_counter
        >>> from ctxpack.messages import ensure_messages
        >>> from ctxpack.pipeline import PackContext
        >>> vectors = {"car": [1.0, 0.0], "vehicle": [0.9, 0.436], "lunch": [0.0, 1.0],
        ...            "soup": [0.1, 0.995]}
        >>> fake = lambda texts: np.array([vectors[t] for t in texts])
        >>> history = ensure_messages([{"role": "user", "content": t, "id": t}
        ...                            for t in ("vehicle", "lunch", "soup")])
        >>> ctx = PackContext(messages=tuple(history), budget=100, counter=get_counter(),
        ...                   query="car")
        >>> out = SemanticScorer(embedder=fake, neighbors=None)(ctx)
        >>> dict(out.signal("relevance"))
        {'vehicle': 0.3}
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
    name: ClassVar[str] = "semantic"
    # It mixes its score into the lexical relevance, so that must exist first.
    requires: ClassVar[frozenset[str]] = frozenset({"relevance"})
    provides: ClassVar[frozenset[str]] = frozenset({"relevance"})

    embedder: Any = None
    # 0.3: on LoCoMo, 0.2 to 0.3 beat 0.5 once the lexical scorer expands queries and documents.
    weight: float = Field(default=0.3, ge=0.0, le=1.0)
    neighbors: Neighbors | None = Neighbors()

    @field_validator("embedder")
    @classmethod
    def _callable(cls, embedder: Any) -> Any:
        if embedder is not None and not callable(embedder):
            raise ValueError(
                f"must be a callable list[str] -> array (n, d), got {type(embedder).__name__}"
            )
        return embedder

    def _embed(self, texts: list[str]) -> np.ndarray[Any, np.dtype[np.float64]]:
        embedder = self.embedder if self.embedder is not None else _shared_embedder()
        return embedded(embedder, texts, np.float64)  # type: ignore[no-any-return]

    def __call__(self, ctx: PackContext, /) -> PackContext:
        check_context(ctx, self)
        if not ctx.query or self.weight == 0:
            return ctx
        messages = ctx.messages
        scored = [i for i, m in enumerate(messages) if m.id not in ctx.protected and m.text.strip()]
        if not scored:
            return ctx
        vectors = self._embed([ctx.query, *(messages[i].text for i in scored)])
        cosines = vectors[1:] @ vectors[0]
        median, best = float(np.median(cosines)), float(cosines.max())
        if best - median <= 1e-9:
            return ctx  # every message is as similar as the median: nothing to rank
        own = [0.0] * len(messages)
        cosine_at: dict[int, float] = {}
        for i, cos in zip(scored, cosines.tolist(), strict=True):
            own[i] = min(max((cos - median) / (best - median), 0.0), 1.0)
            cosine_at[i] = cos
        spread = own if self.neighbors is None else self.neighbors.spread(own).tolist()
        signal: dict[str, float] = {}
        decisions: list[Decision] = []
        bm25 = ctx.signal("relevance")
        for i, m in enumerate(messages):
            old = bm25.get(m.id, 0.0)
            semantic = 0.0 if m.id in ctx.protected else spread[i]
            new = (1.0 - self.weight) * old + self.weight * semantic
            if old or new:
                signal[m.id] = new
            if own[i] >= 0.5:
                decisions.append(
                    Decision(
                        stage=self.name,
                        action="selected",
                        message_id=m.id,
                        reason=f"semantic similarity {cosine_at[i]:.2f} to the query "
                        f"(semantic score {own[i]:.2f}; relevance {old:.2f} -> {new:.2f})",
                        score=own[i],
                    )
                )
        return ctx.with_signal("relevance", signal).decide(*decisions)
