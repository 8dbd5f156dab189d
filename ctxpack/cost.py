"""What a request costs: prices per model, the prompt cache's economics, and bills.

Prices are US dollars per million tokens. The shipped table (``ctxpack/data/prices.json``) carries
its date and sources; :class:`PriceTable` loads your own, merges it over the shipped one, or
imports a LiteLLM-format price map. :func:`simulate` replays the requests a session sent through
a model of the provider's prompt cache and returns a :class:`Bill`; :func:`filtering_economics`
is the what-if sum of putting a small model in front of a large one.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from functools import cache
from importlib import resources
from itertools import accumulate
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ._internal.arguments import finite, tool_definitions
from ._internal.arguments import tokens as check_tokens
from ._internal.options import CheckedModel, invalid_option
from ._internal.prefix import common_prefix
from .errors import ConfigError
from .messages import Message, owned_messages
from .tokens import CounterLike, TokenCounter, get_counter, message_sizes, tool_definition_tokens

__all__ = [
    "Bill",
    "FilteringEconomics",
    "Price",
    "PriceTable",
    "Request",
    "RequestCost",
    "filtering_economics",
    "price",
    "resolve_model_name",
    "shipped_prices",
    "simulate",
]

MILLION = 1_000_000
TTL_SECONDS: dict[str, float] = {"5m": 300.0, "1h": 3600.0}
# The minimum cacheable prompt Anthropic publishes for Sonnet, and OpenAI's: a shorter prefix is
# billed as plain input and nothing is written. Some models need more (Anthropic lists 2,048 or
# 4,096 for some Haiku and Opus versions): pass min_cacheable_tokens.
DEFAULT_MIN_CACHEABLE = 1024
# Anthropic looks for an earlier cache entry at most this many content blocks before a
# breakpoint (its prompt-caching guide); an entry further back is not found.
DEFAULT_LOOKBACK = 20


class Price(CheckedModel):
    """Dollars per million tokens for one model.

    Args:
        input: Uncached input.
        output: Output.
        cache_write_5m: Input written to the cache with a 5-minute lifetime.
        cache_write_1h: Input written to the cache with a 1-hour lifetime.
        cache_read: Input read from the cache.
        context_window: The model's context window in tokens, when known (used by
            :func:`ctxpack.context_usage` for the free space).
        date: When this price was read (ISO date), when known.
        source: Where it was read, when known.

    Example:
        >>> p = Price(input=3, output=15, cache_write_5m=3.75, cache_write_1h=6, cache_read=0.3)
        >>> round(p.cache_read / p.input, 3)  # reads at a tenth of the input price
        0.1
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_write_5m: float = Field(ge=0)
    cache_write_1h: float = Field(ge=0)
    cache_read: float = Field(ge=0)
    context_window: int | None = Field(default=None, gt=0)
    date: str | None = None
    source: str | None = None


