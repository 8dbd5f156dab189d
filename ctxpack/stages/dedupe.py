"""Deduplicate: keep only the most recent copy of a repeated message (seed 004, step 3)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..messages import Message
from ..pipeline import Decision, PackContext
from ._base import StageModel

__all__ = ["Deduplicator"]


_NORMALIZED: dict[tuple[str, bool], str] = {}


def _key(msg: Message, case_sensitive: bool) -> tuple[str, str]:
    # Cached per text: a long history is deduplicated again on every pack.
    text = msg.text
    norm = _NORMALIZED.get((text, case_sensitive))
    if norm is None:
        norm = " ".join(text.split())
        if not case_sensitive:
            norm = norm.casefold()
        if len(_NORMALIZED) >= 500_000:
            _NORMALIZED.clear()
        _NORMALIZED[(text, case_sensitive)] = norm
    return msg.role, norm


class Deduplicator(StageModel):
    """Drop older copies of a message, scanning from the end so the most recent copy stays.

    Two messages are copies when they have the same role and the same text after collapsing
    whitespace (and case, unless ``case_sensitive``). Protected and pinned messages, tool
    exchanges (dropping one half would orphan the other) and messages with non-text parts are
    never removed. When the removed copy had a ``source`` and the kept one has none, the kept one
    takes it, so no citation is lost.

    Args:
        case_sensitive: Compare text with case.
    """

    name: Literal["dedupe"] = Field(default="dedupe", exclude=True, repr=False)

    case_sensitive: bool = False

    def __call__(self, ctx: PackContext, /) -> PackContext:
        seen: dict[tuple[str, str], int] = {}
        kept: list[Message] = []
        decisions = []
        for msg in reversed(ctx.messages):
            key = _key(msg, self.case_sensitive)
            removable = not (
                msg.pinned
                or msg.id in ctx.protected
                or msg.tool_calls
                or msg.role == "tool"
                or (
                    isinstance(msg.content, list)
                    and any(p.get("type") != "text" for p in msg.content)
                )
                or not key[1]
            )
            if removable and key in seen:
                pos = seen[key]
                newer = kept[pos]
                if msg.source and not newer.source:
                    kept[pos] = newer.model_copy(update={"source": msg.source})
                # A long history can hold thousands of copies: the unvalidated constructor.
                decisions.append(
                    Decision.trusted(
                        self.name,
                        "deduped",
                        msg.id,
                        f"duplicate of the more recent message {newer.id!r}",
                        None,
                        ctx.tokens(msg),
                        0,
                    )
                )
                continue
            seen.setdefault(key, len(kept))
            kept.append(msg)
        if not decisions:
            return ctx
        decisions.reverse()
        return ctx.decide(*decisions, messages=tuple(reversed(kept)))
