"""Counting for Claude: exact through Anthropic's count-tokens endpoint, or an approximation
whose error is measured against what Anthropic billed.

Claude's tokenizer is not public. :func:`anthropic_token_counter` wraps an ``anthropic`` client:
every distinct text is counted once by ``messages.count_tokens`` (online, exact) and remembered.
:func:`calibrate` compares a counter (by default ctxpack's approximation) with the ``usage``
Anthropic returned for requests you sent, and reports the error's distribution and the factor
that would cover a chosen share of them.
"""

from __future__ import annotations

import json
import math
import statistics
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import ConfigDict

from ._internal import forks
from ._internal.arguments import number, shown
from ._internal.images import image_rule
from ._internal.options import FieldErrorModel
from .adapters import from_anthropic
from .adapters.read import read_counted
from .errors import ConfigError, TokenizerUnavailableError
from .messages import Message
from .providers import anthropic_tool
from .sdk import SDKObject
from .tokens import (
    TOKENS_PER_TOOL_CALL,
    CounterLike,
    _FramedCounter,
    claude_approx_counter,
    get_counter,
    tool_definition_tokens,
)

__all__ = [
    "anthropic_token_counter",
    "calibrate",
]

DEFAULT_MODEL = "claude-sonnet-4-5"
# A text of one token: the probes below measure a turn's framing around it.
_PROBE = "."


