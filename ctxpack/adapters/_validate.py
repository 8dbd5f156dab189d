"""Validate provider payloads before they reach a provider (or ctxpack).

Both validators raise :class:`~ctxpack.errors.InvalidMessageError` at the first problem, naming
the message index and the field (``content[1].tool_use_id``), with what is valid instead. With
``tool_pairing=True`` (the default) they also check what providers reject about tool exchanges:
a tool result whose call is not there, a call that never got its result, and for Anthropic the
order of turns. :func:`ctxpack.pack` runs them with ``tool_pairing=False``: it repairs pairing
itself by dropping what would be orphaned, and records why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._internal.arguments import flag, json_type_name, shown
from .._internal.compaction import check_openai_compaction, is_openai_compaction
from .._internal.part_fields import CHECKED_PART_TYPES, check_part_fields
from .._internal.part_texts import is_provider_tool_result
from .._internal.reasoning import check_reasoning
from .._internal.tool_items import SERVER_ITEMS
from ..errors import InvalidMessageError  # noqa: F401 (the examples catch it)
from ..sdk import RESPONSES_META, coerce_messages, coerce_value
from ._fields import NO_ANTHROPIC_AUDIO, refuse_audio_reply
from ._fields import require_str as _require_str
from ._fields import typed_entry as _typed_entry
from ._sources import (
    RESULT_ONLY_BLOCKS,
    check_described,
    check_result_only,
    check_source,
    check_tool_use,
)
from ._turns import check_anthropic_turns
from ._turns import fail as _fail

__all__ = ["validate_anthropic", "validate_openai"]

OPENAI_ROLES = ("system", "developer", "user", "assistant", "tool")
# Chat Completions part types, plus the Responses API spellings ctxpack also reads.
OPENAI_PART_TYPES = frozenset(
    {
        *("text", "image_url", "input_audio", "file", "refusal"),
        *("input_text", "input_image", "input_file"),
        # A reasoning model's thoughts, in the assistant message they led to (see ctxpack.sdk),
        # and the calls of the tools OpenAI ran in that turn.
        "reasoning",
        *SERVER_ITEMS,
    }
)

ANTHROPIC_ROLES = ("user", "assistant")
# Block types a request may carry, and the role that may carry each (None: either role).
ANTHROPIC_BLOCKS: Mapping[str, str | None] = {
    "text": None,
    "image": "user",
    "document": "user",
    "search_result": "user",
    "tool_use": "assistant",
    "tool_result": "user",
    "thinking": "assistant",
    "redacted_thinking": "assistant",
    "server_tool_use": "assistant",
    "web_search_tool_result": "assistant",
    # The other server tools' results, as the API returns them in an assistant turn.
    "web_fetch_tool_result": "assistant",
    "code_execution_tool_result": "assistant",
    "bash_code_execution_tool_result": "assistant",
    "text_editor_code_execution_tool_result": "assistant",
    "tool_search_tool_result": "assistant",
    "advisor_tool_result": "assistant",
    # The MCP connector's call, its result and the tool listing it fetched; a fallback hop's
    # mark. The API returns them in an assistant turn and takes them back as they came.
    "mcp_tool_use": "assistant",
    "mcp_tool_result": "assistant",
    "mcp_tool_listing": "assistant",
    "fallback": "assistant",
    "container_upload": None,
    # The summary server-side compaction returns; sent back as it came, in either role.
    "compaction": None,
}
# What a tool_result's content list may hold.
_TOOL_RESULT_BLOCKS = frozenset({"text", "image", "document", "search_result"})


def _check_list(messages: Any, what: str) -> Sequence[Any]:
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise _fail(
            f"expected a list of {what} messages, got {json_type_name(messages)}", None, None
        )
    return messages


# --------------------------------------------------------------------------------------- OpenAI


# What a Responses API function_call_output may hold beside text (a screenshot a tool took),
# read as these parts; Chat Completions' tool message takes text alone.
_OUTPUT_MEDIA = frozenset({"image_url", "file", "input_image", "input_file"})


def _check_openai_parts(parts: list[Any], index: int, role: str, output: bool = False) -> None:
    if not parts:
        raise _fail("an empty list of parts; give at least one part or a string", index, "content")
    for j, part in enumerate(parts):
        field = f"content[{j}]"
        kind = part.get("type") if isinstance(part, Mapping) else None
        if is_openai_compaction(part):
            # OpenAI's compaction item, in the assistant message ctxpack made of it (see
            # ctxpack.sdk); Anthropic's block of the same type holds its summary in content.
            check_openai_compaction(part, index, field, role)
            continue
        if isinstance(kind, str) and kind not in OPENAI_PART_TYPES and kind in ANTHROPIC_BLOCKS:
            # provider= says whose rules the result follows, not how the input is written.
            raise _fail(
                f"an Anthropic {kind!r} block, not a Chat Completions part: convert "
                "Anthropic messages with ctxpack.from_anthropic(messages, system=...) first",
                index,
                f"{field}.type",
            )
        kind = _typed_entry(part, "part", sorted(OPENAI_PART_TYPES), index, field)
        if kind in CHECKED_PART_TYPES:
            check_part_fields(part, index, field)
        elif kind == "reasoning":
            check_reasoning(part, index, field, role)
        elif kind in SERVER_ITEMS and role != "assistant":
            raise _fail(f"a {kind} part belongs to an assistant message, not {role}", index, field)
        if output and kind in _OUTPUT_MEDIA:
            continue
        if role in ("system", "developer", "tool") and kind not in ("text", "input_text"):
            raise _fail(f"a {role} message may only hold text parts, not {kind!r}", index, field)


def _check_openai_function(
    function: Any, index: int, field: str, *, what: str = "tool call", custom: bool = False
) -> None:
    """A function call's name and JSON arguments, or a custom tool call's name and input
    (free text)."""
    shape = '"input": "<text>"' if custom else '"arguments": "<JSON string>"'
    if not isinstance(function, Mapping):
        raise _fail(
            f'must be an object {{"name": ..., {shape}}}, got {json_type_name(function)}',
            index,
            field,
        )
    _require_str(function, "name", index, f"{field}.name", empty=False)
    if custom:
        _require_str(function, "input", index, f"{field}.input")
        return
    if "arguments" not in function:
        raise _fail(
            f'a {what} needs its arguments as a JSON string ("{{}}" for none)',
            index,
            f"{field}.arguments",
        )
    if not isinstance(function["arguments"], str):
        raise _fail(
            f"must be a JSON string, got {json_type_name(function['arguments'])}; "
            "encode it with json.dumps",
            index,
            f"{field}.arguments",
        )


def _role_of(entry: Any, index: int) -> Any:
    """The entry's role, after checking that it is an object that has one."""
    if not isinstance(entry, Mapping):
        raise _fail(f"a message must be an object, got {json_type_name(entry)}", index, None)
    role = entry.get("role")
    if role is None:
        raise _fail("is missing", index, "role")
    return role


