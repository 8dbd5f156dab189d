"""A conformance check for stages, like scikit-learn's ``check_estimator``.

Run :func:`check_stage` in your test suite on any stage you write; it fails with an
``AssertionError`` that names the broken rule and the sample it broke on.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._internal.context import contract_break
from .errors import ConfigError
from .messages import Message, ensure_messages
from .pipeline import PackContext, Provider, Stage, stage_name
from .tokens import get_counter

__all__ = [
    "check_stage",
]

_LONG_LOG = "\n".join(
    [f"PASSED tests/test_module_{i:02d}.py::test_case_{i} [{i * 3}%]" for i in range(1, 30)]
    + ["FAILED tests/test_auth.py::test_refresh_expired_token - expiresAt undefined (auth.py:88)"]
)

_REPORT = "\n".join(
    [
        "# Rapport de réunion",
        "Introduction générale sur le projet",
        "- Objectifs atteints à 85%",
        "Discussions diverses sur l'équipe",
        "- Budget de 150 000 euros alloué",
        "Commentaires généraux",
        "# Décisions importantes",
        "- Lancement prévu le 15 mars 2025",
        "Autres remarques sans importance",
        "Marie Dubois sera responsable technique",
        "- Budget supplémentaire de 25 000 euros",
        "Conclusion générale du rapport",
    ]
    * 3
)

_CALL = {"id": "call_1", "type": "function", "function": {"name": "run_tests", "arguments": "{}"}}

# Per sample: the messages, the budget, and whose rules the result must follow.
_SAMPLES: dict[str, tuple[list[dict[str, Any]], int, Provider]] = {
    "short chat": (
        [
            {"role": "system", "content": "You are terse.", "id": "sys"},
            {"role": "user", "content": "Name a prime.", "id": "u1"},
            {"role": "assistant", "content": "7", "id": "a1"},
            {"role": "user", "content": "Another one?", "id": "u2"},
        ],
        10_000,
        "openai",
    ),
    "tools, repeats and sources under a tight budget": (
        [
            {"role": "system", "content": "You are a CI assistant.", "id": "sys"},
            {"role": "developer", "content": "Name the failing test first.", "id": "dev"},
            {"role": "user", "content": "Hi! We migrate login to refresh tokens.", "id": "u1"},
            {
                "role": "assistant",
                "content": "Selon wikipedia.org, a refresh token lives 30 days.",
                "id": "a1",
                "source": "https://en.wikipedia.org/wiki/Access_token",
            },
            {"role": "assistant", "content": "So two refreshes a month suffice.", "id": "a2"},
            {"role": "assistant", "content": None, "id": "a3", "tool_calls": [_CALL]},
            {"role": "tool", "content": _LONG_LOG, "tool_call_id": "call_1", "id": "t1"},
            {"role": "assistant", "content": _REPORT, "id": "a4"},
            {"role": "user", "content": "Hi! We migrate login to refresh tokens.", "id": "u2"},
            {"role": "user", "content": "No cookies, ever.", "id": "u3", "pinned": True},
            {"role": "user", "content": "Why does the refresh test fail?", "id": "u4"},
        ],
        260,
        "openai",
    ),
    "single question": ([{"role": "user", "content": "What is 2 + 2?", "id": "q"}], 50, "openai"),
    "for Anthropic: an assistant turn first, two user turns in a row, a tool exchange": (
        [
            {"role": "system", "content": "You are a CI assistant.", "id": "sys"},
            {"role": "assistant", "content": "Welcome back. What broke?", "id": "a0"},
            {"role": "user", "content": "The build broke after the merge.", "id": "u1"},
            {"role": "user", "content": "Can you run the tests?", "id": "u2"},
            {"role": "assistant", "content": None, "id": "a1", "tool_calls": [_CALL]},
            {"role": "tool", "content": _LONG_LOG, "tool_call_id": "call_1", "id": "t1"},
            {"role": "user", "content": "Which test fails?", "id": "u3"},
        ],
        10_000,
        "anthropic",
    ),
}


def sample_contexts() -> list[tuple[str, PackContext]]:
    """The built-in samples :func:`check_stage` runs on, as ``(label, context)`` pairs.

    System, pinned and last-user messages are protected, as :class:`~ctxpack.PromptComposer`
    would do, and the query is the last user message. One sample is packed for Anthropic
    (``provider="anthropic"``), so that stages applying a provider's rules act on it.
    """
    out = []
    for label, (raw, budget, provider) in _SAMPLES.items():
        messages = ensure_messages(raw)
        last_user = next((m for m in reversed(messages) if m.role == "user"), None)
        protected = {m.id for m in messages if m.role == "system" or m.pinned}
        if last_user is not None:
            protected.add(last_user.id)
        out.append(
            (
                label,
                PackContext(
                    messages=tuple(messages),
                    budget=budget,
                    counter=get_counter(),
                    query=last_user.text if last_user else None,
                    protected=frozenset(protected),
                    provider=provider,
                ),
            )
        )
    return out


def _snapshot(ctx: PackContext) -> dict[str, Any]:
    # model_dump copies nested dicts and lists, so in-place edits of a message's metadata or
    # content parts show up as a difference.
    return {
        "messages": [m.model_dump() for m in ctx.messages],
        "message_objects": [id(m) for m in ctx.messages],
        "budget": ctx.budget,
        "reserve": ctx.reserve,
        "query": ctx.query,
        "provider": ctx.provider,
        "decisions": [d.model_dump() for d in ctx.decisions],
        "protected": sorted(ctx.protected),
        "signals": {k: dict(v) for k, v in ctx.signals.items()},
        "artifacts": {k: m.model_dump() for k, m in ctx.artifacts.items()},
    }


def _outcome(ctx: PackContext) -> dict[str, Any]:
    snap = _snapshot(ctx)
    del snap["message_objects"]
    return snap


def _as_context(example: PackContext | Sequence[Message | Mapping[str, Any]]) -> PackContext:
    if isinstance(example, PackContext):
        return example
    return PackContext(
        messages=tuple(ensure_messages(example)), budget=10_000, counter=get_counter()
    )


def check_stage(
    stage: Stage,
    *,
    examples: Iterable[PackContext | Sequence[Message | Mapping[str, Any]]] | None = None,
) -> None:
    """Check that ``stage`` keeps the stage contract, on the built-in samples or on ``examples``.

    The contract: the stage returns a :class:`~ctxpack.pipeline.PackContext`; it does not mutate the
    context it gets (nor its messages); the same input gives the same output; it keeps earlier
    decisions; every message it removes, adds or rewrites has a decision naming its id; every
    message it rewrites (unless ``redacted``) has its original in ``ctx.artifacts``, and the
    originals already there stay as they are; it keeps the system, pinned and protected
    messages and the provider; ids stay unique; and the messages that survive keep their order.
    :func:`ctxpack.pack` holds every custom step to the last three rules too.

    Args:
        stage: Any stage: a built-in one, a function ``ctx -> ctx``, a pipeline.
        examples: Contexts (or message lists, packed with a 10 000-token budget) to run on
            instead of :func:`sample_contexts`; at least one.

    Raises:
        AssertionError: naming the stage, the sample and the rule it broke.
        ConfigError: ``stage`` is not callable, or ``examples`` is not a non-empty list.

    Example:
        >>> from ctxpack import Deduplicator
        >>> check_stage(Deduplicator())
    """
    if not callable(stage):
        raise ConfigError(f"stage must be callable (ctx) -> ctx, got {type(stage).__name__}")
    name = stage_name(stage)
    if examples is None:
        cases = sample_contexts()
    elif isinstance(examples, (str, bytes, Mapping)) or not isinstance(examples, Iterable):
        raise ConfigError(
            f"examples must be a list of contexts or message lists, got {type(examples).__name__}"
        )
    else:
        cases = [(f"example {i}", _as_context(e)) for i, e in enumerate(examples)]
        if not cases:
            # Nothing run is nothing checked: a test passing here would vouch for any stage.
            raise ConfigError(
                "examples is empty: give at least one context or message list, or None for the "
                "built-in samples"
            )
    for label, ctx in cases:
        where = f"stage {name!r} on sample {label!r}"
        out = _run_checked(stage, ctx, where)
        _check_changes_recorded(ctx, out, where)
        _check_kept_what_is_not_its_to_change(ctx, out, where)


def _run_checked(stage: Stage, ctx: PackContext, where: str) -> PackContext:
    """Run ``stage`` twice on ``ctx``: a context back, the input untouched, the same result."""
    before = _snapshot(ctx)
    frozen_copy = copy.copy(ctx)
    out = stage(ctx)
    assert isinstance(out, PackContext), (
        f"{where} returned {type(out).__name__}, not a PackContext; a stage must return the "
        "(new) context, e.g. ctx.evolve(...) or ctx.decide(...)"
    )
    assert _snapshot(ctx) == before and _snapshot(frozen_copy) == before, (
        f"{where} mutated its input context or its messages; build new messages with "
        "message.model_copy(update=...) and return ctx.evolve(...)"
    )
    again = stage(ctx)
    assert isinstance(again, PackContext) and _outcome(again) == _outcome(out), (
        f"{where} is not deterministic: the same context gave two different results"
    )
    return out


def _check_changes_recorded(ctx: PackContext, out: PackContext, where: str) -> None:
    """Earlier decisions kept; every message removed, added or rewritten named by a decision."""
    assert out.decisions[: len(ctx.decisions)] == ctx.decisions, (
        f"{where} lost or rewrote earlier decisions; append with ctx.decide(...)"
    )
    decided = {d.message_id for d in out.decisions[len(ctx.decisions) :]}
    old = {m.id: m for m in ctx.messages}
    new = {m.id: m for m in out.messages}
    for mid in old.keys() - new.keys():
        assert mid in decided, (
            f"{where} removed message {mid!r} without a Decision naming it; record every "
            "drop (Decision(stage=..., action='dropped', message_id=..., reason=...))"
        )
    for mid in new.keys() - old.keys():
        assert mid in decided, (
            f"{where} added message {mid!r} without a Decision naming it; added messages "
            "must be announced"
        )
    # A secret's original is not kept on purpose: its redacted decision is the record.
    redacted = {d.message_id for d in out.decisions[len(ctx.decisions) :] if d.action == "redacted"}
    for mid in old.keys() & new.keys():
        a, b = old[mid], new[mid]
        if (a.role, a.content, a.tool_calls) != (b.role, b.content, b.tool_calls):
            assert mid in decided, (
                f"{where} rewrote message {mid!r} without a Decision naming it; record "
                "every cut (action='compressed' or 'cleared') and keep the original in "
                "ctx.artifacts"
            )
            if mid in redacted:
                continue
            kept = out.artifacts.get(mid)
            # An earlier stage's original stands; else the one kept must be what came in.
            assert mid in ctx.artifacts or (kept is not None and kept.content == a.content), (
                f"{where} rewrote message {mid!r} without keeping its original in "
                "ctx.artifacts; nothing may be lost: artifacts.setdefault(msg.id, msg) and "
                "ctx.decide(..., artifacts=artifacts)"
            )


def _check_kept_what_is_not_its_to_change(ctx: PackContext, out: PackContext, where: str) -> None:
    """The protected messages and ids, the provider, the earlier originals, and the order of
    the survivors."""
    # An earlier stage's original is the true one: replacing it (artifacts[id] = msg, not
    # setdefault) keeps only a shortened copy, and dropping it loses it.
    replaced = sorted(mid for mid, m in ctx.artifacts.items() if out.artifacts.get(mid) != m)
    assert not replaced, (
        f"{where} lost or replaced the originals {replaced} an earlier stage kept in "
        "ctx.artifacts; keep them as they are (artifacts.setdefault(msg.id, msg))"
    )
    # The rules pack() also holds every custom step to: one check, in one place.
    problem = contract_break(ctx.messages, ctx.protected, out.messages)
    assert problem is None, f"{where} {problem}"
    assert out.provider == ctx.provider, (
        f"{where} changed the provider from {ctx.provider!r} to {out.provider!r}; it is the "
        "caller's choice, which stages read"
    )
    assert ctx.protected <= out.protected, (
        f"{where} unprotected ids {sorted(ctx.protected - out.protected)}"
    )
