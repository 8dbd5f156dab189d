"""The Session strategies of benchmarks/agent_sessions.py replay a small session: requests are
the compact record, lost evidence is recoverable through the artifacts the request names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .helpers import load_script

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "tool_outputs"


def harness() -> Any:
    return load_script(ROOT / "benchmarks" / "agent_sessions.py", "agent_sessions_for_tests")


def call(call_id: str, command: str) -> dict[str, Any]:
    arguments = json.dumps({"command": command})
    return {
        "role": "assistant",
        "content": f"THOUGHT: run {command}",
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": "bash", "arguments": arguments},
            }
        ],
    }


def _tool_tokens(A: Any, tools: Any, billing: Any, counter: Any) -> int:
    """The input tokens ``tools`` add to a request, as ``billing`` bills them."""
    # Beside one user message: simulate() refuses a request without a message, as providers do.
    asked = [{"role": "user", "content": "Go on."}]
    with_tools, without = (
        A.simulate([{"messages": asked, "tools": t}], price=billing.price, counter=counter)
        for t in (tools, None)
    )
    return int(with_tools.input_tokens - without.input_tokens)


def test_session_strategies_replay_and_keep_evidence_recoverable() -> None:
    A = harness()
    listing = "\n".join(
        f"src/pkg/module_{i}.py:{i}: def handler_{i}(request_id):" for i in range(60)
    )
    messages = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing auth test."},
        call("c1", "npm test"),
        {"role": "tool", "tool_call_id": "c1", "content": (FIXTURES / "jest_auth.txt").read_text()},
        call("c2", "grep -rn handler_ src"),
        {"role": "tool", "tool_call_id": "c2", "content": listing},
        {"role": "assistant", "content": "handler_55 in src/pkg/module_55.py takes request_id."},
    ]
    session = A.AgentSession(id="t", messages=messages)
    counter = A.get_counter(counter=A.ENCODING)
    billing = A.Billing.parse("claude-sonnet-4-5@request")
    raw = A.replay(session, "raw", A.STRATEGIES["raw"], counter, [billing])
    for name in ("session", "session-answered"):
        run = A.replay(session, name, A.STRATEGIES[name], counter, [billing])
        # What the session saves, less its retrieve tool, which Claude receives with its
        # tool-use system prompt on every request: 3 requests are too few for that to pay.
        tools = sum(_tool_tokens(A, r.tools, billing, counter) for r in run.requests)
        sent = run.bills[billing.label].input_tokens - tools
        assert sent < raw.bills[billing.label].input_tokens
        assert run.evidence_total == raw.evidence_total > 0
        # Whatever is not in the request is in an original the request names.
        assert run.evidence_recoverable == run.evidence_total
    silent = A.replay(
        session, "session-no-retrieve", A.STRATEGIES["session-no-retrieve"], counter, [billing]
    )
    # Without the retrieve tool, the model cannot read the originals: nothing is recoverable.
    assert silent.evidence_recoverable == silent.evidence_present
    arrival = A.replay(session, "session", A.STRATEGIES["session"], counter, [billing])
    assert {item["term"] for item in arrival.lost} <= {
        "id:handler_55",
        "path:src/pkg/module_55.py",
        "num:55",
    }
