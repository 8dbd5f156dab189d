"""OpenAI Chat Completions messages <-> ctxpack messages."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..messages import Message, ensure_messages

__all__ = ["from_openai", "to_openai"]


def from_openai(messages: Iterable[Mapping[str, Any]]) -> list[Message]:
    """OpenAI message dicts -> :class:`Message` objects (unknown fields kept in ``extras``)."""
    return ensure_messages(messages)


def to_openai(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """:class:`Message` objects -> OpenAI message dicts, without ctxpack-only fields."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        item: dict[str, Any] = {"role": msg.role}
        if msg.content is not None or msg.tool_calls:
            item["content"] = msg.content
        if msg.name is not None:
            item["name"] = msg.name
        if msg.tool_calls:
            item["tool_calls"] = [call.model_dump() for call in msg.tool_calls]
        if msg.tool_call_id is not None:
            item["tool_call_id"] = msg.tool_call_id
        item.update(msg.extras)
        out.append(item)
    return out
