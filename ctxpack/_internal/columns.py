"""Per-message facts that stages scan the whole history for, memoised across packs.

Each is a column over a message sequence, computed by :class:`~ctxpack._internal.prefix.PrefixMemo`,
so packing a 60,000-message history again with one new question reads them back instead of walking
every message in Python.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from operator import attrgetter, itemgetter
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from ..messages import ROLES, Message, provider_of
from .prefix import PrefixMemo

__all__ = [
    "ANTHROPIC",
    "DEVELOPER",
    "IMPORTANT",
    "PINNED",
    "PRIORITY",
    "SYSTEM",
    "TOOL",
    "USER",
    "flags",
    "ids",
    "items_at",
    "positions",
    "positions_of",
    "role_codes",
    "sources",
]

SYSTEM = 1
DEVELOPER = 2
USER = 4
PINNED = 8
IMPORTANT = 16  # metadata["important"] is truthy
PRIORITY = 32  # priority is not 0
TOOL = 64  # calls tools or answers a call
ANTHROPIC = 128  # made by from_anthropic() (recorded outside metadata, see provider_of)

T = TypeVar("T")

_ROLE_FLAG = {"system": SYSTEM, "developer": DEVELOPER, "user": USER}


def _flags(msg: Message) -> int:
    value = _ROLE_FLAG.get(msg.role, 0)
    if msg.pinned:
        value |= PINNED
    if msg.metadata and msg.metadata.get("important"):
        value |= IMPORTANT
    if msg.priority:
        value |= PRIORITY
    if msg.tool_calls or msg.role == "tool":
        value |= TOOL
    if provider_of(msg) == "anthropic":
        value |= ANTHROPIC
    return value


_FLAGS: PrefixMemo[Message, int] = PrefixMemo(_flags)
_IDS: PrefixMemo[Message, str] = PrefixMemo(lambda msg: msg.id)
_ROLE_CODES: PrefixMemo[Message, int] = PrefixMemo(lambda msg: ROLES.index(msg.role))
_SOURCES: PrefixMemo[Message, str | None] = PrefixMemo(attrgetter("source"))


def flags(messages: Sequence[Message]) -> npt.NDArray[np.uint8]:
    """The flags above, one byte per message (test with ``&``)."""
    return np.frombuffer(bytes(_FLAGS(messages)), dtype=np.uint8)


def ids(messages: Sequence[Message]) -> tuple[str, ...]:
    """Every message's id."""
    return _IDS(messages)


def sources(messages: Sequence[Message]) -> tuple[str | None, ...]:
    """Every message's ``source`` (``None`` when it has none)."""
    return _SOURCES(messages)


def role_codes(messages: Sequence[Message]) -> npt.NDArray[np.uint8]:
    """Every message's role as its index in :data:`ctxpack.messages.ROLES`."""
    return np.frombuffer(bytes(_ROLE_CODES(messages)), dtype=np.uint8)


def items_at(values: Sequence[T], indices: Sequence[int]) -> tuple[T, ...]:
    """``tuple(values[i] for i in indices)``, in C (not numpy's ``take``: any sequence, a tuple
    out)."""
    if len(indices) > 1:
        return itemgetter(*indices)(values)  # type: ignore[no-any-return]
    return (values[indices[0]],) if indices else ()


def positions(mask: npt.NDArray[Any]) -> list[int]:
    """Positions where ``mask`` is true, as Python ints."""
    return np.flatnonzero(mask).tolist()  # type: ignore[no-any-return]


def positions_of(ids: Sequence[str], wanted: Collection[str]) -> list[int]:
    """Positions, ascending, of the items of ``ids`` that are in ``wanted``.

    Example:
        >>> positions_of(("a", "b", "c", "b"), {"b", "z"})
        [1, 3]
    """
    if len(wanted) > 4:
        return positions(np.fromiter(map(wanted.__contains__, ids), dtype=bool, count=len(ids)))
    # A few ids, as protected ones usually are (the system prompt, the question): one scan in C
    # per id beats a Python-level lookup per message.
    found = []
    for item in wanted:
        at = -1
        try:
            while True:
                at = ids.index(item, at + 1)
                found.append(at)
        except ValueError:
            pass
    found.sort()
    return found
