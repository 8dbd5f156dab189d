"""What a request costs: prices per model and the prompt cache's economics.

Prices are US dollars per million tokens. The shipped table (``ctxpack/data/prices.json``) carries
its date and sources; pass your own :class:`Price` wherever one is taken.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field

from .errors import ConfigError

__all__ = ["Price", "price"]


class Price(BaseModel):
    """Dollars per million tokens for one model.

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


@cache
def _shipped() -> dict[str, Price]:
    raw = json.loads(resources.files("ctxpack").joinpath("data/prices.json").read_text("utf-8"))
    return {name: Price(**row) for name, row in raw.items() if not name.startswith("_")}


def price(model: str) -> Price:
    """The shipped price of ``model``.

    Raises:
        ConfigError: the model is not in the table (the message lists the known models).

    Example:
        >>> price("claude-sonnet-4-5").input
        3.0
    """
    table = _shipped()
    if model not in table:
        known = ", ".join(sorted(table))
        raise ConfigError(f"no price for model {model!r}; known models: {known}")
    return table[model]
