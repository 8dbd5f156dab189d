"""Score each message's relevance to the query: BM25 over the terms the signals weigh, then the
signals that change the scores (:mod:`ctxpack.signals`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import attrgetter
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field, SerializeAsAny, field_validator

from .._internal.columns import ids as message_ids
from .._internal.columns import items_at, positions, positions_of
from .._internal.decisions import trusted_decision
from .._internal.prefix import PrefixMemo
from ..caches import memoize
from ..errors import UnknownNameError
from ..messages import Message
from ..pipeline import Decision, DecisionLog, PackContext, check_context
from ..signals import (
    CompoundWords,
    FollowUp,
    Neighbors,
    Query,
    QueryWords,
    RelatedWords,
    ScoreSignal,
    Signal,
    SpeakerFocus,
    TermSignal,
    signal_from,
)
from ..signals.bm25 import INDEXES
from ..signals.lexical import Language, analyse, leaning, terms
from ._base import StageModel

__all__ = ["RelevanceScorer"]

Scores = npt.NDArray[np.float64]

# How a message that holds none of the signals' terms itself matched: through the terms its
# neighbours lend it (document expansion).
_LENT = "neighbour of a relevant message"
# A message whose relevance reaches this at some step gets a ``selected`` decision.
_EXPLAINED = 0.25

_TEXTS: PrefixMemo[Message, str] = PrefixMemo(attrgetter("text"))
# Only people's turns tell the conversation's language: a system prompt or a tool's output is
# often English whatever the users speak.
_LEANINGS: PrefixMemo[Message, int] = PrefixMemo(
    lambda msg: leaning(msg.text) if msg.role in ("user", "assistant") else 0
)

_DEFAULT_SIGNALS: tuple[Signal, ...] = (
    RelatedWords(),
    QueryWords(),
    FollowUp(),
    CompoundWords(),
    Neighbors(),
    SpeakerFocus(),
)


class RelevanceScorer(StageModel):
    """Set the ``relevance`` signal (0 to 1) of every message from its BM25 score for the query,
    combining named signals that can be listed, weighed, replaced or switched off.

    Terms are lower-cased, stemmed words without stop words, in English or, for a conversation
    whose turns lean French, in French (``language``). The term signals weigh the terms BM25
    looks for: the query's own words, related words ("bicycle" also looks for "bike"), the
    previous exchange's words for a follow-up question, words written together ("road trip"
    finds "roadtrip"); a term gets the largest weight any signal gives it. Each message is
    indexed with a share of its neighbours' terms too (``expansion``): in a dialogue, an answer
    ("Yes, last May!") often only matches the query through the question before it. Scores are
    divided by the best one, so the most relevant message gets 1; then the score signals change
    them in order: neighbours inherit a share, and a query naming one speaker damps the others.
    Messages that reach 0.25 get a ``selected`` decision saying why. The index behind it is
    cached per conversation and grows with it, so a new question on the same history only
    analyses the question.

    Args:
        signals: The signals, in the order they apply (:mod:`ctxpack.signals`): by default
            :class:`~ctxpack.signals.RelatedWords`, :class:`~ctxpack.signals.QueryWords`,
            :class:`~ctxpack.signals.FollowUp`, :class:`~ctxpack.signals.CompoundWords`,
            :class:`~ctxpack.signals.Neighbors`, :class:`~ctxpack.signals.SpeakerFocus`.
        expansion: Weights of the neighbours' terms in a message's index entry, by distance
            (``()`` turns document expansion off).
        language: How words are stemmed: ``"en"``, ``"fr"``, or ``"auto"``: French when the
            user and assistant turns hold more French function words than English ones.
        k1: BM25 term-frequency saturation.
        b: BM25 length normalisation.

    Example:
        >>> from ctxpack.signals import RelatedWords
        >>> scorer = RelevanceScorer().replace("related", RelatedWords(weight=0.5))
        >>> scorer.without("speaker").signal_names
        ('related', 'query', 'follow_up', 'compounds', 'neighbors')
        >>> scorer["related"].weight
        0.5
    """

    name: ClassVar[str] = "relevance"
    provides: ClassVar[frozenset[str]] = frozenset({"relevance"})

    signals: tuple[SerializeAsAny[Signal], ...] = _DEFAULT_SIGNALS
    expansion: tuple[float, ...] = (0.3, 0.15)
    language: Literal["auto", "en", "fr"] = "auto"
    k1: float = Field(default=1.2, gt=0)
    b: float = Field(default=0.75, ge=0.0, le=1.0)

    @field_validator("expansion")
    @classmethod
    def _non_negative(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        if any(w < 0 for w in value):
            raise ValueError("expansion weights must be >= 0")
        return value

    @field_validator("signals", mode="before")
    @classmethod
    def _from_dumps(cls, value: Any) -> Any:
        # A dumped configuration names each signal: make them again.
        if isinstance(value, list | tuple):
            return tuple(signal_from(v) if isinstance(v, Mapping) else v for v in value)
        return value

    @field_validator("signals")
    @classmethod
    def _named_once(cls, value: tuple[Signal, ...]) -> tuple[Signal, ...]:
        for signal in value:
            if not isinstance(signal, TermSignal | ScoreSignal):
                raise ValueError(f"{signal!r} is neither a TermSignal nor a ScoreSignal")
        names = [signal.name for signal in value]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"signal names must be unique; repeated: {', '.join(repeated)}")
        return value

    @property
    def signal_names(self) -> tuple[str, ...]:
        """The signals' names, in order."""
        return tuple(signal.name for signal in self.signals)

    def __getitem__(self, name: str) -> Signal:
        """The signal called ``name``."""
        for signal in self.signals:
            if signal.name == name:
                return signal
        raise UnknownNameError(f"no signal named {name!r}; signals are {list(self.signal_names)}")

    def replace(self, name: str, signal: Signal) -> RelevanceScorer:
        """A new scorer where ``signal`` takes the place of the signal called ``name``."""
        self[name]  # raises the error that lists the names
        return self._with(tuple(signal if s.name == name else s for s in self.signals))

    def without(self, *names: str) -> RelevanceScorer:
        """A new scorer without the signals called ``names``."""
        for name in names:
            self[name]
        return self._with(tuple(s for s in self.signals if s.name not in names))

    def _with(self, signals: tuple[Signal, ...]) -> RelevanceScorer:
        options = {field: getattr(self, field) for field in type(self).model_fields}
        return type(self)(**{**options, "signals": signals})

    def __call__(self, ctx: PackContext, /) -> PackContext:
        check_context(ctx, self)
        if not ctx.query:
            return ctx
        messages = ctx.messages
        language = self._language(messages)
        texts = _TEXTS(messages)
        ids = message_ids(messages)
        protected = positions_of(ids, ctx.protected)
        # Lent to this call alone: another thread packing meanwhile gets another index.
        with INDEXES.borrow(texts, language) as index:
            query = Query(ctx.query, terms(ctx.query, language), language, messages, index)
            added = [(s, s.terms_for(query)) for s in self.signals if isinstance(s, TermSignal)]
            weights = _merged(added)
            raw = index.bm25(weights, k1=self.k1, b=self.b, spread=self.expansion, silent=protected)
            raw[protected] = 0.0
            best = float(raw.max(initial=0.0))
            if best <= 0:
                return ctx
            steps = self._adjusted(raw / best, query)
            final = steps[-1][0].copy()
            final[protected] = 0.0
            selected = self._selected(final, steps, added, query, ids, texts)
        nonzero = positions(final)
        signal = dict(zip(items_at(ids, nonzero), final[nonzero].tolist(), strict=True))
        return ctx.with_signal("relevance", signal).evolve(decisions=ctx.decisions + selected)

    def _selected(
        self,
        final: Scores,
        steps: Sequence[tuple[Scores, str]],
        added: Sequence[tuple[TermSignal, Mapping[str, float]]],
        query: Query,
        ids: Sequence[str],
        texts: Sequence[str],
    ) -> DecisionLog:
        """A ``selected`` decision for each message that reached 0.25 at some step, its reason
        written only when the trace is read."""
        # A message a score signal lowers still says why it counted before.
        peak = np.maximum.reduce([scores for scores, _ in steps])
        chosen = np.flatnonzero((peak >= _EXPLAINED) & (final > 0))
        picked = chosen.tolist()
        chosen_ids = items_at(ids, picked)
        # What the reasons need from the index, taken now: the shared index changes with later
        # calls.
        held = list(map(query.index.terms_at, picked))
        language = query.language

        def trace() -> list[Decision]:
            scores = final[chosen].tolist()
            written = items_at(texts, picked)
            reasons = _reasons(added, steps, chosen, scores, held, written, language)
            return [
                trusted_decision(self.name, "selected", message_id, reason, score)
                for message_id, reason, score in zip(chosen_ids, reasons, scores, strict=True)
            ]

        return DecisionLog.deferred(chosen_ids, trace)

    def _adjusted(self, own: Scores, query: Query) -> list[tuple[Scores, str]]:
        """The scores after each score signal that changed them, with its note, from ``own``."""
        own.flags.writeable = False
        steps = [(own, "")]
        for signal in self.signals:
            if isinstance(signal, ScoreSignal):
                adjusted = signal.adjust(steps[-1][0], query)
                if adjusted is not None:
                    adjusted.scores.flags.writeable = False
                    steps.append((adjusted.scores, adjusted.note))
        return steps

    def _language(self, messages: Sequence[Message]) -> Language:
        """The language the conversation's words are stemmed in: ``language``, or with
        ``"auto"`` the one its user and assistant turns lean to (English on a tie)."""
        if self.language != "auto":
            return self.language
        return "fr" if sum(_LEANINGS(messages)) > 0 else "en"


