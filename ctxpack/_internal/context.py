"""The checks of a :class:`~ctxpack.pipeline.PackContext`'s fields.

Every stage builds a new context with ``evolve()``: a bad value a custom stage (or its caller)
gives is refused there, naming the field, rather than by whichever later stage first reads it
with a bare ``TypeError`` or ``AttributeError``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from numbers import Real
from typing import Any

from ..errors import ConfigError
from ..messages import Message, message_objects, new_originals_checked
from ..providers import check_provider
from ..tokens import check_counter
from .arguments import keyed, optional_text, strings, tokens, tool_definitions, type_name
from .columns import PINNED, SYSTEM, flags, ids, items_at, positions

__all__ = ["artifacts_checked", "context_fields", "contract_break", "scores"]

# Never an artifact: what a key the step added reads as among the originals.
_NONE = object()


def context_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` (some or all of a context's fields, by name) once checked, each in the form
    the context stores (a list of messages as a tuple, a set of ids as a frozenset); the
    ``decisions`` are the pipeline's to check."""
    out = dict(values)
    for name, value in values.items():
        check = _CHECKS.get(name)
        if check is not None:
            out[name] = check(value)
        elif name != "decisions":
            known = ", ".join(sorted([*_CHECKS, "decisions"]))
            raise ConfigError(f"PackContext has no field {name!r}; its fields are {known}")
    return out


def artifacts_checked(
    originals: Mapping[str, Message],
    messages: Sequence[Message],
    artifacts: Mapping[str, Message],
    *,
    where: str,
) -> None:
    """Raise for an artifact a custom step added or replaced that would break a later stage or
    the result: a key that is not a string or a value that is not a Message, put into the
    mapping in place (evolve() never saw it), as :class:`~ctxpack.ConfigError`; an original
    that fails Message's validation (``model_copy(update=...)``, ``model_construct()``) as
    :class:`~ctxpack.InvalidMessageError`. ``originals`` are the artifacts as they were before
    the step ran, ``messages`` its input's (a stage keeps one of these as an original),
    ``where`` names the step."""
    # Those the step kept (or dropped) are as they were checked; the others are few.
    changed = {mid: m for mid, m in artifacts.items() if originals.get(mid, _NONE) is not m}
    if not changed:
        return
    keyed(
        changed,
        f"{where}: PackContext.artifacts",
        values=Message,
        what="message ids to their original Message",
    )
    new_originals_checked(messages, changed, where=where)


def contract_break(
    before: Sequence[Message], protected: Collection[str], after: Sequence[Message]
) -> str | None:
    """The first rule of the stage contract a step that turned ``before`` into ``after`` broke,
    in words naming the message, or ``None``: an id repeated, a system, pinned or ``protected``
    message dropped, surviving messages out of their order. Checked by
    :func:`~ctxpack.testing.check_stage` and, for custom steps, by every pack."""
    if after is before or _keeps_the_contract(before, protected, after):
        return None
    position = {m.id: i for i, m in enumerate(before)}
    seen: dict[str, int] = {}
    last = -1
    for i, m in enumerate(after):
        if m.id in seen:
            return (
                f"returned messages with repeated ids: {m.id!r} at indices {seen[m.id]} and {i}; "
                "every message id must be unique"
            )
        seen[m.id] = i
        at = position.get(m.id, last)
        if at < last:
            return (
                f"reordered the messages: {m.id!r} (input index {at}) comes after "
                f"{before[last].id!r} (input index {last}) at index {i}; surviving messages "
                "must keep their chronological order"
            )
        last = at
    lost = [
        f"{m.id!r} (input index {i})"
        for i, m in enumerate(before)
        if m.id not in seen and (m.id in protected or m.role == "system" or m.pinned)
    ]
    if lost:
        return (
            f"dropped protected messages {', '.join(lost)}; system, pinned and protected "
            "messages (the current question by default) must be kept"
        )
    return None


def _keeps_the_contract(
    before: Sequence[Message], protected: Collection[str], after: Sequence[Message]
) -> bool:
    # The common case, in C: no id new or repeated, the positions rising, the musts all there.
    # Any other case goes to the loop of contract_break(), which says which rule broke.
    kept = ids(after)
    at = list(map(dict(zip(ids(before), range(len(before)), strict=True)).get, kept))
    unique = set(kept)
    if None in at or len(unique) < len(kept) or at != sorted(at):  # type: ignore[type-var]
        return False
    must = positions(flags(before) & (SYSTEM | PINNED))
    return unique.issuperset(protected) and unique.issuperset(items_at(ids(before), must))


def scores(name: Any, values: Any) -> Mapping[str, float]:
    """``values`` if it maps message ids to finite scores (the signal ``name``)."""
    where = f"PackContext.signals[{name!r}]"
    if not isinstance(name, str):
        raise ConfigError(f"{where}: signal names are strings")
    if not isinstance(values, Mapping):
        raise ConfigError(
            f"{where} must be a mapping of message ids to scores, got {type_name(values)}"
        )
    # The common case, in C: string ids and float scores whose sum is finite (so each one is).
    if (
        set(map(type, values)) <= {str}
        and set(map(type, values.values())) <= {float, int}
        and math.isfinite(sum(values.values()))
    ):
        return values
    for mid, score in values.items():
        # numbers.Real, not float: a signal computed with numpy holds numpy floats.
        if (
            not isinstance(mid, str)
            or isinstance(score, bool)
            or not isinstance(score, Real)
            or not math.isfinite(score)
        ):
            raise ConfigError(f"{where}[{mid!r}] = {score!r}: scores are finite numbers")
    return values


def _signals(signals: Any) -> Mapping[str, Mapping[str, float]]:
    if not isinstance(signals, Mapping):
        raise ConfigError(
            "PackContext.signals must be a mapping of signal names to {message id: score}, "
            f"got {type_name(signals)}"
        )
    for name, values in signals.items():
        scores(name, values)
    return signals


def _ids(protected: Any) -> frozenset[str]:
    if type(protected) is frozenset and all(type(i) is str for i in protected):
        return protected
    # A list or a set is taken too, as a frozenset; a lone string would be read as its letters.
    return frozenset(strings(protected, "PackContext.protected", what="message ids"))


_CHECKS: dict[str, Callable[[Any], Any]] = {
    "messages": lambda v: message_objects(v, argument="PackContext.messages"),
    "budget": lambda v: tokens(v, "PackContext.budget"),
    "counter": check_counter,
    "reserve": lambda v: tokens(v, "PackContext.reserve", minimum=0),
    "query": lambda v: optional_text(v, "PackContext.query"),
    "model": lambda v: optional_text(v, "PackContext.model"),
    "protected": _ids,
    "signals": _signals,
    "artifacts": lambda v: keyed(
        v, "PackContext.artifacts", values=Message, what="message ids to their original Message"
    ),
    "provider": check_provider,
    "tools": lambda v: tuple(tool_definitions(v, argument="PackContext.tools")),
}
