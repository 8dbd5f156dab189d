"""The public API: ``ctxpack.__all__`` holds the everyday names, and nothing else; the advanced
names stay importable from their modules. Adding, moving or removing a name is a deliberate change
that must show up here."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ctxpack

EVERYDAY = {
    # packing and its result
    "pack",
    "PackResult",
    "default_pipeline",
    "Pipeline",
    "Decision",
    # messages
    "FunctionCall",
    "Message",
    "ToolCall",
    # errors
    "ArtifactNotFoundError",
    "BudgetExceededError",
    "ConfigError",
    "CtxpackError",
    "InvalidMessageError",
    "TokenizerUnavailableError",
    # token counting
    "TokenCounter",
    "count_tokens",
    "get_counter",
    # the default stages
    "CitationInheritor",
    "Deduplicator",
    "ExtractiveCompressor",
    "GreedyPacker",
    "MemorySelector",
    "PromptComposer",
    "RelevanceScorer",
    "TurnAlternator",
    # the agent side: the session, the bill, the window
    "Session",
    "AsyncSession",
    "simulate",
    "context_usage",
    # the two providers, and clients wrapped around them
    "from_anthropic",
    "from_openai",
    "to_anthropic",
    "to_openai",
    "wrap_anthropic",
    "wrap_openai",
}

# Names that were top-level before the surface was cut down, and the module each lives in now.
ADVANCED = {
    "ctxpack.adapters": [
        "AnthropicPayload",
        "from_langchain",
        "to_langchain",
        "validate_anthropic",
        "validate_openai",
    ],
    "ctxpack.integrations.clients": ["PackedClient"],
    "ctxpack.caches": ["cache_stats", "clear_caches", "memoize"],
    "ctxpack.editing": ["Compactor", "ToolResultClearer"],
    "ctxpack.errors": ["SelectionError"],
    "ctxpack.filters": ["ToolOutputFilter"],
    "ctxpack.guard": ["ArrivalGuard"],
    "ctxpack.injection": ["find_injections"],
    "ctxpack.redaction": ["find_secrets", "redact", "redact_message"],
    "ctxpack.retrieval": ["handle_retrieve_call", "read_artifact", "retrieve_tool"],
    "ctxpack.messages": ["ensure_messages"],
    "ctxpack.packing": ["semantic_pipeline"],
    "ctxpack.pipeline": ["DecisionLog", "PackContext", "Stage"],
    "ctxpack.selection": [
        "LexicalSelector",
        "ModelSelector",
        "Selection",
        "Workspace",
        "apply_selection",
    ],
    "ctxpack.signals.embeddings": ["MiniLMEmbedder"],
    "ctxpack.stages": ["InjectionFlagger", "SecretRedactor", "SemanticScorer", "compress_lines"],
    "ctxpack.store": [
        "ArtifactStore",
        "AsyncSessionStore",
        "MemoryStore",
        "SQLiteArtifactStore",
        "SQLiteStore",
        "SessionStore",
        "open_async_store",
        "open_store",
    ],
    "ctxpack.store.conformance": ["check_async_session_store", "check_session_store"],
    "ctxpack.store.postgres": ["AsyncPostgresStore", "PostgresStore"],
    "ctxpack.store.redis": ["AsyncRedisStore", "RedisStore"],
    "ctxpack.tokens": [
        "ApproximateTokenCountWarning",
        "anthropic_approx_counter",
        "count_tokens_approx",
        "tool_definition_tokens",
    ],
    "ctxpack.usage": ["ContextUsage"],
}


def test_all_is_pinned() -> None:
    assert set(ctxpack.__all__) == EVERYDAY


def test_all_is_sorted_and_unique() -> None:
    assert ctxpack.__all__ == sorted(set(ctxpack.__all__))


def test_every_exported_name_exists_and_is_public() -> None:
    for name in ctxpack.__all__:
        member = getattr(ctxpack, name)
        module = getattr(member, "__module__", "ctxpack")
        assert module.startswith("ctxpack"), f"{name} comes from {module}"
        assert not module.startswith("ctxpack._internal"), f"{name} comes from {module}"


@pytest.mark.parametrize("module_name", sorted(ADVANCED))
def test_advanced_names_live_in_their_module(module_name: str) -> None:
    module = importlib.import_module(module_name)
    for name in ADVANCED[module_name]:
        assert name in module.__all__, f"{name} is not in {module_name}.__all__"
        assert callable(getattr(module, name))
        assert name not in ctxpack.__all__


def test_testing_helpers_are_not_top_level() -> None:
    # The conformance check lives in ctxpack.testing, away from the packing API.
    import ctxpack.testing

    assert "check_stage" not in ctxpack.__all__
    assert callable(ctxpack.testing.check_stage)


def test_every_public_module_is_reachable_from_a_bare_import() -> None:
    # In a fresh interpreter: in this one, other tests have imported the submodules already.
    script = """
import pkgutil, sys
import ctxpack
names = sorted(m.name for m in pkgutil.iter_modules(ctxpack.__path__) if not m.name.startswith("_"))
# Some are left to their first use (the import stays cheap); every one is reachable.
lazy = [n for n in names if f"ctxpack.{n}" not in sys.modules]
assert "selection" in lazy and "code" in lazy, lazy
for name in names:
    assert getattr(ctxpack, name) is sys.modules[f"ctxpack.{name}"], name
    assert name in dir(ctxpack), name
assert ctxpack.selection.Workspace is not None
try:
    ctxpack.no_such_module
except AttributeError as exc:
    assert "no attribute 'no_such_module'" in str(exc)
else:
    raise AssertionError("no AttributeError")
print(len(names))
"""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) >= 20
