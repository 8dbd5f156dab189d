"""pack(): the main job. Messages in, a PackResult that fits the budget out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .errors import ConfigError
from .messages import Message, ensure_messages
from .pipeline import Decision, PackContext, Pipeline, Stage
from .result import PackResult
from .stages import (
    CitationInheritor,
    Deduplicator,
    ExtractiveCompressor,
    GreedyPacker,
    MemorySelector,
    PromptComposer,
    RelevanceScorer,
)
from .tokens import CounterLike, get_counter

__all__ = ["default_pipeline", "pack"]


def default_pipeline() -> Pipeline:
    """The pipeline :func:`pack` runs when none is given.

    compose -> memory -> dedupe -> citations -> relevance -> compress -> pack.

    Example:
        >>> default_pipeline().names
        ['compose', 'memory', 'dedupe', 'citations', 'relevance', 'compress', 'pack']
    """
    return Pipeline(
        [
            PromptComposer(),
            MemorySelector(),
            Deduplicator(),
            CitationInheritor(),
            RelevanceScorer(),
            ExtractiveCompressor(),
            GreedyPacker(),
        ]
    )


def _last_user_text(messages: list[Message]) -> str | None:
    for msg in reversed(messages):
        if msg.role == "user":
            return msg.text
    return None


def pack(
    messages: Iterable[Message | Mapping[str, Any]],
    *,
    budget: int,
    model: str | None = None,
    counter: CounterLike | None = None,
    query: str | None = None,
    reserve: int = 0,
    pipeline: Stage | None = None,
) -> PackResult:
    """Fit a conversation into ``budget`` tokens, keeping what the next answer needs.

    The promise: the result holds every system and pinned message and the current question,
    keeps or drops each tool exchange whole, keeps the original order, and never exceeds
    ``budget - reserve`` tokens; every input message gets at least one recorded decision.

    Args:
        messages: ``Message`` objects or OpenAI-style dicts, chronological. Never mutated.
        budget: Tokens the prompt may take, framing and reply priming included.
        model: OpenAI model name; picks the exact tokenizer (``gpt-4`` -> cl100k_base).
        counter: A token counter instead (see :func:`ctxpack.tokens.get_counter`).
        query: What the next answer is about; defaults to the last user message.
        reserve: Tokens to leave free for the reply.
        pipeline: The stages to run; :func:`default_pipeline` when ``None``.

    Returns:
        A :class:`PackResult`.

    Raises:
        InvalidMessageError: a message is malformed (the error names its index and field).
        BudgetExceededError: the system and pinned messages alone do not fit.
        TokenizerUnavailableError: the model's encoding cannot be loaded.
        ConfigError: ``budget``/``reserve`` are invalid, or the pipeline misbehaves.

    Example:
        >>> history = [
        ...     {"role": "system", "content": "You are terse."},
        ...     {"role": "user", "content": "Name a prime."},
        ...     {"role": "assistant", "content": "7"},
        ...     {"role": "user", "content": "Another one?"},
        ... ]
        >>> result = pack(history, budget=30, model="gpt-4")
        >>> [m.role for m in result.messages], result.tokens
        (['system', 'user', 'user'], 26)
        >>> result.dropped_ids
        ['m2-aaef5be5']
    """
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ConfigError(f"budget must be a positive int, got {budget!r}")
    if isinstance(reserve, bool) or not isinstance(reserve, int) or not 0 <= reserve < budget:
        raise ConfigError(f"reserve must be an int in [0, budget), got {reserve!r}")
    resolved = get_counter(model, counter)
    msgs = ensure_messages(messages)
    input_ids = [m.id for m in msgs]
    if query is None:
        query = _last_user_text(msgs)
    ctx = PackContext(
        messages=tuple(msgs),
        budget=budget,
        counter=resolved,
        reserve=reserve,
        query=query,
        model=model,
    )
    stage: Stage = pipeline if pipeline is not None else default_pipeline()
    out = stage(ctx)
    if not isinstance(out, PackContext):
        raise ConfigError(f"the pipeline returned {type(out).__name__}, not a PackContext")
    tokens = resolved.count_messages(out.messages)
    if tokens > out.available:
        raise ConfigError(
            f"the pipeline produced {tokens} tokens for a budget of {budget} (reserve {reserve}); "
            "a custom pipeline must end with a packer such as GreedyPacker()"
        )
    decisions = list(out.decisions)
    decided = {d.message_id for d in decisions}
    final_ids = {m.id for m in out.messages}
    for mid in input_ids:
        if mid not in decided:
            kept = mid in final_ids
            decisions.append(
                Decision(
                    stage="pack()",
                    action="kept" if kept else "dropped",
                    message_id=mid,
                    reason="no stage recorded a decision for this message",
                )
            )
    return PackResult(
        messages=list(out.messages),
        tokens=tokens,
        budget=budget,
        reserve=reserve,
        input_tokens=resolved.count_messages(msgs),
        input_ids=input_ids,
        counter=resolved.name,
        exact=resolved.exact,
        query=query,
        decisions=decisions,
        artifacts=dict(out.artifacts),
    )
