"""An invalid option as a ctxpack error: who it configures, the option and the value, in place of
pydantic's own error type and text."""

from __future__ import annotations

import types
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from ..errors import ConfigError

__all__ = ["CheckedModel", "invalid_option"]


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
    return ConfigError(f"{owner}: {option}={err.get('input')!r}: {message}")


def _kind(annotation: Any) -> type | None:
    """``bool`` for a flag, ``float`` for a number (an int or a float, or ``None``), ``None``
    for anything else."""
    options = [annotation]
    if get_origin(annotation) in (Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
    if options == [bool]:
        return bool
    if options and all(a in (int, float) for a in options):
        return float
    return None


class CheckedModel(BaseModel):
    """A model a user builds from options (a stage, a price): an invalid option raises
    :class:`~ctxpack.ConfigError` naming the model, the option and the value, rather than
    pydantic's own error type. A float option must be finite: an infinite price or weight would
    turn every sum it enters into ``inf`` or ``nan``. A flag takes ``True`` or ``False`` only,
    and a number is never a bool: pydantic alone would read ``"no"`` or ``1`` as a flag and
    ``True`` as the number 1."""

    model_config = ConfigDict(allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _flags_and_numbers_apart(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        kind = _kind(field.annotation) if field is not None else None
        if kind is bool and not isinstance(value, bool):
            raise ValueError(f"must be True or False, got {value!r}")
        if kind is float and isinstance(value, bool):
            raise ValueError("must be a number, not a bool")
        return value

    def __init__(self, **options: Any) -> None:
        try:
            super().__init__(**options)
        except ValidationError as exc:
            raise invalid_option(type(self).__name__, type(self), exc) from exc
