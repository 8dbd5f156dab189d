"""The command line when the world fails it: Ctrl-C, an output that cannot be written, no stdin."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxpack.cli import main

CHAT = Path(__file__).parent / "fixtures" / "chat.json"


class _Interrupted(io.RawIOBase):
    """A stdin whose read is interrupted by Ctrl-C, as a terminal's is."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: object) -> int:
        raise KeyboardInterrupt


def test_ctrl_c_exits_130_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BufferedReader(_Interrupted())))
    try:
        status = main(["pack", "-", "--budget", "100"])
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C escaped main(), which Python prints as a traceback")
    assert status == 130  # 128 + SIGINT, as a shell reports a command Ctrl-C ended
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Traceback" not in captured.err


def test_a_closed_stdin_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Python sets sys.stdin to None when the process starts with file descriptor 0 closed.
    monkeypatch.setattr("sys.stdin", None)
    assert main(["pack", "-", "--budget", "100"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("ctxpack: error: there is no stdin to read")
    assert len(captured.err.splitlines()) == 1


def test_a_demo_budget_too_small_is_said_in_the_command_line_words(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--budget", "5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ctxpack: error: --budget 5 is too small for the demo")
    assert "raise --budget" in err
    assert "reserve" not in err  # the demo has no --reserve to lower


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux's /dev/full")
@pytest.mark.parametrize(
    "argv",
    [
        ["pack", str(CHAT), "--budget", "1000"],
        ["context", str(CHAT)],
        ["context", str(CHAT), "--json"],
        ["demo"],
        ["--help"],
    ],
    ids=["pack", "context", "context-json", "demo", "help"],
)
def test_an_output_that_cannot_be_written_is_one_line_not_a_traceback(argv: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    with open("/dev/full", "w", encoding="utf-8") as full:  # every write fails: disk full
        proc = subprocess.run(
            [sys.executable, "-m", "ctxpack", *argv],
            stdout=full,
            stderr=subprocess.PIPE,
            env=env,
            timeout=120,
            check=False,
        )
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    assert err == "ctxpack: error: cannot write the output: No space left on device\n"


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["pack", str(CHAT), "--budget", "1" + "0" * 22], "argument --budget"),
        (["pack", str(CHAT), "--budget", "100", "--reserve", "9" * 20], "argument --reserve"),
        (["context", str(CHAT), "--window", "9" * 20], "argument --window"),
        (["code", "search", ".", "task", "-k", "9" * 20], "argument -k"),
    ],
)
def test_a_number_past_any_budget_names_its_option(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ctxpack: error: {named}: expected ") and "up to 2**53" in err, err


def test_a_json_lines_file_is_told_what_to_send_instead(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text('{"role": "user", "content": "a"}\n{"role": "user", "content": "b"}\n')
    assert main(["pack", str(path), "--budget", "100"]) == 2
    err = capsys.readouterr().err
    assert "is not valid JSON: Extra data at line 2" in err
    assert "JSON Lines" in err and len(err.splitlines()) == 1
