"""The official SDKs' own objects, accepted wherever a dict is.

The ``openai`` and ``anthropic`` Python SDKs return pydantic models: OpenAI's
``ChatCompletionMessage`` (``response.choices[0].message``), Anthropic's content blocks
(``response.content``: ``TextBlock``, ``ToolUseBlock``, ``ThinkingBlock``...). Their own tutorials
append those objects to the history as they are. ctxpack turns each into the dict the SDK itself
would send for it, through the SDK's own serialisation (``model_dump(mode="json", by_alias=True,
exclude_unset=True)``, exactly what the SDK does with a model found in a request), so nothing the
API returned is lost and the request ctxpack builds carries the same bytes the SDK would have sent.

Neither SDK is imported: an object is recognised by the package its class comes from, so this
module costs nothing when the SDKs are not installed.

What is converted:

- a tool call the model made, given to :meth:`ctxpack.Session.handle` (OpenAI's
  ``ChatCompletionMessageToolCall``, Anthropic's ``ToolUseBlock``...): into its dict;

- anywhere inside a message dict (``content`` blocks, ``tool_calls``, ``system`` blocks...): any
  SDK model, into its dict;
- as a message: an OpenAI ``ChatCompletionMessage``; an Anthropic ``Message`` (the response
  itself: its ``role`` and ``content``, the only fields a request message has); the OpenAI Responses
  API items that map onto a chat message (``message``, ``function_call``, ``function_call_output``,
  and a custom tool's ``custom_tool_call`` and ``custom_tool_call_output``, which become a
  ``{"type": "custom", "custom": {"name", "input"}}`` tool call and its tool message; the
  calls and outputs of the built-in tools the client runs, ``shell_call``,
  ``local_shell_call``, ``apply_patch_call`` and ``computer_call``, a call of the tool
  ``shell``, ``local_shell``, ``apply_patch`` or ``computer`` and its result, see
  :mod:`ctxpack._internal.tool_items`), with the original item kept in
  ``metadata["openai_responses"]``; the same items written as dicts too. A ``reasoning`` item,
  and the call of a tool OpenAI ran (``web_search_call``, ``file_search_call``,
  ``code_interpreter_call``, ``mcp_call``, ``mcp_list_tools``), becomes a part of the assistant
  message it leads to, sent back verbatim in its place. Parallel calls (consecutive call items)
  are joined into one assistant message by the functions that see the whole list
  (:func:`ctxpack.from_openai`, :func:`ctxpack.pack`, the validators, the client wrappers,
  :meth:`ctxpack.Session.extend` within its batch), and so are an assistant's ``message``
  item and the calls after it when reasoning led to them: one response, sent back with its ids.

Anything else (a whole ``ChatCompletion``, a content block given as a message, a Responses
item that has no chat message, such as ``image_generation_call``, or an ``item_reference`` to
an item only OpenAI stores) raises
:class:`~ctxpack.errors.InvalidMessageError` naming the index, the field and what to pass instead.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ._internal import tool_items
from ._internal.arguments import (
    MAX_NESTING,
    TooDeep,
    TooLongInt,
    check_nesting,
    too_deep_error,
)
from ._internal.compaction import is_openai_compaction
from ._internal.copies import copied_fields
from ._internal.reasoning import REASONING
from .errors import InvalidMessageError

__all__: list[str] = []

# Where a message made from an OpenAI Responses API item keeps that item, verbatim.
RESPONSES_META = "openai_responses"
# The types of the Responses API's input items: as dicts without a role, those ctxpack carries
# are converted (see _openai_message) and the others refused by name.
_RESPONSES_ITEMS = frozenset(
    {
        "function_call",
        "function_call_output",
        "reasoning",
        "item_reference",
        "file_search_call",
        "web_search_call",
        "computer_call",
        "computer_call_output",
        "code_interpreter_call",
        "image_generation_call",
        "local_shell_call",
        "local_shell_call_output",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "custom_tool_call",
        "custom_tool_call_output",
        "shell_call",
        "shell_call_output",
        "apply_patch_call",
        "apply_patch_call_output",
        "tool_search_call",
        "tool_search_output",
        "additional_tools",
        "configuration_update",
        "compaction",
        "compaction_trigger",
        "program",
        "program_output",
    }
)
_RESPONSES_PARTS = frozenset({"input_text", "output_text", "refusal", "input_image", "input_file"})

_SDK_PACKAGES = frozenset({"openai", "anthropic"})
_SCALARS = frozenset({str, int, float, bool, type(None)})
# Fields the SDKs fill in locally (structured-output parsing), not part of what the API sent.
_LOCAL_FIELDS = frozenset({"parsed", "parsed_arguments"})


class SDKObject(Protocol):
    """What type checkers accept beside dicts: a pydantic model, such as the SDKs' objects.

    At run time only the ``openai`` and ``anthropic`` packages' models are converted; any other
    object is refused with an error naming its index.
    """

    def model_dump(self, *args: Any, **kwargs: Any) -> dict[str, Any]: ...


def is_sdk_object(value: Any) -> bool:
    """Whether ``value`` is a model from the ``openai`` or ``anthropic`` package."""
    package = type(value).__module__.partition(".")[0]
    return package in _SDK_PACKAGES and callable(getattr(value, "model_dump", None))


def _dump(value: Any, index: int | None, field: str | None) -> dict[str, Any]:
    """The dict the SDK sends for ``value`` (its request serialisation), nothing added."""
    # The SDKs' structured-output models hold a ``parsed`` value typed loosely; it is dropped
    # below, so pydantic's warning about serialising it says nothing useful.
    parsed = type(value).__name__.startswith("Parsed")
    try:
        dumped = value.model_dump(
            mode="json",
            by_alias=True,
            exclude_unset=True,
            exclude=getattr(value, "__api_exclude__", None),
            warnings=not parsed,
        )
    except Exception as exc:  # the SDK's serialiser raises pydantic's own errors
        raise InvalidMessageError(
            f"{field + ': ' if field else ''}cannot serialise {type(value).__name__} "
            f"with its SDK ({exc})",
            index=index,
            field=field,
        ) from exc
    if not isinstance(dumped, dict):  # pragma: no cover - pydantic models dump to dicts
        raise InvalidMessageError(
            f"{type(value).__name__} did not serialise to an object", index=index, field=field
        )
    if parsed:
        _drop_local_fields(dumped)
    return dumped


def _drop_local_fields(data: Any) -> None:
    if isinstance(data, dict):
        for key in _LOCAL_FIELDS & data.keys():
            del data[key]
        for inner in data.values():
            _drop_local_fields(inner)
    elif isinstance(data, list):
        for inner in data:
            _drop_local_fields(inner)


def _holds_sdk_object(value: Any, depth: int = 0) -> bool:
    """Whether an SDK model is anywhere inside ``value``: one pass, no allocation, because
    every plain message dict goes through it. The same pass refuses (:class:`TooDeep`) what
    nests deeper than ``MAX_NESTING`` (``depth`` is the level of ``value``), before any
    recursive copy or validation could exhaust the stack on it."""
    kind = type(value)
    if kind in _SCALARS:
        return False
    if kind is dict:
        values: Any = value.values()
    elif kind is list or kind is tuple:
        values = value
    elif isinstance(value, Mapping) and not is_sdk_object(value):
        values = value.values()
    else:
        return is_sdk_object(value)
    if depth >= MAX_NESTING:
        raise TooDeep
    # A loop rather than any(<generator>): this runs on every message dict, and the generator
    # costs more than the check itself.
    for inner in values:
        if type(inner) not in _SCALARS and _holds_sdk_object(inner, depth + 1):
            return True
    return False


def coerce_value(value: Any, index: int | None = None, field: str | None = None) -> Any:
    """``value`` with every SDK model inside it replaced by its dict.

    Returns ``value`` itself (the same object) when it holds no SDK model, so plain input keeps
    its identity and costs one pass over its values.
    """
    try:
        if not _holds_sdk_object(value):
            return value
    except TooDeep:
        raise too_deep_error(index, field or "value") from None
    return _coerced(value, index, field)


def _coerced(value: Any, index: int | None, field: str | None) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict or (isinstance(value, Mapping) and not is_sdk_object(value)):
        changed: dict[str, Any] | None = None
        for key, inner in value.items():
            if type(inner) in _SCALARS:
                continue
            new = _coerced(inner, index, _join(field, str(key)))
            if new is not inner:
                if changed is None:
                    changed = dict(value)
                changed[key] = new
        return value if changed is None else changed
    if kind is list or kind is tuple:
        items: list[Any] | None = None
        for j, inner in enumerate(value):
            if type(inner) in _SCALARS:
                continue
            new = _coerced(inner, index, f"{field or ''}[{j}]")
            if new is not inner:
                if items is None:
                    items = list(value)
                items[j] = new
        if items is None:
            return value
        return items
    if is_sdk_object(value):
        return _coerced(_dump(value, index, field), index, field)
    return value


def _join(field: str | None, key: str) -> str:
    return f"{field}.{key}" if field else key


def coerce_tool_call(call: Any) -> Any:
    """A tool call the model made, as the dict its SDK sends: an OpenAI
    ``ChatCompletionMessageToolCall`` (``message.tool_calls[0]``) becomes ``{"id", "type":
    "function", "function": {"name", "arguments"}}``, an Anthropic ``ToolUseBlock``
    (``response.content[i]``) ``{"type": "tool_use", "id", "name", "input"}``, a Responses API
    ``function_call`` item ``{"type": "function_call", "call_id", "name", "arguments"}``.

    Anything else comes back as it is (a dict stays the same object).

    Raises:
        InvalidMessageError: the SDK cannot serialise the object (field ``call``).
    """
    return coerce_value(call, field="call")


def coerce_message(item: Any, index: int) -> Any:
    """One entry of a message list, with the SDKs' objects turned into plain dicts.

    A dict comes back unchanged (the same object) unless it holds SDK models; an SDK object
    that is a message becomes its message dict; anything else comes back as it is, for the
    caller's own checks to reject.

    Raises:
        InvalidMessageError: an SDK object that is not a message (index and field named, with
            what to pass instead).
    """
    if type(item) is dict:
        # A chat message has no "type": the test costs them a key lookup, not a call.
        if "type" in item and _is_responses_dict(item):
            # A Responses API item written as a dict (as OpenAI's guides write a
            # function_call_output), converted as the SDK's object is; a copy is kept, the
            # caller may edit its own.
            return _openai_message("item", _copied_item(item, index), index)
        # Inlined first level: every message dict of every cold pack comes through here.
        for key, inner in item.items():
            if type(inner) in _SCALARS:
                continue
            try:
                if _holds_sdk_object(inner, 1):
                    return _coerced(item, index, None)
            except TooDeep:
                raise too_deep_error(index, str(key)) from None
        return item
    if isinstance(item, Mapping) and not is_sdk_object(item):
        return coerce_value(item, index)
    if not is_sdk_object(item):
        return item
    package = type(item).__module__.partition(".")[0]
    dumped = _dump(item, index, None)
    if package == "anthropic":
        return _anthropic_message(type(item).__name__, dumped, index)
    return _openai_message(type(item).__name__, dumped, index)


def _copied_item(item: dict[str, Any], index: int) -> dict[str, Any]:
    """A deep copy of a Responses API item written as a dict, refused (naming the field) when
    it nests too deep to copy or holds a value that cannot be copied, as a message dict is."""
    for key, inner in item.items():
        try:
            check_nesting(inner, 1)
        except TooDeep:
            raise too_deep_error(index, str(key)) from None
        except TooLongInt:
            pass  # copied as any int is; the item's own checks name it where it matters
    return copied_fields(item, index)


def not_a_message(item: Any) -> str:
    """The error's text for an entry that is no message ctxpack reads: a LangChain message is
    told how to convert (``from_langchain``), anything else named by type."""
    name = type(item).__name__
    if type(item).__module__.partition(".")[0] in ("langchain_core", "langchain"):
        return (
            f"got LangChain {name}: convert the history with "
            "ctxpack.adapters.from_langchain(messages)"
        )
    return f"expected a Message or a dict, got {name}"


def _is_responses_dict(item: dict[str, Any]) -> bool:
    """Whether a message dict is a Responses API item: an item type without a role (no chat
    message has one), or a ``message`` item whose parts are the Responses API's own
    (``input_text``, ``output_text``...: an Anthropic response's dict is a ``message`` too, with
    ``text`` blocks)."""
    kind = item.get("type")
    if kind == "message":
        content = item.get("content")
        return (
            isinstance(content, list)
            and bool(content)
            and all(tool_items.item_type(p) in _RESPONSES_PARTS for p in content)
        )
    return "role" not in item and tool_items.item_type(item) in _RESPONSES_ITEMS


def _anthropic_message(name: str, dumped: dict[str, Any], index: int) -> dict[str, Any]:
    if dumped.get("type") == "message" and "role" in dumped:
        # A response: only role and content belong in a request message (id, model, usage,
        # stop_reason describe the call that produced it).
        return {"role": dumped["role"], "content": dumped.get("content", [])}
    kind = dumped.get("type")
    hint = (
        f"a {kind!r} content block is not a message; put it in one: "
        f'{{"role": "assistant", "content": [block, ...]}}'
        if isinstance(kind, str)
        else "expected a message"
    )
    raise InvalidMessageError(f"got Anthropic {name}: {hint}", index=index, field=None)


def _openai_message(name: str, dumped: dict[str, Any], index: int) -> dict[str, Any]:
    if "choices" in dumped:
        raise InvalidMessageError(
            f"got OpenAI {name}, a whole response: append response.choices[0].message",
            index=index,
            field=None,
        )
    if "message" in dumped and "role" not in dumped:
        raise InvalidMessageError(
            f"got OpenAI {name}: append its .message", index=index, field=None
        )
    kind = tool_items.item_type(dumped)  # an object built unvalidated may hold any type
    if kind is None and "role" in dumped:
        return dumped  # a Chat Completions message: already in request form
    meta = {RESPONSES_META: dumped}
    tool_items.check_fields(kind, dumped, index)
    if kind == REASONING or kind in tool_items.SERVER_ITEMS or is_openai_compaction(dumped):
        # A part of the assistant message it leads to (see coerce_messages), a compaction item
        # a message of its own; the part is a copy, the item in metadata stays as it came.
        return {"role": "assistant", "content": [copy.deepcopy(dumped)], "metadata": meta}
    if kind == "message" and "role" in dumped:
        content = dumped.get("content")
        out: dict[str, Any] = {
            "role": dumped["role"],
            "content": _responses_parts(content, index) if isinstance(content, list) else content,
            "metadata": meta,
        }
        return out
    if kind in _CALLS:
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [_tool_call(kind, dumped)],
            "metadata": meta,
        }
    if kind in _OUTPUTS:
        if kind == "computer_call_output":  # a screenshot: an image, counted as one
            output: Any = [tool_items.screenshot_part(dumped)]
        elif kind in tool_items.OUTPUTS:
            output = tool_items.output_text(dumped)
        else:
            output = dumped.get("output")
        return {
            "role": "tool",
            "tool_call_id": dumped.get(tool_items.call_key(dumped)),
            "content": _responses_parts(output, index) if isinstance(output, list) else output,
            "metadata": meta,
        }
    kind = dumped.get("type")
    got = (
        f"a Responses API {kind!r} item"
        if name == "item"
        else f"OpenAI {name} (a Responses API {kind!r} item)"
    )
    why = (
        "which names an item only OpenAI stores: ctxpack can neither count it nor tell the "
        "call or output it pairs with, to keep or drop them together; pass the item itself "
        "(from the response's output or client.responses.input_items.list)"
        if kind == "item_reference"
        else "which has no Chat Completions message; ctxpack packs message, reasoning, compaction, "
        "function_call, custom_tool_call, shell_call, local_shell_call, apply_patch_call, "
        "computer_call and their output items, and the calls of web search, file search, "
        "the code interpreter and MCP"
    )
    raise InvalidMessageError(f"got {got}, {why}", index=index, field="type")


def _tool_call(kind: str, item: dict[str, Any]) -> dict[str, Any]:
    """A Responses API call item as the Chat Completions tool call it is."""
    if kind in tool_items.CALLS:
        return tool_items.tool_call(item)
    name, call_id = item.get("name"), item.get("call_id")
    if kind == "custom_tool_call":
        # Chat Completions' custom tool call: its input is free text, not JSON.
        return {
            "id": call_id,
            "type": "custom",
            "custom": {"name": name, "input": item.get("input")},
        }
    function = {"name": name, "arguments": item.get("arguments")}
    return {"id": call_id, "type": "function", "function": function}


# The Responses API's calls that are a Chat Completions tool call (a function's, a custom
# tool's, a built-in tool's the client runs), and the items that answer them, a tool message.
_CALLS = frozenset({"function_call", "custom_tool_call", *tool_items.CALLS})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", *tool_items.OUTPUTS})
# The items joined with what follows them into one message (see joined_messages): the items
# that lead to their turn's message or calls, and parallel calls.
LEADING_ITEMS = frozenset({REASONING, *tool_items.SERVER_ITEMS})
JOINED_ITEMS = frozenset({*_CALLS, *LEADING_ITEMS})


def _responses_parts(parts: list[Any], index: int) -> list[dict[str, Any]]:
    """Responses API content parts as Chat Completions parts."""
    out: list[dict[str, Any]] = []
    for j, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind in ("output_text", "input_text"):
            out.append({"type": "text", "text": part.get("text", "")})
        elif kind == "refusal":
            out.append({"type": "refusal", "refusal": part.get("refusal", "")})
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            image: dict[str, Any] = {"url": part["image_url"]}
            if part.get("detail") is not None:
                image["detail"] = part["detail"]
            out.append({"type": "image_url", "image_url": image})
        elif kind == "input_file" and ("file_data" in part or "file_id" in part):
            keys = ("file_id", "file_data", "filename")
            out.append({"type": "file", "file": {k: part[k] for k in keys if k in part}})
        elif kind in ("input_image", "input_file"):
            # By file id or URL: kept as it is, as in a message without "type": the Responses
            # API takes it back, and it is counted as a document or an image all the same.
            out.append(dict(part))
        else:
            raise InvalidMessageError(
                f"content[{j}].type: Responses API part {kind!r} has no Chat Completions "
                "equivalent (text, refusal, images and files do)",
                index=index,
                field=f"content[{j}].type",
            )
    return out


def coerce_messages(entries: Sequence[Any], start: int = 0) -> Sequence[Any]:
    """:func:`coerce_message` over a list; the list itself when nothing needed converting.

    Consecutive Responses API ``function_call`` items (parallel calls) become one assistant
    message with all their tool calls, as Chat Completions requires; its
    ``metadata["openai_responses"]`` is then the list of the items. Errors name the index of
    an entry plus ``start`` (where the list goes in a longer history).
    """
    return joined_messages(entries, start)[0]


def joined_messages(entries: Sequence[Any], start: int = 0) -> tuple[Sequence[Any], list[int]]:
    """:func:`coerce_messages`, and for each message the index (plus ``start``) of the first
    entry it was made from: an error found in a joined message names the caller's entry."""
    out = [coerce_message(entry, start + index) for index, entry in enumerate(entries)]
    if all(a is b for a, b in zip(out, entries, strict=True)):
        return entries, list(range(start, start + len(entries)))
    joined: list[Any] = []
    origin: list[int] = []
    for index, message in enumerate(out, start):
        previous: Any = joined[-1] if joined else None
        if _is_responses_call(message) and (
            _is_responses_call(previous) or _says_before_calls(previous)
        ):
            joined[-1] = {
                **previous,
                "tool_calls": [*(previous.get("tool_calls") or ()), *message["tool_calls"]],
                "metadata": {RESPONSES_META: [*_items(previous), *_items(message)]},
            }
        elif _items(message) and message.get("role") == "assistant" and _only_reasoning(previous):
            # The thoughts and what they led to are sent, kept and dropped together.
            content = message.get("content")
            parts = [{"type": "text", "text": content}] if content else []
            joined[-1] = {
                **message,
                "content": [
                    *previous["content"],
                    *(content if isinstance(content, list) else parts),
                ],
                "metadata": {RESPONSES_META: [*_items(previous), *_items(message)]},
            }
        else:
            joined.append(message)
            origin.append(index)
    return joined, origin


