"""The Responses API's built-in tools that the client runs (``shell``, ``apply_patch``, the
older ``local_shell`` and ``computer`` use): their call and output items carried as a chat tool
call and its tool message; and the tools OpenAI runs itself (web search, file search, the code
interpreter, a remote MCP server), whose items are carried in the assistant message of their
turn.

The model calls them with a ``shell_call`` (an ``action``: the commands), a
``local_shell_call`` (an ``exec`` action: one command as its argv), an ``apply_patch_call``
(an ``operation``: a file to create, update or delete) or a ``computer_call`` (an ``action``,
or a list of ``actions``: clicks, keys, a screenshot), and the agent answers with a
``shell_call_output`` (each command's stdout, stderr and outcome), a
``local_shell_call_output`` or an ``apply_patch_call_output`` (text), or a
``computer_call_output`` (a screenshot, an image). As a chat tool call (the tool's name, the
item's own fields as JSON arguments) and a tool message (the output's text, or the
screenshot as an image part), they are counted, packed as a pair and filtered as any call and
result are; the original item, kept in the message's metadata, is written back with whatever
ctxpack changed (a redacted argument, a shortened output) and nothing else.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidMessageError
from .arguments import MAX_NESTING, check_text, json_problem
from .compaction import check_openai_compaction
from .jsontext import read_json
from .reasoning import REASONING, check_reasoning

__all__: list[str] = []

# A call item's type -> the tool's name (its type in the request's tools) and the fields that
# say what to do, the call's arguments.
CALLS: dict[str, tuple[str, tuple[str, ...]]] = {
    "shell_call": ("shell", ("action", "environment")),
    "apply_patch_call": ("apply_patch", ("operation",)),
    "local_shell_call": ("local_shell", ("action",)),
    "computer_call": ("computer", ("action", "actions")),
}
OUTPUTS = frozenset(
    {
        "shell_call_output",
        "apply_patch_call_output",
        "local_shell_call_output",
        "computer_call_output",
    }
)
# The calls whose item the API's schema requires with the id a response gave it: sent back
# with it (the others go without, see chat_to_responses).
_KEEPS_ID = frozenset({"local_shell_call", "computer_call"})
# The outputs that are one text: a patch's log, a local shell's output (JSON, by the API's
# description, but any text the agent wrote).
_TEXT_OUTPUTS = frozenset({"apply_patch_call_output", "local_shell_call_output"})
# The outputs whose item has no place for text (a screenshot): a stage that would put text in
# their place (clearing) leaves them, the pair can only be dropped whole.
TEXTLESS_OUTPUTS = frozenset({"computer_call_output"})
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


def is_textless_output(metadata: Mapping[str, Any], key: str) -> bool:
    """Whether a tool message's item (``metadata[key]``) is an output that holds no text."""
    return item_type(metadata.get(key)) in TEXTLESS_OUTPUTS


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

    key = "id" if kind in SERVER_ITEMS else call_key(item)
    if not isinstance(item.get(key), str) or not item[key]:
        raise fail(key, "a non-empty string")
    if kind in SERVER_ITEMS:
        return
    shape = _shape_problem(kind, item)
    if shape is not None:
        raise fail(*shape)


def _shape_problem(kind: str, item: Mapping[str, Any]) -> tuple[str, str] | None:
    """The field of a call or an output that is not of the shape the API takes, and what it
    must be."""
    if kind in _KEEPS_ID and (not isinstance(item.get("id"), str) or not item["id"]):
        return "id", "a non-empty string (the API needs this call's item id)"
    if kind == "computer_call":
        action, actions = item.get("action"), item.get("actions")
        if not isinstance(action, Mapping) and not isinstance(actions, list):
            return ("action" if actions is None else "actions"), "an object (or actions a list)"
    elif kind in CALLS:
        field = CALLS[kind][1][0]
        if not isinstance(item.get(field), Mapping):
            return field, "an object"
        if kind == "local_shell_call" and _argv(item[field].get("command")) is None:
            return field, "an exec action whose command is a non-empty list of strings"
    elif kind == "computer_call_output":
        if screenshot_part(item) is None:
            return "output", "a computer_screenshot object with an image_url or a file_id"
    elif kind in _TEXT_OUTPUTS:
        output = item.get("output")
        if not isinstance(output, str) and (
            kind == "local_shell_call_output" or output is not None
        ):
            return "output", "a string"
    else:
        output = item.get("output")
        if not isinstance(output, list) or not all(
            isinstance(c, Mapping) and isinstance(c.get("stdout", ""), str) for c in output
        ):
            return "output", "a list of {stdout, stderr, outcome} objects"
    return None


def call_key(item: Mapping[str, Any]) -> str:
    """The field of a call or an output item that holds the call's id: ``call_id``; but the
    SDK types a local shell's output with the call's id as its ``id`` (OpenAI's guide writes
    ``call_id``, read too)."""
    if item.get("type") == "local_shell_call_output" and "call_id" not in item:
        return "id"
    return "call_id"


# The fields of a Responses API call and its output, checked under their own names: once
# converted, an error would name the Chat Completions fields the caller never wrote.
_ITEM_FIELDS = {
    REASONING: (("id", True),),
    "function_call": (("call_id", True), ("name", True), ("arguments", False)),
    "custom_tool_call": (("call_id", True), ("name", True), ("input", False)),
    "function_call_output": (("call_id", True), ("output", False)),
    "custom_tool_call_output": (("call_id", True), ("output", False)),
}