def check_openai_tool_calls(entry: Mapping[str, Any], role: Any, index: int) -> None:
    """The OpenAI ``tool_calls`` of a message, if it has any: each with a non-empty id and a
    function (or custom tool) call."""
    calls = entry.get("tool_calls")
    if calls is None:
        return
    if role != "assistant":
        raise _fail(f"only an assistant message may call tools, not {role}", index, "tool_calls")
    if not isinstance(calls, list):
        raise _fail(f"must be a list, got {json_type_name(calls)}", index, "tool_calls")
    for k, call in enumerate(calls):
        field = f"tool_calls[{k}]"
        if not isinstance(call, Mapping):
            raise _fail(f"a tool call must be an object, got {json_type_name(call)}", index, field)
        # An empty id could never be answered (a tool message needs a non-empty one).
        _require_str(call, "id", index, f"{field}.id", empty=False)
        kind = call.get("type", "function")
        if kind not in ("function", "custom"):
            raise _fail(f"{shown(kind)} is not 'function' or 'custom'", index, f"{field}.type")
        if kind not in call:
            raise _fail("is missing", index, f"{field}.{kind}")
        _check_openai_function(call[kind], index, f"{field}.{kind}", custom=kind == "custom")


def _check_reply_fields(entry: Mapping[str, Any], index: int) -> None:
    """An assistant's ``refusal`` (a string) and ``audio`` reply (``{"id": ...}``, by which
    Chat Completions takes it back), each of which may be null."""
    if entry.get("refusal") is not None and not isinstance(entry["refusal"], str):
        raise _fail(f"must be a string, got {json_type_name(entry['refusal'])}", index, "refusal")
    audio = entry.get("audio")
    if audio is None:
        return
    if not isinstance(audio, Mapping):
        raise _fail(
            f'must be an object like {{"id": "audio_..."}}, got {json_type_name(audio)}',
            index,
            "audio",
        )
    _require_str(audio, "id", index, "audio.id", empty=False)


