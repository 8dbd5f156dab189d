"""Client wrappers: the OpenAI and Anthropic SDK clients, packing every request first.

``wrap_openai(client, window=...)`` returns an object that behaves like ``client``: every
attribute is the client's own, except that ``chat.completions.create`` (and ``parse``,
``stream``, and their ``with_raw_response`` / ``with_streaming_response`` forms) pack
``messages`` with :func:`ctxpack.pack` before the SDK sends them, and ``responses.create``
(and the same forms) packs ``input`` with ``instructions`` beside it. ``wrap_anthropic`` does
the same for ``messages.create`` / ``messages.stream`` (and ``beta.messages``), packing
``system`` too.
``window`` is the model's context window, prompt and reply together (each request's
``max_tokens`` is taken out of it); ``budget``, as in :func:`ctxpack.pack`, caps the prompt alone.
The tool definitions are counted against both; the reply is left as the SDK returns it, so
streaming is unchanged. The wrappers work for sync and async clients alike: packing happens before
the SDK method is called, and what it returns (a response, a coroutine, a stream) is returned as
is. With a session (``session=``) the session keeps the history and renders each request; an
:class:`~ctxpack.AsyncSession`, given to an async client, is awaited first, so the call returns
an object to await (the reply) or to enter with ``async with`` (a stream).
"""

from __future__ import annotations

import contextvars
import inspect
import warnings
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._internal.arguments import keyword_checked, message_items, optional_text, string, tool_list
from .._internal.budgets import pack_limits
from ..adapters import from_anthropic
from ..errors import ConfigError, InvalidMessageError
from ..managed import WindowPolicy
from ..packing import pack
from ..pipeline import Stage
from ..providers import Provider, flat_tools
from ..result import PackResult
from ..sdk import coerce_messages
from ..tokens import (
    ApproximateTokenCountWarning,
    CounterLike,
    TokenCounter,
    anthropic_approx_counter,
    get_counter,
)
from . import _responses_request as responses_api
from ._output_format import output_format
from ._responses_request import given as _given
from ._session_feed import Asked, SessionFeed, SessionLike, wrapper_policy

__all__ = [
    "PackedClient",
    "wrap_anthropic",
    "wrap_openai",
]


# Entry points that pack their keyword arguments, by the attribute path from the client.
_OPENAI_RESOURCES = frozenset(
    {
        ("chat", "completions"),
        ("chat", "completions", "with_raw_response"),
        ("chat", "completions", "with_streaming_response"),
        ("responses",),
        ("responses", "with_raw_response"),
        ("responses", "with_streaming_response"),
    }
)
_OPENAI_METHODS = frozenset({"create", "parse", "stream"})
_ANTHROPIC_RESOURCES = frozenset(
    {
        ("messages",),
        ("messages", "with_raw_response"),
        ("messages", "with_streaming_response"),
        ("beta", "messages"),
        ("beta", "messages", "with_raw_response"),
        ("beta", "messages", "with_streaming_response"),
    }
)
_ANTHROPIC_METHODS = frozenset({"create", "parse", "stream"})
# The async clients, named in errors.
_ASYNC_CLIENTS = {"openai": "openai.AsyncOpenAI", "anthropic": "anthropic.AsyncAnthropic"}
# Client methods that return a new client configured like this one: the copy is wrapped too.
_COPIES = frozenset({"with_options", "copy"})


def _is_async_client(client: Any, provider: Provider) -> bool:
    """Whether ``client``'s request methods are coroutines (``AsyncOpenAI``, ``AsyncAnthropic``)."""
    path = ("chat", "completions", "create") if provider == "openai" else ("messages", "create")
    method = client
    for name in path:
        method = getattr(method, name, None)
    # The SDKs' decorators hide the coroutine function behind a plain one.
    return callable(method) and inspect.iscoroutinefunction(inspect.unwrap(method))


# Each thread and each asyncio task sees the results of the requests it packed itself: a new
# mapping is set on every request (never edited in place, since tasks share their parent's), and
# it holds its packers weakly so a wrapper made per request leaves nothing behind in a long-lived
# worker thread.
_LAST_RESULTS: contextvars.ContextVar[weakref.WeakKeyDictionary[_Packer, PackResult]] = (
    contextvars.ContextVar("ctxpack_last_results")
)


