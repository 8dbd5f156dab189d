"""A session made with neither a model nor a counter, behind a client wrapper: each request is
counted as the model it goes to calls for, as the wrapper counts a request without a session.

Such a session counted with the default encoding (``cl100k_base``), whatever the request's
model: a Claude request, which the approximation counts 1.41 times larger, was sent past the
managed window it was sized for.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest

import ctxpack
from tests.sdk_mock import (
    Capture,
    anthropic_client,
    anthropic_message,
    async_anthropic_client,
    chat_completion,
    openai_client,
)

# About 5,600 cl100k_base tokens: within an 8,000-token window less its reply room by that
# count, past it by Claude's approximation (times 1.41).
TASK = "Refactor the module as follows. " + " ".join(
    f"Step {i}: rename function_{i} to handler_{i} and update its callers." for i in range(330)
)


def claude_tokens(body: dict[str, Any]) -> int:
    """The request's messages and system prompt as ctxpack counts a claude-sonnet-4-5 request."""
    counter = ctxpack.get_counter(model="claude-sonnet-4-5")
    return counter.count_messages(ctxpack.from_anthropic(body["messages"], system=body["system"]))


@pytest.fixture(autouse=True)
def _quiet() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ctxpack.tokens.ApproximateTokenCountWarning)
        yield


def test_a_managed_session_without_a_model_refuses_a_claude_request_past_its_window() -> None:
    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
    client = ctxpack.wrap_anthropic(
        anthropic_client(capture), session=ctxpack.Session(window=8_000)
    )
    task = [{"role": "user", "content": TASK}]
    with pytest.raises(ctxpack.BudgetExceededError):
        client.messages.create(
            model="claude-sonnet-4-5", max_tokens=1_000, system="You fix bugs.", messages=task
        )
    assert capture.requests == []  # nothing sent past the window


def test_a_managed_session_without_a_model_counts_each_request_for_its_model() -> None:
    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
    session = ctxpack.Session(window=8_000)
    client = ctxpack.wrap_anthropic(anthropic_client(capture), session=session)
    history: list[Any] = [{"role": "user", "content": "Why does the auth test fail?"}]
    for step in range(12):
        client.messages.create(
            model="claude-sonnet-4-5", max_tokens=1_000, system="You fix bugs.", messages=history
        )
        assert claude_tokens(capture.body) + 1_000 <= 8_000
        call = {"type": "tool_use", "id": f"toolu_{step}", "name": "bash", "input": {"n": step}}
        view = "\n".join(f"def f_{step}_{i}(x): return x * {i} + {step}" for i in range(120))
        history += [
            {"role": "assistant", "content": [call]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": view}],
            },
        ]
    assert session.model == "claude-sonnet-4-5"
    assert session.counter.name == ctxpack.get_counter(model="claude-sonnet-4-5").name


def test_the_wrappers_model_is_the_one_a_session_without_one_counts_for() -> None:
    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
    session = ctxpack.Session(window=8_000)
    client = ctxpack.wrap_anthropic(
        anthropic_client(capture), session=session, model="claude-opus-4-7"
    )
    client.messages.create(
        model="claude-sonnet-4-5", max_tokens=100, messages=[{"role": "user", "content": "Hi."}]
    )
    assert session.counter.name == ctxpack.get_counter(model="claude-opus-4-7").name


def test_a_session_given_a_model_or_a_counter_keeps_it() -> None:
    capture = Capture(chat_completion({"role": "assistant", "content": "ok"}))
    named = ctxpack.Session(model="gpt-4", window=8_000)
    counted = ctxpack.Session(counter="cl100k_base", window=8_000)
    for session in (named, counted):
        client = ctxpack.wrap_openai(openai_client(capture), session=session)
        client.chat.completions.create(
            model="gpt-4o", max_tokens=100, messages=[{"role": "user", "content": "Hi."}]
        )
        assert session.counter.name == "cl100k_base"
    assert (named.model, counted.model) == ("gpt-4", None)


def test_an_openai_request_is_counted_with_its_models_encoding() -> None:
    capture = Capture(chat_completion({"role": "assistant", "content": "ok"}))
    session = ctxpack.Session(window=8_000)
    client = ctxpack.wrap_openai(openai_client(capture), session=session)
    client.chat.completions.create(
        model="gpt-4o", max_tokens=100, messages=[{"role": "user", "content": "Hi."}]
    )
    assert session.counter.name == "o200k_base"


def test_an_async_session_without_a_model_counts_for_the_request() -> None:
    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))

    async def send() -> None:
        session = await ctxpack.AsyncSession.open("s", store="memory://", window=8_000)
        client = ctxpack.wrap_anthropic(async_anthropic_client(capture), session=session)
        with pytest.raises(ctxpack.BudgetExceededError):
            await client.messages.create(
                model="claude-sonnet-4-5",
                max_tokens=1_000,
                system="You fix bugs.",
                messages=[{"role": "user", "content": TASK}],
            )
        await session.close()

    asyncio.run(send())
    assert capture.requests == []


def exact_count(text: str) -> int:
    """A caller's own count function, as a wrapper's counter= takes it."""
    return len(text) // 3


@pytest.mark.parametrize("managed", [True, False])
def test_a_wrappers_counter_other_than_its_sessions_is_refused(managed: bool) -> None:
    # The session counts every request with its own counter: the wrapper's was ignored, and a
    # caller who gave an exact count had the session's approximation (or cl100k_base) instead.
    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
    limits: dict[str, Any] = {} if managed else {"window": 8_000}
    window = {"window": 8_000} if managed else {}
    session = ctxpack.Session(model="claude-sonnet-4-5", **window)
    with pytest.raises(ctxpack.ConfigError, match=r"counter=.*Session\(counter=\.\.\.\)"):
        ctxpack.wrap_anthropic(
            anthropic_client(capture), session=session, counter=exact_count, **limits
        )
    own = ctxpack.Session(counter=exact_count, **window)
    client = ctxpack.wrap_anthropic(
        anthropic_client(capture), session=own, counter=exact_count, **limits
    )
    client.messages.create(
        model="claude-sonnet-4-5", max_tokens=100, messages=[{"role": "user", "content": "Hi."}]
    )
    assert own.counter.name == "exact_count"


@pytest.mark.parametrize("wrap", [ctxpack.wrap_openai, ctxpack.wrap_anthropic])
def test_a_wrappers_pipeline_beside_a_session_is_refused(wrap: Any) -> None:
    # The session's pipeline packs its requests: the wrapper's ran nowhere, silently.
    make = openai_client if wrap is ctxpack.wrap_openai else anthropic_client
    client = make(Capture({}))
    pipeline = ctxpack.default_pipeline()
    with pytest.raises(ctxpack.ConfigError, match=r"^pipeline= with session=.*Session\(pipeline"):
        wrap(client, session=ctxpack.Session(), pipeline=pipeline, window=8_000)
    wrap(client, pipeline=pipeline, window=8_000)  # without a session, it packs
    wrap(client, session=ctxpack.Session(pipeline=pipeline), window=8_000)
