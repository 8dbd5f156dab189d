"""The rule that times an edit in the managed mode: it goes once its rent pays for the rewrite.

An edit (a clearing batch, a compaction) makes the prompt cache write again everything after
its edit point. Until it is made, every request re-sends, at the cache-read price, the tokens it
would remove: their *rent*. The edit goes once the rent since the last edit of its kind has cost
``_PATIENCE`` times the extra a rewrite costs over reading those tokens from the cache. The
caller accumulates the rent (``state.rent``, ``state.compact_rent``); :func:`_pays` only answers.
"""

from __future__ import annotations

from ..cost import Price, price
from ..errors import ConfigError
from ._policy import WindowPolicy

__all__: list[str] = []  # the managed mode's internals: used by its other modules only

# Prices that time the edits, when the session's model is not priced.
_DEFAULT_PRICED_MODEL = "claude-sonnet-4-5"
# An edit goes once its rent has cost this many times the rewrite it causes (the rule of
# ToolResultClearer): at 1, an edit made just before the session ends costs more than it saves.
_PATIENCE = 2.0


def _cache_price(policy: WindowPolicy, model: str | None) -> Price:
    """The prices that time the edits: the policy's model, else the session's when it is
    priced, else ``claude-sonnet-4-5``."""
    if policy.model is not None:
        return price(policy.model)
    if model is not None:
        try:
            return price(model)
        except ConfigError:
            pass  # a tokenizer name such as "gpt-4" need not be in the price table
    return price(_DEFAULT_PRICED_MODEL)


def _rent(tokens: float, p: Price) -> float:
    """What one request pays to re-send ``tokens`` an edit would remove (read from the cache)."""
    return tokens * p.cache_read


def _pays(rent: float, rewritten: float, p: Price) -> bool:
    """Whether ``rent`` accumulated since the last edit pays, with the margin, for writing
    ``rewritten`` tokens again rather than reading them: the edit then goes (and its rent starts
    again at 0), so edits are rare and large."""
    return rent / _PATIENCE > (p.cache_write_5m - p.cache_read) * rewritten
