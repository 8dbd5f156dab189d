"""LangChain messages <-> ctxpack messages (needs ``langchain-core``).

``SystemMessage``, ``HumanMessage``, ``AIMessage`` (with ``tool_calls``), ``ToolMessage`` and
``ChatMessage`` map onto the roles of :class:`~ctxpack.messages.Message`. The fields ctxpack does
not model (``additional_kwargs``, ``response_metadata``, LangChain's own ``id``...) ride in
``metadata["langchain"]``, so ``to_langchain(from_langchain(x)) == x``. A chunk of a stream
(``AIMessageChunk``, summed) is read as the message it makes, and comes back as that message.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from .._internal.arguments import json_type_name, message_items
from .._internal.tool_errors import failed
from ..errors import InvalidMessageError
from ..messages import Message, ensure_messages
from ._anthropic import _tool_input
from ._sources import check_base64, check_data_url

__all__ = ["from_langchain", "to_langchain"]

META = "langchain"
INSTALL_HINT = (
    "the LangChain adapter needs langchain-core; install it with "
    "pip install 'ctxpack[langchain]' (or pip install langchain-core)"
)

_ROLE_OF_TYPE = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}
# Fields written by ctxpack itself; everything else LangChain dumps is kept for the round trip.
_MAPPED = frozenset({"type", "content", "name", "tool_calls", "tool_call_id", "role"})
# An assistant's OpenAI fields that langchain-openai reads into an AIMessage's
# additional_kwargs (and writes back from them): an audio reply (sent back by its id), a
# refusal, a legacy function_call. They are a Message's extras, as in OpenAI's dicts.
_OPENAI_EXTRAS = ("audio", "refusal", "function_call")


def _messages_module() -> Any:
    try:
        import langchain_core.messages as lc_messages
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    return lc_messages


def _content_in(content: Any) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [
        {"type": "text", "text": part} if isinstance(part, str) else dict(part) for part in content
    ]


def from_langchain(messages: Iterable[Any]) -> list[Message]:
    """LangChain message objects -> :class:`Message` objects.

    Raises:
        ImportError: ``langchain-core`` is not installed (with the install command).
        InvalidMessageError: an entry is not a LangChain message ctxpack can map, a field
            edited out of its shape (LangChain does not check assignments: ``content`` not a
            string or a list of parts, a tool call without a name), an image, audio, video or
            file block whose ``url``, ``base64`` or ``data`` is not a string (or not valid
            base64), or a tool call's ``args`` are not JSON; index and field named.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> [(m.role, m.text) for m in from_langchain([HumanMessage("Hi")])]
        [('user', 'Hi')]
    """
    lc = _messages_module()
    return ensure_messages(
        [_as_dict(lc, msg, index) for index, msg in enumerate(message_items(messages))]
    )


def message_from_langchain(message: Any, index: int) -> Message:
    """:func:`from_langchain` for the message at ``index`` of a history, alone: a caller that
    needs a few messages of a long history converts only those. Errors name ``index``."""
    try:
        return ensure_messages([_as_dict(_messages_module(), message, index)])[0]
    except InvalidMessageError as exc:
        raise InvalidMessageError(exc.detail, index=index, field=exc.field) from exc


def _as_dict(lc: Any, msg: Any, index: int) -> dict[str, Any]:
    """One LangChain message as the dict :func:`ensure_messages` takes."""
    if not isinstance(msg, lc.BaseMessage):
        raise InvalidMessageError(
            f"expected a LangChain message, got {type(msg).__name__}", index=index
        )
    if isinstance(msg, lc.BaseMessageChunk):
        # A streamed reply summed (AIMessageChunk): the message its chunks make, as
        # LangGraph's add_messages reads it; its type would name no role.
        msg = lc.message_chunk_to_message(msg)
    _check_edited(msg, index)
    dumped = msg.model_dump()
    role = dumped.get("role") if msg.type == "chat" else _ROLE_OF_TYPE.get(msg.type)
    if role is None:
        raise InvalidMessageError(
            f"LangChain message type {msg.type!r} has no ctxpack role; use SystemMessage, "
            "HumanMessage, AIMessage, ToolMessage or ChatMessage",
            index=index,
            field="type",
        )
    str_parts = (
        [j for j, part in enumerate(msg.content) if isinstance(part, str)]
        if isinstance(msg.content, list)
        else []
    )
    item: dict[str, Any] = {
        "role": role,
        "content": _content_in(msg.content),
        "metadata": {
            META: {
                "type": msg.type,
                "fields": {k: v for k, v in dumped.items() if k not in _MAPPED},
                "str_parts": str_parts,
            }
        },
    }
    if msg.name is not None:
        item["name"] = msg.name
    if msg.type == "tool":
        item["tool_call_id"] = msg.tool_call_id
    if role == "assistant":
        # The model's turn, which ctxpack sends, counts (or refuses by name) as a dict's.
        item.update(
            (key, value)
            for key in _OPENAI_EXTRAS
            if (value := msg.additional_kwargs.get(key)) is not None
        )
    calls = getattr(msg, "tool_calls", None) or []
    if calls:
        item["tool_calls"] = [
            {
                "id": call.get("id") or f"lc-{index}-{k}",
                "type": "function",
                "function": {"name": call["name"], "arguments": _arguments(call, index, k)},
            }
            for k, call in enumerate(calls)
        ]
    return item


def _check_edited(msg: Any, index: int) -> None:
    """What code editing a LangChain message can leave in it (its fields are not validated on
    assignment) fails here, named, rather than deep in the conversion."""
    content = msg.content
    if not isinstance(content, (str, list)):
        problem = f"must be a string or a list of parts, got {json_type_name(content)}"
        raise InvalidMessageError(problem, index=index, field="content")
    for j, part in enumerate(content if isinstance(content, list) else ()):
        if not isinstance(part, (str, Mapping)):
            problem = f"content[{j}]: a part is a string or a dict, got {json_type_name(part)}"
            raise InvalidMessageError(problem, index=index, field="content")
        if isinstance(part, Mapping) and part.get("type") in _MEDIA_BLOCKS:
            _check_media_block(part, index, f"content[{j}]")
    if not isinstance(msg.additional_kwargs, Mapping):
        problem = f"must be a dict, got {json_type_name(msg.additional_kwargs)}"
        raise InvalidMessageError(problem, index=index, field="additional_kwargs")
    for k, call in enumerate(getattr(msg, "tool_calls", None) or ()):
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            problem = f"tool_calls[{k}]: a tool call is a dict with a name (a string) and args"
            raise InvalidMessageError(problem, index=index, field="tool_calls")


# LangChain's standard blocks for media, which carry it as a string: a URL (``url``), or
# base64 (``base64``; in the older blocks ``data``, beside ``"source_type": "base64"``).
_MEDIA_BLOCKS = frozenset({"image", "audio", "video", "file"})
_MEDIA_KEYS = ("url", "base64", "data")


def _check_media_block(block: Mapping[str, Any], index: int, field: str) -> None:
    """A LangChain image (audio, video, file) block's URL and data: a string, its base64
    valid. Any other value (bytes, a number, None) the chat model would send on for the
    provider to refuse, or fail on far from the message."""
    for key in _MEDIA_KEYS:
        if key not in block:
            continue
        value = block[key]
        if not isinstance(value, str):
            raise InvalidMessageError(
                f"{field}.{key}: must be a string, got {json_type_name(value)}"
                + ("; encode bytes with base64.b64encode(...).decode()" if key != "url" else ""),
                index=index,
                field=f"{field}.{key}",
            )
        if key == "url":
            check_data_url(value, index, f"{field}.{key}")
        elif key == "base64" or block.get("source_type") == "base64":
            check_base64(value, index, f"{field}.{key}")


def _arguments(call: Mapping[str, Any], index: int, k: int) -> str:
    """A LangChain tool call's ``args`` as the JSON string a ctxpack tool call holds."""
    try:
        return json.dumps(call.get("args", {}), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:  # RecursionError: nested too deep
        raise InvalidMessageError(
            f"tool_calls[{k}].args: not JSON ({exc}); give the tool's arguments as JSON values",
            index=index,
            field="tool_calls",
        ) from exc


def _content_out(msg: Message, meta: Mapping[str, Any]) -> str | list[Any]:
    content = msg.content
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    # metadata["langchain"] is the user's too: what is not the shape ctxpack wrote is ignored.
    listed = meta.get("str_parts")
    str_parts = {j for j in listed if isinstance(j, int)} if isinstance(listed, list) else set()
    return [
        str(part.get("text", "")) if j in str_parts and part.get("type") == "text" else part
        for j, part in enumerate(content)
    ]


def to_langchain(messages: Iterable[Message | Mapping[str, Any]]) -> list[Any]:
    """:class:`Message` objects (or OpenAI-style dicts) -> LangChain message objects.

    Raises:
        ImportError: ``langchain-core`` is not installed (with the install command).
        InvalidMessageError: a message is malformed, or the LangChain fields kept in its
            ``metadata["langchain"]`` are ones LangChain refuses.

    Example:
        >>> [type(m).__name__ for m in to_langchain([{"role": "user", "content": "Hi"}])]
        ['HumanMessage']
    """
    lc = _messages_module()
    out: list[Any] = []
    for index, msg in enumerate(ensure_messages(messages)):
        raw = msg.metadata.get(META)
        meta: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        kept = meta.get("fields")
        fields = (
            {k: v for k, v in kept.items() if isinstance(k, str)}
            if isinstance(kept, Mapping)
            else {}
        )
        fields["content"] = _content_out(msg, meta)
        if msg.role == "tool" and failed(msg):
            fields["status"] = "error"  # Anthropic's is_error
        if msg.name is not None:
            fields["name"] = msg.name
        try:
            out.append(_langchain_message(lc, msg, meta, fields))
        except ValidationError as exc:
            # Fields kept in metadata["langchain"], which the user may have edited.
            first = exc.errors()[0]
            raise InvalidMessageError(
                f"metadata.{META}.fields: LangChain refuses them "
                f"({'.'.join(map(str, first['loc']))}: {first['msg']})",
                index=index,
                field="metadata",
            ) from exc
    return out


def _langchain_message(
    lc: Any, msg: Message, meta: Mapping[str, Any], fields: dict[str, Any]
) -> Any:
    if msg.role == "developer" or (meta.get("type") == "chat" and msg.role != "tool"):
        # LangChain has no class for developer messages; ChatMessage carries any role.
        return lc.ChatMessage(role=msg.role, **fields)
    if msg.role == "system":
        return lc.SystemMessage(**fields)
    if msg.role == "user":
        return lc.HumanMessage(**fields)
    if msg.role == "assistant":
        extras = {k: v for k in _OPENAI_EXTRAS if (v := msg.extras.get(k)) is not None}
        if extras:
            kept = fields.get("additional_kwargs")
            fields["additional_kwargs"] = {**(kept if isinstance(kept, Mapping) else {}), **extras}
        fields["tool_calls"] = [
            {
                "name": call.function.name,
                "args": _tool_input(call.function.arguments),
                "id": call.id,
                "type": "tool_call",
            }
            for call in msg.tool_calls or ()
        ]
        return lc.AIMessage(**fields)
    return lc.ToolMessage(tool_call_id=msg.tool_call_id, **fields)
