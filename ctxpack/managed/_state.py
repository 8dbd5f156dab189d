"""What a managed session remembers between requests, and the cache-bust warnings."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError

from .._internal.options import FieldErrorModel
from .._internal.thinking import has_thinking
from ..errors import ConfigError
from ..messages import Message
from ..pipeline import Decision
from ..providers import preserves_thinking

__all__ = ["WindowEvent", "WindowState", "cache_warnings"]


class WindowEvent(FieldErrorModel):
    """One edit the managed mode made, at one request.

    Attributes:
        request: The request's number (0 for the first render).
        action: ``"cleared"``, ``"compacted"`` or ``"emergency"``.
        tokens_before: The prompt's tokens before the edit.
        tokens_after: Its tokens after.
        rewritten: Tokens the prompt cache writes again: the prompt after the last entry the
            provider finds before the edit point (from the edit point on where every
            message boundary is cached; for a Claude model, the whole prompt, tool
            definitions too, when the edit is over 20 blocks before the end; on any model,
            the whole prompt once the cache expired since the last request).
        cold: Whether the request found no entry of the prompt cache before the edit (it
            expired since the last request, or an earlier edit of the request left none the
            provider finds): the request writes the whole prompt, edited or not, so the edit
            cost nothing more in rewrites, and ``rewritten`` is no guide to what it rewrites
            with the cache warm. ``False`` in a state saved before it was kept.
    """

    model_config = ConfigDict(frozen=True)

    request: int = Field(ge=0)
    action: Literal["cleared", "compacted", "emergency"]
    tokens_before: int = Field(ge=0)
    tokens_after: int = Field(ge=0)
    rewritten: int = Field(ge=0)
    cold: bool = False


# The lists of a WindowState that only grow as the session goes on (see _grown_since).
_GROWING = ("decisions", "events", "compacted", "thinking_cleared", "replies")
# The maps of a WindowState that grow too, an entry at a time (a compaction drops some).
_MAPS = ("cleared", "results_cleared")


class WindowState(FieldErrorModel):
    """What a managed session remembers between requests: one JSON-serialisable object.

    Attributes:
        requests: Renders so far.
        cleared: Message id -> artifact id of its original, for each cleared tool result
            (and each answer an emergency cleared, each pinned message sent as a note because
            its text is pinned again later or re-injected already).
        thinking_cleared: Ids of assistant messages sent without their thinking blocks.
        results_cleared: Result id (an Anthropic block's ``tool_use_id``, a Responses API
            item's ``id``) -> artifact id of its original, for each cleared result of a tool
            the provider ran (sent in its assistant message with a stand-in for its text).
        boundary: Messages of the compact record before this position are summarised (except
            the system prompt and user instructions).
        compacted_length: The compact record's length at the last compaction: the pinned
            content re-injected after the system prompt is what that compaction left, a pin
            appended since changing it only at the next one (``None`` before any).
        summary: The summary's text, once a compaction happened; ``None`` again, until the next
            compaction, once even the summary's header left a request over the window.
        summary_id: The summary message's id (kept while the summary is left out: the pinned
            content is still re-injected).
        index_artifact: The artifact listing every summarised message and its original.
        compacted: Ids of the messages the summary replaces.
        decisions: Every edit, as recorded decisions.
        events: Every edit, with its cache effect.
        replies: Ids of the replies read with ``record_response``, OpenAI's and Anthropic's
            read with ``append=False`` (as a client wrapper reads each): such a reply is read
            once, whoever gives it again.
        last_fingerprint: Model, tools and system prompt of the last request (cache-bust
            warnings).
        last_tokens: The last request's prompt tokens.
        rent: What re-sending the clearable tokens has cost since the last clearing (or
            compaction, which summarises them), in dollars per million tokens (the clearing
            rule).
        compact_rent: What re-sending the compactable tokens (above where the last
            compaction left the prompt) has cost since the last compaction (the compaction
            rule).
        crowded_floor: The tokens every request carried (system prompt, user messages, pinned
            content) when the last warning said they crowd the room; 0 before any.
        rendered: The record's length at the last request: a render of the same record again
            (a retry) is the same request, and adds no rent.
        cache_ends: Ids of the last messages of the recent requests whose prompt cache
            entries still hold, the newest last: an edit since forgets those at or after its
            edit point (what the edits' ``rewritten`` figures find). ``None`` in a state saved
            before they were kept: every message a reply follows counts as one until the next
            request.
        rendered_at: When the last render ended (seconds since the epoch; after any
            summarizer's call, so as near as the session knows to when its request left): a
            render beginning more than the policy's ``ttl`` later finds the prompt cache
            expired, and an edit then rewrites nothing the request would not write anyway.
            ``None`` before the first (or in a state saved before it was kept).
    """

    model_config = ConfigDict(extra="forbid")

    requests: int = Field(default=0, ge=0)
    cleared: dict[str, str] = Field(default_factory=dict)
    thinking_cleared: list[str] = Field(default_factory=list)
    results_cleared: dict[str, str] = Field(default_factory=dict)
    boundary: int = Field(default=0, ge=0)
    compacted_length: int | None = Field(default=None, ge=0)
    summary: str | None = None
    summary_id: str | None = None
    index_artifact: str | None = None
    compacted: list[str] = Field(default_factory=list)
    decisions: list[Decision] = Field(default_factory=list)
    events: list[WindowEvent] = Field(default_factory=list)
    replies: list[str] = Field(default_factory=list)
    last_fingerprint: dict[str, str | None] | None = None
    last_tokens: int = Field(default=0, ge=0)
    rent: float = Field(default=0.0, ge=0)
    compact_rent: float = Field(default=0.0, ge=0)
    crowded_floor: int = Field(default=0, ge=0)
    rendered: int = Field(default=0, ge=0)
    cache_ends: list[str] | None = None
    rendered_at: float | None = None

    def _grown_since(self, before: WindowState) -> dict[str, Any]:
        """What the parts that grow with the session (``_GROWING``, ``cleared``) gained since
        ``before``, as JSON for a session store's entry: a store then writes each edit once,
        not the whole history again at every append. A list that did not just grow (replaced
        by another) is written from where the two differ: ``keep`` items, then ``add``."""
        grown: dict[str, Any] = {}
        for name in _GROWING:
            old, new = getattr(before, name), getattr(self, name)
            keep = len(old)
            if len(new) < keep or new[:keep] != old:
                keep = next(
                    (k for k, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
                    min(len(old), len(new)),
                )
            if keep < len(old) or len(new) > keep:
                added = new[keep:]
                if name in ("decisions", "events"):
                    added = [item.model_dump(mode="json") for item in added]
                grown[name] = {"keep": keep, "add": added}
        # A compaction drops from `cleared` the messages it summarised.
        for name in _MAPS:
            old_map, new_map = getattr(before, name), getattr(self, name)
            dropped = [mid for mid in old_map if mid not in new_map]
            changed = {
                mid: artifact for mid, artifact in new_map.items() if old_map.get(mid) != artifact
            }
            if dropped or changed:
                grown[name] = {"drop": dropped, "set": changed}
        return grown

    def _grow(self, grown: Mapping[str, Any]) -> None:
        """Apply what :meth:`_grown_since` wrote (in place: a snapshot holds copies); with
        ``"whole"``, on empty lists."""
        if grown.get("whole"):
            for name in _GROWING:
                getattr(self, name).clear()
            for name in _MAPS:
                getattr(self, name).clear()
        parsed = WindowState.model_validate(
            {name: grown[name]["add"] for name in _GROWING if name in grown}
        )
        for name in _GROWING:
            if name in grown:
                items = getattr(self, name)
                del items[grown[name]["keep"] :]
                items.extend(getattr(parsed, name))
        for name in _MAPS:
            if name in grown:
                mapping = getattr(self, name)
                for mid in grown[name]["drop"]:
                    mapping.pop(mid, None)
                mapping.update(grown[name]["set"])

    def _lasting(self) -> dict[str, Any]:
        """The rest of the state, as JSON: what a session store keeps whole, each append
        replacing it (small, and not growing with the session)."""
        return self.model_dump(mode="json", exclude={*_GROWING, *_MAPS})

    def _with_lasting(self, data: Mapping[str, Any]) -> WindowState:
        """This state with the rest (:meth:`_lasting`) read back from ``data``."""
        lasting = WindowState.model_validate(data)
        updated = self._copy()
        for name in data:
            setattr(updated, name, getattr(lasting, name))
        return updated

    def _copy(self) -> WindowState:
        """A copy sharing no container with this state: ``model_copy(deep=True)``'s result, at
        the cost of copying its lists and dicts (what they hold is immutable: strings and frozen
        models), not of rebuilding every decision."""
        copied = self.model_copy()
        for name, value in copied.__dict__.items():
            if isinstance(value, list | dict):
                copied.__dict__[name] = value.copy()
        return copied

    def to_json(self) -> str:
        """The state as JSON (what a session store saves)."""
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str | bytes) -> WindowState:
        """A state back from :meth:`to_json`.

        Raises:
            ConfigError: the text is not a saved window state.
        """
        try:
            return cls.model_validate_json(text)
        except ConfigError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            # The first problem on one line: the text itself may be long.
            err = exc.__cause__.errors()[0]
            where = ".".join(str(part) for part in err["loc"])
            message = str(err["msg"]).removeprefix("Value error, ")
            raise ConfigError(
                f"not a saved WindowState: {where + ': ' if where else ''}{message}"
            ) from exc.__cause__


def cache_warnings(
    state: WindowState,
    *,
    model: str | None,
    tools: Sequence[Mapping[str, Any]],
    messages: Sequence[Message],
    tokens: int,
    preserved_thinking: bool | None = None,
) -> list[Decision]:
    """Warnings for what invalidates the prompt cache since the last request: another model,
    another tool set, another system prompt. Each says how many tokens the cache writes again
    (the whole prompt: tools and system prompt come first), and, on a model with preserved
    thinking (``preserved_thinking``, by default as the model's name says), that the thinking
    blocks of earlier turns fail its prefix check after another tool set or system prompt.
    Updates ``state``'s fingerprint of the last request."""
    system = [m for m in messages[:2] if m.role in ("system", "developer")]
    fingerprint: dict[str, str | None] = {
        "model": model,
        "tools": _digest(list(tools)),
        "system": _digest([m.model_dump(mode="json", include={"role", "content"}) for m in system]),
    }
    last = state.last_fingerprint
    state.last_fingerprint = fingerprint
    if last is None or not messages:
        return []
    changed = []
    if last.get("model") != model:
        changed.append(f"the model changed from {last.get('model')!r} to {model!r}")
    if last.get("tools") != fingerprint["tools"]:
        changed.append("the tool definitions changed")
    if last.get("system") != fingerprint["system"]:
        changed.append("the system prompt changed")
    if not changed:
        return []
    reason = (
        f"{'; '.join(changed)}: the prompt cache is lost, and this request writes its "
        f"{tokens} tokens again"
    )
    if preserved_thinking is None:
        preserved_thinking = preserves_thinking(model)
    prefixed = (
        last.get("tools") != fingerprint["tools"] or last.get("system") != fingerprint["system"]
    )
    if preserved_thinking and prefixed and any(map(has_thinking, messages)):
        reason += (
            "; the thinking blocks of earlier turns now fail the model's prefix check (preserved "
            "thinking): the API refuses the request or drops them. Keep the system prompt and "
            "tools as they were and add new instructions as a message instead"
        )
    warning = Decision(
        stage="cache",
        action="warned",
        message_id=messages[0].id,
        reason=reason,
        tokens_before=tokens,
        tokens_after=tokens,
    )
    # Not kept in ``state``: the warning is about this request, and a later render listing it
    # again would read as another lost cache.
    return [warning]


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]
