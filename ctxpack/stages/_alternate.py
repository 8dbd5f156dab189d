"""Conform a packed conversation to Anthropic's turn rules, recording every merge and drop.

Anthropic takes the system prompt apart and then wants turns that start with the user and
alternate; a ``tool_result`` must answer a ``tool_use`` of the assistant turn right before it, and
every ``tool_use`` must be answered in the next turn (unless it ends the conversation). Packing
drops messages, which can leave two user turns in a row or an assistant turn first. The step
``alternate`` ends the default pipeline; it acts only when the context's ``provider`` is
``"anthropic"``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import ClassVar

from ..messages import Message, provider_of
from ..pipeline import Decision, DecisionLog, PackContext, check_context
from ..providers import Provider
from ..tokens import TokenCounter
from ._base import StageModel
from ._tool_pairs import (
    REPEATED_RESULT,
    provider_pairs,
    strip_unanswered_calls,
    without_unsent_reasoning,
)

__all__ = ["TurnAlternator", "leading_assistant", "provider_conform", "turn_rule_breaks"]

# Why an assistant message that would open the conversation is dropped.
USER_FIRST = "Anthropic needs the conversation to start with a user message"


def anthropic_side(msg: Message) -> str:
    """The Anthropic role a message is sent under: system, user (tool results too) or assistant."""
    if msg.role in ("system", "developer"):
        return "system"
    return "assistant" if msg.role == "assistant" else "user"


def _turn_of(msg: Message) -> object:
    # The turn from_anthropic() recorded; metadata of other messages is the user's own.
    if provider_of(msg) != "anthropic":
        return None
    meta = msg.metadata.get("anthropic")
    return meta.get("turn") if isinstance(meta, dict) else None


def _opens_with_compaction(msg: Message) -> bool:
    # The API reads the history from a compaction block on, so such a message may come first.
    content = msg.content
    return isinstance(content, list) and bool(content) and content[0].get("type") == "compaction"


def _blank(msg: Message) -> bool:
    """Whether ``msg`` is a user or assistant message of whitespace alone (or nothing)."""
    if msg.role not in ("user", "assistant") or msg.tool_calls or msg.extras.get("refusal"):
        return False
    content = msg.content
    if isinstance(content, list):
        return all(
            part.get("type") in ("text", "input_text") and not str(part.get("text", "")).strip()
            for part in content
        )
    return not (content or "").strip()


def leading_assistant(messages: Sequence[Message], protected: Collection[str]) -> Message | None:
    """The assistant message that would open the conversation, which Anthropic refuses, unless
    it may stay (pinned, protected, or opening with a server-side ``compaction`` block)."""
    # A blank user message opens no turn: to_anthropic() leaves it out, as the API refuses it.
    first = next((m for m in messages if anthropic_side(m) != "system" and not _blank(m)), None)
    if first is None or first.role != "assistant":
        return None
    if first.pinned or first.id in protected or _opens_with_compaction(first):
        return None
    return first


class TurnAlternator(StageModel):
    """Make the conversation valid for Anthropic: user first, alternating turns, tools paired.

    Only when the context's ``provider`` is ``"anthropic"`` (for OpenAI it returns the context
    as is), so the default pipeline ends with it, after the packer (step ``alternate``).
    Assistant messages before the first user message (a blank one, which
    :func:`ctxpack.to_anthropic` leaves out, does not count) are dropped with their tool
    results (unless pinned or protected, or opening with a server-side ``compaction`` block). Tool
    results that do not answer the assistant turn right before them are dropped, as is a second
    result of one call, and calls left unanswered are removed. Consecutive messages with the
    same Anthropic role are sent as one turn by :func:`ctxpack.to_anthropic`; each such merge of
    two separate turns is recorded as ``merged``. It only removes, so a packed conversation still
    fits its budget.
    """

    name: ClassVar[str] = "alternate"

    def __call__(self, ctx: PackContext, /) -> PackContext:
        check_context(ctx, self)
        if ctx.provider != "anthropic":
            return ctx
        # Each pass only removes; a removal can orphan a neighbour, so repeat until stable.
        for _ in range(len(ctx.messages) + 1):
            changed = self._removals(ctx)
            if changed.messages == ctx.messages:
                break
            ctx = changed
        return self._record_merges(ctx)

    def _removals(self, ctx: PackContext) -> PackContext:
        """One pass of every removal the rules call for (the context itself when none)."""
        changed = self._drop_leading_assistant(ctx)
        changed = self._drop_unpaired_results(changed)
        return strip_unanswered_calls(changed, self.name)

    def _drop(self, ctx: PackContext, drop: dict[str, str]) -> PackContext:
        if not drop:
            return ctx
        decisions = [
            Decision(
                stage=self.name,
                action="dropped",
                message_id=m.id,
                reason=drop[m.id],
                tokens_before=ctx.tokens(m),
                tokens_after=0,
            )
            for m in ctx.messages
            if m.id in drop
        ]
        kept = tuple(m for m in ctx.messages if m.id not in drop)
        return ctx.decide(*decisions, messages=kept)

    def _drop_leading_assistant(self, ctx: PackContext) -> PackContext:
        first = leading_assistant(ctx.messages, ctx.protected)
        if first is None:
            return ctx
        calls = {c.id for c in first.tool_calls or ()}
        drop = {first.id: USER_FIRST}
        for m in ctx.messages:
            if m.role == "tool" and m.tool_call_id in calls:
                drop[m.id] = "its tool call was dropped with the assistant message leading the "
                drop[m.id] += "conversation (Anthropic needs a user message first)"
        return self._drop(ctx, drop)

    def _drop_unpaired_results(self, ctx: PackContext) -> PackContext:
        drop: dict[str, str] = {}
        previous_calls: set[str] = set()
        current_calls: set[str] = set()
        answered: set[str | None] = set()
        side = ""
        for m in ctx.messages:
            m_side = anthropic_side(m)
            if m_side == "system":
                continue
            if m_side != side:
                if m_side == "user":
                    previous_calls, answered = current_calls, set()
                current_calls = set()
                side = m_side
            if m.role == "assistant":
                current_calls.update(c.id for c in m.tool_calls or ())
            elif m.role == "tool" and m.tool_call_id not in previous_calls:
                drop[m.id] = (
                    f"tool result for {m.tool_call_id!r} does not answer the assistant turn "
                    "right before it (Anthropic would reject an orphaned tool_result)"
                )
            elif m.role == "tool" and m.tool_call_id in answered:
                drop[m.id] = REPEATED_RESULT
            elif m.role == "tool":
                answered.add(m.tool_call_id)
        return self._drop(ctx, drop)

    def _record_merges(self, ctx: PackContext) -> PackContext:
        decisions = []
        previous: Message | None = None
        for m in ctx.messages:
            if anthropic_side(m) == "system":
                continue
            if previous is not None and anthropic_side(previous) == anthropic_side(m):
                same_turn = _turn_of(m) is not None and _turn_of(m) == _turn_of(previous)
                # Results of one assistant turn always travel together in one user turn.
                both_results = m.role == previous.role == "tool"
                if not (same_turn or both_results):
                    decisions.append(
                        Decision(
                            stage=self.name,
                            action="merged",
                            message_id=m.id,
                            reason=f"sent in the same {anthropic_side(m)} turn as {previous.id!r}"
                            " (Anthropic needs alternating turns)",
                        )
                    )
            previous = m
        return ctx.decide(*decisions) if decisions else ctx


def turn_rule_breaks(ctx: PackContext) -> list[Decision]:
    """What :class:`TurnAlternator` would remove from ``ctx``'s messages, whatever its provider:
    empty when they already follow Anthropic's turn rules (a merge of same-role messages is not
    a break: :func:`ctxpack.to_anthropic` sends them as one turn).

    Only the first pass is reported (a removal can orphan a neighbour, which a second would
    find); it is enough to tell whether the messages are valid.
    """
    # Read against an empty log: the decisions already made (some of them deferred) stay unbuilt.
    probe = ctx.evolve(decisions=DecisionLog())
    return list(TurnAlternator()._removals(probe).decisions)


def provider_conform(
    messages: Sequence[Message], counter: TokenCounter, provider: Provider
) -> tuple[list[Message], list[Decision], dict[str, Message]]:
    """``messages`` as ``provider`` takes them, for a request sent without packing: Anthropic's
    turn rules as :class:`TurnAlternator` applies them, or OpenAI's pairing of calls and results
    (:func:`~ctxpack.stages._tool_pairs.provider_pairs`, decisions under ``session``). Returns
    the messages, the decisions and the originals of the messages changed, by id. Reasoning
    no writer sends goes first (:func:`~ctxpack.stages._tool_pairs.without_unsent_reasoning`)."""
    sendable, unsent = without_unsent_reasoning(messages, counter.count_message)
    if provider != "anthropic":
        paired, decisions, changed = provider_pairs(sendable, counter.count_message, "session")
        return paired, unsent + decisions, changed
    # It only removes, so no budget binds it.
    ctx = PackContext(messages=tuple(sendable), budget=1, counter=counter, provider="anthropic")
    ctx = TurnAlternator()(ctx)
    return list(ctx.messages), unsent + list(ctx.decisions), dict(ctx.artifacts)
