"""Copies of the values a message holds, sharing no mutable object with the caller's: ctxpack's
messages and the items it keeps verbatim are its own, so that editing the input cannot change
what was packed. A value that cannot be copied is refused, named."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from ..errors import InvalidMessageError

__all__: list[str] = []

_SCALARS = frozenset({str, int, float, bool, type(None), datetime})


def copy_value(value: Any) -> Any:
    """A copy of ``value`` that shares no mutable object with it: lists, tuples and dicts are
    copied all the way down, strings, numbers and frozen models are immutable and kept.

    Example:
        >>> parts = [{"type": "text", "text": "hi"}]
        >>> copied = copy_value(parts)
        >>> copied == parts, copied[0] is parts[0]
        (True, False)
    """
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        return {k: copy_value(v) for k, v in value.items()}
    if kind is list:
        # A list of strings (a summary's ids of every message it replaces) copied in C.
        if _SCALARS.issuperset(map(type, value)):
            return value.copy()
        return [copy_value(v) for v in value]
    if kind is tuple:
        return tuple(copy_value(v) for v in value)
    # Last: isinstance() on a pydantic model class is slow, and most values are plain.
    if isinstance(value, BaseModel) and value.model_config.get("frozen"):
        # A frozen model's fields are immutable; the unknown fields it keeps are not.
        return value.model_copy(deep=True) if value.__pydantic_extra__ else value
    try:
        return copy.deepcopy(value)
    except (TypeError, copy.Error) as exc:
        # A lock, an open file, a generator, a mappingproxy: what deepcopy cannot copy. The
        # caller that knows the message adds its index and field.
        raise InvalidMessageError(
            f"holds a {kind.__name__} value, which cannot be copied ({exc}); a message keeps "
            "only values it can copy (strings, numbers, lists, dicts, ...), so that editing "
            "the input cannot change what was packed"
        ) from exc


def copied_fields(item: Mapping[str, Any], index: int) -> dict[str, Any]:
    """A copy of the message dict or item ``item`` sharing no mutable object with it; a value
    that cannot be copied is refused naming the message and the field."""
    out = {}
    for key, value in item.items():
        try:
            out[key] = copy_value(value)
        except InvalidMessageError as exc:
            raise InvalidMessageError(f"{key}: {exc.detail}", index=index, field=str(key)) from exc
    return out