@dataclass(eq=False)  # hashed by identity: the key of its last results
class _Packer:
    """What a wrapped client packs with, and what it packed last."""

    provider: Provider
    window: int | None
    budget: int | None
    reserve: int
    model: str | None
    counter: TokenCounter | None
    pipeline: Stage | None
    feed: SessionFeed | None
    resources: frozenset[tuple[str, ...]] = field(default=frozenset())
    methods: frozenset[str] = field(default=frozenset())

    def counter_for(self, request_model: Any) -> TokenCounter:
        if self.counter is not None:
            return self.counter
        if self.model is not None:
            return get_counter(self.model)
        # The request's model picks the tokenizer: any other type would count with the default
        # encoding, unnoticed. An omitted one is left for the SDK to report.
        return get_counter(string(request_model, "model") if _given(request_model) else None)

    def reply_room(self, kwargs: Mapping[str, Any], *, responses: bool = False) -> int:
        keys = ("max_output_tokens",) if responses else ("max_completion_tokens", "max_tokens")
        for key in keys:
            value = kwargs.get(key)
            if _given(value):
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ConfigError(f"{key} must be a non-negative int, got {value!r}")
                return value
        return 0

    def packed_kwargs(
        self, kwargs: dict[str, Any], *, beta: bool = False, responses: bool = False
    ) -> dict[str, Any]:
        """The request's keyword arguments with ``messages`` (and ``system``) packed, or for
        the Responses API (``responses``) its ``input`` (``instructions`` beside it); for a
        server-side managed session, with its ``context_management`` (``beta``: the request
        goes through ``client.beta``, the only one that takes it)."""
        if responses and not responses_api.packs(kwargs):
            return kwargs
        asked, out = self._asked(kwargs, beta, responses)
        if self.feed is not None:
            return self._sent(asked, out, self.feed.render(asked))
        assert asked.limits is not None
        counter, budget, reserve = asked.limits
        history: Sequence[Any]
        if self.provider == "anthropic":
            history = from_anthropic(asked.messages, system=asked.system)
        elif responses:
            history = responses_api.with_instructions(asked.messages, asked.system)
        else:
            history = coerce_messages(asked.messages)
        result = pack(
            history,
            budget=budget,
            reserve=reserve,
            counter=counter,
            tools=asked.tools,
            pipeline=self.pipeline,
            provider=self.provider,
        )
        return self._sent(asked, out, result)

    async def apacked_kwargs(
        self, kwargs: dict[str, Any], *, beta: bool = False, responses: bool = False
    ) -> dict[str, Any]:
        """:meth:`packed_kwargs` with an AsyncSession, awaited."""
        assert self.feed is not None
        if responses and not responses_api.packs(kwargs):
            return kwargs
        asked, out = self._asked(kwargs, beta, responses)
        return self._sent(asked, out, await self.feed.arender(asked))

    def _asked(
        self, kwargs: dict[str, Any], beta: bool, responses: bool = False
    ) -> tuple[Asked, dict[str, Any]]:
        """What a request asks (its messages, system prompt, tools, reply and limits) and the
        keyword arguments to send beside them; InvalidMessageError without a list of messages."""
        system: Any = None
        if responses:
            messages = responses_api.request_input(kwargs)
            system = responses_api.instructions(kwargs)
        else:
            messages = self._messages(kwargs)
            if self.provider == "anthropic" and _given(kwargs.get("system")):
                system = kwargs["system"]
        room = self.reply_room(kwargs, responses=responses)
        schema_text = output_format(kwargs, provider=self.provider, responses=responses)
        limits, schema = None, 0
        feed = self.feed if self.feed is not None and self.feed.policy is not None else None
        if feed is None:  # the wrapper's limits; a managed session sizes its own requests
            counter = self.counter_for(kwargs.get("model"))
            schema = counter.count(schema_text) if schema_text else 0
            asked = "max_output_tokens" if responses else "max_tokens"
            budget, reserve = pack_limits(
                self.window, self.budget, self.reserve, room, asked=asked, schema=schema
            )
            limits = (counter, budget, reserve)
        tools: Any = kwargs.get("tools")
        if not _given(tools):  # the legacy functions= declares tools the model reads alike
            tools = kwargs.get("functions")
        tools = tool_list(tools) if _given(tools) else None
        out = dict(kwargs)
        if feed is not None:
            schema = feed.count(schema_text) if schema_text else 0
            own = _given(kwargs.get("context_management"))
            out.update(feed.server_side_fields(beta=beta, own=own, betas=kwargs.get("betas")))
        return Asked(messages, system, tools, room, limits, responses, schema), out

    @staticmethod
    def _messages(kwargs: Mapping[str, Any]) -> list[Any]:
        """A Chat Completions or Messages request's ``messages``.

        Raises:
            InvalidMessageError: missing, empty, or not a list.
        """
        # Every method that packs needs messages: without them the request would go out
        # unpacked (messages=None as null), or fail in the SDK with a bare TypeError.
        messages: Any = kwargs.get("messages")
        if "messages" not in kwargs or (messages is not None and not _given(messages)):
            raise InvalidMessageError("messages: required, the request's list of messages")
        entries = list(message_items(messages))
        if not entries:
            # Both providers refuse an empty list; said here, before anything is sent.
            raise InvalidMessageError("messages: empty; a request needs at least one message")
        return entries

    def _sent(self, asked: Asked, out: dict[str, Any], result: PackResult) -> dict[str, Any]:
        """The keyword arguments sent: ``out``, with ``result`` in place of the messages (and
        system prompt), and the session's tools added."""
        self.remember(result)
        tools = asked.tools
        # The session's tools go with tools=: the legacy functions= cannot carry them.
        legacy = not _given(out.get("tools")) and _given(out.get("functions"))
        sent_tools = self.feed.tools(tools) if self.feed is not None and not legacy else tools
        if sent_tools is not None and sent_tools != tools:
            out["tools"] = flat_tools(sent_tools) if asked.responses else sent_tools
        if asked.responses:
            out["input"] = responses_api.input_items(result.messages, asked.system)
        elif self.provider == "anthropic":
            payload = result.to_anthropic()
            out["messages"] = payload["messages"]
            if payload["system"] is not None:
                out["system"] = payload["system"]
        else:
            out["messages"] = result.to_openai()
        return out

    @property
    def last_result(self) -> PackResult | None:
        """The result of the last request packed by this thread or asyncio task."""
        return _LAST_RESULTS.get(weakref.WeakKeyDictionary()).get(self)

    def remember(self, result: PackResult) -> None:
        results = weakref.WeakKeyDictionary(_LAST_RESULTS.get(weakref.WeakKeyDictionary()))
        results[self] = result
        _LAST_RESULTS.set(results)


