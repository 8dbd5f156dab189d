"""Rendering: the compact record as a request, with its decisions and originals."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Literal

from .._internal.arguments import flag, keyword_checked, openai_api, optional_text, tool_definitions
from .._internal.arguments import tokens as check_tokens
from .._internal.compaction import unread
from .._internal.server_results import result_ids
from .._internal.tool_choice import check_choice, check_tool_choice, tool_choice_tokens
from ..adapters.read import read_message
from ..errors import ConfigError, InvalidMessageError
from ..limits import MAX_MESSAGE_CHARS, message_chars
from ..managed import cache_warnings, render_window
from ..messages import Message, detached
from ..packing import pack
from ..pipeline import Decision, DecisionLog, Stage
from ..providers import (
    Provider,
    all_strict,
    check_provider,
    flat_tools,
    preserves_thinking,
    provider_from_model,
    tools_as_sent,
)
from ..result import Originals, PackResult, rendered_from
from ..retrieval import retrieve_tool
from ..stages import provider_conform
from ..store import artifact_id, put_original
from ..tokens import TokenCounter, checked_tool_tokens, history_tokens
from ..tools_on_demand import _on_demand, _sent_whole
from ..usage import known_window
from ._later import frozen, hunted_message
from ._options import with_session_store
from ._state import SessionState

_SYSTEM = ("system", "developer")
# The decision of a message sent before the last compaction block, which the API skips.
_UNREAD = (
    "sent as the record holds it, not read: the provider reads the history from the last "
    "compaction block on"
)


@contextmanager
def system_opening(system: Any) -> Iterator[Mapping[str, Any] | Message | None]:
    """``render(system=...)``'s prompt as the message a request opens with (a string is a
    system message's content; ``None``, the session's own prompt), and the errors about it
    named after that argument.

    The prompt is read as message 0 (a wrapper's request opens with it); the record's own
    messages were checked when they were appended, so a render raises about message 0 only
    for that prompt."""
    if system is None:
        yield None
        return
    if isinstance(system, str):
        opening: Mapping[str, Any] | Message = {"role": "system", "content": system}
    elif isinstance(system, (Mapping, Message)):
        opening = system
    else:
        raise InvalidMessageError(
            f"render(system=...): a string or a system message, got {type(system).__name__}",
            field="system",
        )
    try:
        yield opening
    except InvalidMessageError as error:
        if error.index != 0:
            raise
        where = "" if error.field is None else f"{error.field}: "
        field = "system" if error.field is None else f"system.{error.field}"
        raise InvalidMessageError(
            f"render(system=...): {where}{error.detail}", field=field
        ) from error


def _choice_tokens(
    choice: Any, provider: Provider, tools: Sequence[Mapping[str, Any]], counter: TokenCounter
) -> int:
    """The tokens ``render(tool_choice=choice)`` adds to the prompt (OpenAI's; Anthropic's
    tool prompt is counted with the tools), once checked against ``provider`` and the tools
    sent: a ``ConfigError`` naming ``tool_choice`` otherwise."""
    if choice is None:
        return 0
    check_choice(choice, provider)
    check_tool_choice(choice, tools)
    return tool_choice_tokens(choice, counter.count) if provider == "openai" else 0


def _check_arguments(budget: int | None, reserve: int, query: str | None) -> None:
    if budget is not None:
        check_tokens(budget, "budget")
    check_tokens(reserve, "reserve", minimum=0)
    optional_text(query, "query")


class Rendering(SessionState):
    """What a session sends: the compact record, packed or managed."""

    def _own_tools(self, provider: Provider, strict: bool = False) -> list[dict[str, Any]]:
        """The tool definitions the session adds to a request (see ``Session.tools``)."""
        return [retrieve_tool(provider, strict=strict)] if self.retrieve_tool else []

    @keyword_checked
    def tools(
        self,
        provider: Provider = "openai",
        *,
        api: Literal["chat", "responses"] = "chat",
        strict: bool = False,
    ) -> list[dict[str, Any]]:
        """The tool definitions the session adds to a request: the retrieve tool, if offered.

        ``api="responses"`` gives OpenAI's in the Responses API's flat shape
        (``client.responses.create(tools=...)``), ``strict`` off as Chat Completions meant it.
        ``strict=True`` gives OpenAI's strict variant (see
        :func:`ctxpack.retrieval.retrieve_tool`), for a request that takes strict function
        tools only (``chat.completions.parse``); render that request with ``strict=True`` too,
        so that the variant sent is the one counted.
        """
        tools = self._own_tools(provider, flag(strict, "strict"))
        return flat_tools(tools) if openai_api(api) == "responses" else tools

    def _target(self, provider: Any) -> Provider:
        """The provider a request is shaped for: the one asked, else Anthropic for a Claude
        model (as pack() decides), else that of the messages appended."""
        if provider is not None:
            return check_provider(provider)
        if provider_from_model(self.model) == "anthropic":
            return "anthropic"
        return self.provider

    def _renders_state(self, tools: Sequence[Mapping[str, Any]] | None) -> bool:
        """Whether a render changes the session's state: a managed one does (its window's),
        and so does one giving tools on demand new definitions."""
        if self.window is not None:
            return True
        if not self.tools_on_demand or tools is None:
            return False
        given = tool_definitions(tools)  # a ConfigError naming the bad definition
        return bool(given) and given != self._full_tools

    def _render_opening(
        self,
        opening: Any,
        budget: int | None = None,
        query: str | None = None,
        provider: Provider | None = None,
        reserve: int = 0,
        tools: Sequence[Mapping[str, Any]] | None = None,
        whole: Collection[str] = (),
        strict: bool = False,
        choice: Any = None,
    ) -> PackResult:
        """``render()``, the request opening with its own system prompt ``opening`` (a
        wrapper's, whose caller's prompt changed since the session's first) unless ``None``;
        with tools on demand, the tools named in ``whole`` (the one a wrapper's request forces)
        counted with their full definitions; ``strict``: the session's own tools counted in
        their strict variant; ``choice``: the request's ``tool_choice``."""
        args = (opening, budget, query, provider, reserve, tools, whole, strict, choice)
        with self._lock:
            if self._backing is None or self.window is None:
                self._refresh()
                if not self._renders_state(tools):
                    return self._render_with(*args)
            # A render that changes the state (a managed one: what was cleared, compacted) is
            # made like an append, all or nothing (a summarizer that raises leaves no rent nor
            # edit behind), and stored on top of the newest stored state, so that every replica
            # goes on from the last request sent, whoever sent it.
            results: list[PackResult] = []
            self._change(lambda: results.append(self._render_with(*args)))
            return results[-1]

    def _render_with(
        self,
        opening: Any,
        budget: int | None,
        query: str | None,
        provider: Provider | None,
        reserve: int,
        tools: Sequence[Mapping[str, Any]] | None,
        whole: Collection[str] = (),
        strict: bool = False,
        choice: Any = None,
    ) -> PackResult:
        """The request, opening with the system prompt ``opening`` unless ``None``."""
        record, decisions = (None, []) if opening is None else self._opening(opening, provider)
        result = self._render(
            budget, query, provider, reserve, tools, record, whole, strict, choice
        )
        if decisions:
            result = result.model_copy(update={"decisions": result.decisions + tuple(decisions)})
        # What a reply answering it names (append(after=result)).
        return rendered_from(result, self._origin())

    def _opening(
        self, message: Mapping[str, Any] | Message, provider: Provider | None
    ) -> tuple[list[Message], list[Decision]]:
        """The record to render for a request that opens with its own system prompt
        ``message`` (a date in it, LangChain's ``dynamic_prompt``), and the guard's decisions
        on it. The session keeps the prompt it opened with: each request carries its own and
        nothing is stored, so that replicas sending different prompts never send each other's."""
        converted, _ = read_message(message, provider, 0)
        first = self._raw[0] if self._raw else None
        if len(converted) != 1 or first is None or first.role not in _SYSTEM:
            raise InvalidMessageError(
                "the session's history does not open with a system message, so a request "
                "cannot open with one (one session per conversation)",
                index=0,
            )
        if converted[0].role not in _SYSTEM:
            raise InvalidMessageError("must be a system message", index=0, field="role")
        arrival = self.guard(
            converted[0].model_copy(update={"id": first.id}), self.counter, self.store
        )
        if message_chars(arrival.message) > MAX_MESSAGE_CHARS:
            raise InvalidMessageError(
                f"a system prompt above {MAX_MESSAGE_CHARS:,} characters", index=0, field="content"
            )
        return [arrival.message, *self._compact[1:]], list(arrival.decisions)

    def _render(
        self,
        budget: int | None,
        query: str | None,
        provider: Provider | None,
        reserve: int,
        tools: Sequence[Mapping[str, Any]] | None,
        record: Sequence[Message] | None = None,
        whole: Collection[str] = (),
        strict: bool = False,
        tool_choice: Any = None,
    ) -> PackResult:
        """The request from the compact record (or ``record``, the compact record with another
        system prompt first: see ``_opening``), ``strict`` and ``tool_choice`` as
        ``Session.render`` takes them."""
        # The arguments first: a bad one is the caller's mistake whatever the session holds.
        _check_arguments(budget, reserve, query)
        provider = self._target(provider)
        given: Sequence[Mapping[str, Any]] = tool_definitions(tools) if tools is not None else []
        if not self._raw:
            raise ConfigError("the session is empty: append messages before rendering")
        if self.tools_on_demand and tool_choice is not None:
            # The tools it has the model call at once go whole, as on_demand_tools(...,
            # tool_choice=...) sends them: counted as stubs, the request was short by their
            # schemas, and a stub's open schema left the forced call's arguments to guesses.
            whole = {*whole, *_sent_whole(tool_choice)}
        all_tools = self._tools_sent(given, provider, whole, strict)
        choice = _choice_tokens(tool_choice, provider, all_tools, self.counter)
        raw_tokens = self._raw_total()
        record, found_later = self._hunted(record)
        filter_log = self._filter_log(found_later)
        unthought = [d.message_id for d in found_later if d.action == "cleared"]
        if self.window is not None:
            if budget is not None or reserve:
                raise ConfigError(
                    "a managed session (window=...) sizes its own requests: render() takes no "
                    "budget or reserve; set the reply room with WindowPolicy(reply_room=...)"
                )
            result = self._render_window(
                query, all_tools, raw_tokens, filter_log, provider, record, unthought, choice
            )
            return self._with_warnings(result, all_tools)
        originals = self._originals(unthought)
        if budget is None and self.pipeline is None:
            result = self._whole(
                query, all_tools, raw_tokens, filter_log, originals, provider, list(record), choice
            )
            return self._with_warnings(result, all_tools)
        limits = (budget, query, reserve, choice)
        result = self._packed(
            record, limits, all_tools, provider, raw_tokens, filter_log, originals
        )
        return self._with_warnings(result, all_tools)

    def _packed(
        self,
        record: Sequence[Message],
        limits: tuple[int | None, str | None, int, int],
        tools: Sequence[Mapping[str, Any]],
        provider: Provider,
        raw_tokens: int,
        filter_log: DecisionLog,
        originals: Callable[[], dict[str, Message]],
    ) -> PackResult:
        """The record packed by the session's pipeline within ``limits``: the budget (``None``:
        the model's window, when known), the query, the reserve, and the tokens the request's
        ``tool_choice`` adds, which the prompt counts as it counts the tools."""
        budget, query, reserve, choice = limits
        asked = budget
        if budget is None:
            budget = asked = None if self.model is None else known_window(self.model)
            if budget is None:
                # No known limit: the stages run on the whole record, which then fits.
                tool_tokens = checked_tool_tokens(tools, self.counter) if tools else 0
                budget = self.counter.count_messages(record) + tool_tokens + choice + reserve + 1
        packed = pack(
            record,
            budget=budget,
            counter=self.counter,
            query=query,
            # The choice as pack() would count it beside the tools: out of the same budget.
            reserve=reserve + choice,
            pipeline=self._stages(),
            tools=list(tools) or None,
            provider=provider,
            # Done once, at arrival (self.guard).
            redact_secrets=False,
            flag_injections=False,
            preserved_thinking=self._checks_thinking_prefix(),
        )
        return PackResult.model_construct(
            **{
                **{name: getattr(packed, name) for name in PackResult.model_fields},
                "budget": asked,
                "reserve": reserve,
                "tokens": packed.tokens + choice,
                "tool_tokens": packed.tool_tokens + choice,
                "input_tokens": raw_tokens + packed.tool_tokens + choice,
                "decisions": filter_log + packed.decisions,
                # The session's originals win: a stage's "original" of a filtered message is
                # the filtered text, not what the tool returned.
                "artifacts": Originals({**packed.artifacts, **originals()}),
            }
        )

    def _tools_sent(
        self,
        given: Sequence[Mapping[str, Any]],
        provider: Provider,
        whole: Collection[str],
        strict: bool,
    ) -> list[Mapping[str, Any]]:
        """The tools a request sends, as ``provider`` takes them: ``given`` (with tools on
        demand, as stubs and ``describe_tool``, but those named in ``whole``) and the session's
        own, in their strict variant if ``strict`` or if ``given`` are all strict."""
        own = self._own_tools(provider, strict or all_strict(given))
        if self.tools_on_demand and given:
            self._full_tools = list(given)
            given = _on_demand(given, provider, whole)
        return tools_as_sent([*given, *own], provider)

    def _stages(self) -> Stage | None:
        """The pipeline as it runs: a clearer's or compactor's originals go to the session's
        store, as the filters' do, so that the artifacts its placeholders name are ones the
        retrieve tool (and every replica) can read."""
        return None if self.pipeline is None else with_session_store(self.pipeline, self.store)

    def _with_warnings(self, result: PackResult, tools: Sequence[Mapping[str, Any]]) -> PackResult:
        """``result`` with the managed mode's decisions, a cache-bust warning included when the
        model, the tools or the system prompt changed since the last render."""
        warned = cache_warnings(
            self.window_state,
            model=self.model,
            tools=tools,
            messages=result.messages,
            tokens=result.tokens,
            preserved_thinking=self._checks_thinking_prefix(),
        )
        if not self.window_state.decisions and not warned:
            return result
        # Appended to the log as it is: its deferred decisions stay unbuilt until read.
        added = result.decisions + tuple(self.window_state.decisions) + tuple(warned)
        return result.model_copy(update={"decisions": added})

    def _render_window(
        self,
        query: str | None,
        tools: Sequence[Mapping[str, Any]],
        raw_tokens: int,
        filter_log: DecisionLog,
        provider: Provider,
        record: Sequence[Message],
        unthought: Sequence[str] = (),
        choice: int = 0,
    ) -> PackResult:
        """One request of the managed mode (see :mod:`ctxpack.managed`); ``unthought``, the
        turns of ``record`` whose thinking the prefix check took; ``choice``, the tokens the
        request's ``tool_choice`` adds, which take room as the tools do."""
        policy = self.window
        assert policy is not None
        tool_tokens = (checked_tool_tokens(tools, self.counter) if tools else 0) + choice
        messages = render_window(
            self.window_state,
            policy,
            record=record,
            counter=self.counter,
            store=self.store,
            original_artifact=self._original_artifact,
            retrievable=self.retrieve_tool,
            model=self.model,
            tool_tokens=tool_tokens,
            arrived=self._raw.__getitem__,
            tools=tools,
            provider=provider,
        )
        state = self.window_state
        gone = (*state.cleared, *state.compacted, *state.thinking_cleared, *unthought)
        if state.results_cleared:  # the turns holding a cleared result of the provider's tool
            cleared = state.results_cleared
            gone += tuple(m.id for m in record if any(r in cleared for r in result_ids(m.content)))
        result = self._whole(
            query,
            tools,
            raw_tokens,
            filter_log,
            self._originals(gone),
            provider,
            messages,
            choice,
            budget=policy.window,
            reserve=policy.reserve,
        )
        # What is sent: a repeated output shortened to a note is counted as the note.
        state.last_tokens = result.tokens - result.tool_tokens
        return result

    def _original_artifact(self, position: int, store: bool = True) -> str:
        """The artifact id of the original of the message at ``position``; with ``store``, it is
        stored if it was not yet (without, the id it would get)."""
        raw = self._raw[position]
        record = self._records.get(raw.id)
        if record is not None and record.artifact is not None:
            return record.artifact
        content = raw.content
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        if not store:
            return artifact_id(text)
        return put_original(self.store, text, message_id=raw.id, kind="cleared_tool_output")

    def _whole(
        self,
        query: str | None,
        tools: Sequence[Mapping[str, Any]],
        raw_tokens: int,
        filter_log: DecisionLog,
        originals: Callable[[], dict[str, Message]],
        provider: Provider,
        messages: list[Message] | None = None,
        choice: int = 0,
        *,
        budget: int | None = None,
        reserve: int = 0,
    ) -> PackResult:
        """The compact record whole (or ``messages``, a managed request), as a result;
        ``choice``: the tokens the request's ``tool_choice`` adds, counted with the tools'."""
        messages = list(self._compact) if messages is None else messages
        # The record holds what the caller gave; a request must hold what the provider takes.
        messages, repairs, changed = provider_conform(messages, self.counter, provider)
        repeats: list[Decision] = []
        given: dict[str, Message] = {}
        # After conforming, so that a note never points to an output left out of the request;
        # not for a provider that clears tool results itself, which could clear that output.
        if self.repeats is not None and not (self.window and self.window.server_side):
            messages, repeats, given = self.repeats.apply(messages, self.counter)
        # Counted by the identity of the record's messages, which never change (a shortened
        # output is the same object from one render to the next): a history whose texts
        # outgrow the counter's text cache is not counted again at every render.
        tokens, sizes = history_tokens(self.counter, messages)
        # The API reads an Anthropic history from its last compaction block on, as count_tokens
        # counts it: the messages before it are sent (as the caller's record holds them) but
        # cost nothing, and counted they made a compacted session report the whole history.
        skipped = set(unread([m.content for m in messages], [m.role for m in messages]))
        if skipped:
            tokens -= sum(sizes[i] for i in skipped)
        # Beside the messages sent: OpenAI's functions cost less with a system message.
        tool_tokens = (checked_tool_tokens(tools, self.counter, messages) if tools else 0) + choice
        tokens += tool_tokens
        filtered = set(filter_log.message_ids()) | {d.message_id for d in [*repeats, *repairs]}
        # Every message gets its decision, as pack() promises: here, sent as it is.
        unfiltered = [
            Decision(
                stage="session",
                action="kept",
                message_id=m.id,
                reason=_UNREAD if i in skipped else "kept, not filtered",
                tokens_before=n,
                tokens_after=0 if i in skipped else n,
            )
            for i, (m, n) in enumerate(zip(messages, sizes, strict=True))
            if m.id not in filtered
        ]
        return PackResult.model_construct(
            messages=[detached(m) for m in messages],
            tokens=tokens,
            budget=budget,
            reserve=reserve,
            input_tokens=raw_tokens + tool_tokens,
            tool_tokens=tool_tokens,
            input_ids=[m.id for m in self._raw],
            counter=self.counter.name,
            exact=self.counter.exact,
            query=query,
            decisions=filter_log + repeats + repairs + unfiltered,
            artifacts=Originals.deferred(lambda: {**given, **changed, **originals()}),
        )

    def _originals(self, gone: Sequence[str] = ()) -> Callable[[], dict[str, Message]]:
        """The originals of the messages ``gone`` from the request and of the shortened tool
        outputs, by id (in that order, each in the record's), as they are now, found when
        called: a result finds them only once its artifacts are read, a long session having
        many and a caller seldom reading them."""
        # The messages, records and values found as they are now: later appends change them.
        raw, records = tuple(self._raw), dict(self._records)
        hunt, roles = self._hunt(), self.guard.redacted_roles
        found = list(hunt.fingerprints.entries)

        def originals() -> dict[str, Message]:
            ids = set(gone)
            removed = {m.id: m for m in raw if m.id in ids}
            # A tool message's, or an assistant's holding a provider tool's shortened result.
            cut = {r.message_id for r in records.values() if r.shortened}
            shortened = {m.id: m for m in raw if m.id in cut}
            # An original that arrived before a value was recognised still holds it.
            then = frozen(found, hunt.key)
            return {
                mid: hunted_message(m, then, roles) for mid, m in {**removed, **shortened}.items()
            }

        return originals

    def _hunted(self, record: Sequence[Message] | None) -> tuple[Sequence[Message], list[Decision]]:
        """The compact record (or ``record``, the same with another system prompt first) with
        the secret values found replaced wherever they are, in messages that arrived before
        a value was recognised too, and a ``redacted`` decision per message that changes."""
        hunt, roles = self._hunt(), self.guard.redacted_roles
        compact, found = self._later.record(self._compact, hunt, roles, self.counter)
        rewritten = self._first_rewritten()
        if (found or rewritten is not None) and self._checks_thinking_prefix():
            compact, found = self._later.thinking_cleared(compact, found, self.counter, rewritten)
        if record is None:
            return compact, found
        opening = hunted_message(record[0], hunt, roles)
        return [opening, *compact[1:]], [d for d in found if d.message_id != opening.id]

    def _checks_thinking_prefix(self) -> bool:
        """Whether the session's model refuses a thinking block whose prefix changed (see
        :func:`~ctxpack.providers.preserves_thinking`; a window policy may say otherwise)."""
        if self.window is not None:
            return self.window.checks_thinking_prefix(self.model)
        return preserves_thinking(self.model)

    def _filter_log(self, found_later: Sequence[Decision] = ()) -> DecisionLog:
        """The filter decisions so far (and ``found_later``'s), and a ``kept`` one per output
        still waiting for its answer (``filter_when="answered"``)."""
        waiting = [
            Decision(
                stage="filter",
                action="kept",
                message_id=self._raw[i].id,
                reason="tool output sent whole until the agent answers it (filter_when='answered')",
            )
            for i in self._pending
        ]
        return DecisionLog([*self._decisions, *found_later, *waiting])
