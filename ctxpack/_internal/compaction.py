"""Server-side compaction's output. Anthropic's ``compaction`` block: the summary server-side
compaction returns, from which the API reads the history (it drops every block before it),
unless its null content says the compaction failed, which makes the block a no-op. OpenAI's
``compaction`` item: the compacted context, encrypted (see :func:`is_openai_compaction`)."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import ApproximateTokenCountWarning, InvalidMessageError
from .arguments import json_type_name
from .reasoning import encrypted_tokens

__all__: list[str] = []


def is_compaction(block: Any) -> bool:
    """Whether ``block`` is a compaction block the API reads the history from (its content a
    summary, not the null of a compaction that failed)."""
    return (
        isinstance(block, Mapping)
        and block.get("type") == "compaction"
        and block.get("content") is not None
    )


def last_compaction(contents: list[Any]) -> tuple[int, int] | None:
    """(message, block) of the last compaction block the API reads the history from, among
    the messages' ``contents``; ``None`` without one."""
    for turn in range(len(contents) - 1, -1, -1):
        content = contents[turn]
        if isinstance(content, list):
            for j in range(len(content) - 1, -1, -1):
                if is_compaction(content[j]):
                    return turn, j
    return None


def read_from(
    contents: list[Any], roles: Sequence[Any]
) -> tuple[list[int], tuple[int, int] | None]:
    """The positions of the messages the API reads, given each one's ``contents`` and
    ``roles``: from the one holding the last compaction block on, and the system and developer
    messages before it (a request sends them apart, and the API keeps them); and (message,
    block) of that block, whose message is read from it on, or ``None`` without one."""
    found = last_compaction(contents)
    if found is None:
        return list(range(len(contents))), None
    start = found[0]
    kept = [i for i, role in enumerate(roles) if i >= start or role in ("system", "developer")]
    return kept, found


def unread(contents: list[Any], roles: Sequence[Any]) -> list[int]:
    """The positions of the messages the API skips, given each one's ``contents`` and
    ``roles``: those before the last compaction block, but the system and developer
    messages (see :func:`read_from`); none without such a block."""
    kept, found = read_from(contents, roles)
    return [] if found is None else sorted(set(range(len(contents))) - set(kept))


def anthropic_compaction_tokens(part: Mapping[str, Any], count: Callable[[str], int]) -> int:
    """The tokens of an Anthropic ``compaction`` block sent back: its summary, which the
    model reads as a text; the context its ``encrypted_content`` carries and whatever its
    ``signature`` may hold, estimated from their length as an encrypted reasoning item's is
    (counted as text, their base64 cost four times what the bytes can hold); its
    ``tool_changes`` as their JSON. A failed compaction's null content counts nothing."""
    summary = part.get("content")
    total = count(summary) if isinstance(summary, str) else 0
    for key in ("encrypted_content", "signature"):
        opaque = part.get(key)
        if isinstance(opaque, str):
            total += encrypted_tokens(opaque)
    changes = part.get("tool_changes")
    if changes:
        total += count(json.dumps(changes, ensure_ascii=False, separators=(",", ":")))
    return total


# ------------------------------------------------------------------------- OpenAI's item
#
# OpenAI's Responses API compaction returns a ``compaction`` output item: an id and the compacted
# context, encrypted (``encrypted_content``), which only OpenAI can read. A stateless loop sends
# it back with the other output items; the API reads the context it carries in place of what
# came before it. ctxpack keeps it, verbatim, as the one part of an assistant message of its
# own, as it keeps a reasoning item, and writes it back in place for the Responses API only.


def is_openai_compaction(part: Any) -> bool:
    """Whether ``part`` is OpenAI's ``compaction`` item (its compacted context encrypted), not
    Anthropic's block (its summary in ``content``)."""
    return (
        isinstance(part, Mapping)
        and part.get("type") == "compaction"
        and "encrypted_content" in part
        and "content" not in part
    )


def check_openai_compaction(
    part: Mapping[str, Any], index: int, field: str | None, role: str
) -> None:
    """An OpenAI compaction item's fields: the error names the message and the field, under
    ``field`` (the part's place in the content; ``None`` for an item not yet converted)."""

    def at(key: str) -> str:
        return f"{field}.{key}" if field else key

    if role != "assistant":
        where = field or "role"
        raise InvalidMessageError(
            f"{where}: a compaction item belongs to an assistant message, not a {role} one",
            index=index,
            field=where,
        )
    encrypted = part.get("encrypted_content")
    if not isinstance(encrypted, str) or not encrypted:
        got = "an empty string" if encrypted == "" else json_type_name(encrypted)
        raise InvalidMessageError(
            f"{at('encrypted_content')}: a compaction item's encrypted_content must be a "
            f"non-empty string, got {got}",
            index=index,
            field=at("encrypted_content"),
        )
    if part.get("id") is not None and not isinstance(part.get("id"), str):
        raise InvalidMessageError(
            f"{at('id')}: must be a string, got {json_type_name(part['id'])}",
            index=index,
            field=at("id"),
        )


def compaction_tokens(part: Mapping[str, Any]) -> int:
    """The input tokens an OpenAI compaction item is billed as: the context it carries, which
    only OpenAI can read, estimated from its encrypted text's length as an encrypted reasoning
    item's is (OpenAI's own agent, Codex, counts both so), with an
    :class:`~ctxpack.tokens.ApproximateTokenCountWarning`."""
    warnings.warn(
        "a compaction item's tokens are estimated from the length of its encrypted_content: "
        "only the provider can read it",
        ApproximateTokenCountWarning,
        stacklevel=3,
    )
    encrypted = part.get("encrypted_content")
    return encrypted_tokens(encrypted) if isinstance(encrypted, str) else 0


def refuse_openai_compaction(content: Any, index: int, where: str) -> None:
    """Refuse a message holding an OpenAI compaction item when it is written for ``where`` (Chat
    Completions, Anthropic), which cannot take it: dropping it would lose the context it
    carries unseen, and nothing else can read it."""
    for j, part in enumerate(content if isinstance(content, list) else ()):
        if is_openai_compaction(part):
            raise InvalidMessageError(
                f"content[{j}]: an OpenAI Responses compaction item (its context encrypted, "
                f"readable by OpenAI's Responses API alone) cannot be sent to {where}: render "
                'the history with to_openai(api="responses"), or leave the item out of it',
                index=index,
                field=f"content[{j}]",
            )
