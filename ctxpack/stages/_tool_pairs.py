"""Tool calls and their results, which providers want paired: the packer's units and the fix
for calls left without results. Shared by the packer and the turn alternator."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .._internal.columns import ANTHROPIC, TOOL, flags
from .._internal.part_texts import is_provider_tool_result
from .._internal.prefix import PrefixMemo
from ..adapters import unsent_reasoning, unsent_reasoning_parts
from ..messages import Message
from ..pipeline import Decision, PackContext

__all__ = [
    "REPEATED_RESULT",
    "Units",
    "exchange_starts",
    "exchange_units",
    "provider_pairs",
    "stray_dropped",
    "strip_unanswered_calls",
    "tool_answers",
    "unanswered_calls",
    "without_unsent_reasoning",
]

# Why a second result of one call is dropped: every provider takes one result per call.
REPEATED_RESULT = (
    "a second result for a call an earlier tool message answers (the provider would reject two)"
)


@dataclass(frozen=True, slots=True)
class Units:
    """Message positions grouped into units, kept or dropped together.

    An assistant message with tool calls and the tool messages answering those calls form one
    unit, and so does an assistant message holding the result of a server tool an earlier one
    called (Anthropic's ``server_tool_use``, turns apart when the code it runs calls a client
    tool), or a client tool call that code made (its ``caller``), with that earlier one's unit;
    every other message is a unit by itself (in a chat without tools, every message).
    """

    of: npt.NDArray[np.intp]
    """The unit number of each position; units are numbered in the order of their first member."""
    count: int
    """How many units there are."""
    orphans: list[int]
    """Positions of tool messages whose call is not in the messages, or whose call's turn had
    closed before them: other turns came between (each a unit by itself)."""
    repeats: list[int]
    """Positions of tool messages answering a call an earlier one already answers (each a unit
    by itself): a provider takes one result per call."""


_Server = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]


def _server_blocks(msg: Message) -> _Server | None:
    """The ids of the server tools an assistant message calls, of those whose results it holds
    and of those whose code made its client tool calls (``None`` for none)."""
    if msg.role != "assistant":
        return None
    uses: list[str] = []
    results: list[str] = []
    for block in msg.content if isinstance(msg.content, list) else ():
        kind = block.get("type")
        if kind in _SERVER_USES and isinstance(block.get("id"), str):
            uses.append(block["id"])
        elif is_provider_tool_result(block) and isinstance(block.get("tool_use_id"), str):
            results.append(block["tool_use_id"])
    meta = msg.metadata.get("anthropic")
    extras = meta.get("tool_use") if isinstance(meta, Mapping) else None
    callers = [
        caller["tool_id"]
        for call in msg.tool_calls or ()
        if isinstance(extras, Mapping)
        and isinstance(extra := extras.get(call.id), Mapping)
        and isinstance(caller := extra.get("caller"), Mapping)
        and isinstance(caller.get("tool_id"), str)
    ]
    found = (tuple(uses), tuple(results), tuple(callers))
    return found if any(found) else None


_SERVER_USES = frozenset({"server_tool_use", "mcp_tool_use"})
# Per message, reused across packs of a growing history.
_SERVER: PrefixMemo[Message, _Server | None] = PrefixMemo(_server_blocks)


def _server_of(messages: Sequence[Message]) -> Sequence[_Server | None]:
    # Only Anthropic's messages hold server tools' blocks: other histories skip the scan.
    return _SERVER(messages) if (flags(messages) & ANTHROPIC).any() else ()


@dataclass(frozen=True, slots=True)
class _Pairing:
    """Which call each tool message answers, under the one rule providers apply: a call's
    turn stays open, after the assistant message holding it, only while tool messages follow;
    the first non-tool message closes it, and a result coming later answers nothing."""

    answers: dict[int, int]
    """Position of each answering tool message -> position of the message holding its call."""
    orphans: list[int]
    """Tool messages whose call is not in the messages or whose call's turn had closed."""
    repeats: list[int]
    """Tool messages answering a call an earlier tool message already answers."""
    unanswered: dict[int, list[str]]
    """Calls whose turn closed (or the messages ended) without a result, by position; the
    last message is left out: its results may be on the way."""


