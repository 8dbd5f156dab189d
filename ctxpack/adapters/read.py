"""One message as a caller hands it over, in either provider's format, read in one pass.

A :class:`~ctxpack.Session` appends messages one at a time, each an OpenAI or an Anthropic
message dict (or an SDK object, or a :class:`~ctxpack.messages.Message`). :func:`read_message`
turns one into ctxpack messages: the SDK's objects become dicts once, the format is told from
the message (Anthropic's if it holds a block only Anthropic has) unless the caller said it,
and the adapter of that format converts it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._internal.arguments import message_items
from .._internal.compaction import last_compaction, read_from
from .._internal.provider_arg import check_provider
from ..errors import InvalidMessageError
from ..messages import (
    Message,
    checked_copy,
    ensure_messages,
    is_unchecked,
    owned_messages,
    provider_of,
)
from ..sdk import SDKObject, coerce_message, not_a_message
from ._anthropic import read_anthropic
from ._converted import has_anthropic_blocks, provider_from_message
from ._validate import OPENAI_PART_TYPES, check_openai_message, validate_openai

if TYPE_CHECKING:
    from ..providers import Provider

__all__: list[str] = []

# The types of OpenAI's parts, none a block only Anthropic has ("text" first: the most).
_OPENAI_PARTS = ("text", *sorted(OPENAI_PART_TYPES - {"text"}))

# Marks a message that had no "content" key at all, as opposed to "content": null.
NO_CONTENT = "openai_no_content"


def read_message(
    message: Mapping[str, Any] | Message | SDKObject, provider: str | None, index: int
) -> tuple[list[Message], Provider | None]:
    """``message`` as ctxpack messages, and the format it came in (``None`` for a
    :class:`~ctxpack.messages.Message`, which has none). An Anthropic user message holding tool
    results becomes one tool message per result.

    Args:
        message: The message.
        provider: ``"openai"`` or ``"anthropic"``; ``None`` to tell it from the message
            (Anthropic's if it holds a block only Anthropic has).
        index: The message's position, named in errors.

    Raises:
        InvalidMessageError: the message is malformed (``index`` and the field named).
        ConfigError: ``provider`` is neither ``"openai"`` nor ``"anthropic"``.

    Example:
        >>> use = {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}
        >>> messages, provider = read_message({"role": "assistant", "content": [use]}, None, 0)
        >>> provider, messages[0].tool_calls[0].function.name
        ('anthropic', 'ls')
    """
    if isinstance(message, Message):
        # A copy: the caller may go on editing its message's content parts or metadata.
        return [checked_copy(message, index, None)], None
    entry = coerce_message(message, index)  # the SDKs' objects, as dicts
    if not isinstance(entry, Mapping):
        raise InvalidMessageError(not_a_message(entry), index=index)
    kind = provider_from_message(entry) if provider is None else check_provider(provider)
    try:
        if kind == "anthropic":
            return read_anthropic([entry]), kind
        return read_openai([entry]), kind
    except InvalidMessageError as exc:
        raise InvalidMessageError(exc.detail, index=index, field=exc.field) from exc


def counted_messages(
    messages: Iterable[Message | Mapping[str, Any] | SDKObject],
) -> tuple[Message, ...]:
    """Messages given to count or bill them (count_tokens, a counter, context_usage, simulate)
    or to write them in OpenAI's format (:func:`~ctxpack.adapters.to_openai`), read as the
    provider reads them. A list holding an Anthropic message (a block only Anthropic
    has) is read message by message as :func:`read_message` reads it for ``Session.append``: a
    ``tool_result`` is counted as the tool message Claude reads, not as its JSON, and the images
    and documents it holds as such; a :class:`~ctxpack.messages.Message` holding such a block
    (built by hand, not by :func:`~ctxpack.adapters.from_anthropic`) is read as its dict. The
    messages before the last ``compaction`` block of a list (system messages aside) and the
    blocks before it in its message, which the API drops, are left out, whether the block is
    in a dict or a :class:`~ctxpack.messages.Message`. Any other
    list is read as :func:`ctxpack.pack` reads it (checked, cached by identity).

    Raises:
        InvalidMessageError: ``messages`` is not a list, or a message is malformed (index and
            field named).
    """
    return read_messages(messages)[0]


def read_counted(
    messages: Iterable[Message | Mapping[str, Any] | SDKObject],
) -> Sequence[Message]:
    """The messages a counter was given, read as :func:`counted_messages` reads them; a list of
    ctxpack's own :class:`~ctxpack.messages.Message` objects that :func:`read_as_given` passes
    is returned as it is (the counters' common case costs a few passes of checks)."""
    if isinstance(messages, (list, tuple)) and read_as_given(messages):
        return messages
    return counted_messages(messages)


def read_as_given(messages: Sequence[Any]) -> bool:
    """Whether :func:`counted_messages` reads ``messages`` as they are: ctxpack's own
    :class:`~ctxpack.messages.Message` objects, none holding a ``compaction`` block (from which
    on the API reads the history) nor read as Anthropic's (:func:`read_as_anthropic`), and
    each validated by pydantic (one made by ``model_construct()`` is checked as it is read)."""
    # One pass; a text content (most of them) holds no block to look at, and OpenAI's parts
    # (a tuple: a type may be a list, which a set cannot look up) neither Anthropic's nor a
    # compaction block.
    blocks: list[Any] = []
    for m in messages:
        if not isinstance(m, Message) or is_unchecked(m):
            return False
        content = m.content
        if isinstance(content, list):
            if all(type(b) is dict and b.get("type") in _OPENAI_PARTS for b in content):
                continue
            if read_as_anthropic(m):
                return False
            blocks.append(content)
    return last_compaction(blocks) is None


def read_messages(
    messages: Iterable[Message | Mapping[str, Any] | SDKObject],
) -> tuple[tuple[Message, ...], list[int]]:
    """:func:`counted_messages`, and the caller's entry each message was read from (an
    Anthropic user message holding tool results is read as several), for an error found later
    to name the caller's index (:func:`ctxpack.sdk.item_error`)."""
    items = tuple(_anthropic_entry(item) or item for item in message_items(messages))
    entries = [_entry(item, index) for index, item in enumerate(items)]
    # The API reads the history from the last compaction block on (the system prompt aside),
    # as from_anthropic reads it: the messages before it are what the summary stands for. A
    # Message holds the block as a dict does (a session's, the reply that brought it).
    kept, found = read_from(
        [_content(item, entry) for item, entry in zip(items, entries, strict=True)],
        [_role(item, entry) for item, entry in zip(items, entries, strict=True)],
    )
    if found is None and not any(e is not None and has_anthropic_blocks(e) for e in entries):
        read = owned_messages(items, check=check_openai_message)
        # owned_messages names the caller's entry itself; later errors name the message's.
        return read, list(range(len(read)))
    message = items[found[0]] if found is not None else None
    if found and isinstance(message, Message) and isinstance(message.content, list):
        # A dict is read from the block on (from_anthropic's rule); a Message, which
        # read_message keeps whole, is cut here: the blocks before it are what the summary
        # replaced.
        cut = message.model_copy(update={"content": message.content[found[1] :]})
        items = (*items[: found[0]], cut, *items[found[0] + 1 :])
    pairs = [(m, i) for i in kept for m in read_message(items[i], None, i)[0]]
    return tuple(m for m, _ in pairs), [i for _, i in pairs]


def _anthropic_entry(item: Any) -> dict[str, Any] | None:
    """A :class:`~ctxpack.messages.Message` holding a block only Anthropic has, which
    :func:`~ctxpack.adapters.from_anthropic` did not make (one built by hand), as the dict it
    stands for, so that it is read as that dict is: as Anthropic's, its ``tool_use`` blocks as
    calls, its ``tool_result`` blocks as tool messages. ``None`` for anything else."""
    if not isinstance(item, Message) or not read_as_anthropic(item):
        return None
    entry: dict[str, Any] = {**item.extras, "role": item.role, "content": item.content}
    # An id left empty is given one as a dict's is.
    fields = {"id": item.id or None, "name": item.name, "tool_call_id": item.tool_call_id}
    entry.update((key, value) for key, value in fields.items() if value is not None)
    if item.tool_calls:
        entry["tool_calls"] = [call.model_dump() for call in item.tool_calls]
    return entry


def read_as_anthropic(message: Message) -> bool:
    """Whether ``message`` is read as the Anthropic message dict it stands for: it holds a block
    only Anthropic has, and :func:`~ctxpack.adapters.from_anthropic` did not make it."""
    content = message.content
    return (
        provider_of(message) != "anthropic"
        and isinstance(content, list)
        and has_anthropic_blocks({"content": [b for b in content if not _langchain_image(b)]})
    )


def _langchain_image(block: Any) -> bool:
    """An ``image`` block without Anthropic's ``source``: LangChain's (``base64``, ``url``,
    ``source_type``...), which :func:`~ctxpack.adapters.from_langchain` keeps as it is and the
    counters read as such."""
    return isinstance(block, Mapping) and block.get("type") == "image" and "source" not in block


def _entry(item: Any, index: int) -> Mapping[str, Any] | None:
    """``item`` as a dict (an SDK object's), or ``None`` for a message or what is no dict."""
    if isinstance(item, Message):
        return None
    entry = item if isinstance(item, Mapping) else coerce_message(item, index)
    return entry if isinstance(entry, Mapping) else None


def _content(item: Any, entry: Mapping[str, Any] | None) -> Any:
    return item.content if isinstance(item, Message) else entry and entry.get("content")


def _role(item: Any, entry: Mapping[str, Any] | None) -> Any:
    return item.role if isinstance(item, Message) else entry and entry.get("role")


def read_openai(entries: list[Mapping[str, Any]]) -> list[Message]:
    """:func:`~ctxpack.adapters.from_openai` for messages that are plain dicts already (no SDK
    object)."""
    validate_openai(entries, tool_pairing=False)
    out: list[Mapping[str, Any]] = []
    for entry in entries:
        metadata = entry.get("metadata")
        metadata = {} if metadata is None else metadata
        # Metadata that is not a mapping is left for the message model to refuse, naming it.
        if "content" not in entry and isinstance(metadata, Mapping):
            entry = {**entry, "metadata": {**metadata, NO_CONTENT: True}}
        out.append(entry)
    # Checked above: the parts' fields are not checked again as the messages are made.
    return ensure_messages(out, check=_checked_above)


def _checked_above(entry: Mapping[str, Any], index: int) -> None:
    """The check :func:`read_openai` ran already (validate_openai's), as ensure_messages'
    check: it says of itself what that check does (see check_openai_message)."""


_checked_above.passes_plain_dicts = True  # type: ignore[attr-defined]
_checked_above.checks_parts = True  # type: ignore[attr-defined]
