"""pack(): the main job. Messages in, a PackResult that fits the budget out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from ._internal.arguments import flag as check_flag
from ._internal.arguments import keyword_checked, optional_text, shown, tool_definitions
from ._internal.arguments import tokens as check_tokens
from ._internal.columns import ids as message_ids
from ._internal.thinking import thinking_cleared_from, without_thinking
from ._internal.tool_schemas import system_text
from .adapters import SENT_METADATA, check_openai_message
from .errors import BudgetExceededError, ConfigError
from .limits import check_message_sizes
from .messages import (
    Message,
    check_shared_empties,
    detached,
    owned_messages,
)
from .pipeline import (
    Decision,
    DecisionLog,
    PackContext,
    Pipeline,
    Stage,
    custom_step_checked,
    is_own_stage,
    stage_name,
)
from .pipeline import (
    Provider as Provider,
)
from .providers import detect_provider, preserves_thinking, tools_as_sent
from .result import PackResult
from .sdk import SDKObject
from .stages import (
    CitationInheritor,
    Deduplicator,
    ExtractiveCompressor,
    GreedyPacker,
    InjectionFlagger,
    MemorySelector,
    PromptComposer,
    RelevanceScorer,
    SecretRedactor,
    SemanticScorer,
    TurnAlternator,
    exchange_units,
    turn_rule_breaks,
    unanswered_calls,
    without_unsent_reasoning,
)
from .tokens import (
    CounterLike,
    TokenCounter,
    checked_tool_counts,
    get_counter,
    message_sizes,
    priming_tokens,
)

__all__ = [
    "default_pipeline",
    "pack",
    "semantic_pipeline",
]


def default_pipeline() -> Pipeline:
    """The pipeline :func:`pack` runs when none is given.

    redact -> flag -> compose -> memory -> dedupe -> citations -> relevance -> compress -> pack
    -> alternate. The first two steps guard what tool outputs bring in: secrets replaced by a
    placeholder naming their kind (:class:`~ctxpack.stages.SecretRedactor`), prompt-injection
    markers flagged (:class:`~ctxpack.stages.InjectionFlagger`). The last step applies the
    provider's rules: for Anthropic (``PackContext.provider``) it makes the turns alternate; for
    OpenAI it does nothing.

    Example:
        >>> default_pipeline().names
        ['redact', 'flag', 'compose', 'memory', 'dedupe', 'citations', 'relevance', 'compress',
         'pack', 'alternate']
    """
    return Pipeline(
        [
            SecretRedactor(),
            InjectionFlagger(),
            PromptComposer(),
            MemorySelector(),
            Deduplicator(),
            CitationInheritor(),
            RelevanceScorer(),
            ExtractiveCompressor(),
            GreedyPacker(),
            TurnAlternator(),
        ]
    )


def semantic_pipeline(embedder: Any = None, weight: float = 0.3) -> Pipeline:
    """The default pipeline with a :class:`SemanticScorer` right after the relevance step.

    redact -> flag -> compose -> memory -> dedupe -> citations -> relevance -> semantic ->
    compress -> pack -> alternate. The scorer spreads to neighbours as the pipeline's
    :class:`RelevanceScorer` does.

    Args:
        embedder: See :class:`SemanticScorer`; ``None`` for the shared MiniLM model.
        weight: Share of the semantic score in the mixed relevance, 0 to 1.

    Example:
        >>> semantic_pipeline(embedder=lambda texts: ...).names
        ['redact', 'flag', 'compose', 'memory', 'dedupe', 'citations', 'relevance', 'semantic',
         'compress', 'pack', 'alternate']
    """
    pipeline = default_pipeline()
    relevance = pipeline["relevance"]
    spreading: dict[str, Any] = {}
    if isinstance(relevance, RelevanceScorer):
        spreading["neighbors"] = (
            relevance["neighbors"] if "neighbors" in relevance.signal_names else None
        )
    scorer = SemanticScorer(embedder=embedder, weight=weight, **spreading)
    return pipeline.insert("compress", scorer)


@cache
def _shared_default_pipeline(redact_secrets: bool = True, flag_injections: bool = True) -> Stage:
    # Built once: its stages are frozen, and no caller ever sees this instance.
    return _guarded(default_pipeline(), redact_secrets, flag_injections)


_GUARDS = ((SecretRedactor, "redact"), (InjectionFlagger, "flag"))


def _guarded(stage: Stage, redact_secrets: bool, flag_injections: bool) -> Stage:
    """``stage`` with the guard steps ``pack()`` was asked for: a guard switched off is taken out
    of a pipeline; one switched on that the stage lacks runs first."""
    wanted = (redact_secrets, flag_injections)
    # A lone stage's step is named after it: a broken rule names the stage that broke it.
    steps = stage.steps if isinstance(stage, Pipeline) else [(stage_name(stage), stage)]
    kept = [
        (name, s)
        for name, s in steps
        if all(on or not isinstance(s, kind) for on, (kind, _) in zip(wanted, _GUARDS, strict=True))
    ]
    taken = {name for name, _ in kept}
    missing = [
        # A step of the caller's own may already use the guard's name.
        (name if name not in taken else f"{name}_guard", kind())
        for on, (kind, name) in zip(wanted, _GUARDS, strict=True)
        if on and not any(isinstance(s, kind) for _, s in kept)
    ]
    if not missing and len(kept) == len(steps):
        return stage
    return Pipeline([*missing, *kept])


def _last_user_text(messages: Sequence[Message]) -> str | None:
    for msg in reversed(messages):
        if msg.role == "user":
            return msg.text
    return None


@keyword_checked
def pack(
    messages: Iterable[Message | Mapping[str, Any] | SDKObject],
    *,
    budget: int,
    model: str | None = None,
    counter: CounterLike | None = None,
    query: str | None = None,
    reserve: int = 0,
    pipeline: Stage | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    provider: Provider | None = None,
    redact_secrets: bool = True,
    flag_injections: bool = True,
    preserved_thinking: bool | None = None,
) -> PackResult:
    """Fit a conversation into ``budget`` tokens, keeping what the next answer needs.

    The promise: the result holds every system, developer and pinned message and the current
    question, keeps or drops each tool exchange whole, keeps the original order, and never
    exceeds ``budget - reserve`` tokens; every input message gets at least one recorded
    decision. Developer messages are instructions, kept like the system prompt; a pipeline whose
    ``PromptComposer(protect_developer=False)`` lets them compete for the budget instead. The
    result is valid for the provider: no tool result without its call, no call without its
    result (except in a trailing assistant message), for Anthropic a user message first and
    alternating turns, and on a model with preserved thinking no thinking block after a change.

    Args:
        messages: ``Message`` objects or OpenAI-style dicts, chronological. Never mutated.
        budget: Tokens the prompt may take, framing and reply priming included.
        model: OpenAI model name; picks the exact tokenizer (``gpt-4`` -> cl100k_base).
        counter: A token counter instead (see :func:`ctxpack.tokens.get_counter`).
        query: What the next answer is about; defaults to the last user message.
        reserve: Tokens to leave free for the reply.
        pipeline: The stages to run; :func:`default_pipeline` when ``None``.
        tools: Tool definitions sent with the request (OpenAI or Anthropic format); their tokens
            count against the budget and are included in ``result.tokens``.
        provider: ``"openai"`` or ``"anthropic"``: whose rules the result must follow. By default
            ``"anthropic"`` for a Claude ``model`` or messages made by
            :func:`ctxpack.from_anthropic` (which records it on them, outside ``metadata``),
            else ``"openai"``. Stages read it as ``PackContext.provider``: the default
            pipeline's last step, ``alternate`` (:class:`~ctxpack.TurnAlternator`), makes the
            turns valid for Anthropic; a pipeline without it must return valid turns itself.
        redact_secrets: Replace the secrets in tool outputs (keys, tokens, private keys,
            passwords in configuration lines...) by ``[REDACTED kind]`` before any other step,
            each change a ``redacted`` decision (the pipeline's ``redact`` step,
            :class:`~ctxpack.stages.SecretRedactor`; a pipeline without one gets it first).
            ``False`` takes that step out. What users typed is left alone: to redact it too,
            give a pipeline whose ``redact`` step is ``SecretRedactor(roles=(...))``.
        flag_injections: Record a ``flagged`` decision per tool output with prompt-injection
            markers (the ``flag`` step, :class:`~ctxpack.stages.InjectionFlagger`); ``False``: none.
        preserved_thinking: Whether the model refuses a thinking block once anything before it
            changed: the turns from the first message dropped or changed on then lose theirs
            (``cleared``; kept in a turn of thinking alone), and the history is packed again
            with that thinking cleared, to use the room it held. ``None``: by ``model``'s name.

    Returns:
        A :class:`PackResult`.

    Raises:
        InvalidMessageError: a message is malformed (the error names its index and field).
        BudgetExceededError: the system, developer and pinned messages alone do not fit.
        TokenizerUnavailableError: the model's encoding cannot be loaded.
        ConfigError: an argument is invalid (``budget``, ``reserve``, ``provider``...), or the
            pipeline misbehaves (returns no context, exceeds the budget, or returns tool messages
            or turns that the provider would reject).

    Example:
        >>> history = [
        ...     {"role": "system", "content": "You are terse."},
        ...     {"role": "user", "content": "Name a prime."},
        ...     {"role": "assistant", "content": "7"},
        ...     {"role": "user", "content": "Another one?"},
        ... ]
        >>> result = pack(history, budget=30, model="gpt-4")
        >>> [m.role for m in result.messages], result.tokens, result.dropped_ids
        (['system', 'user', 'user'], 26, ['m-aa71853aaf03'])
    """
    thinking = _check_arguments(budget, reserve, query, model, preserved_thinking)
    stage = _stage_to_run(pipeline, redact_secrets, flag_injections)
    return _pack(messages, budget, model, counter, query, reserve, stage, tools, provider, thinking)


def _check_arguments(
    budget: int, reserve: int, query: str | None, model: str | None, preserved_thinking: bool | None
) -> bool:
    """Raise on a bad argument; return whether the model checks each thinking block's prefix."""
    check_tokens(budget, "budget")
    if isinstance(reserve, bool) or not isinstance(reserve, int) or not 0 <= reserve < budget:
        raise ConfigError(f"reserve must be an int in [0, budget), got {shown(reserve)}")
    optional_text(query, "query")
    optional_text(model, "model")
    if preserved_thinking is None:
        return preserves_thinking(model)
    return check_flag(preserved_thinking, "preserved_thinking")


