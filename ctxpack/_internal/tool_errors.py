"""A tool result that reports a failure. Anthropic says so with ``is_error: true`` on the
``tool_result``, LangChain with a ToolMessage's ``status="error"``; OpenAI's formats (Chat
Completions' tool message, the Responses API's output) have no such field, so the mark goes in
the text, where the model reads it, and :func:`~ctxpack.adapters.to_anthropic` reads it back
into the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..messages import Message

__all__: list[str] = []

MARK = "[tool error]"


# Where the adapters keep a message's provider details (their META keys).
_ANTHROPIC, _LANGCHAIN = "anthropic", "langchain"


def failed(msg: Message) -> bool:
    """Whether a tool message read from Anthropic (``is_error``) or LangChain
    (``status="error"``) reports a failure."""
    anthropic, langchain = msg.metadata.get(_ANTHROPIC), msg.metadata.get(_LANGCHAIN)
    block = anthropic.get("block") if isinstance(anthropic, Mapping) else None
    if isinstance(block, Mapping) and "is_error" in block:
        return block["is_error"] is True
    fields = langchain.get("fields") if isinstance(langchain, Mapping) else None
    return msg.role == "tool" and isinstance(fields, Mapping) and fields.get("status") == "error"


def marked(content: Any) -> Any:
    """``content`` (a string or parts) led by the mark."""
    if isinstance(content, list):
        first = content[0] if content else None
        if isinstance(first, Mapping) and first.get("type") in ("text", "input_text"):
            return [{**first, "text": _marked(str(first.get("text", "")))}, *content[1:]]
        return [{"type": "text", "text": MARK}, *content]
    return _marked(content if isinstance(content, str) else "")


def _marked(text: str) -> str:
    return f"{MARK} {text}" if text else MARK


def unmarked(content: Any) -> tuple[Any, bool]:
    """``content`` without a leading mark, and whether it had one."""
    if isinstance(content, str):
        text = _unmarked(content)
        return (content, False) if text is None else (text, True)
    first = content[0] if isinstance(content, list) and content else None
    if not (isinstance(first, Mapping) and first.get("type") in ("text", "input_text")):
        return content, False
    text = _unmarked(str(first.get("text", "")))
    if text is None:
        return content, False
    return ([{**first, "text": text}] if text else []) + content[1:], True


def _unmarked(text: str) -> str | None:
    if text == MARK:
        return ""
    return text[len(MARK) + 1 :] if text.startswith(MARK + " ") else None
