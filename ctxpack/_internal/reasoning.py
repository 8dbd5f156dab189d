"""A reasoning model's reasoning, carried in an assistant message as a ``reasoning`` part.

OpenAI's Responses API returns a reasoning model's thoughts as a ``reasoning`` item before the
message or the function calls they led to: an id, a summary, and with ``include=
["reasoning.encrypted_content"]`` the reasoning itself, encrypted. Passed back in the next
request, the model picks its reasoning up where it left it instead of thinking again. ctxpack
keeps such an item, verbatim, as a part of the assistant message that follows it (LangChain's
``ChatOpenAI`` puts it in an ``AIMessage``'s content the same way), so that the packer keeps or
drops the thoughts with the call they led to, and clearing removes them as it does Anthropic's
thinking blocks.

What the model reads is hidden: its tokens are estimated from the encrypted text's length as
OpenAI's own agent (Codex) does, with an
:class:`~ctxpack.tokens.ApproximateTokenCountWarning`; a raw ``reasoning_text`` (an open-weight
model's) counts exactly.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ApproximateTokenCountWarning, InvalidMessageError
from .arguments import json_type_name

__all__: list[str] = []

REASONING = "reasoning"
"""The type of a reasoning part, and of the Responses API item it comes from."""

# Codex's estimate_reasoning_length: base64 decodes to 3/4 of its length, less an envelope of
# about 650 bytes, and the reasoning is then taken at 4 bytes a token.
_ENVELOPE_BYTES = 650
_BYTES_PER_TOKEN = 4


def is_reasoning(part: Any) -> bool:
    return isinstance(part, Mapping) and part.get("type") == REASONING


def check_reasoning(part: Mapping[str, Any], index: int, field: str | None, role: str) -> None:
    """A reasoning part's fields (a Responses API item, or LangChain's block for one): the
    error names the message and the field, under ``field`` (the part's place in the content;
    ``None`` for an item not yet converted, whose fields are named as the caller wrote them)."""

    def fail(detail: str, where: str) -> InvalidMessageError:
        return InvalidMessageError(f"{where}: {detail}", index=index, field=where)

    def at(key: str) -> str:
        return f"{field}.{key}" if field else key

    if role != "assistant":
        raise fail(
            f"a reasoning part belongs to an assistant message, not a {role} one", field or "role"
        )
    for key, kind, name in (
        ("id", str, "a string"),
        ("summary", list, "a list"),
        ("content", list, "a list"),
        ("reasoning", str, "a string"),
    ):
        if key in part and not isinstance(part[key], kind):
            raise fail(f"must be {name}, got {json_type_name(part[key])}", at(key))
    encrypted = part.get("encrypted_content")
    if encrypted is not None and not isinstance(encrypted, str):
        raise fail(
            f"must be a string or null, got {json_type_name(encrypted)}", at("encrypted_content")
        )


def reasoning_tokens(part: Mapping[str, Any], count: Callable[[str], int]) -> int:
    """The tokens a reasoning part puts in the model's context (see the module's text)."""
    encrypted = part.get("encrypted_content")
    if isinstance(encrypted, str) and encrypted:
        warnings.warn(
            "a reasoning item's tokens are estimated from the length of its encrypted_content: "
            "only the provider can read it",
            ApproximateTokenCountWarning,
            stacklevel=3,
        )
        return encrypted_tokens(encrypted)
    raw = _texts(part.get("content"), "reasoning_text")
    if raw:
        return count(raw)
    # By id only (a stored response) or a LangChain block: the summary is what can be seen.
    warnings.warn(
        "a reasoning item without encrypted_content counts as its summary: the reasoning the "
        "provider reads by its id is longer",
        ApproximateTokenCountWarning,
        stacklevel=3,
    )
    text = part.get("reasoning")
    return count(text if isinstance(text, str) else _texts(part.get("summary"), "summary_text"))


def encrypted_tokens(encrypted: str) -> int:
    """The tokens of reasoning carried encrypted, from its base64 text's length alone."""
    hidden = max(0, len(encrypted) * 3 // 4 - _ENVELOPE_BYTES)
    return -(-hidden // _BYTES_PER_TOKEN)


def thinking_tokens(part: Mapping[str, Any], count: Callable[[str], int]) -> int:
    """The tokens of an Anthropic ``thinking`` or ``redacted_thinking`` block sent back.

    The signature is opaque: Anthropic checks it, it is not text the model reads, and counted
    as text its base64 cost more than the thinking itself. What the model reads is the
    thinking: its text, or, when the text is a summary or empty (``display: "omitted"``),
    the full thinking the signature carries encrypted, estimated from its length as
    :func:`encrypted_tokens` does; the larger of the two, so that the count errs high. A
    redacted block's ``data`` is that encrypted thinking.
    """
    if part.get("type") == "redacted_thinking":
        data = part.get("data")
        return encrypted_tokens(data) if isinstance(data, str) else 0
    text, signature = part.get("thinking"), part.get("signature")
    shown = count(text) if isinstance(text, str) and text else 0
    return max(shown, encrypted_tokens(signature) if isinstance(signature, str) else 0)


def _texts(parts: Any, kind: str) -> str:
    if not isinstance(parts, list):
        return ""
    return "\n".join(
        str(p.get("text", "")) for p in parts if isinstance(p, Mapping) and p.get("type") == kind
    )


def summary_text(content: Any) -> str:
    """The summaries of the reasoning parts of a message's content, joined: what a reasoning
    model says it is about to do when it calls a tool without a word."""
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        if is_reasoning(part):
            lc = part.get("reasoning")  # LangChain's block holds the summary as a string
            texts.append(lc if isinstance(lc, str) else _texts(part.get("summary"), "summary_text"))
    return "\n".join(t for t in texts if t)


def reasoning_item(part: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Responses API input item for a reasoning part, or ``None`` when the API could not
    resolve it (no id and no encrypted content)."""
    has_id = isinstance(part.get("id"), str) and bool(part.get("id"))
    encrypted = part.get("encrypted_content")
    if not has_id and not (isinstance(encrypted, str) and encrypted):
        return None
    if "summary" in part:
        return dict(part)
    # LangChain's standard block: {"type": "reasoning", "reasoning": "...", "id": ...}.
    item: dict[str, Any] = {"type": REASONING, "id": part.get("id"), "summary": []}
    text = part.get("reasoning")
    if isinstance(text, str) and text:
        item["summary"] = [{"type": "summary_text", "text": text}]
    if isinstance(encrypted, str) and encrypted:
        item["encrypted_content"] = encrypted
    return item
