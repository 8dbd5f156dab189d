"""Tools on demand against an allowed-tools choice: the model may call only the tools the
request allows, so one not allowed to call describe_tool must get the allowed tools whole."""

from __future__ import annotations

from typing import Any

import pytest

from ctxpack import get_counter
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
