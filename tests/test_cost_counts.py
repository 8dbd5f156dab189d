"""simulate() bills the prompt count_tokens() counts, tools included, at every cache boundary;
a LiteLLM price that is no number is refused by row and field."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxpack import ConfigError, count_tokens
from ctxpack.cost import Price, PriceTable, Request, price, simulate

from .strategies import TOOLS, conversations

SYSTEM = {"role": "system", "content": "You are a coding agent."}


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4.1", "claude-sonnet-4-5"])
def test_a_request_with_a_system_prompt_and_tools_is_billed_as_counted(model: str) -> None:
    messages = [SYSTEM, {"role": "user", "content": "Fix the test."}]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Claude's approximate count says so
        bill = simulate([Request(messages=messages, tools=TOOLS, model=model)], price=price(model))
        # Used to be 3 tokens over for OpenAI models: the tools framed as with no system prompt.
        assert bill.input_tokens == count_tokens(messages, model=model, tools=TOOLS)


def _words(n: int) -> dict[str, Any]:
    return {"role": "user", "content": " ".join(["word"] * n)}


def test_the_minimum_cacheable_length_is_cached_and_one_token_less_is_not() -> None:
    unit = Price(input=3, output=15, cache_write_5m=3.75, cache_write_1h=6, cache_read=0.3)
    prompt = [_words(100)]
    tokens = count_tokens(prompt)
    at = simulate([prompt, prompt], price=unit, min_cacheable_tokens=tokens)
    assert [(r.cache_write_tokens, r.cache_read_tokens) for r in at.requests] == [
        (tokens, 0),
        (0, tokens),
    ]
    under = simulate([prompt, prompt], price=unit, min_cacheable_tokens=tokens + 1)
    assert [r.uncached_input_tokens for r in under.requests] == [tokens, tokens]
    assert under.cache_write_tokens == under.cache_read_tokens == 0


def test_a_last_message_one_token_longer_reads_what_an_earlier_boundary_cached() -> None:
    unit = price("gpt-4o")
    head = [SYSTEM, _words(1_500)]
    first = [*head, _words(10)]
    second = [*head, _words(11)]  # the same request but for one more word at its end
    bill = simulate([first, second], price=unit, counter="o200k_base", cache_points="message")
    cached = count_tokens(head, counter="o200k_base") - 3  # no reply priming: a prefix
    assert bill.requests[1].cache_read_tokens == cached - cached % 128


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    conv=conversations(max_turns=10),
    model=st.sampled_from(["gpt-4o", "gpt-4.1", "claude-sonnet-4-5", "claude-haiku-4-5"]),
    cuts=st.lists(st.integers(1, 12), min_size=1, max_size=4),
)
def test_every_request_is_billed_as_counted_and_split_whole(
    conv: Any, model: str, cuts: list[int]
) -> None:
    requests = [
        Request(messages=list(conv.items[:cut]), tools=conv.tools, model=model)
        for cut in sorted(cuts)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bill = simulate(requests, price={model: price(model)})
        for row, request in zip(bill.requests, requests, strict=True):
            counted = count_tokens(request.messages, model=model, tools=request.tools)
            assert row.input_tokens == counted
            assert row.input_tokens == (
                row.uncached_input_tokens + row.cache_write_tokens + row.cache_read_tokens
            )
            if row.input_tokens < price(model).min_cacheable_tokens:
                assert row.cache_write_tokens == row.cache_read_tokens == 0
            if model.startswith("gpt"):
                assert row.cache_read_tokens % 128 == 0


@pytest.mark.parametrize("field", ["input_cost_per_token", "output_cost_per_token"])
def test_a_litellm_price_given_as_true_names_the_row_and_field(field: str) -> None:
    row = {"input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05, field: True}
    # Used to raise decimal.InvalidOperation from inside the import.
    with pytest.raises(ConfigError, match=f"LiteLLM row 'm': {field} must be a number"):
        PriceTable.from_litellm({"m": row})
