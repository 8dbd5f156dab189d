"""Pack greedily under the budget by score, then restore chronological order.

The promise: the result is the chronological subsequence of the messages that holds every system,
pinned and protected message, keeps or drops each tool exchange whole (a call without a result,
or a result without its call, is removed first: providers reject both), and adds the other units
whenever they still fit, so that the prompt never exceeds ``budget - reserve`` tokens: first the
turn in progress (the unit the conversation ends with when it ends with the model's calls and
their results, or with an answer prefilled for it), then the others in decreasing score (ties:
the more recent first).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from types import MappingProxyType
from typing import ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import Field, field_validator

from .._internal.columns import (
    PINNED,
    PRIORITY,
    SYSTEM,
    flags,
    items_at,
    positions,
    positions_of,
    role_codes,
)
from .._internal.columns import ids as message_ids
from .._internal.decisions import trusted_decision
from ..errors import BudgetExceededError
from ..messages import ROLES, Message
from ..pipeline import Action, Decision, DecisionLog, PackContext, check_context
from ..tokens import message_sizes, priming_tokens
from ._alternate import USER_FIRST, leading_assistant
from ._base import ReadOnlyMap, StageModel, Weights
from ._tool_pairs import Units, exchange_units, stray_dropped, strip_unanswered_calls

__all__ = ["DEFAULT_ROLE_WEIGHTS", "GreedyPacker"]

# System 10, developer 8, user 6, assistant 4. A tool result gets 3: it is usually the
# bulkiest and the first to go stale, and it still rides with its call (a unit scores as its
# best member), so a relevant exchange survives through the assistant turn that asked for it.
DEFAULT_ROLE_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {"system": 10.0, "developer": 8.0, "user": 6.0, "assistant": 4.0, "tool": 3.0}
)


class GreedyPacker(StageModel):
    """Score every message, add units in decreasing score while they fit, restore order.

    Score of a message = role weight + ``priority`` + ``recency_weight`` x position (0 for the
    oldest, 1 for the newest) + the stages' signals times ``signal_weights``. A unit (a tool
    exchange) scores as its best member and costs the sum of its members.

    Args:
        role_weights: Weight per role (system 10, developer 8, user 6, assistant 4, tool 3).
            Every weight is a finite number >= 0.
        recency_weight: Weight of recency (0 leaves order out of the score).
        signal_weights: Weight of each named signal set by earlier stages (``relevance`` from
            the relevance scorer, ``memory`` from the memory selector). Each signal with a
            non-zero weight is one the packer ``requires``: a :class:`~ctxpack.Pipeline`
            without a step providing it before the packer raises ``ConfigError``;
            ``signal_weights={}`` packs on roles, priority and recency alone. The mapping
            replaces the defaults: a signal it leaves out weighs 0.

    Raises:
        BudgetExceededError: the protected messages alone do not fit in ``budget - reserve``.
    """

    name: ClassVar[str] = "pack"

    role_weights: Weights = Field(default_factory=lambda: ReadOnlyMap(DEFAULT_ROLE_WEIGHTS))
    recency_weight: float = Field(default=2.0, ge=0.0)
    signal_weights: Weights = Field(
        default_factory=lambda: ReadOnlyMap({"relevance": 40.0, "memory": 2.0})
    )

    @field_validator("role_weights")
    @classmethod
    def _known_roles(cls, weights: Mapping[str, float]) -> Mapping[str, float]:
        # A misspelt role would weigh no message, and every message of the role meant 0.
        unknown = sorted(set(weights) - set(ROLES))
        if unknown:
            raise ValueError(f"unknown role(s) {unknown}; roles are {', '.join(ROLES)}")
        return weights

    @property
    def requires(self) -> frozenset[str]:
        """The signals it weighs (a non-zero weight): a pipeline needs a step providing each
        before this one, else every message would score 0 on it without a word."""
        return frozenset(signal for signal, weight in self.signal_weights.items() if weight)

    def __call__(self, ctx: PackContext, /) -> PackContext:
        check_context(ctx, self)
        ctx = strip_unanswered_calls(ctx, self.name)
        messages = ctx.messages
        ids = message_ids(messages)
        sizes = message_sizes(ctx.counter, messages)
        scores, columns = self._scores(ctx)
        units = exchange_units(messages)
        ranking = _Ranking.of(units, _must_keep(ctx, ids), scores, sizes, _in_progress(ctx, units))
        used = priming_tokens(ctx.counter) + ranking.protected_tokens()
        if used > ctx.available:
            pinned = list(items_at(ids, ranking.protected_positions()))
            raise BudgetExceededError(
                required=used + ctx.reserve, budget=ctx.budget, pinned_ids=pinned
            )
        lefts = _greedy_fill(ranking.costs(), used, ctx.available)
        leading: set[int] = set()
        if ctx.provider == "anthropic":
            lefts = _user_first(ctx, ranking, used, lefts, leading)

        def trace() -> list[Decision]:
            return self._trace(ctx, sizes, scores, columns, ranking, lefts, leading)

        # The reasons are written only if someone reads them (DecisionLog.deferred).
        return ctx.evolve(
            decisions=ctx.decisions + DecisionLog.deferred(ids, trace),
            messages=items_at(messages, ranking.kept_positions(lefts)),
        )

    def score(self, msg: Message, position: int, count: int, ctx: PackContext) -> tuple[float, str]:
        """One message's score and its breakdown in words (what a ``kept`` decision says)."""
        weighted = [
            (signal, weight * ctx.signal(signal).get(msg.id, 0.0))
            for signal, weight in self.signal_weights.items()
            if weight
        ]
        role = self.role_weights.get(msg.role, 0.0)
        recency = self._recency(position, count)
        total = role + recency + msg.priority
        for _, value in weighted:
            total += value
        return total, self._words(self._role_words(msg.role), msg.priority, recency, weighted)

    def _recency(self, position: int, count: int) -> float:
        return self.recency_weight * (position / (count - 1) if count > 1 else 1.0)

    def _role_words(self, role: str) -> str:
        return f"{role} {self.role_weights.get(role, 0.0):g}"

    @staticmethod
    def _words(
        role_words: str, priority: float, recency: float, weighted: list[tuple[str, float]]
    ) -> str:
        """A score in words: role weight, priority, each non-zero weighted signal, recency."""
        # Built by concatenation: a hundred kept messages per call, and this is their reason.
        words = role_words
        if priority:
            words += f" + priority {priority:+g}"
        for signal, value in weighted:
            if value:
                words += f" + {signal} {value:.2f}"
        return f"{words} + recency {recency:.2f}"

    def scores(self, ctx: PackContext) -> list[float]:
        """Every message's score, in one vectorised pass (same values as :meth:`score`)."""
        return self._scores(ctx)[0].tolist()  # type: ignore[no-any-return]

    def _scores(
        self, ctx: PackContext
    ) -> tuple[npt.NDArray[np.float64], list[tuple[str, npt.NDArray[np.float64]]]]:
        """The scores, and each weighted signal's column (for the reasons of kept messages)."""
        messages = ctx.messages
        n = len(messages)
        weights = self.role_weights
        total = np.array([weights.get(role, 0.0) for role in ROLES])[role_codes(messages)]
        for i in positions(flags(messages) & PRIORITY):
            total[i] += messages[i].priority
        if n > 1:
            total += self.recency_weight * np.arange(n) / (n - 1)
        else:
            total += self.recency_weight
        columns = []
        ids = None
        for signal, weight in self.signal_weights.items():
            values = ctx.signal(signal)
            if weight and values:
                ids = ids or message_ids(messages)
                column = np.fromiter(map(values.get, ids, repeat(0.0)), dtype=float, count=n)
                column *= weight
                total += column
                columns.append((signal, column))
        return total, columns

    def _trace(
        self,
        ctx: PackContext,
        sizes: Sequence[int],
        scores: npt.NDArray[np.float64],
        columns: list[tuple[str, npt.NDArray[np.float64]]],
        ranking: _Ranking,
        lefts: list[int],
        leading: set[int],
    ) -> list[Decision]:
        """One decision per message, in order: a stray result, a protected message, or a
        member of a ranked unit (kept with its score in words, or dropped for lack of room or
        for opening an Anthropic conversation)."""
        messages, ids, name = ctx.messages, message_ids(ctx.messages), self.name
        trusted = trusted_decision
        explain = self._explainer(messages, columns)
        own_scores, unit_scores = scores.tolist(), ranking.score.tolist()
        costs, together = ranking.cost.tolist(), (ranking.members > 1).tolist()
        protected, stray = ranking.protected.tolist(), ranking.stray.tolist()
        rank = ranking.ranks().tolist()
        reasons: dict[tuple[int, int, bool], str] = {}
        decisions: list[Decision] = []
        repeats = set(ranking.units.repeats)
        for i, unit in enumerate(ranking.units.of.tolist()):
            if stray[unit]:
                decisions.append(stray_dropped(ids[i], sizes[i], name, repeat=i in repeats))
            elif protected[unit]:
                decisions.append(self._protected(messages[i], own_scores[i], sizes[i]))
            else:
                left = lefts[rank[unit]]
                if left < 0:
                    action: Action = "kept"
                    reason = f"score {unit_scores[unit]:.2f} = {explain(i)}"
                    if unit == ranking.in_progress:
                        reason = f"{_IN_PROGRESS}; {reason}"
                    if together[unit]:
                        reason += f" (with its tool exchange, {costs[unit]} tokens)"
                elif unit in leading:
                    action, reason = "dropped", _LEADING
                else:
                    # Most of a long history is dropped, so the reason is short (the score is
                    # in the decision); once the budget is spent it repeats, so it is made once.
                    action, key = "dropped", (costs[unit], left, together[unit])
                    reason = reasons.get(key) or reasons.setdefault(key, _dropped_reason(*key))
                size, score = sizes[i], unit_scores[unit]
                after = size if left < 0 else 0
                decisions.append(trusted(name, action, ids[i], reason, score, size, after))
        return decisions

    def _protected(self, message: Message, score: float, size: int) -> Decision:
        why = (
            "system prompt"
            if message.role == "system"
            else "developer instructions"
            if message.role == "developer"
            else "pinned"
            if message.pinned
            else "an earlier stage protected it (the current question by default)"
        )
        return Decision(
            stage=self.name,
            action="kept",
            message_id=message.id,
            reason="protected: " + why,
            score=score,
            tokens_before=size,
            tokens_after=size,
        )

    def _explainer(
        self,
        messages: tuple[Message, ...],
        columns: list[tuple[str, npt.NDArray[np.float64]]],
    ) -> Callable[[int], str]:
        """What :meth:`score` says of the message at a position, read from the columns
        :meth:`_scores` computed; the message itself is read only for its priority."""
        count = len(messages)
        heads = [self._role_words(role) for role in ROLES]
        codes = role_codes(messages).tolist()
        prioritised = (flags(messages) & PRIORITY).tolist()
        values = [(signal, column.tolist()) for signal, column in columns]

        def explain(i: int) -> str:
            priority = messages[i].priority if prioritised[i] else 0
            weighted = [(signal, column[i]) for signal, column in values]
            return self._words(heads[codes[i]], priority, self._recency(i, count), weighted)

        return explain


