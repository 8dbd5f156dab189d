"""Per-message values reused across calls for the prefix a history shares with an earlier one.

A chatbot packs the same history again every turn, with one or two messages more. Messages are
frozen, so anything derived from one message alone (its token count, its dedupe key, its flags)
is the same as last time; what changes is the tail. :class:`PrefixMemo` finds, in C, the
longest prefix a new sequence shares *by identity* with a sequence it has seen, reuses the values
computed for it and computes only the rest. That turns per-message Python loops over a
60,000-message history into a few list operations.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from ..caches import register
from . import forks

__all__ = ["PrefixMemo", "common_prefix", "likely_prefix"]

T = TypeVar("T")
V = TypeVar("V")


def common_prefix(a: Sequence[object], b: Sequence[object]) -> int:
    """How many leading items ``a`` and ``b`` share by identity (``a[i] is b[i]``).

    Example:
        >>> x, y = object(), object()
        >>> common_prefix([x, y, x], [x, y]), common_prefix([x], [y])
        (2, 0)
    """
    # map() stops at the shorter sequence, and both it and list.index run in C.
    same = list(map(operator.is_, a, b))
    try:
        return same.index(False)
    except ValueError:
        return len(same)


def likely_prefix(a: Sequence[object], b: Sequence[object]) -> int:
    """A fast guess at :func:`common_prefix` from a binary search on identity (about 16 probes
    for 60,000 items). Exact when the sequences agree up to one point and differ after it; may
    overestimate when an item was replaced in the middle, so callers verify their pick."""
    if a is b:
        return len(a)
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[mid - 1] is b[mid - 1]:
            lo = mid
        else:
            hi = mid - 1
    return lo


# The last verified pair: a pack runs a dozen memos over the same new sequence, which all last
# saw the same previous one, so one C scan serves them all. Holding the pair keeps their
# identities from being recycled.
_last_verified: tuple[Sequence[object], Sequence[object], int] | None = None


def _verified_prefix(items: Sequence[object], seen: Sequence[object]) -> int:
    global _last_verified
    last = _last_verified
    if last is not None and last[0] is items and last[1] is seen:
        return last[2]
    k = len(items) if seen is items else common_prefix(items, seen)
    _last_verified = (items, seen, k)
    return k


class PrefixMemo(Generic[T, V]):
    """``[fn(x) for x in items]``, reusing the values of the longest prefix (by identity)
    shared with one of the last ``slots`` sequences seen.

    ``fn`` must depend on the item alone, and items must never change: ctxpack uses it only
    over its own messages (see :func:`ctxpack.messages.owned_messages`), never the caller's.
    The memo holds references to the items it remembers, so an identity is never recycled
    while remembered.
    Thread-safe: concurrent callers may compute the same values twice, never wrong ones.

    Example:
        >>> calls = []
        >>> memo = PrefixMemo(lambda s: calls.append(s) or len(s))
        >>> a, b, c = "x", "yy", "zzz"
        >>> memo([a, b]), memo([a, b, c]), calls
        ((1, 2), (1, 2, 3), ['x', 'yy', 'zzz'])
    """

    def __init__(self, fn: Callable[[T], V], slots: int = 8) -> None:
        self._fn = fn
        self._slots = slots
        # Most recent first: (items, values).
        self._entries: list[tuple[tuple[T, ...], tuple[V, ...]]] = []
        self._lock = forks.freed_in_child(threading.Lock(), self.clear)
        register(self)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled (a counter sent to a worker process), a new memo that remembers nothing:
        # identities mean nothing in another process.
        return PrefixMemo, (self._fn, self._slots)

    def __call__(self, items: Sequence[T]) -> tuple[V, ...]:
        items = tuple(items)
        with self._lock:
            entries = self._entries
        # Most recent first, stopping at an entry the new sequence fully extends: that is the
        # next turn of the conversation last packed, almost always the best reuse there is (any
        # pick is correct; a worse one only computes more).
        # Sharing all but the last item is as good as it gets short of the same sequence: the
        # same history with a new question.
        enough = len(items) - 1
        guesses: list[int] = []
        for seen, _ in entries:
            guesses.append(likely_prefix(items, seen))
            if guesses[-1] == len(seen) or guesses[-1] >= enough:
                break
        best = max(range(len(guesses)), key=guesses.__getitem__, default=-1)
        k = 0
        if best >= 0 and guesses[best]:
            seen, values = entries[best]
            k = _verified_prefix(items, seen)
            if k < guesses[best]:
                # The guess was too high: an item differs in the middle (a session's record
                # and its transcript, which differ where a message was redacted again). Another
                # sequence seen may share more.
                for i, (other, _) in enumerate(entries):
                    if i != best and (shared := common_prefix(items, other)) > k:
                        best, k = i, shared
                seen, values = entries[best]
            if k == len(items) == len(seen):
                return values
        head = entries[best][1][:k] if k else ()
        values = head + tuple(map(self._fn, items[k:]))
        # An entry the new sequence fully extends is superseded by it: the memo stays small.
        superseded = entries[best] if k and k == len(entries[best][0]) else None
        with self._lock:
            kept = [e for e in self._entries if e is not superseded]
            self._entries = [(items, values), *kept][: self._slots]
        return values

    def clear(self) -> None:
        """Forget every sequence."""
        global _last_verified
        with self._lock:
            self._entries = []
        _last_verified = None
