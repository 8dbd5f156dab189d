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
from .filters import gap_note, hidden, original_note
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


def oversized_view(text: str, *, artifact: str, retrievable: bool) -> str:
    """What the model is shown of ``text``, longer than :data:`MAX_MESSAGE_CHARS`: its whole
    lines within its first and last :data:`OVERSIZED_VIEW_CHARS` / 2 characters (a part of a
    line longer than that), a note in between naming what is hidden, and at the end the
    marker every shortened output ends with: how much was hidden, the artifact ``artifact``
    the original is stored as and, when ``retrievable`` (the retrieve tool is offered), how
    to read the rest.

    Example:
        >>> view = oversized_view("a\\n" * 10_000_000, artifact="art_1", retrievable=True)
        >>> print(view[3_990:].replace("a\\n", ""))
        [… 9996001 lines hidden: 2001-9998001]
        [ctxpack: oversized message shortened (above ctxpack's limit of 10,000,000 characters;
        its head and tail kept, 19,992,002 of its 20,000,000 characters hidden); original:
        10000001 lines, artifact art_1; more with retrieve_original(artifact="art_1",
        lines="A-B" or regex="...")]
    """
    half = OVERSIZED_VIEW_CHARS // 2
    # Cut where a line ends when that keeps at least half of each end (a note then names
    # whole lines); else within the line, which shows more of it.
    start = text.rfind("\n", 0, half) + 1
    start = start if start >= half // 2 else half
    after = text.find("\n", len(text) - half) + 1
    stop = after if 0 < after <= len(text) - half // 2 else len(text) - half
    first, last = text.count("\n", 0, start) + 1, text.count("\n", 0, stop - 1) + 1
    if text[start - 1] == "\n" and text[stop - 1] == "\n":
        gap = gap_note(first, last)
    else:
        lines = f"line {first}" if first == last else f"lines {first}-{last}"
        gap = hidden(stop - start, "characters", f": part of {lines}")
    what = (
        f"oversized message shortened (above ctxpack's limit of {MAX_MESSAGE_CHARS:,} "
        f"characters; its head and tail kept, {stop - start:,} of its {len(text):,} characters "
        "hidden)"
    )
    marker = original_note(what, artifact, lines=text.count("\n") + 1, retrievable=retrievable)
    head = text[:start].removesuffix("\n")
    tail = text[stop:].removesuffix("\n")
    return "\n".join([head, gap, tail, marker])