def _stage_to_run(pipeline: Stage | None, redact_secrets: bool, flag_injections: bool) -> Stage:
    """The stage :func:`pack` runs: the caller's pipeline or the default, with the guard steps
    it was asked for."""
    for name, flag in (("redact_secrets", redact_secrets), ("flag_injections", flag_injections)):
        if not isinstance(flag, bool):
            raise ConfigError(f"{name} must be True or False, got {shown(flag)}")
    if pipeline is None:
        return _shared_default_pipeline(redact_secrets, flag_injections)
    if not callable(pipeline):
        raise ConfigError(
            f"pipeline must be a stage (a callable taking a PackContext), got "
            f"{type(pipeline).__name__}"
        )
    return _guarded(pipeline, redact_secrets, flag_injections)


def _pack(
    messages: Iterable[Message | Mapping[str, Any] | SDKObject],
    budget: int,
    model: str | None,
    counter: CounterLike | None,
    query: str | None,
    reserve: int,
    stage: Stage,
    tools: Sequence[Mapping[str, Any]] | None,
    provider: Provider | None,
    preserved_thinking: bool,
) -> PackResult:
    resolved = get_counter(model, counter)
    tools = tool_definitions(tools) if tools is not None else None
    # ctxpack's own copies, shared with earlier calls: never handed out (see detached below).
    msgs = owned_messages(messages, check=check_openai_message)
    check_message_sizes(msgs)
    target = detect_provider(provider, model, msgs)
    sent = tools_as_sent(tools, target) if tools else []
    tool_counts = checked_tool_counts(sent, resolved) if sent else None
    # Reserved for a prompt without a system message, the larger: the stages may drop it.
    tool_tokens = tool_counts.total(resolved) if tool_counts else 0
    input_ids = list(message_ids(msgs))
    if query is None:
        query = _last_user_text(msgs)
    # Dropped before the stages, which would give its room to what is never sent, and after
    # them, for reasoning whose response they dropped.
    sendable, unsent = without_unsent_reasoning(msgs, resolved.count_message)
    ctx = PackContext(
        messages=tuple(sendable) if unsent else msgs,
        decisions=DecisionLog(unsent),
        budget=budget,
        counter=resolved,
        # Tool definitions ride with every request, so stages see them as reserved room.
        reserve=reserve + tool_tokens,
        query=query,
        model=model,
        provider=target,
        tools=tuple(sent),
    )
    out = _run(stage, ctx, tool_tokens)
    if preserved_thinking:
        out = _prefix_checked_repacked(out, ctx, stage, tool_tokens)
    sendable, unsent = without_unsent_reasoning(out.messages, out.tokens)
    if unsent:
        out = out.decide(*unsent, messages=tuple(sendable))
    # Counted afresh (text counts aside), not read from the memo the stages used; the tools
    # as they cost beside the messages kept, what the request is billed.
    input_tokens = priming_tokens(resolved) + sum(message_sizes(resolved, msgs))
    if tool_counts is not None:
        input_tokens += tool_counts.total(resolved, system_text(msgs))
        tool_tokens = tool_counts.total(resolved, system_text(out.messages))
    tokens = resolved.count_messages(out.messages) + tool_tokens
    _check_fits(tokens, budget, reserve, ctx, out)
    # Every value here was produced and checked above; validating thousands of decisions and
    # messages again would be a large share of a warm pack.
    return PackResult.model_construct(
        # Copies: editing the result must not reach the messages cached for the next call.
        messages=[detached(m) for m in out.messages],
        tokens=tokens,
        budget=budget,
        reserve=reserve,
        input_tokens=input_tokens,
        tool_tokens=tool_tokens,
        input_ids=input_ids,
        counter=resolved.name,
        exact=resolved.exact,
        query=query,
        decisions=_every_message_decided(out, msgs, resolved),
        artifacts={mid: detached(m) for mid, m in out.artifacts.items()},
    )


