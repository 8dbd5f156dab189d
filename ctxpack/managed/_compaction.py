"""Compaction in the managed mode: the summary, the index of originals, the digest's fit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from .._internal.server_results import result_ids
from ..editing import summarized_or_digest, summary_id_of, window_digest
from ..errors import ArtifactNotFoundError
from ..filters import original_note
from ..messages import Message
from ..pipeline import Action, Decision
from ..stages import exchange_starts
from ..store import get_original, put_original
from ..tokens import TokenCounter
from ._policy import WindowPolicy
from ._room import _Room
from ._state import WindowState
from .view import (
    _PINNED_ID,
    _as_sent,
    _Context,
    _framing_tokens,
    _head,
    _message_artifact,
    _pin_fates,
    _pin_label,
    _pin_note,
    _pinned_kind,
    _reinjected_tokens,
    _summary_message,
    _verbatim,
)

__all__ = ["fit_digest"]


def _tail_start(
    record: Sequence[Message],
    start: int,
    keep_recent: int,
    budget: int,
    size: Callable[[Message], int],
    verbatim: Callable[[Message], bool],
) -> tuple[int, int]:
    """Where the messages a compaction keeps as they are begin, and their tokens above the
    floor (``size`` of each): the last ``keep_recent``, fewer when they pass ``budget`` tokens,
    never opening on tool results (their call goes with them) and never after the last call:
    the model has not read its results yet. Pinned content after it may go (it is re-injected
    within its budgets), and instructions with it (they are in every request anyway). A server
    tool's call goes with its result, turns later or still to come."""
    starts = exchange_starts(record)
    t = max(start, len(record) - keep_recent)
    while t > start and not starts[t]:
        t -= 1
    last = len(record) - 1
    while last > t and (record[last].role == "tool" or _pinned_kind(record[last]) is not None):
        last -= 1
    # An instruction after the last call's results does not mean the model read them.
    call = last
    while call > t and (
        record[call].role == "tool"
        or _pinned_kind(record[call]) is not None
        or verbatim(record[call])
    ):
        call -= 1
    if record[call].tool_calls:
        last = call

    def passable(k: int) -> bool:
        return k < last or _pinned_kind(record[k]) is not None or verbatim(record[k])

    tokens = sum(map(size, record[t:]))
    while t < len(record) and passable(t) and tokens > budget:
        tokens -= size(record[t])
        t += 1
        while t < len(record) and not starts[t]:
            tokens -= size(record[t])
            t += 1
    return t, tokens


def _forget_cleared(state: WindowState, gone: set[str], summarised: Sequence[Message]) -> None:
    """Drop from the state what was cleared in the messages a compaction summarised (``gone``
    their ids): no request sends them again."""
    state.cleared = {k: v for k, v in state.cleared.items() if k not in gone}
    results = {rid for m in summarised for rid in result_ids(m.content)}
    state.results_cleared = {k: v for k, v in state.results_cleared.items() if k not in results}


