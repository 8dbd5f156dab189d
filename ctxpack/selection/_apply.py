"""apply_selection(): a selection and a workspace in, the context for the large model out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from .._internal.arguments import tokens as check_tokens
from .._internal.arguments import tool_definitions
from ..errors import ConfigError, CtxpackError, SelectionError
from ..messages import Message
from ..pipeline import Action, Decision
from ..providers import Provider, detect_provider, tools_as_sent
from ..redaction import redact
from ..result import PackResult
from ..stages import exchange_units, provider_pairs, without_unsent_reasoning
from ..store import get_original
from ..tokens import TokenCounter, checked_tool_tokens
from ._model import FileRequest, Selection
from ._workspace import Passage, Workspace, check_workspace, is_artifact_id

__all__ = ["CONTEXT_ID", "apply_selection", "check_selection"]

STAGE = "selection"
#: The id of the message that carries the durable notes, the file passages and stored originals.
CONTEXT_ID = "selection-context"
_EXCHANGE = (
    "same tool exchange as message {}: kept whole (a provider rejects a call without its result)"
)
# Tool results no request can carry, whatever the selection says: left out, and recorded why.
_ORPHAN = (
    "tool result whose call is not in the workspace, or comes after other turns: left out (a "
    "provider rejects a result that answers no call waiting for it)"
)
_REPEAT = (
    "a second result for a call an earlier tool message answers: left out (a provider takes "
    "one result per call)"
)


@dataclass
class _Resolved:
    """What a selection names, checked against a workspace."""

    messages: dict[int, str] = field(default_factory=dict)  # index -> reason
    uncertain: set[int] = field(default_factory=set)
    passages: list[tuple[Passage, str]] = field(default_factory=list)  # passage, reason
    stored: list[tuple[str, str, str]] = field(default_factory=list)  # id, text, reason


class _Resolver:
    def __init__(self, selection: Selection, workspace: Workspace) -> None:
        self.selection = selection
        self.workspace = workspace
        self.calls = workspace.calls()
        self.problems: list[str] = []
        self.out = _Resolved()
        self.reasons: dict[str, str] = {}

    def run(self) -> _Resolved:
        sel = self.selection
        for item in sel.reasons:
            key = self._key(item.item)
            if key is not None:
                self.reasons[key] = item.reason
        for ref in sel.include_messages:
            self._message(ref, uncertain=False)
        for call in sel.include_tool_results:
            self._tool_result(call, uncertain=False)
        for request in sel.include_files:
            self._file(request, uncertain=False)
        for ref in sel.uncertain:
            kind = self._kind(ref)
            if kind == "call" or kind == "artifact":
                self._tool_result(ref, uncertain=True)
            elif kind == "message":
                self._message(ref, uncertain=True)
            elif kind == "file":
                self._file(FileRequest(path=ref), uncertain=True)
            else:
                self.problems.append(f"uncertain item {ref!r}: {self._unknown(ref)}")
        if self.problems:
            raise SelectionError(self.problems)
        return self.out

    # -- what a reference names ----------------------------------------------------------

    def _kind(self, ref: str | int) -> str | None:
        if isinstance(ref, int):
            return "message" if 0 <= ref < len(self.workspace.messages) else None
        if ref in self.calls:
            return "call"
        if is_artifact_id(ref) and self.workspace.store is not None:
            return "artifact"
        try:
            self.workspace.index_of(ref)
            return "message"
        except SelectionError:
            pass
        if self.workspace.root is not None:
            try:
                self.workspace.resolve_path(ref)
                return "file"
            except CtxpackError:
                return None
        return None

    def _key(self, ref: str) -> str | None:
        kind = self._kind(ref)
        if kind == "message":
            return f"m{self.workspace.index_of(ref)}"
        if kind == "call":
            return f"c{ref}"
        if kind == "artifact":
            return f"a{ref}"
        if kind == "file":
            return f"f{PurePosixPath(ref.replace(chr(92), '/')).as_posix()}"
        self.problems.append(f"reason for {ref!r}: {self._unknown(ref)}")
        return None

    def _unknown(self, ref: str) -> str:
        n = len(self.workspace.messages)
        shown = self._shown_calls()
        files = "" if self.workspace.root is None else ", or a file path under the root"
        # An empty workspace has no index to offer: "(0--1)" would read as a range.
        messages = f"a message index (0-{n - 1}) or id" if n else "a message (there are none)"
        return (
            f"names nothing in the workspace; give {messages}, a tool call id "
            f"({shown or 'none'}){files}"
        )

    def _shown_calls(self) -> str:
        """The workspace's tool call ids for an error message, the first twelve named."""
        calls = list(self.calls)
        return ", ".join(calls[:12]) + (f" and {len(calls) - 12} more" if len(calls) > 12 else "")

    def _reason(self, key: str, uncertain: bool) -> str:
        sel = self.selection
        said = self.reasons.get(key) or sel.include_reason or "no reason given"
        by = f"selected by {sel.selector}: {said}"
        return f"{by} (uncertain: included so that the large model can judge)" if uncertain else by

    # -- items ---------------------------------------------------------------------------

    def _message(self, ref: int | str, *, uncertain: bool) -> None:
        try:
            index = self.workspace.index_of(ref)
        except SelectionError as exc:
            self.problems.extend(exc.problems)
            return
        self.out.messages.setdefault(index, self._reason(f"m{index}", uncertain))
        if uncertain:
            self.out.uncertain.add(index)

    def _tool_result(self, call: str, *, uncertain: bool) -> None:
        if call in self.calls:
            caller, answer = self.calls[call]
            reason = self._reason(f"c{call}", uncertain)
            for index in (caller, answer):
                if index is not None:
                    self.out.messages.setdefault(index, reason)
                    if uncertain:
                        self.out.uncertain.add(index)
            return
        store = self.workspace.store
        if is_artifact_id(call) and store is not None:
            if any(ref == call for ref, _, _ in self.out.stored):
                return  # named twice (or also uncertain): shown once, as a passage is
            try:
                text = get_original(store, call)
            except KeyError as exc:
                self.problems.append(f"tool result {call!r}: {exc}")
                return
            self.out.stored.append((call, text, self._reason(f"a{call}", uncertain)))
            return
        shown = self._shown_calls()
        hint = " (an artifact id, but the workspace has no store)" if is_artifact_id(call) else ""
        self.problems.append(
            f"no tool call {call!r}{hint}; the workspace's tool calls are: {shown or 'none'}"
        )

    def _file(self, request: FileRequest, *, uncertain: bool) -> None:
        try:
            read = self.workspace.read(request)
        except SelectionError as exc:
            self.problems.extend(exc.problems)
            return
        except CtxpackError as exc:  # WorkspacePathError: the path is refused
            self.problems.append(str(exc))
            return
        key = f"f{PurePosixPath(request.path.replace(chr(92), '/')).as_posix()}"
        reason = self._reason(key, uncertain)
        # A passage asked for twice (listed twice, or also uncertain) is shown once.
        shown = {(p.path, p.start, p.end) for p, _ in self.out.passages}
        for passage in read if isinstance(read, list) else [read]:
            if (passage.path, passage.start, passage.end) not in shown:
                self.out.passages.append((passage, reason))


