"""Session: the public class, its construction and its reading methods."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from .._internal.arguments import flag, guesses, keyword_checked, shown
from ..errors import ConfigError
from ..filters import OutputFilter, ToolOutputFilter
from ..guard import ArrivalGuard
from ..managed import WindowPolicy, WindowState
from ..messages import Message, detached
from ..persistence import open_backing
from ..pipeline import Decision, Stage
from ..providers import Provider, tool_call_parts
from ..result import PackResult
from ..retrieval import Retrieval, _answer_retrieve_call, _read_artifact_with, coerce_call
from ..sdk import SDKObject
from ..store import ArtifactStore, SQLiteArtifactStore, check_artifact_store
from ..tokens import CounterLike
from ..tools_on_demand import DESCRIBE_TOOL_NAME, describe_tools
from ._arrival import Arrival, extend_batch, pinned_message
from ._later import frozen, hunted_text
from ._options import (
    SESSION_OPTIONS,
    _pipeline,
    _supersede_batch,
    _tool_filter,
    _warn_if_beyond_the_model,
    _window_policy,
)
from ._records import FilterRecord
from ._render import Rendering, system_opening
from ._repeats import RepeatedLines

if TYPE_CHECKING:
    from ..persistence import Backing
    from ..store import SessionStore


class Session(Arrival, Rendering):
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
        model: The model the requests go to; picks the token counter (as in :func:`pack`),
            and again when set later (:attr:`model`).
        counter: A token counter instead (see :func:`ctxpack.tokens.get_counter`).
        store: Where originals go; by default an in-memory :class:`SQLiteArtifactStore`
            (pass one with a file path for originals that outlive the process).
        filters: A :class:`~ctxpack.filters.ToolOutputFilter` (its markers offer the retrieve
            tool as ``retrieve_tool`` says), a list of filters for one, or ``False`` to keep
            tool outputs whole. By default, every filter of ``filters.default_filters()``.
        retrieve_tool: Whether the model is offered the retrieve tool. Markers then say how to
            call it, :meth:`tools` lists it and :meth:`render` counts its definition.
        pipeline: Stages run at render time on the compact record (say, a clearer or a
            compactor). With a budget, it must end with a packer; ``None`` then means
            :func:`default_pipeline`. A clearer or compactor without a store keeps its
            originals in ``store`` (a copy of it does); one with another store is refused.
        filter_when: ``"arrival"`` (the default): a tool output is filtered when it is
            appended, and the compact record only ever grows at its end. ``"answered"``: the
            outputs the agent has not answered yet are sent whole, and each is filtered once,
            when the agent's next message arrives, with that message as part of its goal (it
            names what the agent used). The model sees every output whole once; the price is
            that the last tool output before a new assistant message changes once, so a prompt
            cache rewrites it (shortened) on the next request. In a managed session, an
            output larger than a request's room (the window less the reply room) is filtered
            when it arrives: it could never be sent whole.
        window: Managed mode: the model's context window in tokens, or a
            :class:`~ctxpack.managed.WindowPolicy`. Every :meth:`render` is then one request,
            kept within the window with room for the reply: old tool results are cleared in
            batches that pay for the prompt-cache write they cause, the history is compacted
            near the window, and the system prompt and user instructions stay verbatim (the
            oldest but the first are summarised once they crowd the window; see
            :mod:`ctxpack.managed`). A window larger than ``model``'s, as the price table
            knows it (:func:`ctxpack.usage.known_window`), warns (``UserWarning``).
        tools_on_demand: Send your tools (``render(tools=...)``) as stubs, a name and a
            one-line description each, with a ``describe_tool`` tool that the model calls for
            the full definitions (:meth:`handle` answers it); see
            :mod:`ctxpack.tools_on_demand`.
        window_state: The managed mode's state saved from an earlier session
            (``session.window_state.to_json()``), to go on where it stopped.
        supersede_batch: A file view (``cat f``, ``nl -ba f | sed -n '10,40p'``..., a text
            editor's ``view``, a ``Read``) that a later view of the same file covers is
            obsolete: it is replaced by a note naming the later view and the stored original.
            Replacing an earlier message makes a prompt cache rewrite what follows it, so
            obsolete views wait until they add up to this many tokens, then go in one batch.
            ``None`` (the default) keeps them: on the real sessions measured, the rewrites cost
            about what the removed tokens saved.
        dedupe_outputs: In a request rendered whole (no budget, or managed), the lines of a
            tool output that an earlier tool output of the request shows (a file read again, a
            test run again) are replaced by a note naming it, a ``deduped`` decision each. The
            prefix sent last time stays the prefix; ``False`` sends them as they are (and so
            does a server-side policy: the provider's clearing could remove the earlier copy).
        redact_secrets: Replace the secrets in tool outputs (keys, tokens, private keys,
            passwords in configuration lines...) by ``[REDACTED kind]`` when they arrive,
            before anything stores, filters or renders them, each change a ``redacted``
            decision (see :mod:`ctxpack.redaction`). ``"all"``: every message, what users
            typed included; ``False``: none. Answers to the retrieve tool are redacted too.
        store_secrets: Dangerous: also put each redacted message's original, secrets and all,
            in ``store`` (its id is in the ``redacted`` decision), for an application that must
            audit them (a value hunted in one included). Anyone who can read the store can
            then read the secrets; the model still cannot (retrieve answers are redacted, and
            hunted for every value found).
        flag_injections: Record a ``flagged`` decision for each tool output holding injection
            markers (:mod:`ctxpack.injection`), a provider tool's result in an assistant's turn
            too; its text is kept. ``"quarantine"``: the compact record holds a note instead
            (the transcript and the store keep the text); ``False``: no check.

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

    @keyword_checked
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
        dedupe_outputs: bool = True,
        redact_secrets: bool | Literal["all"] = True,
        store_secrets: bool = False,
        flag_injections: bool | Literal["quarantine"] = True,
    ) -> None:
        if filter_when not in ("arrival", "answered"):
            raise ConfigError(
                f"filter_when must be 'arrival' or 'answered', got {shown(filter_when)}"
            )
        self.filter_when = filter_when
        self.supersede_batch = _supersede_batch(supersede_batch)
        self._choose_model(model, counter)
        self.store = (
            SQLiteArtifactStore(":memory:") if store is None else check_artifact_store(store)
        )
        self.retrieve_tool = flag(retrieve_tool, "retrieve_tool")
        self.filter = _tool_filter(filters, retrieve_tool)
        self.pipeline = _pipeline(pipeline, self.store)
        self.guard = ArrivalGuard(redact_secrets, store_secrets, flag_injections)
        self.window = _window_policy(window, pipeline)
        _warn_if_beyond_the_model(self.window, model)
        self.tools_on_demand = flag(tools_on_demand, "tools_on_demand")
        # A cache of the last request's tool outputs, derived from the record: never stored.
        self.repeats = RepeatedLines() if flag(dedupe_outputs, "dedupe_outputs") else None
        # Everything the managed mode and the cache-bust warnings remember between requests.
        self.window_state = WindowState() if window_state is None else window_state
        if not isinstance(self.window_state, WindowState):
            raise ConfigError(
                f"window_state must be a WindowState, got {type(window_state).__name__}"
            )
        self._start_empty()

    @classmethod
    @keyword_checked
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
            session_id: The session's id in the store (at most 256 characters, no NUL).
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
            backing.first_sync(session)
        return session

    @classmethod
    def _configured(cls, model: str | None, options: Mapping[str, Any]) -> Session:
        """A new session with the options given to ``open``, checked."""
        unknown = sorted(set(options) - SESSION_OPTIONS)
        if unknown:
            valid = sorted(SESSION_OPTIONS)
            raise ConfigError(
                f"unknown option(s) for opening a session: {guesses(unknown, valid)}; "
                f"valid: {', '.join(valid)}"
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

    @keyword_checked
    def append(
        self,
        message: Mapping[str, Any] | Message,
        *,
        provider: Provider | None = None,
        after: PackResult | None = None,
    ) -> None:
        """Add one message as the agent produced it; a tool output is filtered now.

        Args:
            message: An OpenAI Chat Completions message dict, an Anthropic Messages message
                dict (recognised by its ``tool_use``/``tool_result``/``thinking`` blocks, or
                by ``provider="anthropic"``), or a :class:`Message`. An Anthropic user message
                holding tool results becomes one tool message per result.
            provider: Say which format ``message`` is in, when it cannot be told apart.
            after: The result of this session's :meth:`render` that ``message`` answers (the
                model's reply, the tool outputs it asked for): should the session be erased
                (or expire) while the request is in flight, the message, made from the erased
                history, is then refused rather than stored in the session's new life.

        Raises:
            InvalidMessageError: the message is malformed, or its id is already used.
            SessionErasedError: ``after`` was rendered from a life of the session that was
                erased or expired since; nothing was stored.
            ConfigError: ``after`` is not a result this session rendered.

        Example:
            >>> session = Session(model="gpt-4")
            >>> session.append({"role": "user", "content": "Hello"})
            >>> result = session.render()  # sent to the model
            >>> session.append({"role": "assistant", "content": "Hi!"}, after=result)
        """
        self.extend([message], provider=provider, after=after)

    @keyword_checked
    def extend(
        self,
        messages: Iterable[Mapping[str, Any] | Message],
        *,
        provider: Provider | None = None,
        after: PackResult | None = None,
    ) -> None:
        """:meth:`append` each message, in order: all of them, or none if one is malformed.

        Raises:
            InvalidMessageError: a message is malformed or reuses an id (the error names its
                position in the session); the session is then left as it was.
            SessionErasedError: as for :meth:`append` (``after=``); none was stored.
        """
        batch = extend_batch(messages)
        change = self._answering(after, lambda: self._extend(batch, provider))
        self._change(change, ("extend", batch, provider))

    # ------------------------------------------------------------------------------ output

    def transcript(self) -> list[Message]:
        """The full record, for humans: every message as it arrived (a new list of copies:
        editing one does not change the session)."""
        with self._lock:
            self._refresh()
            return [detached(m) for m in self._raw]

    def compact(self) -> list[Message]:
        """The compact record, for the model: tool outputs as filtered (a new list of
        copies)."""
        with self._lock:
            self._refresh()
            return [detached(m) for m in self._compact]

    @property
    def records(self) -> list[FilterRecord]:
        """One record per tool output, in order: what was filtered, how, and why."""
        with self._lock:
            self._refresh()
            return list(self._records.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._raw)

    @keyword_checked
    def render(
        self,
        budget: int | None = None,
        *,
        query: str | None = None,
        provider: Provider | None = None,
        reserve: int = 0,
        tools: Sequence[Mapping[str, Any]] | None = None,
        system: str | Mapping[str, Any] | None = None,
        strict: bool = False,
        tool_choice: Any = None,
    ) -> PackResult:
        """The compact record, ready to send, as a :class:`PackResult`.

        Without a budget (and without a ``pipeline``), the result is the compact record
        whole: appending messages only appends to it, so the prefix sent last turn is the
        prefix this turn. With a budget, the compact record is packed by :func:`pack` (with
        the session's ``pipeline``, or the default one). A session with a ``pipeline`` and no
        budget packs under the model's context window, when the price table knows it
        (:func:`ctxpack.usage.known_window`; ``result.budget`` then says it), and runs its
        stages on the whole record otherwise. A managed session (``window=``) sizes every
        request by its window instead.

        Every tool output gets a ``filter`` decision (``compressed`` or ``kept``, with its
        tokens and reason); ``result.original(message_id)`` gives the original of a shortened
        message.

        Args:
            budget: Tokens the prompt may take; ``None``: no limit without a ``pipeline``,
                the model's context window (when known) with one.
            query: What the next answer is about (for packing); the last user message by
                default.
            provider: ``"openai"`` or ``"anthropic"``: whose rules the result must follow;
                by default the provider the messages came from (``session.provider``:
                Anthropic once an Anthropic message was appended, else OpenAI).
            reserve: Tokens kept free for the reply (with a budget).
            tools: Your own tool definitions, counted in ``result.tokens``; the retrieve tool's
                definition is added when it is offered.
            system: This request's system prompt, in place of the one the session opened
                with (today's date or the user's profile in it): a string, or a system or
                developer message. It is sent and counted (a managed session fits the history
                around it) but never stored, so the session, and every replica of it, keep
                the first; a change is recorded as a prompt-cache rewrite (a ``warned``
                decision). The session must have opened with a system message.
            strict: Count the session's own tools in OpenAI's strict variant, as
                ``tools(strict=True)`` gives them for ``chat.completions.parse``; so too,
                without it, when the ``tools`` given are all strict function tools.
            tool_choice: The ``tool_choice`` the request is sent with, as ``provider`` takes it:
                OpenAI adds a forced function's name and 4 tokens to the prompt (``"none"``, 1),
                counted in ``result.tokens`` and ``tool_tokens`` (a managed session leaves them
                room); a tool it forces must be one of the tools sent.

        Raises:
            BudgetExceededError: with a budget, the system, developer and pinned messages alone
                do not fit.
            InvalidMessageError: ``system`` is not a system prompt, or the session did not
                open with one.
            ConfigError: ``tool_choice`` is not one ``provider`` takes, or forces a tool not sent.
        """
        with system_opening(system) as opening:
            args = (opening, budget, query, provider, reserve, tools)
            return self._render_opening(*args, strict=flag(strict, "strict"), choice=tool_choice)

    @keyword_checked
    def context_management(self, provider: Provider | None = None) -> dict[str, Any]:
        """The request fields that hand the window's management to the provider, from the
        session's :class:`~ctxpack.managed.WindowPolicy` (see :mod:`ctxpack.server_side`).

        For Anthropic, ``{"context_management": {"edits": [...]}, "betas": [...]}`` (pass both
        to ``client.beta.messages.create``); for OpenAI, ``{"context_management": [...]}`` (for
        ``client.responses.create``). Without ``provider``, Anthropic's for a Claude model, as
        :meth:`render` decides, else the provider of the messages appended. Empty when the
        session has no window or manages it on the client side.
        """
        from ..server_side import (
            ANTHROPIC_BETAS,
            anthropic_context_management,
            openai_context_management,
        )

        provider = self._target(provider)  # as render() decides
        if self.window is None or not self.window.server_side:
            return {}
        if provider == "anthropic":
            return {
                "context_management": anthropic_context_management(self.window),
                "betas": list(ANTHROPIC_BETAS),
            }
        return {"context_management": openai_context_management(self.window)}

    @keyword_checked
    def record_response(
        self, response: Any, *, append: bool = True, after: PackResult | None = None
    ) -> list[Decision]:
        """Read what the provider's context management did for ``response`` into the session.

        An Anthropic Messages response is appended as the assistant message (its
        ``compaction`` block included, kept verbatim to be sent back; an empty reply is not
        appended, Anthropic refusing an empty message in a later request), and its
        ``context_management.applied_edits`` and compaction become decisions of the next
        :meth:`render`. An OpenAI Responses response's decisions are recorded; append its
        output with ``extend(response.output)`` (its compaction item as is). A response is read
        once, by its id: given again (a client wrapper read it already), nothing more is
        recorded or appended.

        Args:
            response: The provider's response, an SDK object or its dict.
            append: ``False`` records the decisions only, for a reply that reaches the session
                with the next request's history (a client wrapper does this); they then name
                the last message the session holds, the end of the request the provider
                edited, rather than the reply.
            after: The result of this session's :meth:`render` the request sent: as for
                :meth:`append`, nothing is recorded once the session was erased since.

        Returns:
            The decisions recorded.

        Raises:
            InvalidMessageError: ``response`` is not a response, or a field of it is malformed
                (``context_management.applied_edits[0].cleared_input_tokens`` not a count);
                the session is then left as it was.
            SessionErasedError: as for :meth:`append` (``after=``); nothing was recorded.
        """
        recorded: list[Decision] = []

        # One change, read afresh on each attempt: the message and its decisions are stored
        # together, on top of other writers' appends.
        def change() -> None:
            recorded[:] = self._record_response(response, append)

        self._change(self._answering(after, change), ("record_response", response, append))
        return recorded

    @keyword_checked
    def pin(
        self,
        text: str,
        *,
        name: str,
        kind: Literal["memory", "skill"] = "skill",
        after: PackResult | None = None,
    ) -> None:
        """Add a memory file or a skill to the conversation, as a user message.

        In managed mode (``window=``), a compaction summarises it away and re-injects it after
        the system prompt (cached from one compaction to the next): a memory file whole, a
        skill cut to its head within ``skill_budget``, the oldest skills dropped first past
        ``pinned_budget``. The same text pinned twice is sent once, the other copy as a note
        naming its stored original: from the next compaction on, at once if re-injected.

        Args:
            text: The file's or the skill's text.
            name: Its name, shown to the model and kept in the records.
            kind: ``"memory"`` (re-injected whole) or ``"skill"`` (cut to its head).
            after: The render the pin answers (a skill the model asked for): as for
                :meth:`append`, refused if the session was erased or expired since.

        Raises:
            ConfigError: an empty name, a kind other than ``"memory"`` or ``"skill"``, or an
                ``after`` this session did not render.
            SessionErasedError: as for :meth:`append` (``after=``); nothing was stored.
        """
        self.append(pinned_message(text, name, kind), after=after)

    # --------------------------------------------------------------------------- originals

    @keyword_checked
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
        return _read_artifact_with(
            self.store,
            artifact,
            self._original_redactor(),
            lines=lines,
            regex=regex,
            context=context,
            json_path=json_path,
            page=page,
            max_chars=max_chars,
        )

    def _original_redactor(self) -> Callable[[str], str] | None:
        """How an original read back is redacted: by the rules and for every value any
        replica found (one printed bare before it was recognised is in its original).
        What other replicas wrote is read first, redacting or not: an erasure among it, the
        originals this replica holds in memory are not read back."""
        with self._lock:
            self._refresh()
            if not self.guard.redact_secrets:
                return None
            hunt = self._hunt()
            hunt = frozen(hunt.fingerprints.entries, hunt.key)
        return partial(hunted_text, hunt=hunt)

    @keyword_checked
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
        coerced = coerce_call(call)
        parts = tool_call_parts(coerced) if isinstance(coerced, Mapping) else None
        if self.tools_on_demand and parts is not None and parts[0] == DESCRIBE_TOOL_NAME:
            with self._lock:
                self._refresh()  # the tools another replica rendered last
                return describe_tools(self._full_tools, coerced)
        return _answer_retrieve_call(self.store, coerced, self._original_redactor())

    def __repr__(self) -> str:
        with self._lock:
            shortened = sum(1 for r in self._records.values() if r.shortened)
            count = len(self._raw)
        where = "" if self.session_id is None else f"session_id={self.session_id!r}, "
        return (
            f"<Session: {where}{count} messages, {shortened} tool outputs shortened, "
            f"store={self.store!r}>"
        )
