"""Inherit citations: a message without a source takes the nearest earlier one."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from .._internal.columns import sources
from ..messages import Message, Role
from ..pipeline import Decision, PackContext, check_context
from ._base import StageModel

__all__ = ["CitationInheritor"]


class CitationInheritor(StageModel):
    """Give each message without a ``source`` the source of the nearest earlier message that has
    one, so a figure can always be traced back ("Selon wikipedia.org, le PIB..." then "Donc le PIB
    par habitant..." both cite wikipedia.org).

    Args:
        roles: Roles that inherit; system and developer instructions cite nothing by default.
        max_distance: Inherit only from at most this many messages back (``None``: no limit).
    """

    name: ClassVar[str] = "citations"

    roles: tuple[Role, ...] = ("user", "assistant", "tool")
    max_distance: int | None = Field(default=None, ge=1)

    def __call__(self, ctx: PackContext, /) -> PackContext:
        check_context(ctx, self)
        if not any(sources(ctx.messages)):
            return ctx  # nothing to inherit: the common chat
        out: list[Message] = []
        decisions = []
        current: tuple[str, str, int] | None = None  # (source, message id, position)
        for i, msg in enumerate(ctx.messages):
            if msg.source:
                current = (msg.source, msg.id, i)
                out.append(msg)
                continue
            if (
                current is not None
                and msg.role in self.roles
                and (self.max_distance is None or i - current[2] <= self.max_distance)
            ):
                out.append(msg.model_copy(update={"source": current[0]}))
                decisions.append(
                    Decision(
                        stage=self.name,
                        action="cited",
                        message_id=msg.id,
                        reason=f"inherits source {current[0]!r} from message {current[1]!r}",
                    )
                )
                continue
            out.append(msg)
        if not decisions:
            return ctx
        return ctx.decide(*decisions, messages=tuple(out))