def _compact(
    state: WindowState,
    policy: WindowPolicy,
    ctx: _Context,
    plan: _Room,
    release: int = 0,
    keep_recent: int | None = None,
    why: str = "",
    force: bool = False,
) -> bool:
    """Summarise the record before the tail (the last ``keep_recent`` messages at most, the
    policy's by default; 0: none, the last call among them), and with it the oldest user
    messages but the first and the latest until ``release`` of their tokens are freed
    (:func:`_released`; ``why``: the reason they go); ``False`` when there is too little to
    summarise (with ``force``, nothing at all)."""
    record, counter = ctx.record, ctx.counter
    sent = _as_sent(state, ctx)

    def size(msg: Message) -> int:
        # As the request carries it: an instruction is in the floor, a cleared result is its
        # placeholder.
        return 0 if ctx.verbatim(msg) else counter.count_message(sent(msg))

    again = {record[i].id for i in ctx.pinned_again(state.boundary)}

    def kept(msg: Message) -> int:
        # As the request after the compaction carries it: a pin pinned again later as a note.
        if msg.id not in again:
            return size(msg)
        note = _pin_note(msg, _message_artifact(ctx, msg, False), ctx.retrievable)
        return counter.count_message(note)

    recent = policy.keep_recent if keep_recent is None else min(keep_recent, policy.keep_recent)
    end, tail = _tail_start(record, state.boundary, recent, plan.tail_budget, kept, ctx.verbatim)
    # The latest instruction is the one the model is answering: it stays, whatever it takes.
    latest = max((i for i, _, v in ctx.marked if v and record[i].role == "user"), default=end)
    # What the provider skips stays as it is: releasing it would free nothing.
    kept_as_is = {*state.compacted, *ctx.unread_ids}
    released = _released(record[: min(end, latest)], kept_as_is, release, counter)
    if release and not released:
        return False  # the user messages to release are all in the tail: nothing to do yet
    region = [i for i in range(state.boundary, end) if not ctx.verbatim(record[i])]
    pins = [i for i in region if _pinned_kind(record[i]) is not None]
    # The floor counts every pin re-injected; one the tail keeps is carried there instead.
    reinjected = _reinjected_tokens(ctx, policy, end, state.cleared)
    if not released and len(region) - len(pins) < (1 if force else 2):
        # Too little to summarise, unless pins sent whole give way to their re-injection.
        now = _reinjected_tokens(ctx, policy, state.boundary, state.cleared, state.compacted_length)
        if sum(size(record[i]) for i in pins) <= reinjected - now:
            return False
    tokens_before = {record[i].id: size(record[i]) for i in region}
    tokens_before.update((record[i].id, tokens) for i, tokens in released.items())
    region = sorted([*region, *released])
    # The user messages released leave the floor: the summary's budget is drawn from the room
    # they free.
    plan = replace(plan, floor=plan.floor - sum(released.values()))
    gone = {*state.compacted, *(record[i].id for i in region)}
    before = _pin_fates(ctx, policy, state.boundary, state.cleared, state.compacted_length)
    budget = plan.summary_budget(tail + reinjected - plan.pinned)
    text, cut = _summary_text(state, policy, ctx, [record[i] for i in region], end, gone, budget)
    previous = _summary_message(state, ctx) if state.summary is not None else None
    state.compacted = [*state.compacted, *(record[i].id for i in region)]
    _store_index(state, ctx, [i for i in range(end) if record[i].id in gone])
    state.summary = text
    state.summary_id = summary_id_of(state.compacted)
    state.boundary = end
    state.compacted_length = len(record)
    # The rent a clearing waits for was paid on results the summary now replaces: the next
    # batch pays for itself from here.
    state.rent = 0.0
    _forget_cleared(state, gone, [record[i] for i in region])
    replaced = (previous.id, counter.count_message(previous)) if previous is not None else None
    users = (released, why)
    _record_compaction(state, policy, ctx, region, users, before, tokens_before, replaced, cut)
    _send_pinned_again_once(state, ctx)
    return True


def _send_pinned_again_once(state: WindowState, ctx: _Context) -> None:
    """Send as a note each pin of the tail a compaction just kept whose text is pinned again
    later (sent whole there), and record it: the request carries the text once, as the floor
    counts it (:func:`_pin_fates` re-injects it once). Only at a compaction, which writes the
    tail after its new summary again anyway: between two, the cache keeps the prefix."""
    for i in ctx.pinned_again(state.boundary):
        msg = ctx.record[i]
        if msg.id not in state.cleared:  # else a note since an earlier request
            why = f"from the compaction at request {state.requests} on: the same text is "
            _send_as_note(state, ctx, msg, why + "pinned again later, and sent whole there")


def _send_reinjected_once(state: WindowState, policy: WindowPolicy, ctx: _Context) -> None:
    """Send as a note each pin appended since the last request whose text the message after
    the system prompt re-injects already, and record it: the request carries the text once,
    and keeps the one before as its prefix, which the prompt cache holds (dropping the text
    from the re-injection instead would write the whole request again, to save the few
    tokens of a note). It stays a note until a compaction summarises it (then re-injected
    once, :func:`_pin_fates`)."""
    if state.summary_id is None:
        return
    start = max(state.rendered, state.boundary)
    pins = [m for m in ctx.pinned(start, len(ctx.record)) if m.id not in state.cleared]
    if not pins:
        return
    # As the request before re-injected them: without the pins appended since.
    noted = {*state.cleared, *(m.id for m in pins)}
    fates = _pin_fates(ctx, policy, state.boundary, noted, state.compacted_length)
    sent = {m.text for m, text in fates if text is not None}
    for msg in pins:
        if msg.text in sent:
            why = f"at request {state.requests}: the same text is re-injected after the system "
            _send_as_note(state, ctx, msg, why + f"prompt ({_PINNED_ID}) already")


def _send_as_note(state: WindowState, ctx: _Context, msg: Message, why: str) -> None:
    """Send the pin ``msg`` as a note naming its stored original, with a decision saying
    ``why`` (its text is sent whole elsewhere in the request)."""
    counter = ctx.counter
    artifact = _message_artifact(ctx, msg, True)
    state.cleared[msg.id] = artifact
    state.decisions.append(
        Decision(
            stage="window",
            action="deduped",
            message_id=msg.id,
            reason=f"{_pin_label(msg)} sent as a note {why}; whole in artifact {artifact}",
            tokens_before=counter.count_message(msg),
            tokens_after=counter.count_message(_pin_note(msg, artifact, ctx.retrievable)),
        )
    )


