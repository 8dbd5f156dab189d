"""The public API is exactly what ``ctxpack.__all__`` lists: adding or removing a name is a
deliberate change that must show up here."""

from __future__ import annotations

import ctxpack

EXPECTED = {
    # errors
    "ArtifactNotFoundError",
    "BudgetExceededError",
    "ConfigError",
    "CtxpackError",
    "InvalidMessageError",
    "TokenizerUnavailableError",
    # messages
    "FunctionCall",
    "Message",
    "ToolCall",
    "ensure_messages",
    # tokens
    "ApproximateTokenCountWarning",
    "TokenCounter",
    "anthropic_approx_counter",
    "count_tokens",
    "count_tokens_approx",
    "get_counter",
    "tool_definition_tokens",
    # pipeline and result
    "Decision",
    "DecisionLog",
    "PackContext",
    "PackResult",
    "Pipeline",
    "Stage",
    "default_pipeline",
    "pack",
    # agent sessions: tool-output filters, the artifact store
    "ArtifactStore",
    "SQLiteArtifactStore",
    "Session",
    "ToolOutputFilter",
    # stages
    "CitationInheritor",
    "Deduplicator",
    "ExtractiveCompressor",
    "GreedyPacker",
    "MemorySelector",
    "PromptComposer",
    "RelevanceScorer",
    "SemanticScorer",
    "TurnAlternator",
    "compress_lines",
    "semantic_pipeline",
    # context usage
    "ContextUsage",
    "context_usage",
    # context editing
    "Compactor",
    "ToolResultClearer",
    # selection
    "LexicalSelector",
    "ModelSelector",
    "Selection",
    "SelectionError",
    "Workspace",
    "apply_selection",
    # embeddings
    "MiniLMEmbedder",
    # adapters
    "AnthropicPayload",
    "from_anthropic",
    "from_langchain",
    "from_openai",
    "to_anthropic",
    "to_langchain",
    "to_openai",
    "validate_anthropic",
    "validate_openai",
    # caches
    "clear_caches",
    # client wrappers
    "PackedClient",
    "wrap_anthropic",
    "wrap_openai",
}


def test_all_is_pinned() -> None:
    assert set(ctxpack.__all__) == EXPECTED


def test_all_is_sorted_and_unique() -> None:
    assert ctxpack.__all__ == sorted(set(ctxpack.__all__))


def test_every_exported_name_exists_and_is_public() -> None:
    for name in ctxpack.__all__:
        member = getattr(ctxpack, name)
        module = getattr(member, "__module__", "ctxpack")
        assert module.startswith("ctxpack"), f"{name} comes from {module}"


def test_testing_helpers_are_not_top_level() -> None:
    # The conformance check lives in ctxpack.testing, away from the packing API.
    import ctxpack.testing

    assert "check_stage" not in ctxpack.__all__
    assert callable(ctxpack.testing.check_stage)
