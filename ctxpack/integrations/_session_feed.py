"""A session behind a client wrapper: fed each request's new messages once, rendered per request.

A plain session is packed under the wrapper's limits; a managed one (``Session(window=...)``)
sizes each request itself, within its own window, so the wrapper then takes no limit of its own.
What was given is read from the session's own messages (their ids name their place in the
requests and a digest), so replicas of a stored session, and a process started since, agree.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import json
import re
import weakref
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple, Protocol, cast, runtime_checkable

from .._internal import forks
from .._internal.awaiting import in_thread
from .._internal.budgets import check_limits
from ..adapters import from_anthropic
from ..errors import ConfigError, ForkedWhileBusyError, InvalidMessageError, SessionErasedError
from ..managed import WindowPolicy
from ..messages import Message
from ..providers import Provider, tool_name
from ..result import PackResult
from ..sdk import coerce_message, is_sdk_object
from ..server_side import openai_request_fields, thinking_edit
from ..tokens import REPLY_PRIMING, TokenCounter, get_counter
from ..tools_on_demand import _on_demand
from ._answers import LastRender, Recorder
from ._cache_marks import without_marks
from ._streams import RecordedStream, event_stream, stream_helper, watch

__all__ = ["SYSTEM_PREFIX", "Asked", "SessionFeed", "SessionLike", "wrapper_policy"]


@runtime_checkable
class SessionLike(Protocol):
    """What a wrapper needs from a session; :class:`ctxpack.Session` has it.

    The wrapper gives the session each message it has not seen yet with ``extend``, sends what
    ``render`` returns, and adds the session's own ``tools`` (the retrieve tool) to the request.
    """

    def extend(self, messages: Iterable[Any], *, provider: Provider | None = None) -> Any:
        """Add messages, as the agent produced them, to the session's history."""

    def render(
        self,
        budget: int | None = None,
        *,
        query: str | None = None,
        provider: Provider | None = None,
        reserve: int = 0,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> PackResult:
        """The history to send, packed under ``budget`` tokens (``tools`` counted)."""

    def tools(self, provider: Provider = "openai") -> list[dict[str, Any]]:
        """The tool definitions the session adds to a request."""


class _ServerSide(Protocol):
    def context_management(self, provider: Provider | None = None) -> dict[str, Any]: ...

    def record_response(self, response: Any, **options: Any) -> Any: ...


class _OwnSession(Protocol):
    """A ctxpack :class:`~ctxpack.Session`, which renders a request opening with its own
    system prompt, or with tools sent whole, counted so."""

    def _render_opening(self, opening: Any, **options: Any) -> PackResult: ...

    def tools(self, provider: Provider = "openai", *, strict: bool = False) -> list[Any]: ...


class _AsyncSession(Protocol):
    """An :class:`~ctxpack.AsyncSession`, as a wrapper of an async client uses it."""

    async def _render_opening(self, opening: Any, **options: Any) -> PackResult: ...

    async def transcript(self) -> list[Message]: ...

    async def extend(self, messages: Iterable[Any], **options: Any) -> Any: ...

    async def render(self, **options: Any) -> PackResult: ...


def wrapper_policy(
    owner: str, window: Any, budget: Any, reserve: Any, session: Any
) -> WindowPolicy | None:
    """Check a wrapper's limits; return the window policy of a managed session, if given one.

    A managed session sizes each request itself, so the wrapper takes no limit of its own
    beyond, at most, the same window.
    """
    if session is not None and not isinstance(session, SessionLike):
        # Checked first: otherwise a session that is no session reads as a plain one, and the
        # error would be the missing window=.
        raise ConfigError(
            f"session must be a ctxpack Session (extend, render and tools), got "
            f"{type(session).__name__}"
        )
    policy = getattr(session, "window", None)
    if not isinstance(policy, WindowPolicy):
        check_limits(owner, window, budget, reserve)
        return None
    if budget is not None or (reserve is not None and reserve != 0):
        raise ConfigError(
            f"{owner}: a managed session (Session(window=...)) sizes each request itself: leave "
            f"budget= and reserve= out (the reply's room is the session's, {policy.reserve} "
            "tokens; WindowPolicy(reply_room=...) sets it)"
        )
    if window is not None and window != policy.window:
        raise ConfigError(
            f"{owner}: window={window!r} is not the managed session's window "
            f"({policy.window}): give the window once, to the session"
        )
    return policy


class HistoryChangedError(ConfigError):
    """A request whose history is not the one its session was given, plus new messages (its
    message ``index`` differs): a caller that knows where the history comes from says what to do."""

    def __init__(self, detail: str, index: int) -> None:
        super().__init__(detail)
        self.index = index


class Asked(NamedTuple):
    """What a request asks of a session behind a wrapper."""

    messages: Sequence[Any]
    system: Any  # Anthropic's system prompt or the Responses API's instructions, beside them
    tools: list[Any] | None
    room: int  # the reply's tokens: the request's max_tokens
    limits: tuple[TokenCounter, int, int] | None  # counter, budget, reserve; None: managed
    responses: bool = False  # OpenAI's Responses API: input items, instructions as the system
    schema: int = 0  # the tokens of the reply's output format, which joins the prompt
    forced: tuple[str, ...] = ()  # the tools tool_choice leaves no turn to load, by name
    model: str | None = None  # the model the request goes to
    # Whether the request takes strict function tools only (chat.completions.parse), or sends
    # such tools alone: the session's own go in their strict variant.
    strict: bool = False
    choice: Any = None  # tool_choice (or function_call), which a managed session makes room for


@dataclass(eq=False)
class SessionFeed(forks.Guarded):
    """One session behind one wrapper: what it lacks of each request is given to it, then it
    renders the request. An :class:`~ctxpack.AsyncSession` is awaited (``arender``)."""

    session: SessionLike
    provider: Provider
    # A managed session's window policy: the session sizes each request, not the wrapper.
    policy: WindowPolicy | None = None
    # What this wrapper gave the session, by the request's message index: its digest. A session
    # that can say what it holds (ctxpack's, by its messages' ids) is read instead.
    fed: dict[int, str] = field(default_factory=dict)
    # An asyncio lock serves one event loop (it refuses another once it was waited on): one
    # per loop, so a wrapper outlives the asyncio.run() that first used it. Requests on two
    # loops at once are two writers, as replicas are.
    alocks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    # The digest of the system prompt given to a managed session: as ``fed``.
    system: str | None = None
    model: str | None = None  # the wrapper's model=, the one a session made without it counts
    # The render sent last, which the next request's new messages answer (see _answers.py).
    last: LastRender | None = None

    def __post_init__(self) -> None:
        # Feeding and rendering one session's history is one step for concurrent requests;
        # a fork waits for it, before it waits for the session's own lock.
        self._guard_state(rank=2)
        # Without a model or a counter, count for each request's model (Claude's: 1.41x cl100k).
        core = getattr(self.session, "_core", self.session)  # an AsyncSession's Session
        own = getattr(core, "_own_counter", True)
        self.follows = getattr(core, "_model", "") is None and own is False

    def _follow(self, model: str | None) -> None:
        """Count for the wrapper's model, else the request's (a change: a cache rewrite)."""
        session, model = cast(Any, self.session), self.model or model
        if self.follows and model and model != session.model:
            session.model = model

    def _how_to_reopen(self) -> str:
        return "wrap a client made in this process, as the parent's was, and give it the session"

    def _forked_busy(self) -> ForkedWhileBusyError:
        return ForkedWhileBusyError("wrapped client", instead=self._how_to_reopen())

    @property
    def server_side(self) -> bool:
        """Whether the session hands its window to the provider's context management."""
        return self.policy is not None and self.policy.server_side

    @property
    def is_async(self) -> bool:
        """Whether the session's methods are coroutines (an AsyncSession)."""
        return inspect.iscoroutinefunction(getattr(self.session, "extend", None))

    def count(self, text: str) -> int:
        """The tokens of ``text`` as the session counts (ctxpack's sessions say how)."""
        counter: TokenCounter = getattr(self.session, "counter", None) or get_counter()
        return counter.count(text)

    def render(self, asked: Asked) -> PackResult:
        """The request as the session renders it, once given what it lacks: a managed
        session's within its window, with room for the reply; a plain one's under the
        wrapper's limits."""
        messages, system = asked.messages, asked.system
        options = self._render_options(asked)
        with self._lock:
            self._follow(asked.model)
            answers = self._answering(messages)
            for attempt in range(_ATTEMPTS):
                given, held, opens = self._held(None)
                batch, digests, reopen = self._batch(messages, system, given, held, opens)
                try:
                    if batch:
                        self.session.extend(batch, provider=self.provider, **answers)
                except InvalidMessageError as error:
                    self._lost_to_another(error, attempt)
                    continue
                self._remember(digests)
                break
            own = reopen is not None or options.keys() & {"whole", "strict", "choice"}
            render = self.session.render
            if own:  # with options only ctxpack's own sessions take
                render = partial(cast(_OwnSession, self.session)._render_opening, reopen)
            result = render(**options)
            self.last = LastRender.of(result, messages, _digest)
            return result

    async def arender(self, asked: Asked) -> PackResult:
        """:meth:`render` for an AsyncSession, awaited."""
        messages, system = asked.messages, asked.system
        options = self._render_options(asked)
        session = cast(_AsyncSession, self.session)
        # A loop runs in one thread: only that thread ever asks for its lock.
        async with self.alocks.setdefault(asyncio.get_running_loop(), asyncio.Lock()):
            self._follow(asked.model)
            answers = self._answering(messages)
            for attempt in range(_ATTEMPTS):
                given, held, opens = self._held(await session.transcript())
                batch, digests, reopen = self._batch(messages, system, given, held, opens)
                try:
                    if batch:
                        await session.extend(batch, provider=self.provider, **answers)
                except InvalidMessageError as error:
                    self._lost_to_another(error, attempt)
                    continue
                self._remember(digests)
                break
            own = reopen is not None or options.keys() & {"whole", "strict", "choice"}
            render = partial(session._render_opening, reopen) if own else session.render
            result = await render(**options)
            self.last = LastRender.of(result, messages, _digest)
            return result

    def _answering(self, messages: Sequence[Any]) -> dict[str, Any]:
        """``extend``'s ``after=`` for a request continuing the render sent last (see
        ``_answers.py``); kept while requests continue it, the erased history sent again is
        refused again. A request that does not continue it is a new history."""
        last = self.last
        if last is not None and last.continued_by(messages, _same):
            return {"after": last.receipt}
        self.last = None
        return {}

    def _render_options(self, asked: Asked) -> dict[str, Any]:
        """``render``'s arguments for the session; a ``ConfigError`` for one that cannot fit."""
        system, room, limits, policy = asked.system, asked.room, asked.limits, self.policy
        options: dict[str, Any] = {"tools": asked.tools, "provider": self.provider}
        # Options only ctxpack's own sessions take; a plain one's wrapper reserves the choice.
        own = {"whole": self._whole(asked.forced), "strict": asked.strict and self._reopens}
        own["choice"] = asked.choice if policy is not None and self._reopens else None
        options.update((key, value) for key, value in own.items() if value)
        if policy is not None:
            # The session fills its window but the reply room, where the schema goes too.
            if room + asked.schema > policy.reserve:
                schema = f" and the output format's schema ({asked.schema} tokens)"
                raise ConfigError(
                    f"max_tokens ({room}){schema if asked.schema else ''} need more than the "
                    f"managed session's reply room ({policy.reserve} tokens of its "
                    f"{policy.window}-token window), so prompt and reply could pass the "
                    f"window: ask for at most {policy.reserve - asked.schema}, or give the "
                    f"session window=WindowPolicy(window={policy.window}, "
                    f"reply_room={room + asked.schema})"
                )
            return options
        assert limits is not None
        counter, budget, reserve = limits
        limit = budget
        if system is not None:
            # Anthropic's system prompt (the Responses API's instructions) rides beside the
            # messages the session renders.
            budget -= counter.count_messages(from_anthropic([], system=system)) - REPLY_PRIMING
        if budget <= reserve:
            raise ConfigError(
                f"the system prompt, max_tokens and reserve take the whole of {limit} tokens"
            )
        return {**options, "budget": budget, "reserve": reserve}

    @staticmethod
    def _lost_to_another(error: InvalidMessageError, attempt: int) -> None:
        """Another replica gave the same messages first (their ids clash): read afresh, up to
        a point; any other error is the caller's."""
        if error.field != "id" or attempt == _ATTEMPTS - 1:
            raise error

    def server_side_fields(
        self, *, beta: bool, own: bool, betas: Any, thinks: bool = True, responses: bool = False
    ) -> dict[str, Any]:
        """What a server-side managed session adds to a request: its ``context_management``
        (unless the request has its ``own``; for Anthropic, its thinking clearing as
        ``thinking_edit`` says, and the ``betas`` it needs beyond the request's)."""
        if not self.server_side:
            return {}
        if self.provider == "openai":
            fields = cast(_ServerSide, self.session).context_management(self.provider)
            return openai_request_fields(fields, own=own, responses=responses)
        if not beta:
            raise ConfigError(
                "a server-side managed session hands the window to Anthropic's context "
                "management, a beta: send with client.beta.messages.create (or .stream), not "
                "client.messages"
            )
        # Only ctxpack's sessions can be managed (their window is a WindowPolicy); they have this.
        fields = dict(cast(_ServerSide, self.session).context_management(self.provider))
        if own:
            del fields["context_management"]
        else:
            fields["context_management"] = thinking_edit(fields["context_management"], thinks)
        given = list(betas) if isinstance(betas, (list, tuple)) else []
        fields["betas"] = [*given, *(b for b in fields["betas"] if b not in given)]
        return fields

    def record(self, response: Any, after: PackResult | None = None) -> Any:
        """``response``, once a server-side session has read what the provider's context
        management did from it (a reply awaited first, for an async client; a stream's reply
        at its end: see ``_streams``). The reply itself reaches the session with the next
        request's history, so it is not appended here; a raw response is left to the caller
        (``session.record_response``). ``after``: the render the request sent, which the
        reply answers: a session erased since records nothing of it (the caller still gets the
        reply; the next request continuing its history is refused)."""
        if not self.server_side:
            return response
        if inspect.isawaitable(response):
            return self._recorded(response, after)
        if event_stream(response):
            return watch(response, Recorder(self, after))
        if stream_helper(response):
            return RecordedStream(response, Recorder(self, after))
        self._record(response, after)
        return response

    async def _recorded(self, response: Awaitable[Any], after: PackResult | None) -> Any:
        return await self.arecord(await response, after)

    async def arecord(self, reply: Any, after: PackResult | None = None) -> Any:
        """:meth:`record` for a reply already awaited: an AsyncSession's awaited, a plain
        session's in a worker thread (it may write a store), to its end though cancelled."""
        if self.server_side and event_stream(reply):
            return watch(reply, Recorder(self, after))
        if self.server_side and not self.is_async:
            await in_thread(self._record, reply, after)
        elif self.server_side:
            recorded = self._record(reply, after)
            if inspect.isawaitable(recorded):  # None for a reply that is no message
                with contextlib.suppress(SessionErasedError):  # as in _record
                    await recorded
        return reply

    def _record(self, reply: Any, after: PackResult | None = None) -> Any:
        # An Anthropic message, an OpenAI Responses response (whose output items, a
        # compaction item among them, come back with the next request's input). A reply to a
        # render of a session erased since is not recorded; the caller still gets it.
        kind = (getattr(reply, "type", None), getattr(reply, "object", None))
        if is_sdk_object(reply) and kind in (("message", None), (None, "response")):
            answers = {} if after is None else {"after": after}
            with contextlib.suppress(SessionErasedError):
                session = cast(_ServerSide, self.session)
                return session.record_response(reply, append=False, **answers)
        return None

    def tools(
        self, tools: list[Any] | None, forced: tuple[str, ...] = (), strict: bool = False
    ) -> list[Any] | None:
        """The tools to send: the request's (as stubs and ``describe_tool`` for a session
        with tools on demand, which counted those, the ``forced`` ones whole) plus the
        session's own, each once: in their strict variant if ``strict`` (only a ctxpack
        session has one, and counts it so)."""
        if tools and self.on_demand:
            tools = _on_demand(tools, self.provider, self._whole(forced))
        if strict and self._reopens:
            extra = cast(_OwnSession, self.session).tools(self.provider, strict=True)
        else:
            extra = self.session.tools(self.provider)
        if not extra:
            return tools
        names = {tool_name(t) for t in tools or ()}
        return [*(tools or ()), *(t for t in extra if tool_name(t) not in names)]

    def _batch(
        self,
        messages: Sequence[Any],
        system: Any,
        given: Mapping[int, str],
        held: str | None,
        opens: bool,
    ) -> tuple[list[Any], dict[int, str], Any]:
        """What to give the session, in one write: for a managed session's first request,
        Anthropic's system prompt first, then the request's messages it lacks; their digests
        by index; and the system prompt this request opens with, when it is not the one the
        session was first given (``None``: it is). ``opens``: whether the session's history
        opens with a system message, which a request may then change.

        Concurrent requests on one session carry the same growing history, read at different
        times: a request may hold fewer messages than the session has had (nothing to give),
        never different ones. Each message goes with an id naming its place in the requests
        and a digest of it, so that a replica, or a process started since, reads from the
        session (its store) what any of them gave.
        """
        batch: list[Any] = []
        digests: dict[int, str] = {}
        reopen = None
        if self.policy is not None:
            opening, reopen = self._opening(system, given, held)
            if opening is not None:
                batch.append(opening)
                digests[_SYSTEM_INDEX] = opening.id.removeprefix(SYSTEM_PREFIX)
        shared = min(len(messages), max(given, default=-1) + 1)
        # Only the last message both hold is compared, so a long history costs little more:
        # that catches another conversation or a branch, not an edit further back. The first
        # is compared too: a system prompt that changes per request (a date, LangChain's
        # dynamic_prompt) is sent in place of the one first given.
        for index in sorted({0, shared - 1}) if shared else ():
            message = coerce_message(messages[index], index)
            if _same(message, given.get(index)):
                continue
            if index == 0 and opens and _role(message) in _SYSTEM_ROLES and self._reopens:
                reopen = message
                continue
            detail = _changed(message, index, self._reopens, last=index == max(given))
            raise HistoryChangedError(detail, index)
        for index in range(shared, len(messages)):
            # The session takes dicts: the SDKs' objects are converted first, as everywhere.
            message = coerce_message(messages[index], index)
            digests[index] = digest = _digest(message)
            if isinstance(message, Mapping):
                message = {**message, "id": f"w{index}-{digest}"}
            elif isinstance(message, Message):
                message = message.model_copy(update={"id": f"w{index}-{digest}"})
            batch.append(message)
        return batch, digests, reopen

    def _whole(self, forced: tuple[str, ...]) -> tuple[str, ...]:
        """The tools to send whole with tools on demand: those the request forces or limits
        the model to, called with no turn to load their definitions. Only a ctxpack session
        counts them so (``_render_opening``); another is sent the stubs it counted."""
        return forced if forced and self.on_demand and self._reopens else ()

    @property
    def on_demand(self) -> bool:
        """Whether the session sends tools on demand (stubs and ``describe_tool``)."""
        return getattr(self.session, "tools_on_demand", False) is True

    @property
    def _reopens(self) -> bool:
        """Whether the session can open its requests with another system prompt (ctxpack's)."""
        return hasattr(self.session, "_render_opening")

    def _opening(
        self, system: Any, given: Mapping[int, str], held: str | None
    ) -> tuple[Message | None, Message | None]:
        """A managed session's first request opens its history with Anthropic's system prompt:
        the session must count it against the window and keep it verbatim, as it keeps an
        OpenAI system message. Returns that opening, or, for a later request whose system
        prompt changed, the prompt to open the requests with from now on."""
        digest = "" if system is None else _digest(system)
        if held is None and not given:
            if system is None:
                return None, None
            (opening,) = from_anthropic([], system=system)
            return opening.model_copy(update={"id": f"{SYSTEM_PREFIX}{digest}"}), None
        if (system is None and not held) or (system is not None and _same(system, held)):
            return None, None
        if system is not None and held is not None and self._reopens:
            return None, from_anthropic([], system=system)[0]
        raise ConfigError(
            "with a managed session, system= opens the history the session keeps: this "
            "request's system prompt is not the one of the first request, and it can only be "
            "changed, not added or removed (one session per conversation)"
        )

    def _remember(self, digests: dict[int, str]) -> None:
        """What was given, once the session took it (for a session that cannot say itself)."""
        system = digests.pop(_SYSTEM_INDEX, None)
        if system is not None:
            self.system = system
        self.fed.update(digests)

    def _held(self, transcript: list[Message] | None) -> tuple[dict[int, str], str | None, bool]:
        """What the session holds of the requests' messages (index to digest), the digest of
        the system prompt it was given (``None``: none), and whether its history opens with a
        system message, read from its ``transcript`` (``None``: read it now, or this wrapper's
        memory for a session without one)."""
        if transcript is None:
            read = getattr(self.session, "transcript", None)
            if not callable(read):
                return self.fed, self.system, False
            transcript = read()
        given: dict[int, str] = {}
        system = None
        for message in transcript:
            found = _GIVEN.match(message.id)
            if found:
                given[int(found[1])] = found[2]
            elif message.id.startswith(SYSTEM_PREFIX):
                system = message.id.removeprefix(SYSTEM_PREFIX)
        opens = bool(transcript) and transcript[0].role in _SYSTEM_ROLES
        return given, system, opens


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, Mapping) else getattr(message, "role", None)


