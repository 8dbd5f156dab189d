"""A message whole as the text an artifact store keeps for its original (a clearing's or a
compaction's), with one rule for a value JSON cannot write."""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import to_jsonable_python

from ..messages import Message

__all__ = ["message_original"]


def message_original(msg: Message) -> str:
    """``msg`` as JSON, tool calls and metadata included.

    A session without a store takes any metadata value (a trace object, bytes that are not
    UTF-8): such a value is written as its type's name (``"<object, not JSON>"``), bytes as
    base64, rather than failing the render that stores the original; the result's
    ``original()`` still gives the message itself. Every other message is written as it always
    was, so that its artifact id stays the same.

    Example:
        >>> from ctxpack import Message
        >>> message_original(Message(role="user", content="hi", id="m1", metadata={"x": object()}))
        '{"role": "user", "content": "hi", ... "metadata": {"x": "<object, not JSON>"}, ...}'
    """
    try:
        data = msg.model_dump(mode="json")
    except ValueError:  # pydantic's serialisation error, or bytes that are not UTF-8
        data = to_jsonable_python(msg.model_dump(), fallback=_not_json, bytes_mode="base64")
    return json.dumps(data, ensure_ascii=False)


def _not_json(value: Any) -> str:
    # By the type alone: a repr may hold an address, and the artifact id would change per run.
    return f"<{type(value).__name__}, not JSON>"
