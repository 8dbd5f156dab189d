"""Follow-up questions: "Why would that help?" is about the exchange it follows."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from pydantic import Field

from .._internal.columns import USER, flags
from ._base import Query, TermSignal
from .bm25 import InvertedIndex
from .lexical import WORD, terms
from .stop_words import FRENCH_DEMONSTRATIVES

__all__ = ["FollowUp"]

# A follow-up question borrows at most this many terms of the exchange it follows.
_BORROWED = 32
# Words that point back to something said before ("How do I install it on Windows?"). Personal
# pronouns are left out: in "When did Gina get her tattoo?" the question names who "her" is.
_POINTING = frozenset(
    [
        "it",
        "its",
        "itself",
        "this",
        "that",
        "these",
        "those",
        "they",
        "them",
        "their",
        "there",
        *FRENCH_DEMONSTRATIVES,
    ]
)


class FollowUp(TermSignal):
    """A question that says too little on its own borrows the terms of the exchange it
    follows, with ``weight``.

    A query is a follow-up when it has at most ``words`` content words ("Why would that
    help?"), or at most ``pointing_words`` with a word pointing back: "it", "that", "this",
    "they", "them", "there" (or French "ça", "cela", "celui"...), as in "How do I install it on
    Windows?". The exchange is the user message before the question and the messages after it
    (from the last user message on when the query was given apart); instructions lend nothing.
    Only its 32 most distinctive terms (count x idf) are borrowed, so that a "Why?" after a
    long tool output stays a short query. A message holding them is explained as ``the query
    follows up on the previous exchange: hungry, feed``.

    Args:
        weight: Weight of the borrowed terms (0 turns the signal off).
        words: A query with at most this many content words is a follow-up.
        pointing_words: A query with at most this many content words is a follow-up too when
            a word of it points back.
    """

    name: ClassVar[str] = "follow_up"
    note: ClassVar[str] = "the query follows up on the previous exchange: {words}"
    rank: ClassVar[int] = 1

    weight: float = Field(default=0.5, ge=0.0)
    words: int = Field(default=1, ge=0)
    pointing_words: int = Field(default=3, ge=0)

    def terms_for(self, query: Query) -> dict[str, float]:
        if not self.weight or not self.follows_up(query.text, set(query.terms)):
            return {}
        exchange = _previous_exchange_terms(query)
        borrowed = _distinctive(exchange, query.terms, query.index)
        # In a fixed order: the scores sum over the terms, and a set's order changes from one
        # process to the next (string hashing), enough to move the last digit.
        return dict.fromkeys(sorted(borrowed), self.weight)

    def follows_up(self, text: str, asked: set[str]) -> bool:
        """Whether the query (``text``, with the terms ``asked``) says too little on its own to
        be about anything but the exchange it follows."""
        if len(asked) <= self.words:
            return True
        if len(asked) > self.pointing_words:
            return False
        return not _POINTING.isdisjoint(word.lower() for word in WORD.findall(text))


def _previous_exchange_terms(query: Query) -> list[str]:
    """Terms of the exchange the query follows: the user message before the question and the
    messages after it (from the last user message on when the query was given apart)."""
    messages = query.messages
    users = np.flatnonzero(flags(messages) & USER)[-2:].tolist()
    if users and messages[users[-1]].text == query.text:
        end, users = users[-1], users[:-1]
    else:
        end = len(messages)
    if not users:
        return []
    return [
        term
        for msg in messages[users[-1] : end]
        if msg.role not in ("system", "developer")
        for term in terms(msg.text, query.language)
    ]


def _distinctive(borrowed: Sequence[str], asked: Sequence[str], index: InvertedIndex) -> set[str]:
    """The borrowed terms that say most about the exchange (count x idf), at most
    ``_BORROWED``, leaving out the query's own."""
    counts = Counter(borrowed)
    for term in asked:
        counts.pop(term, None)
    weight = {term: count * index.idf(term) for term, count in counts.items()}
    return set(sorted(counts, key=lambda t: (-weight[t], t))[:_BORROWED])
