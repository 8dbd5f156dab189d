"""The stage contract, the pipeline that chains stages, and the trace of decisions.

A stage is anything callable as ``stage(ctx) -> ctx`` where ``ctx`` is a :class:`PackContext`:
context in, new context out, the input never mutated. A plain function qualifies, and so does a
:class:`Pipeline`, which is itself a stage. A stage may declare the signals it ``provides`` and
``requires``; a pipeline checks, when it is built, that each requirement has a producer before it.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter
from types import MappingProxyType
from typing import Any, Literal, Protocol, overload, runtime_checkable

from pydantic import ConfigDict, GetCoreSchemaHandler
from pydantic_core import core_schema

from ._internal import forks
from ._internal.arguments import callable_name, item_list, misfit, strings
from ._internal.context import artifacts_checked, context_fields, contract_break, scores
from ._internal.options import FieldErrorModel
from ._internal.requirements import check_requirements
from .errors import ConfigError, UnknownNameError
from .messages import Message, new_messages_checked
from .providers import (
    Provider as Provider,
)
from .tokens import TokenCounter

__all__ = [
    "Decision",
    "DecisionLog",
    "PackContext",
    "Pipeline",
    "Stage",
]

Action = Literal[
    "kept",
    "dropped",
    "deduped",
    "compressed",
    "cited",
    "pinned",
    "selected",
    "merged",
    "cleared",
    "redacted",
    "flagged",
    "warned",
]

# Whose API the packed conversation is sent to, and so whose rules it must follow.

_EMPTY: Mapping[str, Any] = MappingProxyType({})


class Decision(FieldErrorModel):
    """One recorded step of what happened to one message.

    Attributes:
        stage: Name of the stage that decided.
        action: ``kept``, ``dropped``, ``deduped``, ``compressed``, ``cited``, ``pinned``,
            ``selected``, ``merged``, ``cleared``, ``redacted`` (a secret replaced by a
            placeholder naming its kind), ``flagged`` (kept, but marked, say as a possible
            prompt injection) or ``warned`` (nothing changed in the message; something the caller
            should know, say a prompt-cache invalidation).
        message_id: Id of the message concerned.
        reason: Why, in words.
        score: The message's score when the stage used one.
        tokens_before: The message's tokens before the stage acted.
        tokens_after: Its tokens after (0 when dropped).
    """

    model_config = ConfigDict(frozen=True)

    stage: str
    action: Action
    message_id: str
    reason: str
    score: float | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None


_MESSAGE_ID = attrgetter("message_id")


class _Deferred:
    """Decisions about known messages whose reasons are written when first read."""

    __slots__ = ("_build", "_built", "_lock", "ids")

    def __init__(self, ids: Sequence[str], build: Callable[[], Iterable[Decision]]) -> None:
        self.ids = ids
        self._build: Callable[[], Iterable[Decision]] | None = build
        self._built: tuple[Decision, ...] | None = None
        # Threads may read one result's decisions at once: the batch is built once, by one (or
        # again, in a forked child, if a thread of the parent's was building it at the fork).
        self._lock = forks.freed_in_child(threading.Lock())

    def decisions(self) -> tuple[Decision, ...]:
        built = self._built
        if built is not None:
            return built
        with self._lock:
            if self._built is None:
                assert self._build is not None
                self._built = self._checked(tuple(self._build()))
                # The closure holds the stage's working arrays: let them go once written out.
                self._build = None
            return self._built

    def _checked(self, built: tuple[Decision, ...]) -> tuple[Decision, ...]:
        if not all(isinstance(d, Decision) for d in built) or list(map(_MESSAGE_ID, built)) != list(
            self.ids
        ):
            raise ConfigError(
                f"a deferred batch announced {len(self.ids)} decisions about "
                f"{list(self.ids)[:5]}... but built {len(built)} about "
                f"{[getattr(d, 'message_id', d) for d in built][:5]}...; build() must "
                "return one Decision per announced id, in that order"
            )
        return built


_Part = tuple[Decision, ...] | _Deferred


class DecisionLog(Sequence[Decision]):
    """Every decision so far, in order: a read-only sequence of :class:`Decision`.

    It behaves as a tuple: index it, slice it (a slice is a tuple), iterate it, compare it with
    a tuple or list of the same decisions, and add decisions with ``log + (decision, ...)``.

    Most callers never read the trace; building a decision and its reason for each of hundreds
    of messages is a large share of a warm ``pack()``. So a stage may record a batch with
    :meth:`deferred`: the ids now, the decisions when someone first reads the log. Length and
    :meth:`message_ids` never build anything.

    Example:
        >>> log = DecisionLog() + (Decision(stage="s", action="kept", message_id="m1", reason="r"),)
        >>> later = DecisionLog.deferred(
        ...     ["m2"], lambda: [Decision(stage="s", action="dropped", message_id="m2", reason="r")]
        ... )
        >>> both = log + later
        >>> len(both), list(both.message_ids())
        (2, ['m1', 'm2'])
        >>> [d.action for d in both]
        ['kept', 'dropped']
    """

    __slots__ = ("_items", "_length", "_parts")

    def __init__(self, decisions: Iterable[Decision] = ()) -> None:
        items = (
            decisions
            if type(decisions) is tuple
            else tuple(item_list(decisions, "decisions", what="Decision objects"))
        )
        for i, d in enumerate(items):
            if not isinstance(d, Decision):
                raise ConfigError(f"decision {i}: expected a Decision, got {type(d).__name__}")
        self._parts: tuple[_Part, ...] = (items,) if items else ()
        self._length = len(items)
        self._items: tuple[Decision, ...] | None = items

    @classmethod
    def deferred(
        cls, message_ids: Sequence[str], build: Callable[[], Iterable[Decision]]
    ) -> DecisionLog:
        """A log of decisions about ``message_ids`` (in that order) that ``build()`` makes when
        the log is first read. ``build`` is called at most once, even when threads read the log
        at the same time; it must not depend on state
        that may change after the stage returns (capture what it needs)."""
        ids = strings(message_ids, "message_ids", what="message ids")
        if not callable(build):
            raise ConfigError(f"build must be a function () -> decisions, got {build!r}")
        return cls._of((_Deferred(ids, build),), len(ids))

    @classmethod
    def _of(cls, parts: tuple[_Part, ...], length: int) -> DecisionLog:
        log = cls.__new__(cls)
        log._parts, log._length, log._items = parts, length, None
        return log

    def message_ids(self) -> Iterator[str]:
        """The id of each decision's message, in order, without building deferred decisions."""
        return chain.from_iterable(
            part.ids if isinstance(part, _Deferred) else map(_MESSAGE_ID, part)
            for part in self._parts
        )

    def _all(self) -> tuple[Decision, ...]:
        if self._items is None:
            self._items = tuple(
                chain.from_iterable(
                    part.decisions() if isinstance(part, _Deferred) else part
                    for part in self._parts
                )
            )
        return self._items

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Decision: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Decision, ...]: ...

    def __getitem__(self, index: int | slice) -> Decision | tuple[Decision, ...]:
        return self._all()[index]

    def __iter__(self) -> Iterator[Decision]:
        return iter(self._all())

    def __reversed__(self) -> Iterator[Decision]:
        return reversed(self._all())

    def __contains__(self, value: object) -> bool:
        return value in self._all()

    def __add__(self, other: Iterable[Decision]) -> DecisionLog:
        more = other if isinstance(other, DecisionLog) else DecisionLog(other)
        if not more._length:
            return self
        if not self._length:
            return more
        return DecisionLog._of(self._parts + more._parts, self._length + more._length)

    def __radd__(self, other: Iterable[Decision]) -> DecisionLog:
        return DecisionLog(other) + self

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DecisionLog):
            return self._length == other._length and self._all() == other._all()
        if isinstance(other, tuple | list):
            return self._all() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._all())

    def __repr__(self) -> str:
        return f"DecisionLog({list(self._all())!r})"

    def __reduce__(self) -> tuple[type[DecisionLog], tuple[tuple[Decision, ...]]]:
        # A deferred batch holds a closure, which cannot be pickled; its decisions can.
        return DecisionLog, (self._all(),)

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        # In a model: validated from a list of decisions (a log is taken as is, unbuilt),
        # serialised as a list.
        items = handler.generate_schema(list[Decision])

        def validate(value: Any, inner: core_schema.ValidatorFunctionWrapHandler) -> DecisionLog:
            return value if isinstance(value, DecisionLog) else cls(inner(value))

        return core_schema.no_info_wrap_validator_function(
            validate,
            items,
            serialization=core_schema.plain_serializer_function_ser_schema(
                list, return_schema=items
            ),
        )


