"""Clearing the result of a tool the provider ran (see
:func:`~.part_texts.is_provider_tool_result`): the block, or the Responses API item, stays where
it is and keeps its type, its ids and what pairs it with its call; only a field that holds the
tool's output as text gets a stand-in (the note naming the stored original), each other such
field emptied. What the API needs in its shape stays (a return code, a file's type, a fetched
page's url and title, a file's id); what is opaque (a web search's encrypted results, an image,
a PDF) has no text form: such a result is not cleared, and is not counted as cleared.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from .part_texts import is_provider_tool_result
from .tool_items import SERVER_ITEMS, item_type

__all__: list[str] = []


def result_id(part: Any) -> str | None:
    """The id that pairs a provider's tool result with its call: an Anthropic block's
    ``tool_use_id``, a Responses API item's ``id``; ``None`` for any other part."""
    if not is_provider_tool_result(part):
        return None
    value = part.get("tool_use_id", part.get("id"))
    return value if isinstance(value, str) and value else None


def result_ids(content: Any) -> Iterable[str]:
    """The id of each provider tool result in a message's content (cheap: nothing is built;
    :func:`clearable_results` says which of them a stand-in fits)."""
    if isinstance(content, list):
        for part in content:
            if (rid := result_id(part)) is not None:
                yield rid


def original_result(content: Any, rid: str) -> str:
    """The provider tool result ``rid`` in a message's content as it came, as JSON: what a
    cleared result's artifact holds."""
    part = next(p for p in content if result_id(p) == rid)
    return json.dumps(part, ensure_ascii=False)


# Anthropic's blocks that call a tool the provider runs; the result names the call by its id.
_SERVER_USES = frozenset({"server_tool_use", "mcp_tool_use"})


def tool_calls(content: Any) -> Iterable[tuple[str, str, str]]:
    """(result id, tool name, arguments as JSON text) of each call of a tool the provider
    runs in a message's content: an Anthropic block's ``name`` and ``input`` (its result,
    under the call's id, may come in a later turn), a Responses API item's ``name`` (an MCP
    tool's) and ``arguments``, else its tool's type (``code_interpreter`` for a
    ``code_interpreter_call``) and no arguments."""
    if not isinstance(content, list):
        return
    for part in content:
        kind = item_type(part)
        if kind is None or (kind not in _SERVER_USES and kind not in SERVER_ITEMS):
            continue
        rid, name = part.get("id"), part.get("name")
        given = part.get("input", part.get("arguments"))
        arguments = json.dumps(given) if isinstance(given, Mapping) else given
        arguments = arguments if isinstance(arguments, str) else ""
        if isinstance(rid, str) and isinstance(name, str):
            yield rid, name, arguments
        elif isinstance(rid, str) and kind in SERVER_ITEMS:
            yield rid, kind.removesuffix("_call"), arguments


def call_arguments(content: Any, rid: str) -> str:
    """The arguments, as JSON text, of the call ``rid`` of a tool the provider runs in a
    message's content (see :func:`tool_calls`); ``""`` when it has none or is not there."""
    return next((arguments for r, _, arguments in tool_calls(content) if r == rid), "")


def with_inputs_cleared(content: Any, ids: Collection[str | None]) -> Any:
    """A message's ``content`` with the input of each call of a tool the provider runs whose
    id is in ``ids`` emptied, as a client's call's arguments are: an Anthropic block's
    ``input`` ``{}``, a Responses API item's ``arguments`` ``"{}"``; its type, id and name
    stay, so that its result still answers it. ``content`` itself when none changes."""
    if not ids:
        return content

    def emptied(part: Mapping[str, Any]) -> dict[str, Any] | None:
        kind = item_type(part)
        rid = part.get("id") if kind is not None else None
        if not isinstance(rid, str) or rid not in ids:
            return None
        given = part.get("input", part.get("arguments"))
        if kind in _SERVER_USES and isinstance(given, Mapping) and given:
            return {**part, "input": {}}
        if kind in SERVER_ITEMS and isinstance(given, str) and given != "{}":
            return {**part, "arguments": "{}"}
        return None

    return _parts_replaced(content, emptied)


