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
