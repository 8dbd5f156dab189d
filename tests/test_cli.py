"""The command line: ctxpack pack FILE --budget N [--explain], ctxpack demo."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import ctxpack
from ctxpack.cli import main

CHAT = Path(__file__).parent / "fixtures" / "chat.json"


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("ctxpack: error: ")
    return lines[0]


def test_pack_prints_the_packed_openai_messages(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", str(CHAT), "--budget", "90", "--model", "gpt-4"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = ctxpack.pack(json.loads(CHAT.read_text("utf-8")), budget=90, model="gpt-4")
    assert out == expected.to_openai()
    assert ctxpack.count_tokens(out, model="gpt-4") <= 90


def test_explain_prints_a_table_of_decisions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", str(CHAT), "--budget", "90", "--explain"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["stage", "action", "message", "tokens", "reason"]
    result = ctxpack.pack(json.loads(CHAT.read_text("utf-8")), budget=90)
    assert len(lines) == 1 + len(result.decisions) + 1
    assert lines[-1] == result.summary()
    assert any(line.split()[:3] == ["dedupe", "deduped", "u1"] for line in lines)
    assert any(line.split()[:3] == ["compose", "pinned", "sys"] for line in lines)


def test_query_and_reserve_are_passed_through(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["pack", str(CHAT), "--budget", "150", "--reserve", "40", "--query", "cookies"]
    assert main([*args, "--explain"]) == 0
    summary = capsys.readouterr().out.splitlines()[-1]
    assert "budget 150, reserve 40" in summary


def test_reads_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    wrapped = json.dumps({"messages": json.loads(CHAT.read_text("utf-8"))})
    monkeypatch.setattr("sys.stdin", io.StringIO(wrapped))
    assert main(["pack", "-", "--budget", "10000"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out) == 9  # the ten messages minus the deduplicated repeat


def test_bad_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.json"
    path.write_text('[{"role": "user",', encoding="utf-8")
    assert main(["pack", str(path), "--budget", "100"]) == 2
    assert "is not valid JSON" in _error_line(capsys)


def test_json_that_is_not_a_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "obj.json"
    path.write_text('{"role": "user", "content": "hi"}', encoding="utf-8")
    assert main(["pack", str(path), "--budget", "100"]) == 2
    assert "must hold a JSON list of messages" in _error_line(capsys)


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", str(tmp_path / "nope.json"), "--budget", "100"]) == 2
    line = _error_line(capsys)
    assert "cannot read" in line and "nope.json" in line


def test_invalid_role(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "wizard.json"
    path.write_text('[{"role": "wizard", "content": "zap"}]', encoding="utf-8")
    assert main(["pack", str(path), "--budget", "100"]) == 2
    line = _error_line(capsys)
    assert "message 0" in line and "'wizard'" in line


def test_budget_too_small(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", str(CHAT), "--budget", "20"]) == 2
    line = _error_line(capsys)
    assert "budget is 20" in line
    assert "'sys'" in line


@pytest.mark.parametrize(
    "argv",
    [
        ["pack", "x.json"],  # --budget is required
        ["pack", "x.json", "--budget", "ten"],
        ["pack", "x.json", "--budget", "0"],
        ["frobnicate"],
        [],
    ],
)
def test_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("[]", encoding="utf-8")
    argv = [str(path) if a == "x.json" else a for a in argv]
    assert main(argv) == 2
    _error_line(capsys)


def test_unknown_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", str(CHAT), "--budget", "100", "--model", "llama-3"]) == 2
    assert "llama-3" in _error_line(capsys)


def test_demo(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ctxpack demo: packing the bundled conversation")
    assert "before: 19 messages" in out
    assert "(budget 600, reserve 0, counter cl100k_base)" in out


def test_demo_with_a_budget(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--budget", "400"]) == 0
    assert "into 400 tokens" in capsys.readouterr().out


ANTHROPIC = Path(__file__).parent / "adapters" / "fixtures" / "anthropic_tools.json"


@pytest.mark.parametrize("budget", ["60", "150", "400", "5000"])
def test_anthropic_payload_in_and_out(budget: str, capsys: pytest.CaptureFixture[str]) -> None:
    payload = json.loads(ANTHROPIC.read_text("utf-8"))
    assert main(["pack", str(ANTHROPIC), "--budget", budget, "--provider", "anthropic"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = ctxpack.pack(
        ctxpack.from_anthropic(payload["messages"], system=payload["system"]), budget=int(budget)
    )
    assert out == expected.to_anthropic()
    ctxpack.adapters.validate_anthropic(out)
    assert out["messages"][0]["role"] == "user"


def test_anthropic_needs_a_payload_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "list.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}]), "utf-8")
    assert main(["pack", str(path), "--budget", "100", "--provider", "anthropic"]) == 2
    assert "must hold an Anthropic payload" in _error_line(capsys)


def test_anthropic_bad_block_names_index_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    bad = {"messages": [{"role": "user", "content": [{"type": "wizard"}]}]}
    path.write_text(json.dumps(bad), "utf-8")
    assert main(["pack", str(path), "--budget", "100", "--provider", "anthropic"]) == 2
    assert "message 0" in _error_line(capsys)
