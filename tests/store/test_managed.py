"""A stored session in managed mode (``Session.open(..., window=W)``): the window's state
(what was cleared, compacted) is stored with the session at each render, so that any replica,
in any process, sends the request the last one would have sent next."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ctxpack import AsyncSession, ConfigError, Session, to_openai
from ctxpack.errors import StoreError
from ctxpack.managed import WindowPolicy, WindowState
from ctxpack.store import SessionStore

from .backends import backend_url
from .test_sessions import CAT, PYTEST, FailingStore, turn, wire_in_another_process

# Small enough for the fixture turns to be cleared (from turn 5) and then compacted (from
# turn 9): both edits happen within TURNS (with 3 tool results kept by a clearing; the default
# keeps 5, and so compacts first at this window).
WINDOW = 4_000
KEEP = 3
TURNS = 12
# Thresholds at which the turns below see both a clearing and a compaction.
POLICY = WindowPolicy(window=WINDOW, keep=KEEP, clear_at=0.35, compact_at=0.6)
# The same, for another interpreter.
POLICY_ARGS = f"window={WINDOW}, keep={KEEP}, clear_at=0.35, compact_at=0.6"


def agent_turn(n: int) -> list[dict[str, Any]]:
    return turn(n, PYTEST, "pytest -q") if n % 2 else turn(n, CAT, "cat src/tax.py")


def managed(session_id: str, store: Any) -> Session:
    """The stored managed session every test opens (the same options on every replica)."""
    return Session.open(session_id, store=store, model="gpt-4", window=POLICY)


def wire_of(result: Any) -> str:
    return json.dumps(to_openai(result.messages), sort_keys=True)


def assert_goes_on_from(before: WindowState, after: WindowState) -> None:
    """``after`` keeps every edit ``before`` sent: a message cleared stays cleared (or is
    compacted since), the compacted boundary never moves back."""
    assert after.requests > before.requests
    assert set(before.cleared) <= set(after.cleared) | set(after.compacted)
    assert after.boundary >= before.boundary
    assert set(before.compacted) <= set(after.compacted)


def test_two_replicas_taking_turns_send_the_same_requests_and_keep_every_edit(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    a = managed(session_id, replicas())
    b = managed(session_id, replicas())
    previous = WindowState()
    for n in range(TURNS):
        replica, other = (a, b) if n % 2 else (b, a)
        replica.extend(agent_turn(n))
        sent = wire_of(replica.render())
        assert_goes_on_from(previous, replica.window_state)
        # The other replica, its own state one request behind, reads the new one back before
        # rendering: it sends the same bytes (what the prompt cache needs).
        assert wire_of(other.render()) == sent, f"turn {n}"
        assert other.window_state.requests == replica.window_state.requests + 1
        previous = other.window_state.model_copy(deep=True)
    assert a.window_state.boundary > 0, "the turns must exercise a compaction"
    assert any(d.action == "cleared" for d in a.window_state.decisions), "and a clearing"


def test_replicas_of_a_chat_whose_user_turns_outgrow_the_window_send_the_same_requests(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    a = managed(session_id, replicas())
    b = managed(session_id, replicas())
    room = POLICY.room(tool_tokens=0)
    for n in range(40):
        replica, other = (a, b) if n % 2 else (b, a)
        words = " ".join(f"fact_{n}_{k}" for k in range(25))
        replica.extend(
            [
                {"role": "user", "content": f"Turn {n}: remember {words}."},
                {"role": "assistant", "content": f"Noted {n}."},
            ]
        )
        result = replica.render()
        assert result.tokens <= room
        assert wire_of(other.render()) == wire_of(result), f"turn {n}"
    state = a.window_state
    released = [m for m in a.transcript() if m.role == "user" and m.id in state.compacted]
    assert released, "the user turns must pass instructions_share"
    assert all(a.render().original(m.id).text == m.text for m in released)


def test_a_resumed_managed_session_goes_on_where_it_stopped(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    first = managed(session_id, replicas())
    for n in range(TURNS):
        first.extend(agent_turn(n))
        first.render()
    again = managed(session_id, replicas())
    assert again.window_state == first.window_state
    assert again.window_state.requests == TURNS
    assert wire_of(again.render()) == wire_of(first.render())
    # The originals the requests name are the stored session's own.
    cleared = [d for d in again.window_state.decisions if d.action == "cleared"]
    assert cleared
    for decision in again.window_state.decisions:
        for artifact in re.findall(r"art_[0-9a-f]{16}", decision.reason or ""):
            assert again.retrieve(artifact).text


def test_a_managed_session_resumes_in_another_process_byte_for_byte(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    session = managed("m1", url)
    for n in range(TURNS):
        session.extend(agent_turn(n))
        session.render()
    before = session.window_state.model_copy(deep=True)
    policy = f"__import__('ctxpack.managed', fromlist=['_']).WindowPolicy({POLICY_ARGS})"
    out = wire_in_another_process("m1", url, f", window={policy}")
    # The other process's request is stored too: this one goes on after it, with the same
    # bytes.
    assert wire_of(session.render()) == out
    assert session.window_state.requests == TURNS + 2
    assert_goes_on_from(before, session.window_state)


def test_a_render_that_fails_leaves_the_window_state_unchanged(
    store: SessionStore, session_id: str
) -> None:
    flaky = FailingStore(store)
    session = managed(session_id, flaky)  # type: ignore[arg-type]
    for n in range(TURNS):
        session.extend(agent_turn(n))
        if n < TURNS - 1:
            session.render()
    before = session.window_state.model_copy(deep=True)
    flaky.failing = True
    with pytest.raises(StoreError, match="No space left on device"):
        session.render()
    assert session.window_state == before
    with pytest.raises(ConfigError, match="render\\(\\) takes no budget"):
        session.render(budget=1_000)
    assert session.window_state == before
    flaky.failing = False
    sent = wire_of(session.render())
    assert session.window_state.requests == TURNS
    resumed = managed(session_id, store)
    assert resumed.window_state == session.window_state
    assert wire_of(resumed.render()) == sent


def test_replicas_rendering_at_once_lose_no_request(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    writer = managed(session_id, replicas())
    for n in range(TURNS):
        writer.extend(agent_turn(n))
    sessions = [managed(session_id, replicas()) for _ in range(3)]
    errors: list[BaseException] = []

    def render_twice(session: Session) -> None:
        try:
            for _ in range(2):
                session.render()
        except BaseException as exc:  # reported below, with the thread's failure
            errors.append(exc)

    threads = [threading.Thread(target=render_twice, args=(s,)) for s in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    resumed = managed(session_id, replicas())
    assert resumed.window_state.requests == 6


def test_an_unmanaged_stored_session_stores_no_window_state(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    a = Session.open(session_id, store=replicas(), model="gpt-4")
    a.extend(agent_turn(0))
    a.render()
    b = Session.open(session_id, store=replicas(), model="gpt-4")
    assert b.window_state.requests == 0


def test_pin_and_record_response_are_stored_with_the_session(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    a = managed(session_id, replicas())
    a.pin("Always run ruff before committing.", name="CLAUDE.md", kind="memory")
    a.append({"role": "user", "content": "Go on."})
    response = {
        "id": "resp_1",
        "object": "response",
        "output": [{"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque"}],
    }
    recorded = a.record_response(response)
    assert [d.action for d in recorded] == ["merged"]
    b = managed(session_id, replicas())
    assert b.window_state.decisions == recorded
    assert "ruff" in b.transcript()[0].text
    assert [d for d in b.render().decisions if d.message_id == "resp_1"] == recorded


def test_an_async_session_and_a_session_share_the_window(
    backend: str, tmp_path: Path, replicas: Callable[[], SessionStore], session_id: str
) -> None:
    url = backend_url(backend, tmp_path)
    sync_store = replicas()

    async def main() -> None:
        store: Any = sync_store if backend == "memory" else url
        session = await AsyncSession.open(session_id, store=store, model="gpt-4", window=POLICY)
        other = managed(session_id, sync_store)
        await session.pin("Always run ruff.", name="CLAUDE.md", kind="memory")
        previous = WindowState()
        for n in range(TURNS):
            if n % 2:
                await session.extend(agent_turn(n))
                sent = wire_of(await session.render())
                assert wire_of(other.render()) == sent, f"turn {n}"
                state = other.window_state
            else:
                other.extend(agent_turn(n))
                sent = wire_of(other.render())
                assert wire_of(await session.render()) == sent, f"turn {n}"
                state = session.window_state
            assert_goes_on_from(previous, state)
            previous = state.model_copy(deep=True)
        assert previous.boundary > 0
        assert previous.requests == 2 * TURNS
        assert session.context_management() == {}
        await session.close()

    asyncio.run(main())


def test_describe_tool_answers_on_a_replica_that_did_not_render_the_tools(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "run_tests",
                "description": "Run the test suite and report the failures.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ]
    a = Session.open(session_id, store=replicas(), model="gpt-4", tools_on_demand=True)
    b = Session.open(session_id, store=replicas(), model="gpt-4", tools_on_demand=True)
    a.append({"role": "user", "content": "Run the tests."})
    a.render(tools=tools)
    call = {
        "id": "d1",
        "type": "function",
        "function": {"name": "describe_tool", "arguments": json.dumps({"names": ["run_tests"]})},
    }
    assert b.handle(call) == a.handle(call)
    assert "report the failures" in b.handle(call)


def test_replicas_read_back_the_provider_tool_results_cleared(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    from tests.test_server_results_clearing import _history

    # A window small enough that the results, shortened at arrival, are cleared later too.
    policy = WindowPolicy(window=8_000, managed_room=None, clear_at=0.35, compact_at=0.6, keep=1)
    a, b = (
        Session.open(session_id, store=replicas(), model="gpt-4", window=policy) for _ in range(2)
    )
    history = _history()
    for k, message in enumerate(history):
        replica, other = (a, b) if k % 2 else (b, a)
        replica.append(message)
        if message["role"] == "user":
            sent = replica.render().to_anthropic()
            assert other.render().to_anthropic() == sent, f"message {k}"
    assert a.window_state.results_cleared, "the history must exercise a clearing"
    assert b.window_state.results_cleared == a.window_state.results_cleared
    assert b.records == a.records and any(r.result_id and r.shortened for r in a.records)