@dataclass(frozen=True)
class PackContext:
    """What flows through a pipeline. Stages return a new one with :meth:`evolve`.

    Attributes:
        messages: The current messages, chronological.
        budget: Token budget for the prompt (framing and reply priming included).
        counter: The token counter in use.
        reserve: Tokens kept free for the reply; the prompt must fit in ``budget - reserve``.
        query: What the next answer is about (by default the last user message).
        model: The model name the caller gave, if any.
        provider: Whose rules the result must follow, ``"openai"`` (the default) or
            ``"anthropic"``; :func:`ctxpack.pack` sets it. Provider rules are pipeline steps
            that read it: the ``alternate`` step
            (:class:`~ctxpack.stages._alternate.TurnAlternator`) conforms the conversation to
            Anthropic's turns and leaves it alone for OpenAI.
        decisions: Every decision so far, in order (a tuple or list given here becomes a
            :class:`DecisionLog`).
        protected: Ids that must not be dropped (system, pinned, the current question).
        signals: Named scores that stages contribute for the packer, per signal then per
            message id (``{"relevance": {"m3": 0.8}}``); a missing id scores 0.
        artifacts: Originals of messages that a stage shortened, by id: nothing is lost.
        tools: The tool definitions sent with the request, as the provider receives them
            (:func:`ctxpack.pack` sets them); their tokens are in ``reserve``.
    """

    messages: tuple[Message, ...]
    budget: int
    counter: TokenCounter
    reserve: int = 0
    query: str | None = None
    model: str | None = None
    decisions: DecisionLog = field(default_factory=DecisionLog)
    protected: frozenset[str] = frozenset()
    signals: Mapping[str, Mapping[str, float]] = field(default_factory=lambda: _EMPTY)
    artifacts: Mapping[str, Message] = field(default_factory=lambda: _EMPTY)
    # Last, so that contexts built with positional arguments keep working.
    provider: Provider = "openai"
    tools: tuple[Mapping[str, Any], ...] = ()

    def __post_init__(self) -> None:
        checked = context_fields({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})
        self._set(checked)

    def _set(self, values: Mapping[str, Any]) -> None:
        # A frozen dataclass sets its own fields this way.
        for name, value in values.items():
            if name == "decisions" and not isinstance(value, DecisionLog):
                value = DecisionLog(value)
            object.__setattr__(self, name, value)

    def evolve(self, **changes: Any) -> PackContext:
        """A copy with ``changes`` applied."""
        return self._changed(changes)

    def decide(self, *decisions: Decision, **changes: Any) -> PackContext:
        """A copy with ``decisions`` appended and ``changes`` applied."""
        return self._changed({**changes, "decisions": self.decisions + decisions})

    def _changed(self, changes: dict[str, Any]) -> PackContext:
        # Only the changed fields are checked: the others passed when this context was made,
        # and each stage makes several contexts from a history of thousands of messages.
        copy = object.__new__(type(self))
        copy.__dict__.update(self.__dict__)
        copy._set(context_fields(changes))
        return copy

    def tokens(self, message: Message) -> int:
        """Tokens ``message`` adds to the prompt, framing included."""
        return self.counter.count_message(message)

    def with_signal(self, name: str, values: Mapping[str, float]) -> PackContext:
        """A copy where the signal ``name`` is ``values`` (message id -> score), replacing any
        earlier values of that signal."""
        merged = {**self.signals, name: MappingProxyType(dict(scores(name, values)))}
        return self._changed({"signals": MappingProxyType(merged)})

    def signal(self, name: str) -> Mapping[str, float]:
        """The values of one signal (message id -> score); empty when no stage set it."""
        return self.signals.get(name, _EMPTY)

    @property
    def available(self) -> int:
        """Tokens the prompt may use: ``budget - reserve``."""
        return self.budget - self.reserve


