"""Tool definitions on demand: stubs first, the full definition in the conversation when asked,
the tools sent never changing (the prompt cache keeps working), the tokens saved."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from ctxpack import AsyncSession, ConfigError, Session, get_counter, wrap_anthropic, wrap_openai
from ctxpack.tokens import tool_definition_tokens
from ctxpack.tools_on_demand import (
    DESCRIBE_TOOL_NAME,
    describe_tools,
    on_demand_saving,
    on_demand_tools,
)

from .sdk_mock import (
    Capture,
    anthropic_client,
    anthropic_message,
    async_openai_client,
    chat_completion,
    openai_client,
)
from .test_clients_responses import text_reply

COUNTER = get_counter(counter="cl100k_base")


def tool(name: str, options: int = 12) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name.replace('_', ' ').capitalize()} in the tracker.\nMore here.",
            "parameters": {
                "type": "object",
                "properties": {
                    f"option_{i}": {"type": "string", "description": f"What option {i} sets."}
                    for i in range(options)
                },
            },
        },
    }


TOOLS = [tool(n) for n in ("create_issue", "list_issues", "close_issue", "add_label")]


def test_stubs_carry_the_name_and_the_first_line_only() -> None:
    sent = on_demand_tools(TOOLS)
    assert [t["function"]["name"] for t in sent] == [
        "create_issue",
        "list_issues",
        "close_issue",
        "add_label",
        DESCRIBE_TOOL_NAME,
    ]
    stub = sent[0]["function"]
    assert stub["description"] == "Create issue in the tracker. (parameters: describe_tool)"
    assert stub["parameters"] == {"type": "object"}
    anthropic = on_demand_tools(
        [{"name": "grep", "description": "Search.", "input_schema": {}}], "anthropic"
    )
    assert anthropic[0] == {
        "name": "grep",
        "description": "Search. (parameters: describe_tool)",
        "input_schema": {"type": "object"},
    }


def test_the_tokens_saved_are_measured_and_real() -> None:
    saved = on_demand_saving(TOOLS, COUNTER)
    full = COUNTER.count(json.dumps(TOOLS))
    assert 0 < saved < full
    # A single small tool costs more on demand (the describe tool's own definition).
    assert on_demand_saving([tool("x", options=0)], COUNTER) < 0


def test_describe_answers_with_the_full_definition_or_says_what_exists() -> None:
    answer = json.loads(describe_tools(TOOLS, {"names": ["close_issue"]}))
    assert answer == [TOOLS[2]]
    assert "no tools named ['nope']" in describe_tools(TOOLS, {"names": ["nope"]})
    assert describe_tools(TOOLS, "not json").startswith("error")
    with pytest.raises(ConfigError, match="not to 'describe_tool'"):
        describe_tools(TOOLS, {"type": "tool_use", "name": "other", "input": {}})


def test_describe_gives_the_known_definitions_and_names_the_unknown_beside_them() -> None:
    # One misspelt name among several was answered with the error alone: the model had to ask
    # again for the definitions it had named right.
    answer = describe_tools(TOOLS, {"names": ["close_issue", "nope", "add_label", "gone"]})
    definitions, note = answer.split("\n")
    assert json.loads(definitions) == [TOOLS[2], TOOLS[3]]
    assert "no tools named ['nope', 'gone']" in note
    assert str(sorted(t["function"]["name"] for t in TOOLS)) in note
    session = Session(model="gpt-4", tools_on_demand=True)
    session.extend([{"role": "user", "content": "Close issue 4."}])
    session.render(tools=TOOLS)
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": DESCRIBE_TOOL_NAME, "arguments": '{"names": ["add_label", "x"]}'},
    }
    assert json.loads(session.handle(call).split("\n")[0]) == [TOOLS[3]]


def test_a_session_sends_stubs_answers_describe_calls_and_keeps_the_tools_fixed() -> None:
    session = Session(counter=COUNTER, tools_on_demand=True, retrieve_tool=False)
    session.append({"role": "user", "content": "Close issue 7."})
    first = session.render(tools=TOOLS)
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": DESCRIBE_TOOL_NAME, "arguments": '{"names": ["close_issue"]}'},
    }
    session.append({"role": "assistant", "content": None, "tool_calls": [call]})
    session.append({"role": "tool", "tool_call_id": "c1", "content": session.handle(call)})
    second = session.render(tools=TOOLS)
    assert first.tool_tokens == second.tool_tokens  # the tools sent did not change
    assert '"option_11"' in second.messages[-1].text  # the full definition, in the conversation
    whole = Session(counter=COUNTER, retrieve_tool=False)
    whole.append({"role": "user", "content": "Close issue 7."})
    assert whole.render(tools=TOOLS).tool_tokens - first.tool_tokens == on_demand_saving(
        TOOLS, COUNTER
    )
    # No cache-bust warning: the tools sent are the same each time.
    assert not [d for d in second.decisions if d.stage == "cache"]


def test_names_must_be_given_and_unique() -> None:
    with pytest.raises(ConfigError, match=r"tools\[0\]: a tool definition needs a name"):
        on_demand_tools([{"description": "x"}])
    with pytest.raises(ConfigError, match="used twice"):
        on_demand_tools([TOOLS[0], TOOLS[0]])


def test_a_providers_own_tools_are_sent_as_they_are_for_the_provider_to_run() -> None:
    # As a stub, Anthropic's web search became a function the caller had to run, and OpenAI's
    # was refused as a tool "without a name".
    grep = {"name": "grep", "description": "Search.", "input_schema": {"type": "object"}}
    web = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
    sent = on_demand_tools([grep, web, {"type": "bash_20250124", "name": "bash"}], "anthropic")
    assert sent[1:3] == [web, {"type": "bash_20250124", "name": "bash"}]
    assert [t["name"] for t in sent] == ["grep", "web_search", "bash", DESCRIBE_TOOL_NAME]
    openai_sent = on_demand_tools([{"type": "web_search"}, TOOLS[0]])
    assert openai_sent[0] == {"type": "web_search"}
    assert openai_sent[1]["function"]["parameters"] == {"type": "object"}
    answer = describe_tools([{"type": "web_search"}, TOOLS[0]], {"names": ["create_issue"]})
    assert json.loads(answer) == [TOOLS[0]]
    session = Session(counter=COUNTER, tools_on_demand=True, retrieve_tool=False)
    session.append({"role": "user", "content": "News on issue 7?"})
    assert session.render(tools=[{"type": "web_search"}, *TOOLS]).tool_tokens > 0


def test_a_tool_of_the_callers_named_describe_tool_is_refused() -> None:
    # Sent beside the describe tool added, two tools of one name: the provider refuses both.
    mine = {"name": DESCRIBE_TOOL_NAME, "description": "Mine.", "input_schema": {"type": "object"}}
    with pytest.raises(ConfigError, match=r"tools\[1\]: the name 'describe_tool' is the tool"):
        on_demand_tools([TOOLS[0], mine], "anthropic")
    session = Session(counter=COUNTER, tools_on_demand=True, retrieve_tool=False)
    session.append({"role": "user", "content": "Close issue 7."})
    with pytest.raises(ConfigError, match=r"tools\[1\]: the name 'describe_tool'"):
        session.render(tools=[TOOLS[0], mine])


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        (["grep"], r"tools\[0\]: a tool definition must be an object, got str"),
        (TOOLS[0], "wrap a single tool in a list"),
        (None, "tools must be a list of tool definitions, got None"),
    ],
)
def test_tools_that_are_no_definitions_are_named_not_a_deep_traceback(
    tools: Any, message: str
) -> None:
    # Each raised AttributeError ('str' object has no attribute 'get') or TypeError.
    with pytest.raises(ConfigError, match=message):
        on_demand_tools(tools)
    with pytest.raises(ConfigError, match=message):
        describe_tools(tools, {"names": ["grep"]})


def test_functions_in_the_responses_shape_get_stubs_the_responses_api_takes() -> None:
    # The stubs went out in Chat Completions' nested shape, which the Responses API refuses
    # (no tools[0].name).
    import pydantic
    from openai.types.responses import FunctionToolParam

    flat = [{"type": "function", **t["function"]} for t in TOOLS]
    sent = on_demand_tools([{"type": "web_search"}, *flat])
    assert [t.get("name") for t in sent[1:]] == [*(t["name"] for t in flat), DESCRIBE_TOOL_NAME]
    for stub in sent[1:]:
        pydantic.TypeAdapter(FunctionToolParam).validate_python(stub)
        assert stub["strict"] is False  # an open schema cannot be strict
    assert sent[1]["description"] == "Create issue in the tracker. (parameters: describe_tool)"
    assert all("function" in t for t in on_demand_tools(TOOLS))  # the nested shape stays


def test_the_definitions_describe_tool_gives_reach_the_model_whole() -> None:
    # The session's JSON filter shortened the answer like any tool output: a definition of 150
    # parameters (19,164 characters) was sent as 1,015, 145 of its parameters hidden.
    big = tool("query", options=150)
    session = Session(counter=COUNTER, tools_on_demand=True)
    session.append({"role": "user", "content": "Run the query."})
    session.render(tools=[big])
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": DESCRIBE_TOOL_NAME, "arguments": '{"names": ["query"]}'},
    }
    session.append({"role": "assistant", "content": None, "tool_calls": [call]})
    answer = session.handle(call)
    session.append({"role": "tool", "tool_call_id": "c1", "content": answer})
    sent = session.render(tools=[big]).messages[-1]
    assert sent.text == answer and json.loads(sent.text) == [big]
    assert not session.records[-1].shortened


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_saving_is_what_a_session_sends_less(provider: Any) -> None:
    # For Claude, the full OpenAI definitions were counted in OpenAI's shape and the stubs in
    # Anthropic's: 203 tokens saved said, 750 measured by the session.
    whole = Session(counter=COUNTER, retrieve_tool=False)
    stubs = Session(counter=COUNTER, retrieve_tool=False, tools_on_demand=True)
    sent = []
    for session in (whole, stubs):
        session.append({"role": "user", "content": "Close issue 7."})
        sent.append(session.render(tools=TOOLS, provider=provider).tool_tokens)
    assert on_demand_saving(TOOLS, COUNTER, provider) == sent[0] - sent[1] > 0


def test_a_cache_breakpoint_on_a_tool_stays_on_its_stub() -> None:
    # The stub went without the caller's cache_control: the prefix it marked was no longer
    # written to Anthropic's cache, without a word.
    marked = {
        "name": "grep",
        "description": "Search.",
        "input_schema": {"type": "object"},
        "cache_control": {"type": "ephemeral"},
    }
    sent = on_demand_tools([TOOLS[0], marked], "anthropic")
    assert sent[1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in sent[0] and "cache_control" not in sent[2]
    import pydantic
    from anthropic.types.beta import BetaToolParam

    for tool in sent:
        pydantic.TypeAdapter(BetaToolParam).validate_python(tool)


def test_a_built_in_tools_name_counts_in_the_check_for_names_used_twice() -> None:
    web = {"type": "web_search_20250305", "name": "web_search"}
    mine = {"name": "web_search", "description": "Mine.", "input_schema": {"type": "object"}}
    with pytest.raises(ConfigError, match=r"tools\[1\]: the name 'web_search' is used twice"):
        on_demand_tools([web, mine], "anthropic")


def test_describe_reads_a_call_given_as_the_sdks_object() -> None:
    # The SDK's ToolUseBlock was read as no arguments at all: the model, which called rightly,
    # was answered 'error: call describe_tool with {"names": [...]}'.
    reply = anthropic_message(
        [
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": DESCRIBE_TOOL_NAME,
                "input": {"names": ["add_label"]},
            }
        ]
    )
    block = (
        anthropic_client(Capture(reply))
        .messages.create(
            model="claude-sonnet-4-5", max_tokens=100, messages=[{"role": "user", "content": "x"}]
        )
        .content[0]
    )
    assert json.loads(describe_tools(TOOLS, block)) == [TOOLS[3]]
    with pytest.raises(ConfigError, match="call must be the model's tool call"):
        describe_tools(TOOLS, 42)  # type: ignore[arg-type]


def _forced(api: str, choice: Any) -> tuple[list[dict[str, Any]], Any]:
    """The tools a wrapped client sends for a request with ``tool_choice=choice``, and the
    session's result."""
    session = Session(counter=COUNTER, tools_on_demand=True)
    question = [{"role": "user", "content": "Close issue 7."}]
    if api == "anthropic":
        capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
        client: Any = wrap_anthropic(
            anthropic_client(capture), window=8_000, counter=COUNTER, session=session
        )
        tools = [
            {
                "name": t["function"]["name"],
                "description": t["function"]["description"],
                "input_schema": t["function"]["parameters"],
            }
            for t in TOOLS
        ]
        client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=100,
            messages=question,
            tools=tools,
            tool_choice=choice,
        )
    elif api == "responses":
        capture = Capture(text_reply("ok"))
        client = wrap_openai(openai_client(capture), window=8_000, session=session)
        flat = [{"type": "function", **t["function"]} for t in TOOLS]
        client.responses.create(model="gpt-4o", input=question, tools=flat, tool_choice=choice)
    else:
        capture = Capture(chat_completion({"role": "assistant", "content": "ok"}))
        client = wrap_openai(openai_client(capture), window=8_000, session=session)
        client.chat.completions.create(
            model="gpt-4o", messages=question, tools=TOOLS, tool_choice=choice
        )
    return capture.body["tools"], client.last_result


