"""Compose the prompt: system + developer + user, the instructions pinned."""

from __future__ import annotations

from typing import ClassVar

from pydantic import field_validator

from .._internal.arguments import check_text
from .._internal.columns import DEVELOPER, PINNED, SYSTEM, flags, positions
from ..messages import Message
from ..pipeline import Decision, PackContext, check_context
from ._base import StageModel

__all__ = ["PromptComposer"]


class PromptComposer(StageModel):
    """Put the instructions in front and protect what the next answer cannot do without.

    ``system`` and ``developer``, when given, are inserted at the start (after any existing
    system messages) unless a message with the same text is already there. Every system and
    pinned message is then protected, every developer message too (instructions, like the
    system prompt) unless ``protect_developer`` is off, and so is the last user message (the
    current question) when ``keep_last_user`` is set: the packer never drops protected
    messages.

    Args:
        system: A system prompt to add.
        developer: Developer instructions to add.
        keep_last_user: Protect the last user message.
        protect_developer: Protect developer messages; off, they compete for the budget like
            the rest of the history (the packer weighs them above user messages).
    """

    name: ClassVar[str] = "compose"

    system: str | None = None
    developer: str | None = None
    keep_last_user: bool = True
    protect_developer: bool = True

    @field_validator("system", "developer")
    @classmethod
    def _sendable(cls, text: str | None) -> str | None:
        # Sent as a message's content, which refuses it at the first pack, without naming this.
        if text is not None:
            check_text(text, "text")
        return text

    def __call__(self, ctx: PackContext, /) -> PackContext:
        check_context(ctx, self)
        added = self._added(ctx.messages)
        messages = ctx.messages
        if added:
            head = 0
            while head < len(messages) and messages[head].role == "system":
                head += 1
            messages = (*messages[:head], *added, *messages[head:])

        protected = set(ctx.protected)
        # An added message is announced like any other change, even when nothing protects it.
        decisions = [
            Decision(
                stage=self.name,
                action="kept",
                message_id=msg.id,
                reason=f"added: the {msg.role} text given to PromptComposer",
            )
            for msg in added
        ]
        wanted = SYSTEM | PINNED | (DEVELOPER if self.protect_developer else 0)
        for i in positions(flags(messages) & wanted):
            msg = messages[i]
            reason = (
                "system prompt"
                if msg.role == "system"
                else ("pinned" if msg.pinned else "developer instructions")
            )
            protected.add(msg.id)
            decisions.append(
                Decision(stage=self.name, action="pinned", message_id=msg.id, reason=reason)
            )
        if self.keep_last_user:
            for msg in reversed(messages):
                if msg.role == "user":
                    if msg.id not in protected:
                        protected.add(msg.id)
                        decisions.append(
                            Decision(
                                stage=self.name,
                                action="pinned",
                                message_id=msg.id,
                                reason="the current question (last user message)",
                            )
                        )
                    break
        return ctx.decide(*decisions, messages=messages, protected=frozenset(protected))

    def _added(self, messages: tuple[Message, ...]) -> list[Message]:
        """The ``system`` and ``developer`` texts given, as messages, unless already there."""
        if self.system is None and self.developer is None:
            return []
        texts = {(m.role, m.text) for m in messages if m.role in ("system", "developer")}
        added = []
        if self.system is not None and ("system", self.system) not in texts:
            added.append(
                Message(role="system", content=self.system, id=_free_id("system", messages))
            )
        if self.developer is not None and ("developer", self.developer) not in texts:
            added.append(
                Message(
                    role="developer", content=self.developer, id=_free_id("developer", messages)
                )
            )
        return added


def _free_id(base: str, messages: tuple[Message, ...]) -> str:
    taken = {m.id for m in messages}
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}-{n}"
    return candidate
