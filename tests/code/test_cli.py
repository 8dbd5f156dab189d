"""ctxpack code search|retrieve ROOT "task"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxpack.cli import main
from ctxpack.code import CodeIndex, iterative_retrieve


def test_search_prints_units(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["code", "search", str(repo), "decode the JWT", "-k", "2", "--db", ":memory:"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("web/src/jwt.ts:8-12  function decodeJwt  ")


def test_retrieve_prints_the_context(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = "Add rate limiting to the API endpoints"
    assert main(["code", "retrieve", str(repo), task, "--db", ":memory:"]) == 0
    expected = iterative_retrieve(task, CodeIndex(repo, db=":memory:"))
    assert capsys.readouterr().out == expected.context + "\n"


def test_retrieve_json_and_report(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = "Add rate limiting to the API endpoints"
    args = ["code", "retrieve", str(repo), task, "--db", ":memory:", "--max-cycles", "2"]
    assert main([*args, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["files"][0] == "api/middleware.py"
    assert len(payload["cycles"]) <= 2
    assert payload["tokens"] > 0
    assert main([*args, "--report"]) == 0
    assert capsys.readouterr().out.startswith("cycle 1:")


def test_bad_root_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["code", "search", str(tmp_path / "nope"), "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ctxpack: error: ") and "not a directory" in err
    assert main(["code", "retrieve", str(tmp_path), "x", "--budget", "0"]) == 2
    assert "argument --budget: expected a positive integer" in capsys.readouterr().err


def test_search_prints_one_line_per_unit_whatever_the_file_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A line end in a file's name printed as it is made two rows of one unit (the second a
    # forged one), for a script reading the rows; names are shown escaped, as in the context.
    (tmp_path / "a\nforged.py:1-1  function fake  9.9\nb.py").write_text("def token():\n    pass\n")
    assert main(["code", "search", str(tmp_path), "token", "--db", ":memory:"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [lines[0]] and lines[0].startswith("a\\nforged.py:1-1  function fake")
