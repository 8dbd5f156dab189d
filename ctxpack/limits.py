"""The size limit on one message, and what the model is shown of a message above it.

A tool can return anything: a 100 MB log, a database dump. Counting, filtering and validating such
a text takes many times its size in memory, and no model's window holds it anyway. So a message
whose text is longer than :data:`MAX_MESSAGE_CHARS` characters is never processed whole:

- :class:`ctxpack.Session` stores it whole (its original is retrievable, as for any filtered
  output) and shows the model :func:`oversized_view`: its head and tail and how to read the rest;
- :func:`ctxpack.pack` refuses it with an :class:`~ctxpack.InvalidMessageError` that names the
  message and says what to do, before any work is done on it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._internal.prefix import PrefixMemo
from .errors import InvalidMessageError
from .messages import Message

__all__ = [
    "MAX_MESSAGE_CHARS",
]

MAX_MESSAGE_CHARS = 10_000_000
"""The most characters of text one message may hold (10 MB of ASCII): its content's text and its
tool calls' arguments together."""

OVERSIZED_VIEW_CHARS = 8_000
"""Characters of an oversized message the model is shown: its head and its tail, half each."""


def message_chars(msg: Message) -> int:
    """Characters of text ``msg`` holds: its content's text parts and its tool calls' arguments.

    Example:
        >>> message_chars(Message(role="user", content="hello"))
        5
    """
    content = msg.content
    size = len(content) if isinstance(content, str) else 0
    if isinstance(content, list):
        size = sum(len(str(part.get("text", ""))) for part in content)
    for call in msg.tool_calls or ():
        size += len(call.function.arguments)
    return size


# Per message, memoised for the history packed again next turn (ctxpack's own messages only).
_SIZES: PrefixMemo[Message, int] = PrefixMemo(message_chars)


def check_message_sizes(messages: Sequence[Message]) -> None:
    """Refuse a message above :data:`MAX_MESSAGE_CHARS`, naming the first one.

    Only for ctxpack's own messages (see :class:`~ctxpack._internal.prefix.PrefixMemo`).

    Raises:
        InvalidMessageError: the message's index, its size, the limit and what to do.
    """
    sizes = _SIZES(messages)
    if not sizes or max(sizes) <= MAX_MESSAGE_CHARS:
        return
    index = next(i for i, size in enumerate(sizes) if size > MAX_MESSAGE_CHARS)
    raise InvalidMessageError(
        f"{sizes[index]:,} characters, above the limit of {MAX_MESSAGE_CHARS:,} characters "
        "per message (ctxpack.limits.MAX_MESSAGE_CHARS); no model's window holds it. Shorten "
        "it before packing, or give it to a ctxpack.Session, which stores it whole and shows "
        "the model its head and tail",
        index=index,
        field="content",
    )


def oversized_view(text: str, *, artifact: str | None) -> str:
    """What the model is shown of ``text``, longer than :data:`MAX_MESSAGE_CHARS`: its first
    and last :data:`OVERSIZED_VIEW_CHARS` / 2 characters around a note that says how much was
    left out and, when the original was stored, its artifact id to retrieve it by.

    Example:
        >>> view = oversized_view("a" * 20_000_000, artifact="art-1")
        >>> len(view) < 9_000, "20,000,000 characters" in view, "art-1" in view
        (True, True, True)
    """
    half = OVERSIZED_VIEW_CHARS // 2
    where = (
        f"the original is stored as artifact {artifact}: retrieve a part of it by that id"
        if artifact
        else "the original is not stored"
    )
    note = (
        f"\n[... output shortened: {len(text):,} characters, above ctxpack's limit of "
        f"{MAX_MESSAGE_CHARS:,}; {len(text) - 2 * half:,} characters left out between the "
        f"first and last {half:,}; {where} ...]\n"
    )
    return text[:half] + note + text[-half:]
