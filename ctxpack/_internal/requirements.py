"""The signals a pipeline's steps declare they provide and require, checked when the pipeline is
built: a step that needs a signal no earlier step provides is named, with where to get it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from difflib import get_close_matches
from typing import TYPE_CHECKING

from ..errors import ConfigError
from .arguments import shown

if TYPE_CHECKING:
    from ..pipeline import Stage

__all__ = ["check_requirements", "note_producer"]


# Signal -> the stage classes that declare they provide it, filled as such classes are defined
# (by the stage base class): what an error about a missing signal suggests.
_PRODUCERS: dict[str, dict[str, None]] = {}


def note_producer(cls: type) -> None:
    """Remember that the stage class ``cls`` provides the signals of its class-level
    ``provides`` (a property, read per instance, is not known here)."""
    declared = cls.__dict__.get("provides")
    needed = cls.__dict__.get("requires")
    if isinstance(declared, (frozenset, set, tuple, list)):
        for signal in declared:
            # A stage that refines a signal (needs it first) is no answer to its absence.
            if not (isinstance(needed, (frozenset, set, tuple, list)) and signal in needed):
                _PRODUCERS.setdefault(str(signal), {})[cls.__qualname__] = None


def _declared(stage: object, attribute: str, step: str) -> frozenset[str]:
    value = getattr(stage, attribute, None)
    if value is None:
        return frozenset()
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise ConfigError(
            f"step {step!r} ({type(stage).__name__}): {attribute} must be a collection of signal "
            f"names, such as frozenset({{'relevance'}}), got {shown(value)}"
        )
    names = frozenset(value)
    bad = sorted(repr(n) for n in names if not isinstance(n, str) or not n)
    if bad:
        raise ConfigError(
            f"step {step!r} ({type(stage).__name__}): {attribute} holds {', '.join(bad)}; "
            "signal names are non-empty strings"
        )
    return names


def check_requirements(steps: Sequence[tuple[str, Stage]]) -> frozenset[str]:
    """What the steps provide; raise when a step requires a signal no earlier step provides."""
    provided: set[str] = set()
    offers = [(name, _declared(stage, "provides", name)) for name, stage in steps]
    for i, (name, stage) in enumerate(steps):
        missing = sorted(_declared(stage, "requires", name) - provided)
        if missing:
            named = provided.union(*(offered for _, offered in offers))
            raise ConfigError(_missing_producers(name, stage, missing, offers[i + 1 :], named))
        provided |= offers[i][1]
    return frozenset(provided)


def _missing_producers(
    name: str,
    stage: Stage,
    signals: Sequence[str],
    later: Sequence[tuple[str, frozenset[str]]],
    named: set[str],
) -> str:
    """Which signals step ``name`` lacks, and for each where it could come from (``named``:
    the signals the pipeline's steps provide, for a misspelt one)."""
    known = sorted(named.union(_PRODUCERS))
    fixes = []
    for signal in signals:
        late = [step for step, offered in later if signal in offered]
        producers = list(_PRODUCERS.get(signal, ()))
        if late:
            fixes.append(f"step {late[0]!r} provides {signal!r} but runs after it: move it first")
        elif producers:
            fixes.append(f"{' or '.join(producers)} provides {signal!r}")
        else:
            # Most often a misspelt weight (signal_weights={"relevnce": 40}): name the real ones.
            close = get_close_matches(signal, known, n=1)
            guess = f"did you mean {close[0]!r}? " if close else ""
            listed = ", ".join(map(repr, known)) or "none"
            fixes.append(f"no known stage provides {signal!r}; {guess}known signals: {listed}")
    listed = ", ".join(repr(s) for s in signals)
    plural = "s" if len(signals) > 1 else ""
    return (
        f"step {name!r} ({type(stage).__name__}) requires the signal{plural} {listed}, which no "
        f"step before it provides ({'; '.join(fixes)}): add the producer before {name!r}, or "
        f"configure {name!r} not to require it"
    )
