"""OpenAI Chat Completions messages -> OpenAI Responses API input items
(``to_openai(messages, api="responses")``).

Reading goes through :func:`~ctxpack.adapters.from_openai`, which takes Responses items already
(see :mod:`ctxpack.sdk`); this writes a packed history back as the ``input`` of
``client.responses.create``. Each Chat Completions message has one form there: system,
developer and user messages as messages with ``input_text`` / ``input_image`` parts, an
assistant's text as an assistant message, each of its tool calls as a ``function_call`` item
(a custom tool's as a ``custom_tool_call``, a ``shell``, ``local_shell``, ``apply_patch`` or
``computer`` call as the item it came as), a tool result as the output item of its call.

The items are written new, without the ids a response gave them (``fc_...``, ``msg_...``): a
``function_call`` sent with its id needs the ``reasoning`` item that came before it, which a
chat history does not hold. A ``local_shell_call`` and a ``computer_call`` keep theirs: the
API's schema requires it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from .._internal import tool_items
from .._internal.compaction import is_openai_compaction
from .._internal.reasoning import is_reasoning, reasoning_item
from ..errors import InvalidMessageError
from ..messages import Message, content_text, copy_value
from ..sdk import RESPONSES_META
from ._fields import payload, refuse_audio_reply

__all__: list[str] = []  # public through to_openai(messages, api="responses")


class ResponsesLink(NamedTuple):
    """What ties a message to the response that produced it: the reasoning it holds (and the
    calls of tools OpenAI ran, in their order among it), as input items, and the ids the
    response gave its items (a function call's by its call id)."""

    reasoning: list[dict[str, Any]]
    call_ids: dict[str, str]
    message_id: str | None
    phase: str | None = None
    """The message's ``phase`` (``commentary`` or ``final_answer``), which OpenAI asks to have
    sent back on every assistant message."""
    call_fields: dict[str, dict[str, Any]] | None = None
    """By call id, what a function call's item says beside the chat form's fields: the
    ``namespace`` of the function, the ``caller`` that made the call."""
    built_in: dict[str, Mapping[str, Any]] | None = None
    """By call id, the item of a built-in tool's call or output (``shell_call``...), written
    back from it (see :mod:`ctxpack._internal.tool_items`)."""


def responses_link(msg: Message) -> ResponsesLink | None:
    """The reasoning and item ids of an assistant message (reasoning appended alone, before
    it, is written with its ids), or ``None`` when it has neither; for a tool message, the
    fields its ``function_call_output`` item had beside the chat form's."""
    items = msg.metadata.get(RESPONSES_META)
    if msg.role == "tool" and isinstance(items, Mapping) and isinstance(msg.tool_call_id, str):
        kind = tool_items.item_type(items)
        if kind in tool_items.OUTPUTS and items.get(tool_items.call_key(items)) == msg.tool_call_id:
            return ResponsesLink([], {}, None, built_in={msg.tool_call_id: items})
        fields = {k: items[k] for k in _OUTPUT_FIELDS if items.get(k) is not None}
        return ResponsesLink([], {}, None, None, {msg.tool_call_id: fields}) if fields else None
    if msg.role != "assistant" or (items is None and not isinstance(msg.content, list)):
        return None
    reasoning = [
        item
        for part in (msg.content if isinstance(msg.content, list) else ())
        if (item := _leading_item(part))
    ]
    call_ids: dict[str, str] = {}
    call_fields: dict[str, dict[str, Any]] = {}
    built_in: dict[str, Mapping[str, Any]] = {}
    message_id = phase = None
    # metadata is the user's too: only items of the shape ctxpack wrote are read.
    for item in items if isinstance(items, list) else [items]:
        kind = tool_items.item_type(item)
        if not isinstance(item, Mapping) or kind is None:
            continue
        if kind == "message":
            phase = item.get("phase") if isinstance(item.get("phase"), str) else phase
        if kind in _CALLS:
            fields = {k: item[k] for k in _CALL_FIELDS if item.get(k) is not None}
            if fields and isinstance(item.get("call_id"), str):
                call_fields[item["call_id"]] = fields
        if kind in tool_items.CALLS and isinstance(item.get("call_id"), str):
            built_in[item["call_id"]] = item
        if not isinstance(item.get("id"), str):
            continue
        if kind in _CALLS and isinstance(item.get("call_id"), str):
            call_ids[item["call_id"]] = item["id"]
        elif kind == "message":
            message_id = item["id"]
    if not (reasoning or call_ids or message_id or phase or call_fields or built_in):
        return None
    return ResponsesLink(reasoning, call_ids, message_id, phase, call_fields, built_in)


# The items of a call that is a chat tool call: a function's and a custom tool's.
_CALLS = ("function_call", "custom_tool_call", *tool_items.CALLS)
# A call item's fields the chat form has no place for, sent back as they came, and an output
# item's.
_CALL_FIELDS = ("namespace", "caller")
_OUTPUT_FIELDS = ("name", "namespace", "caller")


def chat_to_responses(
    messages: Sequence[dict[str, Any]], links: Sequence[ResponsesLink | None]
) -> list[dict[str, Any]]:
    """Chat Completions message dicts (as :func:`~ctxpack.adapters.to_openai` writes them) ->
    Responses API input items.

    ``links[i]`` is the reasoning of ``messages[i]`` and the ids of the items that followed it
    (:func:`responses_link`). The API pairs a reasoning item with the item after it by that
    item's id, and refuses a reasoning item followed by nothing of its response: reasoning is
    written only before the message or calls it led to, with their ids, and left out when they
    are gone (packed out, or written without their ids).

    Raises:
        InvalidMessageError: a content part the Responses API has no input for (audio, a
            refusal in a user message), an assistant's audio reply, or a legacy
            ``function_call``; index and field named.
    """
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []  # reasoning alone in its message, awaiting its items
    custom: set[str] = set()  # the ids of custom tools' calls: their results answer in kind
    for index, msg in enumerate(messages):
        role, content = msg["role"], msg.get("content")
        link = links[index]
        if role != "assistant":
            out.extend(_server_items(pending))
            pending = []
        if role == "tool":
            out.append(_output_item(msg, link, custom, index))
            continue
        if role == "assistant":
            _refuse_legacy_call(msg, index)
            refuse_audio_reply(msg, index, "Responses API input", why=_NO_AUDIO, instead=_CHAT)
            text = _assistant_content(content, msg.get("refusal"), index)
            calls = msg.get("tool_calls") or ()
            thoughts = [*pending, *(link.reasoning if link else ())]
            if not text and not calls:
                pending = thoughts
                continue
            pending = []
            # An easy-form message's phase rides in its extras, an output item's in the link.
            phase = msg.get("phase") if isinstance(msg.get("phase"), str) else None
            phase = link.phase if link is not None and link.phase else phase
            # A compaction item goes back in place but pairs nothing: ids follow reasoning.
            paired = (
                link
                if any(not is_openai_compaction(t) for t in thoughts)
                and pairs_reasoning(link, bool(text), [call["id"] for call in calls])
                else None
            )
            # The calls of tools OpenAI ran go back with or without the reasoning among them.
            out.extend(thoughts if paired else _server_items(thoughts))
            if paired and text:
                out.append(_output_message(text, paired.message_id, phase))
            elif text:
                out.append({"role": "assistant", "content": text, **_phase(phase)})
            for call in calls:
                if call.get("type") == "custom":
                    custom.add(call["id"])
                item = _call_item(call, link)
                if paired:
                    item["id"] = paired.call_ids[call["id"]]
                out.append(item)
            continue
        out.append({"role": role, "content": _parts(content, index)})
    out.extend(_server_items(pending))
    return out


def pairs_reasoning(link: ResponsesLink | None, text: bool, call_ids: Sequence[str]) -> bool:
    """Whether the reasoning before an assistant message goes with it: the message's ``link``
    holds the ids the response gave its text (if it has ``text``) and each of its calls."""
    return (
        link is not None
        and (not text or link.message_id is not None)
        and all(call_id in link.call_ids for call_id in call_ids)
    )


def _refuse_legacy_call(msg: dict[str, Any], index: int) -> None:
    """A legacy ``function_call`` fails here, named, rather than being left out: its answer,
    a ``function`` message, is not read, so no ``function_call_output`` could follow it."""
    if msg.get("function_call") is not None:
        raise InvalidMessageError(
            "function_call: a legacy function call has no Responses API input without the "
            "function message answering it, which ctxpack does not read; write it as a tool "
            "call (tool_calls, with an id) answered by a tool message, or send the history "
            'with api="chat"',
            index=index,
            field="function_call",
        )


# Why an assistant's audio reply has no Responses API input, and where it goes as it is.
_NO_AUDIO = "none refers to a prior audio response by its id"
_CHAT = ', or send the history with api="chat"'


def _leading_item(part: Any) -> dict[str, Any] | None:
    """The input item of a part that goes before an assistant's message: its reasoning, the
    call of a tool OpenAI ran (as it came)."""
    if is_reasoning(part):
        return reasoning_item(part)
    if tool_items.is_server_item(part) or is_openai_compaction(part):
        copied: dict[str, Any] = copy_value(part)
        return copied
    return None


def _server_items(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items among ``items`` that go back whether or not what follows them does: the calls
    of tools OpenAI ran, and a compaction item, which carries the context before it."""
    return [item for item in items if tool_items.is_server_item(item) or is_openai_compaction(item)]


def _call_item(call: dict[str, Any], link: ResponsesLink | None) -> dict[str, Any]:
    """A chat tool call as the Responses API's call item, without an id: a function's, a
    custom tool's, or a built-in tool's (its item as it came, with the arguments' edits)."""
    call_id = call["id"]
    original = link.built_in.get(call_id) if link is not None and link.built_in else None
    if original is not None and call.get("type") == "function":
        edited: dict[str, Any] = copy_value(
            tool_items.call_item(original, call["function"]["arguments"])
        )
        return edited
    if call.get("type") == "custom":
        custom = call["custom"]
        item = {
            "type": "custom_tool_call",
            "call_id": call_id,
            "name": custom["name"],
            "input": custom["input"],
        }
    else:
        function = call["function"]
        item = {
            "type": "function_call",
            "call_id": call_id,
            "name": function["name"],
            "arguments": function["arguments"],
        }
    if link is not None and link.call_fields and call_id in link.call_fields:
        item.update(copy_value(link.call_fields[call_id]))
    return item


def _output_item(
    msg: dict[str, Any], link: ResponsesLink | None, custom: set[str], index: int
) -> dict[str, Any]:
    """A tool message as the output item of its call: a built-in tool's as it came, with the
    text ctxpack left (filtered, cleared, redacted) in its place."""
    call_id, content = msg["tool_call_id"], msg.get("content")
    if link is not None and link.built_in and call_id in link.built_in:
        original = link.built_in[call_id]
        if original["type"] == "computer_call_output" and not _holds_image(content):
            raise InvalidMessageError(
                "content: a computer_call_output whose screenshot was replaced by text has no "
                "Responses API form, which takes a screenshot only; leave its content as read "
                "(ToolResultClearer does), or drop the call and its output together",
                index=index,
                field="content",
            )
        filtered: dict[str, Any] = copy_value(
            tool_items.output_item(original, content_text(content))
        )
        return filtered
    kind = "custom_tool_call_output" if call_id in custom else "function_call_output"
    item = {"type": kind, "call_id": call_id, "output": _parts(content, index)}
    if link is not None and link.call_fields and call_id in link.call_fields:
        item.update(copy_value(link.call_fields[call_id]))
    return item


def _holds_image(content: Any) -> bool:
    return isinstance(content, list) and any(
        part.get("type") in ("image_url", "input_image") for part in content
    )


def _output_message(
    text: str | list[dict[str, Any]], item_id: str | None, phase: str | None
) -> dict[str, Any]:
    """An assistant's text as the output message item it came as, under its id."""
    parts = [_output_text(text)] if isinstance(text, str) else text
    return {
        "type": "message",
        "role": "assistant",
        "id": item_id,
        "status": "completed",
        "content": parts,
        **_phase(phase),
    }


def _output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


def _phase(phase: str | None) -> dict[str, str]:
    return {"phase": phase} if phase else {}


def _parts(content: Any, index: int) -> str | list[dict[str, Any]]:
    """Chat Completions content as Responses input: a string as it is, parts as
    ``input_text`` / ``input_image`` / ``input_file`` parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        kind = part.get("type")
        if kind in ("text", "input_text"):
            parts.append({"type": "input_text", "text": part.get("text", "")})
        elif kind == "image_url":
            # A Message's parts are not checked as a dict's are: named here, not failed inside.
            image = payload(part, "image_url", '{"url": "https://..."}', index, f"content[{j}]")
            parts.append(
                {
                    "type": "input_image",
                    "image_url": image.get("url"),
                    "detail": image.get("detail") or "auto",
                }
            )
        elif kind in ("input_image", "input_file"):
            parts.append(dict(part))
        elif kind == "file":
            file = payload(
                part, "file", '{"file_id": ...} or {"file_data": ...}', index, f"content[{j}]"
            )
            parts.append({"type": "input_file", **file})
        else:
            raise InvalidMessageError(
                f"content[{j}].type: {kind!r} parts have no Responses API input (text, images "
                "and files do)",
                index=index,
                field=f"content[{j}].type",
            )
    return parts


def _assistant_content(content: Any, refusal: Any, index: int) -> str | list[dict[str, Any]]:
    """An assistant message's content as the Responses API takes it back: a string as it is,
    parts as ``output_text`` and ``refusal`` parts, each as the model wrote it (joined, two
    text blocks would run together), a lone text part as its string; ``""`` when it says
    nothing. ``refusal``, the field Chat Completions returns a refusal in, goes as a part."""
    parts: list[dict[str, Any]] = []
    if isinstance(content, str) and content:
        parts.append(_output_text(content))
    for j, part in enumerate(content if isinstance(content, list) else ()):
        kind = part.get("type")
        if kind == "text":
            parts.append(_output_text(part.get("text", "")))
        elif kind == "refusal":
            parts.append({"type": "refusal", "refusal": part.get("refusal", "")})
        else:
            raise InvalidMessageError(
                f"content[{j}].type: an assistant's {kind!r} part has no Responses API input",
                index=index,
                field=f"content[{j}].type",
            )
    if (
        isinstance(refusal, str)
        and refusal
        and {"type": "refusal", "refusal": refusal} not in parts
    ):
        parts.append({"type": "refusal", "refusal": refusal})
    if len(parts) == 1 and parts[0]["type"] == "output_text":
        return str(parts[0]["text"])
    return parts if any(part.get("text") or part.get("refusal") for part in parts) else ""
