"""Session: an agent's history kept twice, the full transcript and the compact record to send.

Messages are appended as the agent produces them (OpenAI or Anthropic dicts). Each tool output
is filtered once, when it arrives (:mod:`ctxpack.filters`), and its original is stored
(:mod:`ctxpack.store`); the compact record links every shortened message to its original. The
compact record grows at its end, so a provider's prompt cache keeps working from turn to turn;
the one exception, file views made obsolete by a later view of the same lines, is applied in
rare batches.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from ._internal.arguments import flag, message_items, optional_text, tool_definitions
from ._internal.arguments import tokens as check_tokens
from ._internal.views import FileRegion, view_region
from .adapters.anthropic import from_anthropic
from .adapters.openai import from_openai
from .errors import ConfigError, InvalidMessageError
from .filters import RETRIEVE_TOOL_NAME, OutputFilter, ToolOutputFilter
from .guard import ArrivalGuard
from .limits import MAX_MESSAGE_CHARS, message_chars, oversized_view
from .managed import PinnedText, WindowPolicy, WindowState, cache_warnings, render_window
from .messages import Message
from .packing import pack
from .persistence import decode_message, encode_message, open_backing
from .pipeline import Decision, DecisionLog, Stage
from .providers import Provider, is_anthropic_response, provider_from_message, tool_call_parts
from .redaction import redact
from .result import PackResult
from .retrieval import Retrieval, handle_retrieve_call, read_artifact, retrieve_tool
from .sdk import SDKObject, coerce_message, coerce_tool_call, is_sdk_object
from .store import ArtifactStore, SQLiteArtifactStore, artifact_id
from .tokens import (
    REPLY_PRIMING,
    CounterLike,
    TokenCounter,
    count_tokens_approx,
    get_counter,
    tool_definition_tokens,
)
from .tools_on_demand import DESCRIBE_TOOL_NAME, describe_tools, on_demand_tools

if TYPE_CHECKING:
    from .persistence import Backing
    from .store.base import SessionStore

__all__ = ["FilterRecord", "Session"]


@dataclass(frozen=True)
class FilterRecord:
    """What the session did with one tool output: the structured, auditable filtering decision.

    Attributes:
        message_id: The tool message's id.
        kind: The kind of output detected (``"test_run"``, ``"file_view"``..., ``"short"``).
        shortened: Whether the compact record holds a shortened version.
        artifact: The stored original's id, when shortened.
        tokens_before: The raw message's tokens (framing included).
        tokens_after: The compact message's tokens.
        reason: Why, in words.
        tool: The tool's name, when known.
        command: The command, when known.
    """

    message_id: str
    kind: str
    shortened: bool
    artifact: str | None
    tokens_before: int
    tokens_after: int
    reason: str
    tool: str | None = None
    command: str | None = None


@dataclass(frozen=True)
class _Call:
    tool: str
    command: str | None
    goal: str


@dataclass(frozen=True)
class _Snapshot:
    """A session's state at one moment, to go back to when an append fails."""

    # The transcript and the decisions only grow: their lengths suffice (and the ids in use
    # are those of the transcript).
    raw: int
    decisions: int
    compact: list[Message]
    calls: dict[str, _Call]
    records: dict[str, FilterRecord]
    pending: list[int]
    views: list[tuple[int, FileRegion]]
    superseded: list[tuple[int, int]]
    provider: Provider
    extensions: dict[str, Any]
    window_state: WindowState
    full_tools: list[Mapping[str, Any]]


def pinned_message(text: str, name: str, kind: Literal["memory", "skill"]) -> Message:
    """The user message :meth:`Session.pin` adds.

    Raises:
        ConfigError: an empty name, or a kind other than ``"memory"`` or ``"skill"``.
    """
    try:
        item = PinnedText(name=name, text=text, kind=kind)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise ConfigError(f"pin(): {error['loc'][0]}: {error['msg']}") from exc
    return item.message()


# The options Session.open passes on to the constructor.
_OPTIONS = frozenset(
    {
        "counter",
        "filters",
        "retrieve_tool",
        "pipeline",
        "filter_when",
        "supersede_batch",
        "window",
        "tools_on_demand",
        "redact_secrets",
        "store_secrets",
        "flag_injections",
    }
)


def _window_policy(
    window: int | WindowPolicy | None, pipeline: Stage | None
) -> WindowPolicy | None:
    if window is None:
        return None
    if pipeline is not None:
        raise ConfigError(
            "give a window or a pipeline, not both: a managed session (window=...) runs its own "
            "clearing and compaction"
        )
    if isinstance(window, WindowPolicy):
        return window
    if isinstance(window, bool) or not isinstance(window, int):
        raise ConfigError(
            f"window must be a number of tokens or a WindowPolicy, got {type(window).__name__}"
        )
    try:
        return WindowPolicy(window=window)
    except ValidationError as exc:
        raise ConfigError(f"window: {exc.errors()[0]['msg']}, got {window}") from exc


def _command_of(arguments: str) -> str | None:
    """The command line of a shell-like tool call: its ``command``/``cmd`` argument."""
    try:
        args = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return None
    if isinstance(args, Mapping):
        for key in ("command", "cmd", "script", "path", "file_path"):
            value = args.get(key)
            if isinstance(value, str):
                return value
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return " ".join(value)
    return None