def check_selection(selection: Selection, workspace: Workspace) -> None:
    """Check that everything ``selection`` names exists in ``workspace`` and can be shown.

    Raises:
        SelectionError: listing every problem at once, each naming the item and what exists.
        ConfigError: ``selection`` is not a Selection or ``workspace`` not a Workspace.
    """
    _check_arguments(selection, workspace, None)
    _Resolver(selection, workspace).run()


def _ranges(indexes: Iterable[int]) -> str:
    """``[3, 4, 5, 9]`` -> ``"3-5, 9"``."""
    out: list[str] = []
    run: list[int] = []
    for i in sorted(indexes):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [i]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(out)


def apply_selection(
    selection: Selection,
    workspace: Workspace,
    *,
    budget: int | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    provider: Provider | None = None,
) -> PackResult:
    """Build the large model's context from a selection, with a decision per item.

    The context holds, in their original order, the selected messages, every system, developer
    and pinned message, every user message (user instructions and constraints are always kept,
    verbatim, and when the selector left one out its decision says so) and each tool exchange
    whole; then one context message (id ``"selection-context"``) with the durable notes, the
    file passages (labelled with path and line numbers), the stored originals the selection
    names and the list of messages left out. That message comes last because it changes at
    every step: what comes before it can stay a cached prompt prefix from one step to the next.
    The selection's durable notes are added to the workspace; every later context carries them.

    Every workspace message gets a decision: ``selected`` with the selector's reason, ``kept``
    with why it is kept anyway, or ``dropped`` with the omit reason (or why no request can
    carry it: a result of no call there, a second result of one call). Each file passage,
    stored original and durable note gets one too (ids ``file:path:start-end``, ``artifact:id``,
    ``note:n``), and ``"selection"`` records who chose, and any fallback. As :func:`ctxpack.pack`
    does, a call no result answers is removed unless its message is sent last (its results may
    be on the way; the original in ``result.artifacts``), and reasoning no request sends (its
    response left out) is dropped or cleared, a decision under ``writer``, and not counted.

    Args:
        selection: What the selector chose.
        workspace: Where the items come from; its durable notes grow by the selection's.
        budget: When given, the context must fit in it (else a :class:`SelectionError`).
        tools: Tool definitions sent with the request (OpenAI or Anthropic format): counted
            in ``budget`` and ``result.tokens``, as :func:`ctxpack.pack` counts them.
        provider: Whose framing counts the tools; by default Anthropic's for messages
            :func:`ctxpack.from_anthropic` made, else OpenAI's.

    Returns:
        A :class:`~ctxpack.PackResult` (``budget`` is the context's tokens when none is given).

    Raises:
        SelectionError: the selection names unknown messages, calls, artifacts or files, a
            refused path, a range outside its file or a match found nowhere (every problem
            listed, each with what exists), or the context exceeds ``budget``.
        ConfigError: a workspace message has the id ``"selection-context"`` (an earlier
            step's context message), or an argument has the wrong type.

    Example:
        >>> ws = Workspace([
        ...     {"role": "system", "content": "You are a coding agent."},
        ...     {"role": "user", "content": "Never touch the migrations."},
        ...     {"role": "assistant", "content": "Looking at the build log."},
        ...     {"role": "user", "content": "Why does login fail?"},
        ... ])
        >>> result = apply_selection(Selection(include_messages=[3], omit_reason="old"), ws)
        >>> [m.text for m in result.messages][1:3]
        ['Never touch the migrations.', 'Why does login fail?']
        >>> print(result.messages[-1].text)
        [Context selected for this step by manual]
        <BLANKLINE>
        Left out of this step: messages 2 (old).
        >>> [d.action for d in result.decisions_for(ws.messages[2].id)]
        ['dropped']
    """
    sent = _check_arguments(selection, workspace, budget, tools, provider)
    resolved = _Resolver(selection, workspace).run()
    new_notes = set(workspace.add_notes(selection.durable_notes))
    counter = workspace.counter
    out, decisions = _selected(selection, workspace, resolved, new_notes)
    out, unanswered, originals = provider_pairs(out, counter.count_message, STAGE)
    out, unsent = without_unsent_reasoning(out, counter.count_message)
    decisions += unanswered + unsent
    tokens = _prompt_tokens(counter, out, sent)
    if budget is not None and tokens > budget:
        # A selection that is refused leaves the workspace as it was.
        for note in new_notes:
            workspace.forget_note(note)
        raise _over_budget(workspace, decisions, tokens, budget, sent)
    return _result(selection, workspace, out, decisions, tokens, budget, sent, originals)