def _schema(tool: dict[str, Any]) -> Any:
    return tool.get("input_schema") or tool.get("function", tool).get("parameters")


@pytest.mark.parametrize(
    ("api", "choice"),
    [
        ("chat", {"type": "function", "function": {"name": "close_issue"}}),
        ("responses", {"type": "function", "name": "close_issue"}),
        ("anthropic", {"type": "tool", "name": "close_issue"}),
    ],
)
def test_a_tool_forced_by_tool_choice_is_sent_whole_and_counted_so(api: str, choice: Any) -> None:
    # The forced tool went as its stub, {"type": "object"}: the model had to call it at once,
    # with no turn to ask describe_tool, so its 12 parameters were guesses.
    sent, result = _forced(api, choice)
    full = TOOLS[2]["function"]["parameters"]
    assert [_schema(t) == full for t in sent] == [False, False, True, False, False, False]
    assert all(_schema(t) == {"type": "object"} for t in sent[:2] + sent[3:4])
    # Counted as sent: the session's window holds the whole definition.
    assert result.tool_tokens == tool_definition_tokens(sent, COUNTER)


@pytest.mark.parametrize(
    ("api", "choice"),
    [("chat", "required"), ("responses", "required"), ("anthropic", {"type": "any"})],
)
def test_a_choice_of_any_tool_keeps_the_stubs(api: str, choice: Any) -> None:
    # The model may call describe_tool first: nothing to send whole.
    sent, _ = _forced(api, choice)
    assert [_schema(t) == {"type": "object"} for t in sent][:4] == [True] * 4