def check_context(ctx: object, stage: object) -> None:
    """Raise :class:`~ctxpack.ConfigError` unless ``ctx`` is a :class:`PackContext`: a stage
    called on a message list (the common slip) would otherwise fail deep inside, on an
    attribute the list lacks."""
    if not isinstance(ctx, PackContext):
        raise ConfigError(
            f"{type(stage).__name__} runs on a PackContext, got {type(ctx).__name__}; to pack "
            "messages call ctxpack.pack(messages, budget=..., pipeline=...) with it"
        )


def is_own_stage(stage: object) -> bool:
    """Whether ``stage`` is one of ctxpack's own stage classes (a subclass of one defined
    elsewhere is not): the messages these build are valid by construction, and checking them
    again would cost every pack the time to compare its history by identity."""
    return type(stage).__module__.startswith("ctxpack.")


def custom_step_checked(
    before: PackContext, after: PackContext, originals: Mapping[str, Message], *, where: str
) -> None:
    """Raise for what a stage that is not ctxpack's own returned past PackContext's checks,
    naming ``where`` (the step): a message or an artifact it copied without validation, an
    artifact it put into the mapping in place (``originals`` are the artifacts before it ran),
    a repeated id, a protected message dropped or messages reordered (as ConfigError).
    ctxpack's own stages build these valid, and are not checked again."""
    new_messages_checked(before.messages, after.messages, where=where)
    artifacts_checked(originals, before.messages, after.artifacts, where=where)
    problem = contract_break(before.messages, before.protected, after.messages)
    if problem is not None:
        raise ConfigError(f"{where} {problem}")


