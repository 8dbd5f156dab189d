"""The writes of a stored session whose reply was lost, so that the caller's retry stores once.

A store can take a write and lose its reply (the connection dropped at EXEC or COMMIT, a Redis
resend answered with a conflict, an AsyncSession call cancelled as the store committed): the
caller sees an error and retries. Each entry carries the id of its write; the next read says
whether the entry of a failed call is there.

The caller's next call decides: the same call (its key, its name and arguments) is done
already, any other forgets the write, and the same call made later is a new one. A caller is
the asyncio task making the call, else its thread: one session object may be shared by
several, and the calls of others in between (their own lost writes and retries too) forget
nothing. The same call made by another is taken for the retry all the same (a pool's other
worker retrying): were it a call of its own, the two are alike, the store holds one for it
and the first caller's retry writes its own. A caller that has ended (``run_until_complete``
runs each call in a task of its own) leaves its lost write to the next call of any.

A write of no call (a render storing the window's state, key ``None``) is neither the retry
nor makes the write forgotten: it comes between a call and its retry as the session renders
or another thread writes state.
"""

from __future__ import annotations

import asyncio
import copy
import secrets
import threading
import weakref
from typing import Any

__all__: list[str] = []


# Who made a call: its task or thread, held weakly (an ended one need not stay in memory).
_Caller = weakref.ref[Any]


def _caller() -> _Caller:
    """The asyncio task running in this thread, else the thread."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no event loop runs in this thread
        task = None
    caller = weakref.ref(task if task is not None else threading.current_thread())
    hash(caller)  # now: a weak reference hashes only while what it refers to lives, then keeps it
    return caller


def _ended(caller: _Caller) -> bool:
    """Whether ``caller`` can make no more calls, so no retry of its own."""
    made = caller()
    if made is None:
        return True
    if isinstance(made, threading.Thread):
        return not made.is_alive()
    return bool(made.done())


class LostReplies:
    """The lost replies of one session object (see the module's docstring)."""

    def __init__(self) -> None:
        # The last write prepared (the version it makes, its entry's id), one whose reply was
        # lost with the key of its call and its caller, and the key of each caller's call
        # whose write landed unacknowledged.
        self._write = (0, "")
        self._unsure: tuple[int, str, object, _Caller] | None = None
        self._landed: dict[_Caller, object] = {}

    def prepared(self, version: int) -> str:
        """The id of a new write, making ``version``, for its entry to carry."""
        self._write = (version, secrets.token_hex(8))
        return self._write[1]

    def looked_for(self) -> tuple[int, str, object, _Caller] | None:
        """The write a read looks for among the entries it applies (see :meth:`found`); each
        read looks once."""
        unsure, self._unsure = self._unsure, None
        return unsure

    def found(self, unsure: tuple[int, str, object, _Caller], version: int, write: object) -> None:
        """Note the entry read at ``version`` with the id ``write``: ``unsure``'s, it landed,
        its reply alone was lost."""
        if unsure[:2] == (version, write):
            self._landed[unsure[3]] = unsure[2]

    def unacknowledged(self, retry: object, *, landed: bool = False) -> None:
        """Note that the write last prepared was not acknowledged to its caller (``retry``,
        its key): cancelled once the store took it (``landed``), or failed, perhaps after (its
        reply lost with its connection); the next read tells."""
        try:
            key = copy.deepcopy(retry)  # as it is now: the caller may change and reuse its dicts
        except Exception:
            key = None  # never taken for a retry
        if key is None:
            return  # no retry to tell: a lost call's write stays remembered
        if landed:
            self._landed[_caller()] = key
        else:
            self._unsure = (*self._write, key, _caller())

    def retried(self, retry: object) -> bool:
        """Whether the call with key ``retry`` is done already, its write having landed
        unacknowledged; a call with a key forgets its caller's write (and those of callers
        that ended), a write of none does not."""
        if retry is None:
            return False
        caller = _caller()
        settled = [made for made in self._landed if made == caller or _ended(made)]
        if retry in [self._landed.pop(made) for made in settled]:
            return True
        # The same call as another caller's lost one: its retry, made elsewhere (see the
        # module's docstring).
        for made, key in self._landed.items():
            if key == retry:
                del self._landed[made]
                return True
        return False

    def forget(self) -> None:
        """Forget every write: the session was erased."""
        self._unsure = None
        self._landed.clear()
