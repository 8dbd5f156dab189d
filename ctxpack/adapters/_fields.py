"""The field checks both validators make: a required string, a typed content entry, the object
a part carries; each fails naming the message index and the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._internal.arguments import json_type_name
from ._turns import fail as _fail

__all__: list[str] = []


def require_str(
    entry: Mapping[str, Any], key: str, index: int | None, field: str, *, empty: bool = True
) -> None:
    if key not in entry:
        raise _fail("is missing", index, field)
    if not isinstance(entry[key], str):
        raise _fail(f"must be a string, got {json_type_name(entry[key])}", index, field)
    if not empty and not entry[key]:
        raise _fail("must be a non-empty string", index, field)


def typed_entry(entry: Any, noun: str, allowed: list[str], index: int | None, field: str) -> str:
    """The ``type`` of a content part or block, checked against ``allowed`` (listed in order)."""
    if not isinstance(entry, Mapping):
        raise _fail(
            f"a content {noun} must be an object, got {json_type_name(entry)}", index, field
        )
    kind = entry.get("type")
    if not isinstance(kind, str):
        raise _fail(f"every content {noun} needs a string type", index, f"{field}.type")
    if kind not in allowed:
        raise _fail(
            f"unknown {noun} type {kind!r}; expected one of {', '.join(allowed)}",
            index,
            f"{field}.type",
        )
    return kind


def payload(
    part: Mapping[str, Any], key: str, like: str, index: int, field: str
) -> Mapping[str, Any]:
    """The object a part of type ``key`` carries under ``key``."""
    inner = part.get(key)
    if not isinstance(inner, Mapping):
        raise _fail(
            f"must be an object like {like}, got {json_type_name(inner)}", index, f"{field}.{key}"
        )
    return inner