def sent_async(tool_choice: Any) -> tuple[list[dict[str, Any]], Any]:
    """The tools an async wrapped client around an AsyncSession with tools on demand sends
    with ``tool_choice``, and its result."""

    async def ask() -> tuple[list[dict[str, Any]], Any]:
        session = await AsyncSession.open("s", store="memory://", tools_on_demand=True)
        capture = Capture(chat_completion({"role": "assistant", "content": "ok"}))
        client = wrap_openai(async_openai_client(capture), window=8_000, session=session)
        await client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "user", "content": "Close issue 7."}],
            tools=TOOLS,
            tool_choice=tool_choice,
        )
        return capture.body["tools"], client.last_result

    return asyncio.run(ask())


def test_an_async_session_counts_the_forced_tool_whole_too() -> None:
    sent, result = sent_async({"type": "function", "function": {"name": "add_label"}})
    assert sent[3] == TOOLS[3] and sent[0] != TOOLS[0]
    # A session made without a model counts for the request's (gpt-4o: o200k_base).
    assert result.tool_tokens == tool_definition_tokens(sent, get_counter(model="gpt-4o"))


def test_legacy_functions_with_tools_on_demand_are_refused_before_sending() -> None:
    # functions= went whole while the session counted their stubs (731 tokens sent, 383
    # counted): a request could pass the window. functions= cannot carry describe_tool.
    capture = Capture(chat_completion({"role": "assistant", "content": "ok"}))
    session = Session(counter=COUNTER, tools_on_demand=True)
    client = wrap_openai(openai_client(capture), window=8_000, session=session)
    with pytest.raises(ConfigError, match=r"functions=: .*tools_on_demand.*tools="):
        client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "user", "content": "Close issue 7."}],
            functions=[t["function"] for t in TOOLS],
        )
    assert capture.requests == []
    # Without tools on demand, functions= goes as before.
    plain = wrap_openai(openai_client(capture), window=8_000, session=Session(counter=COUNTER))
    plain.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "user", "content": "Close issue 7."}],
        functions=[t["function"] for t in TOOLS],
    )
    assert [f["name"] for f in capture.body["functions"]] == [t["function"]["name"] for t in TOOLS]
