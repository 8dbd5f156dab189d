"""ctxpack decides what a large language model sees.

It packs a raw conversation into a message list that fits a token budget, keeps what the next
answer needs, and records every cut.

The names here are the everyday ones: :func:`pack` and its result, messages and decisions, the
errors, token counting, the pipeline and its default stages, the agent :class:`Session`, the
bill (:func:`simulate`) and the window (:func:`context_usage`), and the OpenAI and Anthropic
adapters and client wrappers; each is imported on first use, so that ``import ctxpack`` itself
costs next to nothing. Everything else is imported from its module: custom stages from
:mod:`ctxpack.pipeline` (``PackContext``, ``Stage``, ``DecisionLog``) and their base class from
:mod:`ctxpack.stages` (``StageModel``), counters from
:mod:`ctxpack.tokens`, prices from :mod:`ctxpack.cost`, filters from :mod:`ctxpack.filters`,
the artifact store from :mod:`ctxpack.store`, clearing and compaction from
:mod:`ctxpack.editing`, selection from :mod:`ctxpack.selection`, code retrieval from
:mod:`ctxpack.code`, other adapters from :mod:`ctxpack.adapters`, the LangChain agent
middleware from :mod:`ctxpack.integrations`, provider detection from :mod:`ctxpack.providers`,
caches from :mod:`ctxpack.caches`. Each is reachable from a bare ``import ctxpack``
(``ctxpack.selection.Workspace``), imported on first use. See the architecture page of the
documentation for the module map.
"""

from typing import TYPE_CHECKING, Any

from .errors import ArtifactNotFoundError as ArtifactNotFoundError
from .errors import BudgetExceededError as BudgetExceededError
from .errors import ConfigError as ConfigError
from .errors import CtxpackError as CtxpackError
from .errors import InvalidMessageError as InvalidMessageError

# Raised only by ctxpack.selection: documented in ctxpack.errors, out of the everyday names, still
# reachable here so that code written against the earlier top level keeps working.
from .errors import SelectionError as SelectionError
from .errors import TokenizerUnavailableError as TokenizerUnavailableError

# Where each everyday name lives. Each is imported on first use (PEP 562), like the submodules
# below: a program pays for pydantic, numpy and the stages when it first packs, not when it
# imports ctxpack (a command line's --help, a web app's start-up). The errors are plain classes,
# imported at once so that an ``except ctxpack.ConfigError`` costs nothing.
_EXPORTS: dict[str, str] = {
    "AsyncSession": "async_session",
    "from_anthropic": "adapters",
    "from_openai": "adapters",
    "to_anthropic": "adapters",
    "to_openai": "adapters",
    "wrap_anthropic": "integrations.clients",
    "wrap_openai": "integrations.clients",
    "simulate": "cost",
    "FunctionCall": "messages",
    "Message": "messages",
    "ToolCall": "messages",
    "default_pipeline": "packing",
    "pack": "packing",
    "Decision": "pipeline",
    "Pipeline": "pipeline",
    "PackResult": "result",
    "Session": "session",
    "CitationInheritor": "stages",
    "Deduplicator": "stages",
    "ExtractiveCompressor": "stages",
    "GreedyPacker": "stages",
    "MemorySelector": "stages",
    "PromptComposer": "stages",
    "RelevanceScorer": "stages",
    "TurnAlternator": "stages",
    "TokenCounter": "tokens",
    "count_tokens": "tokens",
    "get_counter": "tokens",
    "context_usage": "usage",
}

if TYPE_CHECKING:
    from . import code as code
    from . import editing as editing
    from . import plot as plot
    from . import selection as selection
    from . import testing as testing
    from .adapters import from_anthropic as from_anthropic
    from .adapters import from_openai as from_openai
    from .adapters import to_anthropic as to_anthropic
    from .adapters import to_openai as to_openai
    from .async_session import AsyncSession as AsyncSession
    from .cost import simulate as simulate
    from .integrations.clients import wrap_anthropic as wrap_anthropic
    from .integrations.clients import wrap_openai as wrap_openai
    from .messages import FunctionCall as FunctionCall
    from .messages import Message as Message
    from .messages import ToolCall as ToolCall
    from .packing import default_pipeline as default_pipeline
    from .packing import pack as pack
    from .pipeline import Decision as Decision
    from .pipeline import Pipeline as Pipeline
    from .result import PackResult as PackResult
    from .session import Session as Session
    from .stages import CitationInheritor as CitationInheritor
    from .stages import Deduplicator as Deduplicator
    from .stages import ExtractiveCompressor as ExtractiveCompressor
    from .stages import GreedyPacker as GreedyPacker
    from .stages import MemorySelector as MemorySelector
    from .stages import PromptComposer as PromptComposer
    from .stages import RelevanceScorer as RelevanceScorer
    from .stages import TurnAlternator as TurnAlternator
    from .tokens import TokenCounter as TokenCounter
    from .tokens import count_tokens as count_tokens
    from .tokens import get_counter as get_counter
    from .usage import context_usage as context_usage

__version__ = "0.1.0"

__all__ = [
    "ArtifactNotFoundError",
    "AsyncSession",
    "BudgetExceededError",
    "CitationInheritor",
    "ConfigError",
    "CtxpackError",
    "Decision",
    "Deduplicator",
    "ExtractiveCompressor",
    "FunctionCall",
    "GreedyPacker",
    "InvalidMessageError",
    "MemorySelector",
    "Message",
    "PackResult",
    "Pipeline",
    "PromptComposer",
    "RelevanceScorer",
    "Session",
    "TokenCounter",
    "TokenizerUnavailableError",
    "ToolCall",
    "TurnAlternator",
    "context_usage",
    "count_tokens",
    "default_pipeline",
    "from_anthropic",
    "from_openai",
    "get_counter",
    "pack",
    "simulate",
    "to_anthropic",
    "to_openai",
    "wrap_anthropic",
    "wrap_openai",
]


def __getattr__(name: str) -> Any:
    """``ctxpack.pack``, ``ctxpack.selection``...: an everyday name, or a submodule, not imported
    yet is imported on first use (PEP 562), so that ``import ctxpack`` stays cheap and every
    documented name and module is reachable from it."""
    if not name.startswith("_"):
        import importlib

        module = _EXPORTS.get(name)
        if module is not None:
            value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
            globals()[name] = value  # found at once from now on
            return value
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise  # the submodule exists but needs a package that is missing
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    import pkgutil

    submodules = {m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")}
    return sorted({*globals(), *_EXPORTS, *submodules})
