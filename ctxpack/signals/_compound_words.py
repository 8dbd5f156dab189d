"""Words written together: "road trip" also finds "roadtrip", "log in" finds "login"."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from ._base import Query, TermSignal
from .lexical import compounds

__all__ = ["CompoundWords"]


class CompoundWords(TermSignal):
    """Two adjacent query words also count as the word they make together, with ``weight``,
    when the conversation holds it (:func:`~ctxpack.signals.lexical.compounds`).

    A message holding one is explained with the query's own words: ``matched: roadtrip``.

    Args:
        weight: Weight of the joined words (0 turns the signal off).
    """

    name: ClassVar[str] = "compounds"
    note: ClassVar[str] = "matched: {words}"
    rank: ClassVar[int] = 0

    weight: float = Field(default=1.0, ge=0.0)

    def terms_for(self, query: Query) -> dict[str, float]:
        if not self.weight:
            return {}
        asked, index = set(query.terms), query.index
        joined = compounds(query.text, query.language)
        return {term: self.weight for term in joined if term not in asked and term in index}
