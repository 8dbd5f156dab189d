"""Query expansion: the conversation's words closest in meaning to the query's."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from ._base import Query, TermSignal
from .lexical import WORD, terms
from .wordvectors import default_stem_vectors

__all__ = ["RelatedWords"]


class RelatedWords(TermSignal):
    """Each query word that is not a name also looks for the conversation's words closest to
    it in meaning ("bicycle" finds "bike"), weighted ``weight x cosine``.

    The similarities come from a static English word table shipped with ctxpack
    (:func:`~ctxpack.signals.wordvectors.default_stem_vectors`; no model runs), so the signal
    adds nothing to a conversation stemmed in another language: there it would find
    look-alikes, not related words. A capitalised word inside the question is a name:
    "Melanie" has no synonyms. A message holding only related words is explained as ``through
    related words: bike``.

    Args:
        weight: Weight, times their cosine similarity, of the related words (0 turns query
            expansion off).
        top: At most this many related words per query word, among the conversation's.
        min_cosine: Only related words at least this similar (cosine in the word table).
    """

    name: ClassVar[str] = "related"
    note: ClassVar[str] = "through related words: {words}"
    rank: ClassVar[int] = 2

    weight: float = Field(default=0.3, ge=0.0)
    top: int = Field(default=5, ge=0)
    min_cosine: float = Field(default=0.5, ge=-1.0, le=1.0)

    def terms_for(self, query: Query) -> dict[str, float]:
        if not self.weight or not self.top or query.language != "en":
            return {}
        table = default_stem_vectors()
        asked, index = set(query.terms), query.index
        weights: dict[str, float] = {}
        for position, word in enumerate(WORD.findall(query.text)):
            stems = terms(word)
            if len(stems) != 1 or (position and word[0].isupper()):
                continue
            found = 0
            for other, cosine in table.nearest(stems[0]):
                if found == self.top or cosine < self.min_cosine:
                    break
                if other in asked or other not in index:
                    continue
                found += 1
                weights[other] = max(weights.get(other, 0.0), self.weight * cosine)
        return weights
