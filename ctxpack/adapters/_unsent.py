"""Messages no writer sends anything of: a reasoning model's reasoning, alone in its message,
with nothing of its response after it.

A ``reasoning`` item is kept as a part of the assistant message it led to; appended alone (a
reply cut short while reasoning, a session given the items one by one) it is a message of its
own until what it led to arrives. The Responses API refuses a reasoning item followed by
nothing of its response, so ``to_openai(api="responses")`` writes it only right before the
message or calls it led to, with their ids, and Chat Completions and Anthropic have no place for
it. Packing drops such a message, recorded (see
:func:`~ctxpack.stages._tool_pairs.without_unsent_reasoning`), so that a result counts only what
is sent; and from a message it keeps, the reasoning parts the writer leaves out (with neither an
id nor encrypted content, or before calls or text written without the ids of their response).
"""

from __future__ import annotations

from collections.abc import Sequence

from .._internal import tool_items
from .._internal.compaction import is_openai_compaction
from .._internal.prefix import PrefixMemo
from .._internal.reasoning import is_reasoning, reasoning_item
from ..errors import InvalidMessageError
from ..messages import Message
from ._openai import to_openai
from ._responses import pairs_reasoning, responses_link

__all__: list[str] = []  # ctxpack's own (through ctxpack.adapters): packing drops these


def unsent_reasoning(messages: Sequence[Message]) -> list[int]:
    """The positions of the messages of reasoning alone that no writer sends.

    The Responses writer holds such reasoning, and the calls of tools OpenAI ran, until an
    assistant message with text or calls, and writes the reasoning before it when it pairs
    with that message's ids; so a run of assistant messages without text or calls is sent
    with the message after it, or not at all. Whether it pairs is the writer's own answer,
    asked of that run and message alone.
    """
    waiting = _WAITING(messages)
    unsent: list[int] = []
    if True not in waiting:  # most histories: a scan in C, the flags memoised across packs
        return unsent
    start: int | None = None  # where the run of messages waiting for their response began
    for index, message in enumerate(messages):
        if waiting[index]:
            start = index if start is None else start
        elif start is not None:
            unsent += _unpaired(messages, start, index, message)
            start = None
    if start is not None:
        unsent += _unpaired(messages, start, len(messages), None)
    return unsent


def unsent_reasoning_parts(messages: Sequence[Message]) -> dict[int, tuple[int, ...]]:
    """By message position, the positions of the reasoning parts no writer sends in the
    messages that hold reasoning beside text or calls (those of reasoning alone are
    :func:`unsent_reasoning`'s)."""
    found = _UNSENT_PARTS(messages)
    if not any(found):  # most histories: a scan in C, memoised across packs
        return {}
    return {index: parts for index, parts in enumerate(found) if parts}


def _unsent_parts(message: Message) -> tuple[int, ...]:
    """The positions of ``message``'s reasoning parts the Responses writer leaves out, asked
    of the message alone: its own reasoning goes before it when the message's ids pair it
    (reasoning appended alone before it is :func:`unsent_reasoning`'s)."""
    content = message.content
    if (
        message.role != "assistant"
        or not isinstance(content, list)
        or not any(map(is_reasoning, content))
        or _waiting(message)
    ):
        return ()
    reasoning = [k for k, part in enumerate(content) if is_reasoning(part)]
    # The writer's own rule, asked of the message's ids (writing it would cost a conversion
    # of each such message of a history: a third of a cold pack of a reasoning model's).
    calls = [call.id for call in message.tool_calls or ()]
    if not pairs_reasoning(responses_link(message), _says(message), calls):
        return tuple(reasoning)  # not paired: none of it goes
    # Paired: what the API could not resolve (no id, nothing encrypted) is left out.
    return tuple(k for k in reasoning if reasoning_item(content[k]) is None)


def _says(message: Message) -> bool:
    """Whether the Responses writer writes an assistant message's text (its text and refusal
    parts, its refusal field): the text the response's message id goes with."""
    refusal, content = message.extras.get("refusal"), message.content
    if isinstance(content, str) or (isinstance(refusal, str) and refusal):
        return bool(content) or bool(refusal)
    return any(part.get("type") in ("text", "refusal") for part in content or ())


_UNSENT_PARTS: PrefixMemo[Message, tuple[int, ...]] = PrefixMemo(_unsent_parts)


def _unpaired(
    messages: Sequence[Message], start: int, end: int, after: Message | None
) -> list[int]:
    """The messages of reasoning alone among ``messages[start:end]``, a run waiting for its
    response, when the reasoning does not go before ``after`` (the next message, if any)."""
    run = messages[start:end]
    if _paired(run, after):
        return []
    return [start + k for k, message in enumerate(run) if _reasoning_alone(message)]


def _waiting(message: Message) -> bool:
    """An assistant message without text or calls whose parts go before what its response
    said next: reasoning, the calls of tools OpenAI ran, a compaction item."""
    content = message.content
    return (
        message.role == "assistant"
        and not message.tool_calls
        and isinstance(content, list)
        and bool(content)
        and not message.extras
        and all(
            is_reasoning(p) or tool_items.is_server_item(p) or is_openai_compaction(p)
            for p in content
        )
    )


_WAITING: PrefixMemo[Message, bool] = PrefixMemo(_waiting)


def _reasoning_alone(message: Message) -> bool:
    return all(is_reasoning(part) for part in message.content or ())


def _paired(run: Sequence[Message], after: Message | None) -> bool:
    """Whether the Responses writer sends the reasoning of ``run`` before ``after``."""
    if after is None or after.role != "assistant" or not any(map(_reasoning_alone, run)):
        return False
    try:
        items = to_openai([*run, after], api="responses")
    except InvalidMessageError:
        # What the Responses API cannot take is refused when written: not this step's to say.
        return True
    return any(is_reasoning(item) for item in items)