def _pairing(messages: Sequence[Message]) -> _Pairing:
    answers: dict[int, int] = {}
    orphans: list[int] = []
    repeats: list[int] = []
    holder: dict[str, int] = {}  # each call id's latest assistant message
    answered: set[tuple[int, str]] = set()
    open_at = -1
    for i, msg in enumerate(messages):
        if msg.role != "tool":
            open_at = i if msg.tool_calls else -1
            holder.update((call.id, i) for call in msg.tool_calls or ())
            continue
        call_id = msg.tool_call_id or ""
        at = holder.get(call_id)
        # A call id is unique within its message, so (position, id) is one call; its first
        # result answers it (the one the model read before its next turn).
        if at is not None and (at, call_id) in answered:
            repeats.append(i)
        elif at is not None and at == open_at:
            answered.add((at, call_id))
            answers[i] = at
        else:
            orphans.append(i)
    unanswered: dict[int, list[str]] = {}
    for i, msg in enumerate(messages[:-1]):
        missing = [c.id for c in msg.tool_calls or () if (i, c.id) not in answered]
        if missing:
            unanswered[i] = missing
    return _Pairing(answers, orphans, repeats, unanswered)


def exchange_units(messages: Sequence[Message]) -> Units:
    """Group ``messages`` into :class:`Units`: each tool exchange together, the rest alone.

    A tool message joins its call's unit only while the call's turn is open (see
    :func:`unanswered_calls`); a result coming after other turns is an orphan."""
    marks = flags(messages)
    server = _server_of(messages)
    if not (marks & TOOL).any() and not any(server):
        return Units(np.arange(len(messages), dtype=np.intp), len(messages), [], [])
    pairing = _pairing(messages) if (marks & TOOL).any() else _Pairing({}, [], [], {})
    of: list[int] = []
    server_owner: dict[str, int] = {}
    merged = False
    count = 0
    for i, msg in enumerate(messages):
        if msg.role == "tool":
            at = pairing.answers.get(i)
            if at is not None:
                of.append(of[at])
                continue
            of.append(count)
            count += 1
            continue
        uses, results, callers = (server[i] if server else None) or ((), (), ())
        joined = sorted({server_owner[r] for r in (*results, *callers) if r in server_owner})
        unit = joined[0] if joined else count
        for other in joined[1:]:
            # One result may close calls of two units: they become one.
            merged = True
            of = [unit if u == other else u for u in of]
            server_owner.update({k: unit for k, u in server_owner.items() if u == other})
        for use in uses:
            server_owner[use] = unit
        of.append(unit)
        if unit == count:
            count += 1
    numbers = np.array(of, dtype=np.intp)
    if merged:
        # Numbered again in the order of their first member, without the merged ones' gaps.
        labels, numbers = np.unique(numbers, return_inverse=True)
        count = len(labels)
    return Units(numbers.astype(np.intp), count, pairing.orphans, pairing.repeats)


def exchange_starts(messages: Sequence[Message]) -> list[bool]:
    """Where ``messages`` can be cut in two (at each position from 0 to ``len(messages)``)
    keeping every tool exchange on one side: no unit (see :class:`Units`) has members on both
    sides, no server tool called before the cut still waits for its result (it comes in a turn
    not there yet), and the message the cut opens on is no tool result."""
    units = exchange_units(messages)
    of = units.of.tolist()
    first: dict[int, int] = {}
    for i, unit in enumerate(of):
        first.setdefault(unit, i)
    # The earliest member of a unit that goes on past the position; a waiting call's goes on
    # to the end and beyond.
    lowest = len(messages)
    server = _server_of(messages)
    if any(server):
        answered = {r for blocks in server if blocks for r in blocks[1]}
        waiting = [i for i, b in enumerate(server) if b and not answered.issuperset(b[0])]
        lowest = first[of[waiting[0]]] if waiting else lowest
    out = [False] * len(messages) + [lowest == len(messages)]
    for i in range(len(messages) - 1, -1, -1):
        lowest = min(lowest, first[of[i]])
        out[i] = lowest == i and messages[i].role != "tool"
    return out


