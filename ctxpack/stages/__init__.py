"""The built-in stages, one per module, in the order the default pipeline runs them."""

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
    "TurnAlternator",
]
