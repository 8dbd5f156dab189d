"""Clearing in the managed mode: which batch, and its record."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from .._internal.server_results import clearable_results, with_results_cleared
from .._internal.tool_items import is_textless_output
from ..editing import without_thinking as _without_thinking
from ..messages import Message
from ..pipeline import Decision
from ..sdk import RESPONSES_META
from ._policy import WindowPolicy
from ._rent import _entries_edited, _rewritten, _writes_whole
from ._state import WindowEvent, WindowState
from .view import (
    _answer_placeholder,
    _as_sent,
    _build,
    _Context,
    _message_artifact,
    _placeholder,
    _result_artifact,
    _View,
)

__all__: list[str] = []  # the managed mode's internals: used by its other modules only


def _positions(record: Sequence[Message], start: int, role: str) -> list[int]:
    return [i for i in range(start, len(record)) if record[i].role == role]


# A tool result the batch clears: its position in the record, and for the result of a tool
# the provider ran (a part of an assistant message) its id; ``None`` for a tool message.
_Unit = tuple[int, str | None]


def _clear_batch(
    state: WindowState, policy: WindowPolicy, ctx: _Context, *, keep: int, keep_thinking: int
) -> tuple[list[_Unit], list[int], int]:
    """The tool results (the client's tool messages and the results of tools the provider ran,
    oldest first) and the thinking turns a batch would clear, and the tokens it removes."""
    record, counter = ctx.record, ctx.counter
    out_tools: list[_Unit] = []
    removed = 0
    units = _tool_units(state, ctx)
    for i, rid in units[: max(0, len(units) - keep)]:
        msg = record[i]
        if rid is None and msg.id in state.cleared:
            continue
        if rid is not None and (rid in state.results_cleared or msg.id in state.cleared):
            continue
        # The stand-in's size, without storing anything until the batch is cleared.
        saving = counter.count_message(msg) - counter.count_message(
            _cleared_unit(ctx, i, rid, False)[0]
        )
        if saving > 0:
            out_tools.append((i, rid))
            removed += saving
    out_thinking: list[int] = []
    turns = [
        i
        for i in _positions(record, _editable(state, ctx), "assistant")
        if _without_thinking(record[i]) is not None
    ]
    done = set(state.thinking_cleared)
    for i in turns[: max(0, len(turns) - keep_thinking)]:
        stripped = _without_thinking(record[i])
        if record[i].id in done or stripped is None:
            continue
        out_thinking.append(i)
        removed += counter.count_message(record[i]) - counter.count_message(stripped)
    return out_tools, out_thinking, removed


def _editable(state: WindowState, ctx: _Context) -> int:
    """Where the messages a clearing may edit begin: after the summary, and from the
    provider's last compaction block on (what it skips costs nothing to clear)."""
    return max(state.boundary, ctx.read_start)


def _tool_units(state: WindowState, ctx: _Context) -> list[_Unit]:
    """Every tool result after the summary that clearing may replace, oldest first."""
    units: list[tuple[int, int, str | None]] = []
    for i in range(_editable(state, ctx), len(ctx.record)):
        msg = ctx.record[i]
        # A computer's screenshot has no text form to send in its place.
        if msg.role == "tool" and not is_textless_output(msg.metadata, RESPONSES_META):
            units.append((i, -1, None))
        elif msg.role == "assistant" and not msg.pinned:
            units.extend((i, k, rid) for k, rid in clearable_results(msg.content))
    return [(i, rid) for i, _, rid in units]


def _cleared_unit(ctx: _Context, i: int, rid: str | None, store: bool) -> tuple[Message, str]:
    """The record's message at ``i`` with the tool result ``rid`` (for ``None``, its whole
    content) replaced by the placeholder, and the artifact of the original; with ``store``,
    the original is stored."""
    msg = ctx.record[i]
    if rid is None:
        artifact = ctx.original_artifact(i, store)
        return msg.model_copy(update={"content": _placeholder(artifact, ctx.retrievable)}), artifact
    artifact = _result_artifact(ctx, i, rid, store)
    content = with_results_cleared(msg.content, {rid: _placeholder(artifact, ctx.retrievable)})
    return msg.model_copy(update={"content": content}), artifact


def _emergency_batch(
    state: WindowState, policy: WindowPolicy, ctx: _Context, over: int
) -> tuple[list[_Unit], list[int], int]:
    """The batch that removes at least ``over`` tokens keeping the most recent tool results
    and thinking turns (as many of each), or all of them when nothing less is enough: the
    results of the last call, and the thinking of the turn they answer (which Anthropic needs
    with thinking on), go last. A batch keeping more removes less: a binary search."""
    best = _clear_batch(state, policy, ctx, keep=0, keep_thinking=0)
    low, high = 0, len(ctx.record)
    while best[2] >= over and low < high:
        keep = (low + high + 1) // 2
        batch = _clear_batch(state, policy, ctx, keep=keep, keep_thinking=keep)
        if batch[2] >= over:
            low, best = keep, batch
        else:
            high = keep - 1
    return best


def _answer_batch(state: WindowState, ctx: _Context, over: int) -> list[int]:
    """Positions of the answers after the summary to clear, largest first, until ``over``
    tokens are removed (all of them if that is not enough).

    Only when clearing every tool result was not enough: what is left past the summary is
    then the turns a compaction keeps whole, the last call among them, whose answer (a long
    reasoning, a file written through a call's arguments) can alone pass a small window. Sent
    as a placeholder, it stays retrievable; kept, no request can be sent."""
    record, counter = ctx.record, ctx.counter
    sent = _as_sent(state, ctx)
    savings = []
    for i in _positions(record, _editable(state, ctx), "assistant"):
        msg = record[i]
        if msg.id in state.cleared:
            continue
        cleared = _answer_placeholder(msg, _message_artifact(ctx, msg, False), ctx.retrievable)
        saving = counter.count_message(sent(msg)) - counter.count_message(cleared)
        if saving > 0:
            savings.append((-saving, i))
    batch = []
    for negative, i in sorted(savings):
        if over <= 0:
            break
        batch.append(i)
        over += negative
    return sorted(batch)


