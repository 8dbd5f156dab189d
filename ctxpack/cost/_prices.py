"""Price data: dollars per million tokens per model, the shipped table, and model names."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from decimal import Decimal
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError

from .._internal.arguments import MOST, file_path, shown, string
from .._internal.encodings import model_key
from .._internal.options import CheckedModel
from ..errors import ConfigError

MILLION = 1_000_000
# The shortest prompt a provider caches: OpenAI's, and Anthropic's for Sonnet 4.x and Opus 4/4.1.
DEFAULT_MIN_CACHEABLE = 1024
# Longer minimums, by family name: Anthropic's (its prompt-caching guide) and Google's (its
# implicit-caching table; Flash-Lite, missing from it, refuses a cache under 2,048 tokens).
# LiteLLM's map does not carry them, so an imported row takes them from here, as the shipped
# table's rows do.
KNOWN_MIN_CACHEABLE: dict[str, int] = {
    "claude-haiku-4-5": 4096,
    "claude-opus-4-5": 4096,
    "claude-opus-4-6": 4096,
    "claude-opus-4-7": 4096,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
    "gemini-2.5-pro": 2048,
    "gemini-2.5-flash": 2048,
    "gemini-2.5-flash-lite": 2048,
}


class Price(CheckedModel):
    """Dollars per million tokens for one model.

    Every price is a number (an int or a float, not a text), at least 0.

    Args:
        input: Uncached input.
        output: Output.
        cache_write_5m: Input written to the cache with a 5-minute lifetime.
        cache_write_1h: Input written to the cache with a 1-hour lifetime.
        cache_read: Input read from the cache.
        context_window: The model's context window in tokens, when known (used by
            :func:`ctxpack.context_usage` for the free space).
        min_cacheable_tokens: The shortest prompt the provider caches for this model (used by
            :func:`ctxpack.cost.simulate`): 1,024 unless the model needs more (the shipped
            Claude Haiku 4.5 and Opus 4.5 to 4.7 rows say 4,096, the Gemini 2.5 rows 2,048).
        date: When this price was read (ISO date), when known.
        source: Where it was read, when known.

    Example:
        >>> p = Price(input=3, output=15, cache_write_5m=3.75, cache_write_1h=6, cache_read=0.3)
        >>> round(p.cache_read / p.input, 3)  # reads at a tenth of the input price
        0.1
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Strict: a price given as text ("3") is a table read wrong, not a number to coerce.
    input: float = Field(ge=0, strict=True)
    output: float = Field(ge=0, strict=True)
    cache_write_5m: float = Field(ge=0, strict=True)
    cache_write_1h: float = Field(ge=0, strict=True)
    cache_read: float = Field(ge=0, strict=True)
    context_window: int | None = Field(default=None, gt=0, le=MOST, strict=True)
    min_cacheable_tokens: int = Field(default=DEFAULT_MIN_CACHEABLE, ge=0, le=MOST, strict=True)
    date: str | None = None
    source: str | None = None

    def cache_write(self, ttl: Literal["5m", "1h"]) -> float:
        """The price of a cache write that lives ``ttl``: ``cache_write_5m`` or
        ``cache_write_1h``.

        Raises:
            ConfigError: ``ttl`` is neither.

        Example:
            >>> Price(input=3, output=15, cache_write_5m=3.75, cache_write_1h=6,
            ...       cache_read=0.3).cache_write("1h")
            6.0
        """
        if ttl == "5m":
            return self.cache_write_5m
        if ttl == "1h":
            return self.cache_write_1h
        raise ConfigError(f"ttl must be '5m' or '1h', got {shown(ttl)}")


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
        name = resolve_model_name(string(model, "model"), self.prices)
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
        if not isinstance(other, PriceTable):
            raise ConfigError(f"other must be a PriceTable, got {type(other).__name__}")
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
        cache discount). The map has no minimum cacheable length: a Claude model that needs more
        than 1,024 tokens (Haiku 4.5, Opus 4.5 to 4.7: 4,096; Haiku 3 and 3.5: 2,048) gets its
        minimum from ctxpack, by its name resolved as :meth:`price` resolves it. A price that is
        null counts as absent, as LiteLLM counts it; rows without an input or an output price
        (images, audio, a subscription's ``chatgpt/`` rows) and the ``sample_spec`` row are
        skipped. A price written as a text ("3e-06") is refused, as LiteLLM's arithmetic and
        :class:`Price` refuse it. ``max_input_tokens`` becomes the context window.

        Args:
            data: The parsed map, or a path to the JSON file.
            date: When the map was taken.
            source: Where it came from.

        Raises:
            ConfigError: the file cannot be read or is not a JSON object, or a price is negative
                or neither a number nor null (the message names the row and the field).

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
            # sample_spec describes the fields, in words in some versions of the map.
            if not isinstance(row, Mapping) or model == "sample_spec":
                continue
            cost_in = _cost(row, "input_cost_per_token", None, model)
            cost_out = _cost(row, "output_cost_per_token", None, model)
            if cost_in is None or cost_out is None:
                continue  # not billed per token (an image model, a subscription's chatgpt/ row)
            write_5m = _cost(row, "cache_creation_input_token_cost", cost_in, model)
            write_1h = _cost(row, "cache_creation_input_token_cost_above_1hr", write_5m, model)
            read = _cost(row, "cache_read_input_token_cost", cost_in, model)
            window = row.get("max_input_tokens")
            try:
                prices[str(model)] = Price(
                    input=_per_million(cost_in),
                    output=_per_million(cost_out),
                    cache_write_5m=_per_million(write_5m),
                    cache_write_1h=_per_million(write_1h),
                    cache_read=_per_million(read),
                    context_window=window if isinstance(window, int) and window > 0 else None,
                    min_cacheable_tokens=_known_minimum(str(model)),
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
        prices: dict[str, Price] = {}
        for name, row in raw.items():
            if name.startswith("_"):
                continue
            if not isinstance(row, Mapping):
                raise ConfigError(f"{origin}: {name!r} must be an object of prices")
            try:
                prices[name] = Price(**row)
            except ConfigError as exc:
                raise ConfigError(
                    f"{origin}: not a valid price table: model {name!r}: {exc}"
                ) from exc
        try:
            return cls(
                date=str(meta.get("date", "")),
                sources=meta.get("sources", []),
                prices=prices,
                note=str(meta.get("note", "")),
            )
        except ConfigError as exc:
            raise ConfigError(f"{origin}: not a valid price table: {exc}") from exc


# A release date at the end of a model name: gpt-4o-2024-08-06, claude-opus-4-5-20251101, and
# Vertex's claude-opus-4-5@20251101.
_DATE_SUFFIX = re.compile(r"(?:[-@]\d{4}-\d{2}-\d{2}|[-@]\d{8})$")


def _normalised(model: str) -> str:
    return model_key(model.strip())


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


def _known_minimum(model: str) -> int:
    family = resolve_model_name(model, KNOWN_MIN_CACHEABLE)
    return KNOWN_MIN_CACHEABLE[family] if family is not None else DEFAULT_MIN_CACHEABLE


def _cost(row: Mapping[str, Any], field: str, default: float | None, model: Any) -> float | None:
    """A LiteLLM row's ``field`` (dollars per token), ``default`` when the row has none."""
    value = row.get(field)
    # Null is LiteLLM's "no such price" (its cost code tests `is not None`): as if absent.
    if value is None:
        return default
    # A text is no JSON number, and LiteLLM's own arithmetic fails on it; a bool would be
    # billed as 1: a broken map, refused rather than guessed at or skipped unsaid.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(
            f"LiteLLM row {model!r}: {field} must be a number (dollars per token), got "
            f"{value!r:.40}"
        )
    return value


def _per_million(cost_per_token: Any) -> float:
    # Through Decimal: 3e-06 * 1e6 in floats is 2.9999999999999996.
    return float(Decimal(str(cost_per_token)) * MILLION)


def _read_json_file(path: str | Path) -> Any:
    name = file_path(path, "path")
    try:
        return json.loads(Path(name).read_text("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path} is not a JSON text file: {exc.reason} at byte {exc.start}"
        ) from exc
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
