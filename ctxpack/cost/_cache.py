"""The provider's prompt cache as :func:`ctxpack.cost.simulate` models it: prefix entries per
model, found by content digest, each living a time-to-live after its last write or read."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from itertools import accumulate
from typing import Any

from .._internal import forks
from .._internal.cache_points import CachePoints, blocks_of, found_point, read_increment
from .._internal.legacy_calls import sent_extras
from .._internal.prefix import common_prefix
from ..adapters.read import counted_messages
from ..caches import ENTRY_OVERHEAD, LRUCache, register
from ..messages import Message, message_bytes
from ..providers import provider_from_model, tools_as_sent
from ..tokens import TokenCounter, checked_tool_tokens, message_sizes

# Message -> (that message, its digest), by identity: the entry holds the message, so its
# identity cannot be recycled while cached. Bounded and cleared as every cache is (a plain dict
# here kept up to 200,000 messages alive, out of reach of clear_caches()).
_KEY_MEMO: LRUCache[int, tuple[Message, bytes]] = LRUCache(
    200_000,
    maxbytes=8 * 2**20,
    weigh=lambda key, entry: ENTRY_OVERHEAD + message_bytes(entry[0]) + 49,
    name="prompt cache keys",
)


def _message_key(message: Message) -> bytes:
    """A content digest of ``message`` as the provider receives it, memoised by identity
    (messages are frozen)."""
    hit = _KEY_MEMO.get(id(message))
    if hit is not None and hit[0] is message:
        return hit[1]
    calls = [c.model_dump(mode="json") for c in message.tool_calls or ()]
    # Everything the provider receives: the extras too (a refusal, a legacy function_call
    # unless tool calls leave it out).
    canon = json.dumps(
        [
            message.role,
            _unmarked(message.content),
            message.name,
            message.tool_call_id,
            calls,
            _unmarked(sent_extras(message)),
        ],
        ensure_ascii=False,
        sort_keys=True,
        default=str,
    )
    digest = hashlib.blake2b(canon.encode("utf-8"), digest_size=16).digest()
    _KEY_MEMO.put(id(message), (message, digest))
    return digest


def _unmarked(value: Any) -> Any:
    """``value`` without its ``cache_control`` markers: a breakpoint says where to cache, it is
    not content (Anthropic's multi-turn recipe moves it to the last block every request, and the
    block it leaves is read from the cache)."""
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


class _ChainMemo:
    """Prefix digests and block counts of recent prompts, reused for the part a new prompt
    shares with one of them by identity (messages are frozen, and the memo holds them, so an
    identity is never recycled while remembered). A session's requests repeat their history:
    each new one then costs only its new messages."""

    def __init__(self, slots: int = 8) -> None:
        self._slots = slots
        self._entries: list[tuple[bytes, tuple[Message, ...], list[bytes], list[int]]] = []
        self._lock = forks.freed_in_child(threading.Lock(), self.clear)
        register(self)

    def clear(self) -> None:
        """Forget every prompt."""
        self._entries = []

    def __call__(
        self, tools_digest: bytes, tool_blocks: int, messages: tuple[Message, ...]
    ) -> tuple[list[bytes], list[int]]:
        with self._lock:
            entries = list(self._entries)
        k, chain, blocks = 0, [tools_digest], [tool_blocks]
        for digest0, seen, seen_chain, seen_blocks in entries:
            if digest0 != tools_digest:
                continue
            shared = common_prefix(messages, seen)
            if shared > k:
                k, chain, blocks = shared, seen_chain[: shared + 1], seen_blocks[: shared + 1]
        chain, blocks = list(chain), list(blocks)
        digest, block = chain[-1], blocks[-1]
        for message in messages[k:]:
            digest = hashlib.blake2b(digest + _message_key(message), digest_size=16).digest()
            block += blocks_of(message)
            chain.append(digest)
            blocks.append(block)
        with self._lock:
            self._entries = [(tools_digest, messages, chain, blocks), *self._entries][: self._slots]
        return chain, blocks


_CHAINS = _ChainMemo()


def _prefix_chain(
    messages_in: Sequence[Any], tools: Sequence[Mapping[str, Any]], counter: TokenCounter
) -> tuple[list[bytes], list[int], list[int]]:
    """Per cache point (after the tools, then after each message): the digest of the prefix up
    to it, its tokens (the last one includes the reply priming), and its blocks."""
    # ctxpack's own copies, shared between calls: what is derived from one (its digest, its
    # tokens) is cached by identity, so a history re-sent costs only its new messages (an
    # Anthropic history is read anew each time, as from_anthropic reads it).
    messages = counted_messages(messages_in)
    # Checked where they entered (simulate's Request); counted beside the messages, as
    # count_tokens() counts them: OpenAI's recipe frames them otherwise with a system prompt.
    tool_tokens = checked_tool_tokens(tools, counter, messages) if tools else 0
    tools_digest = hashlib.blake2b(
        json.dumps(_unmarked(tools), sort_keys=True, default=str).encode("utf-8"), digest_size=16
    ).digest()
    chain, blocks = _CHAINS(tools_digest, len(tools), messages)
    sizes = list(accumulate(message_sizes(counter, messages), initial=tool_tokens))
    # The reply priming is part of the prompt: it belongs to the last prefix.
    sizes[-1] += counter.count_messages([]) if messages else 0
    return chain, sizes, blocks


class PromptCache:
    """The provider's prompt cache: prefix entries per model, each expiring ``life`` seconds
    after its last write or read."""

    def __init__(self, life: float, lookback: int | None) -> None:
        self._life = life
        self._lookback = lookback
        # Per model: each cached prefix's digest, and when its entry expires.
        self._models: dict[str | None, dict[bytes, float]] = {}

    def serve(
        self,
        messages: Sequence[Any],
        tools: Sequence[Mapping[str, Any]],
        model: str | None,
        counter: TokenCounter,
        now: float,
        minimum: int,
        key: str | None,
        cache_points: CachePoints,
    ) -> tuple[int, int, int, int]:
        """Send a prompt (``tools`` first, then ``messages``) to ``model`` at ``now``: its input
        tokens, then how many were billed uncached, written to the cache and read from it.
        Entries it reads or writes live on; nothing shorter than ``minimum`` tokens (the model's
        minimum cacheable length) is written, and entries are written at ``cache_points``. The
        tools count as ``model``'s provider receives them; ``key`` names the model's cache (one
        name for every spelling of the model)."""
        tools = tools_as_sent(tools, provider_from_model(model))
        chain, sizes, blocks = _prefix_chain(messages, tools, counter)
        total = sizes[-1]
        entries = self._models.setdefault(key, {})
        hit = _longest_hit(entries, chain, blocks, now, cache_points, self._lookback)
        read = sizes[hit] if hit is not None else 0
        read = read_increment(model, read)
        if hit is not None:
            entries[chain[hit]] = now + self._life
        if total < minimum:
            return total, total - read, 0, read
        points = range(len(chain)) if cache_points == "message" else (len(chain) - 1,)
        for point in points:
            # Written anew or refreshed: either way it lives on from now.
            if sizes[point] >= minimum:
                entries[chain[point]] = now + self._life
        return total, 0, total - read, read


def _longest_hit(
    cache_: dict[bytes, float],
    chain: list[bytes],
    blocks: list[int],
    now: float,
    cache_points: CachePoints,
    lookback: int | None,
) -> int | None:
    def alive(point: int) -> bool:
        expires = cache_.get(chain[point])
        return expires is not None and expires >= now

    return found_point(blocks, alive, cache_points, lookback)
