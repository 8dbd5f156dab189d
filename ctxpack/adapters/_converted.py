"""The messages :func:`~ctxpack.adapters.to_anthropic` reads: dicts in OpenAI's shape checked as
:func:`ctxpack.pack` checks them, a message holding a block only Anthropic has taken as it is,
its blocks objects with a type (:func:`~ctxpack.adapters.to_anthropic` checks their fields as it
sends them; :func:`~ctxpack.adapters.to_openai` reads such messages through
:mod:`ctxpack.adapters.read`, which translates them)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._internal.compaction import is_openai_compaction
from ..messages import Message, owned_messages
from ..sdk import SDKObject
from ._validate import (
    ANTHROPIC_BLOCKS,
    OPENAI_PART_TYPES,
    check_block_types,
    check_openai_message,
)

if TYPE_CHECKING:
    from ..providers import Provider

__all__: list[str] = []

# Content blocks only Anthropic's Messages API has: a message holding one is Anthropic's.
ANTHROPIC_ONLY_BLOCKS = frozenset(ANTHROPIC_BLOCKS) - OPENAI_PART_TYPES


def has_anthropic_blocks(message: Mapping[str, Any]) -> bool:
    """Whether a message dict holds a content block only Anthropic has (``tool_use``,
    ``tool_result``, ``thinking``, ``image``...)."""
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(block, Mapping)
        and isinstance(kind := block.get("type"), str)
        and kind in ANTHROPIC_ONLY_BLOCKS
        and not is_openai_compaction(block)  # OpenAI's item shares the block's type
        for block in content
    )


def provider_from_message(message: Mapping[str, Any]) -> Provider:
    """The format of one message dict: Anthropic's if it holds a block only Anthropic has."""
    return "anthropic" if has_anthropic_blocks(message) else "openai"


def _checked(entry: Mapping[str, Any], index: int) -> None:
    if not has_anthropic_blocks(entry):
        check_openai_message(entry, index)
    else:
        # Each block an object with a type, named before the message model reads them; what
        # the API requires of each block's fields, to_anthropic checks as it sends them.
        check_block_types(entry.get("content"), index)


def converted_messages(
    messages: Iterable[Message | Mapping[str, Any] | SDKObject],
) -> tuple[Message, ...]:
    """``messages`` as :func:`~ctxpack.adapters.to_anthropic` reads them: a malformed OpenAI
    message (a tool call without an id, an ``image_url`` that is not an object) refused naming
    its index and field, rather than failing inside the conversion or going out as a request the
    provider refuses.

    Raises:
        InvalidMessageError: ``messages`` is not a list, or a message is malformed.
    """
    return owned_messages(messages, check=_checked)
