"""A LangChain agent's ``tool_choice`` costs an OpenAI prompt what it costs a wrapped client's
request: a forced function's name and 4 tokens, ``"none"`` 1 (see test_tool_prompt_figures).
The middlewares leave that room, as the wrappers do."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from langchain.agents.middleware import ModelRequest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from ctxpack import get_counter
from ctxpack.integrations.langchain_agent import PackingMiddleware, SessionMiddleware

from .test_langchain_agent import RecordingChatModel

FOO = {
    "type": "function",
    "function": {
        "name": "foo",
        "description": "Do a foo",
        "parameters": {"type": "object", "properties": {}},
    },
}
HISTORY: list[BaseMessage] = [
    HumanMessage("an older question, to drop when room is short"),
    AIMessage("an older answer"),
    HumanMessage("hello"),
]
GPT_4O: dict[str, Any] = {"window": 100_000, "model": "gpt-4o", "provider": "openai"}
# What each choice adds on gpt-4o: "foo" is one token of o200k_base.
ADDED = {"auto": 0, "required": 0, "any": 0, "none": 1, "foo": 5}


def _request(tool_choice: Any, thread: str = "t") -> Any:
    return ModelRequest(
        model=RecordingChatModel(script=[AIMessage("ok")]),
        messages=list(HISTORY),
        tools=[FOO],
        tool_choice=tool_choice,
        runtime=SimpleNamespace(config={"configurable": {"thread_id": thread}}),
    )


def test_the_forced_function_costs_its_name_and_four() -> None:
    assert get_counter(model="gpt-4o").count("foo") == 1


@pytest.mark.parametrize("choice", list(ADDED))
def test_the_packing_middleware_leaves_room_for_the_choice(choice: str) -> None:
    # Before: the choice was not reserved, and a forced request was billed up to the name
    # and 4 tokens over its budget.
    whole_packer = PackingMiddleware(budget=10_000, **GPT_4O)
    whole_packer.pack_request(_request(None))
    assert whole_packer.last_result is not None
    whole = whole_packer.last_result.tokens
    packer = PackingMiddleware(budget=whole, **GPT_4O)
    packer.pack_request(_request(choice))
    assert packer.last_result is not None
    assert packer.last_result.tokens + ADDED[choice] <= whole
    assert (len(packer.last_result.messages) < len(HISTORY)) == (ADDED[choice] > 0)


@pytest.mark.parametrize("choice", ["none", "foo"])
def test_a_managed_session_counts_the_choice_in_its_request(choice: str) -> None:
    # The session sizes its own requests within the window: it must know the choice, which
    # the middleware did not pass on (the wrapped clients do).
    middleware = SessionMiddleware(window=50_000, model="gpt-4o", provider="openai")
    middleware.pack_request(_request("auto", thread="auto"))
    free = middleware.last_result_for("auto")
    middleware.pack_request(_request(choice, thread=choice))
    forced = middleware.last_result_for(choice)
    assert free is not None and forced is not None
    assert forced.tokens - free.tokens == ADDED[choice]
    assert forced.tool_tokens - free.tool_tokens == ADDED[choice]