def check_openai_message(entry: Any, index: int) -> None:
    role = _role_of(entry, index)
    if role == "function":
        raise _fail(
            "the legacy 'function' role is not supported; answer tool calls with role 'tool' "
            "and a tool_call_id",
            index,
            "role",
        )
    if role not in OPENAI_ROLES:
        raise _fail(f"{shown(role)} is not one of {', '.join(OPENAI_ROLES)}", index, "role")
    if "name" in entry and not isinstance(entry["name"], str):
        raise _fail(f"must be a string, got {json_type_name(entry['name'])}", index, "name")
    check_openai_tool_calls(entry, role, index)
    if "function_call" in entry and entry["function_call"] is not None:
        if role != "assistant":
            raise _fail(
                f"only an assistant message may call a function, not {role}",
                index,
                "function_call",
            )
        _check_openai_function(entry["function_call"], index, "function_call", what="function call")
    if role == "assistant":
        _check_reply_fields(entry, index)
    if role == "tool":
        if "tool_call_id" not in entry or entry["tool_call_id"] is None:
            raise _fail(
                "is missing; a tool message needs the id of the call it answers",
                index,
                "tool_call_id",
            )
        if not isinstance(entry["tool_call_id"], str) or not entry["tool_call_id"]:
            raise _fail("must be a non-empty string", index, "tool_call_id")
    content = entry.get("content")
    if content is None:
        may_omit = role == "assistant" and any(
            entry.get(k) for k in ("tool_calls", "function_call", "refusal", "audio")
        )
        if not may_omit:
            raise _fail(
                "is missing (only an assistant message that calls tools may omit it)",
                index,
                "content",
            )
    elif isinstance(content, list):
        metadata = entry.get("metadata")
        output = role == "tool" and isinstance(metadata, Mapping) and RESPONSES_META in metadata
        _check_openai_parts(content, index, role, output)
    elif not isinstance(content, str):
        raise _fail(
            f"must be a string or a list of parts, got {json_type_name(content)}", index, "content"
        )


# A dict of only role (not tool), string content and optional string id and name passes every
# rule of check_openai_message by construction: ensure_messages() may skip the check for it.
check_openai_message.passes_plain_dicts = True  # type: ignore[attr-defined]
# It checks each OpenAI content part's fields as Message's validation does (check_part_fields):
# the message made of a dict it passed need not check them again.
check_openai_message.checks_parts = True  # type: ignore[attr-defined]


def validate_openai(messages: Any, *, tool_pairing: bool = True) -> None:
    """Check an OpenAI Chat Completions message list; raise at the first problem.

    Args:
        messages: The ``messages`` list of a Chat Completions request: dicts, or the OpenAI
            SDK's own objects (``response.choices[0].message``).
        tool_pairing: Also check that every tool message answers a call made by an earlier
            assistant message, and that every call is answered (a trailing assistant message
            may still be waiting for its results).

    Raises:
        InvalidMessageError: naming the message index and the field.

    Example:
        >>> try:
        ...     validate_openai([{"role": "tool", "content": "42"}])
        ... except InvalidMessageError as err:
        ...     print(err.index, err.field)
        0 tool_call_id
    """
    flag(tool_pairing, "tool_pairing")
    entries = coerce_messages(_check_list(messages, "OpenAI"))
    for index, entry in enumerate(entries):
        check_openai_message(entry, index)
    if tool_pairing:
        _check_openai_pairing(entries)


def _check_openai_pairing(entries: Sequence[Mapping[str, Any]]) -> None:
    pending: dict[str, int] = {}  # call id -> index of the assistant message that made it
    answered: set[str] = set()
    seen_calls: dict[str, int] = {}
    for index, entry in enumerate(entries):
        if entry["role"] == "tool":
            call_id = entry["tool_call_id"]
            if call_id not in seen_calls:
                raise _fail(
                    f"{call_id!r} answers no tool call of an earlier assistant message (an "
                    "orphaned tool result)",
                    index,
                    "tool_call_id",
                )
            if call_id in answered:
                raise _fail(f"{call_id!r} is already answered", index, "tool_call_id")
            answered.add(call_id)
            pending.pop(call_id, None)
            continue
        _report_unanswered(pending, entries)
        for k, call in enumerate(entry.get("tool_calls") or ()):
            if call["id"] in seen_calls:
                raise _fail(
                    f"{call['id']!r} repeats the id of a call in message {seen_calls[call['id']]}",
                    index,
                    f"tool_calls[{k}].id",
                )
            seen_calls[call["id"]] = index
            pending[call["id"]] = index
    # Calls of the last assistant message may still be waiting for their results.
    last_assistant = len(entries) - 1
    if any(i != last_assistant for i in pending.values()):
        _report_unanswered(pending, entries)


