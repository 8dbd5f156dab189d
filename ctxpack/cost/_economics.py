"""Filtering economics: what a small model choosing a large model's input saves, at list prices."""

from __future__ import annotations

from decimal import Decimal

from pydantic import ConfigDict

from .._internal.arguments import tokens as check_tokens
from .._internal.options import FieldErrorModel
from ..errors import ConfigError
from ._prices import MILLION, Price


class FilteringEconomics(FieldErrorModel):
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
        check_tokens(value, name, minimum=0)
    for name, model in (("large", large), ("small", small)):
        if not isinstance(model, Price):
            raise ConfigError(f"{name} must be a Price, got {type(model).__name__}")
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