def check_fields(kind: Any, item: dict[str, Any], index: int) -> None:
    """An item's fields, before it is converted (see :func:`check_item`)."""
    if kind == REASONING:
        # The API requires a summary (it may be empty); the part's own checks do the rest.
        if "summary" not in item:
            raise InvalidMessageError(
                "a Responses API reasoning item's summary must be a list (missing)",
                index=index,
                field="summary",
            )
        check_reasoning(item, index, None, "assistant")
    if kind == "compaction":
        check_openai_compaction(item, index, None, "assistant")
    if kind in CALLS or kind in OUTPUTS or kind in SERVER_ITEMS:
        check_item(kind, item, index)
    for field, nonempty in _ITEM_FIELDS.get(kind, ()):
        value = item.get(field)
        if field == "output" and isinstance(value, list):
            continue
        if not isinstance(value, str) or (nonempty and not value):
            wanted = "a non-empty string" if nonempty else "a string"
            if field not in item:
                got = "missing"
            elif isinstance(value, str):
                got = "got an empty string"
            else:
                got = f"got {type(value).__name__}"
            raise InvalidMessageError(
                f"a Responses API {kind} item's {field} must be {wanted} ({got})",
                index=index,
                field=field,
            )
        try:
            check_text(value, field)
        except ValueError as exc:
            raise InvalidMessageError(
                f"a Responses API {kind} item's {exc}", index=index, field=field
            ) from None


def shell_command(action: Any) -> str | None:
    """A shell call's ``action`` (its arguments' value) as one command line: its commands,
    run one after the other; a local shell's argv (the script of a ``bash -lc`` wrapper)."""
    commands = action.get("commands") if isinstance(action, Mapping) else None
    if isinstance(commands, list) and commands and all(isinstance(c, str) for c in commands):
        return " && ".join(commands)
    argv = _argv(action.get("command")) if isinstance(action, Mapping) else None
    if argv is None:
        return None
    # Codex wraps each command in a shell; the script is the command line a reader knows.
    if len(argv) == 3 and argv[0].rsplit("/", 1)[-1] in _SHELLS and argv[1] in ("-c", "-lc"):
        return argv[2]
    return shlex.join(argv)


_SHELLS = frozenset({"sh", "bash", "zsh"})


def _argv(command: Any) -> list[str] | None:
    if isinstance(command, list) and command and all(isinstance(c, str) for c in command):
        return command
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
    without the id a response gave it (see ``chat_to_responses``) unless the API requires it.
    A field the arguments no longer hold (inputs cleared to ``{}`` to fit a window) is sent as
    its cleared stand-in: the API needs the field, and the request was counted without what it
    said."""
    try:
        edited = read_json(arguments)
    except ValueError:
        edited = {}
    edited = edited if isinstance(edited, dict) else {}
    kind = original["type"]
    out = {k: v for k, v in original.items() if k != "id" or kind in _KEEPS_ID}
    for k in CALLS[kind][1]:
        if k in original:
            out[k] = edited[k] if k in edited else _cleared(kind, k, original[k])
    return out


_CLEARED_COMMAND = "# cleared by ctxpack to fit the window"


def _cleared(kind: str, field: str, value: Any) -> Any:
    """A call's field with what it said removed, in the shape the API accepts: a shell call's
    action without its commands, a patch's operation without its diff (its kind and file
    kept); any other field (the shell's environment, a computer's action: small) as it
    came."""
    if kind == "shell_call" and field == "action" and isinstance(value, Mapping):
        # One comment rather than none: the API's schema may ask for a command.
        return {**value, "commands": [_CLEARED_COMMAND]}
    if kind == "local_shell_call" and field == "action" and isinstance(value, Mapping):
        return {**value, "command": [_CLEARED_COMMAND]}
    if field == "operation" and isinstance(value, Mapping):
        return {**value, "diff": ""} if "diff" in value else dict(value)
    return value


def screenshot_part(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """A computer call's output, its screenshot, as the ``input_image`` part the Responses
    API's messages hold (counted as an image), or ``None`` when it is not one."""
    output = item.get("output")
    if not isinstance(output, Mapping) or output.get("type") != "computer_screenshot":
        return None
    for key in ("image_url", "file_id"):
        if isinstance(output.get(key), str) and output[key]:
            return {"type": "input_image", key: output[key], "detail": "auto"}
    return None


def output_text(item: Mapping[str, Any]) -> str:
    """The text of an output item: the log or the output, each command's stdout and stderr,
    nothing for a screenshot."""
    if item["type"] in _TEXT_OUTPUTS:
        return item.get("output") or ""
    if item["type"] == "computer_call_output":
        return ""
    texts = (c.get(k) for c in item["output"] for k in ("stdout", "stderr"))
    return "\n".join(t for t in texts if isinstance(t, str) and t)


def output_item(original: Mapping[str, Any], text: str) -> dict[str, Any]:
    """``original``, or when its text was changed (filtered, cleared, redacted), ``original``
    with ``text`` in its place: a shell output's first command's stdout, the others' emptied,
    every command's outcome kept. (A screenshot has no text: see ``screenshot_kept``.)"""
    out = dict(original)
    if text == output_text(original) or original["type"] == "computer_call_output":
        return out
    if original["type"] in _TEXT_OUTPUTS:
        out["output"] = text
        return out
    out["output"] = [
        {**chunk, "stdout": text if j == 0 else "", "stderr": ""}
        for j, chunk in enumerate(original["output"])
    ]
    return out