def _result(
    selection: Selection,
    workspace: Workspace,
    out: list[Message],
    decisions: list[Decision],
    tokens: int,
    budget: int | None,
    sent: Sequence[Mapping[str, Any]],
    originals: dict[str, Message],
) -> PackResult:
    """The result: ``out`` and its ``decisions``, beside what the whole workspace takes."""
    counter, messages = workspace.counter, workspace.messages
    return PackResult(
        messages=out,
        tokens=tokens,
        budget=budget,
        input_tokens=_prompt_tokens(counter, messages, sent),
        input_ids=[m.id for m in messages],
        counter=counter.name,
        exact=counter.exact,
        query=selection.goal,
        decisions=decisions,
        artifacts=originals,
    )


def _prompt_tokens(
    counter: TokenCounter, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]
) -> int:
    """A request's tokens as :func:`ctxpack.count_tokens` counts it: its messages, with the
    reply priming, and its tools beside them."""
    return counter.count_messages(messages) + (
        checked_tool_tokens(tools, counter, messages) if tools else 0
    )


def _check_arguments(
    selection: Any,
    workspace: Any,
    budget: int | None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    provider: Provider | None = None,
) -> list[Mapping[str, Any]]:
    """Refuse a bad argument; returns the tool definitions as the request carries them."""
    if not isinstance(selection, Selection):
        raise ConfigError(
            f"selection must be a Selection (Selection.from_answer() parses a selector's answer "
            f"into one), got {type(selection).__name__}"
        )
    check_workspace(workspace)
    if budget is not None:
        check_tokens(budget, "budget")
    # The context message would go out next to it under the same id: two messages, one id.
    for i, msg in enumerate(workspace.messages):
        if msg.id == CONTEXT_ID:
            raise ConfigError(
                f"workspace message {i} has the id {CONTEXT_ID!r}, which apply_selection() gives "
                "the context message it adds; leave an earlier step's context message out of "
                "the workspace (each step builds its own), or give the message another id"
            )
    target = detect_provider(provider, None, workspace.messages)  # refuses a bad provider
    return [] if tools is None else tools_as_sent(tool_definitions(tools), target)


