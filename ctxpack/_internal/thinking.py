"""Thinking blocks taken out of assistant turns: for clearing, and for the prefix check of a
model with preserved thinking, which refuses a block once anything before it changed."""

from __future__ import annotations

from collections.abc import Sequence

from ..messages import Message
from ..pipeline import Decision
from ..tokens import TokenCounter
from .reasoning import REASONING

__all__ = [
    "LITELLM_THINKING",
    "THINKING",
    "has_thinking",
    "thinking_cleared_from",
    "without_thinking",
]

THINKING = frozenset({"thinking", "redacted_thinking", REASONING})
"""Anthropic's thinking blocks and OpenAI's reasoning items (held as parts, see ctxpack.sdk)."""


# The thinking LiteLLM returns beside an OpenAI-shaped message: Claude's blocks (sent back to
# Claude as such) and their text.
LITELLM_THINKING = ("thinking_blocks", "reasoning_content")


def has_thinking(msg: Message) -> bool:
    """Whether ``msg`` is an assistant turn with thinking: blocks in its content, or beside it
    in LiteLLM's shape (what :func:`without_thinking` takes out)."""
    if msg.role != "assistant":
        return False
    parts = msg.content if isinstance(msg.content, list) else []
    return any(part.get("type") in THINKING for part in parts) or any(
        msg.extras.get(key) for key in LITELLM_THINKING
    )


def without_thinking(msg: Message) -> Message | None:
    """``msg`` without its thinking blocks (those in its content, and those LiteLLM holds beside
    it), or ``None`` when it has none (or only those)."""
    if msg.role != "assistant":
        return None
    content = msg.content
    parts = content if isinstance(content, list) else []
    kept = [part for part in parts if part.get("type") not in THINKING]
    beside = [key for key in LITELLM_THINKING if msg.extras.get(key)]
    left = kept if isinstance(content, list) else content
    if (len(kept) == len(parts) and not beside) or (not left and not msg.tool_calls):
        return None
    update: dict[str, object] = {}
    if len(kept) != len(parts):
        update["content"] = kept or None
    if beside:
        update["extras"] = {k: v for k, v in msg.extras.items() if k not in LITELLM_THINKING}
    return msg.model_copy(update=update)


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
