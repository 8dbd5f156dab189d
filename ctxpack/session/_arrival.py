"""Arrival: each message converted, checked, guarded and, for a tool output, filtered once."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal

from pydantic import ValidationError

from .._internal.arguments import flag, message_items
from .._internal.options import invalid_option
from .._internal.part_texts import with_texts
from .._internal.server_results import result_id, result_ids, tool_calls
from ..adapters.read import read_message
from ..errors import ConfigError, InvalidMessageError
from ..filters import RETRIEVE_TOOL_NAME, FilteredOutput
from ..limits import MAX_MESSAGE_CHARS, message_chars, oversized_view
from ..managed import PinnedText
from ..messages import Message
from ..pipeline import Decision
from ..providers import Provider
from ..sdk import coerce_messages
from ..store import ArtifactStore, put_original
from ..tokens import count_tokens_approx
from ..tools_on_demand import DESCRIBE_TOOL_NAME
from ._records import FilterRecord, command_of, record_key
from ._supersede import Superseding


def pinned_message(text: str, name: str, kind: Literal["memory", "skill"]) -> Message:
    """The user message :meth:`Session.pin` adds.

    Raises:
        ConfigError: an empty name, or a kind other than ``"memory"`` or ``"skill"``.
    """
    try:
        item = PinnedText(name=name, text=text, kind=kind)
    except ConfigError as exc:
        if not isinstance(exc.__cause__, ValidationError):
            raise
        # Worded again to name what the caller called rather than the model.
        raise invalid_option("pin()", PinnedText, exc.__cause__) from exc.__cause__
    return item.message()


def extend_batch(messages: Any) -> list[Any]:
    """What ``extend()`` was given, as a list (a stored session may have to apply it twice).

    Raises:
        InvalidMessageError: ``messages`` is not a list of messages (one message, ``None``...).
    """
    if isinstance(messages, (str, bytes, Mapping)):
        raise InvalidMessageError(
            f"extend() takes a list of messages, got {type(messages).__name__}; "
            "use append() for one message"
        )
    return list(message_items(messages))


class Arrival(Superseding):
    """What a session does with the messages it is given."""

    def _extend(
        self, messages: Sequence[Mapping[str, Any] | Message], provider: Provider | None
    ) -> None:
        # Everything is converted and checked before anything is added, so that a bad message
        # in the middle of a batch cannot leave half of it in the session.
        batch: list[tuple[Message, str]] = []
        anthropic = False
        taken: set[str] = set()  # ids of this batch
        # Parallel calls of the Responses API come as one item each (response.output): one
        # assistant message with all of them, or no chat request could answer them in turn.
        for message in coerce_messages(messages, start=len(self._raw)):
            index = len(self._raw) + len(batch)
            converted, given_as = read_message(message, provider, index)
            anthropic = anthropic or given_as == "anthropic"
            # An id the caller gave is kept; the others are the session's own.
            given = message.id if isinstance(message, Message) else None
            if isinstance(message, Mapping) and isinstance(message.get("id"), str):
                given = message["id"]
            for msg in converted:
                position = len(self._raw) + len(batch)
                mid = given or self._own_id(position, taken)
                if mid in self._ids or mid in taken:
                    raise InvalidMessageError(
                        f"id {mid!r} is already used in this session; ids must be unique",
                        index=position,
                        field="id",
                    )
                taken.add(mid)
                batch.append((msg, mid))
                given = None
        if anthropic:
            self.provider = "anthropic"
        for msg, mid in batch:
            self._add(msg, mid)

    def _own_id(self, position: int, taken: set[str] | frozenset[str] = frozenset()) -> str:
        """The session's id for the message at ``position``: ``s<position>``, unless a caller
        gave that id to another message (then the first free ``s<position>.<k>``)."""
        mid, k = f"s{position}", 0
        while mid in self._ids or mid in taken:
            k += 1
            mid = f"s{position}.{k}"
        return mid

    def _add(self, msg: Message, mid: str) -> None:
        index = len(self._raw)
        msg = msg.model_copy(update={"id": mid})
        # Secrets out and injection markers flagged before anything keeps or reads the message.
        arrival = self.guard(msg, self.counter, self.store, self._hunt())
        msg = arrival.message
        self._decisions.extend(arrival.decisions)
        self._ids.add(mid)
        compact = msg
        self._note_calls(msg)
        if msg.role == "assistant" and self._pending:
            # The agent has answered the outputs it was waiting on: filter them now, with its
            # answer as part of their goal (it names what it used).
            answer = "\n".join([msg.text, *(c.function.arguments for c in msg.tool_calls or ())])
            for position in self._pending:
                self._compact[position] = self._filtered(self._raw[position], answer)
                if self._compact[position] is not self._raw[position]:
                    self._rewrote(position)
            self._pending = []
        if msg.role == "tool":
            if arrival.quarantined is not None:
                compact = arrival.quarantined
                self._record_quarantine(msg, compact, arrival.stored)
            elif self.filter_when == "answered" and not self._never_whole(msg):
                self._pending.append(index)
            else:
                compact = self._filtered(msg)
        elif arrival.quarantined is not None:
            # An assistant's turn holding a provider tool's result withheld: that result is a
            # note, and the turn's other results are filtered as ever.
            compact = arrival.quarantined
            self._record_quarantine(msg, compact, arrival.stored)
            if self.filter is not None and isinstance(msg.content, list):
                withheld = {
                    result_id(part)
                    for part, now in zip(msg.content, compact.content or [], strict=False)
                    if now is not part
                }
                compact = self._provider_results_filtered(compact, withheld)
        elif message_chars(msg) > MAX_MESSAGE_CHARS:
            compact = self._oversized(msg)
        elif msg.role == "assistant" and self.filter is not None:
            compact = self._provider_results_filtered(msg)
        self._raw.append(msg)
        self._compact.append(compact)
        if msg.role == "tool" and self.supersede_batch is not None:
            self._supersede(index)

    def _never_whole(self, msg: Message) -> bool:
        """Whether a managed window could never send ``msg`` whole: waiting for the agent's
        answer would only have the window clear it, unread, to make room."""
        if self.window is None:
            return False
        return self.counter.count_message(msg) > self.window.window - self.window.reserve

    def _filtered(self, msg: Message, answer: str = "") -> Message:
        call = self._calls.get(msg.tool_call_id or "")
        tool = call.tool if call else None
        command = call.command if call else None
        if message_chars(msg) > MAX_MESSAGE_CHARS:
            return self._oversized(msg, tool, command)
        unfiltered = self._unfiltered(msg, tool)
        if unfiltered is not None:
            tokens = self.counter.count_message(msg)
            return self._keep_whole(msg, "none", tokens, unfiltered, tool, command)
        assert self.filter is not None  # else _unfiltered said "filtering is off"
        goal = call.goal if call and call.goal.strip() else self._last_user_text()
        if answer:
            goal = f"{goal}\n{answer}"
        try:
            out = self.filter(
                msg.text, tool=tool, command=command, goal=goal, store=None, message_id=msg.id
            )
        except Exception as exc:  # an odd output must not make appending fail
            tokens = self.counter.count_message(msg)
            reason = f"the filter failed ({type(exc).__name__}: {exc}), so it is sent whole"
            return self._keep_whole(msg, "error", tokens, reason, tool, command)
        before = self.counter.count_message(msg)
        if not out.shortened:
            return self._keep_whole(msg, out.kind, before, out.reason, tool, command)
        compact = msg.model_copy(update={"content": out.text})
        after = self.counter.count_message(compact)
        if after >= before:
            reason = "the filtered version would not be shorter in tokens"
            return self._keep_whole(msg, out.kind, before, reason, tool, command)
        # Stored only now that the shortened version is used: the store holds what markers name.
        stored = put_original(
            self.store, msg.text, message_id=msg.id, kind=out.kind, tool=tool, command=command
        )
        if stored != out.artifact:
            out = self.filter(msg.text, tool=tool, command=command, goal=goal, store=self.store)
            compact = msg.model_copy(update={"content": out.text})
            after = self.counter.count_message(compact)
        self._record(
            FilterRecord(
                msg.id, out.kind, True, out.artifact, before, after, out.reason, tool, command
            )
        )
        return compact

    def _provider_results_filtered(
        self, msg: Message, withheld: Collection[str | None] = ()
    ) -> Message:
        """``msg`` (an assistant's turn) with the texts of the results of the tools its
        provider ran (an MCP server's blocks, code execution's stdout and stderr, an
        ``mcp_call``'s output, the code interpreter's logs...) filtered as a tool message's
        text is, each result recorded; every other part, and each result's type, ids and
        other fields, as they came.

        Filtered at arrival, whatever ``filter_when`` says: the turn already holds what the
        model made of them (its text, which is part of their goal). The results ``withheld``
        (by their ids: quarantined, a note now) are left as they are."""
        if not isinstance(msg.content, list) or not any(result_ids(msg.content)):
            return msg
        calls = {rid: (tool, arguments) for rid, tool, arguments in tool_calls(msg.content)}
        goal = "\n".join(t for t in (self._last_user_text(), msg.text) if t.strip())
        compact = msg
        for k, part in enumerate(msg.content):
            rid = result_id(part)
            if rid is not None and rid not in withheld:  # a quarantined one is a note now
                # A result whose use is not in the turn is filtered by its content alone.
                tool, arguments = calls.get(rid, (None, ""))
                compact = self._provider_result_filtered(
                    compact, k, rid, tool, command_of(arguments), goal
                )
        return compact

    def _provider_result_filtered(
        self, msg: Message, k: int, rid: str, tool: str | None, command: str | None, goal: str
    ) -> Message:
        """``msg`` with its part ``k`` (the provider tool result ``rid``) filtered: each text
        :func:`~ctxpack._internal.part_texts.with_texts` finds in it is one output to the
        filter, and the result is recorded once (by its longest text, which names the kind)."""
        assert isinstance(msg.content, list)
        before = self.counter.count_message(msg)
        try:
            compact, outs = self._result_texts_cut(msg, k, tool, command, goal, None)
        except Exception as exc:  # an odd output must not make appending fail
            reason = f"the filter failed ({type(exc).__name__}: {exc}), so it is sent whole"
            return self._keep_whole(msg, "error", before, reason, tool, command, rid)
        if not outs:  # no text in it (a web search's encrypted results, an image)
            return msg
        cuts = [(text, out) for text, out in outs.items() if out.shortened]
        if not cuts:
            largest = outs[max(outs, key=len)]
            return self._keep_whole(msg, largest.kind, before, largest.reason, tool, command, rid)
        after = self.counter.count_message(compact)
        if after >= before:
            reason = "the filtered version would not be shorter in tokens"
            return self._keep_whole(msg, cuts[0][1].kind, before, reason, tool, command, rid)
        # Stored only now that the shortened texts are used: the store holds what markers name.
        stored = [
            put_original(
                self.store, text, message_id=msg.id, kind=out.kind, tool=tool, command=command
            )
            for text, out in cuts
        ]
        if stored != [out.artifact for _, out in cuts]:
            compact, outs = self._result_texts_cut(msg, k, tool, command, goal, self.store)
            after = self.counter.count_message(compact)
        main = outs[max((text for text, _ in cuts), key=len)]
        reason = main.reason
        if len(stored) > 1:
            others = ", ".join(a for a in stored if a != main.artifact)
            reason += f"; {len(stored) - 1} more of its texts shortened, stored as {others}"
        self._record(
            FilterRecord(
                msg.id, main.kind, True, main.artifact, before, after, reason, tool, command, rid
            )
        )
        return compact

    def _result_texts_cut(
        self,
        msg: Message,
        k: int,
        tool: str | None,
        command: str | None,
        goal: str,
        store: ArtifactStore | None,
    ) -> tuple[Message, dict[str, FilteredOutput]]:
        """``msg`` with each text of its part ``k`` as the filter gives it, and what the
        filter gave for each text."""
        assert self.filter is not None and isinstance(msg.content, list)
        run, outs = self.filter, dict[str, FilteredOutput]()

        def cut(text: str) -> str:
            if text not in outs:
                outs[text] = run(
                    text, tool=tool, command=command, goal=goal, store=store, message_id=msg.id
                )
            return outs[text].text

        part = with_texts(msg.content[k], cut)
        content = [*msg.content[:k], part, *msg.content[k + 1 :]]
        return msg.model_copy(update={"content": content}), outs

    def _oversized(
        self, msg: Message, tool: str | None = None, command: str | None = None
    ) -> Message:
        """A message above the size limit: stored whole, shown as its head and tail, never
        filtered nor counted whole (either would take many times its size in memory)."""
        text = msg.text
        artifact = put_original(
            self.store, text, message_id=msg.id, kind="oversized", tool=tool, command=command
        )
        view = oversized_view(text, artifact=artifact, retrievable=self.retrieve_tool)
        compact = msg.model_copy(update={"content": view})
        before = count_tokens_approx().count_message(msg)
        reason = (
            f"{len(text):,} characters, above the limit of {MAX_MESSAGE_CHARS:,}: shown as its "
            f"head and tail (tokens before estimated at 4 characters each)"
        )
        after = self.counter.count_message(compact)
        self._record(
            FilterRecord(msg.id, "oversized", True, artifact, before, after, reason, tool, command)
        )
        return compact

    def _record_quarantine(self, msg: Message, note: Message, stored: str | None) -> None:
        call = self._calls.get(msg.tool_call_id or "")
        before, after = self.counter.count_message(msg), self.counter.count_message(note)
        reason = "withheld as a possible prompt injection (flag_injections='quarantine')"
        tool, command = (call.tool, call.command) if call else (None, None)
        self._record(
            FilterRecord(msg.id, "quarantined", True, stored, before, after, reason, tool, command)
        )

    def _unfiltered(self, msg: Message, tool: str | None) -> str | None:
        """Why a tool output is never filtered, or ``None`` when it may be."""
        if self.filter is None:
            return "filtering is off"
        if tool == RETRIEVE_TOOL_NAME:
            return "a retrieved original is never filtered again"
        if tool == DESCRIBE_TOOL_NAME:
            # The definitions the model asked for before calling: shortened, it would call
            # with parameters it was never shown.
            return "the tool definitions describe_tool gives are never filtered"
        text_only = isinstance(msg.content, str) or all(
            part.get("type") == "text" for part in msg.content or []
        )
        return None if text_only else "not plain text (images or other parts)"

    def _keep_whole(
        self,
        msg: Message,
        kind: str,
        tokens: int,
        reason: str,
        tool: str | None,
        command: str | None,
        result_id: str | None = None,
    ) -> Message:
        """Record that ``msg`` (or its provider tool result ``result_id``) is sent whole, and
        why; return it."""
        self._record(
            FilterRecord(
                msg.id, kind, False, None, tokens, tokens, reason, tool, command, result_id
            )
        )
        return msg

    def _record(self, record: FilterRecord) -> None:
        self._records[record_key(record)] = record
        if record.shortened:
            reason = f"{record.reason}; original stored as {record.artifact}"
            action: Any = "compressed"
        else:
            reason = f"tool output kept whole: {record.reason}"
            action = "kept"
        self._decisions.append(
            Decision(
                stage="filter",
                action=action,
                message_id=record.message_id,
                reason=reason,
                tokens_before=record.tokens_before,
                tokens_after=record.tokens_after,
            )
        )

    def _last_user_text(self) -> str:
        for msg in reversed(self._raw):
            if msg.role == "user":
                return msg.text
        return ""

    def _record_response(self, response: Any, append: bool = True) -> list[Decision]:
        """:meth:`record_response`'s change of state; returns the decisions recorded."""
        from ..server_side import response_body, response_decisions

        flag(append, "append")
        body, anthropic = response_body(response)
        reply_id = body.get("id")
        # A wrapper reads each reply, a streamed one's too, with append=False (it reaches the
        # session with the next request); code that also gives it here (as the guide once
        # said to, for a stream) must not count its edits twice, nor append it twice. A
        # reply's id is unique to it. Only an Anthropic reply read without its append is
        # remembered (an OpenAI one is never appended here): a test's fake model that
        # answers every turn with one id, recorded with the default append, has each answer
        # appended.
        remember = bool(reply_id) and (not anthropic or not append)
        if reply_id and reply_id in self.window_state.replies:
            return []
        # An empty reply (Claude may end its turn saying nothing) is no message to keep:
        # Anthropic refuses one with no content in a later request's history.
        append = append and bool(body.get("content"))
        if anthropic and append:
            mid = self._own_id(len(self._raw))  # the reply, as it is about to be appended
        elif anthropic and self._raw:
            mid = self._raw[-1].id  # the end of the request the provider edited
        else:
            mid = str(body.get("id", "response"))
        decisions = response_decisions(body, message_id=mid)
        if anthropic and append:
            message = {"role": "assistant", "content": body.get("content") or []}
            self._extend([message], "anthropic")
        self.window_state.decisions.extend(decisions)
        if remember:
            self.window_state.replies.append(str(reply_id))
        return decisions
