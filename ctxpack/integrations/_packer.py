"""A wrapped client's packer: the limits it packs each request with, the request's keyword
arguments with the history packed, and the result each thread or task packed last."""

from __future__ import annotations

import contextvars
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import caches
from .._internal.approximations import Announcements, request_counter
from .._internal.arguments import message_items, string, tool_list
from .._internal.awaiting import in_thread
from .._internal.budgets import pack_limits
from .._internal.named import named
from ..adapters import from_anthropic
from ..errors import BudgetExceededError, ConfigError, InvalidMessageError
from ..messages import owned_messages
from ..packing import pack
from ..pipeline import Stage
from ..providers import Provider, all_strict, flat_tools, is_strict, tool_name
from ..result import PackResult
from ..sdk import coerce_messages
from ..tokens import TokenCounter
from . import _responses_request as responses_api
from ._cache_marks import MAX_CACHE_MARKS, cache_marks, without_middle_marks
from ._output_format import output_format
from ._request_fields import (
    check_fields,
    choice_tokens,
    reply_room,
    request_choice,
    tools_sent_whole,
)
from ._responses_request import given as _given
from ._session_feed import Asked, SessionFeed

__all__: list[str] = []

# Each thread and each asyncio task sees the results of the requests it packed itself: a new
# mapping is set on every request (never edited in place, since tasks share their parent's), and
# it holds its packers weakly so a wrapper made per request leaves nothing behind in a long-lived
# worker thread.
_LAST_RESULTS: contextvars.ContextVar[weakref.WeakKeyDictionary[_Packer, _Last]] = (
    contextvars.ContextVar("ctxpack_last_results")
)