def _report_unanswered(pending: Mapping[str, int], entries: Sequence[Mapping[str, Any]]) -> None:
    for call_id, index in pending.items():
        calls = entries[index].get("tool_calls") or []
        k = next(i for i, c in enumerate(calls) if c["id"] == call_id)
        raise _fail(
            f"tool call {call_id!r} has no tool message answering it before the next message "
            "(only a trailing assistant message may wait for its results)",
            index,
            f"tool_calls[{k}]",
        )


# ------------------------------------------------------------------------------------ Anthropic


def _check_anthropic_block(block: Any, index: int | None, field: str, role: str | None) -> str:
    """A block's type and fields, and (unless ``role`` is None) that ``role`` may hold it."""
    kind = _typed_entry(block, "block", list(ANTHROPIC_BLOCKS), index, field)
    allowed = ANTHROPIC_BLOCKS[kind]
    if allowed is not None and role is not None and allowed != role:
        article = "an" if allowed == "assistant" else "a"
        raise _fail(
            f"a {kind} block belongs in {article} {allowed} message, not {role}", index, field
        )
    if kind == "text":
        _require_str(block, "text", index, f"{field}.text")
        check_described(block, kind, index, field)
    elif kind in ("image", "document"):
        check_source(block.get("source"), kind, index, f"{field}.source")
        if kind == "document":
            check_described(block, kind, index, field)
    elif kind == "search_result":
        _require_str(block, "source", index, f"{field}.source")
        _require_str(block, "title", index, f"{field}.title")
        check_described(block, kind, index, field)
        inner = block.get("content")
        if not isinstance(inner, list):
            raise _fail(
                f"must be a list of text blocks, got {json_type_name(inner)}",
                index,
                f"{field}.content",
            )
        for k, sub in enumerate(inner):
            sub_kind = _check_anthropic_block(sub, index, f"{field}.content[{k}]", "user")
            if sub_kind != "text":
                raise _fail(
                    f"a search_result holds text blocks only, not {sub_kind!r}",
                    index,
                    f"{field}.content[{k}].type",
                )
    elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        check_tool_use(block, kind, index, field)
    elif kind == "tool_result":
        _require_str(block, "tool_use_id", index, f"{field}.tool_use_id")
        if "is_error" in block and not isinstance(block["is_error"], bool):
            raise _fail("must be true or false", index, f"{field}.is_error")
        inner = block.get("content")
        if isinstance(inner, list):
            for k, sub in enumerate(inner):
                sub_field = f"{field}.content[{k}]"
                # A type that is not a string (a list) is named by the block check below.
                sub_type = sub.get("type") if isinstance(sub, Mapping) else None
                if isinstance(sub_type, str) and sub_type in RESULT_ONLY_BLOCKS:
                    check_result_only(sub, index, sub_field)
                    continue
                sub_kind = _check_anthropic_block(sub, index, sub_field, "user")
                if sub_kind not in _TOOL_RESULT_BLOCKS:
                    raise _fail(
                        f"a tool_result may hold "
                        f"{', '.join(sorted(_TOOL_RESULT_BLOCKS | RESULT_ONLY_BLOCKS.keys()))} "
                        f"blocks, not {sub_kind!r}",
                        index,
                        f"{sub_field}.type",
                    )
        elif inner is not None and not isinstance(inner, str):
            raise _fail(
                f"must be a string or a list of blocks, got {json_type_name(inner)}",
                index,
                f"{field}.content",
            )
    elif is_provider_tool_result(block):  # a server tool's result: paired by its call's id
        _require_str(block, "tool_use_id", index, f"{field}.tool_use_id")
    elif kind == "thinking":
        _require_str(block, "thinking", index, f"{field}.thinking")
        _require_str(block, "signature", index, f"{field}.signature")
    elif kind == "redacted_thinking":
        _require_str(block, "data", index, f"{field}.data")
    elif kind == "compaction":
        _check_compaction(block, index, field)
    return kind


def _check_compaction(block: Mapping[str, Any], index: int | None, field: str) -> None:
    """A compaction block's summary: a non-empty string (the API refuses an empty one, and
    every request sending it back would fail), or null, the API's mark of a compaction that
    failed, sent back as a no-op."""
    if block.get("content", "") is None:
        return
    _require_str(block, "content", index, f"{field}.content")
    if not block["content"]:
        raise _fail(
            "a compaction block's summary must not be empty (null marks a failed one)",
            index,
            f"{field}.content",
        )


