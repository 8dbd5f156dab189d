"""The approximate counter a Claude model's name calls for, and its announcement: once per
counter, from the user's line, however deep the request that first counted with it."""

from __future__ import annotations

import threading
import warnings

from ..errors import ApproximateTokenCountWarning
from ..providers import Provider, newer_claude_tokenizer, provider_from_model
from ..tokens import (
    ANTHROPIC_NEWER_FACTOR,
    TokenCounter,
    _with_images,
    anthropic_approx_counter,
    get_counter,
)
from .callers import caller_level
from .images import image_rule

__all__: list[str] = []


def claude_approx_counter(model: str | None) -> TokenCounter:
    """ctxpack's approximation for ``model``: the newer tokenizer's factor where it has it, and
    its image rule; the default approximation for no name or one that is not Claude's (an
    alias the Anthropic client was given). Shared by the process, so its counts stay cached.
    The same choice as ``get_counter(model=...)``'s, without its warning on every call (tokens
    cannot import this module: it imports tokens)."""
    if model is None or provider_from_model(model) != "anthropic":
        return anthropic_approx_counter()
    factor = (ANTHROPIC_NEWER_FACTOR,) if newer_claude_tokenizer(model) else ()
    return _with_images(anthropic_approx_counter(*factor), image_rule(model))


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
