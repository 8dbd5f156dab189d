"""The built-in stages, one per module, and :class:`StageModel`, the base class of stages."""

from ._base import StageModel as StageModel
from .alternate import TurnAlternator as TurnAlternator
from .citations import CitationInheritor as CitationInheritor
from .compose import PromptComposer as PromptComposer
from .compress import ExtractiveCompressor as ExtractiveCompressor
from .dedupe import Deduplicator as Deduplicator
from .flag import InjectionFlagger as InjectionFlagger
from .memory import MemorySelector as MemorySelector
from .pack import GreedyPacker as GreedyPacker
from .redact import SecretRedactor as SecretRedactor
from .relevance import RelevanceScorer as RelevanceScorer
from .semantic import SemanticScorer as SemanticScorer

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
]
