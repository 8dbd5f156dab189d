"""The managed mode's configuration: the window policy, and the pinned content it re-injects."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from .._internal.arguments import MOST, check_text
from .._internal.options import CheckedModel, FieldErrorModel
from ..cost import price
from ..editing import SummarizerOption
from ..messages import Message
from ..providers import preserves_thinking

__all__ = ["DEFAULT_PINNED_BUDGET", "DEFAULT_SKILL_BUDGET", "PinnedText", "WindowPolicy"]

DEFAULT_SKILL_BUDGET = 5_000
DEFAULT_PINNED_BUDGET = 25_000
# The smallest of 16k, 20k, 24k, 28k, 32k, 36k, 40k and 48k that keeps the evidence present
# within half a point of 48k's on every tune set (benchmarks/long_sessions.py at 64k: the tune
# halves of the long dev sessions, single and chained by 4, and of the unseen sessions chained by
# 4 and by 12). About the managed room of a 32k window: a 64k window is managed as a 32k one would
# be.
DEFAULT_MANAGED_ROOM = 24_000
_PINNED_KEY = "pinned_kind"
# The shares a server-side policy takes unless given (see WindowPolicy._server_side_defaults).
SERVER_SIDE_DEFAULTS = {"clear_at": 0.35, "compact_at": 0.6, "keep": 5}


class PinnedText(FieldErrorModel):
    """Content re-injected after a compaction: a memory file (whole) or a skill (within budgets).

    Attributes:
        name: What it is called (``"CLAUDE.md"``, ``"deploy-skill"``).
        text: Its content.
        kind: ``"memory"`` (re-injected whole) or ``"skill"`` (cut to its head within budgets).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Strict: bytes are not a text (pydantic would decode them as UTF-8 unasked).
    name: str = Field(min_length=1, strict=True)
    text: str = Field(strict=True)
    kind: Literal["memory", "skill"] = "skill"

    @field_validator("name", "text")
    @classmethod
    def _sendable(cls, value: str, info: ValidationInfo) -> str:
        check_text(value, str(info.field_name))  # a lone surrogate cannot be sent as UTF-8
        return value

    def message(self) -> Message:
        """The user message that brings it into the conversation (what ``Session.pin`` adds)."""
        return Message(
            role="user",
            content=self.text,
            metadata={"ctxpack": {_PINNED_KEY: self.kind, "pinned_name": self.name}},
        )


