"""benchmarks/long_lines.py filters every tool output with and without the long-line cut, and
counts the terms the cut hides that the agent used later."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .helpers import load_script

ROOT = Path(__file__).resolve().parents[1]


def _session(path: Path, hit_line: str, reply: str) -> None:
    listing = "\n".join(f"src/mod_{i}.py:{i}: import os" for i in range(200))
    call = {"id": "c", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "find the imports"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c", "content": listing + "\n" + hit_line},
        {"role": "assistant", "content": reply},
    ]
    path.write_text(json.dumps({"id": path.stem, "messages": messages}), "utf-8")


def test_a_term_hidden_by_the_cut_and_used_later_is_counted(tmp_path: Path) -> None:
    bench = load_script(ROOT / "benchmarks" / "long_lines.py", "long_lines_for_tests")
    data = tmp_path / "sessions"
    data.mkdir()
    middle = "var a=1;" * 600 + "renderLogoBlank();" + "var b=2;" * 600
    _session(data / "s1.json", "app.min.js:1:" + middle, "The bug is in renderLogoBlank.")
    _session(data / "s2.json", "short.js:1: import os", "Nothing long here.")
    assert bench.main([str(data), "--out", str(tmp_path / "out")]) == 0
    (row,) = json.loads((tmp_path / "out" / "long_lines.json").read_text("utf-8"))
    assert (row["outputs"], row["changed"]) == (2, 1)
    assert row["lost"] == ["s1: renderLogoBlank"]
    assert row["tokens cut"] < row["tokens whole"]
    assert "| sessions | 2 | 1 |" in (tmp_path / "out" / "long_lines.md").read_text("utf-8")


def _compare(tmp_path: Path, compare: str, command: str, output: str, reply: str) -> Any:
    """``long_lines.py --compare compare`` on one session: a call running ``command``, its
    ``output``, and the agent's ``reply``; the row of the results."""
    bench = load_script(ROOT / "benchmarks" / "long_lines.py", f"long_lines_{compare}_for_tests")
    data = tmp_path / "sessions"
    data.mkdir()
    arguments = json.dumps({"command": command})
    call = {"id": "c", "type": "function", "function": {"name": "bash", "arguments": arguments}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "Look.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c", "content": output},
        {"role": "assistant", "content": reply},
    ]
    (data / "s1.json").write_text(json.dumps({"id": "s1", "messages": messages}), "utf-8")
    out = tmp_path / "out"
    assert bench.main([str(data), "--compare", compare, "--out", str(out)]) == 0
    name = compare.replace("-", "_")
    assert (out / f"{name}.md").read_text("utf-8").startswith("# The ")
    (row,) = json.loads((out / f"{name}.json").read_text("utf-8"))
    return row


def test_the_diff_budget_comparison_filters_with_the_calls_command(tmp_path: Path) -> None:
    diff = []
    for f in range(300):
        diff += [f"diff --git a/lib_{f}.py b/lib_{f}.py", "@@ -1 +1 @@", f"+value_{f} = {f}"]
        diff += [f"+pad_{f}_{k} = {k}" for k in range(10)]
    row = _compare(
        tmp_path, "diff-budget", "git diff --cached", "\n".join(diff), "value_250 looks wrong."
    )
    assert (row["outputs"], row["changed"], row["kinds"]) == (1, 1, {"diff": 1})
    assert row["lost"] == ["s1: value_250"]


def test_the_odd_lines_comparison_counts_a_term_the_default_shows(tmp_path: Path) -> None:
    log = [f"worker-{i % 8} handled request {i:06d} in {i % 97} ms" for i in range(900)]
    log[600] = "worker-3 switched upstream to standbyReplica"
    row = _compare(
        tmp_path, "odd-lines", "journalctl -u api", "\n".join(log), "It moved to standbyReplica."
    )
    assert (row["outputs"], row["changed"]) == (1, 1)
    assert (row["gained"], row["lost"]) == (["s1: standbyReplica"], [])


def test_the_warning_budget_comparison_counts_a_warning_it_hides(tmp_path: Path) -> None:
    log = [f"npm WARN deprecated pkg{i}@1.0.0: unsupported" for i in range(100)]
    log[90] = "npm WARN deprecated leftpadLegacy@1.0.0: unsupported"
    output = "\n".join([*log, "added 100 packages"])
    row = _compare(tmp_path, "warning-budget", "npm install", output, "Replace leftpadLegacy.")
    assert (row["changed"], row["kinds"]) == (1, {"build_log": 1})
    assert (row["lost"], row["gained"]) == (["s1: leftpadLegacy"], [])
