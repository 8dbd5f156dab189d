"""What a request costs: prices per model, the prompt cache's economics, and bills.

Prices are US dollars per million tokens. The shipped table (``ctxpack/data/prices.json``) carries
its date and sources; :class:`PriceTable` loads your own, merges it over the shipped one, or
imports a LiteLLM-format price map. :func:`simulate` replays the requests a session sent through
a model of the provider's prompt cache and returns a :class:`Bill`; :func:`filtering_economics`
is the what-if sum of putting a small model in front of a large one.
"""

from ._bill import Bill as Bill
from ._bill import Request as Request
from ._bill import RequestCost as RequestCost
from ._bill import simulate as simulate
from ._economics import FilteringEconomics as FilteringEconomics
from ._economics import filtering_economics as filtering_economics
from ._prices import Price as Price
from ._prices import PriceTable as PriceTable
from ._prices import price as price
from ._prices import resolve_model_name as resolve_model_name
from ._prices import shipped_prices as shipped_prices

__all__ = [
    "Price",
    "PriceTable",
    "Request",
    "filtering_economics",
    "price",
    "shipped_prices",
    "simulate",
]
