"""Deduplicate: keep only the most recent copy of a repeated message."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from .._internal.columns import ids as message_ids
from .._internal.columns import items_at, positions, positions_of
from .._internal.columns import sources as message_sources
from .._internal.decisions import trusted_decision
from .._internal.prefix import PrefixMemo
from ..caches import SHORT_TEXT, text_memo
from ..messages import Message
from ..pipeline import Decision, DecisionLog, PackContext, check_context
from ..tokens import message_sizes
from ._base import StageModel

__all__ = ["Deduplicator"]


@text_memo(
    name="dedupe keys",
    maxsize=200_000,
    maxbytes=6 * 2**20,
    short_size=8_192,
    # Key tuple, text, its normal form (never longer) and the cache's own link.
    short_entry_bytes=64 + 2 * (49 + 4 * SHORT_TEXT) + 100,
)
def _normalized(text: str, case_sensitive: bool) -> str:
    # Cached per text: a long history is deduplicated again on every pack.
    norm = " ".join(text.split())
    return norm if case_sensitive else norm.casefold()


def _key(msg: Message) -> tuple[str, str]:
    return msg.role, _normalized(msg.text, False)


def _key_with_case(msg: Message) -> tuple[str, str]:
    return msg.role, _normalized(msg.text, True)


def _removable(msg: Message) -> bool:
    """Whether ``msg`` may ever be removed as a copy (protection aside, which varies per call)."""
    content = msg.content
    return not (
        msg.pinned
        or msg.tool_calls
        or msg.role == "tool"
        or (isinstance(content, list) and any(p.get("type") != "text" for p in content))
        # No text left once whitespace collapses (str.split and str.strip agree on whitespace).
        or not msg.text.strip()
    )


# Per-message facts, memoised across packs of a growing history (see ctxpack._internal.prefix).
_KEYS: dict[bool, PrefixMemo[Message, tuple[str, str]]] = {
    False: PrefixMemo(_key),
    True: PrefixMemo(_key_with_case),
}
_REMOVABLE: PrefixMemo[Message, bool] = PrefixMemo(_removable)


class Deduplicator(StageModel):
    """Drop older copies of a message, so the most recent copy stays.

    Two messages are copies when they have the same role and the same text after collapsing
    whitespace (and case, unless ``case_sensitive``). Protected and pinned messages, tool
    exchanges (dropping one half would orphan the other) and messages with non-text parts are
    never removed. When the removed copy had a ``source`` and the kept one has none, the kept one
    takes it, so no citation is lost.

    Args:
        case_sensitive: Compare text with case.
    """

    name: ClassVar[str] = "dedupe"

    case_sensitive: bool = False

    def __call__(self, ctx: PackContext, /) -> PackContext:
        check_context(ctx, self)
        messages = ctx.messages
        n = len(messages)
        keys = _KEYS[self.case_sensitive](messages)
        # dict() keeps the last position of each key: the newest copy. All of this runs in C.
        newest_of = dict(zip(keys, range(n), strict=True))
        if len(newest_of) == n:
            return ctx
        newest = np.fromiter(map(newest_of.__getitem__, keys), dtype=np.intp, count=n)
        older = newest != np.arange(n)
        older &= np.fromiter(_REMOVABLE(messages), dtype=bool, count=n)
        ids = message_ids(messages)
        older[positions_of(ids, ctx.protected)] = False
        copies = positions(older)
        if not copies:
            return ctx
        sizes = message_sizes(ctx.counter, messages)
        removed = items_at(ids, copies)
        # A long history holds thousands of copies: their decisions are written only if someone
        # reads them (DecisionLog.deferred).
        facts = (removed, items_at(ids, newest[copies].tolist()), items_at(sizes, copies))
        name = self.name

        def trace() -> list[Decision]:
            # Thousands per call on a long history: the unvalidated constructor.
            return [
                trusted_decision(
                    name,
                    "deduped",
                    mid,
                    f"duplicate of the more recent message {newer!r}",
                    None,
                    size,
                    0,
                )
                for mid, newer, size in zip(*facts, strict=True)
            ]

        kept = list(items_at(messages, positions(~older)))
        sources = message_sources(messages)
        donors = positions(older & np.fromiter(map(bool, sources), dtype=bool, count=n))
        if donors:
            # The newest removed copy with a source gives it to a kept copy that has none.
            position = {m.id: p for p, m in enumerate(kept)}
            for i in reversed(donors):
                p = position[ids[newest[i]]]
                if not kept[p].source:
                    kept[p] = kept[p].model_copy(update={"source": sources[i]})
        return ctx.evolve(
            decisions=ctx.decisions + DecisionLog.deferred(removed, trace), messages=tuple(kept)
        )
