"""How ctxpack measures what a message has to do with the query: words and their index, related
words, (opt-in) sentence embeddings, and the named signals the relevance stage combines.

The signals, in the order :class:`~ctxpack.RelevanceScorer` runs them by default: term signals
add weighted terms to the query (:class:`RelatedWords`, :class:`QueryWords`, :class:`FollowUp`,
:class:`CompoundWords`), score signals change the scores after BM25 (:class:`Neighbors`,
:class:`SpeakerFocus`). Write your own by subclassing :class:`TermSignal` or
:class:`ScoreSignal`.
"""

from .base import Adjustment as Adjustment
from .base import Query as Query
from .base import ScoreSignal as ScoreSignal
from .base import Signal as Signal
from .base import TermSignal as TermSignal
from .base import signal_from as signal_from
from .compound_words import CompoundWords as CompoundWords
from .follow_up import FollowUp as FollowUp
from .neighbors import Neighbors as Neighbors
from .neighbors import spread_to_neighbors as spread_to_neighbors
from .query_words import QueryWords as QueryWords
from .related_words import RelatedWords as RelatedWords
from .speaker_focus import SpeakerFocus as SpeakerFocus
from .speaker_focus import named_speaker as named_speaker

__all__ = [
    "Adjustment",
    "CompoundWords",
    "FollowUp",
    "Neighbors",
    "Query",
    "QueryWords",
    "RelatedWords",
    "ScoreSignal",
    "Signal",
    "SpeakerFocus",
    "TermSignal",
    "named_speaker",
    "signal_from",
    "spread_to_neighbors",
]
