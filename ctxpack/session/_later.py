"""Secret values found later, hunted in what the session kept before it found them.

The guard hunts a message for the values found before it arrived; one printed bare before
its value was recognised (``echo $TOKEN``, then ``cat .env``) is kept as it arrived, in the
transcript and in the store, whose entries are never rewritten. What leaves the session (a
request, an original a result hands back, a retrieve answer) is hunted again for every value
found so far, on any replica: each replica has the fingerprints of all of them.

Such a replacement changes what the later turns' thinking followed, as does a message the
session rewrote after it arrived: on a model with preserved thinking those turns' thinking
goes (:meth:`LaterValues.thinking_cleared`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Sequence
from typing import Any

from .._internal.prefix import PrefixMemo
from .._internal.secret_values import BoundFingerprints, Fingerprints
from .._internal.thinking import thinking_cleared_from
from ..messages import Message
from ..pipeline import Decision
from ..redaction import redact_for_roles, redact_known, secrets_reason
from ..tokens import TokenCounter

__all__: list[str] = []

_Hunted = tuple[Message, Decision] | None


class LaterValues:
    """A session's record hunted for every value found, memoised per set of values found: a
    render scans the history once after each value found, and then finds each message's
    result by its identity (the record's messages never change)."""

    def __init__(self) -> None:
        self._memo: tuple[tuple[object, ...], PrefixMemo[Message, _Hunted]] | None = None
        # The same for the turns whose thinking a change before them clears.
        self._thinking: tuple[tuple[object, ...], PrefixMemo[Message, _Hunted]] | None = None
        self._lock = threading.Lock()

    def record(
        self,
        record: Sequence[Message],
        hunt: BoundFingerprints,
        roles: Collection[str],
        counter: TokenCounter,
    ) -> tuple[Sequence[Message], list[Decision]]:
        """``record`` with the values found replaced in each message of ``roles`` (as the
        guard redacts them), and a ``redacted`` decision per message changed."""
        entries = hunt.fingerprints.entries
        if not entries or not roles:
            return record, []
        # Fingerprints only grow (a failed append's are forgotten, an erasure changes the key):
        # the key, how many and the last name the set.
        key = (hunt.key, len(entries), entries[-1][0], frozenset(roles), counter)
        with self._lock:
            if self._memo is None or self._memo[0] != key:
                self._memo = (key, PrefixMemo(_hunter(hunt, roles, counter), slots=2))
            memo = self._memo[1]
        results = memo(record)
        if not any(results):
            return record, []
        sent = [m if r is None else r[0] for m, r in zip(record, results, strict=True)]
        return sent, [r[1] for r in results if r is not None]

    def thinking_cleared(
        self,
        record: Sequence[Message],
        found: Sequence[Decision],
        counter: TokenCounter,
        rewritten: int | None = None,
    ) -> tuple[Sequence[Message], list[Decision]]:
        """``record`` (hunted: ``found`` names the messages changed; ``rewritten``, the first
        position the session rewrote after its arrival) without the thinking of the assistant
        turns after the first message changed, and a ``cleared`` decision per turn.

        A model with preserved thinking refuses (or drops) a thinking block once anything
        before it changed since it was produced: a value hunted in an earlier output is such a
        change, and so is an output filtered once the agent answered it or a file view
        superseded. Which turns were produced before the change is not kept, so every later
        turn's thinking goes, those produced since too: the same request each time, always
        accepted."""
        changed = {d.message_id for d in found}
        first = next((k for k, m in enumerate(record) if m.id in changed), len(record))
        stage, reason = (
            "redact",
            "thinking blocks cleared: a secret value replaced in an earlier output "
            "changes what precedes them, which a model with preserved thinking refuses",
        )
        if rewritten is not None and rewritten < min(first, len(record)):
            first, stage = rewritten, "session"
            reason = (
                f"thinking blocks cleared: {record[first].id!r}, an earlier message, was "
                "rewritten after it arrived (an output filtered once answered, a file view "
                "superseded), which changes what precedes them and a model with preserved "
                "thinking refuses; original kept as an artifact"
            )
        key = (stage, reason, counter)
        with self._lock:
            if self._thinking is None or self._thinking[0] != key:
                self._thinking = (key, PrefixMemo(_unthinking(stage, reason, counter), slots=2))
            memo = self._thinking[1]
        # Each turn by its identity: the record's messages never change.
        results = memo(record[first + 1 :])
        if not any(results):
            return record, list(found)
        sent = [
            *record[: first + 1],
            *(m if r is None else r[0] for m, r in zip(record[first + 1 :], results, strict=True)),
        ]
        return sent, [*found, *(r[1] for r in results if r is not None)]


def _hunter(
    hunt: BoundFingerprints, roles: Collection[str], counter: TokenCounter
) -> Callable[[Message], _Hunted]:
    def hunted(message: Message) -> _Hunted:
        new, found = redact_for_roles(message, roles, hunt, rules=False)
        if not found:
            return None
        decision = Decision(
            stage="redact",
            action="redacted",
            message_id=message.id,
            reason=f"{secrets_reason(found)} (values recognised in a later output)",
            tokens_before=counter.count_message(message),
            tokens_after=counter.count_message(new),
        )
        return new, decision

    return hunted


def frozen(entries: Sequence[Sequence[Any]], key: bytes) -> BoundFingerprints:
    """The fingerprints ``entries`` under ``key``, apart from the session's (which appends
    grow), for a read outside its lock."""
    copy = Fingerprints()
    copy.grow(entries)
    return copy.bound(key)


def hunted_message(message: Message, hunt: BoundFingerprints, roles: Collection[str]) -> Message:
    """``message`` with the values found replaced, if it is of ``roles``."""
    if not hunt.fingerprints.entries or not roles:
        return message
    return redact_for_roles(message, roles, hunt, rules=False)[0]


def hunted_text(text: str, hunt: BoundFingerprints) -> str:
    """``text`` redacted by the rules and for the values found: an original read back."""
    return redact_known(text, hunt).text


def _unthinking(stage: str, reason: str, counter: TokenCounter) -> Callable[[Message], _Hunted]:
    def cleared(message: Message) -> _Hunted:
        out, decisions = thinking_cleared_from([message], 0, counter, stage=stage, reason=reason)
        return (out[0], decisions[0]) if decisions else None

    return cleared
