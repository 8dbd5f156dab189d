"""The counter a request is counted with when none was given, and the announcement of an
approximate one: once per counter, from the user's line, however deep the request that first
counted with it. Which approximation a Claude model's name calls for is
:func:`ctxpack.tokens.claude_approx_counter`'s choice, the one ``get_counter(model=...)`` makes."""

from __future__ import annotations

import threading
import warnings
from typing import Any

from ..errors import ApproximateTokenCountWarning
from ..providers import Provider, provider_from_model
from ..tokens import TokenCounter, claude_approx_counter, get_counter
from . import forks
from .callers import caller_level
from .encodings import model_encoding

__all__: list[str] = []


class Announcements:
    """The approximate counters one object (a wrapped client, a middleware) has announced: each
    is announced the first time it counts, not on every request."""

    def __init__(self, who: str) -> None:
        self.who = who
        self._names: set[str] = set()
        self._lock = forks.freed_in_child(threading.Lock())

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


def chat_model_counter(
    chat_model: Any, provider: Provider | None, announce: Announcements
) -> TokenCounter:
    """:func:`request_counter` for a LangChain chat model's request: its name picks the counter
    when it is a Claude model's or one whose encoding is known (``ChatOpenAI.model_name``,
    ``ChatAnthropic.model``, Bedrock's ``model_id``); else ``cl100k_base`` (or Claude's default
    approximation for Anthropic's API)."""
    for field in ("model_name", "model", "model_id"):
        name = getattr(chat_model, field, None)
        if isinstance(name, str) and name:
            known = provider_from_model(name) is not None or model_encoding(name) is not None
            return request_counter(name if known else None, provider, announce)
    return request_counter(None, provider, announce)
