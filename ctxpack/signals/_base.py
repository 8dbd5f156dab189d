"""What a relevance signal is: the query it reads, and the two kinds the relevance stage combines.

A **term signal** adds weighted terms to the query before BM25 ranks the messages (the query's
own words, related words, a follow-up's borrowed words, words written together), and names
them when a message holding them is explained. A **score signal** changes the scores after
they are divided by the best one (the neighbours' share, speaker focus), and adds its note to the
reason of each message it changed.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import (
    ConfigDict,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from .._internal.options import CheckedModel, invalid_option
from ..errors import ConfigError
from ..messages import Message
from .bm25 import InvertedIndex
from .lexical import Language

__all__ = ["Adjustment", "Query", "ScoreSignal", "Signal", "TermSignal", "signal_from"]

Scores = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Query:
    """What a signal may read about the query being scored.

    Attributes:
        text: The query as written.
        terms: Its terms: lower-cased, stemmed words without stop words, in order.
        language: The language the conversation is stemmed in.
        messages: The conversation.
        index: The conversation's BM25 index, lent to this call alone (read it, never keep it).
    """

    text: str
    terms: tuple[str, ...]
    language: Language
    messages: Sequence[Message]
    index: InvertedIndex


@dataclass(frozen=True, slots=True)
class Adjustment:
    """New scores from a score signal, and the note the messages they changed get.

    Attributes:
        scores: One score per message (a new array: the one the signal was given is read-only).
        note: Why, for the messages whose score changed: a message it raised gives this note
            instead of the words it holds ("neighbour of a relevant message"), a message it
            lowered adds it ("x0.3: the query is about Caroline").
    """

    scores: Scores
    note: str


class Signal(CheckedModel):
    """A named, frozen and validated part of the relevance score.

    An invalid option raises :class:`~ctxpack.ConfigError` (a ``ValueError``) naming the signal,
    the option and the value. A dump names the signal, so that :func:`signal_from` can make it
    again: ``{"name": "neighbors", "distance": 2, "share": 0.5}``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: ClassVar[str]

    @classmethod
    def _error(cls, exc: ValidationError) -> ConfigError:
        # The error names the signal as well as its class.
        signal = f"{cls.__name__} (signal {getattr(cls, 'name', '?')!r})"
        return invalid_option(signal, cls, exc)

    @model_validator(mode="before")
    @classmethod
    def _own_name(cls, data: Any) -> Any:
        # A dump names its signal; the name belongs to the class, it is not an option.
        if isinstance(data, Mapping) and "name" in data:
            data = dict(data)
            name = data.pop("name")
            if name != getattr(cls, "name", None):
                raise ValueError(f"{cls.__name__} is the signal {cls.name!r}, not {name!r}")
        return data

    @model_serializer(mode="wrap")
    def _named(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {"name": self.name, **handler(self)}


def signal_from(options: Mapping[str, Any]) -> Signal:
    """The signal a dump describes: the class whose ``name`` is ``options["name"]`` (among the
    built-in signals and every subclass of :class:`Signal` defined so far), with the other
    options.

    Example:
        >>> signal_from({"name": "neighbors", "distance": 1})
        Neighbors(distance=1, share=0.5)

    Raises:
        ConfigError: no signal, or more than one, has that name.
    """
    if not isinstance(options, Mapping):
        raise ConfigError(
            f"options must be a mapping such as {{'name': 'neighbors', ...}}, got "
            f"{type(options).__name__}"
        )
    name = options.get("name")
    found = [cls for cls in _subclasses(Signal) if getattr(cls, "name", None) == name]
    if len(found) != 1:
        known = sorted({str(getattr(cls, "name", "")) for cls in _subclasses(Signal)} - {""})
        problem = "no signal" if not found else "more than one signal"
        raise ConfigError(f"{problem} is named {name!r}; signals are {', '.join(known)}")
    return found[0](**options)


def _subclasses(cls: type[Signal]) -> list[type[Signal]]:
    every: list[type[Signal]] = []
    for sub in cls.__subclasses__():
        every += [sub, *_subclasses(sub)]
    return every


class TermSignal(Signal):
    """A signal that adds weighted terms to the query.

    The stage gives each term the largest weight any signal gives it. A message that owes its
    relevance to its own terms is explained by the first signal, in ``rank`` order, whose
    terms it holds: its ``note``, where ``{words}`` stands for those words as the message writes
    them. Signals with the same note explain together.
    """

    note: ClassVar[str]
    rank: ClassVar[int] = 10

    @abstractmethod
    def terms_for(self, query: Query) -> Mapping[str, float]:
        """The terms this signal adds to ``query``, with their weights (a term's BM25 score
        counts ``weight`` times)."""


class ScoreSignal(Signal):
    """A signal that changes the scores after they are divided by the best one.

    A message whose score it raises owes its relevance to the signal, whose note then replaces
    the words that matched; a message whose score it lowers gets the note added.
    """

    @abstractmethod
    def adjust(self, scores: Scores, query: Query) -> Adjustment | None:
        """New scores (0 to 1, one per message) and their note, or ``None`` to change
        nothing. ``scores`` is read-only."""