class WindowPolicy(CheckedModel):
    """How a managed session keeps every request within its window.

    Args:
        window: The model's context window, in tokens.
        reply_room: Tokens kept free for the reply; by default an eighth of the window, at most
            8,192.
        clear_at: Clear old tool results once the prompt passes this share of the managed room:
            the room (the window less the reply room and the tool definitions) above what
            every request carries (system prompt, user instructions, and pinned content as a
            compaction re-injects it), at most ``managed_room`` tokens.
        keep: How many of the most recent tool results a clearing keeps. A clearing rewrites
            the cache from the first result it clears, and a compaction soon summarises those
            results anyway: the 20 kept by default leave most sessions to compaction alone.
        clear_at_least: A clearing that would remove fewer tokens is not made (as
            :class:`~ctxpack.editing.ToolResultClearer`'s, and Anthropic's
            ``clear_tool_uses_20250919`` edit's, to which a server-side policy sends it),
            but when the request would not fit the window otherwise; 0 (the default): no
            minimum, and none sent. Client-side, a clearing already waits until its batch pays
            for the cache write it causes; server-side, the provider clears at every crossing
            of ``clear_at``, and this minimum is what keeps a clearing from breaking the cache
            for a few tokens.
        compact_at: Past this share of the managed room, compact once re-sending what a
            compaction removes, since the last one, has cost the cache write it causes, or at
            once past midway between this share and the whole room.
        keep_recent: How many of the most recent messages a compaction keeps as they are,
            fewer when they pass a quarter of where it lands (the summary gets the rest), but
            never the last call's results.
        summary_share: The share of the managed room a summary may take (the digest is cut to
            it; a summarizer's longer text to its head, the whole text stored as an artifact
            that a note ending the summary names).
        instructions_share: The share of the room the user messages after the first (the
            task) may take verbatim. Past it, the next request compacts the oldest of them into
            the summary, down to half this share, their originals kept as artifacts: a chat
            whose user turns alone outgrow the window goes on. Under the share, they are
            summarised all at once if no request could be sent otherwise. The system prompt,
            the first user message and those pinned (``pinned=True``) are never summarised.
            ``None``: every user message stays verbatim, and a request that cannot hold them
            raises :class:`~ctxpack.BudgetExceededError`.
        managed_room: The most tokens above what every request carries that the shares above
            apply to. Every request re-sends the conversation, so a bigger window need not
            mean a bigger prompt: past this size, re-sending costs more than the compactions
            that keep the prompt small. The default was chosen at 64k (well below the room of
            a 64k window, it traded under half a point of evidence for a smaller bill): a
            bigger window is managed as a smaller one. ``None``: the whole room. The window
            stays the hard limit either way; a server-side policy's triggers are shares of the
            whole room.
        summarizer: ``(messages, instructions) -> text``; by default
            :func:`~ctxpack.editing.extractive_digest`, which needs no model. When it raises
            (but for a programming error: ``TypeError``, ``NameError``...), the digest
            summarises instead, and the summary's decision names the error.
        instructions: What a summary must keep, in words.
        keep_thinking: Keep the thinking blocks (and OpenAI reasoning items) of this many of
            the last assistant turns (as Anthropic's ``clear_thinking_20251015``); the older
            ones go with the next clearing.
            ``None`` keeps them all; 0 keeps none, not even the last turn's, which Anthropic
            needs while its tool calls are answered with thinking on. Server-side, at least 1
            (Anthropic keeps the thinking of one turn at least).
        preserved_thinking: Whether the model checks each thinking block sent back against
            what came before it (Anthropic's preserved thinking): an edit then also clears the
            thinking of every assistant turn after it, which the check would refuse or drop,
            and so a clearing of old thinking (``keep_thinking``) clears every later turn's
            too. ``None``: by the session's model name
            (:func:`~ctxpack.providers.preserves_thinking`).
        skill_budget: Tokens each skill may take when re-injected (its head is kept).
        pinned_budget: Tokens all skills together may take when re-injected (oldest dropped
            first).
        server_side: Leave the edits to the provider: :func:`render_window` only checks that
            the system prompt fits the room, and the session produces the provider's
            ``context_management`` field. The provider edits whenever a trigger is crossed and
            bills its compaction as a summary request, so ``clear_at`` and ``compact_at`` then
            default to 0.35 and 0.6 of the room, and ``keep`` to 5.
        model: Whose prices decide whether a clearing pays; by default the session's model when
            it is priced, else ``claude-sonnet-4-5``. Its provider's prompt cache (else the
            session's model's, else ``claude-sonnet-4-5``'s) also says what an edit writes
            again: a Claude model's cache, one breakpoint at the end of each request, finds
            no entry more than 20 blocks back, so an edit further back rewrites the whole
            prompt; another provider caches every message boundary.
        ttl: The prompt cache's lifetime the requests ask for: ``"5m"`` or ``"1h"`` (an
            Anthropic ``cache_control`` with ``"ttl": "1h"``). It picks the write price an edit
            must pay for (``cache_write_5m`` or ``cache_write_1h``, 1.25 and 2 times the input
            price for Anthropic): with the dearer write, clearings and compactions wait longer.

    Example:
        >>> policy = WindowPolicy(window=64_000)
        >>> policy.room(tool_tokens=0)
        56000
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    window: int = Field(ge=1_024, le=MOST)
    reply_room: int | None = Field(default=None, ge=0)
    clear_at: float = Field(default=0.1, gt=0, le=1)
    keep: int = Field(default=20, ge=0)
    clear_at_least: int = Field(default=0, ge=0)
    compact_at: float = Field(default=0.35, gt=0, le=1)
    keep_recent: int = Field(default=6, ge=1)
    summary_share: float = Field(default=0.25, gt=0, lt=1)
    instructions_share: float | None = Field(default=0.5, gt=0, lt=1)
    managed_room: int | None = Field(default=DEFAULT_MANAGED_ROOM, ge=1_000)
    summarizer: SummarizerOption | None = Field(default=None, exclude=True)
    instructions: str | None = None
    keep_thinking: int | None = Field(default=None, ge=0)
    preserved_thinking: bool | None = None
    skill_budget: int = Field(default=DEFAULT_SKILL_BUDGET, ge=0)
    pinned_budget: int = Field(default=DEFAULT_PINNED_BUDGET, ge=0)
    server_side: bool = False
    model: str | None = None
    ttl: Literal["5m", "1h"] = "5m"

    @model_validator(mode="before")
    @classmethod
    def _server_side_defaults(cls, data: Any) -> Any:
        # A provider edits at every crossing of its triggers, without the rule that waits until
        # an edit pays for its cache write, and its compaction is a billed summary: its
        # triggers default higher.
        if isinstance(data, dict) and data.get("server_side"):
            data = {**SERVER_SIDE_DEFAULTS, **data}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> WindowPolicy:
        if self.reply_room is not None and self.reply_room >= self.window:
            raise ValueError(
                f"reply_room ({self.reply_room}) must be smaller than the window ({self.window})"
            )
        if self.clear_at > self.compact_at:
            raise ValueError(
                f"clear_at ({self.clear_at}) must not exceed compact_at ({self.compact_at}): "
                "clearing comes before compaction"
            )
        if self.server_side and self.keep_thinking == 0:
            # Anthropic's clear_thinking_20251015 takes {"type": "thinking_turns", "value": N}
            # with N > 0 only (its context-editing docs), and has no form that clears every
            # turn's thinking: the field sent would be refused with every request.
            raise ValueError(
                "keep_thinking=0 cannot be sent server-side: Anthropic's clear_thinking_20251015 "
                "keeps the thinking of at least the last turn (thinking_turns > 0); give "
                "keep_thinking=1, or manage the window client-side (server_side=False)"
            )
        if self.model is not None:
            price(self.model)  # raises ConfigError listing the known models
        return self

    def checks_thinking_prefix(self, model: str | None) -> bool:
        """Whether the session's ``model`` checks each thinking block's prefix: as
        ``preserved_thinking`` says, else as its name does."""
        if self.preserved_thinking is not None:
            return self.preserved_thinking
        return preserves_thinking(model)

    @property
    def reserve(self) -> int:
        """The tokens kept for the reply."""
        return self.reply_room if self.reply_room is not None else min(8_192, self.window // 8)

    def room(self, *, tool_tokens: int) -> int:
        """The tokens the messages may take: the window less the reply room and the tools."""
        return self.window - self.reserve - tool_tokens
