"""How ctxpack measures what a message has to do with the query: words and their index, related
words, (opt-in) sentence embeddings, and the named signals the relevance stage combines.

The signals, in the order :class:`~ctxpack.RelevanceScorer` runs them by default: term signals
add weighted terms to the query (:class:`RelatedWords`, :class:`QueryWords`, :class:`FollowUp`,
:class:`CompoundWords`), score signals change the scores after BM25 (:class:`Neighbors`,
:class:`SpeakerFocus`). Write your own by subclassing :class:`TermSignal` or
:class:`ScoreSignal`.
"""

from ._base import Adjustment as Adjustment
from ._base import Query as Query
from ._base import ScoreSignal as ScoreSignal
from ._base import Signal as Signal
from ._base import TermSignal as TermSignal
from ._base import signal_from as signal_from
from ._compound_words import CompoundWords as CompoundWords
from ._follow_up import FollowUp as FollowUp
from ._neighbors import Neighbors as Neighbors
from ._neighbors import spread_to_neighbors as spread_to_neighbors
from ._query_words import QueryWords as QueryWords
from ._related_words import RelatedWords as RelatedWords
from ._speaker_focus import SpeakerFocus as SpeakerFocus
from ._speaker_focus import named_speaker as named_speaker

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
    "signal_from",
]
