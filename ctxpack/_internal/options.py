"""An invalid option as a ctxpack error: who it configures, the option and the value, in place of
pydantic's own error type and text."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

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


class CheckedModel(BaseModel):
    """A model a user builds from options (a stage, a price): an invalid option raises
    :class:`~ctxpack.ConfigError` naming the model, the option and the value, rather than
    pydantic's own error type. A float option must be finite: an infinite price or weight would
    turn every sum it enters into ``inf`` or ``nan``."""

    model_config = ConfigDict(allow_inf_nan=False)

    def __init__(self, **options: Any) -> None:
        try:
            super().__init__(**options)
        except ValidationError as exc:
            raise invalid_option(type(self).__name__, type(self), exc) from exc
