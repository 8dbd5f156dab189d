"""A session behind a client wrapper: fed each request's new messages once, rendered per request.

A plain session is packed under the wrapper's limits; a managed one (``Session(window=...)``)
sizes each request itself, within its own window, so the wrapper then takes no limit of its own.
What was given is read from the session's own messages (their ids name their place in the
requests and a digest), so replicas of a stored session, and a process started since, agree.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import threading
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

from .._internal.budgets import check_limits
from ..adapters import from_anthropic
from ..errors import ConfigError, InvalidMessageError
from ..managed import WindowPolicy
from ..messages import Message
from ..providers import Provider
from ..result import PackResult
from ..sdk import coerce_message, is_sdk_object
from ..tokens import REPLY_PRIMING, TokenCounter
from ..tools_on_demand import on_demand_tools

__all__ = ["SessionFeed", "SessionLike", "wrapper_policy"]


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

    def record_response(self, response: Any, *, append: bool = True) -> Any: ...


def wrapper_policy(
    owner: str, window: Any, budget: Any, reserve: Any, session: Any
) -> WindowPolicy | None:
    """Check a wrapper's limits; return the window policy of a managed session, if given one.

    A managed session sizes each request itself, so the wrapper takes no limit of its own
    beyond, at most, the same window.
    """
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
    if policy.server_side and owner.startswith("wrap_openai"):
        raise ConfigError(
            f"{owner}: a server-side managed session hands the window to OpenAI's Responses "
            "API (client.responses), which this wrapper does not wrap: Chat Completions has no "
            "context management. Manage it on the client side (WindowPolicy(server_side=False)) "
            "or send session.context_management() with client.responses yourself"
        )
    return policy


@dataclass(eq=False)
class SessionFeed:
    """One session behind one wrapper: what it lacks of each request is given to it, then it
    renders the request."""

    session: SessionLike
    provider: Provider
    # A managed session's window policy: the session sizes each request, not the wrapper.
    policy: WindowPolicy | None = None
    # What this wrapper gave the session, by the request's message index: its digest. A session
    # that can say what it holds (ctxpack's, by its messages' ids) is read instead.
    fed: dict[int, str] = field(default_factory=dict)
    # Feeding and rendering one session's history is one step for concurrent requests.
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The digest of the system prompt given to a managed session ("" for none): as ``fed``.
    system: str | None = None

    def render(
        self,
        messages: list[Any],
        system: Any,
        tools: Sequence[Mapping[str, Any]] | None,
        counter: TokenCounter,
        budget: int,
        reserve: int,
    ) -> PackResult:
        """A plain session's request, packed under the wrapper's ``budget``."""
        limit = budget
        if system is not None:
            # Anthropic's system prompt rides beside the messages the session renders.
            budget -= counter.count_messages(from_anthropic([], system=system)) - REPLY_PRIMING
        if budget <= reserve:
            raise ConfigError(
                f"the system prompt, max_tokens and reserve take the whole of {limit} tokens"
            )
        with self.lock:
            self._give(messages)
            return self.session.render(
                budget=budget, reserve=reserve, tools=tools, provider=self.provider
            )

    def render_managed(
        self,
        messages: list[Any],
        system: Any,
        tools: Sequence[Mapping[str, Any]] | None,
        room: int,
    ) -> PackResult:
        """A managed session's request: the session keeps it within its own window, with
        ``room`` tokens (the request's ``max_tokens``) for the reply."""
        policy = self.policy
        assert policy is not None
        if room > policy.reserve:
            raise ConfigError(
                f"max_tokens ({room}) is more than the managed session's reply room "
                f"({policy.reserve} tokens of its {policy.window}-token window), so prompt and "
                f"reply could pass the window: ask for at most {policy.reserve}, or give the "
                f"session window=WindowPolicy(window={policy.window}, reply_room={room})"
            )
        with self.lock:
            self._give(messages, system, opening=True)
            return self.session.render(tools=tools, provider=self.provider)

    def server_side_fields(self, *, beta: bool, own: bool, betas: Any) -> dict[str, Any]:
        """What a server-side managed session adds to an Anthropic request: its
        ``context_management`` (unless the request has its ``own``) and the ``betas`` it needs
        beyond the request's."""
        assert self.policy is not None
        if not self.policy.server_side:
            return {}
        if not beta:
            raise ConfigError(
                "a server-side managed session hands the window to Anthropic's context "
                "management, a beta: send with client.beta.messages.create (or .stream), not "
                "client.messages"
            )
        # Only ctxpack's Session can be managed (its window is a WindowPolicy), and it has this.
        fields = dict(cast(_ServerSide, self.session).context_management(self.provider))
        if own:
            del fields["context_management"]
        given = list(betas) if isinstance(betas, (list, tuple)) else []
        fields["betas"] = [*given, *(b for b in fields["betas"] if b not in given)]
        return fields

    def record(self, response: Any) -> Any:
        """``response``, once a server-side session has read what the provider's context
        management did from it (a reply awaited first, for an async client). The reply itself
        reaches the session with the next request's history, so it is not appended here; a
        stream or a raw response is left to the caller (``session.record_response``)."""
        if self.policy is None or not self.policy.server_side:
            return response
        if inspect.isawaitable(response):
            return self._recorded(response)
        self._record(response)
        return response

    async def _recorded(self, response: Awaitable[Any]) -> Any:
        reply = await response
        self._record(reply)
        return reply

    def _record(self, reply: Any) -> None:
        if is_sdk_object(reply) and getattr(reply, "type", None) == "message":
            cast(_ServerSide, self.session).record_response(reply, append=False)

    def tools(self, tools: list[Any] | None) -> list[Any] | None:
        """The tools to send: the request's (as stubs and ``describe_tool`` for a session
        with tools on demand, which counted those) plus the session's own, each once."""
        if tools and getattr(self.session, "tools_on_demand", False) is True:
            tools = on_demand_tools(tools, self.provider)
        extra = self.session.tools(self.provider)
        if not extra:
            return tools
        names = {_tool_name(t) for t in tools or ()}
        return [*(tools or ()), *(t for t in extra if _tool_name(t) not in names)]

    def _give(self, messages: list[Any], system: Any = None, *, opening: bool = False) -> None:
        """Give the session what it lacks of the request: with ``opening``, the system prompt
        first. Another replica may give the same messages at the same moment: one of the two
        writes then fails on the ids, and the other reads afresh what the session holds."""
        for attempt in range(_ATTEMPTS):
            try:
                given, held = self._held()
                if opening:
                    self._feed_system(system, given, held)
                self._feed(messages, given)
                return
            except InvalidMessageError as error:
                if error.field != "id" or attempt == _ATTEMPTS - 1:
                    raise

    def _feed_system(self, system: Any, given: Mapping[int, str], held: str | None) -> None:
        """Give a managed session Anthropic's system prompt as its history's first message.

        The session must count it against the window and keep it verbatim, as it keeps an
        OpenAI system message; it cannot be replaced later, since the history only grows.
        """
        digest = "" if system is None else _digest(system)
        if held is None and not given:
            if system is not None:
                (opening,) = from_anthropic([], system=system)
                self.session.extend([opening.model_copy(update={"id": f"{_SYSTEM}{digest}"})])
            self.system = digest
        elif digest != (held or ""):
            raise ConfigError(
                "with a managed session, system= opens the history the session keeps: this "
                "request's system prompt is not the one of the first request (one session per "
                "conversation; a new system prompt needs a new session)"
            )

    def _feed(self, messages: list[Any], given: Mapping[int, str]) -> None:
        """Give the session the messages it has not had yet, once each.

        Concurrent requests on one session carry the same growing history, read at different
        times: a request may hold fewer messages than the session has had (nothing to give),
        never different ones. Each message goes with an id naming its place in the requests
        and a digest of it, so that a replica, or a process started since, reads from the
        session (its store) what any of them gave.
        """
        shared = min(len(messages), max(given, default=-1) + 1)
        # Only the last message both hold is compared, so a long history costs little more:
        # that catches another conversation or a branch, not an edit further back.
        last = shared - 1
        if shared and _digest(coerce_message(messages[last], last)) != given.get(last):
            raise ConfigError(
                f"with a session, messages must be the growing history: message {last} of this "
                f"request differs from message {last} given to the session before (one session "
                "per conversation; send the history it has, plus new messages at the end)"
            )
        new: list[Any] = []
        digests: dict[int, str] = {}
        for index in range(shared, len(messages)):
            # The session takes dicts: the SDKs' objects are converted first, as everywhere.
            message = coerce_message(messages[index], index)
            digests[index] = digest = _digest(message)
            if isinstance(message, Mapping):
                message = {**message, "id": f"w{index}-{digest}"}
            elif isinstance(message, Message):
                message = message.model_copy(update={"id": f"w{index}-{digest}"})
            new.append(message)
        if new:
            self.session.extend(new, provider=self.provider)
            self.fed.update(digests)

    def _held(self) -> tuple[dict[int, str], str | None]:
        """What the session holds of the requests' messages (index to digest), and the digest
        of the system prompt it was given (``None``: none given)."""
        transcript = getattr(self.session, "transcript", None)
        if not callable(transcript):
            return self.fed, self.system or None
        given: dict[int, str] = {}
        system = None
        for message in transcript():
            found = _GIVEN.match(message.id)
            if found:
                given[int(found[1])] = found[2]
            elif message.id.startswith(_SYSTEM):
                system = message.id.removeprefix(_SYSTEM)
        return given, system


# The ids of what a wrapper gives a session: a request's message (its index there and its
# digest) and a managed session's Anthropic system prompt.
_GIVEN = re.compile(r"w(\d+)-([0-9a-f]{12})$")
_SYSTEM = "wsystem-"
# Reads afresh after a write lost to another replica's: each loss is another writer's progress.
_ATTEMPTS = 10


def _digest(value: Any) -> str:
    """A digest of a message (or a system prompt) as sent, the same in every process."""
    text = json.dumps(value, sort_keys=True, default=repr)
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def _tool_name(tool: Any) -> Any:
    if not isinstance(tool, Mapping):
        return None
    function = tool.get("function")
    return function.get("name") if isinstance(function, Mapping) else tool.get("name")