class _Resource:
    """An attribute of the client on the way to (or holding) the packing methods."""

    def __init__(self, target: Any, path: tuple[str, ...], packer: _Packer) -> None:
        self._target = target
        self._path = path
        self._packer = packer

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        packer = self._packer
        if self._path in packer.resources and name in packer.methods and callable(value):
            top = self._path[:1]
            return _packing(value, packer, beta=top == ("beta",), responses=top == ("responses",))
        path = (*self._path, name)
        if any(resource[: len(path)] == path for resource in packer.resources):
            return _Resource(value, path, packer)
        return value

    def __repr__(self) -> str:
        return f"<packed {self._target!r}>"


def _packing(
    method: Callable[..., Any], packer: _Packer, *, beta: bool, responses: bool
) -> Callable[..., Any]:
    feed = packer.feed
    call: Callable[..., Any]
    if feed is not None and feed.is_async:

        def call(*args: Any, **kwargs: Any) -> Any:
            async def packed() -> dict[str, Any]:
                return await packer.apacked_kwargs(kwargs, beta=beta, responses=responses)

            return _PackedFirst(method, args, packed, feed)

    else:

        def call(*args: Any, **kwargs: Any) -> Any:
            response = method(*args, **packer.packed_kwargs(kwargs, beta=beta, responses=responses))
            return response if feed is None else feed.record(response)

    call.__name__ = getattr(method, "__name__", "create")
    call.__doc__ = getattr(method, "__doc__", None)
    return call


