"""Tool definitions against the prompt tokens the API reported, with and without a system message.

The figures are the test data of hmarr/openai-chat-tokens (tests/token-counts.test.ts, commit
b8e3b11, MIT), each checked against the API's ``usage.prompt_tokens`` for gpt-3.5-turbo
(cl100k_base), and the cookbook's ("How to count tokens with tiktoken"). The cookbook's recipe
was fitted on a prompt with a system message; without one, OpenAI adds its own for the functions
and the request costs more, which a count must not miss.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

import ctxpack
from ctxpack import count_tokens, pack
from ctxpack.tokens import get_counter, tool_definition_tokens

from .test_tool_tokens import WEATHER as WEATHER_TOOL
from .test_tool_tokens import WEATHER_MESSAGES

HELLO = [{"role": "user", "content": "hello"}]
GREETING = [{"role": "system", "content": "Hello"}, {"role": "user", "content": "Hi there"}]
FOO = {"name": "foo", "description": "Do a foo", "parameters": {"type": "object", "properties": {}}}
BING_BONG = {
    "name": "bing_bong",
    "description": "Do a bing bong",
    "parameters": {
        "type": "object",
        "properties": {
            "foo": {"type": "string"},
            "bar": {"type": "number", "description": "A number"},
        },
    },
}
NESTED = {
    "name": "bing_bong",
    "description": "Do a bing bong",
    "parameters": {
        "type": "object",
        "properties": {
            "foo": {
                "type": "object",
                "properties": {
                    "bar": {"type": "string", "enum": ["a", "b", "c"]},
                    "baz": {"type": "boolean"},
                },
            }
        },
    },
}
EMPTY = {"name": "do_stuff", "parameters": {"type": "object", "properties": {}}}
OTHER = {"name": "do_other_stuff", "parameters": {"type": "object", "properties": {}}}
WEATHER = WEATHER_TOOL["function"]  # the cookbook's example, as a bare function


def _tools(*functions: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": f} for f in functions]


# (messages, functions, the API's prompt tokens): counted exactly.
EXACT = [
    pytest.param(HELLO, [FOO], 36, id="a description, no system message"),
    pytest.param(HELLO, [BING_BONG], 57, id="two properties, no system message"),
    pytest.param(HELLO, [NESTED], 68, id="a nested object, no system message"),
    pytest.param(
        [{"role": "user", "content": "hello"}],
        [
            {
                **BING_BONG,
                "parameters": {"type": "object", "properties": {"foo": {"type": "string"}}},
            }
        ],
        49,
        id="one property, no system message",
    ),
    pytest.param(WEATHER_MESSAGES, [WEATHER], 105, id="the cookbook's, with its system message"),
]
# Counted at least as the API did (never under).
AT_LEAST = [
    pytest.param(HELLO, [EMPTY | {"name": "foo"}], 31, id="no description"),
    pytest.param(GREETING, [EMPTY], 35, id="a system message"),
    pytest.param([{"role": "system", "content": "Hello:"}, *GREETING[1:]], [EMPTY], 35, id="colon"),
    pytest.param(
        [{"role": "system", "content": "Hello:"}, *GREETING], [EMPTY, OTHER], 49, id="two systems"
    ),
]


@pytest.mark.parametrize(("messages", "functions", "api_prompt_tokens"), EXACT)
def test_functions_count_what_the_api_reported(
    messages: list[dict[str, Any]], functions: list[dict[str, Any]], api_prompt_tokens: int
) -> None:
    # Before: the recipe alone, 1 short on the first two (35 and 56).
    tools = _tools(*functions)
    assert count_tokens(messages, model="gpt-3.5-turbo", tools=tools) == api_prompt_tokens


@pytest.mark.parametrize(("messages", "functions", "api_prompt_tokens"), AT_LEAST)
def test_functions_never_count_under_what_the_api_reported(
    messages: list[dict[str, Any]], functions: list[dict[str, Any]], api_prompt_tokens: int
) -> None:
    tools = _tools(*functions)
    assert count_tokens(messages, model="gpt-3.5-turbo", tools=tools) >= api_prompt_tokens


@pytest.mark.parametrize(("model", "with_system"), [("gpt-4", 105), ("gpt-4o", 101)])
def test_without_a_system_message_functions_cost_four_more(model: str, with_system: int) -> None:
    # The cookbook's example, its system message left out: OpenAI writes the functions into a
    # system message of its own. Before: 4 short (the recipe's figure is the one with it).
    tools = _tools(WEATHER)
    assert count_tokens(WEATHER_MESSAGES, model=model, tools=tools) == with_system
    system = count_tokens(WEATHER_MESSAGES[:1], model=model) - 3
    without = count_tokens(WEATHER_MESSAGES[1:], model=model, tools=tools)
    assert without == with_system - system + 4
    # A count that does not see the prompt is the larger, so that packing is never short.
    alone = tool_definition_tokens(tools, get_counter(model))
    assert without == count_tokens(WEATHER_MESSAGES[1:], model=model) + alone


def test_pack_counts_the_functions_as_the_api_bills_them() -> None:
    # Before: 35 tokens, within a budget of 35; the API bills 36 for this request.
    tools = _tools(FOO)
    with pytest.raises(ctxpack.BudgetExceededError):
        pack(HELLO, budget=35, model="gpt-3.5-turbo", tools=tools)
    result = pack(HELLO, budget=36, model="gpt-3.5-turbo", tools=tools)
    assert (
        result.tokens == 36 == count_tokens(result.to_openai(), model="gpt-3.5-turbo", tools=tools)
    )


def test_pack_with_a_system_message_counts_what_the_payload_costs() -> None:
    tools = _tools(WEATHER)
    result = pack(WEATHER_MESSAGES, budget=200, model="gpt-4o", tools=tools)
    assert result.tokens == 101 == count_tokens(result.to_openai(), model="gpt-4o", tools=tools)
    assert result.tool_tokens == 101 - count_tokens(WEATHER_MESSAGES, model="gpt-4o")


@pytest.mark.parametrize(
    ("choice", "extra"),
    [
        ({"tool_choice": {"type": "function", "function": {"name": "foo"}}}, 5),
        ({"function_call": {"name": "foo"}}, 5),
        ({"tool_choice": "none"}, 1),
        ({"tool_choice": "auto"}, 0),
    ],
)
def test_a_wrapped_request_forcing_a_function_leaves_room_for_it(
    choice: dict[str, Any], extra: int
) -> None:
    # The API's figures: 31 prompt tokens for HELLO and FOO, 36 forcing foo, 32 with "none".
    from tests.sdk_mock import Capture, chat_completion, openai_client

    capture = Capture(chat_completion({"role": "assistant", "content": "Done."}))
    history = [
        {"role": "user", "content": "an older question, to drop when room is short"},
        {"role": "assistant", "content": "an older answer"},
        *HELLO,
    ]
    key = "functions" if "function_call" in choice else "tools"
    tools = [FOO] if key == "functions" else _tools(FOO)
    whole = count_tokens(history, model="gpt-4o", tools=_tools(FOO))
    client = ctxpack.wrap_openai(openai_client(capture), budget=whole)
    client.chat.completions.create(model="gpt-4o", messages=history, **{key: tools}, **choice)
    sent = count_tokens(capture.body["messages"], model="gpt-4o", tools=_tools(FOO))
    assert sent + extra <= whole
    # Before: every message sent, the request billed up to 5 tokens over the budget.
    assert (len(capture.body["messages"]) < 3) == (extra > 0)


@pytest.mark.parametrize("function", [FOO, NESTED], ids=["flat", "nested"])
def test_a_tool_edited_while_it_is_counted_never_leaves_a_wrong_count_behind(
    function: dict[str, Any],
) -> None:
    # Another thread edits the definition in place while this one counts it: the count of that
    # call may be either's, but the counter must not remember one definition's count for the
    # other's JSON. The edit is made from inside the counting function, where a thread switch
    # would fall.
    def edit_once(text: str) -> int:
        if edited == [False] and "Do a" in text:
            edited[0] = True
            tool["function"]["description"] += " and much more" * 40
        return len(text.split())

    tool = copy.deepcopy(_tools(function)[0])
    edited = [False]
    counter = ctxpack.tokens.CallableCounter(edit_once, name="words")
    tool_definition_tokens([tool], counter)
    assert edited == [True]
    fresh = ctxpack.tokens.CallableCounter(lambda text: len(text.split()), name="words")
    for definition in (copy.deepcopy(_tools(function)[0]), tool):
        assert tool_definition_tokens([definition], counter) == tool_definition_tokens(
            [definition], fresh
        )