def _run(stage: Stage, ctx: PackContext, tool_tokens: int) -> PackContext:
    """What ``stage`` returns for ``ctx``, checked against the provider's rules."""
    try:
        out = stage(ctx)
    except BudgetExceededError as exc:
        if not tool_tokens or exc.tool_tokens:
            raise
        # The stages see the tools as reserved room; the caller should hear they are tools.
        raise BudgetExceededError(
            required=exc.required,
            budget=exc.budget,
            pinned_ids=exc.pinned_ids,
            tool_tokens=tool_tokens,
        ) from exc
    check_shared_empties()
    if not isinstance(out, PackContext):
        raise ConfigError(f"the pipeline returned {type(out).__name__}, not a PackContext")
    if not is_own_stage(stage):
        # ctx's artifacts are the default's empty read-only mapping: no stage changed them.
        custom_step_checked(ctx, out, ctx.artifacts, where=f"the pipeline {stage_name(stage)!r}")
    if ctx.provider == "anthropic" and not _ends_with_alternator(stage):
        _check_turn_rules(out)
    elif ctx.provider == "openai" and not _is_shared_default(stage):
        _check_openai_pairs(out)
    return out


def _prefix_checked_repacked(
    out: PackContext, ctx: PackContext, stage: Stage, tool_tokens: int
) -> PackContext:
    """:func:`_prefix_checked` of the better of two packings: ``out``, and when that clears
    thinking, the packing of ``ctx`` with that thinking cleared before the stages run.

    The stages fit the budget with every thinking block counted; the prefix check then takes
    the blocks of the turns after the first message dropped or changed, so the room they held
    goes unused. Packed again without them, less needs dropping or compressing. The second
    packing is sent when it sends more tokens; it is checked against the caller's history,
    from its own first change, so it never sends a block after a change."""
    msgs, counter = ctx.messages, ctx.counter
    first = _first_change(out.messages, msgs)
    checked = _prefix_checked(out, msgs, counter, first)
    if checked is out:
        return out
    lighter = [without_thinking(m) or m for m in msgs[first:]]
    again = _run(stage, ctx.evolve(messages=(*msgs[:first], *lighter)), tool_tokens)
    second = _first_change(again.messages, msgs)
    repacked = _prefix_checked(again, msgs, counter, second)
    # More of the history in the same budget. Not more messages: turns without their thinking
    # may repeat each other and go to the deduplicator, while the first packing compressed.
    if counter.count_messages(repacked.messages) <= counter.count_messages(checked.messages):
        return checked
    changed = msgs[second].id if second < len(msgs) else repacked.messages[second].id
    _, cleared = thinking_cleared_from(
        msgs,
        first,
        counter,
        stage="pack()",
        reason=(
            f"thinking blocks cleared (prefix check: {changed!r}, at or before this turn, is "
            "dropped or changed, and a model with preserved thinking refuses a thinking block "
            "whose prefix changed; cleared before packing, so that the room it held keeps other "
            "messages); original kept as an artifact"
        ),
    )
    # Before the stages' decisions, as the clearing came before them; the caller's turn is the
    # original, whatever a stage kept of the lighter one.
    originals = {m.id: m for m in msgs[first:]}
    artifacts = {**repacked.artifacts, **{d.message_id: originals[d.message_id] for d in cleared}}
    return repacked.evolve(decisions=DecisionLog(cleared) + repacked.decisions, artifacts=artifacts)


