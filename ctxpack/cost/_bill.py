"""Bills: the requests a session sent, replayed through the prompt-cache model at a price."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from functools import cache
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator

from .._internal.arguments import MOST, finite, keyword_checked, shown, tool_definitions
from .._internal.arguments import tokens as check_tokens
from .._internal.cache_points import DEFAULT_LOOKBACK, TTL_SECONDS, CachePoints, cache_points_of
from .._internal.encodings import model_encoding
from .._internal.options import CheckedModel, FieldErrorModel, invalid_option
from ..errors import ConfigError
from ..messages import Message
from ..providers import newer_claude_tokenizer, provider_from_model
from ..tokens import CounterLike, TokenCounter, get_counter
from ._cache import PromptCache
from ._prices import _DATE_SUFFIX, MILLION, Price, _shipped, resolve_model_name


class Request(CheckedModel):
    """One request a session sent: its messages, and optionally tools, output and model.

    Args:
        messages: The prompt's messages (``Message`` objects or OpenAI-style dicts).
        tools: Tool definitions sent with it; they come first in the cached prefix.
        output_tokens: Tokens the model answered with: an int from 0 to 2**53.
        model: Which model served it; each model has its own cache. ``None`` is the default
            model of :func:`simulate`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    messages: list[Any]
    tools: list[dict[str, Any]] | None = None
    # Strict and capped as every other token count: "100" or 2.0 is a caller's mistake.
    output_tokens: int = Field(default=0, ge=0, le=MOST, strict=True)
    model: str | None = None

    @field_validator("tools")
    @classmethod
    def _known_tool_shapes(cls, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        if tools is not None:
            tool_definitions(tools)
        return tools


class _Tokens(FieldErrorModel):
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


def _as_request(item: Any, index: int) -> Request:
    if isinstance(item, Request):
        return item
    if isinstance(item, Mapping):
        try:
            return Request.model_validate(dict(item))
        except ConfigError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            # Worded again to name the request's position rather than the model.
            raise invalid_option(f"request {index}", Request, exc.__cause__) from exc.__cause__
    if isinstance(item, (str, bytes)) or not isinstance(item, Iterable):
        raise ConfigError(
            f"request {index}: expected a list of messages or a Request, got {type(item).__name__}"
        )
    return Request(messages=list(item))


def _sendable(request: Request, index: int) -> Request:
    """``request``, refused when it holds no message: no provider takes one (Chat Completions
    and Anthropic's Messages both ask for at least one message), so none was ever billed."""
    if not request.messages:
        with_tools = ", only tools" if request.tools else ""
        raise ConfigError(
            f"request {index}: messages is empty{with_tools}; a provider refuses a request "
            "without a message, so there is nothing to bill (a system prompt alone is a message)"
        )
    return request


def _seconds(value: float | datetime) -> float:
    return value.timestamp() if isinstance(value, datetime) else float(value)


def _when(timestamps: Sequence[float | datetime] | None, index: int) -> float:
    """When request ``index`` was sent, in seconds (0 for a continuous session)."""
    return 0.0 if timestamps is None else _seconds(timestamps[index])


@keyword_checked
def simulate(
    requests: Sequence[Request | Sequence[Message | Mapping[str, Any]] | Mapping[str, Any]],
    *,
    price: Price | Mapping[str, Price],
    ttl: Literal["5m", "1h"] = "5m",
    timestamps: Sequence[float | datetime] | None = None,
    counter: CounterLike | None = None,
    cache_points: Literal["request", "message"] | None = None,
    min_cacheable_tokens: int | None = None,
    lookback: int | None = DEFAULT_LOOKBACK,
) -> Bill:
    """Bill a sequence of requests through a model of the provider's prompt cache.

    The prompt is read as a prefix of blocks: the tool definitions first, then each message. A
    request reads from the cache the longest prefix of it that an earlier request of the same
    model left there and that is still alive; the rest of the prompt is written to the cache
    (at the ``ttl`` write price) if the whole prompt reaches the model's minimum cacheable
    length, else billed as plain input. Every entry lives ``ttl`` after its last write or read.
    Each model has its own cache, so switching model rewrites the whole history at the target's
    write price; an OpenAI model reads the prefix it finds in whole 128-token increments.

    Args:
        requests: Each a list of messages, or a :class:`Request` (or a mapping of its fields)
            with tools, output tokens and model.
        price: One :class:`Price` for every request, or prices per model name (a request without
            a model uses the entry ``"default"``; a dated or prefixed name finds its entry as
            :func:`price` finds a name, exact key first, and shares that entry's cache).
        ttl: The cache lifetime the requests ask for: ``"5m"`` or ``"1h"``.
        timestamps: When each request was sent (seconds or datetimes, all zoned or all naive);
            ``None`` treats the session as continuous, with no entry ever expiring.
        counter: Token counter for every request (see :func:`ctxpack.tokens.get_counter`).
            ``None``: each request's ``Request.model``'s, as ``count_tokens(model=...)`` picks
            it; without a model, the model's whose shipped price the request is billed at
            (``price("claude-sonnet-4-5")`` counts as Claude does); else exact cl100k_base, as
            for a name with no known tokenizer.
        cache_points: Where entries are written: ``"request"``, at the end of each prompt (one
            breakpoint on the last message, as Anthropic's automatic caching and harnesses set
            it); ``"message"``, at every message boundary (OpenAI's and Gemini's prefix caching);
            ``None``: ``"request"`` for a Claude model or none, else ``"message"``.
        min_cacheable_tokens: A prefix shorter than this is never cached. ``None``: each
            request's price says (:attr:`Price.min_cacheable_tokens`: 1,024, or 4,096 for the
            shipped Claude Haiku 4.5 and Opus 4.5 to 4.7); an int applies to every request.
        lookback: With ``cache_points="request"``, how many blocks (a message, plus one per
            tool call) before the end an earlier entry may sit and still be found; ``None`` for
            no limit.

    Returns:
        A :class:`Bill`: totals and one :class:`RequestCost` row per request.

    Raises:
        ConfigError: a bad request (or one without a message), ttl, price or timestamps list.
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
    _check_requests_and_price(requests, price)
    _check_options(ttl, cache_points, min_cacheable_tokens, lookback, timestamps, len(requests))
    fixed = None if counter is None else get_counter(counter=counter)  # refused before any request
    counters: dict[str | None, TokenCounter] = {}
    cache_ = PromptCache(TTL_SECONDS[ttl], lookback)
    rows: list[RequestCost] = []
    for index, item in enumerate(requests):
        request = _sendable(_as_request(item, index), index)
        entry, unit = _price_for(price, request.model, index)
        now, minimum = _when(timestamps, index), _minimum(unit, min_cacheable_tokens)
        counted_as = request.model or _shipped_model(unit)  # also frames its tools
        resolved = fixed or _model_counter(counted_as, counters)
        points = cache_points or _provider_cache_points(counted_as)
        served = cache_.serve(
            request.messages, request.tools or [], counted_as, resolved, now, minimum, entry, points
        )
        rows.append(_request_cost(index, request, unit, ttl, *served))
    return _bill(rows, ttl)


def _provider_cache_points(model: str | None) -> CachePoints:
    """Where ``model``'s provider writes entries when the caller does not say, as the managed
    window times its edits (:func:`cache_points_of`); one breakpoint per request for a price
    of the caller's own, which names no model."""
    return "request" if model is None else cache_points_of(model)[0]


def _minimum(unit: Price, given: int | None) -> int:
    """The shortest prompt cached: ``given`` for every request, else the request's price's."""
    return unit.min_cacheable_tokens if given is None else given


def _model_counter(model: str | None, counters: dict[str | None, TokenCounter]) -> TokenCounter:
    """The counter of ``model``'s tokenizer, as ``count_tokens(model=...)`` picks it; exact
    cl100k_base for no model or one ctxpack knows no tokenizer for (a label of the caller's own,
    as ``simulate`` always took). Each model's is resolved once per call: once its warning."""
    if model not in counters:
        known = model is not None and (
            provider_from_model(model) == "anthropic" or model_encoding(model) is not None
        )
        counters[model] = get_counter(model=model if known else None)
    return counters[model]


@cache
def _shipped_names() -> dict[Price, list[str]]:
    names: dict[Price, list[str]] = {}
    for name, row in _shipped().prices.items():
        names.setdefault(row, []).append(name)
    return names


def _shipped_model(unit: Price) -> str | None:
    """The model a request naming none is counted as, when its price is a row of the shipped
    table (``price("claude-sonnet-4-5")``; its date and source too, so not a price of the
    caller's own that happens to match): one of the names the row prices, when they all count
    alike (all Claude, or one encoding). Claude models of two tokenizers sharing a price (Opus
    4.6 and 4.7) count as the newer one, which makes more tokens: a bill errs high."""
    names = _shipped_names().get(unit, [])
    kinds = {
        "anthropic" if provider_from_model(name) == "anthropic" else model_encoding(name)
        for name in names
    }
    if len(kinds) != 1 or None in kinds:
        return None
    return next((name for name in names if newer_claude_tokenizer(name)), names[0])


def _bill(rows: list[RequestCost], ttl: str) -> Bill:
    """The bill of ``rows``: their sums."""
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


def _check_requests_and_price(requests: Any, price: Any) -> None:
    """Refuse :func:`simulate`'s two main arguments when they have the wrong shape."""
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


def _request_cost(
    index: int,
    request: Request,
    unit: Price,
    ttl: Literal["5m", "1h"],
    total: int,
    uncached: int,
    written: int,
    read: int,
) -> RequestCost:
    """The bill's row for one request, its input split as the cache served it."""
    dollars = (
        uncached * unit.input
        + written * unit.cache_write(ttl)
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
    cache_points: str | None,
    min_cacheable_tokens: int | None,
    lookback: int | None,
    timestamps: Sequence[float | datetime] | None,
    n_requests: int,
) -> None:
    """Refuse :func:`simulate`'s options that are out of range, before anything is billed."""
    if not isinstance(ttl, str) or ttl not in TTL_SECONDS:
        raise ConfigError(f"ttl must be '5m' or '1h', got {shown(ttl)}")
    if cache_points is not None and cache_points not in ("request", "message"):
        raise ConfigError(f"cache_points must be 'request' or 'message', got {shown(cache_points)}")
    if min_cacheable_tokens is not None:
        check_tokens(min_cacheable_tokens, "min_cacheable_tokens", minimum=0)
    if lookback is not None:
        check_tokens(lookback, "lookback", unit="blocks")
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
    previous = float("-inf")
    zoned: bool | None = None
    for i, value in enumerate(timestamps):
        if isinstance(value, bool) or not isinstance(value, (int, float, datetime)):
            raise ConfigError(
                f"timestamps[{i}] must be seconds (a number) or a datetime, got "
                f"{type(value).__name__}"
            )
        if not isinstance(value, datetime):
            finite(value, f"timestamps[{i}]")
        elif zoned is None:
            zoned = value.utcoffset() is not None
        elif zoned != (value.utcoffset() is not None):
            # A naive one is read in local time: the gap would move with the machine's zone.
            raise ConfigError(
                f"timestamps[{i}] has {'no ' if zoned else 'a '}time zone, unlike an earlier "
                "datetime; give every datetime a time zone, or none"
            )
        if _seconds(value) < previous:
            raise ConfigError(f"timestamps must not go back in time (request {i})")
        previous = _seconds(value)


def _price_for(
    price: Price | Mapping[str, Price], model: str | None, index: int
) -> tuple[str | None, Price]:
    """The request's price, and the name of the model whose cache it uses: its entry in a
    mapping of prices, found as :func:`price` finds a name (the exact key first, then without
    a provider prefix, letter case or release date), so two spellings of one model share one
    entry and one cache; with a single price, the model as named."""
    if isinstance(price, Price):
        return model, price
    key = model if model is not None else "default"
    name = key if key in price or model is None else resolve_model_name(key, price)
    if name is None or name not in price:
        raise ConfigError(
            f"request {index}: no price for model {key!r}; prices are given for "
            f"{', '.join(sorted(map(str, price)))}"
        )
    found = price[name]
    if not isinstance(found, Price):
        raise ConfigError(f"price[{name!r}] must be a Price, got {type(found).__name__}")
    # A dated row priced as its family (as the shipped table lists snapshots) is one model
    # under two names, so one cache; a snapshot priced apart (gpt-4o-2024-05-13) is another.
    undated = _DATE_SUFFIX.sub("", name)
    family = price.get(undated)
    if isinstance(family, Price) and _as_billed(family) == _as_billed(found):
        return undated, found
    return name, found


def _as_billed(unit: Price) -> Price:
    """``unit`` without where and when it was read: what a bill uses of it."""
    return unit.model_copy(update={"date": None, "source": None})