class _PackedFirst:
    """An async client's call with an AsyncSession: the session is awaited (the request
    packed) before the SDK is called. Awaited, it is the SDK's reply (a coroutine's result);
    entered, the SDK's async context manager (a stream helper's)."""

    def __init__(
        self,
        method: Callable[..., Any],
        args: tuple[Any, ...],
        packed: Callable[[], Awaitable[dict[str, Any]]],
        feed: SessionFeed,
    ) -> None:
        self._method = method
        self._args = args
        self._packed = packed
        self._feed = feed
        self._inner: Any = None

    def __await__(self) -> Any:
        return self._reply().__await__()

    async def _reply(self) -> Any:
        response = self._method(*self._args, **await self._packed())
        if inspect.isawaitable(response):
            response = await response
        return await self._feed.arecord(response)

    async def __aenter__(self) -> Any:
        # A server-side session's feed wraps the stream helper, to read its reply at the end.
        self._inner = self._feed.record(self._method(*self._args, **await self._packed()))
        return await self._inner.__aenter__()

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)


class PackedClient(_Resource):
    """An SDK client whose requests are packed by ctxpack; made by :func:`wrap_openai` and
    :func:`wrap_anthropic`.

    Every attribute is the wrapped client's, except the request methods that pack, and:

    Attributes:
        last_result: The :class:`~ctxpack.PackResult` of the last request packed by the
            calling thread or asyncio task (``None`` before its first); read it to log what
            was cut. Shared by the copies made with ``with_options``; another thread's or
            task's requests never change it.
        wrapped: The SDK client itself.
    """

    def __init__(self, client: Any, packer: _Packer) -> None:
        super().__init__(client, (), packer)

    @property
    def last_result(self) -> PackResult | None:
        return self._packer.last_result

    @property
    def wrapped(self) -> Any:
        return self._target

    def __getattr__(self, name: str) -> Any:
        if name in _COPIES:
            make_copy = getattr(self._target, name)

            def copied(*args: Any, **kwargs: Any) -> PackedClient:
                return PackedClient(make_copy(*args, **kwargs), self._packer)

            return copied
        return super().__getattr__(name)

    def __repr__(self) -> str:
        p = self._packer
        managed = p.feed.policy if p.feed is not None else None
        window = managed.window if managed is not None else p.window
        limits = f"window={window}, " if window is not None else ""
        limits += f"budget={p.budget}, " if p.budget is not None else ""
        return (
            f"PackedClient({self._target!r}, {limits}reserve={p.reserve}, provider={p.provider!r})"
        )


def _wrap(
    client: Any,
    provider: Provider,
    window: int | None,
    budget: int | None,
    reserve: int,
    model: str | None,
    counter: TokenCounter | None,
    pipeline: Stage | None,
    session: SessionLike | None,
    policy: WindowPolicy | None,
) -> PackedClient:
    """``client`` behind a packer for ``provider``'s request methods."""
    if (
        session is not None
        and inspect.iscoroutinefunction(getattr(session, "extend", None))
        and not _is_async_client(client, provider)
    ):
        # A sync client packs before its call, outside any await: a coroutine would never run.
        raise ConfigError(
            f"session= with the sync client takes a session with plain methods "
            f"(ctxpack.Session), got {type(session).__name__}, whose methods are coroutines; "
            f"give an AsyncSession to the async client ({_ASYNC_CLIENTS[provider]})"
        )
    optional_text(model, "model")
    if pipeline is not None and not callable(pipeline):
        raise ConfigError(f"pipeline must be a stage, got {type(pipeline).__name__}")
    openai = provider == "openai"
    resources = _OPENAI_RESOURCES if openai else _ANTHROPIC_RESOURCES
    if not any(hasattr(client, path[0]) for path in resources):
        wanted = "client.chat.completions" if openai else "client.messages"
        raise ConfigError(
            f"client must be the {provider} SDK's client (with {wanted}), got "
            f"{type(client).__name__}"
        )
    packer = _Packer(
        provider=provider,
        window=window,
        budget=budget,
        reserve=reserve,
        model=model,
        counter=counter,
        pipeline=pipeline,
        feed=None if session is None else SessionFeed(session, provider, policy),
        resources=resources,
        methods=_OPENAI_METHODS if openai else _ANTHROPIC_METHODS,
    )
    return PackedClient(client, packer)


