"""benchmarks/session_growth.py replays a managed session into SQLite and reports its writes at
each checkpoint; what a write takes does not grow with the session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .helpers import load_script

ROOT = Path(__file__).resolve().parents[1]


def bench() -> Any:
    return load_script(ROOT / "benchmarks" / "session_growth.py", "session_growth_for_tests")


def test_the_benchmark_reports_every_checkpoint_and_flat_writes(tmp_path: Path) -> None:
    B = bench()
    messages = list(B.synthetic(240))
    assert len(messages) >= 240 and messages[0]["role"] == "system"
    report = B.run(messages, 30, "gpt-4", 8_000, str(tmp_path))
    rows = report["rows"]
    assert [row["messages"] for row in rows] == [30, 60, 120, 240]
    assert rows[-1]["compactions"] >= 2
    assert rows[-1]["total"] == sum(
        rows[-1][k] for k in ("total_entries", "total_state", "total_index", "total_originals")
    )
    # The state a write takes stays about what it was once a summary exists.
    assert rows[-1]["state_last_write"] < 2 * rows[1]["state_last_write"]
    assert "| messages |" in B.table({"source": "synthetic", **report})
