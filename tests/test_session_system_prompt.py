"""A system prompt that changes from request to request behind a session (a date in it,
LangChain's dynamic_prompt): each request is sent with its own, the session keeping the one it
opened with, and the change warned as a prompt-cache rewrite."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import ctxpack
from ctxpack.managed import WindowPolicy

from .sdk_mock import (
    Capture,
    anthropic_client,
    anthropic_message,
    async_openai_client,
    chat_completion,
    openai_client,
)

OK = chat_completion({"role": "assistant", "content": "ok"})


def _warnings(result: ctxpack.PackResult | None) -> list[str]:
    assert result is not None
    return [d.reason for d in result.decisions if d.action == "warned"]


def test_each_request_is_sent_with_its_own_system_prompt() -> None:
    # The session used to refuse the second request ("needs a new session"), and before that
    # sent "Today is Monday." for every request.
    capture = Capture(OK)
    session = ctxpack.Session(model="gpt-4")
    client = ctxpack.wrap_openai(openai_client(capture), window=3000, session=session)
    history: list[Any] = [
        {"role": "system", "content": "Today is Monday."},
        {"role": "user", "content": "Plan my day."},
    ]
    client.chat.completions.create(model="gpt-4", messages=history, max_tokens=200)
    history[0] = {"role": "system", "content": "Today is Tuesday, and it rains."}
    history += [{"role": "assistant", "content": "Walk."}, {"role": "user", "content": "And now?"}]
    client.chat.completions.create(model="gpt-4", messages=history, max_tokens=200)
    assert capture.body["messages"] == history
    assert any("system prompt changed" in w for w in _warnings(client.last_result))
    # The same new prompt again: sent, and no cache rewrite to warn of (a warning is in the
    # result of the request that loses the cache only).
    history += [{"role": "assistant", "content": "Read."}, {"role": "user", "content": "Later?"}]
    client.chat.completions.create(model="gpt-4", messages=history, max_tokens=200)
    assert capture.body["messages"] == history
    assert _warnings(client.last_result) == []
    # The session's transcript keeps the prompt it opened with, as it came; it is given each
    # message once.
    texts = [m.text for m in session.transcript()]
    assert texts == ["Today is Monday.", "Plan my day.", "Walk.", "And now?", "Read.", "Later?"]
    # Back to the first prompt: sent as well.
    history[0] = {"role": "system", "content": "Today is Monday."}
    client.chat.completions.create(model="gpt-4", messages=history, max_tokens=200)
    assert capture.body["messages"][0] == {"role": "system", "content": "Today is Monday."}
    assert len(_warnings(client.last_result)) == 1


def test_a_request_cannot_add_a_system_prompt_the_history_did_not_open_with() -> None:
    session = ctxpack.Session(model="gpt-4")
    client = ctxpack.wrap_openai(openai_client(Capture(OK)), window=3000, session=session)
    history: list[Any] = [{"role": "user", "content": "Plan my day."}]
    client.chat.completions.create(model="gpt-4", messages=history, max_tokens=200)
    history = [{"role": "system", "content": "Be brief."}, *history]
    with pytest.raises(ctxpack.ConfigError, match="message 0"):
        client.chat.completions.create(model="gpt-4", messages=history, max_tokens=200)


def test_a_managed_session_counts_the_new_prompt_against_its_window() -> None:
    capture = Capture(anthropic_message([{"type": "text", "text": "Done."}]))
    policy = WindowPolicy(window=3_000, reply_room=300)
    session = ctxpack.Session(model="claude-sonnet-4-5", counter="cl100k_base", window=policy)
    client = ctxpack.wrap_anthropic(anthropic_client(capture), session=session)
    history: list[Any] = [{"role": "user", "content": "Question 0? " + "context " * 150}]
    client.messages.create(
        model="claude-sonnet-4-5", max_tokens=300, system="Be brief.", messages=history
    )
    # A prompt ten times longer: it must fit the window with the history, the history giving
    # way, not the prompt.
    long_prompt = "You answer in French. " * 120
    for turn in range(1, 8):
        history += [
            {"role": "assistant", "content": "Done."},
            {"role": "user", "content": f"Question {turn}? " + "context " * 150},
        ]
        client.messages.create(
            model="claude-sonnet-4-5", max_tokens=300, system=long_prompt, messages=history
        )
        result = client.last_result
        assert result is not None
        assert result.messages[0].text == long_prompt
        assert result.tokens <= policy.window - policy.reserve
    assert capture.body["system"] == long_prompt
    assert capture.body["messages"][-1]["content"].startswith("Question 7?")
    # Every instruction the window keeps is verbatim; the first prompt stays the transcript's.
    assert session.transcript()[0].text == "Be brief."
    # A system prompt cannot be removed from a history that opened with one.
    with pytest.raises(ctxpack.ConfigError, match="can only be changed"):
        client.messages.create(model="claude-sonnet-4-5", max_tokens=300, messages=history)


def test_an_async_session_sends_each_requests_own_prompt() -> None:
    capture = Capture(OK)

    async def converse() -> list[str]:
        session = await ctxpack.AsyncSession.open("chat", store="memory://", model="gpt-4")
        client = ctxpack.wrap_openai(async_openai_client(capture), window=3000, session=session)
        history: list[Any] = [{"role": "system", "content": "Prompt 0."}]
        for turn in range(3):
            history[0] = {"role": "system", "content": f"Prompt {turn}."}
            history.append({"role": "user", "content": f"Question {turn}?"})
            await client.chat.completions.create(model="gpt-4", messages=history)
            history.append({"role": "assistant", "content": "ok"})
        return [m.text for m in await session.transcript()]

    texts = asyncio.run(converse())
    assert [body["messages"][0]["content"] for body in capture.requests] == [
        "Prompt 0.",
        "Prompt 1.",
        "Prompt 2.",
    ]
    assert texts[0] == "Prompt 0." and texts.count("Question 2?") == 1


def test_a_session_with_a_changed_prompt_renders_the_same_as_a_fresh_one() -> None:
    # The request opening with its own prompt is the request a session given that prompt
    # first would send: nothing else of it changes.
    history: list[Any] = [
        {"role": "system", "content": "First prompt."},
        {"role": "user", "content": "Run the tests."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "pytest"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "PASSED test_x\n" * 400},
        {"role": "user", "content": "And?"},
    ]
    changed = [{"role": "system", "content": "Second prompt, longer than the first."}]
    sent = []
    for opening in (history[:1], changed):
        capture = Capture(OK)
        session = ctxpack.Session(model="gpt-4")
        client = ctxpack.wrap_openai(openai_client(capture), window=3000, session=session)
        client.chat.completions.create(model="gpt-4", messages=[*opening, *history[1:2]])
        client.chat.completions.create(model="gpt-4", messages=[*changed, *history[1:]])
        sent.append(capture.body["messages"])
    assert sent[0] == sent[1]
    assert sent[0][0] == changed[0]


def test_render_takes_this_requests_system_prompt() -> None:
    # A chatbot backend calling Session directly, its system prompt holding today's date:
    # render(system=...) sends it, counts it, and stores nothing of it.
    policy = WindowPolicy(window=2_000, reply_room=200)
    session = ctxpack.Session(model="gpt-4", window=policy)
    session.extend(
        [{"role": "system", "content": "Today is Monday."}, {"role": "user", "content": "Hi?"}]
    )
    assert session.render().messages[0].text == "Today is Monday."
    tuesday = "Today is Tuesday. " + "Answer in French. " * 60
    result = session.render(system=tuesday)
    assert [m.text for m in result.messages] == [tuesday, "Hi?"]
    assert result.to_openai()[0] == {"role": "system", "content": tuesday}
    # Counted as a session that opened with it counts it.
    fresh = ctxpack.Session(model="gpt-4", window=policy)
    fresh.extend([{"role": "system", "content": tuesday}, {"role": "user", "content": "Hi?"}])
    assert result.tokens == fresh.render().tokens
    assert any("system prompt changed" in w for w in _warnings(result))
    assert session.transcript()[0].text == "Today is Monday."
    # A message works too (a developer prompt), and so does the session's own prompt again.
    developer = session.render(system={"role": "developer", "content": "Be terse."})
    assert developer.to_openai()[0] == {"role": "developer", "content": "Be terse."}
    assert session.render().messages[0].text == "Today is Monday."
    # Each long prompt pushes the history out, never the window.
    for turn in range(12):
        session.extend(
            [
                {"role": "assistant", "content": "Bonjour. " * 40},
                {"role": "user", "content": f"Question {turn}? " + "context " * 80},
            ]
        )
        result = session.render(system=tuesday)
        assert result.messages[0].text == tuesday
        assert result.tokens <= policy.window - policy.reserve


def test_render_system_names_what_is_wrong() -> None:
    session = ctxpack.Session(model="gpt-4")
    session.append({"role": "user", "content": "Hi?"})
    with pytest.raises(ctxpack.InvalidMessageError, match=r"render\(system=\.\.\.\)"):
        session.render(system="Be brief.")
    session = ctxpack.Session(model="gpt-4")
    session.extend([{"role": "system", "content": "A."}, {"role": "user", "content": "Hi?"}])
    named = r"render\(system=\.\.\.\): role"
    with pytest.raises(ctxpack.InvalidMessageError, match=named) as error:
        session.render(system={"role": "user", "content": "Be brief."})
    assert error.value.field == "system.role"
    with pytest.raises(ctxpack.InvalidMessageError, match=r"render\(system=\.\.\.\)"):
        session.render(system=42)  # type: ignore[arg-type]


def test_async_render_takes_this_requests_system_prompt() -> None:
    async def render() -> tuple[str, str]:
        session = await ctxpack.AsyncSession.open("chat", store="memory://", model="gpt-4")
        await session.extend(
            [{"role": "system", "content": "Prompt 0."}, {"role": "user", "content": "Hi?"}]
        )
        result = await session.render(system="Prompt 1.")
        return result.messages[0].text, (await session.transcript())[0].text

    assert asyncio.run(render()) == ("Prompt 1.", "Prompt 0.")