def tool_answers(messages: Sequence[Message]) -> dict[int, int]:
    """The position of the message holding the call each answering tool message answers, by
    the tool message's position (the rule :func:`unanswered_calls` describes); stray results
    (orphans, late ones, repeats) are not in it."""
    if not (flags(messages) & TOOL).any():
        return {}
    return _pairing(messages).answers


def unanswered_calls(messages: Sequence[Message]) -> dict[int, list[str]]:
    """Tool calls left without a result, by position of their assistant message.

    A call is answered only by a tool message that comes while its turn is open: after the
    assistant message holding it, only tool messages (its results, in any order) may come
    first; the first other message closes the turn, and the calls still unanswered then stay
    so whatever comes later (Chat Completions and Anthropic want the results at once). The
    last message is left out: an assistant turn at the end may still be waiting for its
    results. Every other unanswered call makes the provider reject the request.
    """
    if not (flags(messages) & TOOL).any():
        return {}
    return _pairing(messages).unanswered


def strip_unanswered_calls(ctx: PackContext, stage: str) -> PackContext:
    """Remove the calls :func:`unanswered_calls` finds; drop a message left with nothing.

    The original of each changed message is kept as an artifact, and every change is recorded
    under ``stage``.
    """
    if not unanswered_calls(ctx.messages):
        return ctx
    out, decisions, originals = _strip(ctx.messages, ctx.tokens, stage)
    return ctx.decide(*decisions, messages=tuple(out), artifacts={**originals, **ctx.artifacts})


def provider_pairs(
    messages: Sequence[Message], tokens: Callable[[Message], int], stage: str
) -> tuple[list[Message], list[Decision], dict[str, Message]]:
    """``messages`` as a provider takes them: tool results whose call is not there, or whose
    call an earlier result already answers, dropped; then the calls :func:`unanswered_calls`
    finds removed, as the packer does. Returns the messages, a decision per message changed or
    dropped (under ``stage``) and the originals of the changed ones, by id."""
    units = exchange_units(messages)
    repeats = set(units.repeats)
    gone = repeats.union(units.orphans)
    dropped = [
        stray_dropped(messages[i].id, tokens(messages[i]), stage, repeat=i in repeats)
        for i in sorted(gone)
    ]
    kept = [m for i, m in enumerate(messages) if i not in gone]
    out, decisions, originals = _strip(kept, tokens, stage)
    return out, dropped + decisions, originals


def stray_dropped(message_id: str, size: int, stage: str, *, repeat: bool = False) -> Decision:
    """The decision for a tool result that answers no call waiting for it (its call is not
    in the conversation, or other turns came between them) or, with ``repeat``, whose call an
    earlier tool message already answers."""
    return Decision(
        stage=stage,
        action="dropped",
        message_id=message_id,
        reason=(
            REPEATED_RESULT
            if repeat
            else "tool result that answers no call waiting for it: its call is not in the "
            "conversation, or other turns came between them (an orphan the provider would "
            "reject)"
        ),
        tokens_before=size,
        tokens_after=0,
    )


def _strip(
    messages: Sequence[Message], tokens: Callable[[Message], int], stage: str
) -> tuple[list[Message], list[Decision], dict[str, Message]]:
    fixes = unanswered_calls(messages)
    out: list[Message] = []
    decisions: list[Decision] = []
    originals: dict[str, Message] = {}
    for i, msg in enumerate(messages):
        missing = fixes.get(i)
        if missing is None:
            out.append(msg)
            continue
        calls = [c for c in msg.tool_calls or () if c.id not in missing]
        if not calls and msg.content in (None, "", []):
            decisions.append(_dropped_call_only(tokens(msg), msg, missing, stage))
            continue
        new = msg.model_copy(update={"tool_calls": calls or None})
        originals[msg.id] = msg
        out.append(new)
        decisions.append(_cleared_calls(tokens(msg), tokens(new), msg, missing, stage))
    return out, decisions, originals


