"""The query's own words: the terms BM25 looks for first."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from ._base import Query, TermSignal

__all__ = ["QueryWords"]


class QueryWords(TermSignal):
    """The query's own terms, each with ``weight``.

    A message holding some of them is explained as ``matched: backups, run``.

    Args:
        weight: Weight of the query's terms (0 leaves only what the other signals add).

    Example:
        >>> from ctxpack.signals.bm25 import InvertedIndex
        >>> query = Query("When do the backups run?", ("backup", "run"), "en", (), InvertedIndex())
        >>> dict(QueryWords().terms_for(query))
        {'backup': 1.0, 'run': 1.0}
    """

    name: ClassVar[str] = "query"
    note: ClassVar[str] = "matched: {words}"
    rank: ClassVar[int] = 0

    weight: float = Field(default=1.0, ge=0.0)

    def terms_for(self, query: Query) -> dict[str, float]:
        if not self.weight:
            return {}
        return dict.fromkeys(query.terms, self.weight)
