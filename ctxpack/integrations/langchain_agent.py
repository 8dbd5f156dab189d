"""LangChain v1 agent middleware: every model request packed, or managed by a session.

Beside LangChain's own ``SummarizationMiddleware`` (which rewrites the agent's state) and
``ContextEditingMiddleware`` (which clears old tool results), :class:`PackingMiddleware` packs
what the model is about to see: the system message and the messages of the request, under a token
budget, keeping tool exchanges whole and recording every cut. :class:`SessionMiddleware` keeps
each LangGraph thread's history in a managed :class:`ctxpack.Session` instead (filters at
arrival, originals retrievable, clearing and compaction within the window), in a session store
that replicas share. Either way the agent's state is left as it is: the full history stays in
the graph, and each model call sees ctxpack's view of it.

Needs ``langchain`` v1 (``pip install 'ctxpack[langchain]'``); importing this module without it
raises an ``ImportError`` that says so.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast, overload
from uuid import UUID

from .._internal import forks
from .._internal.approximations import Announcements, chat_model_counter
from .._internal.arguments import json_problem, keyword_checked, tokens
from .._internal.awaiting import in_thread
from .._internal.budgets import check_limits, pack_limits
from .._internal.tool_choice import tool_choice_tokens
from ..adapters.langchain import META, from_langchain, message_from_langchain
from ..caches import ENTRY_OVERHEAD, LRUCache
from ..errors import ConfigError, InvalidMessageError
from ..managed import WindowPolicy
from ..messages import Message
from ..packing import pack
from ..persistence import check_sync_store
from ..pipeline import Stage
from ..providers import Provider, check_provider, provider_from_chat_model, tool_name
from ..result import PackResult
from ..session import Session
from ..store import SessionStore, open_store
from ..tokens import CounterLike, TokenCounter, get_counter
from ..tools_on_demand import DESCRIBE_TOOL_NAME
from ._answers import LastRender
from ._output_format import strategy_format
from ._request_fields import (
    check_forced,
    langchain_choice,
    langchain_forced,
    langchain_tool_definitions,
)
from ._session_feed import Asked, HistoryChangedError, SessionFeed, wrapper_policy
from ._threads import diverged, thread_id_or_none, thread_key
from ._threads import thread_id as _thread_id

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
    from langchain.agents.middleware.types import ModelResponse
    from langchain_core.messages import SystemMessage, ToolMessage
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.types import Command
except ImportError as exc:  # pragma: no cover - exercised only without langchain
    raise ImportError(
        "ctxpack's agent middleware needs langchain v1; install it with "
        "pip install 'ctxpack[langchain]' (or pip install 'langchain>=1')"
    ) from exc

__all__ = ["PackingMiddleware", "SessionMiddleware"]


class _RequestMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """A middleware that gives the model ``pack_request(request)`` in place of the request,
    and remembers the results it packed: the last one, and each LangGraph thread's last."""

    def __init__(self) -> None:
        super().__init__()
        self.last_result: PackResult | None = None
        # Runs of different threads interleave (a server's asyncio tasks, a thread pool), and
        # LangGraph runs the model call in a copy of the caller's context, so only the thread
        # id ties a result to the run that asked for it. Bounded by what the results weigh.
        self._results: LRUCache[str, PackResult] = LRUCache(
            _OPEN_SESSIONS,
            maxbytes=_RESULTS_BYTES,
            weigh=_result_weight,
            name=f"{type(self).__name__} last results",
        )

    def last_result_for(self, thread_id: str | int | UUID) -> PackResult | None:
        """The :class:`~ctxpack.PackResult` of the last request packed in the LangGraph thread
        ``thread_id`` by this middleware, in this process (``None`` if there is none).

        Each run reads its own thread's result, whatever other threads' runs packed since.
        The results of the most recent threads are kept, up to 1,024 threads and about 64 MB
        (:func:`ctxpack.caches.clear_caches` forgets them too).
        """
        return self._results.get(thread_key(thread_id))

    def delete_thread(self, thread_id: str | int | UUID) -> None:
        """Erase what this middleware holds of the LangGraph thread ``thread_id``, as a
        checkpointer's ``delete_thread`` erases the thread's state: its last result (and
        ``last_result``, if it was that thread's). Call it when no run of the thread is under
        way."""
        forgotten = self._results.pop(thread_key(thread_id))
        if forgotten is not None and self.last_result is forgotten:
            self.last_result = None

    def pack_request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        raise NotImplementedError

    def _remember(self, thread_id: str | None, result: PackResult) -> None:
        self.last_result = result
        if thread_id is not None:
            self._results.put(thread_id, result)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Give the model :meth:`pack_request`'s request."""
        return handler(self.pack_request(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """:meth:`wrap_model_call` for async agents: the request is packed (and a session's
        store read) in a worker thread, so that the event loop serves other runs meanwhile
        (packing a long history takes a while)."""
        # To its end though cancelled: a session's packing writes it and its store.
        return await handler(await in_thread(self.pack_request, request))


class PackingMiddleware(_RequestMiddleware):
    """Pack each model request of a LangChain agent under a token budget.

    The request's system message and messages are packed by :func:`ctxpack.pack` (the system
    message and the current question always kept, tool calls and their results kept or dropped
    together, the original order kept) so that they, the tool definitions and the reply fit the
    context ``window``: the prompt never exceeds ``window - reserve - max_tokens`` tokens,
    ``max_tokens`` being the request's ``model_settings["max_tokens"]`` or the chat model's
    ``max_tokens`` (0 when neither is set). ``budget`` caps the prompt alone, as in
    :func:`ctxpack.pack`; with both, the tighter limit holds. Messages that are kept are the
    agent's own objects, unchanged.

    Args:
        budget: The most the prompt may take, as in :func:`ctxpack.pack`, whatever the reply
            asks. Given alone it warns (:class:`FutureWarning`): it used to mean the window.
        window: The model's context window: tokens the prompt and the reply may take together.
        reserve: Tokens to leave free beyond ``max_tokens``.
        model: A model name to count every request with (see :func:`ctxpack.get_counter`).
            Neither ``model`` nor ``counter``: each request's chat model's name picks it
            (Claude's approximation announced once each), ``cl100k_base`` without a known name.
        counter: A token counter instead.
        pipeline: The stages to run; :func:`ctxpack.default_pipeline` when ``None``.
        provider: Whose rules the packed request follows (``"anthropic"``: a user turn first,
            alternating turns). By default ``"anthropic"`` when the chat model's class name says
            Anthropic, else ``"openai"``.

    Attributes:
        last_result: The last request's :class:`~ctxpack.PackResult` (``None`` before the
            first): what was kept, dropped or compressed, and why. With runs of several
            LangGraph threads at once, :meth:`last_result_for` reads one thread's.

    Example:
        >>> from langchain.agents import create_agent
        >>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> packing = PackingMiddleware(window=200, model="gpt-4")
        >>> model = GenericFakeChatModel(messages=iter([AIMessage("Hi!")]))
        >>> agent = create_agent(model, system_prompt="Be brief.", middleware=[packing])
        >>> history = [HumanMessage("tell me about cats " * 80), AIMessage("Cats purr."),
        ...            HumanMessage("Say hi.")]
        >>> agent.invoke({"messages": history})["messages"][-1].content
        'Hi!'
        >>> [m.role for m in packing.last_result.messages], packing.last_result.tokens <= 200
        (['system', 'assistant', 'user'], True)
    """

    @keyword_checked
    def __init__(
        self,
        budget: int | None = None,
        *,
        window: int | None = None,
        reserve: int = 0,
        model: str | None = None,
        counter: CounterLike | None = None,
        pipeline: Stage | None = None,
        provider: Provider | None = None,
    ) -> None:
        super().__init__()
        check_limits("PackingMiddleware()", window, budget, reserve)
        self.window = window
        self.budget = budget
        self.reserve = reserve
        # Neither model nor counter: each request's chat model picks its counter.
        given = model is not None or counter is not None
        self.counter = get_counter(model, counter) if given else None
        self._announce = Announcements("PackingMiddleware")
        if pipeline is not None and not callable(pipeline):
            raise ConfigError(f"pipeline must be a stage, got {type(pipeline).__name__}")
        self.pipeline = pipeline
        self.provider = None if provider is None else check_provider(provider)

    def pack_request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """The request with its system message and messages packed (a new request).

        Raises:
            ConfigError: ``max_tokens`` and ``reserve`` leave no room in the window, or
                ``tool_choice`` forces a tool the request does not send.
            BudgetExceededError: the system message and the current question alone do not fit.
        """
        if not hasattr(request, "messages"):
            raise ConfigError(
                f"request must be LangChain's ModelRequest, got {type(request).__name__}"
            )
        if not request.messages:
            return request
        provider = self.provider or provider_from_chat_model(request.model)
        counter = self.counter or chat_model_counter(request.model, provider, self._announce)
        schema_text = strategy_format(request.response_format)
        schema = counter.count(schema_text) if schema_text else 0
        check_forced(langchain_forced(request.tool_choice), request.tools)
        # Beside the prompt too: what OpenAI adds for a forced function, reserved as the
        # schema is (the wrappers do the same).
        choice = tool_choice_tokens(langchain_choice(request.tool_choice, provider), counter.count)
        budget, reserve = pack_limits(
            self.window, self.budget, self.reserve + choice, _reply_room(request), schema=schema
        )
        try:
            messages = from_langchain(_history(request))
        except InvalidMessageError as error:
            raise _in_request(error, request) from error
        result = pack(
            messages,
            budget=budget,
            reserve=reserve,
            counter=counter,
            tools=langchain_tool_definitions(request.tools),
            pipeline=self.pipeline,
            provider=provider,
        )
        thread = thread_id_or_none(request.runtime)
        self._remember(None if thread is None else str(thread), result)
        return _with_result(request, result)


class SessionMiddleware(_RequestMiddleware):
    """Keep each LangGraph thread's history in a managed :class:`ctxpack.Session`.

    Every model call of the agent goes through the thread's session, as through a wrapped
    client (:func:`ctxpack.wrap_openai`): the session is given the messages of the request it
    lacks (tool outputs are filtered once, when they arrive, their originals stored), and the
    model sees what the session renders: within ``window`` tokens with room for the reply, the
    system message and every user message verbatim, old tool results cleared and the history
    compacted when the window asks for it, each edit a recorded decision. The session's
    retrieve tool (and, with ``tools_on_demand=True``, ``describe_tool``) is added to every
    request, and the middleware answers the model's calls to it (``session.handle``). The
    agent's state is left as it is: the graph keeps the whole history.

    The thread is the session: its id is the LangGraph ``thread_id`` (so invoke the agent
    with ``config={"configurable": {"thread_id": ...}}``, as a checkpointer needs anyway), and
    the session lives in ``store``, where the replicas of an application, and a process
    started since, resume it. The history of a thread must only grow (LangChain's
    ``SummarizationMiddleware``, which rewrites it, does not go with this one); to erase a
    thread, call :meth:`delete_thread` beside the checkpointer's own.

    Args:
        window: The model's context window (or a :class:`~ctxpack.managed.WindowPolicy`):
            what every request and its reply fit in. ``max_tokens`` (the request's
            ``model_settings`` or the chat model's) must be within the policy's reply room.
        store: Where the sessions live: a store URL (``sqlite:///sessions.db``,
            ``postgresql://...``, ``redis://...``; see :func:`ctxpack.store.open_store`) or a
            :class:`~ctxpack.store.SessionStore`. ``memory://``, the default, keeps them in
            this process only.
        model: The model to count tokens for and price the cache with, as for
            :class:`ctxpack.Session`. Neither ``model`` nor a ``counter`` option: each thread's
            session counts as its chat model's name calls for (as :class:`PackingMiddleware`).
        provider: Whose rules the request follows; by default ``"anthropic"`` when the chat
            model's class name says Anthropic, else ``"openai"``.
        options: The other :class:`ctxpack.Session` options (``counter``, ``filters``,
            ``tools_on_demand``...); the same in every replica.

    Attributes:
        last_result: The last request's :class:`~ctxpack.PackResult` (``None`` before the
            first), whichever thread it served: with several runs at once,
            :meth:`last_result_for` reads one thread's. A thread's history is
            ``session(thread_id)``'s (its ``transcript()`` and ``window_state.events``); do
            not render it again to inspect it, since a managed session's render is a request.

    Raises:
        ConfigError: a bad window, store or session option.

    Example:
        >>> from langchain.agents import create_agent
        >>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        >>> from langchain_core.messages import AIMessage
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> # GenericFakeChatModel takes no tools: leave the retrieve tool out here.
        >>> sessions = SessionMiddleware(window=8_000, model="gpt-4o", retrieve_tool=False)
        >>> model = GenericFakeChatModel(messages=iter([AIMessage("Hi!"), AIMessage("Bye.")]))
        >>> agent = create_agent(
        ...     model, system_prompt="Be brief.", middleware=[sessions],
        ...     checkpointer=InMemorySaver(),
        ... )
        >>> thread = {"configurable": {"thread_id": "user-42"}}
        >>> agent.invoke({"messages": [("user", "Hello")]}, thread)["messages"][-1].content
        'Hi!'
        >>> _ = agent.invoke({"messages": [("user", "Goodbye")]}, thread)
        >>> [m.text for m in sessions.session("user-42").transcript()]
        ['Be brief.', 'Hello', 'Hi!', 'Goodbye']
        >>> [m.text for m in sessions.last_result_for("user-42").messages]
        ['Be brief.', 'Hello', 'Hi!', 'Goodbye']
    """

    @keyword_checked
    def __init__(
        self,
        *,
        window: int | WindowPolicy,
        store: str | SessionStore = "memory://",
        model: str | None = None,
        provider: Provider | None = None,
        **options: Any,
    ) -> None:
        super().__init__()
        if window is None:
            # Checked here: the check of the limits would name budget=, which this does not take.
            raise ConfigError(
                "SessionMiddleware() needs window=: the model's context window (prompt and "
                "reply together), or a WindowPolicy"
            )
        if "window_state" in options:
            raise ConfigError(
                "SessionMiddleware(): window_state is each session's own, kept in the store"
            )
        # The options are checked now, not at the first request of some thread.
        self._options = {**options, "window": window}
        probe = Session._configured(model, self._options)
        if model is not None:
            # Resolved once: each thread's session named Claude's approximation again.
            self._options.setdefault("counter", probe.counter)
        self.policy = wrapper_policy("SessionMiddleware()", None, None, 0, probe)
        if self.policy is not None and self.policy.server_side:
            raise ConfigError(
                "SessionMiddleware(): a server-side policy hands the window to the provider, "
                "which a LangChain chat model does not let ctxpack configure: manage it on the "
                "client side (WindowPolicy(server_side=False))"
            )
        self.provider = None if provider is None else check_provider(provider)
        # The tools every session of these options adds to a request and answers itself.
        self._own = {tool_name(t) for t in probe.tools()}
        if probe.tools_on_demand:
            self._own.add(DESCRIBE_TOOL_NAME)
        self._owns_store = isinstance(store, str)
        # Checked now, as the options are: Session.open would refuse it at the first request.
        self.store: SessionStore = (
            open_store(store) if isinstance(store, str) else check_sync_store(store)
        )
        self._model = model
        given = model is not None or "counter" in options
        self._announce = None if given else Announcements("SessionMiddleware")
        # Open sessions by thread id: each holds what renders its requests one at a time.
        self._feeds: LRUCache[str, SessionFeed] = LRUCache(
            _OPEN_SESSIONS, weigh=lambda key, value: 1, name="SessionMiddleware sessions"
        )
        # The render each thread deleted here sent last (no text: see _answers.py), so that a
        # run still under way cannot bring the erased history into the thread's next session.
        self._erased: dict[str, LastRender] = {}
        # Over the open sessions, which have their own fork handling.
        self._lock = forks.freed_in_child(threading.Lock())

    def session(self, thread_id: str | int | UUID) -> Session:
        """The session of the thread ``thread_id`` (opened from the store, or created)."""
        return cast(Session, self._feed(thread_key(thread_id), None).session)

    def delete_thread(self, thread_id: str | int | UUID) -> None:
        """Erase the thread's session, as a checkpointer's ``delete_thread`` erases its state:
        its transcript, records and originals in the store (``store.delete_session``), which
        every replica reads, and what this one holds in memory (the open session, the last
        result). Another replica's last result of the thread stays in its memory until it
        serves the thread again or deletes it too. A later run starts a new session; a run
        under way, its model's reply in flight, is refused at its next model call
        (``SessionErasedError``), which would bring the erased history (and that reply) into
        the new session. Deleting a thread not held is no error.

        Raises:
            ConfigError: ``thread_id`` is not a thread id (a non-empty str, an int or a UUID).
            StoreError: the store failed; retry the deletion.
        """
        thread_id = thread_key(thread_id)
        with self._lock:
            feed = self._feeds.pop(thread_id)
            if feed is not None and feed.last is not None:
                self._erased[thread_id] = feed.last
                if len(self._erased) > _OPEN_SESSIONS:
                    del self._erased[next(iter(self._erased))]
        self.store.delete_session(thread_id)
        super().delete_thread(thread_id)

    def close(self) -> None:
        """Close the store if it was opened from a URL (a store object stays yours)."""
        if self._owns_store:
            self.store.close()

    def _feed(
        self, thread_id: str, provider: Provider | None, counter: TokenCounter | None = None
    ) -> SessionFeed:
        with self._lock:
            feed = self._feeds.get(thread_id)
            if feed is not None and counter not in (None, cast(Session, feed.session).counter):
                # Opened before its model was known (session(), a tool call first), or the
                # model changed: opened again from the store, counting as the model does.
                feed = None
            if feed is None:
                options = (
                    self._options if counter is None else {**self._options, "counter": counter}
                )
                session = Session.open(thread_id, store=self.store, model=self._model, **options)
                feed = SessionFeed(session, provider or self.provider or "openai", self.policy)
                feed.last = self._erased.pop(thread_id, feed.last)
                self._feeds.put(thread_id, feed)
            elif provider is not None:
                # Opened for a tool call first: the model's provider is known from its request.
                feed.provider = provider
            return feed

    def pack_request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """The request as the thread's session renders it, once given what it lacks (a new
        request).

        Raises:
            ConfigError: the agent runs without a ``thread_id``, ``max_tokens`` is more
                than the reply room, or ``tool_choice`` forces a tool not sent.
            InvalidMessageError: a message ctxpack cannot read (its index and field named).
        """
        if not hasattr(request, "messages"):
            raise ConfigError(
                f"request must be LangChain's ModelRequest, got {type(request).__name__}"
            )
        provider = self.provider or provider_from_chat_model(request.model)
        thread_id = _thread_id(request.runtime)
        # Given no counter, each thread's session counts as its chat model calls for.
        counter = None
        if self._announce is not None:
            counter = chat_model_counter(request.model, provider, self._announce)
        feed = self._feed(thread_id, provider, counter)
        tools = langchain_tool_definitions(request.tools, leave_out=self._own)
        mine = [t for t in request.tools if tool_name(t) not in self._own]
        history = _Converted(request)
        schema_text = strategy_format(request.response_format)
        schema = feed.count(schema_text) if schema_text else 0
        # Checked against what is sent: the agent's tools and the session's own.
        offered = [*mine, *(feed.tools(tools) or [])]
        one = check_forced(langchain_forced(request.tool_choice), offered)
        forced = () if one is None else (one,)
        room = _reply_room(request)
        choice = langchain_choice(request.tool_choice, provider)
        asked = Asked(history, None, tools, room, None, schema=schema, forced=forced, choice=choice)
        try:
            result = feed.render(asked)
        except HistoryChangedError as error:
            raise diverged(thread_id, error, request.system_message is not None) from error
        self._remember(thread_id, result)
        sent = feed.tools(tools, forced) or []
        if not feed.on_demand:
            # The agent's own tools go as LangChain gave them, the session's after them.
            sent = [*mine, *sent[len(mine) :]]
        return _with_result(request, result, tools=sent)

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Answer a call to the session's own tools from the session; others run as usual."""
        answer = self._answer(request)
        return handler(request) if answer is None else answer

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """:meth:`wrap_tool_call` for async agents."""
        answer = await asyncio.to_thread(self._answer, request)
        return await handler(request) if answer is None else answer

    def _answer(self, request: ToolCallRequest) -> ToolMessage | None:
        call = request.tool_call
        if call.get("name") not in self._own:
            return None
        session = self.session(_thread_id(request.runtime))
        block = {"type": "tool_use", "id": call.get("id"), "name": call["name"]}
        text = session.handle({**block, "input": call.get("args") or {}})
        return ToolMessage(content=text, tool_call_id=call.get("id") or "", name=call["name"])


# Sessions a SessionMiddleware keeps open; a thread past them is opened again from the store.
_OPEN_SESSIONS = 1_024


# What the last results of a middleware's threads may weigh together (see _result_weight).
_RESULTS_BYTES = 64 << 20


def _result_weight(thread_id: str, result: PackResult) -> int:
    # Weighing every message would cost as much as packing. A result holds at most its input
    # (what it sends, and the originals of what it cut), a few bytes of text per token.
    return ENTRY_OVERHEAD + 8 * result.input_tokens


def _history(request: ModelRequest[Any]) -> list[Any]:
    """The request's messages, its system message first."""
    history: list[Any] = list(request.messages)
    if request.system_message is not None:
        history.insert(0, request.system_message)
    return history


def _in_request(error: InvalidMessageError, request: ModelRequest[Any]) -> InvalidMessageError:
    """``error`` about a message of ``_history(request)``, naming the message as the caller
    knows it: by its index in ``request.messages`` (the agent's state), not in the history
    that has the system message first, or as the request's ``system_message``."""
    if error.index is None or request.system_message is None:
        return error
    if error.index == 0:
        return InvalidMessageError(f"system_message: {error.detail}", field=error.field)
    return InvalidMessageError(error.detail, index=error.index - 1, field=error.field)


class _Converted(Sequence[Message]):
    """A LangChain history, each message converted when read: the session needs only the
    messages it lacks and the last one it holds, not the whole history at every request."""

    def __init__(self, request: ModelRequest[Any]) -> None:
        self.request = request
        self.history = _history(request)
        self.done: dict[int, Message] = {}

    def __len__(self) -> int:
        return len(self.history)

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if index not in self.done:
            try:
                message = message_from_langchain(self.history[index], index)
            except InvalidMessageError as error:
                raise _in_request(error, self.request) from error
            self.done[index] = _storable(message)
        return self.done[index]


def _storable(message: Message) -> Message:
    """``message`` without its tool artifact when JSON cannot carry it: a stored session keeps
    only JSON, and LangChain never sends an artifact to the model (it is the application's: a
    tool's bytes, rows, a data frame), so the run need not fail on it. The state keeps it."""
    raw = message.metadata.get(META)
    if not isinstance(raw, Mapping):
        return message
    fields = raw.get("fields")
    if not isinstance(fields, Mapping) or json_problem(fields.get("artifact"), "artifact") is None:
        return message
    kept = {k: v for k, v in fields.items() if k != "artifact"}
    metadata = {**message.metadata, META: {**raw, "fields": kept}}
    return message.model_copy(update={"metadata": metadata})


def _with_result(
    request: ModelRequest[Any], result: PackResult, tools: list[Any] | None = None
) -> ModelRequest[Any]:
    """``request`` with ``result``'s messages in place of its own (and ``tools``, if given)."""
    packed = result.to_langchain()
    system: SystemMessage | None = None
    if request.system_message is not None and packed and isinstance(packed[0], SystemMessage):
        system = packed.pop(0)
    if tools is None:
        return request.override(messages=packed, system_message=system)
    return request.override(messages=packed, system_message=system, tools=tools)


def _reply_room(request: ModelRequest[Any]) -> int:
    # The request's own is checked: read as no room, the prompt could fill the reply's.
    asked = request.model_settings.get("max_tokens")
    if asked is not None:
        return tokens(asked, "model_settings['max_tokens']")
    value = getattr(request.model, "max_tokens", None)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