def _first_change(sent: Sequence[Message], msgs: Sequence[Message]) -> int:
    """The first position where the request ``sent`` differs from the history ``msgs`` in
    what the provider sees (see :func:`_seen_alike`)."""
    pairs = zip(sent, msgs, strict=False)
    return next(
        (k for k, (m, given) in enumerate(pairs) if m is not given and not _seen_alike(m, given)),
        min(len(sent), len(msgs)),
    )


# What no provider sees of a message: ctxpack's own fields and the caller's metadata (all but
# adapters.SENT_METADATA). A step that sets only these (the citation step's inherited source)
# leaves the prefix as it was.
_UNSEEN = frozenset({"id", "priority", "pinned", "source", "timestamp", "metadata"})


def _seen_alike(a: Message, b: Message) -> bool:
    """Whether the provider sees ``a`` and ``b`` as the same message."""
    if a == b:
        return True
    seen = (f for f in Message.model_fields if f not in _UNSEEN)
    if any(getattr(a, f) != getattr(b, f) for f in seen):
        return False
    return all(a.metadata.get(k) == b.metadata.get(k) for k in SENT_METADATA)


def _prefix_checked(
    out: PackContext, msgs: Sequence[Message], counter: TokenCounter, first: int
) -> PackContext:
    """``out`` without the thinking of the assistant turns from position ``first`` on (the
    first message dropped or changed), each a ``cleared`` decision, its original an artifact.

    A model with preserved thinking refuses (or drops) a thinking block once anything before
    it changed since it was produced, and the history given is what was sent then. Clearing
    that thinking changes nothing before it, so no kept block follows a change; it only
    shrinks the request, which still fits."""
    sent = out.messages
    if first >= len(sent):
        return out
    changed = msgs[first].id if first < len(msgs) else sent[first].id
    messages, cleared = thinking_cleared_from(
        sent,
        first,
        counter,
        stage="pack()",
        reason=(
            f"thinking blocks cleared (prefix check: {changed!r} before this turn is dropped or "
            "changed, and a model with preserved thinking refuses a thinking block whose prefix "
            "changed); original kept as an artifact"
        ),
    )
    if not cleared:
        return out
    ids = {d.message_id for d in cleared}
    artifacts = dict(out.artifacts)
    for original in sent[first:]:
        if original.id in ids:
            artifacts.setdefault(original.id, original)
    return out.decide(*cleared, messages=tuple(messages), artifacts=artifacts)