def _changed(message: Any, index: int, reopens: bool, *, last: bool = False) -> str:
    """Why a request's message ``index`` cannot go to the session that was given another
    (``reopens``: a ctxpack session, which follows a changed system prompt; ``last``: the
    other is the last message the session was given, as after a request that failed)."""
    if index == 0 and _role(message) in _SYSTEM_ROLES:
        if reopens:
            return (
                "with a session, message 0 of this request is a system message but the "
                "history the session was given opened without one, and a request cannot add "
                "one (one session per conversation)"
            )
        return (
            "with a session other than ctxpack's, the system message must stay the one the "
            "history opened with: this request's differs from the one given to the session "
            "before (a ctxpack Session follows a system prompt that changes)"
        )
    changed = (
        f"with a session, messages must be the growing history: message {index} of this "
        f"request differs from message {index} given to the session before"
    )
    if last:
        # The usual cause: a request failed (or was cancelled) after its messages were given,
        # and the application sent another message in place of its last.
        return (
            f"{changed}, the last it was given. The session keeps every message it was given, "
            "a failed request's too (a stored session is shared, append-only): to retry a "
            "request, send its messages again as they were (nothing is given twice); to send "
            f"another message instead, keep message {index} as it was and add the new one "
            "after it, or give that conversation a new session"
        )
    return (
        f"{changed} (one session per conversation; send the history it has, plus new "
        "messages at the end)"
    )