def _record_moved_pins(
    state: WindowState,
    ctx: _Context,
    before: list[tuple[Message, str | None]],
    fates: list[tuple[Message, str | None]],
) -> None:
    """A decision for each pin whose text was re-injected and now is from a copy pinned
    after it, which the compaction just summarised (a note until then, the text re-injected
    already: :func:`_send_reinjected_once`): the copy's own decision counts the text again."""
    now = {m.id for m, _ in fates}
    later = {m.text: m.id for m, _ in fates}
    for msg, text in before:
        if msg.id in now or text is None:
            continue
        state.decisions.append(
            Decision(
                stage="window",
                action="deduped",
                message_id=msg.id,
                reason=f"{_pin_label(msg)} re-injected from its copy pinned again after it, "
                f"{later[msg.text]}, now summarised into {state.summary_id}: a text pinned "
                "twice is re-injected once, where it came last",
                tokens_before=ctx.counter.count(text),
                tokens_after=0,
            )
        )


def _record_compaction(
    state: WindowState,
    policy: WindowPolicy,
    ctx: _Context,
    region: Sequence[int],
    users: tuple[dict[int, int], str],
    before: list[tuple[Message, str | None]],
    tokens_before: dict[str, int],
    replaced: tuple[str, int] | None,
    cut: str,
) -> None:
    """The decisions of the compaction just made: one per message of ``region`` it summarised
    (``tokens_before`` each, as sent; ``users``: the user messages released with it, and
    why), one per pin whose re-injection it changed (``before``: the pins' texts re-injected
    until now), one for the summary it ``replaced`` (id, tokens), if any: it leaves the
    request too, the new summary summarising its messages again; and the summary's, with all
    they took, ``cut`` adding to its reason."""
    record = ctx.record
    released, why = users
    fated = _record_pin_fates(state, policy, ctx, before, tokens_before)
    for i in region:
        if record[i].id in fated:
            continue
        user = f"{why}; " if i in released else ""
        state.decisions.append(
            Decision(
                stage="window",
                action="merged",
                message_id=record[i].id,
                reason=f"{user}compacted into {state.summary_id}; original kept as an artifact",
                tokens_before=tokens_before[record[i].id],
                tokens_after=0,
            )
        )
    total = sum(tokens_before.values())
    if replaced is not None:
        state.decisions.append(
            Decision(
                stage="window",
                action="merged",
                message_id=replaced[0],
                reason=f"the summary before, replaced by {state.summary_id}, which summarises "
                "its messages again",
                tokens_before=replaced[1],
                tokens_after=0,
            )
        )
        total += replaced[1]
    state.decisions.append(
        Decision(
            stage="window",
            action="merged",
            message_id=state.summary_id,
            reason=f"summary of {len(state.compacted)} messages (request {state.requests}){cut}",
            tokens_before=total,
            tokens_after=ctx.counter.count_message(_summary_message(state, ctx)),
        )
    )


def _store_index(state: WindowState, ctx: _Context, summarised: list[int]) -> None:
    """Store the index of the messages summarised so far (``summarised``, record indices)."""
    index = _index(ctx, summarised, state.index_artifact)
    if state.index_artifact is None:
        state.index_artifact = put_original(ctx.store, index, kind="compaction_index")
    else:
        # The index of the compaction before, and lines added: a store may keep only those.
        state.index_artifact = put_original(
            ctx.store, index, kind="compaction_index", extends=state.index_artifact
        )