class PriceTable(CheckedModel):
    """A dated price table: prices per model name, with where they come from.

    Args:
        date: When the prices were read (ISO date).
        sources: Where they were read (URLs, documents).
        prices: Model name to :class:`Price`.
        note: Anything a reader of the table must know.

    Example:
        >>> table = shipped_prices().merge(
        ...     PriceTable(date="2026-12-01", sources=["my contract"], prices={
        ...         "my-model": Price(input=1, output=2, cache_write_5m=1.25,
        ...                           cache_write_1h=2, cache_read=0.1)}))
        >>> table.price("my-model").output, "claude-sonnet-4-5" in table.prices
        (2.0, True)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    date: str
    sources: list[str] = Field(default_factory=list)
    prices: dict[str, Price]
    note: str = ""

    def price(self, model: str) -> Price:
        """The price of ``model``, by its name as the provider's API takes it.

        A dated name (``gpt-4o-2024-08-06``, ``claude-sonnet-4-5-20250929``) has its own row
        when its price differs, else resolves to its family's; a router's provider prefix
        (``openai/gpt-4o``, ``anthropic/...``) and letter case are ignored.

        Raises:
            ConfigError: the model is not in the table (the message lists the nearest names).
        """
        name = resolve_model_name(model, self.prices)
        if name is None:
            near = difflib.get_close_matches(_normalised(model), list(self.prices), n=5)
            families = sorted(n for n in self.prices if not _DATE_SUFFIX.search(n))
            hint = f"nearest: {', '.join(near)}; " if near else ""
            hint += f"known models: {', '.join(families)} (and their dated names)"
            raise ConfigError(
                f"no price for model {model!r} in the table of {self.date}; {hint}. Pass a Price "
                "of your own, or merge a table that has it (PriceTable.load, "
                "PriceTable.from_litellm)"
            )
        return self.prices[name]

    def merge(self, other: PriceTable) -> PriceTable:
        """A new table: this one's prices overridden and extended by ``other``'s.

        The date is the later of the two, and the sources are both lists.
        """
        sources = list(dict.fromkeys([*self.sources, *other.sources]))
        notes = " ".join(n for n in (self.note, other.note) if n)
        return PriceTable(
            date=max(self.date, other.date),
            sources=sources,
            prices={**self.prices, **other.prices},
            note=notes,
        )

    @classmethod
    def load(cls, path: str | Path) -> PriceTable:
        """Read a table in the shipped format: ``{"_meta": {"date", "sources", "note"},
        "<model>": {"input": ..., ...}, ...}``.

        Raises:
            ConfigError: the file cannot be read, is not JSON, or a row is not a valid price.
        """
        return cls._from_rows(_read_json_file(path), origin=str(path))

    @classmethod
    def from_litellm(
        cls, data: Mapping[str, Any] | str | Path, *, date: str = "", source: str = "LiteLLM"
    ) -> PriceTable:
        """Import a LiteLLM-format price map (``model_prices_and_context_window.json``).

        LiteLLM prices are dollars per token: ``input_cost_per_token``,
        ``output_cost_per_token``, ``cache_creation_input_token_cost`` (5-minute writes),
        ``cache_creation_input_token_cost_above_1hr`` (1-hour writes) and
        ``cache_read_input_token_cost``. A model without a write price writes at its input price
        (OpenAI bills no write premium), one without a read price reads at its input price (no
        cache discount). Rows without input and output prices (images, audio, the
        ``sample_spec`` row) are skipped. ``max_input_tokens`` becomes the context window.

        Args:
            data: The parsed map, or a path to the JSON file.
            date: When the map was taken.
            source: Where it came from.

        Raises:
            ConfigError: the file cannot be read or is not a JSON object, or a price is negative.

        Example:
            >>> PriceTable.from_litellm({"m": {"input_cost_per_token": 3e-06,
            ...     "output_cost_per_token": 1.5e-05}}).price("m").cache_write_5m
            3.0
        """
        raw = _read_json_file(data) if isinstance(data, (str, Path)) else data
        if not isinstance(raw, Mapping):
            raise ConfigError("a LiteLLM price map is a JSON object: model name -> row")
        prices: dict[str, Price] = {}
        for model, row in raw.items():
            if not isinstance(row, Mapping):
                continue
            cost_in, cost_out = row.get("input_cost_per_token"), row.get("output_cost_per_token")
            if not isinstance(cost_in, (int, float)) or not isinstance(cost_out, (int, float)):
                continue
            write_5m = row.get("cache_creation_input_token_cost", cost_in)
            write_1h = row.get("cache_creation_input_token_cost_above_1hr", write_5m)
            read = row.get("cache_read_input_token_cost", cost_in)
            window = row.get("max_input_tokens")
            try:
                prices[str(model)] = Price(
                    input=_per_million(cost_in),
                    output=_per_million(cost_out),
                    cache_write_5m=_per_million(write_5m),
                    cache_write_1h=_per_million(write_1h),
                    cache_read=_per_million(read),
                    context_window=window if isinstance(window, int) and window > 0 else None,
                )
            except (ValidationError, TypeError, ValueError) as exc:
                raise ConfigError(f"LiteLLM row {model!r} is not a valid price: {exc}") from exc
        return cls(date=date, sources=[source], prices=prices)

    @classmethod
    def _from_rows(cls, raw: Any, *, origin: str) -> PriceTable:
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{origin}: a price table is a JSON object: model name -> price")
        meta = raw.get("_meta", {})
        if not isinstance(meta, Mapping):
            raise ConfigError(f"{origin}: '_meta' must be an object with date and sources")
        try:
            prices = {
                name: Price.model_validate(row)
                for name, row in raw.items()
                if not name.startswith("_")
            }
            return cls(
                date=str(meta.get("date", "")),
                sources=list(meta.get("sources", [])),
                prices=prices,
                note=str(meta.get("note", "")),
            )
        except ValidationError as exc:
            raise ConfigError(f"{origin}: not a valid price table: {exc}") from exc


# A release date at the end of a model name: gpt-4o-2024-08-06, claude-opus-4-5-20251101, and
# Vertex's claude-opus-4-5@20251101.
_DATE_SUFFIX = re.compile(r"(?:[-@]\d{4}-\d{2}-\d{2}|[-@]\d{8})$")


def _normalised(model: str) -> str:
    return model.strip().lower().rpartition("/")[2]


def resolve_model_name(model: str, known: Mapping[str, Any]) -> str | None:
    """The name in ``known`` that ``model`` stands for, or ``None``.

    Tried in turn: the name as given; without a router's provider prefix and in lower case;
    then without a release date at its end.

    Example:
        >>> resolve_model_name("openai/gpt-4o-2024-08-06", {"gpt-4o": 1})
        'gpt-4o'
    """
    if model in known:
        return model
    name = _normalised(model)
    if name in known:
        return name
    undated = _DATE_SUFFIX.sub("", name)
    return undated if undated in known else None


def _per_million(cost_per_token: Any) -> float:
    # Through Decimal: 3e-06 * 1e6 in floats is 2.9999999999999996.
    return float(Decimal(str(cost_per_token)) * MILLION)


def _read_json_file(path: str | Path) -> Any:
    try:
        return json.loads(Path(path).read_text("utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the price table {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}") from exc


@cache
def _shipped() -> PriceTable:
    text = resources.files("ctxpack").joinpath("data/prices.json").read_text("utf-8")
    return PriceTable._from_rows(json.loads(text), origin="ctxpack/data/prices.json")


def shipped_prices() -> PriceTable:
    """The price table shipped with ctxpack, with its date and sources.

    Example:
        >>> table = shipped_prices()
        >>> bool(table.date and table.sources)
        True
    """
    return _shipped()


def price(model: str) -> Price:
    """The shipped price of ``model``.

    Raises:
        ConfigError: the model is not in the table (the message lists the known models).

    Example:
        >>> price("claude-sonnet-4-5").input
        3.0
    """
    return _shipped().price(model)


# --------------------------------------------------------------------------------------------
# Requests and bills


class Request(CheckedModel):
    """One request a session sent: its messages, and optionally tools, output and model.

    Args:
        messages: The prompt's messages (``Message`` objects or OpenAI-style dicts).
        tools: Tool definitions sent with it; they come first in the cached prefix.
        output_tokens: Tokens the model answered with.
        model: Which model served it; each model has its own cache. ``None`` is the default
            model of :func:`simulate`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    messages: list[Any]
    tools: list[dict[str, Any]] | None = None
    output_tokens: int = Field(default=0, ge=0)
    model: str | None = None

    @field_validator("tools")
    @classmethod
    def _known_tool_shapes(cls, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        if tools is not None:
            tool_definitions(tools)
        return tools


class _Tokens(BaseModel):
    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    uncached_input_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0

    @property
    def cache_hit_rate(self) -> float:
        """Share of the input tokens read from the cache (0 when there was no input)."""
        return self.cache_read_tokens / self.input_tokens if self.input_tokens else 0.0


class RequestCost(_Tokens):
    """One request of a :class:`Bill`.

    Attributes:
        index: Its position in the replayed sequence.
        model: The model that served it (``None``: the default).
        input_tokens: The whole prompt: uncached + written + read.
        uncached_input_tokens: Input billed at the plain input price.
        cache_write_tokens: Input written to the cache.
        cache_read_tokens: Input read from the cache.
        output_tokens: Output.
        cost: Dollars.
    """

    index: int
    model: str | None = None


class Bill(_Tokens):
    """What a sequence of requests cost, in total and per request (``requests``).

    The token fields and ``cost`` are the sums of the rows'; ``cache_hit_rate`` is the share of
    input read from the cache.
    """

    requests: list[RequestCost] = Field(default_factory=list)
    ttl: str = "5m"

    def summary(self) -> str:
        """One line: dollars, input, the cache's share, output."""
        return (
            f"${self.cost:.4f} for {len(self.requests)} requests: {self.input_tokens} input "
            f"tokens ({self.cache_hit_rate:.1%} read from cache, {self.cache_write_tokens} "
            f"written, {self.uncached_input_tokens} uncached), {self.output_tokens} output"
        )


# --------------------------------------------------------------------------------------------
# The prompt-cache model


class _MessageKeys:
    """A content digest per message, memoised by identity (messages are frozen)."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Message, bytes]] = {}
        self._lock = threading.Lock()

    def __call__(self, message: Message) -> bytes:
        hit = self._memo.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        calls = [c.model_dump(mode="json") for c in message.tool_calls or ()]
        canon = json.dumps(
            [message.role, message.content, message.name, message.tool_call_id, calls],
            ensure_ascii=False,
            sort_keys=True,
            default=str,
        )
        digest = hashlib.blake2b(canon.encode("utf-8"), digest_size=16).digest()
        with self._lock:
            if len(self._memo) >= 200_000:
                self._memo.clear()
            self._memo[id(message)] = (message, digest)
        return digest


_KEYS = _MessageKeys()


def _as_request(item: Any, index: int) -> Request:
    if isinstance(item, Request):
        return item
    if isinstance(item, Mapping):
        try:
            return Request.model_validate(dict(item))
        except ValidationError as exc:
            raise invalid_option(f"request {index}", Request, exc) from exc
    if isinstance(item, (str, bytes)) or not isinstance(item, Iterable):
        raise ConfigError(
            f"request {index}: expected a list of messages or a Request, got {type(item).__name__}"
        )
    return Request(messages=list(item))


def _seconds(value: float | datetime) -> float:
    return value.timestamp() if isinstance(value, datetime) else float(value)


def simulate(
    requests: Sequence[Request | Sequence[Message | Mapping[str, Any]] | Mapping[str, Any]],
    *,
    price: Price | Mapping[str, Price],
    ttl: Literal["5m", "1h"] = "5m",
    timestamps: Sequence[float | datetime] | None = None,
    counter: CounterLike | None = None,
    cache_points: Literal["request", "message"] = "request",
    min_cacheable_tokens: int = DEFAULT_MIN_CACHEABLE,
    lookback: int | None = DEFAULT_LOOKBACK,
) -> Bill:
    """Bill a sequence of requests through a model of the provider's prompt cache.

    The prompt is read as a prefix of blocks: the tool definitions first, then each message. A
    request reads from the cache the longest prefix of it that an earlier request of the same
    model left there and that is still alive; the rest of the prompt is written to the cache
    (at the ``ttl`` write price) if the whole prompt reaches ``min_cacheable_tokens``, else billed
    as plain input. Every entry lives ``ttl`` after its last write or read. Each model has its own
    cache, so switching model rewrites the whole history at the target's write price.

    Args:
        requests: Each a list of messages, or a :class:`Request` (or a mapping of its fields)
            with tools, output tokens and model.
        price: One :class:`Price` for every request, or prices per model name (a request without
            a model uses the entry ``"default"``).
        ttl: The cache lifetime the requests ask for: ``"5m"`` or ``"1h"``.
        timestamps: When each request was sent (seconds or datetimes); ``None`` treats the
            session as continuous, with no entry ever expiring.
        counter: Token counter (see :func:`ctxpack.tokens.get_counter`); exact cl100k_base when
            ``None``.
        cache_points: Where entries are written: ``"request"``, at the end of each prompt (one
            cache breakpoint on the last message, as Anthropic's automatic caching and agent
            harnesses do); ``"message"``, at every message boundary (automatic prefix caching,
            as OpenAI does at a finer grain).
        min_cacheable_tokens: A prefix shorter than this is never cached.
        lookback: With ``cache_points="request"``, how many blocks (a message, plus one per
            tool call) before the end an earlier entry may sit and still be found; ``None`` for
            no limit.

    Returns:
        A :class:`Bill`: totals and one :class:`RequestCost` row per request.

    Raises:
        ConfigError: a bad request, ttl, price or timestamps list.
        InvalidMessageError: a malformed message.

    Example:
        >>> p = Price(input=3, output=15, cache_write_5m=3.75, cache_write_1h=6, cache_read=0.3)
        >>> turn1 = [{"role": "user", "content": "word " * 2000}]
        >>> turn2 = [*turn1, {"role": "assistant", "content": "ok"},
        ...          {"role": "user", "content": "and?"}]
        >>> bill = simulate([turn1, turn2], price=p)
        >>> [(r.cache_write_tokens, r.cache_read_tokens) for r in bill.requests]
        [(2008, 0), (14, 2005)]
    """
    if isinstance(requests, (str, bytes, Mapping)) or not isinstance(requests, Sequence):
        raise ConfigError(
            f"requests must be a list of requests (each a list of messages or a Request), got "
            f"{type(requests).__name__}"
        )
    if not isinstance(price, (Price, Mapping)):
        raise ConfigError(
            f"price must be a Price or a mapping of model name to Price, got "
            f"{type(price).__name__}; see ctxpack.cost.price(model) for the shipped prices"
        )
    _check_options(ttl, cache_points, min_cacheable_tokens, lookback, timestamps, len(requests))
    resolved = get_counter(counter=counter)
    cache_ = _PromptCache(TTL_SECONDS[ttl], cache_points, min_cacheable_tokens, lookback)
    rows: list[RequestCost] = []
    previous_time = float("-inf")
    for index, item in enumerate(requests):
        request = _as_request(item, index)
        unit = _price_for(price, request.model, index)
        now = 0.0 if timestamps is None else _seconds(timestamps[index])
        if now < previous_time:
            raise ConfigError(f"timestamps must not go back in time (request {index})")
        previous_time = now
        rows.append(_request_cost(index, request, unit, ttl, *cache_.serve(request, resolved, now)))
    return Bill(
        requests=rows,
        ttl=ttl,
        input_tokens=sum(r.input_tokens for r in rows),
        uncached_input_tokens=sum(r.uncached_input_tokens for r in rows),
        cache_write_tokens=sum(r.cache_write_tokens for r in rows),
        cache_read_tokens=sum(r.cache_read_tokens for r in rows),
        output_tokens=sum(r.output_tokens for r in rows),
        cost=sum(r.cost for r in rows),
    )


def _request_cost(
    index: int,
    request: Request,
    unit: Price,
    ttl: str,
    total: int,
    uncached: int,
    written: int,
    read: int,
) -> RequestCost:
    """The bill's row for one request, its input split as the cache served it."""
    write_price = unit.cache_write_5m if ttl == "5m" else unit.cache_write_1h
    dollars = (
        uncached * unit.input
        + written * write_price
        + read * unit.cache_read
        + request.output_tokens * unit.output
    ) / MILLION
    return RequestCost(
        index=index,
        model=request.model,
        input_tokens=total,
        uncached_input_tokens=uncached,
        cache_write_tokens=written,
        cache_read_tokens=read,
        output_tokens=request.output_tokens,
        cost=dollars,
    )


def _check_options(
    ttl: str,
    cache_points: str,
    min_cacheable_tokens: int,
    lookback: int | None,
    timestamps: Sequence[float | datetime] | None,
    n_requests: int,
) -> None:
    """Refuse :func:`simulate`'s options that are out of range, before anything is billed."""
    if not isinstance(ttl, str) or ttl not in TTL_SECONDS:
        raise ConfigError(f"ttl must be '5m' or '1h', got {ttl!r}")
    if cache_points not in ("request", "message"):
        raise ConfigError(f"cache_points must be 'request' or 'message', got {cache_points!r}")
    check_tokens(min_cacheable_tokens, "min_cacheable_tokens", minimum=0)
    if lookback is not None:
        check_tokens(lookback, "lookback")
    if timestamps is None:
        return
    if isinstance(timestamps, (str, bytes)) or not isinstance(timestamps, Sequence):
        raise ConfigError(
            f"timestamps must be a list of times (seconds or datetimes), got "
            f"{type(timestamps).__name__}"
        )
    if len(timestamps) != n_requests:
        raise ConfigError(
            f"timestamps has {len(timestamps)} entries for {n_requests} requests; give one "
            "per request, or None for a continuous session"
        )
    for i, value in enumerate(timestamps):
        if isinstance(value, bool) or not isinstance(value, (int, float, datetime)):
            raise ConfigError(
                f"timestamps[{i}] must be seconds (a number) or a datetime, got "
                f"{type(value).__name__}"
            )
        if not isinstance(value, datetime):
            finite(value, f"timestamps[{i}]")


def _price_for(price: Price | Mapping[str, Price], model: str | None, index: int) -> Price:
    if isinstance(price, Price):
        return price
    key = model if model is not None else "default"
    if key not in price:
        raise ConfigError(
            f"request {index}: no price for model {key!r}; prices are given for "
            f"{', '.join(sorted(map(str, price)))}"
        )
    found = price[key]
    if not isinstance(found, Price):
        raise ConfigError(f"price[{key!r}] must be a Price, got {type(found).__name__}")
    return found


class _ChainMemo:
    """Prefix digests and block counts of recent prompts, reused for the part a new prompt
    shares with one of them by identity (messages are frozen, and the memo holds them, so an
    identity is never recycled while remembered). A session's requests repeat their history:
    each new one then costs only its new messages."""

    def __init__(self, slots: int = 8) -> None:
        self._slots = slots
        self._entries: list[tuple[bytes, tuple[Message, ...], list[bytes], list[int]]] = []
        self._lock = threading.Lock()

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
            digest = hashlib.blake2b(digest + _KEYS(message), digest_size=16).digest()
            block += 1 + len(message.tool_calls or ())
            chain.append(digest)
            blocks.append(block)
        with self._lock:
            self._entries = [(tools_digest, messages, chain, blocks), *self._entries][: self._slots]
        return chain, blocks


_CHAINS = _ChainMemo()


def _prefix_chain(
    request: Request, counter: TokenCounter
) -> tuple[list[bytes], list[int], list[int]]:
    """Per cache point (after the tools, then after each message): the digest of the prefix up
    to it, its tokens (the last one includes the reply priming), and its blocks."""
    # ctxpack's own copies, shared between calls: what is derived from one (its digest, its
    # tokens) is cached by identity, so a history re-sent costs only its new messages.
    messages = owned_messages(request.messages)
    tools = request.tools or []
    tool_tokens = tool_definition_tokens(tools, counter) if tools else 0
    tools_digest = hashlib.blake2b(
        json.dumps(tools, sort_keys=True, default=str).encode("utf-8"), digest_size=16
    ).digest()
    chain, blocks = _CHAINS(tools_digest, len(tools), messages)
    sizes = list(accumulate(message_sizes(counter, messages), initial=tool_tokens))
    # The reply priming is part of the prompt: it belongs to the last prefix.
    sizes[-1] += counter.count_messages([]) if messages else 0
    return chain, sizes, blocks


class _PromptCache:
    """The provider's prompt cache as :func:`simulate` models it: prefix entries per model."""

    def __init__(
        self, life: float, cache_points: str, min_cacheable_tokens: int, lookback: int | None
    ) -> None:
        self._life = life
        self._cache_points = cache_points
        self._min = min_cacheable_tokens
        self._lookback = lookback
        # Per model: each cached prefix's digest, and when its entry expires.
        self._models: dict[str | None, dict[bytes, float]] = {}

    def serve(
        self, request: Request, counter: TokenCounter, now: float
    ) -> tuple[int, int, int, int]:
        """Send ``request`` at ``now``: its input tokens, then how many were billed uncached,
        written to the cache and read from it. Entries it reads or writes live on."""
        chain, sizes, blocks = _prefix_chain(request, counter)
        total = sizes[-1]
        entries = self._models.setdefault(request.model, {})
        hit = _longest_hit(entries, chain, blocks, now, self._cache_points, self._lookback)
        read = sizes[hit] if hit is not None else 0
        if hit is not None:
            entries[chain[hit]] = now + self._life
        if total < self._min:
            return total, total - read, 0, read
        points = range(len(chain)) if self._cache_points == "message" else (len(chain) - 1,)
        for point in points:
            # Written anew or refreshed: either way it lives on from now.
            if sizes[point] >= self._min:
                entries[chain[point]] = now + self._life
        return total, 0, total - read, read


def _longest_hit(
    cache_: dict[bytes, float],
    chain: list[bytes],
    blocks: list[int],
    now: float,
    cache_points: str,
    lookback: int | None,
) -> int | None:
    end = blocks[-1]
    for point in range(len(chain) - 1, -1, -1):
        if cache_points == "request" and lookback is not None and end - blocks[point] > lookback:
            return None
        expires = cache_.get(chain[point])
        if expires is not None and expires >= now:
            return point
    return None


# --------------------------------------------------------------------------------------------
# Filtering economics


class FilteringEconomics(BaseModel):
    """The what-if of a small model choosing what a large model reads (no cache).

    Attributes:
        without_filtering: Dollars: the large model reads the raw input.
        large_cost: Dollars the large model costs with filtering.
        small_cost: Dollars the small (context) model costs: it reads the raw input.
        with_filtering: ``large_cost + small_cost``.
        saving: ``without_filtering - with_filtering``.
        saving_share: ``saving / without_filtering``.
        break_even_tokens: Input tokens the filter must remove from the large model's input to
            pay for the small model.
        break_even_share: ``break_even_tokens`` as a share of the raw input.
    """

    model_config = ConfigDict(frozen=True)

    without_filtering: float
    large_cost: float
    small_cost: float
    with_filtering: float
    saving: float
    saving_share: float
    break_even_tokens: float
    break_even_share: float


def filtering_economics(
    *,
    large: Price,
    small: Price,
    raw_input: int,
    filtered_input: int,
    large_output: int,
    small_output: int,
) -> FilteringEconomics:
    """What filtering the large model's input with a small model saves, at list prices.

    The small model reads the same raw input and writes ``small_output`` tokens of selection;
    the large model then reads ``filtered_input`` instead of ``raw_input`` and writes
    ``large_output`` either way. Sums are exact (decimal), then given as floats.

    Raises:
        ConfigError: a negative token count, or a filtered input larger than the raw one.

    Example:
        >>> large = Price(input=10, output=50, cache_write_5m=12.5, cache_write_1h=20,
        ...               cache_read=0.25)
        >>> small = Price(input=0.25, output=1.5, cache_write_5m=0.25, cache_write_1h=0.25,
        ...               cache_read=0.025)
        >>> e = filtering_economics(large=large, small=small, raw_input=1_450_000,
        ...     filtered_input=560_000, large_output=40_000, small_output=10_000)
        >>> round(e.without_filtering, 2), round(e.with_filtering, 2), round(e.saving, 2)
        (16.5, 7.98, 8.52)
        >>> e.break_even_tokens
        37750.0
    """
    counts = {
        "raw_input": raw_input,
        "filtered_input": filtered_input,
        "large_output": large_output,
        "small_output": small_output,
    }
    for name, value in counts.items():
        if value < 0:
            raise ConfigError(f"{name} must be >= 0, got {value}")
    if filtered_input > raw_input:
        raise ConfigError(
            f"filtered_input ({filtered_input}) is larger than raw_input ({raw_input}); a filter "
            "only removes tokens"
        )
    if large.input <= 0:
        raise ConfigError("the large model's input price must be > 0 for a break-even")

    def d(x: float) -> Decimal:
        return Decimal(str(x))

    m = Decimal(MILLION)
    out_large = large_output * d(large.output) / m
    without = raw_input * d(large.input) / m + out_large
    large_cost = filtered_input * d(large.input) / m + out_large
    small_cost = raw_input * d(small.input) / m + small_output * d(small.output) / m
    with_ = large_cost + small_cost
    saving = without - with_
    break_even = small_cost * m / d(large.input)
    return FilteringEconomics(
        without_filtering=float(without),
        large_cost=float(large_cost),
        small_cost=float(small_cost),
        with_filtering=float(with_),
        saving=float(saving),
        saving_share=float(saving / without) if without else 0.0,
        break_even_tokens=float(break_even),
        break_even_share=float(break_even / raw_input) if raw_input else 0.0,
    )
