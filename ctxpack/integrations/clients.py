"""Client wrappers: the OpenAI and Anthropic SDK clients, packing every request first.

``wrap_openai(client, window=...)`` returns an object that behaves like ``client``: every
attribute is the client's own, except that ``chat.completions.create`` (and ``parse``,
``stream``) pack ``messages`` with :func:`ctxpack.pack` before the SDK sends them, and
``responses.create`` (and the same) packs ``input`` with ``instructions`` beside it; every
form of these methods (``with_raw_response``, ``with_streaming_response``, ``beta``, at any
level of the path) packs alike. ``wrap_anthropic`` does the same for ``messages.create`` /
``messages.stream`` (and their forms), packing ``system`` too, and for the requests of
``beta.messages.tool_runner(..., thread=False)``.
``window`` is the model's context window, prompt and reply together (each request's
``max_tokens`` is taken out of it); ``budget``, as in :func:`ctxpack.pack`, caps the prompt alone.
The tool definitions are counted against both; the reply is left as the SDK returns it, so
streaming is unchanged. The wrappers work for sync and async clients alike: packing happens before
the SDK method is called, and what it returns (a response, a coroutine, a stream) is returned as
is; an async client's call is a coroutine (or an object to enter with ``async with``) that packs
in a worker thread, off the event loop. With a session (``session=``) the session keeps the
history and renders each request; an :class:`~ctxpack.AsyncSession`, given to an async client,
is awaited (it renders in a worker thread too).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any

from .._internal import forks
from .._internal.arguments import keyword_checked, optional_text
from ..errors import ConfigError
from ..managed import WindowPolicy
from ..pipeline import Stage
from ..providers import Provider
from ..result import PackResult
from ..tokens import CounterLike, TokenCounter, get_counter
from ._packer import _Packer
from ._session_feed import SessionFeed, SessionLike, wrapper_policy

__all__ = [
    "PackedClient",
    "wrap_anthropic",
    "wrap_openai",
]


# The resources whose request methods send a history, by their attribute path from the client.
_OPENAI_RESOURCES = frozenset({("chat", "completions"), ("responses",)})
_ANTHROPIC_RESOURCES = frozenset({("messages",)})
_METHODS = frozenset({"create", "parse", "stream"})
# Attributes that reach the same request methods in another form (the raw or streamed HTTP
# response, the beta API). The SDKs place them at any level (client.with_raw_response.chat,
# client.chat.with_raw_response, client.beta.with_raw_response.messages...), so a path is
# matched with them taken out: wherever they appear, the method packs as the plain one does.
_MODIFIERS = frozenset({"with_raw_response", "with_streaming_response", "beta"})
# Anthropic's helpers that run a conversation themselves, sending from the SDK client they were
# made from: the tool runner, and a message thread (whose history the server keeps).
_SERVER_THREADS = frozenset({"tool_runner", "thread"})
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


class _Resource(forks.ProcessBound):
    """An attribute of the client on the way to (or holding) the packing methods."""

    def __init__(self, target: Any, path: tuple[str, ...], packer: _Packer, root: Any) -> None:
        self._target = target
        self._path = path
        self._packer = packer
        self._root = root  # the PackedClient, which a tool runner sends through

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        packer = self._packer
        core = _core(self._path)
        if core in packer.resources and callable(value):
            if name in _METHODS:
                beta, responses = "beta" in self._path, core == ("responses",)
                # Chat Completions' parse takes strict function tools only: the session's
                # own go in their strict variant.
                strict = name == "parse" and core == ("chat", "completions")
                return _packing(value, packer, beta=beta, responses=responses, strict=strict)
            if name in _SERVER_THREADS and packer.provider == "anthropic":
                return _threaded(value, self._root, (*self._path, name))
        path = (*self._path, name)
        core = _core(path)
        if any(resource[: len(core)] == core for resource in packer.resources):
            return _Resource(value, path, packer, self._root)
        return value

    def __repr__(self) -> str:
        return f"<packed {self._target!r}>"

    def _how_to_reopen(self) -> str:
        return "wrap a client made there, as this one was (wrap_openai(), wrap_anthropic())"


def _core(path: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(name for name in path if name not in _MODIFIERS)


def _threaded(method: Any, root: Any, path: tuple[str, ...]) -> Callable[..., Any]:
    """A tool runner made from the wrapper, so that each turn's request goes through its
    packing ``create``. A thread on the server is refused: each turn then sends only its new
    messages, and the history the server keeps grows past the window unseen by the wrapper."""
    name = ".".join(("client", *path))

    def call(*args: Any, **kwargs: Any) -> Any:
        client = root.wrapped
        threads = getattr(client, "_supports_message_threads", False)  # SDKs before threads lack it
        if path[-1] != "tool_runner" or (threads and kwargs.get("thread") is not False):
            raise ConfigError(
                f"{name}() keeps the conversation in a thread on Anthropic's server, which the "
                "wrapper cannot pack: use client.beta.messages.tool_runner(..., thread=False), "
                "whose every turn sends the whole history, packed, or client.messages.create"
            )
        # The runner reads them before its first request: a None from inside the SDK, a
        # string as its characters, one message each.
        _Packer.messages(kwargs)
        # The SDK's resources take their client as their only argument; given the wrapper, the
        # runner's requests are the wrapper's.
        resource = type(method.__self__)
        return getattr(resource(root), path[-1])(*args, **kwargs)

    call.__name__ = path[-1]
    call.__doc__ = getattr(method, "__doc__", None)
    return call


def _packing(
    method: Callable[..., Any], packer: _Packer, *, beta: bool, responses: bool, strict: bool
) -> Callable[..., Any]:
    feed = packer.feed
    call: Callable[..., Any]
    how = {"beta": beta, "responses": responses, "strict": strict}
    if packer.asynchronous:

        def call(*args: Any, **kwargs: Any) -> Any:
            async def packed() -> tuple[dict[str, Any], PackResult | None]:
                sent = await packer.apacked_kwargs(kwargs, **how)
                return sent, _render_of(packer, sent, kwargs)

            return _PackedFirst(method, args, packed, feed)

    else:

        def call(*args: Any, **kwargs: Any) -> Any:
            sent = packer.packed_kwargs(kwargs, **how)
            after = _render_of(packer, sent, kwargs)
            response = method(*args, **sent)
            return response if feed is None else feed.record(response, after)

    call.__name__ = getattr(method, "__name__", "create")
    call.__doc__ = getattr(method, "__doc__", None)
    return call


def _render_of(packer: _Packer, sent: dict[str, Any], given: dict[str, Any]) -> PackResult | None:
    """The render a request was sent from, which its reply answers (the calling thread's or
    task's last, just packed); ``None`` for a request sent as given (not packed)."""
    return None if sent is given else packer.last_result


class _PackedFirst(Coroutine[Any, Any, Any]):
    """An async client's call: the request is packed off the event loop (an AsyncSession
    awaited, else in a worker thread) before the SDK is called. Awaited, it is the SDK's
    reply (a coroutine's result); entered, the SDK's async context manager (a stream
    helper's). It is a coroutine, as the SDK's call is, so that ``asyncio.create_task``
    takes it."""

    def __init__(
        self,
        method: Callable[..., Any],
        args: tuple[Any, ...],
        packed: Callable[[], Awaitable[tuple[dict[str, Any], PackResult | None]]],
        feed: SessionFeed | None,
    ) -> None:
        self._method = method
        self._args = args
        self._packed = packed
        self._feed = feed
        self._inner: Any = None
        # Made when first run: a call only entered (a stream) leaves no coroutine unawaited.
        self._running: Coroutine[Any, Any, Any] | None = None

    def __await__(self) -> Generator[Any, None, Any]:
        return self._coroutine().__await__()

    def send(self, value: Any) -> Any:
        return self._coroutine().send(value)

    def throw(self, *error: Any) -> Any:
        return self._coroutine().throw(*error)

    def close(self) -> None:
        if self._running is not None:
            self._running.close()

    def _coroutine(self) -> Coroutine[Any, Any, Any]:
        if self._running is None:
            self._running = self._reply()
        return self._running

    async def _reply(self) -> Any:
        sent, after = await self._packed()
        response = self._method(*self._args, **sent)
        if inspect.isawaitable(response):
            response = await response
        return response if self._feed is None else await self._feed.arecord(response, after)

    async def __aenter__(self) -> Any:
        sent, after = await self._packed()
        inner = self._method(*self._args, **sent)
        # A server-side session's feed wraps the stream helper, to read its reply at the end.
        self._inner = inner if self._feed is None else self._feed.record(inner, after)
        return await self._inner.__aenter__()

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)