@keyword_checked
def wrap_openai(
    client: Any,
    *,
    window: int | None = None,
    budget: int | None = None,
    reserve: int = 0,
    model: str | None = None,
    counter: CounterLike | None = None,
    pipeline: Stage | None = None,
    session: SessionLike | None = None,
) -> PackedClient:
    """Wrap an ``openai.OpenAI`` (or ``AsyncOpenAI``) client so that every request is packed.

    ``client.chat.completions.create(messages=..., ...)`` (and ``parse``, ``stream``) packs
    ``messages`` so that prompt and reply fit the context ``window``: the prompt, tool
    definitions included, never exceeds ``window - reserve - max_tokens`` tokens, ``max_tokens``
    being the request's ``max_completion_tokens`` (or ``max_tokens``, or 0). ``budget`` caps the
    prompt alone, as in :func:`ctxpack.pack` (``budget - reserve`` tokens at most); with both,
    the tighter limit holds. The messages may be dicts or the SDK's own objects
    (``response.choices[0].message``). Everything else is sent as given, and the reply (a
    stream too) comes back unchanged. ``client.responses.create(input=..., ...)`` (and
    ``parse``, ``stream``) packs the Responses API's ``input`` the same way, a string or items
    (``response.output`` too), with ``instructions`` counted and sent as given and
    ``max_output_tokens`` as the reply's room.

    Args:
        client: The SDK client, sync or async.
        window: The model's context window: tokens the prompt and the reply may take together.
        budget: The most the prompt may take, as in :func:`ctxpack.pack`, whatever the reply
            asks. Given alone it warns (:class:`FutureWarning`): it used to mean the window.
        reserve: Tokens to leave free beyond the request's ``max_tokens``.
        model: The model whose tokenizer counts; by default each request's ``model``.
        counter: A token counter instead (see :func:`ctxpack.get_counter`).
        pipeline: The stages to run; :func:`ctxpack.default_pipeline` when ``None``.
        session: A :class:`ctxpack.Session` (or any :class:`SessionLike`) that keeps the
            history: each request's new messages are given to ``session.extend`` (once, even
            from concurrent threads or from replicas of a stored session), ``session.render``
            says what is sent, and the session's tools (the retrieve tool) are added to the
            request's. A managed session (``Session(window=...)``) sizes each request itself:
            leave ``window`` (or give the session's), ``budget`` and ``reserve`` out. With the
            async client, an :class:`ctxpack.AsyncSession` is awaited before each request.

    Returns:
        A :class:`PackedClient`; its ``last_result`` is the ``PackResult`` of the calling
        thread's (or asyncio task's) last request.

    Raises:
        ConfigError: neither ``window`` nor ``budget`` is given (without a managed session),
            or a limit is invalid (at each request: ``max_tokens`` leaves no room for the
            prompt in the window, or passes a managed session's reply room, or with a
            session, the request's messages are not the history the session was given;
            the request's ``model`` picks the tokenizer and is not a string), or ``budget``
            is more than ``window``, or a Responses API request has ``previous_response_id``
            or ``conversation`` (OpenAI holds that history, which the wrapper cannot see).
        InvalidMessageError: at a request, its ``messages`` (``input``) are missing, empty or
            not a list of messages (or hold a Responses API ``reasoning`` item).

    Example:
        >>> import httpx2, openai
        >>> reply = {"id": "c", "object": "chat.completion", "created": 0, "model": "gpt-4",
        ...          "choices": [{"index": 0, "finish_reason": "stop",
        ...                       "message": {"role": "assistant", "content": "Hi!"}}]}
        >>> transport = httpx2.MockTransport(lambda request: httpx2.Response(200, json=reply))
        >>> client = openai.OpenAI(api_key="k", http_client=httpx2.Client(transport=transport))
        >>> packed = wrap_openai(client, window=100)
        >>> history = [{"role": "user", "content": "tell me about cats " * 50},
        ...            {"role": "assistant", "content": "Cats purr."},
        ...            {"role": "user", "content": "Say hi."}]
        >>> packed.chat.completions.create(model="gpt-4", messages=history,
        ...                                max_completion_tokens=20).choices[0].message.content
        'Hi!'
        >>> packed.last_result.tokens <= 100 - 20, len(packed.last_result.messages)
        (True, 2)
    """
    policy = wrapper_policy("wrap_openai()", window, budget, reserve, session)
    resolved = get_counter(model, counter) if counter is not None else None
    return _wrap(
        client, "openai", window, budget, reserve, model, resolved, pipeline, session, policy
    )