def _name_the_step(exc: Exception, step_name: str, stage: Stage) -> None:
    """Add to an exception a custom stage raised which step it came from: a traceback through
    a pipeline of several steps does not say. A note, not a wrapper, so that the caller still
    catches the exception's own type (Python 3.11 and later; 3.10 has no notes)."""
    if is_own_stage(stage) or not hasattr(exc, "add_note"):
        return
    own = stage_name(stage)
    what = "" if own == step_name else f" ({own})"
    exc.add_note(f"ctxpack: raised in pipeline step {step_name!r}{what}")


@runtime_checkable
class Stage(Protocol):
    """Anything that maps a :class:`PackContext` to a new one, without mutating it.

    A stage may also declare which signals (keys of :attr:`PackContext.signals`) it writes and
    reads, as attributes ``provides`` and ``requires``: collections of signal names, class
    attributes or properties. A stage that declares nothing provides and requires nothing.
    :class:`Pipeline` checks them when it is built.
    """

    def __call__(self, ctx: PackContext, /) -> PackContext: ...


def stage_name(stage: Stage | Callable[..., Any]) -> str:
    """The default step name of a stage: its ``name`` attribute, function name or class name."""
    name = getattr(stage, "name", None)
    if isinstance(name, str) and name:
        return name
    fn_name = getattr(stage, "__name__", None)
    if isinstance(fn_name, str) and fn_name != "<lambda>":
        return fn_name
    return type(stage).__name__.lower()


StepSpec = Stage | tuple[str, Stage]


