"""The base of the built-in stages: frozen, validated configuration, errors in ctxpack's tree."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import ConfigError

__all__ = ["StageModel"]


class StageModel(BaseModel):
    """A built-in stage's configuration: keyword-only, frozen, validated on construction.

    An invalid option raises :class:`~ctxpack.ConfigError` (a ``ValueError``) naming the stage,
    the option and the value, rather than pydantic's own error type.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, **options: Any) -> None:
        try:
            super().__init__(**options)
        except ValidationError as exc:
            err = exc.errors()[0]
            option = ".".join(str(part) for part in err["loc"]) or "options"
            message = str(err["msg"]).removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                valid = ", ".join(sorted(set(type(self).model_fields) - {"name"}))
                message = f"unknown option; valid options are {valid}"
            raise ConfigError(
                f"{type(self).__name__}: {option}={err.get('input')!r}: {message}"
            ) from exc
