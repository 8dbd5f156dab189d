"""Thinking blocks taken out of assistant turns: for clearing, and for the prefix check of a
model with preserved thinking, which refuses a block once anything before it changed."""

from __future__ import annotations

from collections.abc import Sequence

from ..messages import Message
from ..pipeline import Decision
from ..tokens import TokenCounter
from .reasoning import REASONING

__all__ = ["THINKING", "thinking_cleared_from", "without_thinking"]

THINKING = frozenset({"thinking", "redacted_thinking", REASONING})
"""Anthropic's thinking blocks and OpenAI's reasoning items (held as parts, see ctxpack.sdk)."""


def without_thinking(msg: Message) -> Message | None:
    """``msg`` without its thinking blocks, or ``None`` when it has none (or only those)."""
    if msg.role != "assistant" or not isinstance(msg.content, list):
        return None
    kept = [part for part in msg.content if part.get("type") not in THINKING]
    if len(kept) == len(msg.content) or (not kept and not msg.tool_calls):
        return None
    return msg.model_copy(update={"content": kept or None})


def thinking_cleared_from(
    messages: Sequence[Message], first: int, counter: TokenCounter, *, stage: str, reason: str
) -> tuple[list[Message], list[Decision]]:
    """``messages`` without the thinking of the assistant turns from position ``first`` on,
    and a ``cleared`` decision of ``stage`` per turn changed, for ``reason``."""
    out = list(messages)
    cleared: list[Decision] = []
    for k in range(max(0, first), len(out)):
        new = without_thinking(out[k])
        if new is None:
            continue
        cleared.append(
            Decision(
                stage=stage,
                action="cleared",
                message_id=new.id,
                reason=reason,
                tokens_before=counter.count_message(out[k]),
                tokens_after=counter.count_message(new),
            )
        )
        out[k] = new
    return out, cleared
