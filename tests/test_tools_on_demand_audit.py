"""Tools on demand against an allowed-tools choice: the model may call only the tools the
request allows, so one not allowed to call describe_tool must get the allowed tools whole."""

from __future__ import annotations

from typing import Any

import pytest

from ctxpack import get_counter
from ctxpack._internal.tool_choice import tool_choice_tokens
from ctxpack.tokens import tool_definition_tokens
from ctxpack.tools_on_demand import DESCRIBE_TOOL_NAME

from .test_tools_on_demand import COUNTER, TOOLS, _forced, _schema, sent_async

_FULL = [t["function"]["parameters"] for t in TOOLS]


def _allowed(api: str, names: list[str], mode: str = "required") -> Any:
    if api == "chat":
        tools = [{"type": "function", "function": {"name": n}} for n in names]
        return {"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": tools}}
    tools = [{"type": "function", "name": n} for n in names]
    return {"type": "allowed_tools", "mode": mode, "tools": tools}


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("mode", ["required", "auto"])
def test_tools_an_allowed_tools_choice_limits_the_model_to_are_sent_whole(
    api: str, mode: str
) -> None:
    # OpenAI's allowed_tools lets the model call the tools it lists only: not describe_tool.
    # They went as stubs ({"type": "object"}), so the model called close_issue with its 12
    # parameters guessed, as a forced tool once was.
    sent, result = _forced(api, _allowed(api, ["close_issue", "add_label"], mode))
    whole = [_schema(t) == _FULL[i] for i, t in enumerate(sent[: len(TOOLS)])]
    assert whole == [False, False, True, True]
    assert _schema(sent[0]) == {"type": "object"}
    assert result.tool_tokens == tool_definition_tokens(sent, COUNTER)


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_an_allowed_tools_choice_that_allows_describe_tool_keeps_the_stubs(api: str) -> None:
    # The model may load the definitions first: nothing to send whole.
    sent, _ = _forced(api, _allowed(api, ["close_issue", DESCRIBE_TOOL_NAME]))
    assert [_schema(t) == {"type": "object"} for t in sent][: len(TOOLS)] == [True] * len(TOOLS)


def test_an_async_session_sends_the_allowed_tools_whole_too() -> None:
    sent, result = sent_async(_allowed("chat", ["add_label"]))
    assert sent[3] == TOOLS[3] and _schema(sent[2]) == {"type": "object"}
    assert result.tool_tokens == tool_definition_tokens(sent, get_counter(model="gpt-4o"))


_CHOICES = [
    ("chat", {"type": "function", "function": {"name": "close_issue"}}),
    ("responses", {"type": "function", "name": "close_issue"}),
    ("anthropic", {"type": "tool", "name": "close_issue"}),
    ("chat", _allowed("chat", ["close_issue", "add_label"])),
    ("responses", _allowed("responses", ["add_label"], "auto")),
]


def _given(api: str) -> list[dict[str, Any]]:
    """The full definitions as a caller of that API gives them."""
    if api == "responses":
        return [{"type": "function", **t["function"]} for t in TOOLS]
    if api == "anthropic":
        return [
            {
                "name": t["function"]["name"],
                "description": t["function"]["description"],
                "input_schema": t["function"]["parameters"],
            }
            for t in TOOLS
        ]
    return TOOLS


@pytest.mark.parametrize(("api", "choice"), _CHOICES)
def test_render_with_a_forcing_choice_counts_the_tools_it_forces_whole(
    api: str, choice: Any
) -> None:
    # Session.render(tool_choice=...) counted a forced tool (or the tools allowed_tools limits
    # the model to) as its stub, a name and a line, while a wrapper sending the same request
    # counted and sent it whole: rendered without a wrapper, the request was short by the
    # tool's schema, and on_demand_tools() gave only stubs to send, the forced call's 12
    # parameters left to guesses.
    from ctxpack import Session

    provider = "anthropic" if api == "anthropic" else "openai"
    wrapped_sent, _ = _forced(api, choice)
    session = Session(counter=COUNTER, tools_on_demand=True)
    session.append({"role": "user", "content": "Close issue 7."}, provider=provider)
    result = session.render(tools=_given(api), provider=provider, tool_choice=choice)
    # The definitions as the wrapper sends them, and what OpenAI adds for the choice.
    added = tool_choice_tokens(choice, COUNTER.count) if provider == "openai" else 0
    assert result.tool_tokens == tool_definition_tokens(wrapped_sent, COUNTER) + added
    # What on_demand_tools() gives for that choice is what the wrapper sends, and what the
    # render counted.
    from ctxpack.tools_on_demand import on_demand_tools

    shape = "responses" if api == "responses" else "chat"
    sent = [
        *on_demand_tools(_given(api), provider, tool_choice=choice),
        *session.tools(provider, api=shape),
    ]
    assert sent == wrapped_sent
    assert any(_schema(t) in _FULL for t in sent)


def test_on_demand_tools_refuses_a_choice_forcing_a_tool_it_does_not_send() -> None:
    from ctxpack import ConfigError
    from ctxpack.tools_on_demand import on_demand_tools

    with pytest.raises(ConfigError, match=r"tool_choice: forces the tool 'deploy'"):
        on_demand_tools(TOOLS, tool_choice={"type": "function", "function": {"name": "deploy"}})
    # Without a choice, or one the model may answer by loading a definition first: stubs.
    assert on_demand_tools(TOOLS, tool_choice="required") == on_demand_tools(TOOLS)
