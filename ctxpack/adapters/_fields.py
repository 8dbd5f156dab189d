"""The field checks both validators make: a required string, a typed content entry, the object
a part carries, the names of a message's tool calls; each fails naming the message index and the
field."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from .._internal.arguments import TOOL_NAME, json_type_name
from .._internal.legacy_calls import sent_extras
from .._internal.part_fields import payload as payload
from .._internal.part_fields import require_str as require_str
from ..messages import Message
from ._turns import fail as _fail

__all__: list[str] = []


def typed_entry(entry: Any, noun: str, allowed: list[str], index: int | None, field: str) -> str:
    """The ``type`` of a content part or block, checked against ``allowed`` (listed in order)."""
    if not isinstance(entry, Mapping):
        raise _fail(
            f"a content {noun} must be an object, got {json_type_name(entry)}", index, field
        )
    kind = entry.get("type")
    if not isinstance(kind, str):
        raise _fail(f"every content {noun} needs a string type", index, f"{field}.type")
    if kind not in allowed:
        raise _fail(
            f"unknown {noun} type {kind!r}; expected one of {', '.join(allowed)}",
            index,
            f"{field}.type",
        )
    return kind


def check_speaker_name(msg: Message, index: int) -> None:
    """A message's ``name`` (the participant who spoke: a LangGraph agent's "Research Agent")
    that OpenAI refuses, as it refuses a tool's, fails here, named, rather than at the API."""
    if msg.name is not None and not TOOL_NAME.fullmatch(msg.name):
        raise _fail(
            f"{msg.name!r} is not a participant name OpenAI takes (^{TOOL_NAME.pattern}$); "
            "write it with letters, digits, _ and - only (Research_Agent), or leave it out",
            index,
            "name",
        )


def check_call_names(msg: Message, index: int, provider: str, *, legacy: bool = False) -> None:
    """A call to a tool whose name ``provider`` refuses in a history as in a definition (another
    provider's ``files.read``) fails here, named, rather than at the API: renaming it would
    leave the call naming a tool its definition does not. ``legacy``: the message's legacy
    ``function_call`` is sent too (Chat Completions holds it to the same pattern), unless tool
    calls leave it out."""
    named = [
        (call.function.name, f"tool_calls[{k}].{call.type}.name")
        for k, call in enumerate(msg.tool_calls or ())
    ]
    function_call = sent_extras(msg).get("function_call")
    if legacy and isinstance(function_call, Mapping):
        # Checked as a string by the validators already.
        named.append((str(function_call.get("name")), "function_call.name"))
    for name, field in named:
        if not TOOL_NAME.fullmatch(name):
            raise _fail(
                f"{name!r} is not a tool name {provider} takes "
                f"(^{TOOL_NAME.pattern}$); rename the tool, in its calls and its definition",
                index,
                field,
            )


# Why an assistant's audio reply (OpenAI's, by its id) has no Anthropic form.
NO_ANTHROPIC_AUDIO = "the Messages API takes no audio, nor refers to a prior audio response"


def refuse_audio_reply(
    fields: Mapping[str, Any], index: int, to: str, *, why: str, instead: str = ""
) -> None:
    """An assistant's prior audio reply (``audio``, which Chat Completions takes back by its id)
    fails here, named, for a ``to`` with no input for it, rather than being left out: with its
    content null, the model's whole turn went with it. ``fields``: the message's dict, or the
    extras of its :class:`~ctxpack.messages.Message`; ``instead``: another way out, said last."""
    if fields.get("audio") is not None:
        raise _fail(
            f"an assistant's audio reply has no {to} ({why}); write what it said (its "
            f"transcript) as the message's content and leave audio out{instead}",
            index,
            "audio",
        )


def id_digest(call_id: str) -> str:
    """A short digest of a tool call's id, which keeps two ids apart once each is rewritten in
    the form a provider takes (its characters, its length)."""
    return hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]
