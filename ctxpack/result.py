"""PackResult: what pack() returns, with the trace of every decision."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    WrapSerializer,
)

from ._internal.arguments import string
from ._internal.arguments import tokens as check_tokens
from ._internal.options import FieldErrorModel
from .errors import ConfigError
from .messages import Message, detached
from .pipeline import Decision, DecisionLog

if TYPE_CHECKING:
    from .adapters import AnthropicPayload

# Originals is not among the public names (at most 151): callers read it as the Mapping
# PackResult.artifacts is annotated with.
__all__ = ["PackResult"]


class Originals(Mapping[str, Message]):
    """Originals by message id, as ``result.artifacts`` of a session's render: a read-only
    mapping whose messages are copied when first read.

    A long session has summarised and cleared hundreds of messages; a render that copied every
    original would spend most of its time on copies few callers read. Each is copied on its
    first read instead, and that copy is the one every later read gives, as a dict's value
    would be: editing it changes neither the session nor another result. ``dict(originals)``
    gives them all.
    """

    __slots__ = ("_build", "_copies", "_sources")

    def __init__(self, sources: Mapping[str, Message]) -> None:
        # The owner's messages, never handed out: only their copies are.
        self._sources: dict[str, Message] | None = dict(sources)
        self._build: Callable[[], Mapping[str, Message]] | None = None
        self._copies: dict[str, Message] = {}

    @classmethod
    def deferred(cls, build: Callable[[], Mapping[str, Message]]) -> Originals:
        """The originals ``build()`` gives when the mapping is first read, its ids included
        (finding them may take a pass over a long history). ``build`` may be called more than
        once, by threads reading at the same time; it must not depend on state that may change
        after the mapping is made (capture what it needs)."""
        originals = cls({})
        originals._sources, originals._build = None, build
        return originals

    def _all(self) -> dict[str, Message]:
        sources = self._sources
        if sources is None:
            assert self._build is not None
            sources = self._sources = dict(self._build())
        return sources

    def __getitem__(self, message_id: str) -> Message:
        copied = self._copies.get(message_id)
        if copied is None:
            # setdefault: threads reading the same original at once all get one copy.
            copied = self._copies.setdefault(message_id, detached(self._all()[message_id]))
        return copied

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._all()

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __repr__(self) -> str:
        return f"Originals({dict(self)!r})"

    def __reduce__(self) -> tuple[type[Originals], tuple[dict[str, Message]]]:
        return Originals, (dict(self),)


def _serialized_as_dict(
    artifacts: Mapping[str, Message], handler: SerializerFunctionWrapHandler
) -> Any:
    # A Mapping field is serialised as a dict only when it is one.
    return handler(artifacts if type(artifacts) is dict else dict(artifacts))


class PackResult(FieldErrorModel):
    """The packed conversation and how it came to be.

    Attributes:
        messages: The messages to send, chronological.
        tokens: Exactly what they cost as a prompt with ``counter``
            (``count_tokens(result.messages, model=...)``). A message no writer would send (a
            reasoning model's reasoning alone, nothing of its response after it) is not among
            them: dropped, a decision under ``writer``.
        budget: The budget asked for; ``None`` when none was (a session rendered whole).
        reserve: Tokens kept free for the reply.
        input_tokens: What the whole input would have cost.
        tool_tokens: What the tool definitions given to :func:`ctxpack.pack` cost (included in
            ``tokens`` and ``input_tokens``).
        counter: Name of the token counter used (``cl100k_base``, ``approx``...).
        exact: Whether that counter is the model's own tokenizer.
        query: The query the packing was done for.
        decisions: Every decision, in pipeline order; every input message has at least one. A
            read-only sequence (:class:`~ctxpack.pipeline.DecisionLog`) whose reasons are written
            when it is first read, so a caller that never reads them does not pay for them.
        artifacts: Originals of messages that were compressed or cleared, by id: a dict from
            :func:`ctxpack.pack`, a read-only mapping from a session's render, which copies
            each original when it is first read (``dict(result.artifacts)`` for a dict); each
            message is the result's own copy.

    A session's render also knows, privately, which session and which life of it it was made
    from (never serialised): give it as ``after=`` with the reply to the request it made
    (:meth:`ctxpack.Session.append`), so that a session erased meanwhile refuses the reply.
    """

    model_config = ConfigDict(frozen=True)

    messages: list[Message]
    tokens: int
    budget: int | None
    reserve: int = 0
    input_tokens: int
    tool_tokens: int = 0
    input_ids: list[str]
    counter: str
    exact: bool
    query: str | None = None
    decisions: DecisionLog
    artifacts: Annotated[Mapping[str, Message], WrapSerializer(_serialized_as_dict)] = Field(
        default_factory=dict
    )
    # The session, and the life of it, a session's render was made from: what a reply given
    # with ``append(..., after=result)`` answers (see rendered_from). Not a field: never
    # serialised; None for pack()'s.
    _origin: tuple[str, str] | None = PrivateAttr(default=None)

    @property
    def kept_ids(self) -> list[str]:
        """Ids of the packed messages, in order."""
        return [m.id for m in self.messages]

    @property
    def dropped_ids(self) -> list[str]:
        """Ids of input messages that are not in the result, in input order."""
        kept = set(self.kept_ids)
        return [i for i in self.input_ids if i not in kept]

    def decisions_for(self, message_id: str) -> list[Decision]:
        """Every decision about one message, in order.

        Raises:
            ConfigError: ``message_id`` is not a string (a ``Message`` rather than its ``id``).
        """
        message_id = string(message_id, "message_id")
        return [d for d in self.decisions if d.message_id == message_id]

    def original(self, message_id: str) -> Message | None:
        """The original of a compressed or cleared message, or ``None`` if it was not changed."""
        return self.artifacts.get(string(message_id, "message_id"))

    def to_openai(self, *, api: Literal["chat", "responses"] = "chat") -> list[dict[str, Any]]:
        """The messages as OpenAI Chat Completions dicts, or with ``api="responses"`` as the
        Responses API's input items (see :func:`ctxpack.to_openai`)."""
        from .adapters import to_openai

        return to_openai(self.messages, api=api)

    def to_anthropic(self) -> AnthropicPayload:
        """The messages as an Anthropic Messages payload: ``{"system": ..., "messages": [...]}``."""
        from .adapters import to_anthropic

        return to_anthropic(self.messages)

    def to_langchain(self) -> list[Any]:
        """The messages as LangChain message objects (needs ``langchain-core``)."""
        from .adapters.langchain import to_langchain

        return to_langchain(self.messages)

    def summary(self) -> str:
        """One line: messages and tokens before and after, and the budget when one was set."""
        limit = (
            f"budget {self.budget}, reserve {self.reserve}"
            if self.budget is not None
            else "no budget"
        )
        return (
            f"{len(self.input_ids)} messages, {self.input_tokens} tokens -> "
            f"{len(self.messages)} messages, {self.tokens} tokens "
            f"({limit}, counter {self.counter}{'' if self.exact else ', approximate'})"
        )

    def report(self, *, width: int = 120) -> str:
        """A readable table: per input message its final fate, tokens before -> after, the
        actions taken on it and the last reason, then the summary.

        Reasons longer than the line are wrapped onto continuation lines at word boundaries,
        never cut.

        Raises:
            ConfigError: ``width`` is not a positive int.
        """
        check_tokens(width, "width", unit="characters")
        first_tokens: dict[str, int] = {}
        last: dict[str, Decision] = {}
        actions: dict[str, list[str]] = {}
        for d in self.decisions:
            actions.setdefault(d.message_id, []).append(d.action)
            if d.tokens_before is not None:
                first_tokens.setdefault(d.message_id, d.tokens_before)
            last[d.message_id] = d
        kept = {m.id: m for m in self.messages}
        cells: list[tuple[str, str, str, str, str]] = []
        for mid in self.input_ids:
            done = actions.get(mid, [])
            if mid in kept:
                final = next(
                    (a for a in ("compressed", "cleared", "merged", "redacted") if a in done),
                    "kept",
                )
                after = self.tokens_of(kept[mid])
            else:
                final = "deduped" if "deduped" in done else "dropped"
                after = 0
            before = first_tokens.get(mid)
            tokens = f"{before}->{after}" if before is not None else (str(after) if after else "-")
            chain = ",".join(dict.fromkeys(done)) or "-"
            reason = last[mid].reason if mid in last else "no decision recorded"
            cells.append((mid, final, tokens, chain, reason))
        id_width = max([2, *(len(c[0]) for c in cells)])
        tokens_width = max([6, *(len(c[2]) for c in cells)])
        chain_width = max([7, *(len(c[3]) for c in cells)])
        head = f"{'id':<{id_width}} {'final':<10} {'tokens':>{tokens_width}}  "
        head += f"{'actions':<{chain_width}} "
        indent = " " * len(head)
        rows = [head + "reason", "-" * width]
        for mid, final, tokens, chain, reason in cells:
            start = (
                f"{mid:<{id_width}} {final:<10} {tokens:>{tokens_width}}  {chain:<{chain_width}} "
            )
            lines = textwrap.wrap(
                reason,
                width=max(width - len(start), 30),
                break_long_words=False,
                break_on_hyphens=False,
            ) or [""]
            rows.append(start + lines[0])
            rows.extend(indent + line for line in lines[1:])
        rows.append("-" * width)
        rows.append(self.summary())
        return "\n".join(row.rstrip() for row in rows)

    def tokens_of(self, message: Message) -> int:
        """Tokens of one packed message as recorded by the packer (framing included)."""
        if not isinstance(message, Message):
            raise ConfigError(
                f"message must be a Message of the result (result.messages), got "
                f"{type(message).__name__}"
            )
        for d in reversed(self.decisions):
            if d.message_id == message.id and d.tokens_after is not None:
                return d.tokens_after
        return 0

    def __str__(self) -> str:
        return self.summary()


def rendered_from(result: PackResult, origin: tuple[str, str]) -> PackResult:
    """A copy of ``result`` (a session's render) marked as made from ``origin``: the
    session's key and the life of it (see ``SessionState._origin``). A copy, since a stage or
    a cache may hand the same result out again."""
    marked = result.model_copy()
    marked._origin = origin
    return marked


def origin_of(result: PackResult) -> tuple[str, str] | None:
    """What :func:`rendered_from` marked ``result`` with, if anything."""
    return result._origin
