"""Token accounting per provider: tool calls, tool definitions, images, the Anthropic counter."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import ctxpack
from ctxpack import count_tokens, from_anthropic, pack
from ctxpack.tokens import tool_definition_tokens

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "unit": {"type": "string", "enum": ["C", "F"], "description": "Unit"},
            },
            "required": ["city"],
        },
    },
}


def _by_hand(counter: ctxpack.TokenCounter) -> int:
    # OpenAI cookbook recipe: 7 per function (10 for cl100k_base models), 3 for properties, 3 per
    # property, enum -3 and 3 per item, 12 at the end; descriptions lose their final period.
    n = counter.count
    return (
        (10 if counter.name == "cl100k_base" else 7)
        + n("get_weather:Current weather in a city")
        + 3
        + 3 + n("city:string:City name")
        + 3 - 3 + 3 + n("C") + 3 + n("F") + n("unit:string:Unit")
        + 12
    )  # fmt: skip


def test_tool_definitions_follow_the_published_recipe() -> None:
    # The recipe was fitted on a prompt with a system message; without one, the functions cost
    # more (openai-chat-tokens), and a count that does not know the prompt is that larger one.
    counter = ctxpack.get_counter("gpt-4")
    assert tool_definition_tokens([WEATHER], counter) >= _by_hand(counter)
    messages = [
        {"role": "system", "content": "You answer about the weather."},
        {"role": "user", "content": "Weather in Oslo?"},
    ]
    assert count_tokens(messages, model="gpt-4", tools=[WEATHER]) == count_tokens(
        messages, model="gpt-4"
    ) + _by_hand(counter)


def test_anthropic_tool_definitions_add_the_tool_prompt() -> None:
    counter = ctxpack.get_counter()
    tool = {"name": "get_weather", "description": "Weather.", "input_schema": {"type": "object"}}
    assert tool_definition_tokens([tool], counter) > 346


def test_pack_counts_tool_definitions_against_the_budget() -> None:
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "old " * 40},
        {"role": "user", "content": "Weather in Oslo?"},
    ]
    plain = pack(messages, budget=100, model="gpt-4")
    assert len(plain.messages) == 3
    with_tools = pack(messages, budget=100, model="gpt-4", tools=[WEATHER])
    # With the system message kept, the functions are written into it (see test_tool_tokens).
    assert with_tools.tool_tokens == count_tokens(
        with_tools.messages, tools=[WEATHER]
    ) - count_tokens(with_tools.messages)
    assert with_tools.tool_tokens <= tool_definition_tokens([WEATHER], ctxpack.get_counter())
    assert len(with_tools.messages) == 2
    assert with_tools.tokens == count_tokens(with_tools.messages, tools=[WEATHER])
    assert with_tools.tokens <= 100


def test_tool_call_arguments_and_names_are_counted() -> None:
    def calling(arguments: str) -> list[dict[str, Any]]:
        call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}
        return [{"role": "assistant", "content": None, "tool_calls": [call]}]

    counter = ctxpack.get_counter()
    longer = '{"query": "weather in oslo tomorrow"}'
    diff = count_tokens(calling(longer)) - count_tokens(calling("{}"))
    assert diff == counter.count(longer) - counter.count("{}")


def test_images_cost_their_published_formulas() -> None:
    def image(part: dict[str, Any]) -> int:
        with_image = [{"role": "user", "content": [{"type": "text", "text": "x"}, part]}]
        return count_tokens(with_image) - count_tokens([{"role": "user", "content": "x"}])

    low = {"type": "image_url", "image_url": {"url": "https://x/a.png", "detail": "low"}}
    assert image(low) == 85
    # 2048x4096 high detail: scaled to 1024x2048, then to 768x1536: 2x3 tiles.
    high = {"type": "image_url", "image_url": {"url": "u", "width": 2048, "height": 4096}}
    assert image(high) == 85 + 170 * 6
    claude = {"type": "image", "source": {"type": "url", "url": "u"}, "width": 750, "height": 500}
    assert image(claude) == 500
    assert image({"type": "image", "source": {"type": "url", "url": "u"}}) == 1600


def test_the_counter_used_is_visible_in_the_result() -> None:
    msgs = from_anthropic([{"role": "user", "content": "Bonjour"}], system="Be brief.")
    default = pack(msgs, budget=100)
    assert (default.counter, default.exact) == ("cl100k_base", True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ctxpack.tokens.ApproximateTokenCountWarning)
        claude = pack(msgs, budget=100, model="claude-sonnet-4-5")
    assert claude.exact is False and claude.counter.startswith("anthropic-approx")
    assert claude.tokens >= default.tokens

    def exact(text: str) -> int:  # stands in for a call to Anthropic's count-tokens endpoint
        return len(text.split())

    mine = pack(msgs, budget=100, counter=exact)
    assert (mine.counter, mine.exact) == ("exact", True)


@pytest.mark.parametrize("factor", [0.9, 0.5])
def test_the_anthropic_margin_never_undercounts(factor: float) -> None:
    with pytest.raises(ctxpack.ConfigError):
        ctxpack.tokens.anthropic_approx_counter(factor)
