"""The writes of a stored session whose reply was lost, so that the caller's retry stores once.

A store can take a write and lose its reply (the connection dropped at EXEC or COMMIT, a Redis
resend answered with a conflict, an AsyncSession call cancelled as the store committed): the
caller sees an error and retries. Each entry carries the id of its write; the next read says
whether the entry of a failed call is there. The next call decides: the same call (its key, its
name and arguments) is done already, any other forgets the write, and the same call made later
is a new one. A write of no call (a render storing the window's state, key ``None``) is neither
the retry nor makes the write forgotten: it comes between a call and its retry as the session
renders or another thread writes state.
"""

from __future__ import annotations

import copy
import secrets

__all__: list[str] = []


class LostReplies:
    """The lost replies of one session object (see the module's docstring)."""

    def __init__(self) -> None:
        # The last write prepared (the version it makes, its entry's id), one whose reply was
        # lost with the key of its call, and the key of a call whose write landed.
        self._write = (0, "")
        self._unsure: tuple[int, str, object] | None = None
        self.landed: object = None

    def prepared(self, version: int) -> str:
        """The id of a new write, making ``version``, for its entry to carry."""
        self._write = (version, secrets.token_hex(8))
        return self._write[1]

    def looked_for(self) -> tuple[int, str, object] | None:
        """The write a read looks for among the entries it applies (see :meth:`found`); each
        read looks once."""
        unsure, self._unsure = self._unsure, None
        return unsure

    def found(self, unsure: tuple[int, str, object], version: int, write: object) -> None:
        """Note the entry read at ``version`` with the id ``write``: ``unsure``'s, it landed,
        its reply alone was lost."""
        if unsure[:2] == (version, write):
            self.landed = unsure[2]

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
            self.landed = key
        else:
            self._unsure = (*self._write, key)

    def retried(self, retry: object) -> bool:
        """Whether the call with key ``retry`` is done already, its write having landed
        unacknowledged; a call with a key forgets that write, a write of none does not."""
        if retry is None:
            return False
        landed, self.landed = self.landed, None
        return landed == retry

    def forget(self) -> None:
        """Forget every write: the session was erased."""
        self._unsure = self.landed = None
