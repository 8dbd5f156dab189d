"""The counter a request is counted with when none was given, and the announcement of an
approximate one: once per counter, from the user's line, however deep the request that first
counted with it. Which approximation a Claude model's name calls for is
:func:`ctxpack.tokens.claude_approx_counter`'s choice, the one ``get_counter(model=...)`` makes."""

from __future__ import annotations

import threading
import warnings

from ..errors import ApproximateTokenCountWarning
from ..providers import Provider, provider_from_model
from ..tokens import TokenCounter, claude_approx_counter, get_counter
from .callers import caller_level

__all__: list[str] = []


class Announcements:
    """The approximate counters one object (a wrapped client, a middleware) has announced: each
    is announced the first time it counts, not on every request."""

    def __init__(self, who: str) -> None:
        self.who = who
        self._names: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, counter: TokenCounter, model: str | None) -> TokenCounter:
        if counter.exact:
            return counter
        with self._lock:
            if counter.name in self._names:
                return counter
            self._names.add(counter.name)
        named = "its requests" if model is None else f"requests for {model!r}"
        warnings.warn(
            f"Claude's tokenizer is not public; {self.who} counts {named} with "
            f"{counter.name!r}, an approximation with a safety margin. Pass counter=<your exact "
            "count function> to be exact.",
            ApproximateTokenCountWarning,
            stacklevel=caller_level(),
        )
        return counter


def request_counter(
    model: str | None, provider: Provider | None, announce: Announcements
) -> TokenCounter:
    """The counter for a request to ``model`` when none was given (through ``provider``'s
    API): Claude's approximation for it, announced once, else its exact encoding."""
    if provider == "anthropic" or provider_from_model(model) == "anthropic":
        return announce(claude_approx_counter(model), model)
    return get_counter(model)