def _check_fits(tokens: int, budget: int, reserve: int, ctx: PackContext, out: PackContext) -> None:
    """Raise when the pipeline's ``tokens`` exceed the caller's ``budget - reserve``."""
    # Against the caller's budget, not the one the context came back with: a stage that
    # raised ctx.budget or lowered ctx.reserve must not move the limit it is checked against.
    if tokens <= budget - reserve:
        return
    changed = (out.budget, out.reserve) != (ctx.budget, ctx.reserve)
    raise ConfigError(
        f"the pipeline produced {tokens} tokens for a budget of {budget} (reserve {reserve}); "
        + (
            f"a stage changed the context's budget or reserve (budget {out.budget}, "
            f"reserve {out.reserve} with the tools' tokens), which are the caller's; "
            if changed
            else ""
        )
        + "a custom pipeline must end with a packer such as GreedyPacker()"
    )


def _every_message_decided(
    out: PackContext, msgs: Sequence[Message], counter: TokenCounter
) -> DecisionLog:
    """The pipeline's decisions, and a ``kept`` or ``dropped`` one for each input message no
    stage spoke about (the promise: every input message gets at least one decision)."""
    decisions = out.decisions
    decided = set(decisions.message_ids())
    if len(decided) < len(msgs):
        final = {m.id: m for m in out.messages}
        # With its tokens: else tokens_of() and report() read 0 for a message that was sent.
        decisions += tuple(
            Decision(
                stage="pack()",
                action="kept" if m.id in final else "dropped",
                message_id=m.id,
                reason="no stage recorded a decision for this message",
                tokens_before=counter.count_message(m),
                tokens_after=counter.count_message(final[m.id]) if m.id in final else 0,
            )
            for m in msgs
            if m.id not in decided
        )
    return decisions


