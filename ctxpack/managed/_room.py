"""The room the managed mode works in: the floor, and the levels that trigger an edit."""

from __future__ import annotations

from dataclasses import dataclass

from ..tokens import REPLY_PRIMING
from ._policy import WindowPolicy
from .view import _verbatim, _View

__all__: list[str] = []  # the managed mode's internals: used by its other modules only


@dataclass(frozen=True)
class _Room:
    """One request's room: ``room`` tokens for the messages, of which ``floor`` are taken by
    what every request carries and no edit removes (the system prompt, user instructions,
    pinned messages, the reply's priming). The shares of the policy apply to what lies above
    the floor."""

    policy: WindowPolicy
    room: int
    floor: int

    @classmethod
    def of(cls, policy: WindowPolicy, view: _View, room: int) -> _Room:
        """The room of the request ``view`` (re-injected pinned content counts in the floor:
        every compaction re-injects it)."""
        verbatim = sum(s for m, s in zip(view.messages, view.sizes, strict=True) if _verbatim(m))
        return cls(policy, room, REPLY_PRIMING + verbatim)

    @property
    def usable(self) -> int:
        """The tokens above the floor: what the mode can manage."""
        return max(0, self.room - self.floor)

    def level(self, share: float) -> float:
        """The prompt's tokens at ``share`` of the usable room."""
        return self.floor + share * self.usable

    @property
    def landing_share(self) -> float:
        """Where a compaction lands, as a share of the usable room: midway between ``clear_at``
        and ``compact_at``, so that it leaves room to grow before the next one."""
        return (self.policy.clear_at + self.policy.compact_at) / 2