def _record_pin_fates(
    state: WindowState,
    policy: WindowPolicy,
    ctx: _Context,
    before: list[tuple[Message, str | None]],
    tokens_before: dict[str, int],
) -> set[str]:
    """A decision for each pin the compaction just made re-injects, and for each pin an
    earlier one did whose re-injection changed (a newer skill pushing it past
    ``pinned_budget``): whole, cut to its head or dropped, each naming the stored whole; and
    one for the message re-injecting them when its framing changed (``before``: the fates
    until now). The ids of the pins so recorded."""
    recorded = set()
    counter = ctx.counter
    fates = _pin_fates(ctx, policy, state.boundary, state.cleared, state.compacted_length)
    was_sent = {m.id: text for m, text in before}
    _record_moved_pins(state, ctx, before, fates)
    for msg, text in fates:
        if msg.id in was_sent:
            if was_sent[msg.id] == text:
                continue
            was = was_sent[msg.id]
            tokens = 0 if was is None else counter.count(was)
        else:
            tokens = tokens_before[msg.id]
        recorded.add(msg.id)
        what = _pin_label(msg)
        where = f"({_PINNED_ID}, after the system prompt)"
        action: Action = "compressed"
        how = f"re-injected cut to its head within skill_budget={policy.skill_budget} {where}"
        if text is None:
            action = "dropped"
            how = f"not re-injected: the newer skills fill pinned_budget={policy.pinned_budget}"
        elif text == msg.text:
            action, how = "merged", f"re-injected whole {where}"
        state.decisions.append(
            Decision(
                stage="window",
                action=action,
                message_id=msg.id,
                reason=f"{what}, summarised into {state.summary_id}, {how}; whole in artifact "
                f"{_message_artifact(ctx, msg, True)}",
                tokens_before=tokens,
                tokens_after=0 if text is None else counter.count(text),
            )
        )
    framing = (_framing_tokens(counter, before), _framing_tokens(counter, fates))
    if framing[0] != framing[1]:
        kept = sum(text is not None for _, text in fates)
        texts = "text" if kept == 1 else "texts"
        state.decisions.append(
            Decision(
                stage="window",
                action="merged",
                message_id=_PINNED_ID,
                reason=f"the message re-injecting {kept} pinned {texts} after the system prompt: "
                "its header, the lines between them and a message's own tokens (each text's "
                "are its pin's decision's)",
                tokens_before=framing[0],
                tokens_after=framing[1],
            )
        )
    return recorded


def _summary_text(
    state: WindowState,
    policy: WindowPolicy,
    ctx: _Context,
    region: Sequence[Message],
    end: int,
    gone: set[str],
    budget: int,
) -> tuple[str, str]:
    """The summary of ``region``, the messages now summarised (``gone``: all of them so far),
    the record before ``end`` being compacted: the digest within ``budget``, or the user's
    summarizer's (:func:`_within` it), and what its decision adds when it was cut or when the
    summarizer failed (the digest then stands in: ``summarized_or_digest``)."""
    if policy.summarizer is not None:
        previous = _summary_message(state, ctx) if state.summary is not None else None
        text, failed = summarized_or_digest(
            policy.summarizer,
            ([previous] if previous else []) + list(region),
            policy.instructions,
            lambda: _digest(policy, ctx, end, gone, budget),
        )
        return (text, failed) if failed else _within(text, budget, ctx)
    return _digest(policy, ctx, end, gone, budget), ""


def _digest(policy: WindowPolicy, ctx: _Context, end: int, gone: set[str], budget: int) -> str:
    """The extractive digest of the whole summarised history (the record before ``end``,
    ``gone`` its messages summarised), within ``budget``: a second compaction does not
    summarise a summary (window_digest reads on from the history read the time before)."""
    history = [
        m
        for m in ctx.record[:end]
        if (m.id in gone or not ctx.verbatim(m)) and _pinned_kind(m) is None
    ]
    return fit_digest(window_digest(history, policy.instructions), budget, ctx.counter)


def _within(text: str, budget: int, ctx: _Context) -> tuple[str, str]:
    """A summarizer's ``text`` within the summary's ``budget``: its head, and a note naming the
    whole text, stored (as ``max_tokens`` would cut a model's reply, but kept). A summarizer is
    not told the budget: a longer summary would leave the request where a compaction is due at
    once, and every request would compact again, calling the summarizer each time."""
    counter = ctx.counter
    tokens = counter.count(text)
    if tokens <= budget:
        return text, ""
    artifact = put_original(ctx.store, text, kind="summary")
    what = f"the summarizer's {tokens}-token text cut to its head to fit the summary's {budget}"
    note = original_note(f"{what} tokens", artifact, retrievable=ctx.retrievable)
    head = _head(text, budget - counter.count(note) - 1, counter)
    return f"{head}\n{note}".lstrip("\n"), f"; {what} tokens, whole in artifact {artifact}"


def _released(
    head: Sequence[Message], compacted: set[str], tokens: int, counter: TokenCounter
) -> dict[int, int]:
    """The oldest user messages of ``head`` still sent verbatim, but the first (the task),
    those the caller pinned and those in ``compacted`` (summarised already, or skipped by the
    provider), whose tokens together reach ``tokens`` (all of them when they do not):
    position -> tokens."""
    out: dict[int, int] = {}
    freed = 0
    first = True
    for i, msg in enumerate(head):
        if freed >= tokens:
            break
        if msg.role != "user" or not _verbatim(msg):
            continue
        if first:
            first = False
            continue
        if msg.id not in compacted and not msg.pinned:
            out[i] = counter.count_message(msg)
            freed += out[i]
    return out