def _must_keep(ctx: PackContext, ids: Sequence[str]) -> npt.NDArray[np.bool_]:
    """Per position: a system, pinned or protected message, which the packer always keeps."""
    must: npt.NDArray[np.bool_] = (flags(ctx.messages) & (SYSTEM | PINNED)) != 0
    must[positions_of(ids, ctx.protected)] = True
    return must


# Why the unit that ends the conversation is taken first.
_IN_PROGRESS = "the turn in progress (it ends the conversation), filled first"


def _in_progress(ctx: PackContext, units: Units) -> int | None:
    """The unit the conversation ends with when it is not the question: the calls the model
    is waiting on with their results, or an answer prefilled for it to go on with. The next
    answer reads it first, whatever older turns score."""
    messages = ctx.messages
    if not messages or messages[-1].role not in ("assistant", "tool"):
        return None
    return int(units.of[-1])


# How many times an Anthropic fill is made again, each without the assistant message that would
# open the conversation; the alternation stage drops any still left after that.
_USER_FIRST_REFILLS = 16
_LEADING = USER_FIRST + "; its room went to the next messages by score"


def _user_first(
    ctx: PackContext, ranking: _Ranking, used: int, lefts: list[int], leading: set[int]
) -> list[int]:
    """The fill made again without each unit that would open an Anthropic conversation with an
    assistant message (the alternation stage would drop it after the fill, its room unused), so
    that its room goes to the next units; adds those units to ``leading``. A fill without one
    unit keeps every unit the fill with it kept, and maybe more."""
    costs = ranking.costs()
    rank = ranking.ranks()
    for _ in range(_USER_FIRST_REFILLS):
        kept = ranking.kept_positions(lefts)
        first = leading_assistant(items_at(ctx.messages, kept), ctx.protected)
        if first is None:
            break
        unit = int(ranking.units.of[next(i for i in kept if ctx.messages[i] is first)])
        if ranking.protected[unit]:  # kept whatever the budget: the alternate step decides
            break
        leading.add(unit)
        costs[rank[unit]] = ctx.available + 1  # never fits
        lefts = _greedy_fill(costs, used, ctx.available)
    return lefts


