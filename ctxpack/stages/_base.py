"""The base of the stages: frozen, validated configuration, errors in ctxpack's tree."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, ConfigDict, Field, PlainSerializer

from .._internal.options import CheckedModel
from .._internal.requirements import note_producer

__all__ = ["ReadOnlyMap", "StageModel", "Weights"]


class StageModel(CheckedModel):
    """The base class of the built-in stages, and of your own: a pydantic model whose fields are
    the stage's whole configuration, keyword-only, frozen and validated on construction.

    An invalid option raises :class:`~ctxpack.ConfigError` (a ``ValueError``) naming the stage,
    the option and the value, rather than pydantic's own error type. A subclass defines
    ``__call__(self, ctx, /)``, returning a new :class:`~ctxpack.pipeline.PackContext`, and
    usually a ``name: ClassVar[str]``, its default step name in a pipeline.

    It may declare the signals it writes and reads, which a :class:`~ctxpack.Pipeline` checks
    when it is built: ``provides`` and ``requires``, each a ``ClassVar[frozenset[str]]`` (or a
    property, when the configuration decides). A stage that declares nothing provides and
    requires nothing.

    Example:
        >>> from typing import ClassVar
        >>> from ctxpack import ConfigError, Pipeline
        >>> from ctxpack.pipeline import PackContext
        >>> from ctxpack.stages import GreedyPacker
        >>> class LengthScorer(StageModel):
        ...     name: ClassVar[str] = "length"
        ...     provides: ClassVar[frozenset[str]] = frozenset({"length"})
        ...     scale: float = 1000.0
        ...
        ...     def __call__(self, ctx: PackContext, /) -> PackContext:
        ...         values = {m.id: min(len(m.text) / self.scale, 1.0) for m in ctx.messages}
        ...         return ctx.with_signal("length", values)
        >>> packer = GreedyPacker(signal_weights={"length": 5.0})
        >>> Pipeline([LengthScorer(scale=500), packer]).names
        ['length', 'pack']
        >>> try:
        ...     Pipeline([packer])
        ... except ConfigError as exc:
        ...     print(str(exc).split(", which")[0])
        step 'pack' (GreedyPacker) requires the signal 'length'
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        note_producer(cls)


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
# serialised back as a dict. A weight is a share of a score, never a penalty: a negative one
# would rank a message lower for matching (a relevance of -40 keeps the irrelevant first).
Weights = Annotated[
    Mapping[str, Annotated[float, Field(ge=0.0)]],
    AfterValidator(ReadOnlyMap),
    # A lambda, not dict: pydantic 2.6 reads the serializer's signature, which a builtin lacks.
    PlainSerializer(lambda weights: dict(weights), return_type=dict),
]