def _merged(added: Sequence[tuple[TermSignal, Mapping[str, float]]]) -> dict[str, float]:
    """Each term once, with the largest weight a signal gives it, in the order the signals
    first give it (the scores sum over the terms: the order moves their last digit)."""
    weights: dict[str, float] = {}
    for _, weighted in added:
        for term, weight in weighted.items():
            old = weights.get(term)
            if old is None or weight > old:
                weights[term] = weight
    return weights


def _reasons(
    added: Sequence[tuple[TermSignal, Mapping[str, float]]],
    steps: Sequence[tuple[Scores, str]],
    chosen: npt.NDArray[np.intp],
    scores: Sequence[float],
    held: Sequence[Mapping[str, int]],
    texts: Sequence[str],
    language: Language,
) -> list[str]:
    """Why each ``chosen`` message is relevant: the note of the score signal that raised it,
    else the words it holds, then the notes of the score signals that lowered it."""
    # Signals sharing a note explain together; the lowest rank explains first.
    grouped: dict[str, set[str]] = {}
    for signal, weighted in sorted(added, key=lambda pair: pair[0].rank):
        grouped.setdefault(signal.note, set()).update(weighted)
    # Each note cut around its words once, rather than formatted for every message.
    explainers = [(note.partition("{words}"), stems) for note, stems in grouped.items() if stems]
    raised: list[str | None] = [None] * len(chosen)
    lowered = [""] * len(chosen)
    before = steps[0][0][chosen]
    for step, note in steps[1:]:
        after = step[chosen]
        for k in np.flatnonzero(after > before).tolist():
            raised[k] = note
        for k in np.flatnonzero(after < before).tolist():
            lowered[k] += f" ({note})"
        before = after
    return [
        f"relevance {score:.2f} to the query"
        + (f" ({lift})" if lift else _how(text_terms, text, language, explainers))
        + notes
        for score, lift, notes, text_terms, text in zip(
            scores, raised, lowered, held, texts, strict=True
        )
    ]


