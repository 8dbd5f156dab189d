"""The room the managed mode works in: the floor, the levels that trigger an edit, and where a
compaction lands (the budgets of the tail it keeps and of its summary)."""

from __future__ import annotations

from dataclasses import dataclass

from ..tokens import REPLY_PRIMING
from ._policy import WindowPolicy
from .view import _PINNED_ID, _Context, _reinjected_tokens, _View

__all__: list[str] = []  # the managed mode's internals: used by its other modules only

# The share of a compaction's landing the tail kept as it is may take; the summary gets the
# rest. A long task names again what it saw many steps ago, which the summary's identifier
# index keeps and a verbatim tail does not: on the tune halves a quarter kept more evidence
# than a half for the same bill (docs/guides/long-sessions.md, "How the tail's share was chosen").
TAIL_SHARE = 0.25


@dataclass(frozen=True)
class _Room:
    """One request's room: ``room`` tokens for the messages, of which ``floor`` are taken by
    what every request carries and no edit removes.

    The floor is the system prompt, every user instruction *wherever it sits*, and the pinned
    content as a compaction re-injects it (``pinned`` tokens: memory files whole, skills within
    their budgets), with the reply's priming: an instruction in the tail a compaction keeps is
    no part of the tail's share, since every request after the compaction carries it all the
    same, and the tail is chosen only once its budget is known, so a floor counted before the
    tail could not be the one the budget was drawn from. Pinned content is counted as every
    request after a compaction carries it, before the first compaction too: what it takes
    there above its re-injection is what a compaction removes of it. The shares of the policy
    apply to what lies above the floor.
    """

    policy: WindowPolicy
    room: int
    floor: int
    pinned: int

    @classmethod
    def of(cls, policy: WindowPolicy, view: _View, room: int, ctx: _Context) -> _Room:
        """The room of the request ``view`` built from the record, with the pinned content of
        all of the record re-injected (a compaction that keeps a pin in its tail, where it is
        sent whole instead, counts the difference with the tail)."""
        verbatim = sum(
            s
            for m, s in zip(view.messages, view.sizes, strict=True)
            if ctx.verbatim(m) and m.id != _PINNED_ID
        )
        pinned = _reinjected_tokens(ctx, policy, len(ctx.record))
        return cls(policy, room, REPLY_PRIMING + verbatim + pinned, pinned)

    @property
    def usable(self) -> int:
        """The tokens above the floor that the policy's shares apply to: what the mode
        manages, at most ``managed_room``."""
        above = max(0, self.room - self.floor)
        cap = self.policy.managed_room
        return above if cap is None else min(above, cap)

    def level(self, share: float) -> float:
        """The prompt's tokens at ``share`` of the usable room."""
        return self.floor + share * self.usable

    @property
    def landing_share(self) -> float:
        """Where a compaction lands, as a share of the usable room: midway between ``clear_at``
        and ``compact_at``, so that it leaves room to grow before the next one."""
        return (self.policy.clear_at + self.policy.compact_at) / 2

    @property
    def landing(self) -> int:
        """The tokens a compaction may leave above the floor: the summary and the tail kept."""
        return int(self.landing_share * self.usable)

    @property
    def tail_budget(self) -> int:
        """The tokens the tail a compaction keeps may take: ``TAIL_SHARE`` of the landing (the
        summary gets the rest)."""
        return int(TAIL_SHARE * self.landing)

    def summary_budget(self, tail: int) -> int:
        """The summary's tokens when the tail kept takes ``tail`` tokens above the floor:
        ``summary_share`` of the usable room, less when the tail would leave the request above
        the landing (it would compact again at once, rewriting the cache at every request). A
        tail over its share of the landing (the last call's results are always kept) leaves
        the summary half of it all the same."""
        left = max(self.landing - tail, self.landing // 2)
        return max(0, min(int(self.policy.summary_share * self.usable), left))
