"""benchmarks/window_stress.py replays sessions into managed sessions at several windows and
counts the requests over the window and the renders that raise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .helpers import load_script

ROOT = Path(__file__).resolve().parents[1]


def _session(path: Path, steps: int, system: str = "You are a coding agent.") -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": "Fix the failing test."},
    ]
    for i in range(steps):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": f"cat f{i}.py"})},
        }
        body = "\n".join(f"value_{i}_{j} = {i * 1000 + j}" for j in range(150))
        messages += [
            {"role": "assistant", "content": f"step {i}", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": body},
        ]
    messages.append({"role": "assistant", "content": "Done."})
    path.write_text(json.dumps({"id": path.stem, "messages": messages}), "utf-8")


def test_requests_are_checked_and_errors_counted(tmp_path: Path) -> None:
    bench = load_script(ROOT / "benchmarks" / "window_stress.py", "window_stress_for_tests")
    data = tmp_path / "sessions"
    data.mkdir()
    _session(data / "long.json", 30)
    # A system prompt no window of 2,000 tokens holds: its first render raises.
    _session(data / "wide.json", 3, system="Rules: " + "be careful. " * 800)
    out = tmp_path / "out"
    argv = [str(data), "--model", "gpt-4o", "--windows", "2000,64000", "--out", str(out)]
    assert bench.main(argv) == 0
    small, large = json.loads((out / "window_stress_gpt-4o.json").read_text("utf-8"))
    assert (small["window"], large["window"]) == (2000, 64000)
    assert small["over"] == large["over"] == 0
    assert 0 < small["peak"] <= 2000 < large["peak"]
    # A render before each assistant message (each step's and the last): 31 and 4 of them.
    assert (small["requests"], large["requests"]) == (31, 31 + 4)
    assert len(small["errors"]) == 1 and small["errors"][0].startswith(
        "wide: BudgetExceededError at message 2:"
    )
    assert large["errors"] == []
    table = (out / "window_stress_gpt-4o.md").read_text("utf-8")
    assert "| sessions | 2,000 | 2 | 31 | 0 |" in table
    assert "Errors by kind: BudgetExceededError 1" in table