class AnthropicTokenCounter(_FramedCounter):
    """Exact Claude counts from Anthropic's count-tokens endpoint, cached per text.

    A text's count is the endpoint's count of a user turn holding it, less that turn's framing;
    the framing of a turn and of the request are measured once, on first use, with two probe
    requests. A message costs its turn's framing plus its texts (a refusal and LiteLLM's
    thinking blocks beside its content included, as ctxpack's other counters count them); tool
    calls add ``TOKENS_PER_TOOL_CALL`` each around their exact name and arguments (an estimate,
    like images, which follow Anthropic's published formula). A prompt costs the request's framing
    plus its messages, so ``count_messages([])`` is that framing.

    Args:
        client: An ``anthropic.Anthropic`` client (anything with ``messages.count_tokens``).
        model: The model whose tokenizer counts.

    Raises:
        TokenizerUnavailableError: the endpoint cannot be reached or answers with an error.
    """

    exact = True

    def __init__(self, client: Any, model: str = DEFAULT_MODEL) -> None:
        if not callable(getattr(getattr(client, "messages", None), "count_tokens", None)):
            raise ConfigError(
                "anthropic_token_counter needs an anthropic client (anthropic.Anthropic()), "
                f"with messages.count_tokens; got {type(client).__name__}"
            )
        super().__init__()
        self.images = image_rule(model)
        self.client = client
        self.model = model
        self.name = f"anthropic:{model}"
        self._framing: tuple[int, int] | None = None
        self._lock = forks.freed_in_child(threading.Lock())

    def _endpoint(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> int:
        extra = {"tools": tools} if tools else {}
        try:
            answer = self.client.messages.count_tokens(model=self.model, messages=messages, **extra)
        except Exception as exc:
            raise TokenizerUnavailableError(
                f"Anthropic's count-tokens endpoint failed for model {self.model!r} "
                f"({type(exc).__name__}: {exc}); offline, count with "
                "ctxpack.tokens.anthropic_approx_counter() instead"
            ) from exc
        value = getattr(answer, "input_tokens", None)
        if value is None and isinstance(answer, Mapping):
            value = answer.get("input_tokens")
        if not isinstance(value, int) or value < 0:
            raise TokenizerUnavailableError(
                f"Anthropic's count-tokens endpoint answered {answer!r}, without input_tokens"
            )
        return value

    def framing(self) -> tuple[int, int]:
        """``(request, turn)``: the tokens a request and each turn add around their texts."""
        with self._lock:
            if self._framing is None:
                one = self._endpoint([{"role": "user", "content": _PROBE}])
                three = self._endpoint(
                    [
                        {"role": "user", "content": _PROBE},
                        {"role": "assistant", "content": _PROBE},
                        {"role": "user", "content": _PROBE},
                    ]
                )
                # Two more turns of one token each; rounded up so a turn is never under-counted.
                turn = max(0, math.ceil((three - one) / 2) - 1)
                self._framing = (max(0, one - turn - 1), turn)
            return self._framing

    def _count_uncached(self, text: str) -> int:
        if not text:
            return 0
        request, turn = self.framing()
        if text.isspace():
            # The endpoint refuses a turn of whitespace only: count it after the probe.
            with_probe = self._endpoint([{"role": "user", "content": _PROBE + text}])
            return max(0, with_probe - request - turn - 1)
        return max(0, self._endpoint([{"role": "user", "content": text}]) - request - turn)

    def _count_message_uncached(self, message: Message) -> int:
        total = self.framing()[1] + self._count_content(message.content)
        if message.name:
            total += self.count(message.name)
        for call in message.tool_calls or ():
            total += TOKENS_PER_TOOL_CALL
            total += self.count(call.function.name) + self.count(call.function.arguments)
        return total + self._beside_content(message)

    def count_messages(self, messages: Iterable[Message | Mapping[str, Any] | SDKObject]) -> int:
        found = read_counted(messages)
        return self.framing()[0] + sum(map(self._count_message_uncached, found))

    def count_tools(self, tools: Sequence[Mapping[str, Any]]) -> int:
        """What tool definitions add to a request, by the endpoint (OpenAI functions are sent
        in Anthropic's form), cached by their JSON. Used by
        :func:`ctxpack.tokens.tool_definition_tokens`."""
        as_sent = [anthropic_tool(tool) for tool in tools]
        if not as_sent:
            return 0
        key = json.dumps(as_sent, ensure_ascii=False, sort_keys=True, default=str)
        cached = self._tool_sizes.get(key)
        if cached is None:
            probe = [{"role": "user", "content": _PROBE}]
            # framing() holds the probe's count without tools: request + turn + its token.
            cached = max(0, self._endpoint(probe, as_sent) - sum(self.framing()) - 1)
            self._tool_sizes.put(key, cached)
        return cached


def anthropic_token_counter(client: Any, model: str = DEFAULT_MODEL) -> AnthropicTokenCounter:
    """An exact counter for Claude through ``client.messages.count_tokens`` (online).

    Pass it as ``counter=`` to :func:`ctxpack.pack`, :func:`ctxpack.count_tokens` or a
    :class:`ctxpack.Session`. Each distinct text is sent to the endpoint once; keep the
    counter to keep its cache.

    Example:
        >>> import anthropic  # doctest: +SKIP
        >>> counter = anthropic_token_counter(anthropic.Anthropic())  # doctest: +SKIP
        >>> ctxpack.pack(history, budget=8000, counter=counter)  # doctest: +SKIP
    """
    return AnthropicTokenCounter(client, model)


class Calibration(FieldErrorModel):
    """How a counter's counts compare with what Anthropic billed for the same requests.

    ``ratios`` are billed / counted per request; a ratio above 1 is an under-count. The
    quantiles summarise them; ``under_counted`` is the share of requests counted below their
    bill, ``worst_under_count`` the largest relative shortfall (0 when none), and
    ``factor_for_coverage`` the factor the counts need so that ``coverage`` of the requests
    are not under-counted. ``counter`` names the counter, or the counters (comma-separated)
    when the requests' models called for different approximations.
    """

    model_config = ConfigDict(frozen=True)

    counter: str
    requests: int
    ratios: list[float]
    p10: float
    median: float
    p90: float
    under_counted: float
    worst_under_count: float
    coverage: float
    factor_for_coverage: float


def billed_input_tokens(usage: Mapping[str, Any] | Any) -> int:
    """What Anthropic billed as the prompt: input + cache write + cache read tokens.

    ``usage`` is a response's ``usage`` (a dict or the SDK's object); the cache fields may be
    absent or null, ``input_tokens`` may not.

    Raises:
        ConfigError: ``input_tokens`` is missing (a whole response, an empty dict), or a field
            is not an int >= 0.

    Example:
        >>> billed_input_tokens({"input_tokens": 12, "cache_creation_input_tokens": 3000,
        ...                      "cache_read_input_tokens": 40000, "output_tokens": 80})
        43012
    """
    total = 0
    for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        value = usage.get(key) if isinstance(usage, Mapping) else getattr(usage, key, None)
        # Every usage Anthropic returns has input_tokens: without it this is not a usage (a
        # response passed whole, a dict left empty), and 0 billed tokens would be made up.
        if value is None and key != "input_tokens":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            hint = " (pass the response's usage, not the response)" if value is None else ""
            raise ConfigError(f"usage.{key} must be an int >= 0, got {shown(value)}{hint}")
        total += value
    return total


def calibrate(
    requests: Sequence[Mapping[str, Any]],
    usages: Sequence[Mapping[str, Any] | Any],
    *,
    counter: CounterLike | None = None,
    coverage: float = 0.9,
) -> Calibration:
    """Measure a counter against Anthropic's bills: the approximation's error distribution.

    Args:
        requests: The Messages API payloads you sent (``messages``, and ``system`` and
            ``tools`` when they had them).
        usages: The ``usage`` Anthropic returned for each (dicts or the SDK's objects).
        counter: The counter to check; by default ctxpack's Claude approximation for each
            request's ``model`` (see :func:`ctxpack.get_counter`).
        coverage: The share of requests the suggested factor must not under-count.

    Raises:
        ConfigError: the lists differ in length or are empty, a request has no messages (or a
            ``model`` that is not a string), a usage is malformed, or ``coverage`` is not in
            (0, 1].

    Example:
        >>> request = {"messages": [{"role": "user", "content": "Hello, Claude"}]}
        >>> result = calibrate([request], [{"input_tokens": 14}])
        >>> result.requests, result.ratios[0] > 0
        (1, True)
    """
    for argument, value in (("requests", requests), ("usages", usages)):
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
            raise ConfigError(f"{argument} must be a list, got {type(value).__name__}")
    if len(requests) != len(usages) or not requests:
        raise ConfigError(
            f"calibrate needs one usage per request and at least one: got {len(requests)} "
            f"requests and {len(usages)} usages"
        )
    if not 0 < number(coverage, "coverage") <= 1:
        raise ConfigError(f"coverage must be in (0, 1], got {coverage}")
    given = get_counter(counter=counter) if counter is not None else None
    ratios: list[float] = []
    names: dict[str, None] = {}  # in the order first used
    for index, (request, usage) in enumerate(zip(requests, usages, strict=True)):
        if not isinstance(request, Mapping) or not isinstance(request.get("messages"), list):
            raise ConfigError(f"requests[{index}] must be a payload with a 'messages' list")
        model = request.get("model")
        if model is not None and not isinstance(model, str):
            raise ConfigError(f"requests[{index}]['model'] must be a string, got {shown(model)}")
        # Each request as ctxpack counts it for its model: the newer tokenizer's factor for
        # Opus 4.7 on and the 5 models.
        resolved = given or claude_approx_counter(model)
        names[resolved.name] = None
        messages = from_anthropic(request["messages"], system=request.get("system"))
        tools = request.get("tools") or []
        counted = resolved.count_messages(messages) + tool_definition_tokens(tools, resolved)
        try:
            billed = billed_input_tokens(usage)
        except ConfigError as exc:
            raise ConfigError(f"usages[{index}]: {exc}") from exc
        ratios.append(billed / counted if counted else math.inf)
    ordered = sorted(ratios)
    cut = ordered[min(len(ordered) - 1, math.ceil(coverage * len(ordered)) - 1)]
    return Calibration(
        counter=", ".join(names),
        requests=len(ratios),
        ratios=ratios,
        p10=_quantile(ordered, 0.1),
        median=statistics.median(ordered),
        p90=_quantile(ordered, 0.9),
        under_counted=sum(r > 1 for r in ratios) / len(ratios),
        worst_under_count=max(0.0, 1 - 1 / ordered[-1]) if ordered[-1] > 0 else 0.0,
        coverage=coverage,
        factor_for_coverage=cut,
    )


def _quantile(ordered: list[float], q: float) -> float:
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[round(q * 100) - 1]
