"""``session.model = ...`` sends the next requests to another model, counted as it counts."""

from __future__ import annotations

import asyncio
import warnings

import pytest

from ctxpack import AsyncSession, BudgetExceededError, ConfigError, Session, get_counter

from .helpers import counter_name

SYSTEM = {"role": "system", "content": "You are a coding agent."}
# Far more tokens for Claude's counter than for gpt-4o's.
TASK = {"role": "user", "content": " ".join(f"wörd{i} 数据" for i in range(1150))}


def test_a_changed_model_counts_with_its_own_counter() -> None:
    # The session kept gpt-4o's counter: a managed request that Claude's count puts over the
    # window was sent, where a session made for Claude refuses it.
    session = Session(model="gpt-4o", window=8_000, filters=False)
    session.extend([SYSTEM, TASK])
    session.render()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session.model = "claude-sonnet-4-5"
    assert session.model == "claude-sonnet-4-5"
    assert session.counter.name == counter_name("claude-sonnet-4-5")  # type: ignore[attr-defined]
    with pytest.raises(BudgetExceededError):
        session.render()


def test_a_changed_model_is_a_cache_warning_counted_by_the_new_counter() -> None:
    session = Session(model="gpt-4o", window=64_000, filters=False)
    session.extend([SYSTEM, TASK])
    session.render()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session.model = "claude-sonnet-4-5"
    moved = session.render()
    (warning,) = [d for d in moved.decisions if d.stage == "cache"]
    assert "the model changed from 'gpt-4o' to 'claude-sonnet-4-5'" in warning.reason
    assert moved.counter == counter_name("claude-sonnet-4-5")


def test_a_counter_given_stays_when_the_model_changes() -> None:
    counter = get_counter(counter="cl100k_base")
    session = Session(model="gpt-4o", counter=counter, window=8_000)
    session.model = "gpt-4o-mini"
    assert session.counter is counter


@pytest.mark.parametrize("counter", [None, "cl100k_base"])
def test_a_model_that_is_not_a_name_is_refused_naming_model(counter: str | None) -> None:
    # With a counter of its own, the session took any value (42, b"gpt-4o") as its model, in
    # silence: the constructor refuses it.
    session = Session(model="gpt-4o", counter=counter)
    with pytest.raises(ConfigError, match=r"^model must be a string or None, got int"):
        session.model = 42  # type: ignore[assignment]
    assert session.model == "gpt-4o"
    assert session.counter.name == (counter or "o200k_base")  # type: ignore[attr-defined]


def test_a_window_beyond_the_new_model_warns() -> None:
    session = Session(model="gpt-4.1", window=150_000)  # no warning: gpt-4.1's is larger
    with pytest.warns(UserWarning, match="window=150000 is larger"):
        session.model = "gpt-4o"


# --------------------------------------------------------------------------------- AsyncSession


def test_an_async_sessions_changed_model_counts_with_its_own_counter() -> None:
    # AsyncSession had no model setter: session.model = ... set an attribute of its own, in
    # silence, and the session went on counting with the old model's counter.
    async def main() -> None:
        session = await AsyncSession.open(
            "moved", store="memory://", model="gpt-4o", window=64_000, filters=False
        )
        await session.extend([SYSTEM, TASK])
        await session.render()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            session.model = "claude-sonnet-4-5"
        assert session.model == "claude-sonnet-4-5"
        claude = counter_name("claude-sonnet-4-5")
        assert session.counter.name == claude  # type: ignore[attr-defined]
        moved = await session.render()
        (warning,) = [d for d in moved.decisions if d.stage == "cache"]
        assert "the model changed from 'gpt-4o' to 'claude-sonnet-4-5'" in warning.reason
        assert moved.counter == claude
        await session.close()

    asyncio.run(main())


def test_an_async_session_takes_a_model_as_a_session_does() -> None:
    async def main() -> None:
        counter = get_counter(counter="cl100k_base")
        given = await AsyncSession.open("given", store="memory://", counter=counter)
        given.model = "gpt-4o"
        assert given.counter is counter and given.model == "gpt-4o"
        with pytest.raises(ConfigError, match=r"^model must be a string or None, got int"):
            given.model = 42  # type: ignore[assignment]
        assert given.model == "gpt-4o"
        session = await AsyncSession.open(
            "wide", store="memory://", model="gpt-4.1", window=150_000
        )
        with pytest.warns(UserWarning, match="window=150000 is larger") as warned:
            session.model = "gpt-4o"
        assert warned[0].filename == __file__  # said where the model was set

    asyncio.run(main())


@pytest.mark.parametrize("window", [None, 64_000])
def test_a_cache_warning_is_in_the_request_that_loses_the_cache_only(window: int | None) -> None:
    # Every later render carried the warning again ("this request writes its N tokens again"),
    # so an application watching each request for a lost cache saw one at every request.
    session = Session(model="gpt-4o", window=window, filters=False)
    session.extend([SYSTEM, TASK])
    session.render()
    session.model = "gpt-4o-mini"
    moved = session.render()
    session.append({"role": "user", "content": "and then?"})
    later = session.render()
    assert [d.stage for d in moved.decisions].count("cache") == 1
    assert [d for d in later.decisions if d.stage == "cache"] == []
    session.model = "gpt-4o"
    again = session.render()
    (warning,) = [d for d in again.decisions if d.stage == "cache"]
    assert "from 'gpt-4o-mini' to 'gpt-4o'" in warning.reason
