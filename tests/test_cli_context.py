"""ctxpack context FILE: the /context view on the command line (table and JSON)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from ctxpack import context_usage
from ctxpack.cli import main

SESSION = Path(__file__).parent / "fixtures" / "agent_session.json"


def test_json_gives_the_usage_of_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["context", str(SESSION), "--window", "3000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    messages = json.loads(SESSION.read_text("utf-8"))["messages"]
    expected = context_usage(messages, window=3000)
    assert out["total"] == expected.total
    assert [b["tokens"] for b in out["buckets"]] == [b.tokens for b in expected.buckets]
    assert out["warnings"] == expected.warnings != []


def test_the_table_shows_the_buckets_free_space_and_warnings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("rich")
    code = main(["context", str(SESSION), "--window", "100000", "--compaction-window", "3000"])
    assert code == 0
    out = capsys.readouterr().out
    for name in ("system prompt", "tool definitions", "memory files", "tool results", "free"):
        assert name in out
    assert "tokens past the 3k-token compaction window" in out


def test_tools_and_memory_files_are_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = tmp_path / "CLAUDE.md"
    memory.write_text("Always run the tests.", "utf-8")
    tool = {"type": "function", "function": {"name": "bash", "description": "Run it."}}
    request = {
        "messages": [
            {"role": "system", "content": "Agent.\nAlways run the tests."},
            {"role": "user", "content": "Go."},
        ],
        "tools": [tool],
    }
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request), "utf-8")
    assert main(["context", str(path), "--memory", str(memory), "--json"]) == 0
    buckets = {b["name"]: b["tokens"] for b in json.loads(capsys.readouterr().out)["buckets"]}
    assert buckets["tool definitions"] > 0 and buckets["memory files"] > 0


def test_stdin_is_read(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO('[{"role": "user", "content": "hi"}]'))
    assert main(["context", "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] > 0


def test_bad_input_exits_with_2_and_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"messages": [], "tools": {}}', "utf-8")
    assert main(["context", str(path)]) == 2
    assert "'tools' must be a list" in capsys.readouterr().err
    assert main(["context", str(SESSION), "--memory", str(tmp_path / "none.md")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["context", str(SESSION), "--window", "-5"]) == 2
    assert "argument --window: expected a positive integer" in capsys.readouterr().err
