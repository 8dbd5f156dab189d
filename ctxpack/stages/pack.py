"""Pack greedily under the budget by score, then restore chronological order (seed 004, step 4).

The promise: the result is the chronological subsequence of the messages that holds every system,
pinned and protected message, keeps or drops each tool exchange whole (a call without a result,
or a result without its call, is removed first: providers reject both), and adds the other units in
decreasing score (ties: the more recent first) whenever they still fit, so that the prompt never
exceeds ``budget - reserve`` tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat
from types import MappingProxyType
from typing import ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import Field

from .._internal.columns import (
    PINNED,
    PRIORITY,
    SYSTEM,
    TOOL,
    flags,
    items_at,
    positions,
    positions_of,
    role_codes,
)
from .._internal.columns import ids as message_ids
from ..errors import BudgetExceededError
from ..messages import ROLES, Message
from ..pipeline import Decision, DecisionLog, PackContext
from ..tokens import REPLY_PRIMING, message_sizes
from ._base import ReadOnlyMap, StageModel, Weights

__all__ = [
    "DEFAULT_ROLE_WEIGHTS",
    "GreedyPacker",
    "strip_unanswered_calls",
    "tool_units",
    "unanswered_calls",
]

# Seed 004: system 10, developer 8, user 6, assistant 4. A tool result gets 3: it is usually the
# bulkiest and the first to go stale, and it still rides with its call (a unit scores as its
# best member), so a relevant exchange survives through the assistant turn that asked for it.
DEFAULT_ROLE_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {"system": 10.0, "developer": 8.0, "user": 6.0, "assistant": 4.0, "tool": 3.0}
)


def tool_units(messages: tuple[Message, ...] | list[Message]) -> tuple[list[list[int]], list[int]]:
    """Group message positions into units kept or dropped together.

    An assistant message with tool calls and the tool messages answering those calls form one
    unit; every other message is a unit by itself.

    Returns:
        ``(units, orphans)``: units as lists of positions (chronological), and the positions of
        tool messages whose call is not in ``messages``.
    """
    if not any(m.tool_calls or m.role == "tool" for m in messages):
        # The common chat without tools: every message is its own unit.
        return [[i] for i in range(len(messages))], []
    units: list[list[int]] = []
    owner: dict[str, int] = {}
    orphans: list[int] = []
    for i, msg in enumerate(messages):
        if msg.role == "tool":
            unit = owner.get(msg.tool_call_id or "")
            if unit is None:
                orphans.append(i)
            else:
                units[unit].append(i)
            continue
        units.append([i])
        for call in msg.tool_calls or ():
            owner[call.id] = len(units) - 1
    return units, orphans


def unanswered_calls(messages: tuple[Message, ...] | list[Message]) -> dict[int, list[str]]:
    """Tool calls that no later tool message answers, by position of their assistant message.

    The last message is left out: an assistant turn at the end may still be waiting for its
    results. Every other unanswered call makes the provider reject the request.
    """
    if not (flags(messages) & TOOL).any():
        return {}
    answered_at = {m.tool_call_id: i for i, m in enumerate(messages) if m.role == "tool"}
    out: dict[int, list[str]] = {}
    for i, msg in enumerate(messages[:-1]):
        missing = [c.id for c in msg.tool_calls or () if answered_at.get(c.id, -1) < i]
        if missing:
            out[i] = missing
    return out


def strip_unanswered_calls(ctx: PackContext, stage: str) -> PackContext:
    """Remove the calls :func:`unanswered_calls` finds; drop a message left with nothing.

    The original of each changed message is kept as an artifact, and every change is recorded.
    """
    fixes = unanswered_calls(ctx.messages)
    if not fixes:
        return ctx
    out: list[Message] = []
    decisions: list[Decision] = []
    artifacts = dict(ctx.artifacts)
    for i, msg in enumerate(ctx.messages):
        missing = fixes.get(i)
        if missing is None:
            out.append(msg)
            continue
        calls = [c for c in msg.tool_calls or () if c.id not in missing]
        before = ctx.tokens(msg)
        named = ", ".join(repr(c) for c in missing)
        if not calls and msg.content in (None, "", []):
            decisions.append(
                Decision(
                    stage=stage,
                    action="dropped",
                    message_id=msg.id,
                    reason=f"its tool calls ({named}) have no results and it says nothing else; "
                    "the provider would reject an unanswered call",
                    tokens_before=before,
                    tokens_after=0,
                )
            )
            continue
        new = msg.model_copy(update={"tool_calls": calls or None})
        artifacts.setdefault(msg.id, msg)
        out.append(new)
        decisions.append(
            Decision(
                stage=stage,
                action="cleared",
                message_id=msg.id,
                reason=f"removed the tool calls {named}, which no tool message answers (the "
                "provider would reject them); original kept as an artifact",
                tokens_before=before,
                tokens_after=ctx.tokens(new),
            )
        )
    return ctx.decide(*decisions, messages=tuple(out), artifacts=artifacts)


class GreedyPacker(StageModel):
    """Score every message, add units in decreasing score while they fit, restore order.

    Score of a message = role weight + ``priority`` + ``recency_weight`` x position (0 for the
    oldest, 1 for the newest) + the stages' signals times ``signal_weights``. A unit (a tool
    exchange) scores as its best member and costs the sum of its members.

    Args:
        role_weights: Weight per role (seed 004 defaults, tool 3).
        recency_weight: Weight of recency.
        signal_weights: Weight of each named signal set by earlier stages (``relevance`` from
            the relevance scorer, ``memory`` from the memory selector).

    Raises:
        BudgetExceededError: the protected messages alone do not fit in ``budget - reserve``.
    """

    name: ClassVar[str] = "pack"

    role_weights: Weights = Field(default_factory=lambda: ReadOnlyMap(DEFAULT_ROLE_WEIGHTS))
    recency_weight: float = 2.0
    signal_weights: Weights = Field(
        default_factory=lambda: ReadOnlyMap({"relevance": 40.0, "memory": 2.0})
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

    def __call__(self, ctx: PackContext, /) -> PackContext:
        ctx = strip_unanswered_calls(ctx, self.name)
        messages = ctx.messages
        sizes = message_sizes(ctx.counter, messages)
        column = flags(messages)
        ids = message_ids(messages)
        must = (column & (SYSTEM | PINNED)) != 0
        must[positions_of(ids, ctx.protected)] = True
        if (column & TOOL).any():
            units, orphans = tool_units(messages)
        else:
            units, orphans = [], []
        stray = [i for i in orphans if not must[i]]
        units.extend([i] for i in orphans if must[i])

        score_array, arrays = self._scores(ctx)
        scores = score_array.tolist()
        keep = positions(must) if not units else []
        used = REPLY_PRIMING + sum(sizes[i] for i in keep)
        # Units in decreasing score, the more recent first among equals: their members, and
        # what each costs and scores.
        ranked: Callable[[], Iterable[Sequence[int]]]
        if not units:
            # Without tools every message is its own unit: sort them all in numpy, and pair
            # them up in C.
            free = np.flatnonzero(~must)
            order = free[np.lexsort((-free, -score_array[free]))].tolist()
            costs, unit_scores = items_at(sizes, order), items_at(scores, order)

            def ranked() -> Iterable[Sequence[int]]:
                return zip(order)
        else:
            rows: list[tuple[float, int, list[int], int]] = []
            for unit in units:
                if any(must[i] for i in unit):
                    keep.extend(unit)
                    used += sum(sizes[i] for i in unit)
                else:
                    cost = sum(sizes[i] for i in unit)
                    rows.append((-max(scores[i] for i in unit), -unit[-1], unit, cost))
            rows.sort()
            members = [unit for _, _, unit, _ in rows]
            costs = tuple(cost for _, _, _, cost in rows)
            unit_scores = tuple(-negative for negative, _, _, _ in rows)

            def ranked() -> Iterable[Sequence[int]]:
                return members

        if used > ctx.available:
            pinned = [ids[i] for i in sorted(keep)]
            raise BudgetExceededError(
                required=used + ctx.reserve, budget=ctx.budget, pinned_ids=pinned
            )
        protected = list(keep)
        available = ctx.available
        # Taken now: role_weights is a dict, which a caller could still change before reading.
        heads = [self._role_words(role) for role in ROLES]
        # Per ranked unit: -1 if kept, else the tokens that were left when it did not fit.
        lefts: list[int] = []
        note = lefts.append
        for unit_members, cost in zip(ranked(), costs, strict=True):
            if used + cost <= available:
                used += cost
                keep.extend(unit_members)
                note(-1)
            else:
                note(available - used)
        keep.sort()

        def trace() -> list[Decision]:
            # Every position is decided once: a stray result, a protected message or a unit.
            decisions: list[Decision | None] = [None] * len(messages)
            for i in stray:
                decisions[i] = self._stray(ids[i], sizes[i])
            for i in protected:
                decisions[i] = self._protected(messages[i], scores[i], sizes[i])
            explain = self._explainer(messages, column, heads, [(s, c.tolist()) for s, c in arrays])
            self._trace_ranked(
                decisions,
                zip(ranked(), costs, unit_scores, lefts, strict=True),
                explain,
                ids,
                sizes,
            )
            return list(filter(None, decisions))

        # The reasons are written only if someone reads them (DecisionLog.deferred).
        return ctx.evolve(
            decisions=ctx.decisions + DecisionLog.deferred(ids, trace),
            messages=tuple(messages[i] for i in keep),
        )

    def _stray(self, message_id: str, size: int) -> Decision:
        return Decision(
            stage=self.name,
            action="dropped",
            message_id=message_id,
            reason="tool result whose call is not in the conversation (an orphan the "
            "provider would reject)",
            tokens_before=size,
            tokens_after=0,
        )

    def _protected(self, message: Message, score: float, size: int) -> Decision:
        why = (
            "system prompt"
            if message.role == "system"
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

    def _trace_ranked(
        self,
        decisions: list[Decision | None],
        ranked: Iterable[tuple[Sequence[int], int, float, int]],
        explain: Callable[[int], str],
        ids: Sequence[str],
        sizes: Sequence[int],
    ) -> None:
        """The decision about each member of each ranked unit, into its position's slot."""
        trusted = Decision.trusted
        name = self.name
        reasons: dict[tuple[int, int, bool], str] = {}
        for members, cost, unit_score, left in ranked:
            if left < 0:
                together = f" (with its tool exchange, {cost} tokens)" if len(members) > 1 else ""
                for i in members:
                    decisions[i] = trusted(
                        name,
                        "kept",
                        ids[i],
                        f"score {unit_score:.2f} = {explain(i)}{together}",
                        unit_score,
                        sizes[i],
                        sizes[i],
                    )
                continue
            # Dropped messages are most of a long history: a short reason keeps the trace
            # small; the score itself is in the decision.
            # Once the budget is spent, "left" stops changing, so reasons repeat per cost.
            key = (cost, left, len(members) > 1)
            reason = reasons.get(key)
            if reason is None:
                reason = f"needs {cost} tokens, {left} left after higher-scored messages"
                if key[2]:
                    reason += f" (with its tool exchange, {cost} tokens)"
                reasons[key] = reason
            for i in members:
                decisions[i] = trusted(name, "dropped", ids[i], reason, unit_score, sizes[i], 0)

    def _explainer(
        self,
        messages: tuple[Message, ...],
        column: npt.NDArray[np.uint8],
        heads: list[str],
        columns: list[tuple[str, list[float]]],
    ) -> Callable[[int], str]:
        """What :meth:`score` says of the message at a position, read from the columns
        :meth:`_scores` computed and each role's words (``heads``, in ``ROLES`` order); the
        message itself is read only for its priority."""
        count = len(messages)
        codes = role_codes(messages).tolist()
        prioritised = (column & PRIORITY).tolist()

        def explain(i: int) -> str:
            priority = messages[i].priority if prioritised[i] else 0
            weighted = [(signal, values[i]) for signal, values in columns]
            return self._words(heads[codes[i]], priority, self._recency(i, count), weighted)

        return explain