def _greedy_fill(costs: Sequence[int], used: int, available: int) -> list[int]:
    """The greedy fill: take each unit, in the order given, if it still fits.

    Returns, per unit, -1 if it was taken, else the tokens that were left when it did not fit
    (a unit that does not fit does not stop the fill: a smaller one after it may still fit).
    """
    lefts: list[int] = []
    note = lefts.append
    for cost in costs:
        if used + cost <= available:
            used += cost
            note(-1)
        else:
            note(available - used)
    return lefts


def _dropped_reason(cost: int, left: int, together: bool) -> str:
    reason = f"needs {cost} tokens, {left} left after higher-scored messages"
    return reason + f" (with its tool exchange, {cost} tokens)" if together else reason


@dataclass(frozen=True)
class _Ranking:
    """The units of one pack, each scored as its best member and costing the sum of its
    members; the units neither protected nor stray ranked for the greedy fill."""

    units: Units
    score: npt.NDArray[np.float64]
    cost: npt.NDArray[np.int64]
    members: npt.NDArray[np.intp]
    protected: npt.NDArray[np.bool_]
    """Holds a system, pinned or protected message: kept, whatever the budget."""
    stray: npt.NDArray[np.bool_]
    """A tool result without its call that nothing protects: dropped (providers reject it)."""
    order: npt.NDArray[np.intp]
    """The other units by decreasing score, the more recent first among equals; the turn in
    progress first."""
    in_progress: int | None = None

    @classmethod
    def of(
        cls,
        units: Units,
        must: npt.NDArray[np.bool_],
        scores: npt.NDArray[np.float64],
        sizes: Sequence[int],
        in_progress: int | None = None,
    ) -> _Ranking:
        of, count = units.of, units.count
        score = np.full(count, -np.inf)
        np.maximum.at(score, of, scores)
        cost = np.zeros(count, dtype=np.int64)
        np.add.at(cost, of, np.asarray(sizes, dtype=np.int64))
        last = np.zeros(count, dtype=np.intp)
        np.maximum.at(last, of, np.arange(len(of), dtype=np.intp))
        protected = np.zeros(count, dtype=bool)
        protected[of[must]] = True
        stray = np.zeros(count, dtype=bool)
        stray[of[units.orphans + units.repeats]] = True
        stray &= ~protected
        free = np.flatnonzero(~(protected | stray))
        order = free[np.lexsort((-last[free], -score[free]))]
        if in_progress is not None and not (protected[in_progress] or stray[in_progress]):
            order = np.concatenate(([in_progress], order[order != in_progress]))
        else:
            in_progress = None
        members = np.bincount(of, minlength=count)
        return cls(units, score, cost, members, protected, stray, order, in_progress)

    def costs(self) -> list[int]:
        """What each ranked unit costs, in ranking order."""
        return self.cost[self.order].tolist()  # type: ignore[no-any-return]

    def protected_tokens(self) -> int:
        return int(self.cost[self.protected].sum())

    def protected_positions(self) -> list[int]:
        return positions(self.protected[self.units.of])

    def kept_positions(self, lefts: list[int]) -> list[int]:
        """Positions of the protected units and of the ranked units :func:`_greedy_fill` took."""
        kept = self.protected.copy()
        kept[self.order[np.asarray(lefts, dtype=np.int64) < 0]] = True
        return positions(kept[self.units.of])

    def ranks(self) -> npt.NDArray[np.intp]:
        """Each unit's place in :attr:`order` (meaningless for protected and stray units)."""
        rank = np.zeros(self.units.count, dtype=np.intp)
        rank[self.order] = np.arange(len(self.order), dtype=np.intp)
        return rank