def item_error(exc: InvalidMessageError, origin: Sequence[int]) -> InvalidMessageError:
    """``exc``, raised for a message of :func:`joined_messages`, naming the caller's entry."""
    index = exc.index
    if index is None or index >= len(origin) or origin[index] == index:
        return exc
    return InvalidMessageError(exc.detail, index=origin[index], field=exc.field)


def _items(message: Any) -> list[Any]:
    """The Responses API items a message was made from (none for any other message)."""
    if type(message) is not dict:
        return []
    meta = message.get("metadata")
    if not isinstance(meta, dict) or RESPONSES_META not in meta:
        return []
    items = meta[RESPONSES_META]
    return list(items) if isinstance(items, list) else [items]


def _is_responses_call(message: Any) -> bool:
    # The key is the user's too: an empty list is not the items of a call.
    items = _items(message)
    return bool(items) and isinstance(items[-1], dict) and tool_items.item_type(items[-1]) in _CALLS


def _says_before_calls(message: Any) -> bool:
    """Whether a message is an assistant's ``message`` item after its reasoning, which the
    calls after it join: one response's thoughts, text and calls, packed together and sent
    back with their ids (without reasoning, a message and calls stay apart, ids unneeded)."""
    items = _items(message)
    return (
        len(items) > 1
        and message.get("role") == "assistant"
        and not message.get("tool_calls")
        and tool_items.item_type(items[-1]) == "message"
        and _leads(items[-2])
    )


def _only_reasoning(message: Any) -> bool:
    """Whether a message is reasoning items alone (or the calls of tools OpenAI ran), waiting
    for what they led to."""
    items = _items(message)
    content = message.get("content") if items else None
    return (
        bool(items)
        and all(isinstance(i, dict) and _leads(i) for i in items)
        and isinstance(content, list)
        and all(_leads(part) for part in content)
        and not message.get("tool_calls")
    )


def _leads(part: Any) -> bool:
    return tool_items.item_type(part) in LEADING_ITEMS