class PackedClient(_Resource):
    """An SDK client whose requests are packed by ctxpack; made by :func:`wrap_openai` and
    :func:`wrap_anthropic`.

    Every attribute is the wrapped client's, except the request methods that pack, and:

    Attributes:
        last_result: The :class:`~ctxpack.PackResult` of the last request packed by the
            calling thread or asyncio task (``None`` before its first, or after a request
            refused before it was sent); read it to log what was cut. A request the provider
            fails was packed: this is its result. Shared by the copies made with
            ``with_options``; another thread's or task's requests never change it.
        wrapped: The SDK client itself.
    """

    def __init__(self, client: Any, packer: _Packer) -> None:
        super().__init__(client, (), packer, self)

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

    # The SDK clients close their HTTP connections on leaving a with block; the wrapper is
    # entered in their place and hands the block itself, so its requests stay packed.
    def __enter__(self) -> PackedClient:
        _protocol(self._target, "__enter__", "with", "async with")
        self._target.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._target.__exit__(*exc)

    async def __aenter__(self) -> PackedClient:
        _protocol(self._target, "__aenter__", "async with", "with")
        await self._target.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._target.__aexit__(*exc)

    def __repr__(self) -> str:
        p = self._packer
        managed = p.feed.policy if p.feed is not None else None
        window = managed.window if managed is not None else p.window
        limits = f"window={window}, " if window is not None else ""
        limits += f"budget={p.budget}, " if p.budget is not None else ""
        return (
            f"PackedClient({self._target!r}, {limits}reserve={p.reserve}, provider={p.provider!r})"
        )


