"""What OpenAI requires of the fields of a content part (a text's, a refusal's, an image's, an
audio clip's, a file's), checked alike for a message dict (:func:`ctxpack.validate_openai`,
:func:`ctxpack.pack`) and for a :class:`~ctxpack.messages.Message`, each problem naming the
message index and the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidMessageError
from .arguments import json_type_name
from .base64_data import base64_problem, data_url_problem

__all__: list[str] = []

# The part types whose fields are checked here; any other is another check's (or the
# provider's) to judge.
CHECKED_PART_TYPES = frozenset(
    {"text", "input_text", "refusal", "image_url", "input_audio", "file"}
    | {"input_image", "input_file"}
)

# The keys of LangChain's own file block (``{"type": "file", "base64": ..., "mime_type": ...}``,
# or the older ``"source_type"`` and ``"data"``), which shares OpenAI's part type but not its
# ``file`` object.
_LANGCHAIN_FILE_KEYS = frozenset(
    {"base64", "url", "id", "file_id", "data", "source_type", "mime_type"}
)


def fail(detail: str, index: int | None, field: str | None) -> InvalidMessageError:
    """The error for a problem in message ``index`` (``None``: the payload, or a message in no
    list) at ``field``."""
    where = f"{field}: " if field else ""
    return InvalidMessageError(where + detail, index=index, field=field)


def require_str(
    entry: Mapping[str, Any], key: str, index: int | None, field: str, *, empty: bool = True
) -> None:
    """``entry[key]`` is a string (a non-empty one unless ``empty``)."""
    if key not in entry:
        raise fail("is missing", index, field)
    if not isinstance(entry[key], str):
        raise fail(f"must be a string, got {json_type_name(entry[key])}", index, field)
    if not empty and not entry[key]:
        raise fail("must be a non-empty string", index, field)


def payload(
    part: Mapping[str, Any], key: str, like: str, index: int | None, field: str
) -> Mapping[str, Any]:
    """The object a part of type ``key`` carries under ``key``."""
    inner = part.get(key)
    if not isinstance(inner, Mapping):
        raise fail(
            f"must be an object like {like}, got {json_type_name(inner)}", index, f"{field}.{key}"
        )
    return inner


def is_langchain_file(part: Mapping[str, Any]) -> bool:
    """Whether a ``file`` part is LangChain's block (its data at the top), not OpenAI's part
    (its data in a ``file`` object)."""
    return "file" not in part and not _LANGCHAIN_FILE_KEYS.isdisjoint(part)


def check_part_fields(part: Mapping[str, Any], index: int | None, field: str) -> None:
    """The fields of an OpenAI content part of a type in :data:`CHECKED_PART_TYPES`, at
    ``field`` (``content[1]``) of message ``index``: each a string where the API takes one,
    base64 data valid (a data URL's, an audio clip's, a file's; its padding may be left out).

    Raises:
        InvalidMessageError: naming ``index`` and the field.
    """
    kind = part.get("type")
    if kind in ("text", "input_text"):
        require_str(part, "text", index, f"{field}.text")
    elif kind == "refusal":
        require_str(part, "refusal", index, f"{field}.refusal")
    elif kind == "image_url":
        inner = payload(part, "image_url", '{"url": "https://..."}', index, field)
        require_str(inner, "url", index, f"{field}.image_url.url")
        _check_data(data_url_problem(inner["url"]), index, f"{field}.image_url.url")
        if "detail" in inner:
            require_str(inner, "detail", index, f"{field}.image_url.detail")
    elif kind == "input_audio":
        inner = payload(part, "input_audio", '{"data": "<base64>", "format": "wav"}', index, field)
        require_str(inner, "data", index, f"{field}.input_audio.data")
        # The clip itself, in base64: not a data URL (the API refuses one).
        _check_data(base64_problem(inner["data"]), index, f"{field}.input_audio.data")
        require_str(inner, "format", index, f"{field}.input_audio.format")
    elif kind == "file":
        like = '{"file_id": ...} or {"file_data": ..., "filename": ...}'
        inner = payload(part, "file", like, index, field)
        _check_file(inner, ("file_id", "file_data"), index, f"{field}.file")
    elif kind == "input_image":
        # The Responses API's image: its URL a string beside the type (or a file id).
        for key in ("image_url", "file_id", "detail"):
            if part.get(key) is not None:
                require_str(part, key, index, f"{field}.{key}")
        if isinstance(part.get("image_url"), str):
            _check_data(data_url_problem(part["image_url"]), index, f"{field}.image_url")
    elif kind == "input_file":
        _check_file(part, ("file_id", "file_data", "file_url"), index, field)


def _check_file(
    file: Mapping[str, Any], sources: tuple[str, ...], index: int | None, field: str
) -> None:
    """A file's fields: one of ``sources`` at least, each a string, as is its name; its data
    base64 (a data URL's, as the API takes it, or bare)."""
    if not any(key in file for key in sources):
        wanted = " or ".join(f'"{key}"' for key in sources)
        raise fail(f"needs {wanted}", index, field)
    for key in (*sources, "filename"):
        if key in file:
            require_str(file, key, index, f"{field}.{key}")
    data = file.get("file_data")
    if isinstance(data, str):
        problem = data_url_problem(data) if data[:5].lower() == "data:" else base64_problem(data)
        _check_data(problem, index, f"{field}.file_data")


def _check_data(problem: str | None, index: int | None, field: str) -> None:
    if problem is not None:
        raise fail(problem, index, field)