def check_sent_blocks(content: Any, index: int) -> None:
    """The parts of a message's content that :func:`~ctxpack.adapters.to_anthropic` sends as
    they are (all but the OpenAI parts it translates): each must be an object with a string
    ``type``, and a block of a type the API defines must hold the fields it requires, of their
    types. A type ctxpack does not know (one newer than it) goes as it is, for the API to judge.
    Where a block sits (its role, the turn order) is :func:`ctxpack.pack`'s to repair."""
    for j, kind in enumerate(check_block_types(content, index)):
        if kind == "text" or (kind in ANTHROPIC_BLOCKS and kind not in OPENAI_PART_TYPES):
            _check_anthropic_block(content[j], index, f"content[{j}]", None)


def check_block_types(content: Any, index: int) -> list[str]:
    """The ``type`` of each part of a message's ``content`` (none for a string), after checking
    that each part is an object with a string ``type``."""
    if not isinstance(content, list):
        return []
    kinds: list[str] = []
    for j, block in enumerate(content):
        kind = block.get("type") if isinstance(block, Mapping) else None
        if not isinstance(kind, str):
            _typed_entry(block, "block", list(ANTHROPIC_BLOCKS), index, f"content[{j}]")
        kinds.append(str(kind))
    return kinds


def _check_anthropic_message(entry: Any, index: int) -> None:
    role = _role_of(entry, index)
    if role == "system":
        raise _fail(
            "Anthropic takes the system prompt as the payload's 'system', not as a message",
            index,
            "role",
        )
    if role not in ANTHROPIC_ROLES:
        raise _fail(f"{shown(role)} is not one of user, assistant", index, "role")
    if role == "assistant":
        # OpenAI's audio reply, sent to Claude: named, not taken for a turn without content
        # (nor, with its transcript, sent as if the model had written it).
        refuse_audio_reply(entry, index, "Anthropic input", why=NO_ANTHROPIC_AUDIO)
    if "content" not in entry or entry["content"] is None:
        raise _fail("is missing", index, "content")
    content = entry["content"]
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise _fail(
            f"must be a string or a list of blocks, got {json_type_name(content)}", index, "content"
        )
    if not content:
        raise _fail("an empty list of blocks; give at least one block", index, "content")
    for j, block in enumerate(content):
        _check_anthropic_block(block, index, f"content[{j}]", role)


def _check_anthropic_system(system: Any) -> None:
    if system is None or isinstance(system, str):
        return
    if not isinstance(system, list):
        raise _fail(
            f"must be a string or a list of text blocks, got {json_type_name(system)}",
            None,
            "system",
        )
    for j, block in enumerate(system):
        kind = _check_anthropic_block(block, None, f"system[{j}]", "user")
        if kind != "text":
            raise _fail(
                f"the system prompt holds text blocks only, not {kind!r}", None, f"system[{j}]"
            )


def validate_anthropic(payload: Any, *, tool_pairing: bool = True) -> None:
    """Check an Anthropic Messages payload; raise at the first problem.

    Args:
        payload: ``{"system": ..., "messages": [...]}`` (``system`` optional: a string or a list
            of text blocks), or just the ``messages`` list.
        tool_pairing: Also check what the API rejects about the turns as a whole: the first
            message is a user message, roles alternate, no content is empty (but a last
            assistant message's), every ``tool_result`` answers a ``tool_use`` of the assistant
            message right before it and comes before the other blocks of its message, and every
            ``tool_use`` gets its result in the next message (unless its assistant message is
            the last one); a ``server_tool_use`` or ``mcp_tool_use`` gets it after it in its
            message (or turns later while the code it runs waits on client tools it called).

    Raises:
        InvalidMessageError: naming the message index (``None`` for the payload itself or the
            system prompt) and the field.

    Example:
        >>> payload = {"messages": [{"role": "user", "content": [{"type": "video"}]}]}
        >>> try:
        ...     validate_anthropic(payload)
        ... except InvalidMessageError as err:
        ...     print(err.index, err.field)
        0 content[0].type
    """
    if isinstance(payload, Mapping):
        # Other request fields (model, tools, max_tokens...) are the caller's business.
        if "messages" not in payload:
            raise _fail("is missing", None, "messages")
        _check_anthropic_system(coerce_value(payload.get("system"), None, "system"))
        messages: Any = payload["messages"]
    else:
        messages = payload
    flag(tool_pairing, "tool_pairing")
    entries = coerce_messages(_check_list(messages, "Anthropic"))
    for index, entry in enumerate(entries):
        _check_anthropic_message(entry, index)
    if tool_pairing:
        check_anthropic_turns(entries)
