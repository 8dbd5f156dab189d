"""The base of the built-in stages: frozen, validated configuration, errors in ctxpack's tree."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Annotated

from pydantic import AfterValidator, ConfigDict, PlainSerializer

from .._internal.options import CheckedModel

__all__ = ["ReadOnlyMap", "StageModel", "Weights"]


class StageModel(CheckedModel):
    """A built-in stage's configuration: keyword-only, frozen, validated on construction.

    An invalid option raises :class:`~ctxpack.ConfigError` (a ``ValueError``) naming the stage,
    the option and the value, rather than pydantic's own error type.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")


class ReadOnlyMap(Mapping[str, float]):
    """A mapping no one can change once a stage holds it: ``packer.role_weights["user"] = 99``
    raises a ``TypeError`` instead of changing what every later pack does."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, float] | None = None) -> None:
        self._data = dict(data or {})

    def __getitem__(self, key: str) -> float:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __repr__(self) -> str:
        return repr(self._data)

    def __reduce__(self) -> tuple[type[ReadOnlyMap], tuple[dict[str, float]]]:
        return ReadOnlyMap, (self._data,)


# A weight table in a stage's configuration: validated as a dict of floats, held read-only,
# serialised back as a dict.
Weights = Annotated[
    Mapping[str, float], AfterValidator(ReadOnlyMap), PlainSerializer(dict, return_type=dict)
]
