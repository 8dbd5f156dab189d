"""PackResult: what pack() returns, with the trace of every decision."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict, Field

from ._internal.arguments import string
from ._internal.arguments import tokens as check_tokens
from ._internal.options import FieldErrorModel
from .errors import ConfigError
from .messages import Message
from .pipeline import Decision, DecisionLog

if TYPE_CHECKING:
    from .adapters import AnthropicPayload

__all__ = ["PackResult"]


class PackResult(FieldErrorModel):
    """The packed conversation and how it came to be.

    Attributes:
        messages: The messages to send, chronological.
        tokens: Exactly what they cost as a prompt with ``counter``
            (``count_tokens(result.messages, model=...)``).
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
        artifacts: Originals of messages that were compressed or cleared, by id.
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
    artifacts: dict[str, Message] = Field(default_factory=dict)

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
        """Every decision about one message, in order."""
        return [d for d in self.decisions if d.message_id == message_id]

    def original(self, message_id: str) -> Message | None:
        """The original of a compressed or cleared message, or ``None`` if it was not changed."""
        return self.artifacts.get(string(message_id, "message_id"))

    def to_openai(self) -> list[dict[str, Any]]:
        """The messages as OpenAI Chat Completions dicts."""
        from .adapters import to_openai

        return to_openai(self.messages)

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