def _parts_replaced(content: Any, replace: Callable[[Mapping[str, Any]], Any]) -> Any:
    """``content`` (a list of parts) with each part ``replace`` gives a new one for (not
    ``None``) replaced; ``content`` itself when none is, or when it is not a list."""
    if not isinstance(content, list):
        return content
    out = list(content)
    changed = False
    for k, part in enumerate(content):
        new = replace(part)
        if new is not None:
            out[k], changed = new, True
    return out if changed else content


def tool_names(content: Any) -> Iterable[tuple[str, str]]:
    """(result id, tool name) of each call of a tool the provider runs in a message's content
    (see :func:`tool_calls`)."""
    return ((rid, name) for rid, name, _ in tool_calls(content))


def clearable_results(content: Any) -> Iterable[tuple[int, str]]:
    """(position in ``content``, result id) of each provider tool result in a message's
    content that has a text to put a stand-in in."""
    if not isinstance(content, list):
        return
    for k, part in enumerate(content):
        rid = result_id(part)
        if rid is not None and cleared_result(part, "") is not None:
            yield k, rid


def cleared_result(part: Mapping[str, Any], note: str) -> dict[str, Any] | None:
    """``part`` with ``note`` in place of its output's text, or ``None`` when it holds none
    (an error, a web search's encrypted results, a PDF, an image)."""
    kind = item_type(part)
    if kind == "mcp_call":
        return {**part, "output": note} if isinstance(part.get("output"), str) else None
    if kind == "code_interpreter_call":
        outputs = _first_text(part.get("outputs"), "logs", note, {"type": "logs"})
        return None if outputs is None else {**part, "outputs": outputs}
    if kind == "file_search_call":
        results = _first_text(part.get("results"), "text", note, None)
        return None if results is None else {**part, "results": results}
    content = part.get("content")
    if kind == "mcp_tool_result":
        if isinstance(content, str):
            return {**part, "content": note}
        if isinstance(content, list) and all(_is_text(b) for b in content) and content:
            return {**part, "content": [{"type": "text", "text": note}]}
        return None
    if isinstance(content, Mapping):
        inner = _cleared_content(content, note)
        return None if inner is None else {**part, "content": inner}
    return None


def _cleared_content(content: Mapping[str, Any], note: str) -> dict[str, Any] | None:
    """An Anthropic result's ``content`` object with its text replaced: code execution's
    stdout (stderr emptied, the return code and output files kept), a viewed file's text, an
    edit's lines, a fetched page's text."""
    kind = item_type(content)
    if kind in ("code_execution_result", "bash_code_execution_result"):
        if not isinstance(content.get("stdout"), str):
            return None
        return {**content, "stdout": note, "stderr": ""}
    if kind == "text_editor_code_execution_view_result" and isinstance(content.get("content"), str):
        return {**content, "content": note}
    if kind == "text_editor_code_execution_str_replace_result" and isinstance(
        content.get("lines"), list
    ):
        return {**content, "lines": [note]}
    if kind == "web_fetch_result" and isinstance(doc := content.get("content"), Mapping):
        source = doc.get("source")
        if isinstance(source, Mapping) and source.get("type") == "text":
            return {**content, "content": {**doc, "source": {**source, "data": note}}}
    return None


def _first_text(
    entries: Any, key: str, note: str, kinds: Mapping[str, str] | None
) -> list[Any] | None:
    """``entries`` with the first text (at ``key``, in an entry matching ``kinds``) replaced by
    ``note`` and the others emptied; ``None`` when no entry holds one."""
    if not isinstance(entries, list):
        return None
    out: list[Any] = []
    found = False
    for entry in entries:
        if (
            isinstance(entry, Mapping)
            and isinstance(entry.get(key), str)
            and all(entry.get(k) == v for k, v in (kinds or {}).items())
        ):
            out.append({**entry, key: "" if found else note})
            found = True
        else:
            out.append(entry)
    return out if found else None


def _is_text(block: Any) -> bool:
    return item_type(block) == "text" and isinstance(block.get("text"), str)


def with_results_cleared(content: Any, notes: Mapping[str, str]) -> Any:
    """A message's ``content`` with each provider tool result whose id is in ``notes`` cleared
    to that note; ``content`` itself when none is."""
    if not notes:
        return content

    def cleared(part: Mapping[str, Any]) -> Any:
        rid = result_id(part)
        return cleared_result(part, notes[rid]) if rid is not None and rid in notes else None

    return _parts_replaced(content, cleared)