def _dropped_call_only(size: int, msg: Message, missing: list[str], stage: str) -> Decision:
    named = ", ".join(map(repr, missing))
    return Decision(
        stage=stage,
        action="dropped",
        message_id=msg.id,
        reason=f"its tool calls ({named}) have no results and it says nothing else; "
        "the provider would reject an unanswered call",
        tokens_before=size,
        tokens_after=0,
    )


def _cleared_calls(
    before: int, after: int, msg: Message, missing: list[str], stage: str
) -> Decision:
    named = ", ".join(map(repr, missing))
    return Decision(
        stage=stage,
        action="cleared",
        message_id=msg.id,
        reason=f"removed the tool calls {named}, which no tool message answers (the provider "
        "would reject them); original kept as an artifact",
        tokens_before=before,
        tokens_after=after,
    )


# The stage a drop of what no writer sends is recorded under: the writers would leave it out.
WRITER = "writer"

UNSENT_REASONING = (
    "reasoning alone, with nothing of its response after it that it pairs with: "
    'to_openai(api="responses") leaves it out (the Responses API refuses reasoning followed by '
    "nothing of its response), and Chat Completions and Anthropic have no place for it"
)


UNSENT_REASONING_PARTS = (
    "removed its reasoning, which no request sends: the Responses API pairs reasoning with "
    "the ids of the message or calls it led to, which these were written without (or it has "
    "neither an id nor encrypted content to resolve it by), and Chat Completions and Anthropic "
    "have no place for it"
)


def without_unsent_reasoning(
    messages: Sequence[Message], tokens: Callable[[Message], int]
) -> tuple[list[Message], list[Decision]]:
    """``messages`` without the messages of reasoning alone that no writer sends
    (``ctxpack.adapters.unsent_reasoning``), a ``dropped`` decision for each, and without the
    reasoning parts no writer sends of the messages kept
    (``ctxpack.adapters.unsent_reasoning_parts``), a ``cleared`` decision for each such
    message; under ``writer``, tokens by ``tokens``: a result counts only what is sent, and says
    where the rest went."""
    gone = unsent_reasoning(messages)
    parts = unsent_reasoning_parts(messages)
    if not gone and not parts:
        return list(messages), []
    kept, cleared = _without_unsent_parts(messages, parts, tokens)
    if not gone:
        return kept, cleared
    decisions = [
        Decision(
            stage=WRITER,
            action="dropped",
            message_id=messages[k].id,
            reason=UNSENT_REASONING,
            tokens_before=tokens(messages[k]),
            tokens_after=0,
        )
        for k in gone
    ]
    dropped = set(gone)
    return [m for k, m in enumerate(kept) if k not in dropped], decisions + cleared


def _without_unsent_parts(
    messages: Sequence[Message],
    parts: Mapping[int, tuple[int, ...]],
    tokens: Callable[[Message], int],
) -> tuple[list[Message], list[Decision]]:
    """``messages`` with the reasoning parts ``parts`` names (by message and part position)
    removed, and a ``cleared`` decision for each message changed."""
    out = list(messages)
    decisions: list[Decision] = []
    for k, positions in parts.items():
        msg = messages[k]
        content = [p for j, p in enumerate(msg.content or ()) if j not in positions]
        if not content and not msg.tool_calls:
            continue  # nothing else to send: its text is somewhere the writer reads (extras)
        out[k] = msg.model_copy(update={"content": content or None})
        decisions.append(
            Decision(
                stage=WRITER,
                action="cleared",
                message_id=msg.id,
                reason=UNSENT_REASONING_PARTS,
                tokens_before=tokens(msg),
                tokens_after=tokens(out[k]),
            )
        )
    return out, decisions
