"""ctxpack decides what a large language model sees.

It packs a raw conversation into a message list that fits a token budget, keeps what the next
answer needs, and records every cut.
"""

from .adapters import AnthropicPayload as AnthropicPayload
from .adapters import from_anthropic as from_anthropic
from .adapters import from_langchain as from_langchain
from .adapters import from_openai as from_openai
from .adapters import to_anthropic as to_anthropic
from .adapters import to_langchain as to_langchain
from .adapters import to_openai as to_openai
from .adapters import validate_anthropic as validate_anthropic
from .adapters import validate_openai as validate_openai
from .adapters.clients import PackedClient as PackedClient
from .adapters.clients import wrap_anthropic as wrap_anthropic
from .adapters.clients import wrap_openai as wrap_openai
from .caches import clear_caches as clear_caches
from .editing import Compactor as Compactor
from .editing import ToolResultClearer as ToolResultClearer
from .errors import ArtifactNotFoundError as ArtifactNotFoundError
from .errors import BudgetExceededError as BudgetExceededError
from .errors import ConfigError as ConfigError
from .errors import CtxpackError as CtxpackError
from .errors import InvalidMessageError as InvalidMessageError
from .errors import SelectionError as SelectionError
from .errors import TokenizerUnavailableError as TokenizerUnavailableError
from .filters import ToolOutputFilter as ToolOutputFilter
from .messages import FunctionCall as FunctionCall
from .messages import Message as Message
from .messages import ToolCall as ToolCall
from .messages import ensure_messages as ensure_messages
from .packing import default_pipeline as default_pipeline
from .packing import pack as pack
from .packing import semantic_pipeline as semantic_pipeline
from .pipeline import Decision as Decision
from .pipeline import DecisionLog as DecisionLog
from .pipeline import PackContext as PackContext
from .pipeline import Pipeline as Pipeline
from .pipeline import Stage as Stage
from .result import PackResult as PackResult
from .selection import LexicalSelector as LexicalSelector
from .selection import ModelSelector as ModelSelector
from .selection import Selection as Selection
from .selection import Workspace as Workspace
from .selection import apply_selection as apply_selection
from .session import Session as Session
from .signals.embeddings import MiniLMEmbedder as MiniLMEmbedder
from .stages import CitationInheritor as CitationInheritor
from .stages import Deduplicator as Deduplicator
from .stages import ExtractiveCompressor as ExtractiveCompressor
from .stages import GreedyPacker as GreedyPacker
from .stages import MemorySelector as MemorySelector
from .stages import PromptComposer as PromptComposer
from .stages import RelevanceScorer as RelevanceScorer
from .stages import SemanticScorer as SemanticScorer
from .stages.alternate import TurnAlternator as TurnAlternator
from .stages.compress import compress_lines as compress_lines
from .store import ArtifactStore as ArtifactStore
from .store import SQLiteArtifactStore as SQLiteArtifactStore
from .tokens import ApproximateTokenCountWarning as ApproximateTokenCountWarning
from .tokens import TokenCounter as TokenCounter
from .tokens import anthropic_approx_counter as anthropic_approx_counter
from .tokens import count_tokens as count_tokens
from .tokens import count_tokens_approx as count_tokens_approx
from .tokens import get_counter as get_counter
from .tokens import tool_definition_tokens as tool_definition_tokens
from .usage import ContextUsage as ContextUsage
from .usage import context_usage as context_usage

__version__ = "0.1.0"

__all__ = [
    "AnthropicPayload",
    "ApproximateTokenCountWarning",
    "ArtifactNotFoundError",
    "ArtifactStore",
    "BudgetExceededError",
    "CitationInheritor",
    "Compactor",
    "ConfigError",
    "ContextUsage",
    "CtxpackError",
    "Decision",
    "DecisionLog",
    "Deduplicator",
    "ExtractiveCompressor",
    "FunctionCall",
    "GreedyPacker",
    "InvalidMessageError",
    "LexicalSelector",
    "MemorySelector",
    "Message",
    "MiniLMEmbedder",
    "ModelSelector",
    "PackContext",
    "PackResult",
    "PackedClient",
    "Pipeline",
    "PromptComposer",
    "RelevanceScorer",
    "SQLiteArtifactStore",
    "Selection",
    "SelectionError",
    "SemanticScorer",
    "Session",
    "Stage",
    "TokenCounter",
    "TokenizerUnavailableError",
    "ToolCall",
    "ToolOutputFilter",
    "ToolResultClearer",
    "TurnAlternator",
    "Workspace",
    "anthropic_approx_counter",
    "apply_selection",
    "clear_caches",
    "compress_lines",
    "context_usage",
    "count_tokens",
    "count_tokens_approx",
    "default_pipeline",
    "ensure_messages",
    "from_anthropic",
    "from_langchain",
    "from_openai",
    "get_counter",
    "pack",
    "semantic_pipeline",
    "to_anthropic",
    "to_langchain",
    "to_openai",
    "tool_definition_tokens",
    "validate_anthropic",
    "validate_openai",
    "wrap_anthropic",
    "wrap_openai",
]
