"""An assistant message's legacy ``function_call`` (Chat Completions' form before
``tool_calls``), as OpenAI is sent it: left out beside tool calls, as ``langchain-openai``
sends such a message, since OpenAI refuses a message holding both. The message keeps it;
what is rendered, counted and checked for OpenAI is the same."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..messages import Message

__all__: list[str] = []


def sent_extras(msg: Message) -> Mapping[str, Any]:
    """``msg``'s extras as Chat Completions is sent them: without a legacy ``function_call``
    beside tool calls (``msg.extras`` itself when nothing is left out)."""
    if msg.tool_calls and "function_call" in msg.extras:
        return {k: v for k, v in msg.extras.items() if k != "function_call"}
    return msg.extras
