"""OpenAI Chat Completions messages -> OpenAI Responses API input items
(``to_openai(messages, api="responses")``).

Reading goes through :func:`~ctxpack.adapters.from_openai`, which takes Responses items already
(see :mod:`ctxpack.sdk`); this writes a packed history back as the ``input`` of
``client.responses.create``. Each Chat Completions message has one form there: system,
developer and user messages as messages with ``input_text`` / ``input_image`` parts, an
assistant's text as an assistant message, each of its tool calls as a ``function_call`` item,
a tool result as a ``function_call_output`` item.

The items are written new, without the ids a response gave them (``fc_...``, ``msg_...``): a
``function_call`` sent with its id needs the ``reasoning`` item that came before it, which a
chat history does not hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InvalidMessageError

__all__: list[str] = []  # public through to_openai(messages, api="responses")


def chat_to_responses(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat Completions message dicts (as :func:`~ctxpack.adapters.to_openai` writes them) ->
    Responses API input items.

    Raises:
        InvalidMessageError: a content part the Responses API has no input for (audio, a
            refusal in a user message), index and field named.
    """
    out: list[dict[str, Any]] = []
    for index, msg in enumerate(messages):
        role, content = msg["role"], msg.get("content")
        if role == "tool":
            output = _parts(content, index)
            out.append(
                {"type": "function_call_output", "call_id": msg["tool_call_id"], "output": output}
            )
            continue
        if role == "assistant":
            text = _assistant_text(content, index)
            if text:
                out.append({"role": "assistant", "content": text})
            for call in msg.get("tool_calls") or ():
                function = call["function"]
                out.append(
                    {
                        "type": "function_call",
                        "call_id": call["id"],
                        "name": function["name"],
                        "arguments": function["arguments"],
                    }
                )
            continue
        out.append({"role": role, "content": _parts(content, index)})
    return out


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
            image = part.get("image_url") or {}
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
            parts.append({"type": "input_file", **dict(part.get("file") or {})})
        else:
            raise InvalidMessageError(
                f"content[{j}].type: {kind!r} parts have no Responses API input (text, images "
                "and files do)",
                index=index,
                field=f"content[{j}].type",
            )
    return parts


def _assistant_text(content: Any, index: int) -> str:
    """An assistant message's text (its refusal too: it is what the model said)."""
    if content is None or isinstance(content, str):
        return content or ""
    texts = []
    for j, part in enumerate(content):
        kind = part.get("type")
        if kind == "text":
            texts.append(part.get("text", ""))
        elif kind == "refusal":
            texts.append(part.get("refusal", ""))
        else:
            raise InvalidMessageError(
                f"content[{j}].type: an assistant's {kind!r} part has no Responses API input",
                index=index,
                field=f"content[{j}].type",
            )
    return "".join(texts)