def _selected(
    selection: Selection, workspace: Workspace, resolved: _Resolved, new_notes: set[str]
) -> tuple[list[Message], list[Decision]]:
    """The context's messages, in order, the context message last, and every decision."""
    messages = workspace.messages
    decided = _decide(messages, resolved, selection.selector)
    stray = _complete_exchanges(workspace, decided)
    omitted = [i for i in range(len(messages)) if i not in decided]
    context = _context(selection, workspace, resolved, omitted)

    decisions = [
        Decision(stage=STAGE, action="selected", message_id="selection", reason=_summary(selection))
    ]
    decisions += _item_decisions(workspace, resolved, new_notes, selection.selector)
    out = [m for i, m in enumerate(messages) if i in decided]
    decisions += _message_decisions(selection, workspace, decided, stray)
    if context is not None:
        out.append(context)
        decisions.append(
            Decision(
                stage=STAGE,
                action="selected",
                message_id=CONTEXT_ID,
                reason="carries the durable notes, file passages and the list of what was left out",
                tokens_after=workspace.counter.count_message(context),
            )
        )
    return out, decisions


def _decide(
    messages: Sequence[Message], resolved: _Resolved, who: str
) -> dict[int, tuple[Action, str]]:
    """What happens to each message the selection keeps, by index (the rest are left out)."""
    decided: dict[int, tuple[Action, str]] = {}
    for i, msg in enumerate(messages):
        if i in resolved.messages:
            reason = resolved.messages[i]
            if msg.role == "user":
                reason += " (a user instruction: kept in any case)"
            decided[i] = ("selected", reason)
        elif msg.role in ("system", "developer"):
            decided[i] = ("kept", f"{msg.role} message: always kept")
        elif msg.pinned:
            decided[i] = ("kept", "pinned: always kept")
        elif msg.role == "user":
            decided[i] = ("kept", f"user instruction: always kept, though {who} left it out")
    return decided


def _summary(selection: Selection) -> str:
    """The reason of the ``"selection"`` decision: who chose, for what, any fallback, the cost."""
    summary = f"chosen by {selection.selector}"
    if selection.goal:
        summary += f" for the goal {selection.goal!r}"
    if selection.fallback:
        summary += f"; fell back: {selection.fallback}"
    if selection.usage is not None:
        u = selection.usage
        summary += f"; selector spent {u.input_tokens} input + {u.output_tokens} output tokens"
        summary += f" in {u.calls} call(s)"
    return summary


def _item_decisions(
    workspace: Workspace, resolved: _Resolved, new_notes: set[str], who: str
) -> list[Decision]:
    """One decision per durable note, file passage and stored original the context carries."""
    counter = workspace.counter
    decisions: list[Decision] = []
    for n, note in enumerate(workspace.notes):
        fresh = note in new_notes
        origin = (
            f"durable note from {who}" if fresh else "durable note kept from an earlier selection"
        )
        decisions.append(
            Decision(
                stage=STAGE,
                action="selected" if fresh else "kept",
                message_id=f"note:{n}",
                reason=f"{origin}: {note}",
            )
        )
    for passage, reason in resolved.passages:
        decisions.append(
            Decision(
                stage=STAGE,
                action="selected",
                message_id=f"file:{passage.label}",
                reason=reason + (f" ({passage.note})" if passage.note else ""),
                tokens_after=counter.count(passage.render()),
            )
        )
    for ref, text, reason in resolved.stored:
        decisions.append(
            Decision(
                stage=STAGE,
                action="selected",
                message_id=f"artifact:{ref}",
                reason=reason,
                tokens_after=counter.count(text),
            )
        )
    return decisions