@keyword_checked
def wrap_anthropic(
    client: Any,
    *,
    window: int | None = None,
    budget: int | None = None,
    reserve: int = 0,
    model: str | None = None,
    counter: CounterLike | None = None,
    pipeline: Stage | None = None,
    session: SessionLike | None = None,
) -> PackedClient:
    """Wrap an ``anthropic.Anthropic`` (or ``AsyncAnthropic``) client so that every request is
    packed.

    ``client.messages.create(messages=..., system=..., max_tokens=..., ...)`` (and
    ``messages.stream``, ``beta.messages``) packs ``messages`` and ``system`` under Anthropic's
    rules (a user turn first, alternating turns, tool pairs kept whole) so that the prompt, tool
    definitions included, never exceeds ``window - reserve - max_tokens`` tokens (and
    ``budget - reserve`` with a ``budget``, as for :func:`wrap_openai`). The messages may be
    dicts or the SDK's own objects (``{"role": "assistant", "content": response.content}``).

    Anthropic does not publish its tokenizer: without ``counter``, counts are
    :func:`ctxpack.tokens.anthropic_approx_counter`'s (``cl100k_base`` times 1.25, a margin that
    errs on the side of fitting), and an :class:`~ctxpack.tokens.ApproximateTokenCountWarning` says
    so once, here. Pass ``counter=`` (say, a function backed by the count-tokens endpoint) to be
    exact.

    Args:
        client: The SDK client, sync or async.
        window: The model's context window: tokens the prompt and the reply may take together.
        budget: The most the prompt may take, as in :func:`ctxpack.pack`, whatever the reply
            asks. Given alone it warns (:class:`FutureWarning`): it used to mean the window.
        reserve: Tokens to leave free beyond the request's ``max_tokens``.
        model: A model name for :func:`ctxpack.get_counter` (an OpenAI name picks its exact
            encoding); ignored when ``counter`` is given.
        counter: A token counter (see :func:`ctxpack.get_counter`).
        pipeline: The stages to run; :func:`ctxpack.default_pipeline` when ``None``.
        session: A :class:`ctxpack.Session` (or any :class:`SessionLike`), as for
            :func:`wrap_openai`.

    Returns:
        A :class:`PackedClient`; its ``last_result`` is the ``PackResult`` of the calling
        thread's (or asyncio task's) last request.

    Raises:
        ConfigError: neither ``window`` nor ``budget`` is given (without a managed session),
            or a limit is invalid (at each request: ``max_tokens`` leaves no room for the
            prompt in the window, or passes a managed session's reply room, or with a
            session, the request's messages are not the history the session was given;
            the request's ``model`` picks the tokenizer and is not a string), or ``budget``
            is more than ``window``.
        InvalidMessageError: at a request, its ``messages`` are missing, empty or not a list
            of messages.
    """
    policy = wrapper_policy("wrap_anthropic()", window, budget, reserve, session)
    resolved: TokenCounter | None = None
    if counter is not None or model is not None:
        resolved = get_counter(model, counter)
    elif policy is None:  # a managed session counts with its own counter
        resolved = anthropic_approx_counter()
        warnings.warn(
            f"Claude's tokenizer is not public; wrap_anthropic counts with {resolved.name!r}, an "
            "approximation with a safety margin. Pass counter=<your exact count function> to "
            "be exact.",
            ApproximateTokenCountWarning,
            stacklevel=2,
        )
    return _wrap(
        client, "anthropic", window, budget, reserve, model, resolved, pipeline, session, policy
    )
