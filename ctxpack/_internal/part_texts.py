"""The texts a content part carries, wherever the part's shape puts them: a text part's text,
an Anthropic document's (its text or content source, its title and context), a text file sent
as base64 data (OpenAI's ``file`` and ``input_file``, Anthropic's base64 document), a search
result's title and text blocks, the result of a tool the provider ran (Anthropic's code
execution, web fetch, an MCP server's tool: every text in it). What reads every text a model is
sent (secret redaction) goes through :func:`with_texts`, not through each shape.
"""

from __future__ import annotations

import base64
import binascii
import itertools
from collections.abc import Callable, Mapping
from typing import Any

from .base64_data import base64_start
from .documents import DOCUMENT_TYPES, is_text_media
from .images import IMAGE_TYPES
from .tool_items import is_server_item, item_type

__all__: list[str] = []

_Edit = Callable[[str], str]


def is_provider_tool_result(part: Any) -> bool:
    """Whether ``part`` is the result of a tool the provider ran, which comes back inside the
    assistant's turn: Anthropic's (``web_search_tool_result``,
    ``bash_code_execution_tool_result``, ``mcp_tool_result``...), not a client's
    ``tool_result``; the Responses API's call items that hold their own output (``mcp_call``,
    ``code_interpreter_call``, ``file_search_call``...)."""
    kind = part.get("type") if isinstance(part, Mapping) else None
    if not isinstance(kind, str):
        return False
    return (kind.endswith("_tool_result") and kind != "tool_result") or is_server_item(part)


# What a Responses API server item says of the call itself (the model's own arguments, code and
# queries, which are left as written as a client tool call's are) and what pairs or names it:
# sent as they came. Every other field is the tool's output.
_CALL_FIELDS = frozenset(
    {"type", "id", "status", "server_label", "name", "arguments", "code", "container_id"}
    | {"queries", "action", "approval_request_id"}
)


# The fields of a provider's tool result that pair it, name a file or hold what the provider
# encrypted: sent back as they came.
_RESULT_VERBATIM = frozenset({"type", "tool_use_id", "id", "file_id", "encrypted_content"})


def _result_texts(value: Any, edit: _Edit) -> Any:
    """``value`` (what a provider's tool result holds) with every text in it edited: its
    shapes are many (stdout and stderr, a file's view, a fetched document, an MCP server's
    blocks) and each is a tool's output; an image in it is left as it is, as a client tool's
    is."""
    if isinstance(value, str):
        return edit(value)
    if isinstance(value, list):
        return [_result_texts(v, edit) for v in value]
    if isinstance(value, Mapping):
        if value.get("type") in ("text", "document", "search_result"):
            return with_texts(value, edit)
        if item_type(value) in IMAGE_TYPES:
            return value  # its data is no text: an edit there breaks the image
        return {k: v if k in _RESULT_VERBATIM else _result_texts(v, edit) for k, v in value.items()}
    return value


def with_texts(part: Any, edit: _Edit) -> Any:
    """``part`` with ``edit`` applied to each of its texts; ``part`` itself when none changed.
    Images, PDFs and anything not a part come back as they are."""
    if not isinstance(part, Mapping):
        return part
    kind = part.get("type")
    changes: dict[str, Any] = {}
    if is_server_item(part):
        changes.update(
            {k: _result_texts(v, edit) for k, v in part.items() if k not in _CALL_FIELDS}
        )
        # A web search's action is the model's query, and the pages it found: the tool's output.
        action = part.get("action")
        if isinstance(action, Mapping) and isinstance(action.get("sources"), list):
            changes["action"] = {**action, "sources": _result_texts(action["sources"], edit)}
    elif is_provider_tool_result(part) and "content" in part:
        changes["content"] = _result_texts(part["content"], edit)
    if kind in ("text", "input_text", "output_text", "search_result"):
        changes.update(_fields(part, ("text", "title"), edit))
        changes.update(_quotes_edited(part, edit))
    if kind == "search_result":
        # Its source (a URL, often) names it to the citations that quote it: edited alike.
        changes.update(_fields(part, ("source",), edit))
    if kind == "search_result" and isinstance(content := part.get("content"), list):
        changes["content"] = [with_texts(block, edit) for block in content]
    elif kind == "document":
        changes.update(_fields(part, ("title", "context"), edit))
        if isinstance(source := part.get("source"), Mapping):
            changes["source"] = _source(source, edit)
    elif kind in DOCUMENT_TYPES:  # OpenAI's file parts: the file's fields sit in "file" or not
        inner = part.get("file") if kind == "file" else part
        if isinstance(inner, Mapping):
            new = {**inner, **_fields(inner, ("filename",), edit)}
            if isinstance(data := inner.get("file_data"), str):
                new["file_data"] = _data_url(data, edit)
            changes.update({"file": new} if kind == "file" else new)
    changed = {k: v for k, v in changes.items() if v != part.get(k)}
    return {**part, **changed} if changed else part


# The lists of a text part whose entries quote a source (Anthropic's ``citations``, the
# Responses API's ``annotations``), and what an entry holds of that source: its text, its
# title, its URL or name. The rest (indexes, ids, an encrypted index) places the quote.
_QUOTE_LISTS = ("citations", "annotations")
_QUOTED = ("cited_text", "url", "title", "document_title", "source", "filename")