class Session:
    """An agent session: the full transcript and a compact record, kept side by side.

    Tool outputs are filtered once, when they arrive; the originals go to ``store`` and stay
    retrievable by the model (through the retrieve tool) and by you (:meth:`retrieve`,
    ``render().original(message_id)``). User, system and developer messages and the agent's
    own messages are never shortened. The same history always renders to the same messages, and
    appending only appends to the compact record, except for the rare batch that replaces
    obsolete file views (``supersede_batch``).

    A session is safe to share between threads, and each append is all or nothing. Built with
    ``Session(...)`` it lives in this process's memory; :meth:`open` keeps it in a session
    store instead, for replicas, restarts and erasure.

    Args:
        model: The model the requests go to; picks the token counter (as in :func:`pack`).
        counter: A token counter instead (see :func:`ctxpack.tokens.get_counter`).
        store: Where originals go; by default an in-memory :class:`SQLiteArtifactStore`
            (pass one with a file path for originals that outlive the process).
        filters: A :class:`~ctxpack.filters.ToolOutputFilter`, a list of filters for one, or
            ``False`` to keep tool outputs whole. By default, every filter of
            :func:`~ctxpack.filters.default_filters`.
        retrieve_tool: Whether the model is offered the retrieve tool. Markers then say how to
            call it, :meth:`tools` lists it and :meth:`render` counts its definition.
        pipeline: Stages run at render time on the compact record (say, a clearer or a
            compactor). With a budget, it must end with a packer; ``None`` then means
            :func:`default_pipeline`.
        filter_when: ``"arrival"`` (the default): a tool output is filtered when it is
            appended, and the compact record only ever grows at its end. ``"answered"``: the
            outputs the agent has not answered yet are sent whole, and each is filtered once,
            when the agent's next message arrives, with that message as part of its goal (it
            names what the agent used). The model sees every output whole once; the price is
            that the last tool output before a new assistant message changes once, so a prompt
            cache rewrites it (shortened) on the next request.
        window: Managed mode: the model's context window in tokens, or a
            :class:`~ctxpack.managed.WindowPolicy`. Every :meth:`render` is then one request,
            kept within the window with room for the reply: old tool results are cleared in
            batches that pay for the prompt-cache write they cause, the history is compacted
            near the window, and the system prompt and user instructions stay verbatim (see
            :mod:`ctxpack.managed`).
        tools_on_demand: Send your tools (``render(tools=...)``) as stubs, a name and a
            one-line description each, with a ``describe_tool`` tool that the model calls for
            the full definitions (:meth:`handle` answers it); see
            :mod:`ctxpack.tools_on_demand`.
        window_state: The managed mode's state saved from an earlier session
            (``session.window_state.to_json()``), to go on where it stopped.
        supersede_batch: A file view (``cat f``, ``nl -ba f | sed -n '10,40p'``...) that a
            later view of the same file covers is obsolete: it is replaced by a note naming
            the later view and the stored original. Replacing an earlier message makes a prompt
            cache rewrite what follows it, so obsolete views wait until they add up to this
            many tokens, then go in one batch. ``None`` (the default) keeps them: on the real
            sessions measured, the rewrites cost about what the removed tokens saved.
        redact_secrets: Replace the secrets in tool outputs (keys, tokens, private keys,
            passwords in configuration lines...) by ``[REDACTED kind]`` when they arrive,
            before anything stores, filters or renders them, each change a ``redacted``
            decision (see :mod:`ctxpack.redaction`). ``"all"``: every message, what users
            typed included; ``False``: none. Answers to the retrieve tool are redacted too.
        store_secrets: Dangerous: also put each redacted message's original, secrets and all,
            in ``store`` (its id is in the ``redacted`` decision), for an application that must
            audit them. Anyone who can read the store can then read the secrets; the model
            still cannot (retrieve answers are redacted).
        flag_injections: Record a ``flagged`` decision for each tool output holding
            prompt-injection markers (see :mod:`ctxpack.injection`); its text is kept.
            ``"quarantine"``: the compact record holds a note instead of the text (the
            transcript and the store keep it); ``False``: no check.

    Example:
        >>> session = Session(model="gpt-4")
        >>> session.extend([
        ...     {"role": "user", "content": "Why does the auth test fail?"},
        ...     {"role": "assistant", "content": "Running the tests.", "tool_calls": [
        ...         {"id": "c1", "type": "function",
        ...          "function": {"name": "bash", "arguments": '{"command": "pytest -q"}'}}]},
        ...     {"role": "tool", "tool_call_id": "c1", "content": "\\n".join(
        ...         [f"tests/test_{i}.py::test_ok PASSED" for i in range(60)]
        ...         + ["FAILED tests/test_auth.py::test_refresh - KeyError: 'exp'",
        ...            "==== 1 failed, 60 passed in 3.10s ===="])},
        ... ])
        >>> result = session.render()
        >>> print(result.messages[-1].text)
        [… 60 lines hidden: 1-60]
        FAILED tests/test_auth.py::test_refresh - KeyError: 'exp'
        ==== 1 failed, 60 passed in 3.10s ====
        [ctxpack: test_run output shortened (totals and failures kept); original: 62 lines,
        artifact art_...; more with retrieve_original(artifact="art_...", lines="A-B"
        or regex="...")]
        >>> result.original(result.messages[-1].id).text.count("PASSED")
        60
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        counter: CounterLike | None = None,
        store: ArtifactStore | None = None,
        filters: ToolOutputFilter | Sequence[OutputFilter] | bool | None = None,
        retrieve_tool: bool = True,
        pipeline: Stage | None = None,
        filter_when: Literal["arrival", "answered"] = "arrival",
        supersede_batch: int | None = None,
        window: int | WindowPolicy | None = None,
        window_state: WindowState | None = None,
        tools_on_demand: bool = False,
        redact_secrets: bool | Literal["all"] = True,
        store_secrets: bool = False,
        flag_injections: bool | Literal["quarantine"] = True,
    ) -> None:
        if filter_when not in ("arrival", "answered"):
            raise ConfigError(f"filter_when must be 'arrival' or 'answered', got {filter_when!r}")
        self.filter_when = filter_when
        if supersede_batch is not None and (
            isinstance(supersede_batch, bool)
            or not isinstance(supersede_batch, int)
            or supersede_batch < 1
        ):
            raise ConfigError(
                f"supersede_batch must be a positive int (tokens) or None, got {supersede_batch!r}"
            )
        self.supersede_batch = supersede_batch
        self.model = model
        self.counter: TokenCounter = get_counter(model, counter)
        self.store: ArtifactStore = SQLiteArtifactStore(":memory:") if store is None else store
        if not isinstance(self.store, ArtifactStore):
            raise ConfigError(
                f"store must have put(text, **metadata) and get(id), got {type(store).__name__}"
            )
        self.retrieve_tool = flag(retrieve_tool, "retrieve_tool")
        self.filter: ToolOutputFilter | None
        if filters is False:
            self.filter = None
        elif filters is None or filters is True:
            self.filter = ToolOutputFilter(retrievable=retrieve_tool)
        elif isinstance(filters, ToolOutputFilter):
            self.filter = filters
        elif isinstance(filters, Sequence):
            self.filter = ToolOutputFilter(list(filters), retrievable=retrieve_tool)
        else:
            raise ConfigError(
                "filters must be a ToolOutputFilter, a list of output filters, True or False; "
                f"got {type(filters).__name__}"
            )
        if pipeline is not None and not callable(pipeline):
            raise ConfigError(f"pipeline must be a stage, got {type(pipeline).__name__}")
        self.pipeline = pipeline
        self.guard = ArrivalGuard(redact_secrets, store_secrets, flag_injections)
        self._raw: list[Message] = []
        self._compact: list[Message] = []
        self._ids: set[str] = set()
        self._calls: dict[str, _Call] = {}
        self._records: dict[str, FilterRecord] = {}
        self._decisions: list[Decision] = []
        self._pending: list[int] = []  # tool outputs awaiting the agent's answer (positions)
        # The provider the messages came from: "anthropic" once an Anthropic message arrives.
        self.provider: Provider = "openai"
        self._views: list[tuple[int, FileRegion]] = []  # live file views: (position, region)
        self._superseded: list[tuple[int, int]] = []  # (position, by position), not yet applied
        self.window: WindowPolicy | None = _window_policy(window, pipeline)
        self.tools_on_demand = tools_on_demand
        self._full_tools: list[Mapping[str, Any]] = []  # the last full definitions rendered
        # Everything the managed mode and the cache-bust warnings remember between requests.
        self.window_state: WindowState = WindowState() if window_state is None else window_state
        if not isinstance(self.window_state, WindowState):
            raise ConfigError(
                f"window_state must be a WindowState, got {type(window_state).__name__}"
            )
        # JSON state that other features keep per session, by feature name: saved with every
        # append of a stored session and restored with it (see _state()).
        self._extensions: dict[str, Any] = {}
        # One lock for every read and write of the state above: a Session is shared by threads.
        self._lock = threading.RLock()
        self._backing: Backing | None = None
        self.session_id: str | None = None

    @classmethod
    def open(
        cls,
        session_id: str,
        *,
        store: str | SessionStore,
        model: str | None = None,
        **options: Any,
    ) -> Session:
        """Create or resume the session ``session_id`` in a session store.

        Every :meth:`append` and :meth:`extend` is then written to the store before it
        returns, all or nothing; another process (a replica) that opens the same id sees the
        same history and renders the same request, byte for byte. Writers never block each
        other: an append made while another writer appended first re-reads the session and
        applies again on top (optimistic versioning), so both succeed, each message once,
        each writer's order kept.

        Args:
            session_id: The session's id in the store (at most 256 characters).
            store: A store URL (``sqlite:///sessions.db``, ``postgresql://...``,
                ``redis://...``, ``memory://``; see :func:`ctxpack.store.open_store`) or a
                :class:`~ctxpack.store.SessionStore`.
            model: As for :class:`Session`.
            options: The other :class:`Session` options (``filters``, ``filter_when``...);
                give the same ones wherever the session is opened.

        Raises:
            ConfigError: a bad id, URL or option.
            StoreError: the store cannot be opened or read.

        Example:
            >>> from ctxpack.store import open_store
            >>> store = open_store("memory://")
            >>> first = Session.open("user-42", store=store, model="gpt-4")
            >>> first.append({"role": "user", "content": "Hello"})
            >>> again = Session.open("user-42", store=store, model="gpt-4")
            >>> [m.text for m in again.transcript()]
            ['Hello']
        """
        session = cls._configured(model, options)
        backing = open_backing(store, session_id)
        session._attach(backing)
        with session._lock:
            backing.sync(session)
        return session

    @classmethod
    def _configured(cls, model: str | None, options: Mapping[str, Any]) -> Session:
        """A new session with the options given to ``open``, checked."""
        unknown = set(options) - _OPTIONS
        if unknown:
            raise ConfigError(
                f"unknown option(s) for opening a session: {', '.join(sorted(unknown))}; "
                f"valid: {', '.join(sorted(_OPTIONS))}"
            )
        return cls(model=model, **options)

    def close(self) -> None:
        """Close the session store if :meth:`open` opened it from a URL (nothing otherwise:
        a store object you passed stays yours to close)."""
        backing = self._backing
        if backing is not None and backing.owns_store:
            backing.store.close()

    def _attach(self, backing: Backing) -> None:
        self.session_id = backing.session_id
        self.store = backing.artifacts
        self._backing = backing

    # ------------------------------------------------------------------------------- input

    def append(
        self, message: Mapping[str, Any] | Message, *, provider: Provider | None = None
    ) -> None:
        """Add one message as the agent produced it; a tool output is filtered now.

        Args:
            message: An OpenAI Chat Completions message dict, an Anthropic Messages message
                dict (recognised by its ``tool_use``/``tool_result``/``thinking`` blocks, or
                by ``provider="anthropic"``), or a :class:`Message`. An Anthropic user message
                holding tool results becomes one tool message per result.
            provider: Say which format ``message`` is in, when it cannot be told apart.

        Raises:
            InvalidMessageError: the message is malformed, or its id is already used.
        """
        self.extend([message], provider=provider)

    def extend(
        self, messages: Iterable[Mapping[str, Any] | Message], *, provider: Provider | None = None
    ) -> None:
        """:meth:`append` each message, in order: all of them, or none if one is malformed.

        Raises:
            InvalidMessageError: a message is malformed or reuses an id (the error names its
                position in the session); the session is then left as it was.
        """
        if isinstance(messages, (str, bytes, Mapping)):
            raise InvalidMessageError(
                f"extend() takes a list of messages, got {type(messages).__name__}; "
                "use append() for one message"
            )
        batch = list(message_items(messages))  # a stored session may have to apply them twice
        self._change(lambda: self._extend(batch, provider))

    def _change(self, change: Callable[[], None]) -> None:
        """Make ``change`` to the session's state, all or nothing; a stored session writes it
        to its store before returning (applying it again on top of other writers' appends
        when they came first, so ``change`` must read the state it changes, not capture it).
        Every change of state goes through here: appends, and any feature's own."""
        with self._lock:
            if self._backing is None:
                self._transact(change)
            else:
                self._backing.commit(self, lambda: self._transact(change))

    def _transact(self, change: Callable[[], None]) -> _Snapshot:
        """Apply ``change``; on any failure the session goes back to how it was. Returns the
        state before, for the store to save what changed."""
        before = self._snapshot()
        try:
            change()
        except BaseException:
            self._restore(before)
            raise
        return before

    def _extend(
        self, messages: Sequence[Mapping[str, Any] | Message], provider: Provider | None
    ) -> None:
        # Everything is converted and checked before anything is added, so that a bad message
        # in the middle of a batch cannot leave half of it in the session.
        batch: list[tuple[Message, str]] = []
        anthropic = False
        taken: set[str] = set()  # ids of this batch
        for message in messages:
            index = len(self._raw) + len(batch)
            converted, from_claude = self._convert(message, provider, index)
            anthropic = anthropic or from_claude
            # An id the caller gave is kept; the others are the session's own.
            given = message.id if isinstance(message, Message) else None
            if isinstance(message, Mapping) and isinstance(message.get("id"), str):
                given = message["id"]
            for msg in converted:
                position = len(self._raw) + len(batch)
                mid = given or f"s{position}"
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

    def _convert(
        self, message: Mapping[str, Any] | Message, provider: Provider | None, index: int
    ) -> tuple[list[Message], bool]:
        """The message as ctxpack messages, and whether it came in Anthropic's format."""
        if isinstance(message, Message):
            return [message], False
        message = coerce_message(message, index)  # the SDKs' objects, as dicts
        if not isinstance(message, Mapping):
            raise InvalidMessageError(
                f"expected a message dict or a Message, got {type(message).__name__}",
                index=index,
            )
        if provider is None:
            provider = provider_from_message(message)
        try:
            if provider == "anthropic":
                return from_anthropic([message]), True
            if provider == "openai":
                return from_openai([message]), False
        except InvalidMessageError as exc:
            raise InvalidMessageError(exc.detail, index=index, field=exc.field) from exc
        raise ConfigError(f"provider must be 'openai' or 'anthropic', got {provider!r}")

    def _add(self, msg: Message, mid: str) -> None:
        index = len(self._raw)
        msg = msg.model_copy(update={"id": mid})
        # Secrets out and injection markers flagged before anything keeps or reads the message.
        arrival = self.guard(msg, self.counter, self.store)
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
            self._pending = []
        if msg.role == "tool":
            if arrival.quarantined is not None:
                compact = arrival.quarantined
                self._record_quarantine(msg, compact, arrival.stored)
            elif self.filter_when == "answered":
                self._pending.append(index)
            else:
                compact = self._filtered(msg)
        elif message_chars(msg) > MAX_MESSAGE_CHARS:
            compact = self._oversized(msg)
        self._raw.append(msg)
        self._compact.append(compact)
        if msg.role == "tool" and self.supersede_batch is not None:
            self._supersede(index)

    def _note_calls(self, msg: Message) -> None:
        for call in msg.tool_calls or ():
            self._calls[call.id] = _Call(
                tool=call.function.name,
                command=_command_of(call.function.arguments),
                goal=msg.text,
            )

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
        stored = self.store.put(
            msg.text, message_id=msg.id, kind=out.kind, tool=tool, command=command
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

    def _oversized(
        self, msg: Message, tool: str | None = None, command: str | None = None
    ) -> Message:
        """A message above the size limit: stored whole, shown as its head and tail, never
        filtered nor counted whole (either would take many times its size in memory)."""
        text = msg.text
        artifact = self.store.put(
            text, message_id=msg.id, kind="oversized", tool=tool, command=command
        )
        compact = msg.model_copy(update={"content": oversized_view(text, artifact=artifact)})
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

    def _raw_tokens(self, msg: Message) -> int:
        record = self._records.get(msg.id)
        if record is not None and record.kind == "oversized":
            return record.tokens_before  # estimated: counting it would take gigabytes
        return self.counter.count_message(msg)

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
    ) -> Message:
        """Record that ``msg`` is sent whole, and why; return it."""
        self._record(FilterRecord(msg.id, kind, False, None, tokens, tokens, reason, tool, command))
        return msg

    def _supersede(self, index: int) -> None:
        """Note the file views the view at ``index`` makes obsolete; replace them in a batch."""
        call = self._calls.get(self._raw[index].tool_call_id or "")
        region = view_region(call.command) if call and call.command else None
        if region is None:
            return
        live = []
        for position, earlier in self._views:
            if region.covers(earlier):
                self._superseded.append((position, index))
            else:
                live.append((position, earlier))
        self._views = [*live, (index, region)]
        waiting = sum(self.counter.count_message(self._compact[p]) for p, _ in self._superseded)
        # Replacing an earlier message makes a prompt cache rewrite everything after it: do it
        # rarely, for enough tokens at once.
        if waiting < self.supersede_batch:  # type: ignore[operator]
            return
        for position, by in self._superseded:
            if position in self._pending:
                continue  # still waiting for its filtering: it goes once the agent answers
            self._replace_view(position, by)
        self._superseded = []

    def _replace_view(self, position: int, by: int) -> None:
        """Replace the file view at ``position`` by a note naming the later view at ``by`` and
        its stored original, when the note is shorter."""
        raw, old = self._raw[position], self._compact[position]
        artifact = self.store.put(raw.text, message_id=raw.id, kind="file_view")
        region_then = view_region(self._calls[raw.tool_call_id or ""].command or "")
        path = region_then.path if region_then else "the file"
        note = (
            f"[ctxpack: superseded by a later view of {path} (message {self._raw[by].id}); "
            f"original: artifact {artifact}"
            + (
                f'; {RETRIEVE_TOOL_NAME}(artifact="{artifact}") reads it]'
                if self.retrieve_tool
                else "]"
            )
        )
        new = old.model_copy(update={"content": note})
        before, after = self.counter.count_message(old), self.counter.count_message(new)
        if after >= before:
            return
        self._compact[position] = new
        previous = self._records.get(raw.id)
        self._records[raw.id] = FilterRecord(
            raw.id,
            "superseded",
            True,
            artifact,
            previous.tokens_before if previous else before,
            after,
            f"superseded by the view in message {self._raw[by].id}",
            previous.tool if previous else None,
            previous.command if previous else None,
        )
        self._decisions.append(
            Decision(
                stage="supersede",
                action="cleared",
                message_id=raw.id,
                reason=f"a later view of {path} (message {self._raw[by].id}) shows the same "
                f"lines; original stored as {artifact}",
                tokens_before=before,
                tokens_after=after,
            )
        )

    def _record(self, record: FilterRecord) -> None:
        self._records[record.message_id] = record
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

    # ----------------------------------------------------------------------- persisted state
    # Everything an append may change is saved, restored and stored here, and nowhere else. A
    # feature with its own per-session state keeps it JSON-serialisable in
    # self._extensions[name]: it is then rolled back with a failed append and written to the
    # store with every successful one.

    def _snapshot(self) -> _Snapshot:
        return _Snapshot(
            raw=len(self._raw),
            decisions=len(self._decisions),
            compact=list(self._compact),
            calls=dict(self._calls),
            records=dict(self._records),
            pending=list(self._pending),
            views=list(self._views),
            superseded=list(self._superseded),
            provider=self.provider,
            extensions=copy.deepcopy(self._extensions),
            window_state=self.window_state.model_copy(deep=True),
            full_tools=list(self._full_tools),
        )

    def _restore(self, snapshot: _Snapshot) -> None:
        del self._raw[snapshot.raw :]
        # Rebuilt, not patched: an append that failed half-way may have reserved an id for a
        # message it never added.
        self._ids = {m.id for m in self._raw}
        del self._decisions[snapshot.decisions :]
        self._compact = list(snapshot.compact)
        self._calls = dict(snapshot.calls)
        self._records = dict(snapshot.records)
        self._pending = list(snapshot.pending)
        self._views = list(snapshot.views)
        self._superseded = list(snapshot.superseded)
        self.provider = snapshot.provider
        self._extensions = copy.deepcopy(snapshot.extensions)
        self.window_state = snapshot.window_state.model_copy(deep=True)
        self._full_tools = list(snapshot.full_tools)

    def _entry_since(self, snapshot: _Snapshot) -> dict[str, Any]:
        """What changed since ``snapshot``, as JSON: the store's entry for one append."""
        new = self._raw[snapshot.raw :]
        # A compact message that differs from the one before (or, new, from the raw one).
        was = [*snapshot.compact, *self._raw[snapshot.raw :]]
        compact = {
            str(position): encode_message(message)
            for position, message in enumerate(self._compact)
            if message is not was[position]
        }
        return {
            "messages": [encode_message(m) for m in new],
            "compact": compact,
            "records": [
                asdict(r) for mid, r in self._records.items() if snapshot.records.get(mid) is not r
            ],
            "decisions": [
                d.model_dump(exclude_none=True) for d in self._decisions[snapshot.decisions :]
            ],
        }

    def _apply_entry(self, entry: Mapping[str, Any]) -> None:
        """Apply an entry another writer (or an earlier process) stored."""
        for data in entry["messages"]:
            msg = decode_message(data)
            self._raw.append(msg)
            self._compact.append(msg)
            self._ids.add(msg.id)
            self._note_calls(msg)
        for position, data in entry["compact"].items():
            self._compact[int(position)] = decode_message(data)
        for data in entry["records"]:
            self._records[data["message_id"]] = FilterRecord(**data)
        self._decisions.extend(Decision(**data) for data in entry["decisions"])

    def _state(self) -> dict[str, Any]:
        """The session's bookkeeping beside its messages, as JSON."""
        state: dict[str, Any] = {
            "provider": self.provider,
            "pending": self._pending,
            "views": [[position, *region] for position, region in self._views],
            "superseded": self._superseded,
            "extensions": self._extensions,
        }
        if self.window is not None:
            # Only a managed session's: another one's (its cache-bust fingerprint) stays with
            # the process that rendered.
            state["window"] = self.window_state.model_dump(mode="json")
        if self.tools_on_demand:
            # For describe_tool to answer on a replica that did not render them.
            state["full_tools"] = self._full_tools
        return state

    def _set_state(self, state: Mapping[str, Any]) -> None:
        self.provider = state["provider"]
        self._pending = list(state["pending"])
        self._views = [(p, FileRegion(path, a, b)) for p, path, a, b in state["views"]]
        self._superseded = [(p, by) for p, by in state["superseded"]]
        self._extensions = dict(state["extensions"])
        if self.window is not None and "window" in state:
            self.window_state = WindowState.model_validate(state["window"])
        if self.tools_on_demand and "full_tools" in state:
            self._full_tools = list(state["full_tools"])

    # ------------------------------------------------------------------------------ output

    def transcript(self) -> list[Message]:
        """The full record, for humans: every message as it arrived (a new list)."""
        with self._lock:
            self._refresh()
            return list(self._raw)

    def compact(self) -> list[Message]:
        """The compact record, for the model: tool outputs as filtered (a new list)."""
        with self._lock:
            self._refresh()
            return list(self._compact)

    @property
    def records(self) -> list[FilterRecord]:
        """One record per tool output, in order: what was filtered, how, and why."""
        with self._lock:
            self._refresh()
            return list(self._records.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._raw)

    def _refresh(self) -> None:
        """Read what other writers appended to a stored session (nothing for one in memory)."""
        if self._backing is not None:
            self._backing.sync(self)

    def tools(self, provider: Provider = "openai") -> list[dict[str, Any]]:
        """The tool definitions the session adds to a request: the retrieve tool, if offered."""
        return [retrieve_tool(provider)] if self.retrieve_tool else []

    def render(
        self,
        budget: int | None = None,
        *,
        query: str | None = None,
        provider: Provider | None = None,
        reserve: int = 0,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> PackResult:
        """The compact record, ready to send, as a :class:`PackResult`.

        Without a budget (and without a ``pipeline``), the result is the compact record
        whole: appending messages only appends to it, so the prefix sent last turn is the
        prefix this turn. With a budget, the compact record is packed by :func:`pack` (with
        the session's ``pipeline``, or the default one).

        Every tool output gets a ``filter`` decision (``compressed`` or ``kept``, with its
        tokens and reason); ``result.original(message_id)`` gives the original of a shortened
        message.

        Args:
            budget: Tokens the prompt may take; ``None`` for no limit.
            query: What the next answer is about (for packing); the last user message by
                default.
            provider: ``"openai"`` or ``"anthropic"``: whose rules the result must follow;
                by default the provider the messages came from (``session.provider``:
                Anthropic once an Anthropic message was appended, else OpenAI).
            reserve: Tokens kept free for the reply (with a budget).
            tools: Your own tool definitions, counted in ``result.tokens``; the retrieve tool's
                definition is added when it is offered.

        Raises:
            BudgetExceededError: with a budget, the system, developer and pinned messages alone
                do not fit.
        """
        with self._lock:
            if self._backing is None or self.window is None:
                self._refresh()
                if self._backing is None or not self._renders_state(tools):
                    return self._render(budget, query, provider, reserve, tools)
            # A render that changes the state (a managed one: what was cleared, compacted) is
            # stored like an append, on top of the newest stored state, so that every replica
            # goes on from the last request sent, whoever sent it.
            results: list[PackResult] = []
            self._change(
                lambda: results.append(self._render(budget, query, provider, reserve, tools))
            )
            return results[-1]

    def _renders_state(self, tools: Sequence[Mapping[str, Any]] | None) -> bool:
        """Whether a render changes the session's state: a managed one does (its window's),
        and so does one giving tools on demand new definitions."""
        if self.window is not None:
            return True
        if not self.tools_on_demand or tools is None:
            return False
        given = tool_definitions(tools)  # a ConfigError naming the bad definition
        return bool(given) and given != self._full_tools

    def _render(
        self,
        budget: int | None,
        query: str | None,
        provider: Provider | None,
        reserve: int,
        tools: Sequence[Mapping[str, Any]] | None,
    ) -> PackResult:
        if not self._raw:
            raise ConfigError("the session is empty: append messages before rendering")
        if budget is not None:
            check_tokens(budget, "budget")
        check_tokens(reserve, "reserve", minimum=0)
        optional_text(query, "query")
        provider = provider or self.provider
        given: Sequence[Mapping[str, Any]] = tool_definitions(tools) if tools is not None else []
        if self.tools_on_demand and given:
            self._full_tools = list(given)
            given = on_demand_tools(given, provider)
        all_tools = [*given, *self.tools(provider)]
        raw_tokens = REPLY_PRIMING + sum(map(self._raw_tokens, self._raw))
        filter_log = self._filter_log()
        originals = {
            raw.id: raw for raw in self._raw if (r := self._records.get(raw.id)) and r.shortened
        }
        asked = budget
        if self.window is not None:
            if budget is not None or reserve:
                raise ConfigError(
                    "a managed session (window=...) sizes its own requests: render() takes no "
                    "budget or reserve; set the reply room with WindowPolicy(reply_room=...)"
                )
            result = self._render_window(query, all_tools, raw_tokens, filter_log, originals)
            return self._with_warnings(result, all_tools)
        if budget is None:
            tool_tokens = tool_definition_tokens(all_tools, self.counter) if all_tools else 0
            if self.pipeline is None:
                result = self._whole(query, tool_tokens, raw_tokens, filter_log, originals)
                return self._with_warnings(result, all_tools)
            # Stages run on the whole record: a budget it fits in whatever they do.
            budget = self.counter.count_messages(self._compact) + tool_tokens + reserve + 1
        packed = pack(
            self._compact,
            budget=budget,
            counter=self.counter,
            query=query,
            reserve=reserve,
            pipeline=self.pipeline,
            tools=all_tools or None,
            provider=provider,
            # Done once, at arrival (self.guard).
            redact_secrets=False,
            flag_injections=False,
        )
        result = PackResult.model_construct(
            **{
                **{name: getattr(packed, name) for name in PackResult.model_fields},
                "budget": asked,
                "input_tokens": raw_tokens + packed.tool_tokens,
                "decisions": filter_log + packed.decisions,
                # The session's originals win: a stage's "original" of a filtered message is
                # the filtered text, not what the tool returned.
                "artifacts": {**packed.artifacts, **originals},
            }
        )
        return self._with_warnings(result, all_tools)

    def _with_warnings(self, result: PackResult, tools: Sequence[Mapping[str, Any]]) -> PackResult:
        """``result`` with the managed mode's decisions, a cache-bust warning included when the
        model, the tools or the system prompt changed since the last render."""
        cache_warnings(
            self.window_state,
            model=self.model,
            tools=tools,
            messages=result.messages,
            tokens=result.tokens,
        )
        if not self.window_state.decisions:
            return result
        return result.model_copy(
            update={"decisions": DecisionLog([*result.decisions, *self.window_state.decisions])}
        )

    def _render_window(
        self,
        query: str | None,
        tools: Sequence[Mapping[str, Any]],
        raw_tokens: int,
        filter_log: DecisionLog,
        originals: dict[str, Message],
    ) -> PackResult:
        """One request of the managed mode (see :mod:`ctxpack.managed`)."""
        policy = self.window
        assert policy is not None
        tool_tokens = tool_definition_tokens(tools, self.counter) if tools else 0
        messages = render_window(
            self.window_state,
            policy,
            record=self._compact,
            counter=self.counter,
            store=self.store,
            original_artifact=self._original_artifact,
            retrievable=self.retrieve_tool,
            model=self.model,
            tool_tokens=tool_tokens,
        )
        state = self.window_state
        gone = set(state.cleared) | set(state.compacted) | set(state.thinking_cleared)
        by_id = {m.id: m for m in self._raw if m.id in gone}
        return self._whole(
            query,
            tool_tokens,
            raw_tokens,
            filter_log,
            {**by_id, **originals},
            messages=messages,
            budget=policy.window,
            reserve=policy.reserve,
        )

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
        return self.store.put(text, message_id=raw.id, kind="cleared_tool_output")

    def context_management(self, provider: Provider | None = None) -> dict[str, Any]:
        """The request fields that hand the window's management to the provider, from the
        session's :class:`~ctxpack.managed.WindowPolicy` (see :mod:`ctxpack.server_side`).

        For Anthropic, ``{"context_management": {"edits": [...]}, "betas": [...]}`` (pass both
        to ``client.beta.messages.create``); for OpenAI, ``{"context_management": [...]}`` (for
        ``client.responses.create``). Empty when the session has no window or manages it on
        the client side.
        """
        from .server_side import (
            ANTHROPIC_BETAS,
            anthropic_context_management,
            openai_context_management,
        )

        if self.window is None or not self.window.server_side:
            return {}
        if (provider or self.provider) == "anthropic":
            return {
                "context_management": anthropic_context_management(self.window),
                "betas": list(ANTHROPIC_BETAS),
            }
        return {"context_management": openai_context_management(self.window)}

    def record_response(self, response: Any) -> list[Decision]:
        """Read what the provider's context management did for ``response`` into the session.

        An Anthropic Messages response is appended as the assistant message (its
        ``compaction`` block included, kept verbatim to be sent back), and its
        ``context_management.applied_edits`` and compaction become decisions of the next
        :meth:`render`. For an OpenAI Responses response, the decisions are recorded and its
        output items (the ``compaction`` item included) are yours to send back.

        Returns:
            The decisions recorded.
        """
        recorded: list[Decision] = []

        # One change, read afresh on each attempt: the message and its decisions are stored
        # together, on top of other writers' appends.
        def change() -> None:
            recorded[:] = self._record_response(response)

        self._change(change)
        return recorded

    def _record_response(self, response: Any) -> list[Decision]:
        """:meth:`record_response`'s change of state; returns the decisions recorded."""
        from .server_side import response_decisions

        body = (
            response.model_dump(mode="json", by_alias=True, exclude_unset=True)
            if is_sdk_object(response)
            else response
        )
        if not isinstance(body, Mapping):
            raise InvalidMessageError(
                f"expected a provider's response (an SDK object or its dict), got "
                f"{type(response).__name__}"
            )
        anthropic = is_anthropic_response(body)
        mid = f"s{len(self._raw)}" if anthropic else str(body.get("id", "response"))
        decisions = response_decisions(body, message_id=mid)
        if anthropic:
            message = {"role": "assistant", "content": body.get("content") or []}
            self._extend([message], "anthropic")
        self.window_state.decisions.extend(decisions)
        return decisions

    def pin(self, text: str, *, name: str, kind: Literal["memory", "skill"] = "skill") -> None:
        """Add a memory file or a skill to the conversation, as a user message.

        In managed mode (``window=``), a compaction summarises it away with the rest and then
        re-injects it after the summary: a memory file whole, a skill cut to its head within
        the policy's ``skill_budget``, and the oldest skills dropped first when together they
        pass ``pinned_budget``.

        Raises:
            ConfigError: an empty name, or a kind other than ``"memory"`` or ``"skill"``.
        """
        self.append(pinned_message(text, name, kind))

    def _whole(
        self,
        query: str | None,
        tool_tokens: int,
        raw_tokens: int,
        filter_log: DecisionLog,
        originals: dict[str, Message],
        *,
        messages: list[Message] | None = None,
        budget: int | None = None,
        reserve: int = 0,
    ) -> PackResult:
        """The compact record whole (or ``messages``, a managed request), as a result."""
        messages = list(self._compact) if messages is None else messages
        tokens = self.counter.count_messages(messages) + tool_tokens
        filtered = set(filter_log.message_ids())
        # Every message gets its decision, as pack() promises: here, sent as it is.
        unfiltered = [
            Decision(
                stage="session",
                action="kept",
                message_id=m.id,
                reason="kept, not filtered",
                tokens_before=(n := self.counter.count_message(m)),
                tokens_after=n,
            )
            for m in messages
            if m.id not in filtered
        ]
        return PackResult.model_construct(
            messages=messages,
            tokens=tokens,
            budget=budget,
            reserve=reserve,
            input_tokens=raw_tokens + tool_tokens,
            tool_tokens=tool_tokens,
            input_ids=[m.id for m in self._raw],
            counter=self.counter.name,
            exact=self.counter.exact,
            query=query,
            decisions=filter_log + unfiltered,
            artifacts=originals,
        )

    def _filter_log(self) -> DecisionLog:
        """The filter decisions so far, and a ``kept`` one per output still waiting for its
        answer (``filter_when="answered"``)."""
        waiting = [
            Decision(
                stage="filter",
                action="kept",
                message_id=self._raw[i].id,
                reason="tool output sent whole until the agent answers it (filter_when='answered')",
            )
            for i in self._pending
        ]
        return DecisionLog([*self._decisions, *waiting])

    # --------------------------------------------------------------------------- originals

    def retrieve(
        self,
        artifact: str,
        *,
        lines: str | tuple[int, int] | None = None,
        regex: str | None = None,
        context: int = 2,
        json_path: str | None = None,
        page: int = 1,
        max_chars: int = 8_000,
    ) -> Retrieval:
        """Read an original from the session's store (see :func:`ctxpack.retrieval.read_artifact`).

        Raises:
            ArtifactNotFoundError: no such artifact.
            ConfigError: a bad selector or page.
        """
        found = read_artifact(
            self.store,
            artifact,
            lines=lines,
            regex=regex,
            context=context,
            json_path=json_path,
            page=page,
            max_chars=max_chars,
        )
        if not self.guard.redact_secrets:
            return found
        return found.model_copy(update={"text": redact(found.text).text})

    def handle(self, call: Mapping[str, Any] | SDKObject | str) -> str:
        """Answer the model's call to the retrieve tool (an OpenAI tool call or an Anthropic
        ``tool_use`` block, as a dict or as the SDK's own object:
        ``session.handle(response.choices[0].message.tool_calls[0])``) from the session's
        store (or, with ``tools_on_demand``, its call to ``describe_tool`` from the tools
        last rendered); see :func:`ctxpack.retrieval.handle_retrieve_call`. Append the
        answer as the call's tool result as usual: the session never filters a retrieved
        original again.

        Raises:
            ConfigError: ``call`` is none of these (the model's own mistakes in a call are
                answered in words instead).
        """
        if not isinstance(call, (Mapping, str)) and not is_sdk_object(call):
            raise ConfigError(
                "call must be the model's tool call (an OpenAI tool call, an Anthropic tool_use "
                f"block, or the SDK's object for either) or its arguments, got "
                f"{type(call).__name__}"
            )
        coerced: Mapping[str, Any] | str = coerce_tool_call(call)
        parts = tool_call_parts(coerced) if isinstance(coerced, Mapping) else None
        if self.tools_on_demand and parts is not None and parts[0] == DESCRIBE_TOOL_NAME:
            with self._lock:
                self._refresh()  # the tools another replica rendered last
                return describe_tools(self._full_tools, coerced)
        return handle_retrieve_call(
            self.store, coerced, redact_secrets=bool(self.guard.redact_secrets)
        )

    def __repr__(self) -> str:
        with self._lock:
            shortened = sum(1 for r in self._records.values() if r.shortened)
            count = len(self._raw)
        where = "" if self.session_id is None else f"session_id={self.session_id!r}, "
        return (
            f"<Session: {where}{count} messages, {shortened} tool outputs shortened, "
            f"store={self.store!r}>"
        )
