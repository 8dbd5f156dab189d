"""What a wrapper's next request answers: the render its session sent last.

A wrapper renders a request from its session and the provider answers; the reply, and the tool
outputs it asks for, reach the session with the next request's history. Should the session be
erased meanwhile (a user's erasure handled by another replica), that history is the erased
one: given to the session, it would open the session's next life with it. So the wrapper gives
a request's new messages with ``extend(..., after=)`` the render that request continues, which
the session refuses (:class:`~ctxpack.errors.SessionErasedError`) once it left that render's
life; and a server-side session reads a reply's decisions the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..pipeline import DecisionLog
from ..result import PackResult, origin_of
from ..sdk import coerce_message

__all__ = ["LastRender", "Recorder"]


@dataclass(frozen=True)
class LastRender:
    """The render a session's wrapper sent last: what a request continuing it answers.

    Attributes:
        receipt: The render without its texts (messages, query, decisions, originals): only
            what ``after=`` reads (the session and the life it was made from).
        count: How many of the request's messages it was rendered from.
        digest: The digest of the last of them, which a request continuing it holds too.
    """

    receipt: PackResult
    count: int
    digest: str

    @classmethod
    def of(
        cls, result: PackResult, messages: Sequence[Any], digest: Callable[[Any], str]
    ) -> LastRender | None:
        """The render ``result`` of a request of ``messages`` (``digest`` says what a message
        says); ``None`` for a session that is not ctxpack's (its results name no life)."""
        if origin_of(result) is None or not messages:
            return None
        at = len(messages) - 1
        texts = ("messages", "input_ids", "query", "artifacts", "decisions")
        emptied: dict[str, Any] = dict(zip(texts, ([], [], None, {}, DecisionLog()), strict=True))
        last = digest(coerce_message(messages[at], at))
        return cls(result.model_copy(update=emptied), len(messages), last)

    def continued_by(self, messages: Sequence[Any], same: Callable[[Any, str], bool]) -> bool:
        """Whether a request of ``messages`` holds the messages this render was made from
        (its last one, compared as a wrapper compares a history: ``same``)."""
        at = self.count - 1
        return len(messages) > at and same(coerce_message(messages[at], at), self.digest)


class _Feed(Protocol):
    @property
    def provider(self) -> str: ...

    def _record(self, reply: Any, after: PackResult | None = None) -> Any: ...

    async def arecord(self, reply: Any, after: PackResult | None = None) -> Any: ...


@dataclass(frozen=True)
class Recorder:
    """A session feed reading the reply to one request (a stream's, at its end), which
    answers the render ``after``."""

    feed: _Feed
    after: PackResult | None

    @property
    def provider(self) -> str:
        return self.feed.provider

    def _record(self, reply: Any) -> Any:
        return self.feed._record(reply, self.after)

    async def arecord(self, reply: Any) -> Any:
        return await self.feed.arecord(reply, self.after)
