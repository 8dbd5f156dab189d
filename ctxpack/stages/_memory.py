"""Select memory: a rolling window of recent turns plus episodic memory."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from .._internal.columns import IMPORTANT, PINNED, PRIORITY, flags, positions
from ..pipeline import Decision, PackContext, check_context
from ._base import StageModel

__all__ = ["MemorySelector"]


class MemorySelector(StageModel):
    """Tag each message as recent, episodic or a candidate for dropping.

    Recent: within the last ``window`` user turns (a turn is a user message and everything up to
    the next one). Episodic: pinned, ``metadata["important"]`` true, or ``priority >=
    important_priority``. Both get the ``memory`` signal (1.0), which the packer adds to their
    score with its ``memory_weight``; the rest are candidates. Nothing is dropped here.

    Args:
        window: How many of the latest user turns form the rolling window.
        important_priority: Priority from which a message counts as episodic memory.
    """

    name: ClassVar[str] = "memory"
    provides: ClassVar[frozenset[str]] = frozenset({"memory"})

    window: int = Field(default=3, ge=0)
    important_priority: float = 1.0

    def __call__(self, ctx: PackContext, /) -> PackContext:
        check_context(ctx, self)
        messages = ctx.messages
        start = len(messages)
        turns = 0
        if self.window > 0:
            for i in range(len(messages) - 1, -1, -1):
                if messages[i].role == "user":
                    turns += 1
                    start = i
                    if turns == self.window:
                        break
        signal: dict[str, float] = {}
        decisions = []
        column = flags(messages)
        # Episodic candidates: pinned, flagged important, or with a priority to compare.
        candidates = positions(column[:start] & (PINNED | IMPORTANT | PRIORITY))
        for i in [*candidates, *range(start, len(messages))]:
            msg = messages[i]
            if i >= start:
                reason = f"recent: within the last {self.window} user turns"
            elif (
                msg.pinned
                or msg.metadata.get("important")
                or msg.priority >= self.important_priority
            ):
                reason = "episodic: pinned, flagged important or high priority"
            else:
                continue
            signal[msg.id] = 1.0
            decisions.append(
                Decision(stage=self.name, action="selected", message_id=msg.id, reason=reason)
            )
        return ctx.with_signal("memory", signal).decide(*decisions)
