"""A request to OpenAI's Responses API (``client.responses.create``), as a wrapper packs it.

Its ``input`` (a string or a list of items) is read as the chat messages ctxpack packs, with
parallel ``function_call`` items joined into one assistant message; ``instructions`` is the
system prompt beside them, counted and kept, as Anthropic's ``system``; ``max_output_tokens``
is the reply's room. The packed history goes back as ``input`` items, and tool definitions the
wrapper adds (a session's retrieve tool, tools on demand) in the Responses API's flat shape.

A request whose history OpenAI holds (``previous_response_id``, ``conversation``) is refused:
the wrapper would pack the new items alone, and could not keep the request within the window.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._internal.arguments import message_items
from ..adapters import to_openai
from ..errors import ConfigError, InvalidMessageError
from ..messages import Message
from ..sdk import coerce_messages
from ._session_feed import SYSTEM_PREFIX

__all__: list[str] = []

# The id of the system message ``instructions`` becomes while a request is packed.
INSTRUCTIONS_ID = "responses-instructions"


def given(value: Any) -> bool:
    """Whether a keyword argument was really given (the SDKs use NOT_GIVEN / omit sentinels)."""
    return value is not None and type(value).__name__ not in ("NotGiven", "Omit")


def packs(kwargs: Mapping[str, Any]) -> bool:
    """Whether the request has a history to pack: a stream resumed by ``response_id`` has none
    (OpenAI holds the request), so it goes out as given."""
    return not (given(kwargs.get("response_id")) and not given(kwargs.get("input")))


def request_input(kwargs: Mapping[str, Any]) -> list[Any]:
    """The request's ``input`` as chat message dicts.

    Raises:
        ConfigError: the history is OpenAI's (``previous_response_id``, ``conversation``).
        InvalidMessageError: ``input`` is missing, empty, or holds an item with no chat
            message (say, a ``reasoning`` item), its index and field named.
    """
    for key in ("previous_response_id", "conversation"):
        if given(kwargs.get(key)):
            raise ConfigError(
                f"{key}: OpenAI holds this request's history, which the wrapper cannot see, so "
                "it cannot keep the request within the window; send the whole history as input "
                f"(with store=False if you wish), or call client.wrapped.responses for {key}"
            )
    value = kwargs.get("input")
    if not given(value):
        raise InvalidMessageError("input: required, the request's input items (or a string)")
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    items = message_items(value, argument="input")
    if not items:
        raise InvalidMessageError("input: empty; a request needs at least one item")
    return list(coerce_messages(items))


def instructions(kwargs: Mapping[str, Any]) -> str | None:
    """The request's ``instructions``, the system prompt sent beside ``input``."""
    value = kwargs.get("instructions")
    if not given(value):
        return None
    if not isinstance(value, str):
        raise ConfigError(f"instructions must be a string, got {type(value).__name__}")
    return value


def with_instructions(messages: Sequence[Any], system: str | None) -> list[Any]:
    """``messages`` after ``system`` as a system message, which the packer keeps verbatim
    and counts against the budget."""
    if system is None:
        return list(messages)
    return [{"role": "system", "content": system, "id": INSTRUCTIONS_ID}, *messages]


def input_items(messages: Sequence[Message], system: str | None) -> list[dict[str, Any]]:
    """A packed history as ``input`` items, without the system message ``instructions``
    became (sent as ``instructions``, unchanged): the packer's, or the one a managed session
    opened its history with."""
    if system is not None and messages and messages[0].role == "system":
        first = messages[0].id
        if first == INSTRUCTIONS_ID or first.startswith(SYSTEM_PREFIX):
            messages = messages[1:]
    return to_openai(messages, api="responses")
