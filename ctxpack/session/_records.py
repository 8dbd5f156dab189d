"""What a session records about each tool call and each tool output."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from .._internal.jsontext import read_json
from .._internal.tool_items import shell_command
from .._internal.views import FileRegion


@dataclass(frozen=True)
class FilterRecord:
    """What the session did with one tool output: the structured, auditable filtering decision.

    The results of the tools the provider ran (an MCP server's tool, code execution, a web
    fetch), which come back inside the assistant's turn, get a record each too: its
    ``message_id`` is that turn's and its ``result_id`` the result's own pairing id.

    Attributes:
        message_id: The tool message's id (for a provider tool's result, the id of the
            assistant message that holds it).
        kind: The kind of output detected (``"test_run"``, ``"file_view"``..., ``"short"``).
        shortened: Whether the compact record holds a shortened version.
        artifact: The stored original's id, when shortened.
        tokens_before: The raw message's tokens (framing included); for a provider tool's
            result, its turn's tokens before this result was shortened.
        tokens_after: The compact message's tokens; for a provider tool's result, its turn's
            tokens after.
        reason: Why, in words.
        tool: The tool's name, when known (for a provider tool's result, the name of its
            paired use: ``"bash_code_execution"``, an MCP tool's own name...).
        command: The command, when known.
        result_id: For the result of a tool the provider ran, its pairing id (an Anthropic
            block's ``tool_use_id``, a Responses API item's ``id``); ``None`` for a tool
            message.
    """

    message_id: str
    kind: str
    shortened: bool
    artifact: str | None
    tokens_before: int
    tokens_after: int
    reason: str
    tool: str | None = None
    command: str | None = None
    result_id: str | None = None


# A record's key among a session's records: a tool message's id, or (the assistant message's
# id, the result's id) for the result of a tool the provider ran, many of which may share a
# message.
RecordKey = str | tuple[str, str]


def encoded_record(record: FilterRecord) -> dict[str, Any]:
    """``record`` as JSON for a store's entry, ``result_id`` only when it has one: a tool
    message's record is then as the releases reading format 2 wrote and read it."""
    data = asdict(record)
    if record.result_id is None:
        del data["result_id"]
    return data


def record_key(record: FilterRecord) -> RecordKey:
    if record.result_id is None:
        return record.message_id
    return (record.message_id, record.result_id)


@dataclass(frozen=True)
class Call:
    tool: str
    command: str | None
    goal: str
    region: FileRegion | None = None  # the file region it shows, when it is a file view
    # For a bare `pwd`, the stretch of the shell's life it ran in (see ShellFolders).
    pwd_within: str | None = None


def command_of(arguments: str) -> str | None:
    """The command line of a shell-like tool call: its ``command``/``cmd`` argument, or the
    ``commands`` of its ``action`` (the Responses API's shell tool), run one after the other."""
    try:
        args = read_json(arguments) if arguments.strip() else {}
    except ValueError:
        return None
    shell = shell_command(args.get("action")) if isinstance(args, Mapping) else None
    if shell is not None:
        return shell
    if isinstance(args, Mapping):
        for key in ("command", "cmd", "script", "path", "file_path"):
            value = args.get(key)
            if isinstance(value, str):
                return value
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return " ".join(value)
    return None
