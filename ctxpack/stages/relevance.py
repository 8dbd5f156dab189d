"""Score each message's relevance to the query: BM25 with related words, neighbours, speakers."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache
from operator import attrgetter
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field, field_validator

from .._internal.columns import USER, flags, items_at, positions, positions_of
from .._internal.columns import ids as message_ids
from .._internal.prefix import PrefixMemo
from ..caches import register
from ..messages import Message
from ..pipeline import Decision, DecisionLog, PackContext
from ..signals.lexical import (
    FRENCH_DEMONSTRATIVES,
    INDEXES,
    WORD,
    InvertedIndex,
    Language,
    analyse,
    compounds,
    leaning,
    terms,
)
from ..signals.wordvectors import default_stem_vectors
from ._base import StageModel

__all__ = ["RelevanceScorer", "named_speaker", "spread_to_neighbors"]


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


# "Caroline: I went hiking." A speaker is one to four capitalised words before a colon, which
# French typography spaces ("Marie : bonjour", often with a narrow no-break space).
_SPEAKER = re.compile(r"\s*([A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*){0,3})[ \u00a0\u202f]?:\s")
_WORDS = re.compile(r"[^\W_]+")


def _speaker(msg: Message) -> str | None:
    # Only people speak: a tool result starting with "Error:" is not a participant.
    if msg.role not in ("user", "assistant"):
        return None
    if msg.name:
        return msg.name
    match = _SPEAKER.match(msg.text[:80])
    return match.group(1) if match else None


_NEIGHBOUR = " (neighbour of a relevant message)"
# A follow-up question borrows at most this many terms of the exchange it follows.
_FOLLOW_UP_TERMS = 32
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

_SPEAKERS: PrefixMemo[Message, str | None] = PrefixMemo(_speaker)
_TEXTS: PrefixMemo[Message, str] = PrefixMemo(attrgetter("text"))
# Only people's turns tell the conversation's language: a system prompt or a tool's output is
# often English whatever the users speak.
_LEANINGS: PrefixMemo[Message, int] = PrefixMemo(
    lambda msg: leaning(msg.text) if msg.role in ("user", "assistant") else 0
)


def named_speaker(query: str, speakers: Sequence[str | None]) -> str | None:
    """The one speaker of the conversation the query names, if exactly one.

    Speakers are the ``name`` of messages or a ``Name:`` prefix on their text. They count only
    when at least two of them speak three times or more and together they start at least half of
    the messages, so that an occasional ``Note:`` is never taken for a participant. The query
    names a speaker when it contains the speaker's first name, capitalised.

    Example:
        >>> speakers = ["Ann", "Bob", "Ann", "Bob", "Ann", "Bob", None]
        >>> named_speaker("What did Ann say?", speakers)
        'Ann'
        >>> named_speaker("What did they say?", speakers) is None
        True
    """
    counts = Counter(speakers)
    counts.pop(None, None)
    regular = [name for name, count in counts.items() if name is not None and count >= 3]
    if len(regular) < 2 or 2 * sum(counts[name] for name in regular) < len(speakers):
        return None
    words = set(_WORDS.findall(query))
    named = [name for name in regular if name.split()[0] in words]
    return named[0] if len(named) == 1 else None


class RelevanceScorer(StageModel):
    """Set the ``relevance`` signal (0 to 1) of every message from its BM25 score for the query.

    Terms are lower-cased, stemmed words without stop words. Each query word that is not a name
    is expanded with the conversation's words closest to it in meaning ("bicycle" also looks for
    "bike"), from a static word table shipped with ctxpack (no model runs). Each message is
    indexed with a share of its neighbours' terms too (``expansion``): in a dialogue, an answer
    ("Yes, last May!") often only matches the query through the question before it. Scores are
    divided by the best one, so the most relevant message gets 1. A message near a relevant one
    inherits ``neighbor_share ** d`` of its relevance at distance ``d <= neighbors``. When the
    conversation's messages carry speakers (``Name:`` prefixes or ``name``) and the query names
    exactly one of them, the other speakers' messages keep ``speaker_focus`` of their relevance:
    "What did Caroline paint?" is answered by Caroline. A follow-up question with at most
    ``follow_up_words`` content words ("Why would that help?"), or at most
    ``follow_up_pointing_words`` with a word pointing back ("How do I install it on Windows?"),
    is about the exchange it follows: that exchange's terms join the query with weight
    ``follow_up``. Words are stemmed in English, or in French for a conversation whose turns
    lean French (``language``). The index behind it is cached per conversation and grows with
    it, so a new question on the same history only analyses the question.

    Args:
        neighbors: How many messages on each side receive a share.
        neighbor_share: Share of a message's relevance its direct neighbours receive.
        expansion: Weights of the neighbours' terms in a message's index entry, by distance
            (``()`` turns document expansion off).
        speaker_focus: Share of relevance kept by messages of speakers the query does not name
            (1 turns speaker focus off).
        related: Weight, times their cosine similarity, of the related words a query word is
            expanded with (0 turns query expansion off).
        related_top: At most this many related words per query word, among the conversation's.
        related_min: Only related words at least this similar (cosine in the word table).
        follow_up: Weight of the previous exchange's terms in a follow-up question's query (0
            turns it off).
        follow_up_words: A query with at most this many content words is a follow-up.
        follow_up_pointing_words: A query with at most this many content words is a follow-up
            too when a word of it points back: "it", "that", "this", "they", "them", "there"
            (or French "ça", "cela", "celui"...).
        language: How words are stemmed: ``"en"``, ``"fr"``, or ``"auto"``: French when the
            user and assistant turns hold more French function words than English ones.
        k1: BM25 term-frequency saturation.
        b: BM25 length normalisation.
    """

    name: ClassVar[str] = "relevance"

    neighbors: int = Field(default=2, ge=0)
    neighbor_share: float = Field(default=0.5, ge=0.0, le=1.0)
    expansion: tuple[float, ...] = (0.3, 0.15)
    speaker_focus: float = Field(default=0.3, ge=0.0, le=1.0)
    related: float = Field(default=0.3, ge=0.0)
    related_top: int = Field(default=5, ge=0)
    related_min: float = Field(default=0.5, ge=-1.0, le=1.0)
    follow_up: float = Field(default=0.5, ge=0.0)
    follow_up_words: int = Field(default=1, ge=0)
    follow_up_pointing_words: int = Field(default=3, ge=0)
    language: Literal["auto", "en", "fr"] = "auto"
    k1: float = Field(default=1.2, gt=0)
    b: float = Field(default=0.75, ge=0.0, le=1.0)

    @field_validator("expansion")
    @classmethod
    def _non_negative(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        if any(w < 0 for w in value):
            raise ValueError("expansion weights must be >= 0")
        return value

    def __call__(self, ctx: PackContext, /) -> PackContext:
        if not ctx.query:
            return ctx
        messages = ctx.messages
        language = self._language(messages)
        query = terms(ctx.query, language)
        asked = set(query)
        texts = _TEXTS(messages)
        # Lent to this call alone: another thread packing meanwhile gets another index.
        with INDEXES.borrow(texts, language) as index:
            # The word table is English: a French query would find look-alikes, not related words.
            related = self._related_terms(ctx.query, query, index) if language == "en" else {}
            weights = {**related, **dict.fromkeys(query, 1.0)}
            borrowed: set[str] = set()
            if self.follow_up and self._follows_up(ctx.query, asked):
                # "Why would that help?" is about the exchange it follows, not about "help".
                exchange = self._previous_exchange_terms(ctx, language)
                borrowed = self._distinctive(exchange, query, index)
                # In a fixed order: the scores sum over the terms, and a set's order changes from
                # one process to the next (string hashing), enough to move the last digit.
                for term in sorted(borrowed):
                    weights[term] = max(weights.get(term, 0.0), self.follow_up)
            # "road trip" also finds "roadtrip", "log in" finds "login": the same word, joined.
            joined = [t for t in compounds(ctx.query, language) if t not in asked and t in index]
            for term in joined:
                weights[term] = 1.0
            matched = asked.union(joined)
            ids = message_ids(messages)
            protected = positions_of(ids, ctx.protected)
            raw = index.bm25(weights, k1=self.k1, b=self.b, spread=self.expansion, silent=protected)
            raw[protected] = 0.0
            best = float(raw.max(initial=0.0))
            if best <= 0:
                return ctx
            own = raw / best
            final = spread_to_neighbors(own, self.neighbors, self.neighbor_share)
            spread = final.copy()
            damped: npt.NDArray[np.bool_] | None = None
            speaker = None
            if self.speaker_focus < 1.0:
                speakers = _SPEAKERS(messages)
                speaker = named_speaker(ctx.query, speakers)
                if speaker is not None:
                    # After the spread: the other speaker's question still lends its share to the
                    # answer next to it, then counts less itself.
                    other = {s: s is not None and s != speaker for s in set(speakers)}
                    marks = map(other.__getitem__, speakers)
                    damped = np.fromiter(marks, dtype=bool, count=len(messages))
                    final[damped] *= self.speaker_focus
            final[protected] = 0.0
            nonzero = positions(final)
            signal = dict(zip(items_at(ids, nonzero), final[nonzero].tolist(), strict=True))
            # Messages that speaker focus damps still say why they scored less.
            chosen = np.flatnonzero((spread >= 0.25) & (final > 0))
            picked = chosen.tolist()
            chosen_ids = items_at(ids, picked)
            # What the reasons need from the index, taken now: the shared index changes with later
            # calls.
            held = list(map(index.terms_at, picked))
            focus = f" (x{self.speaker_focus:g}: the query is about {speaker})"

            def trace() -> list[Decision]:
                how, expanded = self._how, set(related)
                damps = damped[chosen].tolist() if damped is not None else [False] * len(chosen)
                return [
                    Decision.trusted(
                        self.name,
                        "selected",
                        message_id,
                        f"relevance {score:.2f} to the query"
                        + (
                            how(text_terms, text, language, matched, expanded, borrowed)
                            if alone
                            else _NEIGHBOUR
                        )
                        + (focus if mark else ""),
                        score,
                    )
                    for message_id, score, alone, mark, text_terms, text in zip(
                        chosen_ids,
                        final[chosen].tolist(),
                        (spread[chosen] == own[chosen]).tolist(),
                        damps,
                        held,
                        items_at(texts, picked),
                        strict=True,
                    )
                ]

            selected = DecisionLog.deferred(chosen_ids, trace)
            return ctx.with_signal("relevance", signal).evolve(decisions=ctx.decisions + selected)

    def _follows_up(self, query: str, asked: set[str]) -> bool:
        """Whether the query says too little on its own to be about anything but the exchange
        it follows."""
        if len(asked) <= self.follow_up_words:
            return True
        if len(asked) > self.follow_up_pointing_words:
            return False
        return not _POINTING.isdisjoint(word.lower() for word in WORD.findall(query))

    def _language(self, messages: Sequence[Message]) -> Language:
        """The language the conversation's words are stemmed in: ``language``, or with
        ``"auto"`` the one its user and assistant turns lean to (English on a tie)."""
        if self.language != "auto":
            return self.language
        return "fr" if sum(_LEANINGS(messages)) > 0 else "en"

    @staticmethod
    def _previous_exchange_terms(ctx: PackContext, language: Language) -> list[str]:
        """Terms of the exchange the query follows: the user message before the question and
        the messages after it (from the last user message on when the query was given apart)."""
        messages = ctx.messages
        users = np.flatnonzero(flags(messages) & USER)[-2:].tolist()
        if users and messages[users[-1]].text == ctx.query:
            end, users = users[-1], users[:-1]
        else:
            end = len(messages)
        if not users:
            return []
        return [
            term
            for msg in messages[users[-1] : end]
            if msg.role not in ("system", "developer")
            for term in terms(msg.text, language)
        ]

    @staticmethod
    def _distinctive(
        borrowed: Sequence[str], query: Sequence[str], index: InvertedIndex
    ) -> set[str]:
        """The borrowed terms that say most about the exchange (count x idf), at most
        ``_FOLLOW_UP_TERMS``: after a long tool output, "Why?" should not become a query of
        thousands of terms."""
        counts = Counter(borrowed)
        for term in query:
            counts.pop(term, None)
        weight = {term: count * index.idf(term) for term, count in counts.items()}
        return set(sorted(counts, key=lambda t: (-weight[t], t))[:_FOLLOW_UP_TERMS])

    def _related_terms(
        self, text: str, query: Sequence[str], index: InvertedIndex
    ) -> dict[str, float]:
        """Query expansion: the conversation's terms related to the query's words, weighted."""
        if not self.related or not self.related_top:
            return {}
        table = default_stem_vectors()
        asked = set(query)
        weights: dict[str, float] = {}
        for position, word in enumerate(WORD.findall(text)):
            stems = terms(word)
            # A capitalised word inside the question is a name: "Melanie" has no synonyms.
            if len(stems) != 1 or (position and word[0].isupper()):
                continue
            found = 0
            for other, cosine in table.nearest(stems[0]):
                if found == self.related_top or cosine < self.related_min:
                    break
                if other in asked or other not in index:
                    continue
                found += 1
                weights[other] = max(weights.get(other, 0.0), self.related * cosine)
        return weights

    @staticmethod
    def _how(
        held: Mapping[str, int],
        text: str,
        language: Language,
        asked: set[str],
        related: set[str],
        borrowed: set[str],
    ) -> str:
        """How a message holding the terms ``held`` came to be relevant on its own, for its
        decision: the query's words it holds, as written, else the words that led to it."""
        matched = asked.intersection(held)
        if matched:
            return f" (matched: {_words(text, matched, language)})"
        followed = borrowed.intersection(held) if borrowed else None
        if followed:
            words = _words(text, followed, language)
            return f" (the query follows up on the previous exchange: {words})"
        through = related.intersection(held)
        if through:
            return f" (through related words: {_words(text, through, language)})"
        # Matched through the terms its neighbours lend it alone.
        return _NEIGHBOUR


def _words(text: str, stems: set[str], language: Language = "en", most: int = 3) -> str:
    """The first ``most`` words of ``text`` behind ``stems``, as written: "hungry", not the
    stem "hungri"."""
    spellings = _spellings(text, language)
    spelled = [word for stem, word in spellings.items() if stem in stems][:most]
    # Should the word split differ from the text's terms, the stem still says which.
    missing = sorted(stems.difference(spellings))[: most - len(spelled)]
    return ", ".join([*spelled, *missing])


@lru_cache(maxsize=20_000)
def _spellings(text: str, language: Language) -> dict[str, str]:
    """Each term of ``text`` and the first word behind it, in order (cached: the same history
    is explained again on the next question)."""
    found: dict[str, str] = {}
    for stem, word in analyse(text, language):
        found.setdefault(stem, word)
    return found


register(_spellings)
