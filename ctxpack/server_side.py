"""Server-side context management: the provider clears and compacts, from ctxpack's configuration.

One :class:`~ctxpack.managed.WindowPolicy` drives either side. With ``server_side=True`` a
managed session leaves the edits to the provider: :func:`anthropic_context_management` and
:func:`openai_context_management` turn the policy into the request fields (Anthropic's
``context_management`` edits ``clear_thinking_20251015``, ``clear_tool_uses_20250919`` and
``compact_20260112``, with their beta headers; OpenAI's Responses ``context_management``
compaction entry), and :func:`response_decisions` reads what came back (Anthropic's
``context_management.applied_edits`` and ``compaction`` blocks, OpenAI's ``compaction`` output
items) as decisions.

The triggers are the policy's shares of the room (the window less the reply room); compaction
cannot trigger under :data:`~ctxpack.editing.COMPACTION_FLOOR` input tokens on Anthropic's side,
so a smaller trigger is raised to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._internal.arguments import shown, type_name
from ._internal.compaction import is_compaction
from .editing import COMPACTION_FLOOR
from .errors import ConfigError, InvalidMessageError
from .managed import WindowPolicy
from .pipeline import Decision
from .providers import is_anthropic_response
from .sdk import is_sdk_object

__all__: list[str] = []

# The beta headers the edits need: context editing, and threshold compaction.
ANTHROPIC_BETAS = ("context-management-2025-06-27", "compact-2026-01-12")


def anthropic_context_management(policy: WindowPolicy, *, tool_tokens: int = 0) -> dict[str, Any]:
    """The ``context_management`` field of an Anthropic Messages request (send it with
    ``betas=list(ANTHROPIC_BETAS)``).

    ``clear_thinking_20251015`` comes first when the policy clears thinking (the API requires
    it first), then ``clear_tool_uses_20250919`` (trigger at ``clear_at`` of the room, keep the
    ``keep`` most recent tool uses, and clear at least ``clear_at_least`` input tokens when the
    policy sets it), then ``compact_20260112`` (trigger at ``compact_at`` of the
    room, at least the 50,000-token floor, with the policy's instructions).

    Example:
        >>> field = anthropic_context_management(WindowPolicy(window=200_000, server_side=True))
        >>> [edit["type"] for edit in field["edits"]]
        ['clear_tool_uses_20250919', 'compact_20260112']
        >>> field["edits"][0]["trigger"]
        {'type': 'input_tokens', 'value': 67132}
    """
    room = policy.room(tool_tokens=tool_tokens)
    edits: list[dict[str, Any]] = []
    if policy.keep_thinking is not None:
        edits.append(
            {
                "type": "clear_thinking_20251015",
                "keep": {"type": "thinking_turns", "value": policy.keep_thinking},
            }
        )
    clear: dict[str, Any] = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "input_tokens", "value": int(policy.clear_at * room)},
        "keep": {"type": "tool_uses", "value": policy.keep},
    }
    if policy.clear_at_least:
        clear["clear_at_least"] = {"type": "input_tokens", "value": policy.clear_at_least}
    edits.append(clear)
    compact: dict[str, Any] = {
        "type": "compact_20260112",
        "trigger": {
            "type": "input_tokens",
            "value": max(COMPACTION_FLOOR, int(policy.compact_at * room)),
        },
    }
    if policy.instructions:
        compact["instructions"] = policy.instructions
    edits.append(compact)
    return {"edits": edits}


def openai_context_management(
    policy: WindowPolicy, *, tool_tokens: int = 0
) -> list[dict[str, Any]]:
    """The ``context_management`` field of an OpenAI Responses request: compaction once the
    input passes ``compact_at`` of the room (OpenAI has no clearing edit).

    Example:
        >>> openai_context_management(WindowPolicy(window=128_000, server_side=True))
        [{'type': 'compaction', 'compact_threshold': 71884}]
    """
    room = policy.room(tool_tokens=tool_tokens)
    return [{"type": "compaction", "compact_threshold": int(policy.compact_at * room)}]


def response_decisions(response: Any, *, message_id: str) -> list[Decision]:
    """What the provider's context management did for one response, as decisions.

    Args:
        response: An Anthropic Messages response or an OpenAI Responses response (the SDK's
            object or its dict).
        message_id: The id the decisions name (the assistant message the response becomes).

    Returns:
        One ``cleared`` decision per applied clearing edit (with the input tokens it cleared;
        ``None`` when the reply leaves the count out),
        one ``merged`` decision per compaction block or item (``warned`` for an Anthropic
        block whose null content says the compaction failed); none when nothing was applied.

    Raises:
        InvalidMessageError: ``response`` is neither kind of response, or a field of it is
            malformed (the error names the field).
    """
    body, anthropic = response_body(response)
    out: list[Decision] = []
    management = body.get("context_management")
    if management is not None and not isinstance(management, Mapping):
        raise _malformed("context_management", "must be an object", management)
    edits = _listed(management, "applied_edits", "context_management.applied_edits")
    for i, edit in enumerate(edits):
        where = f"context_management.applied_edits[{i}]"
        if not isinstance(edit, Mapping):
            raise _malformed(where, "must be an object", edit)
        kind = edit.get("type")
        if not isinstance(kind, str) or not kind:
            raise _malformed(
                f"{where}.type", "must name the edit (such as 'clear_tool_uses_20250919')", kind
            )
        # A count the reply leaves out is unknown, not 0: the provider did clear something.
        cleared = None
        if edit.get("cleared_input_tokens") is not None:
            cleared = _count(edit, "cleared_input_tokens", where, "tokens")
        # An edit names what it cleared by its own count: tool uses, thinking turns, or (an
        # edit this code does not know yet) only the tokens.
        what = (
            "an unreported number of input tokens" if cleared is None else f"{cleared} input tokens"
        )
        for key, unit in (
            ("cleared_tool_uses", "tool uses"),
            ("cleared_thinking_turns", "thinking turns"),
        ):
            if key in edit:
                what = f"{_count(edit, key, where, unit)} {unit} ({what})"
                break
        out.append(
            Decision(
                stage="server",
                action="cleared",
                message_id=message_id,
                reason=f"the provider's {kind} cleared {what}",
                tokens_before=cleared,
                tokens_after=None if cleared is None else 0,
            )
        )
    key = "content" if anthropic else "output"
    for i, block in enumerate(_listed(body, key, key)):
        if not isinstance(block, Mapping):
            raise _malformed(f"{key}[{i}]", "must be an object", block)
        if block.get("type") == "compaction":
            _check_compaction(block, anthropic, f"{key}[{i}]")
            out.append(_compaction(block, anthropic, message_id))
    return out


def _check_compaction(block: Mapping[str, Any], anthropic: bool, where: str) -> None:
    """A compaction block or item that cannot be sent back, refused naming its field."""
    if anthropic and block.get("content") == "":
        # The API refuses it sent back; null is its mark of a failed compaction.
        raise _malformed(
            f"{where}.content",
            "a compaction block's summary must not be empty (null marks a failed one)",
            "",
        )
    encrypted = block.get("encrypted_content")
    if not anthropic and (not isinstance(encrypted, str) or not encrypted):
        # The item is the whole compacted context: without it there is nothing to send back,
        # and a `merged` decision would tell of a compaction that is lost.
        raise _malformed(
            f"{where}.encrypted_content",
            "a compaction item carries its context, a non-empty string",
            encrypted,
        )


def _compaction(block: Mapping[str, Any], anthropic: bool, message_id: str) -> Decision:
    """The decision of a compaction block (Anthropic's) or item (OpenAI's, always opaque)."""
    summary = block.get("content")
    if anthropic and not is_compaction(block):
        # Anthropic's mark of a compaction that produced no summary: the server compacted
        # nothing, and reads the block sent back as a no-op.
        return Decision(
            stage="server",
            action="warned",
            message_id=message_id,
            reason=(
                "the provider's compaction failed to produce a summary (the compaction block's "
                "content is null): nothing was compacted"
            ),
        )
    if anthropic:
        kind = "an opaque summary" if not isinstance(summary, str) else "a summary"
        reason = (
            f"the provider compacted the history into {kind}; send the compaction block back "
            "unchanged in the next request"
        )
    else:
        reason = (
            "the provider compacted the history into an opaque summary, its compaction item; "
            "send the item back unchanged in the next request (with the response's output)"
        )
    return Decision(stage="server", action="merged", message_id=message_id, reason=reason)


def response_body(response: Any) -> tuple[Mapping[str, Any], bool]:
    """``response`` as a dict, and whether it is an Anthropic Messages response (else it is an
    OpenAI Responses response).

    Raises:
        InvalidMessageError: ``response`` is neither; recording nothing from it would hide
            that the caller passed the wrong object.
    """
    body = (
        response.model_dump(mode="json", by_alias=True, exclude_unset=True)
        if is_sdk_object(response)
        else response
    )
    if isinstance(body, Mapping):
        if is_anthropic_response(body):
            return body, True
        if body.get("object") == "response" or "output" in body:
            return body, False
        if "choices" in body:
            seen = (
                "a Chat Completions response, which reports no context management (append its "
                "choices[0].message instead)"
            )
        elif body.get("role") == "assistant":
            seen = (
                "a Chat Completions message (tool_calls, or content that is not a list of "
                "blocks), which reports no context management"
            )
        elif "role" in body:
            seen = f"its role is {shown(body['role'], 80)}, not 'assistant'"
        elif not body:
            seen = "an empty object"
        else:
            keys = shown(sorted(map(str, body))[:8], 80)
            seen = f"an object with neither role 'assistant' nor output items (keys {keys})"
    else:
        seen = f"got {type_name(response)}"
    raise InvalidMessageError(
        f"response: not an Anthropic Messages or OpenAI Responses response: {seen}"
    )


def _malformed(field: str, wanted: str, value: Any) -> InvalidMessageError:
    got = shown(value, 80) if isinstance(value, str) else type_name(value)
    return InvalidMessageError(f"{field}: {wanted}, got {got}", field=field)


def _listed(body: Any, key: str, field: str) -> list[Any]:
    """The list at ``body[key]`` of a response (empty when absent); anything else is a
    malformed response, named by its ``field``."""
    value = body.get(key) if isinstance(body, Mapping) else None
    if value is None or isinstance(value, str):
        return []  # a text reply holds no block
    if not isinstance(value, list):
        raise InvalidMessageError(
            f"{field}: the response's {key} must be a list, got {type(value).__name__}",
            field=field,
        )
    return value


def _count(edit: Mapping[str, Any], key: str, where: str, unit: str) -> int:
    value = edit.get(key) or 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidMessageError(
            f"{where}.{key}: a count of {unit}, an int >= 0, got {shown(value, 80)}",
            field=f"{where}.{key}",
        )
    return value


def openai_request_fields(
    fields: Mapping[str, Any], *, own: bool, responses: bool
) -> dict[str, Any]:
    """What a wrapped OpenAI request adds for a server-side session: its ``fields``
    (``session.context_management()``) for the Responses API, nothing when the request has
    its ``own`` ``context_management``.

    Raises:
        ConfigError: a Chat Completions request, which has no context management: the window
            would be managed by no one.
    """
    if not responses:
        raise ConfigError(
            "a server-side managed session hands the window to OpenAI's Responses API "
            "compaction, which Chat Completions has no field for: send with "
            "client.responses.create (or .parse, .stream), or manage the window on the client "
            "side (WindowPolicy(server_side=False))"
        )
    return {} if own else dict(fields)


def thinking_edit(management: Mapping[str, Any], thinks: bool) -> dict[str, Any]:
    """``management`` with the thinking clearing a request can take: none in one that does
    not think (Anthropic refuses it whole: "`clear_thinking_20251015` strategy requires
    `thinking` to be enabled"); in one that does, the policy's, or ``keep: "all"`` for a
    policy that keeps every thinking block (``keep_thinking=None``): without the edit,
    Anthropic keeps the last turn's only."""
    kind = "clear_thinking_20251015"
    edits = [e for e in management["edits"] if e["type"] != kind]
    thinking = [e for e in management["edits"] if e["type"] == kind]
    if thinks:
        # First: the API requires the thinking clearing before the other edits.
        edits = [*(thinking or [{"type": kind, "keep": "all"}]), *edits]
    return {**management, "edits": edits}
