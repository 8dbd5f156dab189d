"""One message as a caller hands it over, in either provider's format, read in one pass.

A :class:`~ctxpack.Session` appends messages one at a time, each an OpenAI or an Anthropic
message dict (or an SDK object, or a :class:`~ctxpack.messages.Message`). :func:`read_message`
turns one into ctxpack messages: the SDK's objects become dicts once, the format is told from
the message (:mod:`ctxpack.providers`) unless the caller said it, and the adapter of that format
converts it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidMessageError
from ..messages import Message, detached
from ..providers import Provider, check_provider, provider_from_message
from ..sdk import SDKObject, coerce_message, not_a_message
from ._anthropic import read_anthropic
from ._openai import read_openai
from ._validate import _check_anthropic_message, check_openai_message

__all__: list[str] = []


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
        return [detached(message, index)], None
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


def check_counted_message(entry: Any, index: int) -> None:
    """The rules of the format ``entry`` is in, for what reads messages as given to count or
    bill them (count_tokens, context_usage, simulate): a message holding a block only Anthropic
    has is counted as Anthropic's, so it is checked as Anthropic's, as :func:`read_message`
    checks it; any other as :func:`~ctxpack.adapters.check_openai_message` does."""
    if isinstance(entry, Mapping) and provider_from_message(entry) == "anthropic":
        _check_anthropic_message(entry, index)
    else:
        check_openai_message(entry, index)


# A plain dict (role, string content) is in neither format's blocks and passes the OpenAI rules.
check_counted_message.passes_plain_dicts = True  # type: ignore[attr-defined]