class Pipeline:
    """Stages run in order; itself a stage.

    Args:
        steps: Stages, or ``(name, stage)`` pairs. Unnamed steps are named after the stage.

    Raises:
        ConfigError: a step is not callable, two steps share a name, or a step requires a
            signal (its ``requires``) that no step before it provides (their ``provides``);
            the message names the step, the signal and the stages known to provide it.

    Example:
        >>> from ctxpack.stages import Deduplicator, GreedyPacker, RelevanceScorer
        >>> packer = GreedyPacker(signal_weights={"relevance": 40})
        >>> p = Pipeline([Deduplicator(), RelevanceScorer(), packer])
        >>> p.names
        ['dedupe', 'relevance', 'pack']
        >>> p.replace("dedupe", Deduplicator(case_sensitive=True)).names
        ['dedupe', 'relevance', 'pack']
        >>> p.without("relevance")
        Traceback (most recent call last):
        ...
        ctxpack.errors.ConfigError: step 'pack' (GreedyPacker) requires the signal 'relevance', ...
    """

    name = "pipeline"

    def __init__(self, steps: Iterable[StepSpec]) -> None:
        if isinstance(steps, (str, bytes, Mapping)) or not isinstance(steps, Iterable):
            raise ConfigError(
                f"steps must be a list of stages or (name, stage) pairs, got {type(steps).__name__}"
            )
        named: list[tuple[str, Stage]] = []
        seen: set[str] = set()
        for i, spec in enumerate(steps):
            if isinstance(spec, tuple):
                if len(spec) != 2 or not isinstance(spec[0], str):
                    raise ConfigError(f"step {i}: expected a stage or a (name, stage) pair")
                step_name, stage = spec
            else:
                stage = spec
                step_name = stage_name(stage)
            if not callable(stage):
                raise ConfigError(
                    f"step {i} ({step_name!r}): {type(stage).__name__} is not callable; a stage "
                    "is a function or object taking a PackContext and returning one"
                )
            if step_name in seen:
                raise ConfigError(
                    f"step {i}: the name {step_name!r} is already used; name the step "
                    f"explicitly with a ({step_name + '_2'!r}, stage) pair"
                )
            seen.add(step_name)
            named.append((step_name, stage))
        self._provides = check_requirements(named)
        self._steps: tuple[tuple[str, Stage], ...] = tuple(named)

    @property
    def provides(self) -> frozenset[str]:
        """The signals its steps provide."""
        return self._provides

    @property
    def requires(self) -> frozenset[str]:
        """Nothing: each step's requirements are met inside the pipeline (checked when built)."""
        return frozenset()

    @property
    def steps(self) -> list[tuple[str, Stage]]:
        """The ``(name, stage)`` pairs, in order."""
        return list(self._steps)

    @property
    def names(self) -> list[str]:
        """The step names, in order."""
        return [name for name, _ in self._steps]

    def __getitem__(self, name: str) -> Stage:
        for step_name, stage in self._steps:
            if step_name == name:
                return stage
        raise UnknownNameError(f"no step named {name!r}; steps are {self.names}")

    def __iter__(self) -> Iterator[tuple[str, Stage]]:
        return iter(self._steps)

    def __len__(self) -> int:
        return len(self._steps)

    def replace(self, name: str, stage: Stage) -> Pipeline:
        """A new pipeline where the step ``name`` runs ``stage`` instead.

        Raises:
            ConfigError: no step is named ``name`` (also a ``KeyError``).
        """
        self[name]  # raises the error that lists the names
        return Pipeline([(n, stage if n == name else s) for n, s in self._steps])

    def without(self, name: str) -> Pipeline:
        """A new pipeline without the step ``name``.

        Raises:
            ConfigError: no step is named ``name`` (also a ``KeyError``).
        """
        self[name]
        return Pipeline([(n, s) for n, s in self._steps if n != name])

    def insert(self, before: str, step: StepSpec) -> Pipeline:
        """A new pipeline with ``step`` inserted before the step named ``before``.

        Raises:
            ConfigError: no step is named ``before`` (also a ``KeyError``).
        """
        self[before]
        out: list[StepSpec] = []
        for n, s in self._steps:
            if n == before:
                out.append(step)
            out.append((n, s))
        return Pipeline(out)

    def __call__(self, ctx: PackContext, /) -> PackContext:
        check_context(ctx, self)
        for step_name, stage in self._steps:
            # A custom stage may change the artifacts in place: what they were is kept.
            originals = None if is_own_stage(stage) else dict(ctx.artifacts)
            try:
                result = stage(ctx)
            except TypeError as exc:
                # Only a stage that cannot take the context at all is the caller's setup;
                # a TypeError from inside a working stage is its own, and goes on as it is.
                if not misfit(stage, (ctx,)):
                    _name_the_step(exc, step_name, stage)
                    raise
                raise ConfigError(
                    f"step {step_name!r}: {callable_name(stage)} cannot be called with the "
                    "context; a stage is a callable (ctx: PackContext, /) -> PackContext"
                ) from exc
            except Exception as exc:
                _name_the_step(exc, step_name, stage)
                raise
            if not isinstance(result, PackContext):
                raise ConfigError(
                    f"step {step_name!r} returned {type(result).__name__}, not a PackContext; "
                    "a stage must return the (new) context"
                )
            if originals is not None:
                custom_step_checked(ctx, result, originals, where=f"step {step_name!r}")
            ctx = result
        return ctx

    def __repr__(self) -> str:
        inner = ", ".join(f"({n!r}, {s!r})" for n, s in self._steps)
        return f"Pipeline([{inner}])"
