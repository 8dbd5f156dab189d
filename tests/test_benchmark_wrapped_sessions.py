"""benchmarks/wrapped_sessions.py replays a real session through a wrapped client: one timed
request per assistant message, and the session given each message once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ctxpack

from .helpers import load_script

ROOT = Path(__file__).resolve().parents[1]


def test_a_replay_times_each_request_and_feeds_the_session_once() -> None:
    bench: Any = load_script(ROOT / "benchmarks" / "wrapped_sessions.py", "wrapped_for_tests")
    messages = json.loads((ROOT / "tests" / "fixtures" / "agent_session.json").read_text())[
        "messages"
    ]
    session = ctxpack.Session(model="gpt-4o", window=64_000)
    run = bench.replay(messages, session, None)
    asked = sum(1 for i, m in enumerate(messages) if m["role"] == "assistant" and i > 0)
    assert len(run["requests"]) == len(run["reads"]) == asked
    assert all(t > 0 for t in run["requests"])
    # Every message before the last answer reached the session, once.
    last_answer = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    assert [m.text for m in session.transcript()] == [
        ctxpack.from_openai([m])[0].text for m in messages[:last_answer]
    ]


def test_a_langchain_replay_feeds_the_thread_session_once(tmp_path: Path) -> None:
    bench: Any = load_script(ROOT / "benchmarks" / "wrapped_sessions.py", "wrapped_lc_for_tests")
    messages = json.loads((ROOT / "tests" / "fixtures" / "agent_session.json").read_text())[
        "messages"
    ]
    middleware = bench.SessionMiddleware(
        window=64_000, model="gpt-4o", store=f"sqlite:///{tmp_path}/s.db"
    )
    run = bench.replay_langchain(messages, middleware, "thread-1")
    asked = sum(1 for i, m in enumerate(messages) if m["role"] == "assistant" and i > 0)
    assert len(run["requests"]) == len(run["reads"]) == asked
    last_answer = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    assert [m.text for m in middleware.session("thread-1").transcript()] == [
        ctxpack.from_openai([m])[0].text for m in messages[:last_answer]
    ]
    middleware.close()
