"""An invalid option or field as a ctxpack error: who it configures, the option and the value, in
place of pydantic's own error type and text, however the model is built."""

from __future__ import annotations

import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from ..errors import ConfigError, CtxpackError
from .arguments import MOST

__all__ = ["CheckedModel", "FieldErrorModel", "invalid_option"]


def invalid_option(owner: str, model: type[BaseModel], exc: ValidationError) -> ConfigError:
    """The :class:`~ctxpack.ConfigError` for the first error of ``exc``, raised while
    validating ``model`` (named ``owner`` in the message); chain it ``from exc``."""
    err = exc.errors()[0]
    option = ".".join(str(part) for part in err["loc"]) or "options"
    message = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "missing":
        return ConfigError(f"{owner}: {option} is required")
    if err["type"] == "extra_forbidden":
        valid = ", ".join(sorted(model.model_fields))
        message = f"unknown option; valid options are {valid}"
    value = err.get("input")
    try:
        shown = repr(value)
    except ValueError:  # an int inside it with more digits than Python writes
        kind = type(value).__name__
        article = "an" if kind[:1].lower() in ("a", "e", "i", "o", "u") else "a"
        shown = f"<{article} {kind} too long to show>"
    if len(shown) > 80:
        # A JSON text or a whole mapping may be long: the option and the problem are the news.
        shown = shown[:77] + "..."
    return ConfigError(f"{owner}: {option}={shown}: {message}")


def _kind(annotation: Any) -> type | None:
    """``bool`` for a flag, ``int`` for a count (an int, or ``None``), ``float`` for a number
    (an int or a float, or ``None``), ``None`` for anything else."""
    options = [annotation]
    if get_origin(annotation) in (Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
    if options == [bool]:
        return bool
    if options == [int]:
        return int
    if options and all(a in (int, float) for a in options):
        return float
    return None


_Model = TypeVar("_Model", bound="FieldErrorModel")


class FieldErrorModel(BaseModel):
    """A model whose invalid fields raise a ctxpack error naming them, however it is built: by
    its constructor, ``model_validate()``, ``model_validate_json()`` or
    ``model_validate_strings()``. The error is :class:`~ctxpack.ConfigError` naming the model,
    the field and the value; a model words its own in ``_error`` (a message names its index).
    The pydantic error stays the ``__cause__``: code that needs every problem, not the first,
    reads it there."""

    def __init__(self, /, *args: Any, **data: Any) -> None:
        if args:
            # Python's own error would name this class, not the one being built.
            raise ConfigError(
                f"{type(self).__name__} takes keyword arguments only "
                f"({', '.join(type(self).model_fields)}), got {len(args)} positional"
            )
        # BaseModel's __init__ does this, without a second call frame: results are built in
        # loops (a decision per message, a hit per ranked file), where that frame shows.
        try:
            self.__pydantic_validator__.validate_python(data, self_instance=self)
        except ValidationError as exc:
            raise self._error(exc) from exc

    # What BaseModel's own __init__ does, errors aside: pydantic then validates a model nested
    # in another, or given to model_validate(), without calling it, as it would BaseModel's
    # (else its error would come back wrapped in pydantic's, and a mapping with a key that is
    # not a string would stop at Python's TypeError on the keywords).
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @classmethod
    def model_validate(cls: type[_Model], obj: Any, **options: Any) -> _Model:
        with cls._named_errors():
            return super().model_validate(obj, **options)

    @classmethod
    def model_validate_json(
        cls: type[_Model], json_data: str | bytes | bytearray, **options: Any
    ) -> _Model:
        with cls._named_errors():
            return super().model_validate_json(json_data, **options)

    @classmethod
    def model_validate_strings(cls: type[_Model], obj: Any, **options: Any) -> _Model:
        with cls._named_errors():
            return super().model_validate_strings(obj, **options)

    @classmethod
    @contextmanager
    def _named_errors(cls) -> Iterator[None]:
        try:
            yield
        except ValidationError as exc:
            raise cls._error(exc) from exc

    @classmethod
    def _error(cls, exc: ValidationError) -> CtxpackError:
        return invalid_option(cls.__name__, cls, exc)


class CheckedModel(FieldErrorModel):
    """A model a user builds from options (a stage, a price): an invalid option raises
    :class:`~ctxpack.ConfigError` naming the model, the option and the value, rather than
    pydantic's own error type. A float option must be finite: an infinite price or weight would
    turn every sum it enters into ``inf`` or ``nan``. A flag takes ``True`` or ``False`` only,
    and a number is never a bool or a string: pydantic alone would read ``"no"`` or ``1`` as a
    flag, ``True`` as the number 1 and ``"3"`` as 3 (``model_validate_strings()`` still reads
    text). An int option is at most 2**53 in size, as a budget is: a larger
    one is no count a history reaches, and one of thousands of digits has no ``repr()``."""

    model_config = ConfigDict(allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _flags_and_numbers_apart(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        kind = _kind(field.annotation) if field is not None else None
        if kind is bool and not isinstance(value, bool):
            raise ValueError(f"must be True or False, got {value!r}")
        if kind in (int, float) and isinstance(value, bool):
            raise ValueError("must be a number, not a bool")
        if kind in (int, float) and isinstance(value, str) and info.mode in ("python", "json"):
            # As pack(budget=...) and Session(window=...) do; model_validate_strings() (its
            # mode is "string") is for text, where "3" is 3.
            raise ValueError("must be a number, not a string")
        if kind is int and isinstance(value, int) and not -MOST <= value <= MOST:
            raise ValueError(f"must be an int up to 2**53, got an int of {value.bit_length()} bits")
        return value