def _how(
    held: Mapping[str, int],
    text: str,
    language: Language,
    explainers: Sequence[tuple[tuple[str, str, str], set[str]]],
) -> str:
    """How a message holding the terms ``held`` came to be relevant on its own: the words of
    the first signal it holds, as written, else the neighbours that lend it theirs."""
    for (before, mark, after), stems in explainers:
        found = stems.intersection(held)
        if found:
            words = _words(text, found, language) if mark else ""
            return f" ({before}{words}{after})"
    return f" ({_LENT})"


def _words(text: str, stems: set[str], language: Language = "en", most: int = 3) -> str:
    """The first ``most`` words of ``text`` behind ``stems``, as written: "hungry", not the
    stem "hungri"."""
    spellings = _spellings(text, language)
    spelled = [word for stem, word in spellings.items() if stem in stems][:most]
    # Should the word split differ from the text's terms, the stem still says which.
    missing = sorted(stems.difference(spellings))[: most - len(spelled)]
    return ", ".join([*spelled, *missing])


@memoize(maxsize=20_000, maxbytes=4 * 2**20, name="term spellings")
def _spellings(text: str, language: Language) -> dict[str, str]:
    """Each term of ``text`` and the first word behind it, in order (cached: the same history
    is explained again on the next question)."""
    found: dict[str, str] = {}
    for stem, word in analyse(text, language):
        found.setdefault(stem, word)
    return found