def _message_decisions(
    selection: Selection,
    workspace: Workspace,
    decided: dict[int, tuple[Action, str]],
    stray: dict[int, str],
) -> list[Decision]:
    """One decision per workspace message: its ``decided`` action, else dropped, as a tool
    result no request can carry (``stray``) or as omitted."""
    counter = workspace.counter
    dropped = f"omitted by {selection.selector}: {selection.omit_reason or 'no reason given'}"
    decisions: list[Decision] = []
    for i, msg in enumerate(workspace.messages):
        tokens = counter.count_message(msg)
        action, reason = decided.get(i, ("dropped", stray.get(i, dropped)))
        decisions.append(
            Decision(
                stage=STAGE,
                action=action,
                message_id=msg.id,
                reason=reason,
                tokens_before=tokens,
                tokens_after=tokens if i in decided else 0,
            )
        )
    return decisions


def _over_budget(
    workspace: Workspace,
    decisions: list[Decision],
    tokens: int,
    budget: int,
    tools: Sequence[Mapping[str, Any]],
) -> SelectionError:
    """The error for a context over its budget: what is kept whatever is selected, when that
    alone is over, else the three largest selected items."""
    floor = _decide(workspace.messages, _Resolved(), "")
    _complete_exchanges(workspace, floor)
    always = [workspace.messages[i] for i in sorted(floor)]
    kept = _prompt_tokens(workspace.counter, always, tools)
    if kept > budget:
        with_tools = ", and the tool definitions" if tools else ""
        return SelectionError(
            [
                f"the selected context takes {tokens} tokens, over the budget of {budget}; the "
                f"messages kept whatever is selected (system, developer, pinned and user "
                f"messages, with their tool exchanges{with_tools}) take {kept} tokens alone: "
                "raise the budget"
            ]
        )
    # Items only: the "selection" decision records who chose, and holds no tokens.
    largest = sorted(
        (
            (d.tokens_after or 0, d.message_id)
            for d in decisions
            if d.action == "selected" and d.message_id != "selection"
        ),
        reverse=True,
    )[:3]
    shown = ", ".join(f"{mid} ({n} tokens)" for n, mid in largest)
    return SelectionError(
        [
            f"the selected context takes {tokens} tokens, over the budget of {budget}; "
            f"select less (the largest selected items: {shown})"
        ]
    )


def _complete_exchanges(
    workspace: Workspace, decided: dict[int, tuple[Action, str]]
) -> dict[int, str]:
    """Add to ``decided`` the rest of every tool exchange one of its messages is in, and take
    out of it the tool results no request can carry (a result whose call is not in the
    workspace or after other turns, a second result of one call); returns those, by index,
    with why.

    The exchanges are the packer's (``exchange_units``): a call with the first result in its
    turn, so that a call id an agent reuses, or a tool it re-ran, still pairs each call with the
    result the model read."""
    units = exchange_units(workspace.messages)
    members: dict[int, list[int]] = {}
    for i, unit in enumerate(units.of.tolist()):
        members.setdefault(unit, []).append(i)
    for group in members.values():
        chosen = [i for i in group if i in decided]
        if chosen and len(group) > 1:
            for i in group:
                if i not in decided:
                    decided[i] = ("kept", _EXCHANGE.format(chosen[0]))
    stray = {i: _ORPHAN for i in units.orphans} | {i: _REPEAT for i in units.repeats}
    for i in stray:
        decided.pop(i, None)
    return stray


def _context(
    selection: Selection, workspace: Workspace, resolved: _Resolved, omitted: list[int]
) -> Message | None:
    """The context message: durable notes, file passages, stored originals, what was left out."""
    parts: list[str] = []
    if workspace.notes:
        parts.append("Durable notes:\n" + "\n".join(f"- {n}" for n in workspace.notes))
    if resolved.passages:
        parts.append(
            "Files (line numbers on the left):\n"
            + "\n".join(p.render() for p, _ in resolved.passages)
        )
    for ref, text, _reason in resolved.stored:
        parts.append(f"Stored original {ref}:\n{text}")
    if omitted:
        why = f" ({selection.omit_reason})" if selection.omit_reason else ""
        parts.append(f"Left out of this step: messages {_ranges(omitted)}{why}.")
    if not parts:
        return None
    text = f"[Context selected for this step by {selection.selector}]\n\n" + "\n\n".join(parts)
    # Files and originals are read as tool outputs are: their secrets never reach the model.
    return Message(role="user", content=redact(text).text, id=CONTEXT_ID)
