"""The Responses API's built-in tools that the client runs (``shell``, ``apply_patch``): their
call and output items carried as a chat tool call and its tool message; and the tools OpenAI
runs itself (web search, file search, the code interpreter, a remote MCP server), whose items
are carried in the assistant message of their turn.

The model calls them with a ``shell_call`` (an ``action``: the commands) or an
``apply_patch_call`` (an ``operation``: a file to create, update or delete), and the agent
answers with a ``shell_call_output`` (each command's stdout, stderr and outcome) or an
``apply_patch_call_output`` (a log line). As a chat tool call (the tool's name, the item's own
fields as JSON arguments) and a tool message (the output's text), they are counted, packed as a
pair and filtered as any call and result are; the original item, kept in the message's
metadata, is written back with whatever ctxpack changed (a redacted argument, a shortened
output) and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidMessageError
from .arguments import MAX_NESTING, json_problem
from .jsontext import read_json

__all__: list[str] = []

# A call item's type -> the tool's name (its type in the request's tools) and the fields that
# say what to do, the call's arguments.
CALLS: dict[str, tuple[str, tuple[str, ...]]] = {
    "shell_call": ("shell", ("action", "environment")),
    "apply_patch_call": ("apply_patch", ("operation",)),
}
OUTPUTS = frozenset({"shell_call_output", "apply_patch_call_output"})
# The items of the tools OpenAI runs: a call and its result in one item, sent back verbatim as
# a part of the assistant message of their turn (as a reasoning item is), counted by their JSON
# (an image_generation_call's result is an image, which that would overcount: it is refused).
SERVER_ITEMS = frozenset(
    {"web_search_call", "file_search_call", "code_interpreter_call", "mcp_call", "mcp_list_tools"}
)


def item_type(item: Any) -> str | None:
    """An item's (or a part's) ``type`` when it is a string. The dicts read are the caller's
    (and ``metadata`` the user's too): a list or an object there is no type, nor hashable."""
    kind = item.get("type") if isinstance(item, Mapping) else None
    return kind if isinstance(kind, str) else None


def is_server_item(part: Any) -> bool:
    return item_type(part) in SERVER_ITEMS


def check_item(kind: str, item: Mapping[str, Any], index: int) -> None:
    """A call's or an output's fields, named as the caller wrote them. The item itself is sent
    back, so every value in it must be one a JSON request in UTF-8 can carry."""
    for key, value in item.items():
        field = key if isinstance(key, str) else repr(key)
        problem = (
            json_problem(value, field, exact=False, limit=MAX_NESTING - 1, utf8=True)
            if isinstance(key, str)
            else f"the key {key!r} is not a string"
        )
        if problem is not None:
            raise InvalidMessageError(
                f"a Responses API {kind} item's {problem}: the item is sent as it came, as "
                "JSON, which holds only strings (valid Unicode), finite numbers, booleans, "
                "None, lists and objects with string keys",
                index=index,
                field=field,
            )

    def fail(field: str, wanted: str) -> InvalidMessageError:
        value = item.get(field)
        got = f"got {type(value).__name__}" if field in item else "missing"
        got = "got an empty string" if value == "" else got
        return InvalidMessageError(
            f"a Responses API {kind} item's {field} must be {wanted} ({got})",
            index=index,
            field=field,
        )

    key = "id" if kind in SERVER_ITEMS else "call_id"
    if not isinstance(item.get(key), str) or not item[key]:
        raise fail(key, "a non-empty string")
    if kind in SERVER_ITEMS:
        return
    if kind in CALLS:
        field = CALLS[kind][1][0]
        if not isinstance(item.get(field), Mapping):
            raise fail(field, "an object")
    elif kind == "apply_patch_call_output":
        if item.get("output") is not None and not isinstance(item["output"], str):
            raise fail("output", "a string")
    else:
        output = item.get("output")
        if not isinstance(output, list) or not all(
            isinstance(c, Mapping) and isinstance(c.get("stdout", ""), str) for c in output
        ):
            raise fail("output", "a list of {stdout, stderr, outcome} objects")


def shell_command(action: Any) -> str | None:
    """A shell call's ``action`` (its arguments' value) as one command line: its commands,
    run one after the other."""
    commands = action.get("commands") if isinstance(action, Mapping) else None
    if isinstance(commands, list) and commands and all(isinstance(c, str) for c in commands):
        return " && ".join(commands)
    return None


def tool_call(item: Mapping[str, Any]) -> dict[str, Any]:
    """A call item as a chat tool call: the tool's name, what to do as JSON arguments."""
    name, fields = CALLS[item["type"]]
    arguments = {k: item[k] for k in fields if item.get(k) is not None}
    return {
        "id": item["call_id"],
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
    }


def call_item(original: Mapping[str, Any], arguments: str) -> dict[str, Any]:
    """``original`` with what its chat call's ``arguments`` now say (a redacted command), and
    without the id a response gave it (see ``chat_to_responses``). A field the arguments no
    longer hold (inputs cleared to ``{}`` to fit a window) is sent as its cleared stand-in:
    the API needs the field, and the request was counted without what it said."""
    try:
        edited = read_json(arguments)
    except ValueError:
        edited = {}
    edited = edited if isinstance(edited, dict) else {}
    fields = CALLS[original["type"]][1]
    out = {k: v for k, v in original.items() if k != "id"}
    for k in fields:
        if k in original:
            out[k] = edited[k] if k in edited else _cleared(k, original[k])
    return out


_CLEARED_COMMAND = "# cleared by ctxpack to fit the window"


def _cleared(field: str, value: Any) -> Any:
    """A call's field with what it said removed, in the shape the API accepts: a shell call's
    action without its commands, a patch's operation without its diff (its kind and file
    kept); any other field (the shell's environment, small) as it came."""
    if field == "action" and isinstance(value, Mapping):
        # One comment rather than none: the API's schema may ask for a command.
        return {**value, "commands": [_CLEARED_COMMAND]}
    if field == "operation" and isinstance(value, Mapping):
        return {**value, "diff": ""} if "diff" in value else dict(value)
    return value


def output_text(item: Mapping[str, Any]) -> str:
    """The text of an output item: the log, or each command's stdout and stderr."""
    if item["type"] == "apply_patch_call_output":
        return item.get("output") or ""
    texts = (c.get(k) for c in item["output"] for k in ("stdout", "stderr"))
    return "\n".join(t for t in texts if isinstance(t, str) and t)


def output_item(original: Mapping[str, Any], text: str) -> dict[str, Any]:
    """``original``, or when its text was changed (filtered, cleared, redacted), ``original``
    with ``text`` in its place: a shell output's first command's stdout, the others' emptied,
    every command's outcome kept."""
    out = dict(original)
    if text == output_text(original):
        return out
    if original["type"] == "apply_patch_call_output":
        out["output"] = text
        return out
    out["output"] = [
        {**chunk, "stdout": text if j == 0 else "", "stderr": ""}
        for j, chunk in enumerate(original["output"])
    ]
    return out
