"""The built-in stages, one per module, and :class:`StageModel`, the base class of stages."""

from ._alternate import TurnAlternator as TurnAlternator
from ._alternate import provider_conform as provider_conform
from ._alternate import turn_rule_breaks as turn_rule_breaks
from ._base import StageModel as StageModel
from ._citations import CitationInheritor as CitationInheritor
from ._compose import PromptComposer as PromptComposer
from ._compress import ExtractiveCompressor as ExtractiveCompressor
from ._compress import compress_lines as compress_lines
from ._compress import has_proper_noun_heuristic as has_proper_noun_heuristic
from ._compress import score_line as score_line
from ._compress import spacy_available as spacy_available
from ._dedupe import Deduplicator as Deduplicator
from ._flag import InjectionFlagger as InjectionFlagger
from ._memory import MemorySelector as MemorySelector
from ._pack import GreedyPacker as GreedyPacker
from ._redact import SecretRedactor as SecretRedactor
from ._relevance import RelevanceScorer as RelevanceScorer
from ._semantic import SemanticScorer as SemanticScorer
from ._tool_pairs import exchange_starts as exchange_starts
from ._tool_pairs import exchange_units as exchange_units
from ._tool_pairs import provider_pairs as provider_pairs
from ._tool_pairs import tool_answers as tool_answers
from ._tool_pairs import unanswered_calls as unanswered_calls
from ._tool_pairs import without_unsent_reasoning as without_unsent_reasoning

__all__ = [
    "CitationInheritor",
    "Deduplicator",
    "ExtractiveCompressor",
    "GreedyPacker",
    "InjectionFlagger",
    "MemorySelector",
    "PromptComposer",
    "RelevanceScorer",
    "SecretRedactor",
    "SemanticScorer",
    "StageModel",
    "TurnAlternator",
    "compress_lines",
]