class _Last:
    """One thread's (task's) last result of one wrapper, registered so that
    ``clear_caches()`` forgets it: nothing else reaches another thread's context, and a
    pool's worker would keep an erased user's request until it served another."""

    __slots__ = ("__weakref__", "result")

    def __init__(self, result: PackResult) -> None:
        self.result: PackResult | None = result

    def clear(self) -> None:
        self.result = None


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
    # An async client's requests are packed off its event loop (see apacked_kwargs).
    asynchronous: bool = False
    announce: Announcements = field(default_factory=lambda: Announcements("the wrapped client"))

    def counter_for(self, request_model: Any) -> TokenCounter:
        if self.counter is not None:
            return self.counter
        # The wrapper's model, else the request's, picks the tokenizer (Claude's approximation
        # announced once): a request's model of any other type would count with the default
        # encoding, unnoticed. An omitted one is left for the SDK to report.
        model = self.model
        if model is None and _given(request_model):
            model = string(request_model, "model")
        return request_counter(model, self.provider, self.announce)

    def packed_kwargs(
        self,
        kwargs: dict[str, Any],
        *,
        beta: bool = False,
        responses: bool = False,
        strict: bool = False,
    ) -> dict[str, Any]:
        """The request's keyword arguments with ``messages`` (and ``system``) packed, or for
        the Responses API (``responses``) its ``input`` (``instructions`` beside it); for a
        server-side managed session, with its ``context_management`` (``beta``: the request
        goes through ``client.beta``, the only one that takes it). ``strict``: the method
        takes strict function tools only (``chat.completions.parse``)."""
        if responses and not responses_api.packs(kwargs):
            return kwargs
        # A request refused before it is sent leaves no result: the one before is not its.
        self.remember(None)
        asked, out = self._strict_asked(kwargs, beta, responses, strict)
        return self._sent(asked, out, self._result(asked))

    def _result(self, asked: Asked) -> PackResult:
        """``asked`` packed: rendered by the session, else under the wrapper's limits."""
        if self.feed is not None:
            return self.feed.render(asked)
        assert asked.limits is not None
        counter, budget, reserve = asked.limits
        history: Sequence[Any]
        if self.provider == "anthropic":
            history = from_anthropic(asked.messages, system=asked.system)
        elif asked.responses:
            history = responses_api.with_instructions(asked.messages, asked.system)
        else:
            history = coerce_messages(asked.messages)
        try:
            result = pack(
                history,
                budget=budget,
                reserve=reserve,
                counter=counter,
                tools=asked.tools,
                pipeline=self.pipeline,
                provider=self.provider,
            )
        except BudgetExceededError as exc:
            raise self._no_room(exc, history, asked, reserve) from exc
        return result

    def _no_room(
        self, exc: BudgetExceededError, history: Sequence[Any], asked: Asked, reserve: int
    ) -> BudgetExceededError:
        """pack()'s error in the wrapper's words: its arguments, and the messages by their
        role and first words (their ids are ctxpack's own, never seen by the caller)."""
        # The ids pack() gave: its own copies are cached, so this reads them back.
        at = {m.id: m for m in owned_messages(history)}
        reply = "max_output_tokens" if asked.responses else "max_tokens"
        limit = "window=" if self.window is not None and exc.budget == self.window else "budget="
        fixes = f"raise {limit}" + (f", lower {reply}" if limit == "window=" and asked.room else "")
        fixes += ", lower reserve=" if self.reserve else ""
        return BudgetExceededError(
            required=exc.required,
            budget=exc.budget,
            pinned_ids=exc.pinned_ids,
            tool_tokens=exc.tool_tokens,
            what="the messages always kept (instructions, pinned ones, the last user turn)"
            + (f" and {reply} ({asked.room})" if limit == "window=" and asked.room else ""),
            fixes=fixes,
            remedy="shorten some of",
            limit=limit,
            names=[named(at[i]) if i in at else repr(i) for i in exc.pinned_ids[:5]],
        )

    async def apacked_kwargs(
        self,
        kwargs: dict[str, Any],
        *,
        beta: bool = False,
        responses: bool = False,
        strict: bool = False,
    ) -> dict[str, Any]:
        """:meth:`packed_kwargs` for an async client, off the event loop: an AsyncSession
        awaited (it renders in a worker thread), else the packing (a plain session's render)
        in a worker thread, so that the loop serves its other tasks meanwhile. The result is
        remembered here, in the calling task, which a worker thread's context is not."""
        if responses and not responses_api.packs(kwargs):
            return kwargs
        self.remember(None)
        asked, out = self._strict_asked(kwargs, beta, responses, strict)
        if self.feed is not None and self.feed.is_async:
            result = await self.feed.arender(asked)
        else:
            result = await in_thread(self._result, asked)  # it feeds the session: to its end
        return self._sent(asked, out, result)

    def _strict_asked(
        self, kwargs: dict[str, Any], beta: bool, responses: bool, strict: bool
    ) -> tuple[Asked, dict[str, Any]]:
        """:meth:`_asked`, marked strict when the method takes strict function tools only
        (``strict``) or the request's tools are all strict: the session's own then go in their
        strict variant. A method that takes no other refuses what has none (tools on demand's
        stubs, another session's tools), before the session is given the messages."""
        asked, out = self._asked(kwargs, beta, responses)
        if self.feed is None or self.provider != "openai":
            return asked, out
        if strict:
            self._only_strict(asked.tools)
        return asked._replace(strict=strict or all_strict(asked.tools)), out

    def _asked(
        self, kwargs: dict[str, Any], beta: bool, responses: bool = False
    ) -> tuple[Asked, dict[str, Any]]:
        """What a request asks (its messages, system prompt, tools, reply and limits) and the
        keyword arguments to send beside them; InvalidMessageError without a list of messages."""
        system: Any = None
        check_fields(kwargs, self.provider, responses=responses)
        if responses:
            messages = responses_api.request_input(kwargs)
            system = responses_api.instructions(kwargs)
        else:
            messages = self.messages(kwargs)
            if self.provider == "anthropic" and _given(kwargs.get("system")):
                system = kwargs["system"]
        room = reply_room(kwargs, self.provider, responses=responses)
        schema_text = output_format(kwargs, provider=self.provider, responses=responses)
        limits, schema = None, 0
        feed = self.feed if self.feed is not None and self.feed.policy is not None else None
        if feed is None:  # the wrapper's limits; a managed session sizes its own requests
            counter = self.counter_for(kwargs.get("model"))
            schema = counter.count(schema_text) if schema_text else 0
            # Beside the prompt too: a forced function's name, reserved as the schema is.
            choice = 0 if self.provider == "anthropic" else choice_tokens(kwargs, counter.count)
            asked = "max_output_tokens" if responses else "max_tokens"
            budget, reserve = pack_limits(
                self.window, self.budget, self.reserve + choice, room, asked=asked, schema=schema
            )
            limits = (counter, budget, reserve)
        tools: Any = kwargs.get("tools")
        if not _given(tools):  # the legacy functions= declares tools the model reads alike
            tools = kwargs.get("functions")
            if _given(tools) and self.feed is not None and self.feed.on_demand:
                # They would go whole, the session counting their stubs: a request over its
                # limit. functions= cannot carry describe_tool, nor so the stubs either.
                raise ConfigError(
                    "functions=: a session with tools_on_demand needs its tools in tools= (the "
                    "legacy functions= cannot carry describe_tool); give them as tools=[{'type': "
                    "'function', 'function': ...}]"
                )
        tools = tool_list(tools) if _given(tools) else None
        out = dict(kwargs)
        if feed is not None:
            schema = feed.count(schema_text) if schema_text else 0
            own = _given(kwargs.get("context_management"))
            betas = kwargs.get("betas")
            thinking = _thinking(kwargs)
            thinks = thinking not in (None, "disabled")
            if thinking == "enabled" and feed.policy is not None and feed.policy.keep_thinking == 0:
                # Manual thinking needs the answered turn's thinking back in a tool loop: every
                # request after a clearing inside one would be refused.
                raise ConfigError(
                    "thinking: manual extended thinking ({'type': 'enabled'}) needs the "
                    "thinking of the assistant turn a tool result answers, which the session's "
                    "WindowPolicy(keep_thinking=0) clears (Anthropic refuses such a request); "
                    "use keep_thinking=1 or more, or None"
                )
            out.update(
                feed.server_side_fields(
                    beta=beta, own=own, betas=betas, thinks=thinks, responses=responses
                )
            )
        forced = self._forced(kwargs, tools)
        model = kwargs.get("model")
        sent_to = model if isinstance(model, str) else None
        tool_choice = request_choice(kwargs)
        return Asked(
            *(messages, system, tools, room, limits, responses, schema, forced, sent_to),
            choice=tool_choice,
        ), out

    def _forced(self, kwargs: Mapping[str, Any], tools: list[Any] | None) -> tuple[str, ...]:
        """The tools the request's ``tool_choice`` forces or limits the model to (see
        ``tools_sent_whole``), checked against the tools sent:
        the request's, and the session's beside them (not with the legacy ``functions=``,
        which cannot carry them)."""
        choice = kwargs.get("tool_choice")
        if not _given(choice):
            return ()
        legacy = tools is not None and not _given(kwargs.get("tools"))
        sent = tools or []
        if self.feed is not None and not legacy:
            sent = self.feed.tools(tools) or []
        return tools_sent_whole(choice, sent)

    def _only_strict(self, tools: list[Any] | None) -> None:
        """Refuse the tools a session sends in place of the request's, or beside them, that
        are not strict function tools, for a method that takes no other
        (``chat.completions.parse``, whose SDK refuses them before sending, naming a tool the
        caller never gave): said before the session is given the request's messages. A
        ctxpack session's retrieve tool goes in its strict variant; tools on demand's stubs
        and ``describe_tool`` have none, nor have the tools of a session not ctxpack's."""
        if self.feed is None:
            return
        given = tools or []
        added = [t for t in self.feed.tools(tools, strict=True) or [] if t not in given]
        loose = [str(tool_name(t)) for t in added if not is_strict(t)]
        if loose:
            raise ConfigError(
                f"chat.completions.parse takes strict function tools only, and the session "
                f"sends {', '.join(map(repr, loose))}, which are not: give the session "
                "tools_on_demand=False (its stubs and describe_tool are not strict; a session "
                "of your own, strict tools or none), or send the request with "
                "chat.completions.create"
            )

    @staticmethod
    def messages(kwargs: Mapping[str, Any]) -> list[Any]:
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
        feed = self.feed
        sent_tools = (
            feed.tools(tools, asked.forced, asked.strict)
            if feed is not None and not legacy
            else tools
        )
        if sent_tools is not None and sent_tools != tools:
            out["tools"] = flat_tools(sent_tools) if asked.responses else sent_tools
        if asked.responses:
            out["input"] = responses_api.input_items(result.messages, asked.system)
        elif self.provider == "anthropic":
            payload = result.to_anthropic()
            out["messages"] = payload["messages"]
            if payload["system"] is not None:
                out["system"] = payload["system"]
            out["messages"] = _within_cache_marks(out)
        else:
            out["messages"] = result.to_openai()
        key = "input" if asked.responses else "messages"
        # OpenAI answers instructions alone, but not the question the caller asked: a pack
        # that dropped every turn would be billed for a reply to nothing.
        if not out[key] or (
            result.dropped_ids and all(m.role in _INSTRUCTIONS for m in result.messages)
        ):
            raise InvalidMessageError(_nothing_left(key, result))
        return out

    @property
    def last_result(self) -> PackResult | None:
        """The result of the last request packed by this thread or asyncio task."""
        last = _LAST_RESULTS.get(weakref.WeakKeyDictionary()).get(self)
        return None if last is None else last.result

    def remember(self, result: PackResult | None) -> None:
        """Make ``result`` this thread's (task's) last; ``None``: it has none."""
        results = weakref.WeakKeyDictionary(_LAST_RESULTS.get(weakref.WeakKeyDictionary()))
        if result is None:
            if self not in results:
                return
            del results[self]
        else:
            results[self] = caches.register(_Last(result))
        _LAST_RESULTS.set(results)