def _ends_with_alternator(stage: Stage) -> bool:
    # What the alternator returns always keeps the rules: no need to check it again.
    return (
        isinstance(stage, Pipeline) and bool(stage) and type(stage.steps[-1][1]) is TurnAlternator
    )


def _is_shared_default(stage: Stage) -> bool:
    # Its packer keeps each tool exchange whole: no need to check what it returns again.
    flags = (True, False)
    return any(stage is _shared_default_pipeline(r, f) for r in flags for f in flags)


def _check_openai_pairs(out: PackContext) -> None:
    """Raise when a pipeline packing for OpenAI returned a tool result without its call, a
    second result of one call, or a call without its result (but in the last message), which
    OpenAI rejects."""
    units = exchange_units(out.messages)
    strays = sorted(units.orphans + units.repeats)
    unanswered = unanswered_calls(out.messages)
    if not strays and not unanswered:
        return
    if strays and (not unanswered or strays[0] < min(unanswered)):
        m = out.messages[strays[0]]
        kind = "answers no call before it" if strays[0] in units.orphans else "answers it again"
        problem = f"{m.id!r}: the tool result for {m.tool_call_id!r} {kind}"
    else:
        i = min(unanswered)
        problem = f"{out.messages[i].id!r}: its tool calls {unanswered[i]} have no result"
    raise ConfigError(
        f"packing for OpenAI, the pipeline returned tool messages OpenAI would reject "
        f"({problem}); drop or keep each tool exchange whole, as a packer such as "
        "GreedyPacker() does"
    )


def _check_turn_rules(out: PackContext) -> None:
    """Raise when a pipeline packing for Anthropic returned turns Anthropic would reject.

    Checked, not fixed: what is sent is what the pipeline returned, every change of it a
    recorded step. What the ``alternate`` step returns always passes.
    """
    breaks = turn_rule_breaks(out)
    if breaks:
        first = breaks[0]
        raise ConfigError(
            f"packing for Anthropic, the pipeline returned turns Anthropic would reject "
            f"({len(breaks)} message(s); {first.message_id!r}: {first.reason}); end the pipeline "
            "with the 'alternate' step as default_pipeline() does: "
            "Pipeline([*pipeline.steps, TurnAlternator()]), TurnAlternator from "
            "ctxpack.stages._alternate"
        )
