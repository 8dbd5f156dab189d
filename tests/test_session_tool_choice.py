"""A request's ``tool_choice`` takes prompt tokens on OpenAI (a forced function's name and 4,
``"none"`` 1): a session told it (``render(tool_choice=...)``, or a wrapped client's request)
counts them, and a managed one leaves them room.

A managed session sizing its own requests ignored it: behind a wrapped OpenAI client, a request
forcing a tool could pass the window by the function's name and 4 tokens.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import ctxpack
from ctxpack import AsyncSession, BudgetExceededError, ConfigError, Session
from ctxpack.managed import WindowPolicy
from tests.sdk_mock import Capture, chat_completion, openai_client

COUNTER = ctxpack.get_counter(counter="cl100k_base")
SYSTEM = {"role": "system", "content": "You are a coding agent."}
TOOL = {
    "type": "function",
    "function": {
        "name": "run_the_whole_test_suite",
        "description": "Run every test.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}
FORCED = {"type": "function", "function": {"name": "run_the_whole_test_suite"}}
# OpenAI's prompt for a forced function: its name and 4 tokens (see _internal/tool_choice.py).
FORCED_TOKENS = COUNTER.count("run_the_whole_test_suite") + 4
POLICY = WindowPolicy(window=2_048, reply_room=256)


def task_filling(tokens: int) -> dict[str, str]:
    """The task after which the system prompt, the task and the tool take ``tokens`` of a
    request, counted on their own."""
    for n in range(1, 4_000):
        task = {"role": "user", "content": "fix " * n}
        if ctxpack.count_tokens([SYSTEM, task], counter=COUNTER, tools=[TOOL]) >= tokens:
            assert ctxpack.count_tokens([SYSTEM, task], counter=COUNTER, tools=[TOOL]) == tokens
            return task
    raise AssertionError(tokens)


def managed(task: dict[str, str]) -> Session:
    session = Session(counter=COUNTER, window=POLICY, retrieve_tool=False, filters=False)
    session.extend([SYSTEM, task])
    return session


ROOM = POLICY.window - POLICY.reserve


def test_a_managed_render_leaves_room_for_the_function_a_request_forces() -> None:
    fits = managed(task_filling(ROOM - FORCED_TOKENS))
    result = fits.render(tools=[TOOL], tool_choice=FORCED)
    assert result.tokens == ROOM
    sent = ctxpack.count_tokens(result.to_openai(), counter=COUNTER, tools=[TOOL])
    assert result.tokens == sent + FORCED_TOKENS
    assert result.tool_tokens == ctxpack.count_tokens([], counter=COUNTER, tools=[TOOL]) - 3 + (
        FORCED_TOKENS
    )
    # One token more than the room holds with the choice, which nothing can shorten.
    over = managed(task_filling(ROOM - FORCED_TOKENS + 1))
    assert over.render(tools=[TOOL]).tokens == ROOM - FORCED_TOKENS + 1
    with pytest.raises(BudgetExceededError, match="raise window"):
        over.render(tools=[TOOL], tool_choice=FORCED)


@pytest.mark.parametrize(("choice", "extra"), [("none", 1), ("auto", 0), ("required", 0)])
def test_the_other_choices_take_what_openai_adds_for_them(choice: str, extra: int) -> None:
    session = Session(counter=COUNTER, retrieve_tool=False, filters=False)
    session.extend([SYSTEM, {"role": "user", "content": "Fix the build."}])
    plain = session.render(tools=[TOOL]).tokens
    assert session.render(tools=[TOOL], tool_choice=choice).tokens == plain + extra


def test_a_budgeted_render_packs_the_choice_out_of_its_budget() -> None:
    session = Session(counter=COUNTER, retrieve_tool=False, filters=False)
    session.extend([SYSTEM, {"role": "user", "content": "Fix the build."}])
    for i in range(30):
        session.append({"role": "assistant", "content": f"Step {i}: " + "looking " * 30})
        session.append({"role": "user", "content": f"Go on with step {i}."})
    plain = session.render(600, tools=[TOOL], reserve=50)
    forced = session.render(600, tools=[TOOL], reserve=50, tool_choice=FORCED)
    assert plain.tokens + 50 <= 600 and forced.tokens + 50 <= 600
    assert forced.reserve == 50
    sent = ctxpack.count_tokens(forced.to_openai(), counter=COUNTER, tools=[TOOL])
    assert forced.tokens == sent + FORCED_TOKENS


def test_a_claude_request_adds_nothing_for_its_choice() -> None:
    session = Session(counter=COUNTER, retrieve_tool=False, filters=False)
    session.extend([SYSTEM, {"role": "user", "content": "Fix the build."}])
    plain = session.render(tools=[TOOL], provider="anthropic").tokens
    choice = {"type": "tool", "name": "run_the_whole_test_suite"}
    assert session.render(tools=[TOOL], provider="anthropic", tool_choice=choice).tokens == plain


@pytest.mark.parametrize(
    ("choice", "provider", "match"),
    [
        ({"type": "function", "function": {"name": "deploy"}}, "openai", "'deploy'"),
        ("sometimes", "openai", "tool_choice: OpenAI takes"),
        ("auto", "anthropic", "tool_choice: Anthropic takes"),
    ],
)
def test_a_choice_the_provider_refuses_is_refused_naming_it(
    choice: Any, provider: Any, match: str
) -> None:
    session = managed({"role": "user", "content": "Fix the build."})
    with pytest.raises(ConfigError, match=match):
        session.render(tools=[TOOL], provider=provider, tool_choice=choice)
    assert session.window_state.requests == 0  # refused before anything was rendered


def test_an_async_session_takes_the_choice_too() -> None:
    async def run() -> ctxpack.PackResult:
        session = await AsyncSession.open(
            "forced",
            store="memory://",
            counter=COUNTER,
            window=POLICY,
            retrieve_tool=False,
            filters=False,
        )
        await session.extend([SYSTEM, task_filling(ROOM - FORCED_TOKENS + 1)])
        return await session.render(tools=[TOOL], tool_choice=FORCED)

    with pytest.raises(BudgetExceededError):
        asyncio.run(run())


def test_a_wrapped_openai_client_leaves_room_for_the_function_its_request_forces() -> None:
    capture = Capture(chat_completion({"role": "assistant", "content": "Done.", "refusal": None}))
    task = task_filling(ROOM - FORCED_TOKENS + 1)
    session = Session(counter=COUNTER, window=POLICY, retrieve_tool=False, filters=False)
    client = ctxpack.wrap_openai(openai_client(capture), session=session)
    request: dict[str, Any] = {"model": "gpt-4", "messages": [SYSTEM, task], "tools": [TOOL]}
    client.chat.completions.create(**request, max_tokens=POLICY.reserve)  # fits, unforced
    # Forced, the same prompt would pass the window by one token: refused, not sent.
    with pytest.raises(BudgetExceededError):
        client.chat.completions.create(**request, max_tokens=POLICY.reserve, tool_choice=FORCED)
    assert len(capture.requests) == 1