def _edit_point(view: _View, ids: set[str]) -> int:
    """The first position of the view that an edit of the messages ``ids`` rewrites."""
    return next((k for k, m in enumerate(view.messages) if m.id in ids), len(view.messages))


def _clear(
    state: WindowState,
    ctx: _Context,
    tools: Sequence[_Unit],
    thinking: Sequence[int],
    why: str,
    answers: Sequence[int] = (),
) -> None:
    """Clear a batch: record a decision per message; the caller rebuilds the view.

    Each decision gives the message as the request carried it before and after its edit: an
    earlier edit of the same message (its thinking, another of its results) is already in
    both, so the figures are those of the request, not of the record."""
    record, counter = ctx.record, ctx.counter

    def decide(msg: Message, before: Message, after: Message, reason: str) -> None:
        state.decisions.append(
            Decision(
                stage="window",
                action="cleared",
                message_id=msg.id,
                reason=reason,
                tokens_before=counter.count_message(before),
                tokens_after=counter.count_message(after),
            )
        )

    # Reads the clears of tool results and answers as the state gains them; the thinking
    # cleared as of its making.
    sent = _as_sent(state, ctx)
    for i, rid in tools:
        msg = record[i]
        before = sent(msg)
        artifact = _cleared_unit(ctx, i, rid, True)[1]
        if rid is None:
            state.cleared[msg.id] = artifact
            what = "old tool output"
        else:
            state.results_cleared[rid] = artifact
            what = f"old result of the provider's tool ({rid})"
        reason = f"{what} cleared ({why}); original stored as {artifact}"
        decide(msg, before, sent(msg), reason)
    for i in thinking:
        msg = record[i]
        before = sent(msg)
        state.thinking_cleared.append(msg.id)
        decide(msg, before, _without_thinking(before) or before, f"thinking blocks cleared ({why})")
    sent = _as_sent(state, ctx)
    for i in answers:
        msg = record[i]
        before = sent(msg)
        artifact = _message_artifact(ctx, msg, True)
        state.cleared[msg.id] = artifact
        decide(msg, before, sent(msg), f"answer cleared ({why}); original stored as {artifact}")


def _edited(
    state: WindowState,
    policy: WindowPolicy,
    ctx: _Context,
    action: Literal["cleared", "compacted", "emergency"],
    before: _View,
    after: _View,
    edit: int,
) -> _View:
    """The view after an edit from position ``edit`` on, recorded (:func:`_event`).

    On a model that checks each thinking block's prefix, the thinking of every assistant turn
    from ``edit`` on goes too: its prefix is no longer what was sent when it was produced, so
    the API would refuse the request or drop it and every later block. Clearing that thinking
    edits only from ``edit`` on, so one pass leaves no kept block after an edited position;
    thinking produced after this request has the edited prefix, and stays."""
    if policy.checks_thinking_prefix(ctx.model):
        after = _clear_thinking_after(state, policy, ctx, after, edit)
    cold = _writes_whole(state, policy, ctx, before)
    # The entries the edit leaves first: where every boundary is cached, the prefix up to the
    # edit point stays one even when the requests that cached it ended in what it removes.
    _entries_edited(state, policy, ctx, before, edit)
    rewritten = _rewritten(policy, ctx, after, edit, ends=state.cache_ends)
    _event(state, action, before, after, rewritten, edit, cold=cold)
    return after


def _clear_thinking_after(
    state: WindowState, policy: WindowPolicy, ctx: _Context, view: _View, edit: int
) -> _View:
    done = set(state.thinking_cleared)
    ids = {m.id for m in view.messages[edit:] if m.role == "assistant" and m.id not in done}
    # Only the turns sent as the record holds them (after the summary) can be sent without
    # their thinking: the view's copy of one cleared before has none left.
    turns = [
        i
        for i in range(min(_editable(state, ctx), len(ctx.record)), len(ctx.record))
        if ctx.record[i].id in ids and _without_thinking(ctx.record[i]) is not None
    ]
    if not turns:
        return view
    _clear(
        state,
        ctx,
        (),
        turns,
        f"prefix check: an edit at request {state.requests} changes what precedes this turn, "
        "and a model with preserved thinking refuses or drops a thinking block whose prefix "
        "changed",
    )
    return _build(state, policy, ctx)


def _event(
    state: WindowState,
    action: Literal["cleared", "compacted", "emergency"],
    before: _View,
    after: _View,
    rewritten: int,
    edit: int,
    *,
    cold: bool,
) -> None:
    state.events.append(
        WindowEvent(
            request=state.requests,
            action=action,
            tokens_before=before.tokens(),
            tokens_after=after.tokens(),
            rewritten=rewritten,
            cold=cold,
        )
    )
    if edit < len(after.messages):
        state.decisions.append(
            Decision(
                stage="window",
                action="warned",
                message_id=after.messages[edit].id,
                reason=(
                    f"{action} at request {state.requests}: the prompt changes from this message "
                    f"on, so the prompt cache writes {rewritten} tokens again (from the last "
                    "entry the provider finds before it)"
                ),
                tokens_before=before.tokens(),
                tokens_after=after.tokens(),
            )
        )
