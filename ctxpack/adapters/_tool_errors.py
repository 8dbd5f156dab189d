"""A tool result that reports a failure. Anthropic says so with ``is_error: true`` on the
``tool_result``; OpenAI's formats (Chat Completions' tool message, the Responses API's output)
have no such field, so the mark goes in the text, where the model reads it, and
:func:`~ctxpack.adapters.to_anthropic` reads it back into the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__: list[str] = []

MARK = "[tool error]"


def failed(meta: Mapping[str, Any]) -> bool:
    """Whether a tool message's Anthropic details (``metadata["anthropic"]``) say it failed."""
    block = meta.get("block")
    return isinstance(block, Mapping) and block.get("is_error") is True


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
