"""What Anthropic's API requires of the fields of an image's or a document's ``source``, of a
block's optional fields (a document's title and context, citations), a tool call block and a
block only a ``tool_result`` holds, and of base64 data (an Anthropic source's, an OpenAI data
URL's); each check fails naming the message index and the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._internal.arguments import MAX_NESTING, json_problem, json_type_name, shown
from .._internal.base64_data import base64_problem, data_url_problem
from ._fields import require_str as _require_str
from ._turns import fail as _fail

__all__: list[str] = []


def check_base64(data: str, index: int | None, field: str) -> None:
    """``data`` is base64 (its padding may be left out): anything else, the provider refuses."""
    problem = base64_problem(data)
    if problem is not None:
        raise _fail(problem, index, field)


def check_data_url(url: str, index: int | None, field: str) -> None:
    """The base64 of a ``data:...;base64,...`` URL (any other URL is left to the provider)."""
    problem = data_url_problem(url)
    if problem is not None:
        raise _fail(problem, index, field)


# Blocks only a tool_result holds: a client-side tool search's answer (the tools it found, by
# name) and a browser toolset's state after its call (the API renders it for the model). Each
# by its required field.
RESULT_ONLY_BLOCKS = {"tool_reference": ("tool_name", str), "browser_state": ("tabs", list)}


# What each base64 source may hold: the API refuses any other media type.
_BASE64_MEDIA = {
    "image": ("image/jpeg", "image/png", "image/gif", "image/webp"),
    "document": ("application/pdf",),
}


def check_source(source: Any, kind: str, index: int | None, field: str) -> None:
    """An image's or a document's ``source``."""
    if not isinstance(source, Mapping):
        raise _fail(
            'must be an object like {"type": "base64", "media_type": ..., "data": ...}, got '
            + json_type_name(source),
            index,
            field,
        )
    stype = source.get("type")
    if stype == "base64":
        _require_str(source, "media_type", index, f"{field}.media_type")
        if source["media_type"] not in _BASE64_MEDIA[kind]:
            raise _fail(
                f"{source['media_type']!r} is not a base64 {kind}'s media type (one of "
                f"{', '.join(_BASE64_MEDIA[kind])}; a text document is a 'text' source)",
                index,
                f"{field}.media_type",
            )
        _require_str(source, "data", index, f"{field}.data")
        check_base64(source["data"], index, f"{field}.data")
    elif stype == "url":
        _require_str(source, "url", index, f"{field}.url")
    elif stype == "text":
        _require_str(source, "data", index, f"{field}.data")
    elif stype == "file":
        _require_str(source, "file_id", index, f"{field}.file_id")
    elif stype != "content":
        raise _fail(
            f"{shown(stype)} is not a source type (base64, url, file)", index, f"{field}.type"
        )


def check_described(block: Mapping[str, Any], kind: str, index: int | None, field: str) -> None:
    """The optional fields of a block beside its content: a document's ``title`` and
    ``context`` (strings), a document's or a search result's ``citations`` (``{"enabled":
    true}``), a text block's ``citations`` (a list); each may be null."""
    keys = ("title", "context") if kind == "document" else ()
    for key in keys:
        value = block.get(key)
        if value is not None and not isinstance(value, str):
            raise _fail(
                f"must be a string or null, got {json_type_name(value)}", index, f"{field}.{key}"
            )
    citations = block.get("citations")
    if citations is None:
        return
    if kind == "text":
        if not isinstance(citations, list):
            raise _fail(
                f"must be a list of citations, got {json_type_name(citations)}",
                index,
                f"{field}.citations",
            )
    elif not isinstance(citations, Mapping) or not isinstance(citations.get("enabled", True), bool):
        raise _fail(
            'must be an object like {"enabled": true}, got ' + json_type_name(citations),
            index,
            f"{field}.citations",
        )


def check_tool_use(block: Mapping[str, Any], kind: str, index: int | None, field: str) -> None:
    """A tool call block: its id, its name and its input object."""
    _require_str(block, "id", index, f"{field}.id")
    _require_str(block, "name", index, f"{field}.name")
    if "input" not in block:
        raise _fail(f"a {kind} block needs its input object", index, f"{field}.input")
    if not isinstance(block["input"], Mapping):
        raise _fail(
            f"must be an object, got {json_type_name(block['input'])}", index, f"{field}.input"
        )
    # The input becomes the call's JSON arguments (and is sent back as it came).
    problem = json_problem(block["input"], "input", exact=False, limit=MAX_NESTING, utf8=True)
    if problem is not None:
        raise _fail(
            f"holds {problem}; a tool's input is sent as JSON, which holds only strings (valid "
            "Unicode), finite numbers, booleans, null, lists and objects with string keys",
            index,
            f"{field}.input",
        )


def check_result_only(block: Mapping[str, Any], index: int | None, field: str) -> None:
    """A block only a ``tool_result`` holds: its required field, of its type."""
    key, kind = RESULT_ONLY_BLOCKS[block["type"]]
    if key not in block:
        raise _fail("is missing", index, f"{field}.{key}")
    if not isinstance(block[key], kind):
        wanted = "a string" if kind is str else "a list"
        raise _fail(f"must be {wanted}, got {json_type_name(block[key])}", index, f"{field}.{key}")
