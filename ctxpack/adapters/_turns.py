"""What the Anthropic API refuses about a conversation's turns as a whole, beyond each message's
own shape: the first turn, alternating roles, empty content, tool results (each answering a
``tool_use`` of the turn right before it, and placed before anything else in its turn), and the
tools the API runs itself (each ``server_tool_use`` or ``mcp_tool_use`` followed by its result).
:func:`~ctxpack.adapters.validate_anthropic` checks these with ``tool_pairing=True``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._internal.part_fields import fail as fail
from .._internal.part_texts import is_provider_tool_result

__all__: list[str] = []


def opens_with_compaction(entry: Mapping[str, Any]) -> bool:
    """Whether a message starts with a ``compaction`` block: the history the API reads begins
    there, so it may come first whatever its role."""
    blocks = _blocks(entry)
    return bool(blocks) and blocks[0].get("type") == "compaction"


def _blocks(entry: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = entry["content"]
    return content if isinstance(content, list) else []


def check_anthropic_turns(entries: Sequence[Mapping[str, Any]]) -> None:
    """Raise at the first turn the API would refuse (see the module's docstring)."""
    if entries and entries[0]["role"] != "user" and not opens_with_compaction(entries[0]):
        raise fail(
            "the first message must be a user message (or open with a compaction block)", 0, "role"
        )
    for index in range(1, len(entries)):
        if entries[index]["role"] == entries[index - 1]["role"]:
            raise fail(
                f"two {entries[index]['role']} messages in a row; roles must alternate "
                "(merge them into one message)",
                index,
                "role",
            )
    for index, entry in enumerate(entries):
        # The API's one exception: a last assistant turn left empty for the model to write.
        if not (index == len(entries) - 1 and entry["role"] == "assistant"):
            _check_not_empty(entry, index)
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        if entry["role"] == "assistant":
            _check_calls_answered(entries, index, seen)
        else:
            _check_results(entries, index)
    _check_server_pairs(entries)


def _check_not_empty(entry: Mapping[str, Any], index: int) -> None:
    content = entry["content"]
    if isinstance(content, str) and not content.strip():
        raise fail(
            "is empty (or only whitespace); the API takes empty content only in a last "
            "assistant message: leave the message out",
            index,
            "content",
        )
    for j, block in enumerate(content if isinstance(content, list) else ()):
        text = block.get("text")
        if block["type"] == "text" and isinstance(text, str) and not text.strip():
            raise fail(
                "a text block must hold some non-whitespace text; leave the block out",
                index,
                f"content[{j}].text",
            )


def _check_calls_answered(
    entries: Sequence[Mapping[str, Any]], index: int, seen: dict[str, int]
) -> None:
    """Each ``tool_use`` of assistant turn ``index`` has an id of its own, and its result in the
    next turn (unless this turn is the last)."""
    calls = [(j, b["id"]) for j, b in enumerate(_blocks(entries[index])) if b["type"] == "tool_use"]
    for j, call_id in calls:
        if call_id in seen:
            raise fail(
                f"{call_id!r} repeats the id of a tool_use in message {seen[call_id]}",
                index,
                f"content[{j}].id",
            )
        seen[call_id] = index
    if not calls or index + 1 == len(entries):
        return
    answered = {b["tool_use_id"] for b in _blocks(entries[index + 1]) if b["type"] == "tool_result"}
    for j, call_id in calls:
        if call_id not in answered:
            raise fail(
                f"tool_use {call_id!r} has no tool_result in the next message "
                "(only the last message may wait for its results)",
                index,
                f"content[{j}]",
            )


def _check_results(entries: Sequence[Mapping[str, Any]], index: int) -> None:
    """Each ``tool_result`` of user turn ``index`` answers, once, a ``tool_use`` of the turn
    before, and comes before any other block of its turn."""
    previous = entries[index - 1] if index > 0 else None
    called = (
        {b["id"] for b in _blocks(previous) if b["type"] == "tool_use"}
        if previous is not None
        else set()
    )
    results: set[str] = set()
    other: int | None = None
    for j, block in enumerate(_blocks(entries[index])):
        if block["type"] != "tool_result":
            other = j if other is None else other
            continue
        use_id = block["tool_use_id"]
        if use_id not in called:
            raise fail(
                f"{use_id!r} answers no tool_use of the previous assistant message (an "
                "orphaned tool_result)",
                index,
                f"content[{j}].tool_use_id",
            )
        if use_id in results:
            raise fail(f"{use_id!r} is already answered", index, f"content[{j}].tool_use_id")
        results.add(use_id)
        if other is not None:
            raise fail(
                f"comes after content[{other}]; the API takes a turn's tool_result blocks "
                "first, before its text and other blocks",
                index,
                f"content[{j}]",
            )


# The call block each kind of server tool result answers.
_SERVER_USE = {"mcp_tool_result": "mcp_tool_use"}


def _check_server_pairs(entries: Sequence[Mapping[str, Any]]) -> None:
    """Each tool the API ran has its result after its call, in the same assistant turn, or in a
    later one while the code it runs waits on client tools it called (programmatic tool calling:
    each turn between holds a ``tool_use`` whose ``caller`` names it); only the last message
    may leave a call waiting otherwise. Each result answers one such call, once, and each client
    call such code made names one still waiting."""
    uses: dict[str, str] = {}  # id -> the block type that made the call
    waiting: dict[str, tuple[int, int]] = {}  # unanswered calls -> message index, block index
    for index, entry in enumerate(entries):
        if entry["role"] != "assistant":
            continue
        blocks = _blocks(entry)
        for j, block in enumerate(blocks):
            kind = block["type"]
            if kind in ("server_tool_use", "mcp_tool_use"):
                if block["id"] in uses:
                    raise fail(
                        f"{block['id']!r} repeats the id of an earlier {kind}",
                        index,
                        f"content[{j}].id",
                    )
                uses[block["id"]] = kind
                waiting[block["id"]] = (index, j)
            elif is_provider_tool_result(block):
                _answer(block, uses, waiting, index, f"content[{j}].tool_use_id")
            elif kind == "tool_use" and (run := _caller(block)) is not None and run not in waiting:
                raise fail(
                    f"{run!r} is no server tool before it still waiting for its result (a call "
                    "made by the code a server tool runs goes with that tool's call)",
                    index,
                    f"content[{j}].caller.tool_id",
                )
        callers = {_caller(b) for b in blocks if b["type"] == "tool_use"}
        for use_id, (at, j) in waiting.items():
            if use_id not in callers and index + 1 < len(entries):
                later = (
                    "" if at == index else f" nor in message {index}, which calls no tool for it"
                )
                raise fail(
                    f"{uses[use_id]} {use_id!r} has no result after it in its message{later} "
                    "(only the last message, or code waiting on the client tools it called, may "
                    "leave a server tool's call waiting)",
                    at,
                    f"content[{j}]",
                )


def _answer(
    block: Mapping[str, Any],
    uses: Mapping[str, str],
    waiting: dict[str, tuple[int, int]],
    index: int,
    field: str,
) -> None:
    use_id, kind = block["tool_use_id"], block["type"]
    wanted = _SERVER_USE.get(kind, "server_tool_use")
    if uses.get(use_id) != wanted:
        raise fail(f"{use_id!r} answers no {wanted} before it (an orphaned {kind})", index, field)
    if use_id not in waiting:
        raise fail(f"{use_id!r} is already answered", index, field)
    del waiting[use_id]


def _caller(block: Mapping[str, Any]) -> object:
    """The id of the server tool whose code made a client ``tool_use`` (``None``: the model)."""
    caller = block.get("caller")
    return caller.get("tool_id") if isinstance(caller, Mapping) else None