def quotes(part: Any) -> bool:
    """Whether ``part`` is a text part that quotes a source (a document, a search result, a
    fetched page): what it quotes came from a tool's output, though the part is the
    assistant's."""
    return (
        isinstance(part, Mapping)
        and part.get("type") in ("text", "output_text")
        and any(isinstance(part.get(key), list) and part[key] for key in _QUOTE_LISTS)
    )


def with_quotes(part: Any, edit: _Edit) -> Any:
    """``part`` with ``edit`` applied to what its citations quote, its own text as written;
    ``part`` itself when none changed."""
    if not quotes(part):
        return part
    changed = _quotes_edited(part, edit)
    return {**part, **changed} if changed else part


def _quotes_edited(part: Mapping[str, Any], edit: _Edit) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    for key in _QUOTE_LISTS:
        entries = part.get(key)
        if not isinstance(entries, list):
            continue
        edited = [
            {**entry, **_fields(entry, _QUOTED, edit)} if isinstance(entry, Mapping) else entry
            for entry in entries
        ]
        if edited != entries:
            changes[key] = edited
    return changes


def _fields(part: Mapping[str, Any], keys: tuple[str, ...], edit: _Edit) -> dict[str, Any]:
    return {key: edit(value) for key in keys if isinstance(value := part.get(key), str)}


def _source(source: Mapping[str, Any], edit: _Edit) -> Mapping[str, Any]:
    kind, data = source.get("type"), source.get("data")
    if kind == "text" and isinstance(data, str):
        return {**source, "data": edit(data)}
    if kind == "base64" and isinstance(data, str):
        media = source.get("media_type")
        if isinstance(media, str) and is_text_media(media):
            return {**source, "data": _base64_text(data, edit)}
    if kind == "content":
        content = source.get("content")
        if isinstance(content, str):
            return {**source, "content": edit(content)}
        if isinstance(content, list):
            return {**source, "content": [with_texts(block, edit) for block in content]}
    return source


def _data_url(data: str, edit: _Edit) -> str:
    """A file sent as data: a text file's text edited, any other's data as it is."""
    start = base64_start(data)  # as the part checks read a data URL: in any case
    if start is None or not is_text_media(data[5 : start - 8]):
        return data
    return data[:start] + _base64_text(data[start:], edit)


def _base64_text(payload: str, edit: _Edit) -> str:
    try:
        text = base64.b64decode(payload, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return payload  # not base64 text after all: as it came
    edited = edit(text)
    return payload if edited == text else base64.b64encode(edited.encode("utf-8")).decode()


# The text parts of a Responses API item as it came (kept in a message's metadata).
RESPONSES_TEXTS = frozenset({"text", "input_text", "output_text"})


# The fields of what a message was read from (a Responses API item, a LangChain message) that
# must go back as they are: ids that pair items, the reasoning the API encrypted, a type.
_AS_READ_VERBATIM = frozenset({"id", "call_id", "type", "encrypted_content", "status", "role"})


def as_read_edited(value: Any, edit: _Edit, spans: Callable[[str], Any]) -> Any:
    """``value`` (what a message was read from: a Responses item or a list of them, a LangChain
    message's fields) with ``edit`` applied to its texts; its input_text parts that one of
    ``spans`` crosses are joined first, as :func:`joined_where_split` joins a message's."""
    if isinstance(value, str):
        return edit(value)
    if isinstance(value, list):
        joined = joined_where_split(value, spans, RESPONSES_TEXTS)
        return [as_read_edited(v, edit, spans) for v in joined]
    if isinstance(value, dict):
        return {
            k: v if k in _AS_READ_VERBATIM else as_read_edited(v, edit, spans)
            for k, v in value.items()
        }
    return value


def joined_where_split(
    parts: list[Any], spans: Callable[[str], Any], kinds: frozenset[str] = frozenset({"text"})
) -> list[Any]:
    """``parts`` with each run of consecutive text parts (of a type in ``kinds``) made one
    where one of ``spans`` (each with a ``start`` and an ``end``) of their joined text crosses
    from a part into the next: a tool output cut into chunks can cut a secret, and the model
    reads the chunks as one text. ``parts`` itself when no run needs it."""
    out: list[Any] = []
    run: list[Mapping[str, Any]] = []
    changed = False
    for part in [*parts, None]:
        if (
            isinstance(part, Mapping)
            and part.get("type") in kinds
            and isinstance(part.get("text"), str)
        ):
            run.append(part)
            continue
        if len(run) > 1 and _crossed(run, spans):
            out.append({**run[0], "text": "".join(p["text"] for p in run)})
            changed = True
        else:
            out.extend(run)
        run = []
        if part is not None:
            out.append(part)
    return out if changed else parts


def _crossed(run: list[Mapping[str, Any]], spans: Callable[[str], Any]) -> bool:
    """Whether a span of the run's joined text holds a boundary between two of its parts."""
    bounds = list(itertools.accumulate(len(part["text"]) for part in run[:-1]))
    joined = "".join(part["text"] for part in run)
    return any(span.start < b < span.end for span in spans(joined) for b in bounds)