def _protocol(client: Any, method: str, statement: str, other: str) -> None:
    if not hasattr(type(client), method):
        raise TypeError(
            f"the wrapped {type(client).__name__} does not support {statement}; use {other}"
        )


def _check_session_counter(owner: str, counter: TokenCounter | None, session: Any) -> None:
    """A session counts every request with its own counter, whatever the wrapper's: a
    ``counter=`` other than it would be ignored, and an exact count lost unnoticed."""
    held = getattr(session, "counter", None)
    if counter is not None and held is not None and counter != held:
        raise ConfigError(
            f"{owner}: counter={counter.name!r} is not the session's counter ({held.name!r}), "
            "which counts its requests: give the counter to the session, "
            "Session(counter=...), and leave it out here"
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
    asynchronous = _is_async_client(client, provider)
    if (
        session is not None
        and inspect.iscoroutinefunction(getattr(session, "extend", None))
        and not asynchronous
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
    if pipeline is not None and session is not None:
        # The session's own pipeline packs its requests: this one would never run.
        raise ConfigError(
            "pipeline= with session=: the session's pipeline packs its requests, and this one "
            "would not be used; give it to the session, Session(pipeline=...), and leave it "
            "out here"
        )
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
        feed=None if session is None else SessionFeed(session, provider, policy, model=model),
        resources=resources,
        asynchronous=asynchronous,
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
            session, the request's messages are not the history the session was given; its
            ``model`` not a non-empty string, ``stream`` not a bool, ``tool_choice`` forcing a
            tool not sent), or ``budget`` is more than ``window``, or ``counter`` is not the
            session's, or a Responses API request has ``previous_response_id``/``conversation``.
        InvalidMessageError: at a request, its ``messages`` (``input``) are missing, empty, not
            a list of messages (or hold a ``reasoning`` item), or packed down to none.

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
    _check_session_counter("wrap_openai()", resolved, session)
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
    ``messages.stream``, ``beta.messages``, the raw forms, each turn of
    ``beta.messages.tool_runner(..., thread=False)``) packs ``messages`` and ``system``
    under Anthropic's rules (a user turn first, alternating turns, tool pairs kept whole) so
    that the prompt, tool definitions included, never exceeds ``window - reserve -
    max_tokens`` tokens (and ``budget - reserve`` with a ``budget``, as for
    :func:`wrap_openai`). The messages may be dicts or the SDK's own objects
    (``{"role": "assistant", "content": response.content}``).

    Anthropic does not publish its tokenizer: without ``model`` or ``counter``, each request is
    counted with the approximation its ``model`` calls for (``get_counter(model=...)``'s:
    ``cl100k_base`` times 1.41, a margin that errs on the side of fitting, or 1.91 for the
    models with Claude's newer tokenizer, Opus 4.7 on and the 5 models), and an
    :class:`~ctxpack.tokens.ApproximateTokenCountWarning` names each approximation once, at the
    first request counted with it. Pass ``counter=`` (say, a function backed by the
    count-tokens endpoint) to be exact.

    Args:
        client: The SDK client, sync or async.
        window: The model's context window: tokens the prompt and the reply may take together.
        budget: The most the prompt may take, as in :func:`ctxpack.pack`, whatever the reply
            asks. Given alone it warns (:class:`FutureWarning`): it used to mean the window.
        reserve: Tokens to leave free beyond the request's ``max_tokens``.
        model: A model name for :func:`ctxpack.get_counter` (an OpenAI name picks its exact
            encoding), counting every request; by default each request's ``model``. Ignored
            when ``counter`` is given.
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
            the request's ``model`` is not a non-empty string, its ``stream`` not a bool, its
            ``max_tokens`` below 1, its ``tool_choice`` forces a tool it does not send), or
            ``budget`` is more than ``window``, or ``counter`` is not the session's, or a
            conversation is kept in a thread on Anthropic's server
            (``beta.messages.tool_runner`` without ``thread=False``, ``beta.messages.thread``),
            whose history the wrapper cannot see.
        InvalidMessageError: at a request, its ``messages`` are missing, empty or not a list
            of messages, or none is left once packed (an orphan tool result dropped, say).
    """
    policy = wrapper_policy("wrap_anthropic()", window, budget, reserve, session)
    # Neither: each request's model picks its approximation (a managed session counts with
    # its own counter).
    resolved = get_counter(model, counter) if counter is not None or model is not None else None
    _check_session_counter("wrap_anthropic()", resolved if counter is not None else None, session)
    return _wrap(
        client, "anthropic", window, budget, reserve, model, resolved, pipeline, session, policy
    )
