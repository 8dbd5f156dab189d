"""Compaction: the older history replaced by a summary; instructions stay verbatim."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Annotated, ClassVar, NamedTuple

from pydantic import AfterValidator, Field, PrivateAttr, field_validator

from .._internal.arguments import callback, sendable
from .._internal.originals import message_original
from ..caches import LRUCache
from ..errors import ConfigError
from ..messages import Message
from ..pipeline import Decision, PackContext, check_context
from ..stages import exchange_starts, exchange_units
from ..store import ArtifactStore, artifact_id, put_original
from ..tokens import REPLY_PRIMING, TokenCounter, message_sizes
from ._digest import extractive_digest
from ._shared import _history, _original_text, _request_points, _StoreModel

__all__ = ["COMPACTION_FLOOR", "NOT_ENOUGH_MESSAGES", "CompactionPoint", "Compactor", "Summarizer"]

# Anthropic's compaction refuses a trigger under this many input tokens.
COMPACTION_FLOOR = 50_000
NOT_ENOUGH_MESSAGES = "Not enough messages to compact."

Summarizer = Callable[[Sequence[Message], str | None], str]
"""Any callable ``(messages, instructions) -> summary text``."""


def _takes_messages_and_instructions(value: Summarizer) -> Summarizer:
    # Checked when given: a wrong arity would otherwise fail at the first compaction, a bare
    # TypeError deep inside a render.
    return callback(value, "summarizer", "(messages, instructions) -> text", 2)


# A summarizer option of a model (Compactor, WindowPolicy).
SummarizerOption = Annotated[Summarizer, AfterValidator(_takes_messages_and_instructions)]


# What a summarizer raises that a stand-in must not hide: a bug in it (a wrong signature, a
# name misspelt, a stub), or a text ctxpack refused (ConfigError). Anything else (a timeout, a
# refused or rate-limited call) is the summarizing model's failure.
_MISTAKES = (
    TypeError,
    NameError,
    AttributeError,
    ImportError,
    AssertionError,
    NotImplementedError,
    RecursionError,
    ConfigError,
)


def summarized_or_digest(
    summarize: Summarizer,
    messages: Sequence[Message],
    instructions: str | None,
    digest: Callable[[], str],
) -> tuple[str, str]:
    """:func:`summarized`, or ``digest()`` when the summarizer fails at run time (a model down
    for the summaries would otherwise take the agent's requests down with it), and what the
    summary's decision then adds: the error. A programming error still raises (``_MISTAKES``):
    a digest standing in would hide the bug from the one who must fix it."""
    try:
        return summarized(summarize, messages, instructions), ""
    except _MISTAKES:
        raise
    except Exception as error:
        failed = f"; the summarizer raised {type(error).__name__}: {error}"[:500]
        return digest(), f"{failed}; the extractive digest summarises instead"


def summarized(summarize: Summarizer, messages: Sequence[Message], instructions: str | None) -> str:
    """What ``summarize`` returns for ``messages``, checked: a text that can be sent (a lone
    surrogate would fail the summary message's own check, an error naming no summarizer)."""
    text = summarize(list(messages), instructions)
    if not isinstance(text, str):
        raise ConfigError(
            f"the summarizer returned {type(text).__name__}, not str; a summarizer is a "
            "callable (messages, instructions) -> text"
        )
    return sendable(text, "the summarizer's text", ConfigError)


class CompactionPoint(NamedTuple):
    """One compaction, decided at the request sent with ``messages[:position]``.

    Attributes:
        position: The request's position.
        start: First position of the history it compacts (after the previous compaction).
        end: Position of the first message kept as is after the summary.
        replaced: Ids of the messages the summary replaces (a previous summary's included).
        summary: The summary message.
    """

    position: int
    start: int
    end: int
    replaced: tuple[str, ...]
    summary: Message


def summary_id_of(replaced: Sequence[str]) -> str:
    """The id of the summary that replaces the messages ``replaced`` (in order): the same
    messages always give the same id, so a request replayed later sends the same prefix."""
    digest = hashlib.blake2b("\x00".join(replaced).encode(), digest_size=6).hexdigest()
    return f"summary-{digest}"


def _verbatim(msg: Message, protected: frozenset[str]) -> bool:
    """Never summarised: instructions (system, developer, user), pinned and protected messages,
    and a provider's own compaction block (it must be sent back byte for byte)."""
    if msg.role in ("system", "developer", "user") or msg.pinned or msg.id in protected:
        return not _is_summary(msg)
    return isinstance(msg.content, list) and any(
        part.get("type") == "compaction" for part in msg.content
    )


def _whole_exchanges(messages: Sequence[Message], verbatim: list[bool]) -> list[bool]:
    """``verbatim`` extended to the whole tool exchange of a call or result kept verbatim (a
    pinned result, a protected call, a server tool's call or its result turns later):
    summarising the other half would leave it orphaned, a request the provider refuses."""
    of = exchange_units(messages).of.tolist()
    kept = {unit for unit, v in zip(of, verbatim, strict=True) if v}
    return [unit in kept for unit in of]


def _is_summary(msg: Message) -> bool:
    meta = msg.metadata.get("ctxpack")
    return isinstance(meta, dict) and "summary_of" in meta


class Compactor(_StoreModel):
    """Replace the older history by a summary when the prompt exceeds ``trigger`` tokens.

    System and developer messages, user messages (instructions and constraints), pinned and
    protected messages (with the rest of their tool exchange) are never summarised: they stay,
    verbatim and in order, before the summary. What is summarised are the assistant turns and
    tool exchanges before the last ``keep_recent`` messages (never splitting a tool exchange);
    the summary is a user message whose ``metadata["ctxpack"]["summary_of"]`` lists the ids it
    replaces, and each original stays in ``result.artifacts`` (and in ``store`` when given); the
    summary names the artifact id of each tool output it replaces
    (:func:`ctxpack.store.artifact_id` of its text). When there is too little to summarise, the
    context is left as it is and a ``kept`` decision says ``"Not enough messages to compact."``.

    Like :class:`ToolResultClearer`, it replays the history request by request and compacts
    where the prompt, with the earlier compactions applied, crosses ``trigger``: the same
    history always gets the same summaries at the same places, and a longer one the same first
    ones. Summaries are memoised by content on the stage (:meth:`clear_cache`), so a model is
    called once per compaction, not once per ``pack()``.

    Args:
        summarizer: Any callable ``(messages, instructions) -> text``; by default
            :func:`extractive_digest`, which needs no model. When it raises at run time (its
            model down, a call refused), the digest summarises instead and the summary's
            decision names the error; a programming error (``TypeError``, ``NameError``, ...)
            still raises.
        trigger: Compact when the prompt exceeds this many tokens; at least 50,000 (the floor
            Anthropic's compaction sets).
        keep_recent: How many of the most recent messages stay as they are.
        instructions: What the summary must keep, in words (``"focus on the auth bug fix"``);
            passed to the summarizer.
        store: Where originals are also put; they are always in ``result.artifacts``. In a
            :class:`~ctxpack.Session`'s pipeline, leave it unset: the session's store is used.

    Example:
        >>> import ctxpack
        >>> seen = []
        >>> def summarize(messages, instructions):
        ...     seen.append((len(messages), instructions))
        ...     return "The agent listed the files."
        >>> call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        >>> history = [
        ...     {"role": "system", "content": "You are a coding agent."},
        ...     {"role": "user", "content": "Never delete files."},
        ...     {"role": "assistant", "content": None, "tool_calls": [call]},
        ...     {"role": "tool", "tool_call_id": "c1", "content": "file.py\\n" * 30_000},
        ...     {"role": "assistant", "content": "There are many files."},
        ...     {"role": "user", "content": "Open the first."},
        ... ]
        >>> compactor = ctxpack.editing.Compactor(
        ...     summarizer=summarize,
        ...     trigger=50_000,
        ...     keep_recent=1,
        ...     instructions="keep the file names",
        ... )
        >>> result = ctxpack.pack(history, budget=200_000, pipeline=ctxpack.Pipeline([compactor]))
        >>> [m.role for m in result.messages]
        ['system', 'user', 'user', 'user']
        >>> seen
        [(3, 'keep the file names')]
    """

    name: ClassVar[str] = "compact"

    summarizer: SummarizerOption | None = Field(default=None, exclude=True)
    trigger: int = 150_000
    keep_recent: int = Field(default=6, ge=0)
    instructions: str | None = None
    store: ArtifactStore | None = Field(default=None, exclude=True)

    # Registered with clear_caches(), as every cache of texts between calls (an erasure
    # reaches it), and safe under threads.
    _cache: LRUCache[str, tuple[str, str]] = PrivateAttr(
        default_factory=lambda: LRUCache(256, maxbytes=16 * 2**20, name="Compactor summaries")
    )

    @field_validator("trigger")
    @classmethod
    def _floor(cls, value: int) -> int:
        if value < COMPACTION_FLOOR:
            raise ValueError(
                f"must be at least {COMPACTION_FLOOR:,} tokens (Anthropic's floor); compacting a "
                "shorter prompt costs a cache rewrite for little gain"
            )
        return value

    def clear_cache(self) -> None:
        """Forget the memoised summaries (:func:`ctxpack.caches.clear_caches` does too)."""
        self._cache.clear()

    def _summarize(self, messages: Sequence[Message]) -> tuple[str, str]:
        """The summary of ``messages`` and what its decision adds (the summarizer's error, the
        digest standing in): memoised either way, so that the same history keeps the same
        summary, and a model down is not called again at every ``pack()``."""
        key = hashlib.sha256(
            json.dumps(
                [[m.id, m.role, _original_text(m)] for m in messages] + [self.instructions],
                ensure_ascii=False,
            ).encode()
        ).hexdigest()
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        instructions = self.instructions

        def digest() -> str:
            return summarized(extractive_digest, messages, instructions)

        if self.summarizer is None:
            made = digest(), ""
        else:
            made = summarized_or_digest(self.summarizer, messages, instructions, digest)
        self._cache.put(key, made)
        return made

    def _tail_start(self, starts: Sequence[bool], start: int, p: int) -> int:
        t = max(start, p - self.keep_recent)
        # Never split a tool exchange: a tail that would open on results takes their call too,
        # and one after a server tool's call its result comes with (or waits for) too.
        while t > start and not starts[t]:
            t -= 1
        return t

    def points(
        self,
        messages: Sequence[Message],
        *,
        counter: TokenCounter,
        protected: frozenset[str] = frozenset(),
    ) -> tuple[list[CompactionPoint], int | None]:
        """The compactions made on ``messages``, and the position of a request that crossed the
        trigger with too little to compact (``None`` if none did).

        ``points(history[:k])`` is the list of ``points(history)`` that happen at or before
        ``k`` whenever ``k`` is a request point. With a ``store``, the tool outputs a summary
        names are put in it, for the summary to name them by the ids the store gives.
        """
        done, refused, _ = self._replay(messages, counter, protected)
        return done, refused

    def _replay(
        self, messages: Sequence[Message], counter: TokenCounter, protected: frozenset[str]
    ) -> tuple[list[CompactionPoint], int | None, str]:
        """:meth:`points`, and what the last compaction's decision adds (:meth:`_summarize`)."""
        messages = _history(messages, counter, protected)
        sizes = message_sizes(counter, messages)
        verbatim = _whole_exchanges(messages, [_verbatim(m, protected) for m in messages])
        starts = exchange_starts(messages)
        by_id = {m.id: m for m in messages}
        done: list[CompactionPoint] = []
        kept_tokens = 0  # verbatim messages before the compacted boundary
        summary_tokens = 0
        start = 0
        refused: int | None = None
        note = ""
        for p in _request_points(messages):
            prompt = REPLY_PRIMING + kept_tokens + summary_tokens + sum(sizes[start:p])
            if prompt <= self.trigger:
                continue
            end = self._tail_start(starts, start, p)
            region = [
                m for m, v in zip(messages[start:end], verbatim[start:end], strict=True) if not v
            ]
            if len(region) < 2:
                refused = p
                continue
            previous = done[-1].summary if done else None
            replaced = (tuple(done[-1].replaced) if done else ()) + tuple(m.id for m in region)
            text, note = self._summarize(([previous] if previous else []) + region)
            summary_id = summary_id_of(replaced)
            # The tool outputs' artifact ids, so that the model can ask for an original back.
            handles = ", ".join(
                f"{mid}={self._tool_artifact(by_id[mid], summary_id)}"
                for mid in replaced
                if by_id[mid].role == "tool"
            )
            summary = Message(
                role="user",
                id=summary_id,
                content=(
                    f"[ctxpack: summary of {len(replaced)} earlier messages, replaced to save "
                    "context; the originals are kept as artifacts"
                    + (f" (tool outputs: {handles})" if handles else "")
                    + f".]\n\n{text}"
                ),
                metadata={
                    "ctxpack": {"summary_of": list(replaced), "instructions": self.instructions}
                },
            )
            kept_tokens += sum(
                s for s, v in zip(sizes[start:end], verbatim[start:end], strict=True) if v
            )
            summary_tokens = counter.count_message(summary)
            done.append(CompactionPoint(p, start, end, replaced, summary))
            start = end
            refused = None
        return done, refused, note

    def _tool_artifact(self, msg: Message, summary_id: str) -> str:
        """The artifact id of a summarised tool output: the store's (stored now), or without a
        store the content hash."""
        text = _original_text(msg)
        if self.store is None:
            return artifact_id(text)
        return put_original(
            self.store, text, message_id=msg.id, kind="compacted_message", summary=summary_id
        )

    def __call__(self, ctx: PackContext, /) -> PackContext:
        check_context(ctx, self)
        messages = ctx.messages
        done, refused, note = self._replay(messages, ctx.counter, ctx.protected)
        if not done:
            if refused is None or not messages:
                return ctx
            return ctx.decide(
                Decision(
                    stage=self.name,
                    action="kept",
                    message_id=messages[-1].id,
                    reason=NOT_ENOUGH_MESSAGES,
                )
            )
        last = done[-1]
        by_id = {m.id: m for m in messages}
        replaced = [mid for mid in last.replaced if mid in by_id]
        gone = set(replaced)
        head = [m for m in messages[: last.end] if m.id not in gone]
        artifacts = dict(ctx.artifacts)
        decisions: list[Decision] = []
        for mid in replaced:
            msg = by_id[mid]
            artifacts.setdefault(mid, msg)
            if self.store is not None and msg.role != "tool":
                # Whole, calls included (a tool output was stored by points(), under the id
                # the summary names).
                put_original(
                    self.store,
                    message_original(msg),
                    message_id=mid,
                    kind="compacted_message",
                    summary=last.summary.id,
                )
            decisions.append(
                Decision(
                    stage=self.name,
                    action="merged",
                    message_id=mid,
                    reason=f"compacted into {last.summary.id}; original kept as an artifact",
                    tokens_before=ctx.tokens(msg),
                    tokens_after=0,
                )
            )
        before = sum(ctx.tokens(by_id[mid]) for mid in replaced)
        decisions.append(
            Decision(
                stage=self.name,
                action="merged",
                message_id=last.summary.id,
                reason=(
                    f"summary of {len(last.replaced)} messages (compaction {len(done)} at message "
                    f"{last.position}){note}"
                ),
                tokens_before=before,
                tokens_after=ctx.tokens(last.summary),
            )
        )
        out = (*head, last.summary, *messages[last.end :])
        return ctx.decide(*decisions, messages=out, artifacts=artifacts)
