"""Tool definitions: counted as OpenAI renders them where that is published, never under their
JSON or their rendering otherwise; real schemas (GitHub's MCP server, pydantic models) pinned."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import AnyUrl, BaseModel, Field

import ctxpack
from ctxpack import count_tokens
from ctxpack.tokens import get_counter, tool_definition_tokens

from .strategies import _descriptions, json_schemas, tool_definitions

FIXTURES = Path(__file__).parent / "fixtures" / "tool_schemas"

# The tools example of OpenAI's cookbook "How to count tokens with tiktoken", with the prompt
# tokens the API reported for it: 101 for gpt-4o and gpt-4o-mini, 105 for gpt-4 and gpt-3.5-turbo.
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_current_weather",
        "description": "Get the current weather in a given location",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {
                    "type": "string",
                    "description": "The city and state, e.g. San Francisco, CA",
                },
                "unit": {
                    "type": "string",
                    "description": "The unit of temperature to return",
                    "enum": ["celsius", "fahrenheit"],
                },
            },
            "required": ["location"],
        },
    },
}
WEATHER_MESSAGES = [
    {
        "role": "system",
        "content": "You are a helpful assistant that can answer to questions about the weather.",
    },
    {"role": "user", "content": "What's the weather like in San Francisco?"},
]


@pytest.mark.parametrize(
    ("model", "api_prompt_tokens"),
    [("gpt-4o", 101), ("gpt-4o-mini", 101), ("gpt-4", 105), ("gpt-3.5-turbo", 105)],
)
def test_the_published_example_counts_what_the_api_reported(
    model: str, api_prompt_tokens: int
) -> None:
    assert count_tokens(WEATHER_MESSAGES, model=model, tools=[WEATHER]) == api_prompt_tokens


# The fetch tool of the reference MCP servers (modelcontextprotocol/servers, src/fetch, MIT),
# whose input schema is this pydantic model's.
class Fetch(BaseModel):
    """Parameters for fetching a URL."""

    url: Annotated[AnyUrl, Field(description="URL to fetch")]
    max_length: Annotated[
        int,
        Field(
            default=5000, description="Maximum number of characters to return.", gt=0, lt=1000000
        ),
    ]
    start_index: Annotated[
        int,
        Field(
            default=0,
            description="On return output starting at this character index, useful if a "
            "previous fetch was truncated and more context is required.",
            ge=0,
        ),
    ]
    raw: Annotated[
        bool,
        Field(
            default=False,
            description="Get the actual HTML content of the requested page, without "
            "simplification.",
        ),
    ]


FETCH_DESCRIPTION = (
    "Fetches a URL from the internet and optionally extracts its contents as markdown.\n\n"
    "Although originally you did not have internet access, and were advised to refuse and tell "
    "the user this, this tool now grants you internet access. Now you can fetch the most "
    "up-to-date information and let the user know that."
)


class Address(BaseModel):
    street: str = Field(description="Street and number")
    city: str
    country: Literal["FR", "DE", "US"] = "FR"


class LineItem(BaseModel):
    sku: str = Field(description="Stock keeping unit")
    quantity: int = Field(default=1, ge=1)


class Order(BaseModel):
    """An order to place: nested models become $defs and $ref, optional ones anyOf."""

    customer: str
    shipping: Address
    billing: Address | None = None
    items: list[LineItem]
    note: str | None = Field(default=None, description="Free text for the courier")


def _mcp_tools() -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = json.loads(
        (FIXTURES / "github_mcp_server.json").read_text(encoding="utf-8")
    )
    tools.append(
        {
            "name": "fetch",
            "description": FETCH_DESCRIPTION,
            "inputSchema": Fetch.model_json_schema(),
        }
    )
    tools.append(
        {
            "name": "place_order",
            "description": "Place an order.",
            "inputSchema": Order.model_json_schema(),
        }
    )
    return tools


def _openai(tool: dict[str, Any]) -> dict[str, Any]:
    function = {"name": tool["name"], "description": tool["description"]}
    return {"type": "function", "function": {**function, "parameters": tool["inputSchema"]}}


def _anthropic(tool: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": tool["name"],
        "description": tool["description"],
        "input_schema": tool["inputSchema"],
    }


def _json_tokens(value: Any, model: str = "gpt-4o") -> int:
    return count_tokens(json.dumps(value, ensure_ascii=False, separators=(",", ":")), model=model)


# Keywords OpenAI's published rendering of functions covers; a schema with any other keyword
# ($ref, anyOf, default, format...) is counted as at least its JSON.
RENDERED = {"type", "description", "enum", "properties", "required", "items"}


def _rendered_only(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return True
    if not set(schema) <= RENDERED | {"additionalProperties"}:
        return False
    if schema.get("additionalProperties", False) is not False:
        return False
    children = [*schema.get("properties", {}).values(), schema.get("items")]
    return all(_rendered_only(child) for child in children)


# Expected counts with o200k_base (gpt-4o): (OpenAI function, Anthropic tool, compact JSON of
# the OpenAI function). create_pull_request (an array) and create_repository_ruleset (arrays of
# objects) are within the published rendering, so they count less than their JSON; the others
# have defaults, bounds, formats, $defs and anyOf, and count at least their JSON.
CORPUS_COUNTS = {
    "create_pull_request": (214, 612, 265),
    "get_file_contents": (173, 501, 154),
    # Its nested objects' descriptions count twice, as OpenAI's rendering (harmony) writes them.
    "create_repository_ruleset": (658, 1076, 729),
    "fetch": (254, 582, 235),
    "place_order": (307, 666, 288),
}


@pytest.mark.parametrize("tool", _mcp_tools(), ids=lambda t: t["name"])
def test_real_schemas(tool: dict[str, Any]) -> None:
    counter = get_counter("gpt-4o")
    openai_tool = _openai(tool)
    as_json = _json_tokens(openai_tool["function"])
    openai_count = tool_definition_tokens([openai_tool], counter)
    anthropic_count = tool_definition_tokens([_anthropic(tool)], counter)
    assert (openai_count, anthropic_count, as_json) == CORPUS_COUNTS[tool["name"]]
    assert (openai_count < as_json) == _rendered_only(tool["inputSchema"])
    assert anthropic_count >= _json_tokens(_anthropic(tool)) + 346


def test_the_published_rendering_matches_the_api_on_nested_arrays() -> None:
    # openai-chat-tokens' validated case (gpt-3.5-turbo, the API reported 106 prompt tokens):
    # an array of objects with an enum; within the rendering, so counted as rendered.
    recipe = {
        "name": "get_recipe",
        "parameters": {
            "type": "object",
            "required": ["ingredients", "instructions", "time_to_cook"],
            "properties": {
                "ingredients": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name", "unit", "amount"],
                        "properties": {
                            "name": {"type": "string"},
                            "unit": {
                                "enum": ["grams", "ml", "cups", "pieces", "teaspoons"],
                                "type": "string",
                            },
                            "amount": {"type": "number"},
                        },
                    },
                },
                "instructions": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Steps to prepare the recipe (no numbering)",
                },
                "time_to_cook": {
                    "type": "number",
                    "description": "Total time to prepare the recipe in minutes",
                },
            },
        },
    }
    messages = [{"role": "user", "content": "hello"}]
    tool = {"type": "function", "function": recipe}
    counted = count_tokens(messages, model="gpt-3.5-turbo", tools=[tool])
    assert counted == 106


_LONG = (
    "Every argument is parsed by the shell wrapper before the command runs; see the manual "
    "for the caveats, the exceptions and the escapes."
)


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4"])
@pytest.mark.parametrize("where", ["parameters", "array items", "array of objects"])
def test_an_object_or_item_description_without_a_property_is_counted(
    model: str, where: str
) -> None:
    # OpenAI's rendering of functions (openai/harmony, json_schema_to_typescript) writes an
    # object's own description as a comment, the parameters' own too: the model reads it. It
    # was rendered nowhere, so a long one was counted as 3 tokens, or none.
    def tool(description: dict[str, str]) -> dict[str, Any]:
        query = {"type": "string", "description": "The query."}
        items: dict[str, Any] = {
            "parameters": {"type": "string"},
            "array items": {"type": "string", **description},
            "array of objects": {"type": "object", "properties": {"q": query}, **description},
        }[where]
        parameters: dict[str, Any] = {
            "type": "object",
            "properties": {"q": query, "xs": {"type": "array", "items": items}},
            "required": ["q"],
        }
        if where == "parameters":
            parameters.update(description)
        function = {"name": "run", "description": "Run it.", "parameters": parameters}
        return {"type": "function", "function": function}

    counter = get_counter(model)
    without = tool_definition_tokens([tool({})], counter)
    with_it = tool_definition_tokens([tool({"description": _LONG})], counter)
    assert with_it - without >= counter.count(_LONG)


def test_a_pydantic_schema_with_defs_is_counted_whole() -> None:
    # Before: a $defs schema counted a few dozen tokens whatever its size.
    tool = _openai(_mcp_tools()[-1])
    counted = count_tokens("", model="gpt-4o", tools=[tool])
    assert counted >= _json_tokens(tool["function"])
    # Its references, resolved in place, are part of the count: doubling the uses of a
    # definition raises the count even though the JSON grows by a few tokens only.
    doubled = copy.deepcopy(tool)
    props = doubled["function"]["parameters"]["properties"]
    props["returns"] = copy.deepcopy(props["shipping"])
    props["returns_too"] = copy.deepcopy(props["shipping"])
    assert count_tokens("", model="gpt-4o", tools=[doubled]) > counted


def test_big_pack_with_tools_stays_under_budget() -> None:
    tool = _openai(_mcp_tools()[-1])  # place_order: $defs
    history = [{"role": "user", "content": f"question {i} about rulesets"} for i in range(40)]
    tool_tokens = count_tokens("", model="gpt-4o", tools=[tool])
    result = ctxpack.pack(history, budget=tool_tokens + 200, model="gpt-4o", tools=[tool])
    assert result.tool_tokens == tool_tokens >= _json_tokens(tool["function"])
    assert result.tokens == count_tokens(result.messages, model="gpt-4o", tools=[tool])
    assert result.tokens <= tool_tokens + 200


def test_recursive_and_self_multiplying_references_terminate() -> None:
    tree = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/node"}},
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "label": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
            }
        },
    }
    # Each level uses the one below twice: 2**30 nodes if expanded without a bound.
    layers: dict[str, Any] = {"l0": {"type": "string"}}
    for i in range(1, 31):
        ref = {"$ref": f"#/$defs/l{i - 1}"}
        layers[f"l{i}"] = {"type": "object", "properties": {"a": ref, "b": ref}}
    bomb = {"type": "object", "properties": {"x": {"$ref": "#/$defs/l30"}}, "$defs": layers}
    counter = get_counter("gpt-4o")
    for schema in (tree, bomb):
        tool = {"type": "function", "function": {"name": "f", "parameters": schema}}
        assert tool_definition_tokens([tool], counter) >= _json_tokens(tool["function"])
        anthropic = {"name": "f", "description": "", "input_schema": schema}
        assert tool_definition_tokens([anthropic], counter) >= _json_tokens(anthropic)


def test_built_in_tools_are_counted_as_their_json() -> None:
    tool = {"type": "web_search_preview", "search_context_size": "medium"}
    counter = get_counter("gpt-4o")
    assert tool_definition_tokens([tool], counter) >= _json_tokens(tool)


def test_a_tool_that_is_not_a_mapping_is_named() -> None:
    with pytest.raises(ctxpack.ConfigError, match=r"tools\[1\]"):
        count_tokens("hi", model="gpt-4o", tools=[WEATHER, "get_weather"])  # type: ignore[list-item]


@pytest.mark.parametrize("name", ["t" * 65, "files.read", "read file"])
def test_a_tool_name_both_apis_refuse_is_named(name: str) -> None:
    """OpenAI and Anthropic take a tool name of ^[a-zA-Z0-9_-]{1,64}$ only; a longer one, or
    one with another character (an MCP server's dotted name), was counted and sent."""
    function = {"name": name, "parameters": {"type": "object"}}
    anthropic = {"name": name, "input_schema": {"type": "object"}}
    for tools, field in (
        ([WEATHER, {"type": "function", "function": function}], r"tools\[1\]\.function\.name"),
        ([anthropic], r"tools\[0\]\.name"),
    ):
        with pytest.raises(ctxpack.ConfigError, match=field) as caught:
            count_tokens("hi", model="gpt-4o", tools=tools)
        assert name in str(caught.value)
        assert "^[a-zA-Z0-9_-]{1,64}$" in str(caught.value)


_CALLS = {
    "function": {
        "id": "c1",
        "type": "function",
        "function": {"name": "files.read", "arguments": "{}"},
    },
    "custom": {"id": "c1", "type": "custom", "custom": {"name": "files.read", "input": "a.txt"}},
}


@pytest.mark.parametrize("kind", sorted(_CALLS))
@pytest.mark.parametrize(
    "convert",
    [
        ctxpack.to_anthropic,
        ctxpack.to_openai,
        lambda history: ctxpack.to_openai(history, api="responses"),
    ],
    ids=["anthropic", "openai", "responses"],
)
def test_a_call_to_a_tool_name_the_api_refuses_is_named(kind: str, convert: Any) -> None:
    # OpenAI refuses it in the history too ("Invalid 'messages[1].tool_calls[0].function.name':
    # string does not match pattern"), as Anthropic does.
    history = [
        {"role": "user", "content": "Read it."},
        {"role": "assistant", "content": None, "tool_calls": [_CALLS[kind]]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
    ]
    with pytest.raises(ctxpack.InvalidMessageError) as caught:
        convert(history)
    assert (caught.value.index, caught.value.field) == (1, f"tool_calls[0].{kind}.name")
    assert "files.read" in str(caught.value)


# ------------------------------------------------------------------------------- properties

PROPERTY_SETTINGS = settings(max_examples=80, deadline=None)


def _count(tool: dict[str, Any]) -> int:
    return tool_definition_tokens([tool], get_counter("gpt-4o"))


def _schema(tool: dict[str, Any]) -> dict[str, Any]:
    return tool["input_schema"] if "input_schema" in tool else tool["function"]["parameters"]


@PROPERTY_SETTINGS
@given(tool_definitions(), st.from_regex(r"[a-z]{1,8}", fullmatch=True), json_schemas())
def test_adding_a_property_never_lowers_the_count(
    tool: dict[str, Any], name: str, schema: dict[str, Any]
) -> None:
    bigger = copy.deepcopy(tool)
    properties = _schema(bigger)["properties"]
    if name in properties:
        return
    properties[name] = schema
    assert _count(bigger) >= _count(tool)


def _copy_and_pick(
    tool: dict[str, Any], data: st.DataObject
) -> tuple[dict[str, Any], dict[str, Any], str] | None:
    """A copy of ``tool``, the copy's properties and one of their names (None without any)."""
    if not _schema(tool)["properties"]:
        return None
    key = data.draw(st.sampled_from(sorted(_schema(tool)["properties"])))
    bigger = copy.deepcopy(tool)
    return bigger, _schema(bigger)["properties"], key


@PROPERTY_SETTINGS
@given(tool_definitions(), _descriptions(), st.data())
def test_adding_a_description_never_lowers_the_count(
    tool: dict[str, Any], description: str, data: st.DataObject
) -> None:
    picked = _copy_and_pick(tool, data)
    if picked is None:
        return
    bigger, properties, key = picked
    spec = properties[key]
    spec["description"] = (
        f"{spec['description']} {description}" if "description" in spec else description
    )
    assert _count(bigger) >= _count(tool)


@PROPERTY_SETTINGS
@given(tool_definitions(), json_schemas(), st.sampled_from(["object", "array", "anyOf"]), st.data())
def test_nesting_a_schema_never_lowers_the_count(
    tool: dict[str, Any], nested: dict[str, Any], wrapper: str, data: st.DataObject
) -> None:
    picked = _copy_and_pick(tool, data)
    if picked is None:
        return
    bigger, properties, key = picked
    spec = properties[key]
    properties[key] = {
        "object": {"type": "object", "properties": {"inner": spec, "more": nested}},
        "array": {"type": "array", "items": {"anyOf": [spec, nested]}},
        "anyOf": {"anyOf": [spec, nested]},
    }[wrapper]
    assert _count(bigger) >= _count(tool)


@PROPERTY_SETTINGS
@given(tool_definitions())
def test_a_schema_beyond_the_rendering_is_never_counted_under_its_json(
    tool: dict[str, Any],
) -> None:
    body = tool.get("function", tool)
    if "input_schema" in tool or not _rendered_only(_schema(tool)):
        assert _count(tool) >= _json_tokens(body)


def test_a_tool_edited_in_place_is_counted_afresh() -> None:
    tool = copy.deepcopy(WEATHER)
    before = count_tokens("", model="gpt-4o", tools=[tool])
    tool["function"]["description"] += " and the forecast for the next seven days"
    after = count_tokens("", model="gpt-4o", tools=[tool])
    assert after > before
    ctxpack.caches.clear_caches()
    assert count_tokens("", model="gpt-4o", tools=[tool]) == after


def test_an_enum_value_in_a_schema_counts_as_its_text() -> None:
    import enum

    class Color(str, enum.Enum):
        RED = "red"

    def tool(value: object) -> list[dict[str, object]]:
        schema = {"type": "object", "properties": {"c": {"enum": [value]}}}
        return [{"type": "function", "function": {"name": "f", "parameters": schema}}]

    user = [{"role": "user", "content": "x"}]
    assert count_tokens(user, tools=tool(Color.RED)) == count_tokens(user, tools=tool("red"))


def test_tools_for_claude_are_counted_in_anthropics_form_whatever_shape_they_come_in() -> None:
    # Anthropic takes no OpenAI function: a request for Claude carries each one as an
    # Anthropic tool, and the API adds its tool-use prompt. LangChain's agents hand ChatAnthropic
    # OpenAI-shaped definitions.
    schema = WEATHER["function"]["parameters"]
    function = WEATHER["function"]
    as_anthropic = {
        "name": function["name"],
        "input_schema": schema,
        "description": function["description"],
    }
    flat = {"type": "function", **function}  # the Responses API's shape
    history = [{"role": "user", "content": "Weather in Oslo?"}]
    with pytest.warns(ctxpack.errors.ApproximateTokenCountWarning):
        claude = get_counter("claude-sonnet-4-5")
    expected = tool_definition_tokens([as_anthropic], claude)
    assert expected > tool_definition_tokens([WEATHER], claude) + 300
    for tools in ([WEATHER], [flat], [as_anthropic]):
        packed = ctxpack.pack(
            history, budget=2_000, counter=claude, provider="anthropic", tools=tools
        )
        assert packed.tool_tokens == expected
        counted = count_tokens(history, counter=claude, model="claude-sonnet-4-5", tools=tools)
        assert counted == claude.count_messages(history) + expected
        session = ctxpack.Session(model="claude-sonnet-4-5", counter=claude, retrieve_tool=False)
        session.extend(history)
        assert session.render(tools=tools).tool_tokens == expected
    # The /context view and the bill read the model's name the same way.
    claude_name = {"model": "claude-sonnet-4-5", "counter": claude}
    for tools in ([WEATHER], [as_anthropic]):
        usage = ctxpack.context_usage(history, tools=tools, window=200_000, **claude_name)
        assert usage.total == claude.count_messages(history) + expected
        request = ctxpack.cost.Request(messages=history, tools=tools, model="claude-sonnet-4-5")
        bill = ctxpack.cost.simulate(
            [request], price=ctxpack.cost.price("claude-sonnet-4-5"), counter=claude
        )
        assert bill.input_tokens == counted
    # For OpenAI, an OpenAI function stays what it is.
    openai = ctxpack.pack(history, budget=2_000, model="gpt-4o", tools=[WEATHER])
    assert openai.tool_tokens == count_tokens("", model="gpt-4o", tools=[WEATHER])
    assert openai.tool_tokens < expected


def test_anthropics_own_tools_count_what_the_model_reads_not_their_few_words() -> None:
    # {"type": "bash_20250124", "name": "bash"} was counted as its JSON (25 tokens) without the
    # tool-use prompt; the model reads bash's full definition (245 tokens, as Anthropic
    # publishes it) and the prompt (346). An agent with bash and the editor was ~1,300 short.
    from ctxpack.tokens import ANTHROPIC_TOOL_PROMPT_TOKENS

    claude = get_counter(counter="cl100k_base")
    bash = {"type": "bash_20250124", "name": "bash"}
    editor = {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"}
    computer = {"type": "computer_20250124", "name": "computer", "display_width_px": 1024}
    prompt = ANTHROPIC_TOOL_PROMPT_TOKENS
    assert tool_definition_tokens([bash], claude) == 245 + prompt
    assert tool_definition_tokens([bash, editor], claude) == 245 + 700 + prompt
    assert tool_definition_tokens([computer], claude) == 735 + prompt
    # A server tool of Anthropic's is its JSON, with the tool-use prompt as every tool brings.
    search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
    assert (
        tool_definition_tokens([search], claude)
        == claude.count(json.dumps(search, separators=(",", ":"))) + prompt
    )
    # OpenAI's dated built-ins are not Anthropic's.
    openai_search = {"type": "web_search_preview_2025_03_11"}
    assert tool_definition_tokens([openai_search], claude) < prompt
