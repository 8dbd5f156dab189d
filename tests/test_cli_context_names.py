"""ctxpack context on names a model or a user wrote: a command with brackets, a control
sequence, bidirectional marks. The table shows each one as text, and never crashes or lets a
terminal act on it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxpack import context_usage, count_tokens
from ctxpack.cli import main

pytest.importorskip("rich")


def _request(command: str, *, tool: str = "bash", call_id: str = "c1") -> dict[str, Any]:
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": tool, "arguments": json.dumps({"command": command})},
    }
    definition = {"type": "function", "function": {"name": tool, "description": "Run it."}}
    return {
        "messages": [
            {"role": "user", "content": "Find the bracket."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": "x.py:3: [/]"},
        ],
        "tools": [definition],
    }


def _show(tmp_path: Path, request: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> str:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request), "utf-8")
    capsys.readouterr()
    assert main(["context", str(path), "--model", "gpt-4o"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", ["grep -n '[/]' x.py", "echo [red]alert[/red]", "ls [bold]"])
def test_a_command_with_brackets_is_shown_as_written(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    # "[/]" used to raise rich's MarkupError out of the command; "[red]" vanished.
    out = _show(tmp_path, _request(command), capsys)
    assert f"bash {command}" in out


def test_a_control_sequence_in_a_command_is_shown_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    # A window title and a screen clear: used to reach the terminal as they are.
    command = "printf '\x1b]0;pwned\x07\x1b[2J' \u202e"
    out = _show(tmp_path, _request(command), capsys)
    assert "\x1b" not in out and "\u202e" not in out
    assert "printf '\\x1b]0;pwned\\x07\\x1b[2J' \\u202e" in out
    usage = context_usage(_request(command)["messages"], model="gpt-4o")
    labels = [i.name for b in usage.buckets for i in b.items]
    assert all(label.isprintable() for label in labels)


def test_a_suggestion_naming_a_command_is_shown_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    request = _request("cat [/]")
    request["messages"][2]["content"] = "line of output\n" * 1_500  # a suggestion names it
    out = _show(tmp_path, request, capsys)
    assert "suggestion: Tool result 2: bash cat [/] takes" in out


# Tool names are checked where they enter (letters, digits, _ and -); call ids are not.
_TOOLS = st.from_regex(r"[a-zA-Z0-9_-]{1,64}", fullmatch=True)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    command=st.text(max_size=300),
    tool=_TOOLS,
    call_id=st.text(min_size=1, max_size=60),
    window=st.integers(1, 60),
)
def test_any_names_render_and_add_up(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    tool: str,
    call_id: str,
    window: int,
) -> None:
    request = _request(command, tool=tool, call_id=call_id)
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request), "utf-8")
    capsys.readouterr()
    assert main(["context", str(path), "--model", "gpt-4o", "--window", str(window)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    usage = context_usage(request["messages"], model="gpt-4o", tools=request["tools"])
    assert usage.total == count_tokens(request["messages"], model="gpt-4o", tools=request["tools"])
