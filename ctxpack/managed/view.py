"""One request as the state gives it: verbatim head, summary, re-injected pins, edited tail."""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import compress
from operator import itemgetter
from typing import cast

from .._internal.compaction import last_compaction, unread
from .._internal.originals import message_original
from .._internal.prefix import PrefixMemo
from .._internal.server_results import original_result, result_ids, with_results_cleared
from ..caches import LRUCache
from ..editing import verbatim as _never_summarised
from ..editing import without_thinking as _without_thinking
from ..filters import RETRIEVE_TOOL_NAME, original_note
from ..messages import Message
from ..stages import exchange_units
from ..store import ArtifactStore, artifact_id, put_original
from ..tokens import REPLY_PRIMING, TokenCounter
from ._policy import _PINNED_KEY, WindowPolicy
from ._state import WindowState

__all__: list[str] = []  # the managed mode's internals: used by its other modules only

# The id of the message that re-injects pinned content after a compaction.
_PINNED_ID = "ctxpack-pinned"
_SYSTEM = ("system", "developer")


class _View:
    """The request being built: its messages and their sizes."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.messages: list[Message] = []
        self.sizes: list[int] = []

    def add(self, msg: Message) -> None:
        self.messages.append(msg)
        self.sizes.append(self.counter.count_message(msg))

    def tokens(self) -> int:
        return REPLY_PRIMING + sum(self.sizes)

    def skip_unread(self) -> None:
        """Count nothing for the messages the provider skips, those before the last compaction
        block (see :func:`~ctxpack._internal.compaction.unread`), as ``render()`` counts the
        request: counted, they made the window clear and compact a history the provider had
        compacted already."""
        for i in unread([m.content for m in self.messages], [m.role for m in self.messages]):
            self.sizes[i] = 0


def _pinned_kind(msg: Message) -> str | None:
    """``"memory"`` or ``"skill"`` for a message added by ``Session.pin``, else ``None``."""
    meta = msg.metadata.get("ctxpack")
    if isinstance(meta, Mapping):
        kind = meta.get(_PINNED_KEY)
        return kind if isinstance(kind, str) else None
    return None


def _pin_label(msg: Message) -> str:
    """A pinned message as decisions and notes name it: its kind and name."""
    return f"pinned {_pinned_kind(msg)} {msg.metadata['ctxpack'].get('pinned_name')!r}"


def _verbatim(msg: Message) -> bool:
    """Never summarised (as for :class:`~ctxpack.editing.Compactor`): the system prompt, user
    instructions, pinned messages and a provider's own compaction block; but not the content
    ``Session.pin`` added, which is re-injected after a compaction within its budgets."""
    return _pinned_kind(msg) is None and _never_summarised(msg, frozenset())


def _marks(msg: Message) -> tuple[str | None, bool] | None:
    """``(pinned kind, verbatim)`` of a message the managed mode looks for in the whole record
    (pinned content, or a message never summarised), ``None`` for the others."""
    kind = _pinned_kind(msg)
    verbatim = kind is None and _never_summarised(msg, frozenset())
    return None if kind is None and not verbatim else (kind, verbatim)


# By the identity of the record's messages, which never change: a render finds the few marked
# messages of a long record without reading the others again (see PrefixMemo).
_MARKS = PrefixMemo(_marks)


def _placeholder(artifact: str, retrievable: bool) -> str:
    what = "old tool output cleared to fit the window"
    return original_note(what, artifact, retrievable=retrievable)


def _answer_placeholder(msg: Message, artifact: str, retrievable: bool) -> Message:
    """An assistant message sent as a note naming its stored original: its text (and any
    thinking) replaced, its calls' arguments ``{}`` (as Anthropic's ``clear_tool_inputs``),
    their ids and names kept so that each result still answers its call."""
    what = "this answer (its text and its calls' arguments) cleared to fit the window"
    calls = [
        call.model_copy(update={"function": call.function.model_copy(update={"arguments": "{}"})})
        for call in msg.tool_calls or ()
    ]
    return msg.model_copy(
        update={
            "content": original_note(what, artifact, retrievable=retrievable),
            "tool_calls": calls or None,
        }
    )


def _pin_note(msg: Message, artifact: str, retrievable: bool) -> Message:
    """A pinned message sent as a note naming its stored original: the same text is sent
    whole elsewhere in the request, pinned again later or re-injected already."""
    what = (
        f"{_pin_label(msg)} sent once: the same text is re-injected after the system prompt "
        "or pinned again below"
    )
    note = original_note(what, artifact, retrievable=retrievable)
    return msg.model_copy(update={"content": note})


def _message_artifact(ctx: _Context, msg: Message, store: bool) -> str:
    """The artifact holding a message other than a tool result whole (as JSON); with
    ``store``, stored (the same artifact whether a clearing or a compaction stores it)."""
    text = message_original(msg)
    if not store:
        return artifact_id(text)
    return put_original(ctx.store, text, message_id=msg.id, kind="compacted_message")


def _result_artifact(ctx: _Context, i: int, rid: str, store: bool) -> str:
    """The artifact holding the result ``rid`` of a tool the provider ran (a part of the
    record's message at ``i``) as it came, before any filter, as JSON; with ``store``, stored
    as a cleared tool output is."""
    msg = ctx.record[i] if ctx.arrived is None else ctx.arrived(i)
    text = original_result(msg.content, rid)
    if not store:
        return artifact_id(text)
    return put_original(ctx.store, text, message_id=msg.id, kind="cleared_tool_output")


@dataclass(frozen=True)
class _Context:
    """What :func:`render_window` needs from the session."""

    record: Sequence[Message]
    counter: TokenCounter
    store: ArtifactStore
    original_artifact: Callable[[int, bool], str]
    retrievable: bool
    model: str | None
    # The record's message at a position as it arrived (its provider tool results unfiltered);
    # None: the record's own.
    arrived: Callable[[int], Message] | None = None
    # Tokens of the tool definitions sent before the messages, as the cache that times the
    # edits bills them: a rewrite of the whole prompt writes them again too.
    tool_tokens: int = 0

    @cached_property
    def marked(self) -> list[tuple[int, str | None, bool]]:
        """Position, pinned kind and whether verbatim, in order, of each message of the record
        that is pinned content or never summarised (:func:`_marks`), in the tool exchange of
        one that is (:attr:`whole_exchanges`), or before the provider's compaction block
        (:attr:`unread_ids`: sent as it is, whatever it is)."""
        if not self._partners and not self._unread:
            return self._own_marks
        skipped = set(self._unread)
        own = [mark for mark in self._own_marks if mark[0] not in skipped]
        partners = ((i, None, True) for i in self._partners if i not in skipped)
        unread_marks = ((i, None, True) for i in self._unread)
        return sorted([*own, *partners, *unread_marks], key=itemgetter(0))

    @cached_property
    def _own_marks(self) -> list[tuple[int, str | None, bool]]:
        marks = _MARKS(self.record)
        # Only the positions compress() picks, whose marks are not None, are read.
        found = cast(Sequence[tuple[str | None, bool]], marks)
        return [(i, *found[i]) for i in compress(range(len(marks)), marks)]

    @cached_property
    def _partners(self) -> list[int]:
        return _exchange_partners(self.record, [i for i, _, v in self._own_marks if v])

    @cached_property
    def whole_exchanges(self) -> frozenset[str]:
        """Ids of the calls and results sent verbatim because they share a tool exchange with
        a message never summarised (a pinned result, a pinned call): summarising them would
        leave that message orphaned, and the request refused."""
        return frozenset(self.record[i].id for i in self._partners)

    @cached_property
    def read_start(self) -> int:
        """The position of the message holding the record's last compaction block (Anthropic's,
        not a failed one), from which the provider reads the history; 0 without one. The
        window edits nothing before it: what the provider skips costs nothing, and clearing or
        summarising it would free nothing and rewrite the prompt cache."""
        # A compaction block's message is never summarised: the marks find it without reading
        # the rest of the record.
        blocks = [i for i, _, verbatim in self._own_marks if verbatim]
        found = last_compaction([self.record[i].content for i in blocks])
        return 0 if found is None else blocks[found[0]]

    @cached_property
    def _unread(self) -> list[int]:
        return [i for i in range(self.read_start) if self.record[i].role not in _SYSTEM]

    @cached_property
    def unread_ids(self) -> frozenset[str]:
        """Ids of the messages the provider skips (before :attr:`read_start`, the system and
        developer messages aside): sent as the record holds them, never cleared nor summarised,
        counted at 0 tokens."""
        return frozenset(self.record[i].id for i in self._unread)

    def verbatim(self, msg: Message) -> bool:
        """:func:`_verbatim`, in the tool exchange of a message that is, or skipped by the
        provider (:attr:`unread_ids`)."""
        return _verbatim(msg) or msg.id in self.whole_exchanges or msg.id in self.unread_ids

    def pinned_again(self, start: int) -> list[int]:
        """Positions from ``start`` on of the pinned messages whose text is pinned again
        later in the record (a skill invoked twice), in order."""
        pins = [i for i, kind, _ in self.marked if i >= start and kind is not None]
        again = _earlier_copies([self.record[i].text for i in pins])
        return [i for k, i in enumerate(pins) if k in again]

    def pinned(self, start: int, end: int) -> list[Message]:
        """The pinned messages of ``record[start:end]``, in order."""
        record = self.record
        return [record[i] for i, kind, _ in self.marked if start <= i < end and kind is not None]


def _exchange_partners(record: Sequence[Message], verbatim: Sequence[int]) -> list[int]:
    """Positions of the other members of the tool exchanges (a call and every result of its
    message's calls in its turn: ``exchange_units``) that the messages at ``verbatim``
    positions are part of, as :class:`~ctxpack.editing.Compactor` keeps them."""
    halves = [i for i in verbatim if record[i].role == "tool" or record[i].tool_calls]
    if not halves:
        return []  # the common case: instructions only, no record scanned
    of = exchange_units(record).of.tolist()
    wanted = {of[i] for i in halves}
    own = set(verbatim)
    return [i for i, unit in enumerate(of) if unit in wanted and i not in own]


def _build(state: WindowState, policy: WindowPolicy, ctx: _Context) -> _View:
    """The request the state gives: system prompt, re-injected pins, the other messages not
    summarised (user instructions), summary, edited tail.

    The pins come right after the system prompt: they are the same from one compaction to the
    next, and the instructions a compaction moves out of the tail land after them, so the
    prompt cache keeps them; after the provider's compaction block when the head holds it,
    which the provider reads the history from. The messages before that block are counted at
    0 tokens (:meth:`_View.skip_unread`)."""
    view = _View(ctx.counter)
    record = ctx.record
    b = min(state.boundary, len(record))
    # A user message past instructions_share may have been summarised with the rest.
    gone = set(state.compacted)
    head = [
        record[i]
        for i, _, verbatim in ctx.marked
        if i < b and verbatim and record[i].id not in gone
    ]
    lead = next((k for k, m in enumerate(head) if m.role not in _SYSTEM), len(head))
    # A summary left out for lack of room (None, its id kept) still re-injects the pins.
    compacted = state.summary_id is not None
    pins = (
        _reinjection(ctx, policy, b, state.cleared, state.compacted_length) if compacted else None
    )
    sent = _as_sent(state, ctx)
    at = lead
    if pins is not None and ctx.read_start:
        # After the provider's compaction block when the head holds it (and the results of
        # its calls, which must follow it): the provider reads the history from there, and
        # would never read the pins sent before it.
        block = record[ctx.read_start].id
        at = next((k + 1 for k, m in enumerate(head) if m.id == block), lead)
        while lead < at < len(head) and head[at].role == "tool":
            at += 1
    for k, msg in enumerate(head):
        if k == at and pins is not None:
            view.add(pins)
        # One the provider skips is sent as the requests before carried it (a result cleared
        # before the provider compacted stays a placeholder): its bytes do not change.
        view.add(sent(msg) if msg.id in ctx.unread_ids else msg)
    if at == len(head) and pins is not None:
        view.add(pins)
    if compacted and state.summary is not None:
        view.add(_summary_message(state, ctx))
    for msg in map(sent, record[b:]):
        view.add(msg)
    if ctx.read_start:
        view.skip_unread()
    return view


def _as_sent(state: WindowState, ctx: _Context) -> Callable[[Message], Message]:
    """A message of the record after the summary, as the request carries it: a cleared tool
    result or answer as its placeholder, a pin whose text is sent whole elsewhere as a note
    (once made one), a turn whose thinking was cleared without it, the cleared results of the
    provider's tools in it with a placeholder for their text."""
    thinking = set(state.thinking_cleared)

    def sent(msg: Message) -> Message:
        if msg.id in state.cleared:
            if _pinned_kind(msg) is not None:
                return _pin_note(msg, state.cleared[msg.id], ctx.retrievable)
            if msg.role != "tool":
                return _answer_placeholder(msg, state.cleared[msg.id], ctx.retrievable)
            placeholder = _placeholder(state.cleared[msg.id], ctx.retrievable)
            return msg.model_copy(update={"content": placeholder})
        if msg.id in thinking:
            msg = _without_thinking(msg) or msg
        if state.results_cleared and msg.role == "assistant":
            notes = {
                rid: _placeholder(state.results_cleared[rid], ctx.retrievable)
                for rid in result_ids(msg.content)
                if rid in state.results_cleared
            }
            content = with_results_cleared(msg.content, notes)
            if content is not msg.content:
                return msg.model_copy(update={"content": content})
        return msg

    return sent


# The summary messages built last: one lasts from a compaction to the next, and building it
# checks its list of every message summarised.
_SUMMARIES: LRUCache[tuple[str | None, str | None, bool, str | None], Message] = LRUCache(
    64, maxbytes=16 << 20, name="managed window summaries"
)


def _summary_message(state: WindowState, ctx: _Context) -> Message:
    key = (state.summary_id, state.index_artifact, ctx.retrievable, state.summary)
    cached = _SUMMARIES.get(key)
    if cached is not None and cached.metadata["ctxpack"]["summary_of"] == state.compacted:
        return cached
    summary = _new_summary_message(state, ctx)
    _SUMMARIES.put(key, summary)
    return summary


def _new_summary_message(state: WindowState, ctx: _Context) -> Message:
    index = state.index_artifact
    how = (
        f'; {RETRIEVE_TOOL_NAME}(artifact="{index}", regex="...") searches it'
        if ctx.retrievable
        else ""
    )
    head = (
        f"[ctxpack: summary of {len(state.compacted)} earlier messages, replaced to fit the "
        f"window. Each original is kept as an artifact, listed (message, tool, command, "
        f"artifact) in artifact {index}{how}.]"
    )
    return Message(
        role="user",
        id=state.summary_id,
        content=f"{head}\n\n{state.summary}",
        metadata={"ctxpack": {"summary_of": list(state.compacted)}},
    )


def _earlier_copies(texts: list[str]) -> set[int]:
    """Positions of the ``texts`` that come again later: a piece pinned twice is sent once,
    where it came last."""
    last = {text: k for k, text in enumerate(texts)}
    return {k for k, text in enumerate(texts) if last[text] != k}


def _pin_fates(
    ctx: _Context,
    policy: WindowPolicy,
    end: int,
    noted: Container[str] = (),
    until: int | None = None,
) -> list[tuple[Message, str | None]]:
    """Each piece of pinned content summarised away (before ``end`` in the record, and not
    pinned again after, before ``until`` (the whole record: ``None``), but in a pin sent as a
    note, ``noted`` their ids; once when pinned twice before), in order, with the text its
    re-injection carries: memory whole, skills within budgets (each cut to its head, the
    oldest dropped first, ``None``, when together they exceed ``pinned_budget``).

    ``until`` the record's length at the last compaction, the fates are those it left: a pin
    appended since changes them only at the next compaction (the message re-injecting them
    opens every request's cached prefix)."""
    counter = ctx.counter
    until = len(ctx.record) if until is None else until
    in_tail = {m.text for m in ctx.pinned(end, until) if m.id not in noted}
    items = [m for m in ctx.pinned(0, end) if m.text not in in_tail]
    # A piece pinned again (a skill invoked twice) is re-injected once, where it came last.
    again = _earlier_copies([m.text for m in items])
    items = [m for k, m in enumerate(items) if k not in again]
    fates: dict[int, str | None] = {}
    total = 0
    dropped = False
    for k in reversed(range(len(items))):  # newest first
        m = items[k]
        if _pinned_kind(m) != "skill":
            fates[k] = m.text
            continue
        if not dropped:  # past the budget, this one and every older skill are dropped
            text = _head(m.text, policy.skill_budget, counter)
            total += counter.count(text)
            dropped = total > policy.pinned_budget
        fates[k] = None if dropped else text
    return [(m, fates[k]) for k, m in enumerate(items)]


def _reinjection(
    ctx: _Context,
    policy: WindowPolicy,
    end: int,
    noted: Container[str] = (),
    until: int | None = None,
) -> Message | None:
    """The pinned content summarised away before ``end``, re-injected (:func:`_pin_fates`)."""
    return _reinjection_of(_pin_fates(ctx, policy, end, noted, until))


def _reinjection_of(fates: list[tuple[Message, str | None]]) -> Message | None:
    """The message re-injecting the texts of ``fates``: the memory files first, then the skills
    kept, in order (``None`` when none is)."""
    memory = [text for m, text in fates if _pinned_kind(m) == "memory"]
    skills = [text for m, text in fates if _pinned_kind(m) == "skill" and text is not None]
    parts = [text for text in [*memory, *skills] if text is not None]
    if not parts:
        return None
    return Message(
        role="user",
        id=_PINNED_ID,
        content="[ctxpack: pinned content, re-injected after a compaction]\n\n"
        + "\n\n".join(parts),
    )


def _framing_tokens(counter: TokenCounter, fates: list[tuple[Message, str | None]]) -> int:
    """The tokens of the message re-injecting ``fates`` (:func:`_reinjection_of`) beyond its
    texts' own, which their decisions count: its header, the lines between the texts and a
    message's own tokens (0 when nothing is re-injected)."""
    pins = _reinjection_of(fates)
    if pins is None:
        return 0
    texts = sum(counter.count(text) for _, text in fates if text is not None)
    return counter.count_message(pins) - texts


def _reinjected_tokens(
    ctx: _Context,
    policy: WindowPolicy,
    end: int,
    noted: Container[str] = (),
    until: int | None = None,
) -> int:
    """The tokens of what :func:`_reinjection` re-injects (0 when nothing)."""
    pins = _reinjection(ctx, policy, end, noted, until)
    return 0 if pins is None else ctx.counter.count_message(pins)


def _head(text: str, budget: int, counter: TokenCounter) -> str:
    """``text`` cut to its first lines within ``budget`` tokens, the line that passes it cut to
    its first words: a text of one long line would otherwise be cut to nothing."""
    if counter.count(text) <= budget:
        return text
    kept: list[str] = []
    used = 0
    for line in text.splitlines(keepends=True):
        size = counter.count(line)
        if used + size > budget:
            kept.append(_first_words(line, budget - used, counter))
            break
        kept.append(line)
        used += size
    return "".join(kept)


def _first_words(line: str, budget: int, counter: TokenCounter) -> str:
    """The longest head of ``line`` within ``budget`` tokens that ends before a space (a word
    longer than the budget: cut inside it)."""
    lo, hi = 0, len(line)
    while lo < hi:  # a head's count grows with its length
        mid = (lo + hi + 1) // 2
        if counter.count(line[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    space = line.rfind(" ", 0, lo + 1)
    return line[:space] if space > 0 else line[:lo]