# The ids of what a wrapper gives a session: a request's message (its index there and its
# digest) and a managed session's Anthropic system prompt.
_GIVEN = re.compile(r"w(\d+)-([0-9a-f]{12})$")
SYSTEM_PREFIX = "wsystem-"
_SYSTEM_INDEX = -1  # the system prompt's place among a batch's digests
_SYSTEM_ROLES = ("system", "developer")
# Reads afresh after a write lost to another replica's: each loss is another writer's progress.
_ATTEMPTS = 10


def _digest(value: Any, *, marked: bool = False) -> str:
    """A digest of what a message (or a system prompt) says, the same in every process: not
    where its cache breakpoints are (``cache_control``), which a client moves to the newest
    turn at each request, as Anthropic's prompt-caching guide does. ``marked``: with them,
    as the digests of sessions given messages before this rule were made."""
    if isinstance(value, Message):
        # A converted message (LangChain's): what it says, not the id and the extras that
        # came with it (a LangChain id, token usage), which a client may give afresh.
        value = value.model_dump(mode="json", exclude={"id", "metadata"})
    text = json.dumps(value if marked else without_marks(value), sort_keys=True, default=repr)
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def _same(value: Any, digest: str | None) -> bool:
    """Whether ``value`` is what ``digest`` was made of, by either rule of :func:`_digest`."""
    return digest is not None and digest in (_digest(value), _digest(value, marked=True))
