"""Prices, the prompt-cache model and the filtering what-if, on sequences small enough to check
by hand.

Counts use a word counter: a message of ``n`` words costs ``n + 4`` tokens (3 of framing, 1 for
the role), and a prompt 3 more for the reply priming.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from ctxpack import ConfigError
from ctxpack.cost import (
    Price,
    PriceTable,
    Request,
    filtering_economics,
    price,
    shipped_prices,
    simulate,
)


def words(text: str) -> int:
    return len(text.split())


P = Price(input=3, output=15, cache_write_5m=3.75, cache_write_1h=6, cache_read=0.3)


def user(n: int, word: str = "w") -> dict[str, Any]:
    return {"role": "user", "content": " ".join([word] * n)}


def assistant(n: int) -> dict[str, Any]:
    return {"role": "assistant", "content": " ".join(["a"] * n)}


# --- a worked what-if table -----------------------------------------------------------------


def test_filtering_economics_gives_the_worked_table_exactly() -> None:
    large = Price(input=10, output=50, cache_write_5m=12.5, cache_write_1h=20, cache_read=0.25)
    small = Price(input=0.25, output=1.5, cache_write_5m=0.25, cache_write_1h=0.25, cache_read=0)
    e = filtering_economics(
        large=large,
        small=small,
        raw_input=1_450_000,
        filtered_input=560_000,
        large_output=40_000,
        small_output=10_000,
    )
    assert f"{e.without_filtering:.2f}" == "16.50"
    assert f"{e.large_cost:.2f}" == "7.60"
    assert f"{e.small_cost:.2f}" == "0.38"
    assert f"{e.with_filtering:.2f}" == "7.98"
    assert f"{e.saving:.2f}" == "8.52"
    assert f"{e.saving_share:.1%}" == "51.7%"
    assert e.break_even_tokens == 37_750
    assert f"{e.break_even_share:.1%}" == "2.6%"


def test_filtering_economics_rejects_a_filter_that_adds_tokens() -> None:
    with pytest.raises(ConfigError, match="filtered_input"):
        filtering_economics(
            large=P, small=P, raw_input=10, filtered_input=20, large_output=0, small_output=0
        )
    with pytest.raises(ConfigError, match="raw_input must be an int >= 0"):
        filtering_economics(
            large=P, small=P, raw_input=-1, filtered_input=0, large_output=0, small_output=0
        )


# --- the cache model ------------------------------------------------------------------------


def test_an_appended_history_reads_what_the_previous_request_wrote() -> None:
    first = [user(2000)]  # 2004 tokens + 3 priming
    second = [*first, assistant(10), user(5)]  # + 14 + 9
    bill = simulate([first, second], price=P, counter=words)
    r1, r2 = bill.requests
    assert (r1.input_tokens, r1.cache_write_tokens, r1.cache_read_tokens) == (2007, 2007, 0)
    # The priming of the first prompt is not part of the second one's prefix: rewritten.
    assert (r2.input_tokens, r2.cache_read_tokens, r2.cache_write_tokens) == (2030, 2004, 26)
    assert r2.uncached_input_tokens == 0
    assert r2.cost == pytest.approx((2004 * 0.3 + 26 * 3.75) / 1e6)
    assert bill.input_tokens == 2007 + 2030
    assert bill.cost == pytest.approx(r1.cost + r2.cost)
    assert bill.cache_hit_rate == pytest.approx(2004 / (2007 + 2030))


def test_a_prompt_under_the_minimum_is_plain_input_and_never_cached() -> None:
    short = [user(100)]
    bill = simulate([short, short], price=P, counter=words)
    for row in bill.requests:
        assert (row.uncached_input_tokens, row.cache_write_tokens, row.cache_read_tokens) == (
            107,
            0,
            0,
        )
    assert bill.cost == pytest.approx(2 * 107 * 3 / 1e6)


def test_output_is_billed_at_the_output_price() -> None:
    bill = simulate([Request(messages=[user(10)], output_tokens=1000)], price=P, counter=words)
    assert bill.output_tokens == 1000
    assert bill.cost == pytest.approx((17 * 3 + 1000 * 15) / 1e6)


def test_the_ttl_expires_after_the_last_use_and_every_use_refreshes_it() -> None:
    a = [user(2000)]
    b = [*a, assistant(1), user(1)]
    c = [*b, assistant(1), user(1)]
    # 200 s then 250 s apart: each within 5 minutes of the last use, though 450 s after the write.
    refreshed = simulate([a, b, c], price=P, counter=words, timestamps=[0, 200, 450])
    assert [r.cache_read_tokens > 0 for r in refreshed.requests] == [False, True, True]
    # 301 s idle: the whole prefix is written again.
    cold = simulate([a, b], price=P, counter=words, timestamps=[0, 301])
    assert cold.requests[1].cache_read_tokens == 0
    assert cold.requests[1].cache_write_tokens == cold.requests[1].input_tokens
    # The 1-hour lifetime keeps it, and writes at the 1-hour price.
    hour = simulate([a, b], price=P, counter=words, ttl="1h", timestamps=[0, 301])
    assert hour.requests[1].cache_read_tokens == 2004
    assert hour.requests[0].cost == pytest.approx(2007 * 6 / 1e6)


def test_timestamps_may_be_datetimes() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    a = [user(2000)]
    b = [*a, assistant(1), user(1)]
    bill = simulate([a, b], price=P, counter=words, timestamps=[t0, t0 + timedelta(minutes=6)])
    assert bill.requests[1].cache_read_tokens == 0


def test_naive_and_aware_datetimes_are_not_mixed() -> None:
    # A naive datetime is read in the machine's local time: beside an aware one, the gap
    # between them would move with the time zone the bill runs in.
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    a = [user(2000)]
    with pytest.raises(ConfigError, match=r"timestamps\[1\].*time zone"):
        simulate([a, a], price=P, counter=words, timestamps=[t0, datetime(2026, 1, 1, 0, 1)])


def test_a_model_switch_rewrites_at_the_target_price_and_each_model_keeps_its_cache() -> None:
    other = Price(input=10, output=50, cache_write_5m=12.5, cache_write_1h=20, cache_read=0.25)
    a = [user(2000)]
    b = [*a, assistant(1), user(1)]
    c = [*b, assistant(1), user(1)]
    requests = [
        Request(messages=a, model="small"),
        Request(messages=b, model="big"),
        Request(messages=c, model="small"),
    ]
    bill = simulate(requests, price={"small": P, "big": other}, counter=words)
    switch = bill.requests[1]
    assert switch.cache_read_tokens == 0
    assert switch.cost == pytest.approx(switch.input_tokens * 12.5 / 1e6)
    # Back on the first model: its entry for `a` is still alive.
    assert bill.requests[2].cache_read_tokens == 2004


def test_an_edit_in_the_middle_breaks_the_prefix_from_there() -> None:
    head, old, tail = user(1500, "h"), user(600, "o"), user(600, "t")
    before = [head, old, tail]
    after = [head, user(1, "cleared"), tail]
    # One breakpoint per request: nothing was ever written at the end of `head` alone.
    per_request = simulate([before, after], price=P, counter=words)
    assert per_request.requests[1].cache_read_tokens == 0
    # An entry at every message boundary: the head is read back.
    per_message = simulate([before, after], price=P, counter=words, cache_points="message")
    assert per_message.requests[1].cache_read_tokens == 1504


def test_an_openai_model_reads_the_cache_in_128_token_increments() -> None:
    # OpenAI's prompt-caching guide: cached tokens come in increments of 128 after the first
    # 1,024; the rest of the matched prefix is billed as input (its writes cost input too).
    first = [user(1200)]  # 1204 tokens + 3 priming
    second = [*first, assistant(10), user(5)]
    for points in ("request", "message"):
        bill = simulate(
            [Request(messages=m, model="gpt-4o") for m in (first, second)],
            price=price("gpt-4o"),
            counter=words,
            cache_points=points,
        )
        row = bill.requests[1]
        assert row.cache_read_tokens == 1152  # 1,204 matched, cut to 1,024 + 128
        assert row.cache_write_tokens == row.input_tokens - 1152
        assert row.cost == pytest.approx((1152 * 1.25 + (row.input_tokens - 1152) * 2.5) / 1e6)
    # Claude reads the whole matched prefix, whatever its length.
    claude = simulate(
        [Request(messages=m, model="claude-sonnet-4-5") for m in (first, second)],
        price=price("claude-sonnet-4-5"),
        counter=words,
    )
    assert claude.requests[1].cache_read_tokens == 1204


def test_the_default_cache_points_are_the_providers_own() -> None:
    # OpenAI caches every prefix on its own (its prompt-caching guide): an edit keeps the head.
    # Claude's harness sets one breakpoint per request: the head was never an entry. A price of
    # the caller's own names no provider: one breakpoint per request, as before.
    head, old, tail = user(2500, "h"), user(600, "o"), user(600, "t")  # the head: 2,504 tokens
    before, after = [head, old, tail], [head, user(1, "cleared"), tail]
    for model, read in (("gpt-5", 2432), ("gemini-2.5-pro", 2504), ("claude-sonnet-4-5", 0)):
        requests = [Request(messages=m, model=model) for m in (before, after)]
        bill = simulate(requests, price=price(model), counter=words)
        assert bill.requests[1].cache_read_tokens == read, model
    # A request naming no model: its shipped price's model (a Gemini price names none).
    for model, read in (("gpt-5", 2432), ("claude-sonnet-4-5", 0), ("gemini-2.5-pro", 0)):
        unnamed = simulate([before, after], price=price(model), counter=words)
        assert unnamed.requests[1].cache_read_tokens == read, model
    assert simulate([before, after], price=P, counter=words).requests[1].cache_read_tokens == 0


def test_an_entry_further_back_than_the_lookback_is_not_found() -> None:
    first = [user(2000)]
    grown = [*first, *[assistant(1) for _ in range(25)]]
    assert simulate([first, grown], price=P, counter=words).requests[1].cache_read_tokens == 0
    found = simulate([first, grown], price=P, counter=words, lookback=None)
    assert found.requests[1].cache_read_tokens == 2004


def test_changing_the_tools_invalidates_everything_after_them() -> None:
    tool = {"type": "function", "function": {"name": "bash", "description": "Run a command."}}
    other = {"type": "function", "function": {"name": "python", "description": "Run code."}}
    a = Request(messages=[user(2000)], tools=[tool])
    b = Request(messages=[user(2000), assistant(1)], tools=[other])
    assert simulate([a, b], price=P, counter=words).requests[1].cache_read_tokens == 0
    same = Request(messages=[user(2000), assistant(1)], tools=[tool])
    assert simulate([a, same], price=P, counter=words).requests[1].cache_read_tokens > 2000


def test_requests_may_be_mappings_and_bad_ones_are_named() -> None:
    bill = simulate([{"messages": [user(3)], "output_tokens": 2}], price=P, counter=words)
    assert bill.requests[0].output_tokens == 2
    with pytest.raises(ConfigError, match="request 0"):
        simulate([{"messages": [user(3)], "output": 2}], price=P)
    with pytest.raises(ConfigError, match="request 1"):
        simulate([[user(3)], "hello"], price=P)  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="ttl"):
        simulate([[user(3)]], price=P, ttl="10m")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="one per request"):
        simulate([[user(3)]], price=P, timestamps=[0, 1])
    with pytest.raises(ConfigError, match="back in time"):
        simulate([[user(3)], [user(3)]], price=P, timestamps=[5, 1])
    with pytest.raises(ConfigError, match="no price for model 'x'"):
        simulate([Request(messages=[user(3)], model="x")], price={"y": P})


@pytest.mark.parametrize(
    "empty",
    [[], {"messages": []}, Request(messages=[], output_tokens=10), Request(messages=[], tools=[])],
)
def test_a_request_without_a_message_is_refused_naming_it(empty: Any) -> None:
    # Used to be billed $0 (or its output alone): no provider takes it, so none was billed.
    with pytest.raises(ConfigError, match="request 1: messages is empty"):
        simulate([[user(3)], empty], price=P, counter=words)
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    with pytest.raises(ConfigError, match="request 0: messages is empty, only tools"):
        simulate([Request(messages=[], tools=[tool])], price=P)
    # Not empty: a system prompt alone, and no request at all costs nothing.
    alone = simulate([[{"role": "system", "content": "Be brief."}]], price=P, counter=words)
    assert alone.input_tokens > 0
    assert simulate([], price=P).cost == 0


def test_the_default_counter_counts_like_count_tokens() -> None:
    from ctxpack import count_tokens

    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"}]
    assert simulate([messages], price=P).input_tokens == count_tokens(messages)


def test_each_request_is_counted_with_its_models_tokenizer_unless_a_counter_is_given() -> None:
    from ctxpack import count_tokens
    from ctxpack.errors import ApproximateTokenCountWarning

    messages = [{"role": "user", "content": "You are a coding agent. " * 200}]
    prices = {"claude-sonnet-4-5": P, "gpt-4o": P, "my-label": P}
    requests = [Request(messages=messages, model=m) for m in prices]
    with pytest.warns(ApproximateTokenCountWarning):
        bill = simulate(requests, price=prices)
        claude = count_tokens(messages, model="claude-sonnet-4-5")
    assert [r.input_tokens for r in bill.requests] == [
        claude,
        count_tokens(messages, model="gpt-4o"),
        count_tokens(messages),  # a label ctxpack knows no tokenizer for: cl100k_base
    ]
    assert claude > count_tokens(messages)
    fixed = simulate(requests, price=prices, counter="cl100k_base")
    assert {r.input_tokens for r in fixed.requests} == {count_tokens(messages)}


def test_a_request_naming_no_model_is_counted_as_the_model_of_its_shipped_price() -> None:
    # simulate(turns, price=price("claude-sonnet-4-5")) counted Claude's requests with
    # cl100k_base, about 30% under what Anthropic bills.
    from ctxpack import count_tokens
    from ctxpack.errors import ApproximateTokenCountWarning

    messages = [{"role": "user", "content": "Réglez le cache à Zürich; 東京のログを読む. " * 100}]
    with pytest.warns(ApproximateTokenCountWarning):
        claude = simulate([messages], price=price("claude-sonnet-4-5")).input_tokens
        assert claude == count_tokens(messages, model="claude-sonnet-4-5")
        by_default = simulate([messages], price={"default": price("claude-sonnet-4-5")})
    assert by_default.input_tokens == claude
    gpt = simulate([messages], price=price("gpt-4o")).input_tokens
    assert gpt == count_tokens(messages, model="gpt-4o") != count_tokens(messages)
    # A price of the caller's own, even at Claude's numbers, names no model: cl100k_base.
    own = price("claude-sonnet-4-5").model_copy(update={"date": None, "source": None})
    assert simulate([messages], price=own).input_tokens == count_tokens(messages)
    # A request's own model still decides.
    named = Request(messages=messages, model="gpt-4o")
    assert simulate([named], price=price("claude-sonnet-4-5")).input_tokens == gpt


def test_a_price_shared_by_claude_models_of_two_tokenizers_counts_as_the_newer() -> None:
    # Opus 4.6 and 4.7 have one shipped price, but 4.7's tokenizer makes about a third more
    # tokens: price("claude-opus-4-7") counted as Opus 4.6, a quarter short. The larger count
    # is taken (a bill errs high); a Request's model says which.
    from ctxpack import count_tokens

    messages = [{"role": "user", "content": "word and more words, with text. " * 500}]
    with pytest.warns(Warning):
        unnamed = simulate([messages], price=price("claude-opus-4-7")).input_tokens
        assert unnamed == count_tokens(messages, model="claude-opus-4-7")
        named = Request(messages=messages, model="claude-opus-4-6")
        as_4_6 = simulate([named], price=price("claude-opus-4-6")).input_tokens
        assert as_4_6 == count_tokens(messages, model="claude-opus-4-6") < unnamed


def test_the_tools_of_a_request_naming_no_model_are_counted_as_its_shipped_price_s_model() -> None:
    # Counted as Claude, but the tools were framed as OpenAI's: the tool-use system prompt
    # Anthropic adds to every request with tools (hundreds of tokens) was left out of the bill.
    from ctxpack import count_tokens

    tools = [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ]
    messages = [{"role": "user", "content": "word " * 2000}]
    with pytest.warns(Warning):
        unnamed = simulate(
            [Request(messages=messages, tools=tools)], price=price("claude-sonnet-4-5")
        )
        expected = count_tokens(messages, model="claude-sonnet-4-5", tools=tools)
    assert unnamed.input_tokens == expected


def test_messages_differing_only_in_a_provider_field_do_not_share_a_cache_entry() -> None:
    # A refusal or a legacy function_call rides in the message's extras and is sent: two
    # prompts differing there were read whole from the cache, more tokens than were written.
    base = [{"role": "system", "content": "word " * 1200}, {"role": "user", "content": "go"}]
    turns = [
        [*base, {"role": "assistant", "content": None, "refusal": refusal}]
        for refusal in ("I can't help with that.", "No.")
    ]
    # One entry per request, the whole prompt: the second finds none.
    first, second = simulate(turns, price=price("gpt-4o"), cache_points="request").requests
    assert first.cache_write_tokens == first.input_tokens
    assert second.cache_read_tokens == 0 and second.cache_write_tokens == second.input_tokens


def test_a_legacy_function_call_beside_tool_calls_is_not_part_of_the_cached_prefix() -> None:
    # OpenAI is never sent a function_call beside tool calls (to_openai leaves it out), so two
    # prompts differing only there are the same prefix: the second reads the first's entry.
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    base = [{"role": "system", "content": "word " * 1200}, {"role": "user", "content": "go"}]
    turns = [
        [
            *base,
            {"role": "assistant", "content": None, "tool_calls": [call], "function_call": legacy},
            {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
        ]
        for legacy in ({"name": "ls", "arguments": "{}"}, {"name": "cat", "arguments": "{}"})
    ]
    first, second = simulate(turns, price=price("gpt-4o")).requests
    assert first.input_tokens == second.input_tokens
    # The whole prompt is found; OpenAI reads it in 128-token increments.
    assert second.cache_read_tokens == first.input_tokens - first.input_tokens % 128 > 1024


def test_a_breakpoint_moved_to_the_last_message_still_reads_the_earlier_prefix() -> None:
    # Anthropic's multi-turn recipe: each request marks its last block with cache_control, so
    # the block marked in one request is unmarked in the next. The marker is not content: the
    # next request reads the prefix the first one wrote (no hit at all was predicted).
    mark = {"type": "ephemeral"}
    history = "word " * 2000
    first = [
        {"role": "user", "content": [{"type": "text", "text": history, "cache_control": mark}]}
    ]
    second = [
        {"role": "user", "content": [{"type": "text", "text": history}]},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": [{"type": "text", "text": "more", "cache_control": mark}]},
    ]
    unmarked = [
        [{"role": "user", "content": [{"type": "text", "text": history}]}],
        [{**m, "content": [{"type": "text", "text": m["content"][0]["text"]}]} for m in second],
    ]
    with pytest.warns(Warning):
        marked = simulate([first, second], price=price("claude-sonnet-4-5"))
        plain = simulate(unmarked, price=price("claude-sonnet-4-5"))
    rows = [(r.cache_write_tokens, r.cache_read_tokens) for r in marked.requests]
    assert rows == [(r.cache_write_tokens, r.cache_read_tokens) for r in plain.requests]
    assert rows[1][1] > 0


# --- price tables ---------------------------------------------------------------------------


def test_the_shipped_table_is_dated_and_sourced() -> None:
    table = shipped_prices()
    assert table.date and table.sources
    assert price("claude-sonnet-4-5") == table.prices["claude-sonnet-4-5"]
    sonnet = price("claude-sonnet-4-5")
    # Anthropic's structure: writes 1.25x (5 minutes) or 2x (1 hour), reads 0.1x.
    assert sonnet.cache_write_5m == pytest.approx(1.25 * sonnet.input)
    assert sonnet.cache_write_1h == pytest.approx(2 * sonnet.input)
    assert sonnet.cache_read == pytest.approx(0.1 * sonnet.input)


def test_an_unknown_model_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"known models: .*claude-sonnet-4-5"):
        price("claude-unknown")


def test_a_table_loads_from_a_file_and_merges_over_the_shipped_one(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    row = {"input": 1, "output": 2, "cache_write_5m": 1.25, "cache_write_1h": 2, "cache_read": 0.1}
    path.write_text(
        json.dumps({"_meta": {"date": "2099-01-01", "sources": ["mine"]}, "mine-1": row}),
        "utf-8",
    )
    mine = PriceTable.load(path)
    merged = shipped_prices().merge(mine)
    assert merged.price("mine-1").input == 1
    assert merged.price("claude-sonnet-4-5") == price("claude-sonnet-4-5")
    assert merged.date == "2099-01-01"
    assert "mine" in merged.sources


def test_a_bad_table_file_says_what_is_wrong(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text('{"m": {"input": -1}}', "utf-8")
    with pytest.raises(ConfigError, match="not a valid price table"):
        PriceTable.load(path)
    path.write_text("{nope", "utf-8")
    with pytest.raises(ConfigError, match="not valid JSON"):
        PriceTable.load(path)
    with pytest.raises(ConfigError, match="cannot read"):
        PriceTable.load(tmp_path / "missing.json")


def test_a_litellm_map_is_imported_per_million() -> None:
    litellm = {
        "sample_spec": {"input_cost_per_token": "see docs", "max_input_tokens": "max"},
        "claude-x": {
            "input_cost_per_token": 3e-06,
            "output_cost_per_token": 1.5e-05,
            "cache_creation_input_token_cost": 3.75e-06,
            "cache_creation_input_token_cost_above_1hr": 6e-06,
            "cache_read_input_token_cost": 3e-07,
            "max_input_tokens": 200000,
            "litellm_provider": "anthropic",
        },
        "gpt-x": {
            "input_cost_per_token": 1.25e-06,
            "output_cost_per_token": 1e-05,
            "cache_read_input_token_cost": 1.25e-07,
        },
        "dall-e": {"input_cost_per_pixel": 1e-08},
    }
    table = PriceTable.from_litellm(litellm, date="2026-11-01")
    assert set(table.prices) == {"claude-x", "gpt-x"}
    assert table.price("claude-x") == Price(
        input=3,
        output=15,
        cache_write_5m=3.75,
        cache_write_1h=6,
        cache_read=0.3,
        context_window=200000,
    )
    # No write premium given: writes at the input price.
    gpt = table.price("gpt-x")
    assert (gpt.cache_write_5m, gpt.cache_write_1h, gpt.cache_read) == (1.25, 1.25, 0.125)
    with pytest.raises(ConfigError, match="not a valid price"):
        PriceTable.from_litellm({"m": {"input_cost_per_token": -1, "output_cost_per_token": 0}})


LITELLM_PRICES = [
    "input_cost_per_token",
    "output_cost_per_token",
    "cache_read_input_token_cost",
    "cache_creation_input_token_cost",
    "cache_creation_input_token_cost_above_1hr",
]


@pytest.mark.parametrize("value", ["3e-07", "see docs", True, [3e-07]])
@pytest.mark.parametrize("field", LITELLM_PRICES)
def test_a_litellm_price_that_is_not_a_number_names_the_row_and_field(
    field: str, value: Any
) -> None:
    # An input or output price written as a text used to skip its row unsaid: the model was
    # then unknown to price(), far from the cause.
    row = {"input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05, field: value}
    with pytest.raises(ConfigError, match=f"LiteLLM row 'm': {field} must be a number"):
        PriceTable.from_litellm({"m": row})


def test_a_litellm_null_price_is_absent_as_litellm_reads_it() -> None:
    litellm = {
        # LiteLLM's description row: words in some versions, zeros in others.
        "sample_spec": {"input_cost_per_token": "float", "output_cost_per_token": 0.0},
        # A subscription's model, billed per seat: no per-token price.
        "chatgpt/gpt-5.4": {"input_cost_per_token": None, "output_cost_per_token": None},
        "gpt-x": {
            "input_cost_per_token": 1.25e-06,
            "output_cost_per_token": 1e-05,
            "cache_read_input_token_cost": None,  # as get_model_info() lists an unknown price
            "cache_creation_input_token_cost": None,
        },
    }
    table = PriceTable.from_litellm(litellm)
    assert set(table.prices) == {"gpt-x"}
    gpt = table.price("gpt-x")
    assert (gpt.cache_write_5m, gpt.cache_write_1h, gpt.cache_read) == (1.25, 1.25, 1.25)


# ------------------------------------------------------------------------ the shipped table

CURRENT_MODELS = [
    "gpt-4o",
    "gpt-4o-mini",
    "gpt-4.1",
    "gpt-4.1-mini",
    "gpt-4.1-nano",
    "gpt-5",
    "gpt-5-mini",
    "gpt-5-nano",
    "o1",
    "o3",
    "o4-mini",
    "claude-haiku-4-5",
    "claude-sonnet-4-5",
    "claude-sonnet-4-6",
    "claude-opus-4-5",
    "claude-opus-4-6",
    "gemini-2.5-pro",
    "gemini-2.5-flash",
]


@pytest.mark.parametrize("model", CURRENT_MODELS)
def test_current_models_have_a_dated_sourced_price(model: str) -> None:
    p = price(model)
    assert p.date and p.source and "LiteLLM" in p.source
    assert 0 < p.cache_read < p.input < p.output
    assert p.cache_write_5m >= p.input and p.cache_write_1h >= p.cache_write_5m
    assert p.context_window is not None


def test_anthropic_prices_its_two_cache_writes() -> None:
    p = price("claude-sonnet-4-5")
    # Anthropic's published multipliers: 1.25x for 5 minutes, 2x for an hour, 0.1x to read.
    assert (p.cache_write_5m, p.cache_write_1h, p.cache_read) == (3.75, 6.0, 0.3)


def test_gemini_reads_its_cache_at_a_tenth() -> None:
    for model in ("gemini-2.5-pro", "gemini-2.5-flash"):
        p = price(model)
        assert p.cache_read == pytest.approx(p.input / 10)
        assert p.cache_write_5m == p.input  # implicit caching: no write premium


@pytest.mark.parametrize(
    ("name", "row"),
    [
        ("gpt-4o-2024-11-20", "gpt-4o"),
        ("gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-opus-4-5@20251101", "claude-opus-4-5"),  # Vertex's spelling
        ("openai/gpt-4o", "gpt-4o"),
        ("anthropic/claude-haiku-4-5", "claude-haiku-4-5"),
        ("GPT-4o-Mini", "gpt-4o-mini"),
        ("o3-2025-04-16", "o3"),
    ],
)
def test_dated_names_and_provider_prefixes_resolve(name: str, row: str) -> None:
    assert price(name).model_dump(exclude={"date", "source"}) == price(row).model_dump(
        exclude={"date", "source"}
    )


def test_a_dated_name_priced_differently_keeps_its_own_row() -> None:
    # The first gpt-4o snapshot cost twice the later ones.
    assert price("gpt-4o-2024-05-13").input == 2 * price("gpt-4o").input


def test_an_unknown_model_lists_near_matches() -> None:
    with pytest.raises(ConfigError, match=r"nearest: .*gpt-4o-mini"):
        price("gpt-4o-minii")
    with pytest.raises(ConfigError, match=r"gemini-2\.5-pro"):
        price("gemini-2.5-prro")


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4.1", "gemini-2.5-pro", "gemini-2.5-flash"])
def test_simulate_bills_with_current_prices(model: str) -> None:
    p = price(model)
    turn1 = [{"role": "user", "content": "word " * 3000}]
    turn2 = [*turn1, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "and?"}]
    bill = simulate([turn1, turn2], price=p, counter="o200k_base")
    first, second = bill.requests
    assert second.cache_read_tokens > 0
    expected = sum(
        (
            r.uncached_input_tokens * p.input
            + r.cache_write_tokens * p.cache_write_5m
            + r.cache_read_tokens * p.cache_read
        )
        / 1_000_000
        for r in (first, second)
    )
    assert bill.cost == pytest.approx(expected)
    # Reading the history from the cache is cheaper than sending it again.
    assert second.cost < first.cost


# --- strict numbers -------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["100", 2.0, 10**30, 2**53 + 1])
def test_output_tokens_is_an_int_up_to_2_53_never_coerced(value: Any) -> None:
    with pytest.raises(ConfigError, match="output_tokens"):
        Request(messages=[user(3)], output_tokens=value)
    with pytest.raises(ConfigError, match="request 0: output_tokens"):
        simulate([{"messages": [user(3)], "output_tokens": value}], price=P)
    assert Request(messages=[user(3)], output_tokens=2**53).output_tokens == 2**53


@pytest.mark.parametrize(
    "field", ["input", "output", "cache_write_5m", "cache_write_1h", "cache_read"]
)
def test_a_price_given_as_text_is_refused(field: str) -> None:
    fields: dict[str, Any] = {
        "input": 3, "output": 15, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3
    }  # fmt: skip
    with pytest.raises(ConfigError, match=f"Price: {field}='3'"):
        Price(**{**fields, field: "3"})
    with pytest.raises(ConfigError, match="context_window"):
        Price(**fields, context_window="200000")
    assert Price(**fields).input == 3.0


# --- the minimum cacheable length follows the model -----------------------------------------


@pytest.mark.parametrize(
    ("model", "minimum"),
    [
        ("claude-haiku-4-5", 4096),
        ("claude-haiku-4-5-20251001", 4096),
        ("claude-opus-4-5", 4096),
        ("claude-opus-4-7", 4096),
        ("claude-sonnet-4-5", 1024),
        ("gpt-5", 1024),
        # Google's implicit-caching table; Flash-Lite's is the API's own refusal (2,048).
        ("gemini-2.5-pro", 2048),
        ("gemini-2.5-flash", 2048),
        ("gemini-2.5-flash-lite", 2048),
    ],
)
def test_the_shipped_prices_carry_each_models_minimum_cacheable_length(
    model: str, minimum: int
) -> None:
    assert price(model).min_cacheable_tokens == minimum


def test_simulate_applies_each_requests_model_minimum_unless_one_is_passed() -> None:
    turn1 = [user(2000)]
    turn2 = [*turn1, assistant(2), user(2)]
    haiku = price("claude-haiku-4-5")
    # ~2k tokens: above Sonnet's 1,024, under Haiku 4.5's 4,096.
    bill = simulate([turn1, turn2], price=haiku, counter="cl100k_base")
    assert bill.cache_write_tokens == bill.cache_read_tokens == 0
    assert bill.uncached_input_tokens == bill.input_tokens
    forced = simulate([turn1, turn2], price=haiku, min_cacheable_tokens=1024, counter="cl100k_base")
    assert forced.cache_read_tokens > 0
    both = {"claude-haiku-4-5": haiku, "claude-sonnet-4-5": price("claude-sonnet-4-5")}
    mixed = simulate(
        [Request(messages=turn1, model=m) for m in ("claude-haiku-4-5", "claude-sonnet-4-5")],
        price=both,
        counter="cl100k_base",
    )
    assert [r.cache_write_tokens > 0 for r in mixed.requests] == [False, True]
    own = P.model_copy(update={"min_cacheable_tokens": 10_000})
    assert simulate([turn1, turn2], price=own).cache_write_tokens == 0


def test_a_litellm_row_gets_the_known_minimum_of_its_model() -> None:
    row = {"input_cost_per_token": 1e-06, "output_cost_per_token": 5e-06}
    rows = {"claude-haiku-4-5-20251001": row, "my-model": row, "gemini/gemini-2.5-pro": row}
    table = PriceTable.from_litellm(rows)
    assert table.price("claude-haiku-4-5-20251001").min_cacheable_tokens == 4096
    assert table.price("gemini/gemini-2.5-pro").min_cacheable_tokens == 2048
    assert table.price("my-model").min_cacheable_tokens == 1024


# --- a request's model finds its price entry as price() finds a name ------------------------


def test_a_dated_or_prefixed_model_finds_its_familys_price_and_shares_its_cache() -> None:
    turn1 = [user(1500)]
    turn2 = [*turn1, assistant(2), user(2)]
    turn3 = [*turn2, assistant(2), user(2)]
    requests = [
        Request(messages=turn1, model="claude-sonnet-4-5"),
        Request(messages=turn2, model="claude-sonnet-4-5-20250929"),
        Request(messages=turn3, model="anthropic/Claude-Sonnet-4-5"),
    ]
    bill = simulate(requests, price={"claude-sonnet-4-5": P}, counter="cl100k_base")
    assert [r.cache_read_tokens > 0 for r in bill.requests] == [False, True, True]
    assert [r.model for r in bill.requests] == [r.model for r in requests]
    # Both spellings priced alike, as the shipped table lists them: still one model.
    both = {"claude-sonnet-4-5": P, "claude-sonnet-4-5-20250929": P}
    assert simulate(requests[:2], price=both, counter="cl100k_base").cache_read_tokens > 0
    # A snapshot priced apart is another model: its own price, its own cache.
    apart = {"gpt-4o": P, "gpt-4o-2024-05-13": P.model_copy(update={"input": 5.0})}
    split = [
        Request(messages=t, model=m) for t, m in ((turn1, "gpt-4o"), (turn2, "gpt-4o-2024-05-13"))
    ]
    assert simulate(split, price=apart, counter="cl100k_base").cache_read_tokens == 0
    # The exact key wins over a resolved one, and an unknown name is still refused.
    exact = simulate(
        requests[1:2],
        price={**both, "claude-sonnet-4-5": P.model_copy(update={"input": 9.0})},
        counter="cl100k_base",
    )
    assert (
        exact.requests[0].cost
        == simulate(requests[1:2], price=both, counter="cl100k_base").requests[0].cost
    )
    with pytest.raises(ConfigError, match="no price for model 'claude-opus-4-5'"):
        simulate([Request(messages=turn1, model="claude-opus-4-5")], price=both)


def test_the_write_price_of_a_cache_lifetime() -> None:
    assert (P.cache_write("5m"), P.cache_write("1h")) == (3.75, 6)
    with pytest.raises(ConfigError, match=r"ttl must be '5m' or '1h', got '2h'"):
        P.cache_write("2h")  # type: ignore[arg-type]
