"""OpenAI Chat Completions messages <-> ctxpack messages.

ctxpack's :class:`~ctxpack.messages.Message` has the OpenAI shape, so the mapping is direct: keys
ctxpack does not model (``refusal``, ``audio``, the legacy ``function_call``...) are kept verbatim
in ``extras``, and :func:`to_openai` writes back exactly the keys that were there, so
``to_openai(from_openai(x)) == x`` (but for a tool message's ``name``, which the API has no
field for and which is left out).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from .._internal.arguments import message_items, openai_api
from .._internal.audio import audio_reference
from .._internal.compaction import is_openai_compaction, refuse_openai_compaction
from .._internal.images import IMAGE_TYPES
from .._internal.legacy_calls import sent_extras
from .._internal.reasoning import is_reasoning
from .._internal.tool_errors import failed, marked
from .._internal.tool_items import is_server_item
from ..errors import InvalidMessageError
from ..messages import Message, copy_value, provider_of
from ..sdk import SDKObject, item_error, joined_messages
from ._anthropic import anthropic_parts_to_openai
from ._fields import check_call_names, check_speaker_name, id_digest
from ._media import not_sent
from ._responses import ResponsesLink, chat_to_responses, responses_link
from .read import NO_CONTENT, read_messages, read_openai

__all__ = ["from_openai", "to_openai"]


def from_openai(messages: Iterable[Mapping[str, Any] | SDKObject]) -> list[Message]:
    """OpenAI Chat Completions message dicts -> :class:`Message` objects.

    Args:
        messages: The ``messages`` of a Chat Completions request: content strings or parts
            (text, images...), ``name``, ``tool_calls``, ``tool`` messages, the legacy
            ``function_call``. Unknown keys are kept in ``extras``. The OpenAI SDK's own
            objects are accepted too (see :mod:`ctxpack.sdk`).

    Returns:
        One message per dict, with stable ids (see :func:`ctxpack.messages.ensure_messages`).

    Raises:
        InvalidMessageError: a message is malformed (index and field named). Tool pairing is not
            checked here: :func:`ctxpack.pack` repairs it; call :func:`validate_openai` to check.

    Example:
        >>> msgs = from_openai([{"role": "user", "content": "Hi", "name": "ana"}])
        >>> msgs[0].name, to_openai(msgs)
        ('ana', [{'role': 'user', 'content': 'Hi', 'name': 'ana'}])
    """
    entries, origin = joined_messages(message_items(messages))
    try:
        return read_openai(list(entries))
    except InvalidMessageError as exc:
        raise item_error(exc, origin) from None


def _openai_content(msg: Message, api: str) -> str | list[dict[str, Any]] | None:
    if provider_of(msg) == "anthropic":
        # A Chat Completions tool message holds text only; a function_call_output takes more.
        text_only = msg.role == "tool" and api == "chat"
        converted = anthropic_parts_to_openai(
            msg.content, text_only=text_only, by_url=api == "responses"
        )
    elif msg.role == "tool" and api == "chat" and isinstance(msg.content, list):
        # A function_call_output's images and files (Responses API) have no place in Chat
        # Completions' tool message, which takes text alone. An image is named so, whatever
        # part type it was read as (an input_image is held as an image_url).
        converted = [
            p if p.get("type") in ("text", "input_text") else not_sent(_noted_kind(p), True)
            for p in msg.content
        ]
    elif isinstance(msg.content, list) and any(map(_responses_only, msg.content)):
        # Chat Completions has no place for reasoning, nor for the calls of tools OpenAI ran;
        # the Responses API's input takes them from the message (see chat_to_responses).
        converted = [p for p in msg.content if not _responses_only(p)]
    else:
        return msg.content
    if isinstance(converted, list) and not converted:
        # Nothing OpenAI can take is left (say, only thinking blocks).
        return None if msg.tool_calls else ""
    return converted


def _noted_kind(part: dict[str, Any]) -> str:
    kind = str(part.get("type"))
    return "image" if kind in IMAGE_TYPES else kind


def _responses_only(part: Any) -> bool:
    return is_reasoning(part) or is_server_item(part) or is_openai_compaction(part)


def to_openai(
    messages: Iterable[Message | Mapping[str, Any] | SDKObject],
    *,
    api: Literal["chat", "responses"] = "chat",
) -> list[dict[str, Any]]:
    """:class:`Message` objects (or dicts) -> OpenAI Chat Completions message dicts, or the
    Responses API's input items.

    ctxpack-only fields (id, priority, pinned, source, metadata...) are left out; ``extras`` are
    written back verbatim, but for a legacy ``function_call`` beside tool calls, which OpenAI
    refuses with them and which is left out (as ``langchain-openai`` sends it). A tool call id
    longer than the API takes (40 characters in Chat Completions, a ``call_id`` of 64 in the
    Responses API) keeps its head and gets a digest of
    the whole, the same in the call and its result. Messages that came from an Anthropic
    payload are translated: images become ``image_url`` parts, thinking blocks are left out,
    and a failed tool result (``is_error``, which OpenAI has no field for) is led by
    ``[tool error]``, which :func:`~ctxpack.adapters.to_anthropic` reads back. So are Anthropic
    message dicts as they are, and messages built holding a block only Anthropic has, read as
    :func:`~ctxpack.adapters.from_anthropic` reads them
    (``tool_use`` blocks become ``tool_calls``, each ``tool_result`` a ``tool`` message, and
    the history before a ``compaction`` block, which Anthropic's API drops, is left out, as it
    is from messages holding one: its summary goes as text).

    Args:
        messages: The messages.
        api: ``"chat"`` for ``chat.completions.create(messages=...)``; ``"responses"`` for
            ``responses.create(input=...)``: system, developer and user messages as messages
            with ``input_text`` / ``input_image`` / ``input_file`` parts, an assistant's text
            as an assistant message (with its ``phase``; its text and refusal parts kept
            apart, as ``output_text`` and ``refusal`` parts, its ``refusal`` field a
            ``refusal`` part), each tool call a ``function_call``
            item (a custom tool's a ``custom_tool_call``) and each tool result the output
            item of its call (other ``extras`` and names,
            which the Responses API has no place for, left out). Items are written without the
            ids a response gave them: a ``function_call`` sent with its id needs the
            ``reasoning`` item that came before it, which a chat history does not hold.

    Dicts are checked as :func:`ctxpack.pack` checks them.

    Raises:
        InvalidMessageError: a message is malformed, a call to a tool whose name OpenAI refuses
            (not ``^[a-zA-Z0-9_-]{1,64}$``: another provider's ``files.read``), with
            ``api="chat"`` a legacy ``function_call`` or a message ``name`` it refuses alike
            (``"Research Agent"``; a tool message's name, which Chat Completions has no field
            for, is left out), or, with
            ``api="responses"``, a part the Responses API has no input for (audio), an
            assistant's ``audio`` reply (no input refers to a prior one by its id: write its
            transcript as content) or a legacy ``function_call`` (its answer, a ``function``
            message, is not read, so it could never be paired with a ``function_call_output``);
            index and field named.
        ConfigError: ``api`` is neither.

    Example:
        >>> to_openai([{"role": "assistant", "content": None, "tool_calls": [
        ...     {"id": "c1", "type": "function",
        ...      "function": {"name": "f", "arguments": "{}"}}]}])[0]["content"] is None
        True
        >>> to_openai([
        ...     {"role": "user", "content": "Weather in Oslo?"},
        ...     {"role": "assistant", "content": None, "tool_calls": [{"id": "c1",
        ...      "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
        ...     {"role": "tool", "tool_call_id": "c1", "content": "3 C"},
        ... ], api="responses")  # doctest: +NORMALIZE_WHITESPACE
        [{'role': 'user', 'content': 'Weather in Oslo?'},
         {'type': 'function_call', 'call_id': 'c1', 'name': 'weather', 'arguments': '{}'},
         {'type': 'function_call_output', 'call_id': 'c1', 'output': '3 C'}]
    """
    api = openai_api(api)
    msgs, origin = read_messages(messages)
    try:
        out, links = _written(msgs, api)
        # Dicts of their own: editing them (adding cache_control, say) must not reach the messages.
        copied: list[dict[str, Any]] = copy_value(out)
        items = chat_to_responses(copied, links) if api == "responses" else copied
    except InvalidMessageError as exc:
        raise item_error(exc, origin) from None  # the caller's index, not the message's
    return _with_fitted_ids(items)


def _written(
    msgs: tuple[Message, ...], api: str
) -> tuple[list[dict[str, Any]], list[ResponsesLink | None]]:
    """Each message as a Chat Completions message dict, and each one's Responses API link."""
    out: list[dict[str, Any]] = []
    links: list[ResponsesLink | None] = []
    for index, msg in enumerate(msgs):
        check_call_names(msg, index, "OpenAI", legacy=api == "chat")
        if api == "chat":
            refuse_openai_compaction(msg.content, index, "Chat Completions")
        if api == "responses":
            links.append(responses_link(msg))
        item: dict[str, Any] = {"role": msg.role}
        content = _openai_content(msg, api)
        if msg.role == "tool" and failed(msg):
            content = marked(content)  # is_error has no OpenAI field: the model reads the mark
        if not (content is None and msg.metadata.get(NO_CONTENT)):
            item["content"] = content
        # Chat Completions' tool message has no name (role, content and tool_call_id only: a
        # strict gateway refuses one); its tool is named by the call it answers.
        if msg.name is not None and api == "chat" and msg.role != "tool":
            check_speaker_name(msg, index)
            item["name"] = msg.name
        if msg.tool_calls:
            item["tool_calls"] = [call.model_dump() for call in msg.tool_calls]
        if msg.tool_call_id is not None:
            item["tool_call_id"] = msg.tool_call_id
        item.update(sent_extras(msg))
        if "audio" in item:
            item["audio"] = audio_reference(item["audio"])
        out.append(item)
    return out, links


# The longest tool call id each API takes: Chat Completions refuses a longer one
# ("messages[2].tool_calls[0].id: string too long. Expected ... maximum length 40"), the
# Responses API a call_id over 64.
_CHAT_ID_LIMIT, _RESPONSES_ID_LIMIT = 40, 64


def _with_fitted_ids(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``items`` (chat messages or Responses API items, ctxpack's own copies) with every tool
    call id within the API's length."""
    for item in items:
        for call in item.get("tool_calls") or ():
            call["id"] = _fitted_id(call["id"], _CHAT_ID_LIMIT)
        if isinstance(item.get("tool_call_id"), str):
            item["tool_call_id"] = _fitted_id(item["tool_call_id"], _CHAT_ID_LIMIT)
        if isinstance(item.get("call_id"), str):
            item["call_id"] = _fitted_id(item["call_id"], _RESPONSES_ID_LIMIT)
    return items


def _fitted_id(call_id: str, limit: int) -> str:
    """``call_id`` within ``limit`` characters: another provider's longer id keeps its head and
    gets a digest of the whole, so that two ids never become one and the same id always maps
    to the same one, which keeps each call and its result paired."""
    if len(call_id) <= limit:
        return call_id
    digest = id_digest(call_id)
    return f"{call_id[: limit - len(digest) - 1]}_{digest}"