def _index(ctx: _Context, positions: Sequence[int], previous: str | None) -> str:
    """One line per summarised message: id, role or tool, command, artifact of its original.
    A message the ``previous`` index lists keeps its line: its original is stored already,
    and is not written again at every compaction."""
    calls: dict[str, tuple[str, str]] = {}
    for msg in ctx.record:
        for call in msg.tool_calls or ():
            calls[call.id] = (call.function.name, call.function.arguments)
    rows = []
    for i in positions:
        msg = ctx.record[i]
        tool, command = calls.get(msg.tool_call_id or "", (msg.role, ""))
        rows.append((i, msg, tool, " ".join(command.split())[:300]))
    # Lines are read back by their first field: only when no id or tool breaks a line in two.
    plain = not any("\t" in f or "\n" in f for _, msg, tool, _ in rows for f in (msg.id, tool))
    listed = _index_lines(ctx, previous) if plain else {}
    lines = ["message\ttool\tcommand\tartifact"]
    for i, msg, tool, command in rows:
        if msg.id in listed:
            lines.append(listed[msg.id])
            continue
        if msg.role == "tool":
            artifact = ctx.original_artifact(i, True)
        else:
            artifact = _message_artifact(ctx, msg, True)
        lines.append(f"{msg.id}\t{tool}\t{command}\t{artifact}")
    return "\n".join(lines)


def _index_lines(ctx: _Context, index: str | None) -> dict[str, str]:
    """Message id -> its line in the stored ``index`` (none when it cannot be read: the lines
    are then made again)."""
    if index is None:
        return {}
    try:
        text = get_original(ctx.store, index)
    except ArtifactNotFoundError:
        return {}
    lines = text.split("\n")[1:]
    return {line.split("\t", 1)[0]: line for line in lines if line.count("\t") == 3}


def fit_digest(text: str, budget: int, counter: TokenCounter) -> str:
    """``text`` (Markdown sections of bullet lines) within ``budget`` tokens: the oldest lines of
    the largest section go first; the identifier index is cut term by term.

    Example:
        >>> from ctxpack import get_counter
        >>> digest = "## Commands run\\n" + "\\n".join(f"- `ls {i}`" for i in range(100))
        >>> short = fit_digest(digest, 60, get_counter(counter="approx"))
        >>> short.splitlines()[0], short.splitlines()[-1]
        ('## Commands run', '- `ls 99`')
    """
    if counter.count(text) <= budget:
        return text
    # Pieces joined count other than the sum of their counts: cut again by what the text
    # returned passes, until it fits.
    target = budget
    while True:
        out = _cut(text, target, counter)
        over = counter.count(out) - budget
        if over <= 0 or not out:
            return out
        target -= over


def _cut(text: str, budget: int, counter: TokenCounter) -> str:
    """``text`` cut to about ``budget`` tokens, counting each line or term on its own."""
    sections: list[tuple[str, list[str], str]] = []
    for block in text.split("\n\n## "):
        block = block.removeprefix("## ")
        title, _, body = block.partition("\n")
        if title.startswith("Identifiers"):
            sep = ", " if ", " in body else " "
            sections.append((title, body.split(sep), sep))
        else:
            sections.append((title, body.split("\n"), "\n"))
    sizes = [
        [counter.count(f" {item}") if sep == " " else counter.count(item) + 1 for item in items]
        for _, items, sep in sections
    ]
    left = [sum(section) for section in sizes]  # tokens of each section's items still kept
    total = sum(left) + sum(counter.count(t) + 2 for t, _, _ in sections)
    heads = [0] * len(sections)  # items dropped from the front of each section
    while total > budget:
        k = max(range(len(sections)), key=left.__getitem__)
        if heads[k] >= len(sizes[k]):
            break
        # A fenced block keeps its opening fence (its copy's tokens replace the original's).
        if sections[k][1][heads[k]].startswith("```") and heads[k] == 0:
            sections[k][1].insert(1, sections[k][1][0])
            sizes[k].insert(1, sizes[k][0])
            heads[k] = 1
        total -= sizes[k][heads[k]]
        left[k] -= sizes[k][heads[k]]
        heads[k] += 1
    out = []
    for (title, items, sep), head in zip(sections, heads, strict=True):
        kept = items[head:]
        if kept:
            out.append(f"## {title}\n" + sep.join(kept))
    return "\n\n".join(out)