_INSTRUCTIONS = frozenset({"system", "developer"})


def _within_cache_marks(out: Mapping[str, Any]) -> Any:
    """An Anthropic request's packed messages with at most Anthropic's 4 ``cache_control``
    breakpoints in all: a session keeps the breakpoints of the messages it was given, and a
    caller moving them along a conversation (each request marking its newest turns) would
    have the ones of earlier requests sent too, until the request is refused. The first
    breakpoint (of the tools, the system prompt or the messages) and the newest stay; those
    right after the first go (see :func:`without_middle_marks`). The tools' and the system
    prompt's are the caller's own request's, which holds 4 at most (checked before): only
    the messages' go."""
    messages = out["messages"]
    before = sum(cache_marks(out.get(key)) for key in ("tools", "system"))
    excess = before + cache_marks(messages) - MAX_CACHE_MARKS
    # With none on the tools or the system prompt, the first is the messages' own.
    return without_middle_marks(messages, excess, keep=0 if before else 1)[0]


def _nothing_left(key: str, result: PackResult) -> str:
    """Why a packed request holds no turn: what dropped the ones it had."""
    last = {d.message_id: d.reason for d in result.decisions}
    reasons = dict.fromkeys(last.get(i, "no decision recorded") for i in result.dropped_ids)
    why = "; ".join(reasons) or "none was given beside the system prompt"
    # Said here, rather than by the provider (or its bill) after sending.
    return (
        f"{key}: the packed request holds no message beside the instructions, so it was not "
        f"sent (dropped: {why}); a request needs at least one turn to answer (the wrapper's "
        f"last_result.report() says more)"
    )


def _thinking(kwargs: Mapping[str, Any]) -> str | None:
    """The kind of thinking an Anthropic request asks for (``thinking=``, or in
    ``extra_body``): ``"enabled"``, ``"adaptive"``, ``"disabled"``..., ``None`` if none."""
    thinking = kwargs.get("thinking")
    extra = kwargs.get("extra_body")
    if not _given(thinking) and isinstance(extra, Mapping):
        thinking = extra.get("thinking")
    return str(thinking.get("type")) if isinstance(thinking, Mapping) else None
