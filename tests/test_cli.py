"""The command line: ctxpack pack FILE --budget N [--explain], ctxpack demo."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ctxpack
from ctxpack.cli import EXIT_BROKEN_PIPE, main

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
    wrapped = json.dumps({"model": "gpt-4", "messages": json.loads(CHAT.read_text("utf-8"))})
    monkeypatch.setattr("sys.stdin", io.StringIO(wrapped))
    assert main(["pack", "-", "--budget", "10000"]) == 0
    out = json.loads(capsys.readouterr().out)
    # A request object comes back as a request object, its other fields as they were.
    assert out["model"] == "gpt-4"
    assert len(out["messages"]) == 9  # the ten messages minus the deduplicated repeat


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


def test_budget_too_small(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # In the command line's words: its options, and each message kept by its place in the file
    # and the id the file gave it (ctxpack's own ids, m-..., mean nothing to the caller).
    assert main(["pack", str(CHAT), "--budget", "20"]) == 2
    line = _error_line(capsys)
    assert "--budget is 20; raise --budget, or shorten them" in line
    assert "messages[0] ('sys'), messages[8] ('u4'), messages[9] ('u5')" in line
    assert main(["pack", str(CHAT), "--budget", "30", "--reserve", "20"]) == 2
    assert "--reserve 20 included, but --budget is 30; raise --budget, lower --reserve" in (
        _error_line(capsys)
    )
    plain = [{k: v for k, v in m.items() if k != "id"} for m in json.loads(CHAT.read_text())]
    assert main(["pack", _write(tmp_path, "plain.json", plain), "--budget", "20"]) == 2
    line = _error_line(capsys)
    assert "messages[0], messages[8], messages[9])" in line and "m-" not in line


def test_a_budget_too_small_for_many_kept_messages_names_five(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Every one was named: 2,000 system messages made a 30,000-character error line.
    chat = [{"role": "system", "content": f"rule {i}"} for i in range(2000)]
    path = _write(tmp_path, "many.json", [*chat, {"role": "user", "content": "hi"}])
    assert main(["pack", path, "--budget", "50"]) == 2
    line = _error_line(capsys)
    assert "messages[4] and 1996 more) need" in line and len(line) < 400


def test_an_anthropic_budget_too_small_names_the_system_and_the_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = {
        "system": "You are a weather bot. " * 20,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "And in London?"}]}],
    }
    assert main(["pack", _write(tmp_path, "a.json", payload), "--budget", "30"]) == 2
    line = _error_line(capsys)
    assert "(instructions, pinned ones, the last user turn: system, the user 'And in London?')" in (
        line
    )


def test_model_and_counter_together_are_refused_by_pack(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # pack counts with one tokenizer: --model was ignored without a word.
    argv = ["pack", str(CHAT), "--budget", "500", "--model", "gpt-4o", "--counter", "approx"]
    assert main(argv) == 2
    assert "--model and --counter both choose the tokenizer" in _error_line(capsys)


@pytest.mark.parametrize(
    "argv",
    [
        ["pack", "x.json"],  # --budget is required
        ["pack", "x.json", "--budget", "ten"],
        ["pack", "x.json", "--budget", "0"],
        ["frobnicate"],
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


# --- issue 26: what a newcomer meets first ----------------------------------------------------

BIG_TOOL = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "look something up " * 100,
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}


def _write(tmp_path: Path, name: str, data: object) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_pack_counts_the_tools_of_a_request_in_the_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    request = {"messages": [{"role": "user", "content": "hi"}], "tools": [BIG_TOOL]}
    path = _write(tmp_path, "tools.json", request)
    tool_tokens = ctxpack.count_tokens([], tools=[BIG_TOOL]) - ctxpack.count_tokens([])
    assert main(["pack", path, "--budget", "100"]) == 2
    assert "budget is 100" in _error_line(capsys)
    assert main(["pack", path, "--budget", str(tool_tokens + 50)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tools"] == [BIG_TOOL]  # sent on, unchanged
    total = ctxpack.count_tokens(out["messages"], tools=out["tools"])
    assert tool_tokens < total <= tool_tokens + 50


def test_explain_counts_the_tools_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    request = {"messages": [{"role": "user", "content": "hi"}], "tools": [BIG_TOOL]}
    path = _write(tmp_path, "tools.json", request)
    assert main(["pack", path, "--budget", "1000", "--explain"]) == 0
    summary = capsys.readouterr().out.splitlines()[-1]
    expected = ctxpack.pack(request["messages"], budget=1000, tools=[BIG_TOOL])
    assert summary == expected.summary()
    assert expected.tokens > 300


def test_an_anthropic_payload_is_detected_and_its_system_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": "You are a pirate.",
        "messages": [{"role": "user", "content": "hi"}],
    }
    path = _write(tmp_path, "anthropic.json", payload)
    assert main(["pack", path, "--budget", "100"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == payload


@pytest.mark.parametrize(
    "request_",
    [
        # Anthropic tools have an input_schema.
        {
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": "t", "description": "d", "input_schema": {"type": "object"}}],
        },
        # A tool_use block is Anthropic's.
        {
            "messages": [
                {"role": "user", "content": "weather?"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "w", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "3 C"}],
                },
            ]
        },
    ],
)
def test_other_anthropic_shapes_are_detected(
    request_: dict[str, object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, "anthropic.json", request_)
    assert main(["pack", path, "--budget", "1000"]) == 0
    out = json.loads(capsys.readouterr().out)
    ctxpack.adapters.validate_anthropic(out)
    assert out["messages"] == request_["messages"]


def test_provider_openai_overrides_the_detection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = {"system": "x", "messages": [{"role": "user", "content": "hi"}]}
    path = _write(tmp_path, "p.json", payload)
    assert main(["pack", path, "--budget", "100", "--provider", "openai"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["messages"] == [{"role": "user", "content": "hi"}]


def test_a_developer_message_is_kept_like_the_instructions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = [
        {"role": "system", "content": "You are a support agent."},
        {
            "role": "developer",
            "content": "Answer in French, cite the help centre article, never promise refunds. "
            * 3,
        },
        *[
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"about password reset emails {i} " * 12,
            }
            for i in range(8)
        ],
        {"role": "user", "content": "How do I reset my password?"},
    ]
    path = _write(tmp_path, "dev.json", chat)
    argv = ["pack", path, "--budget", "400", "--reserve", "100", "--query", "password reset"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert chat[1] in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"ctxpack {ctxpack.__version__}\n"


def test_a_bare_ctxpack_prints_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("usage: ctxpack")
    for command in ("pack", "context", "code", "demo"):
        assert f"\n    {command} " in captured.err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--counter" in out and "--provider" in out


def test_the_counter_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", str(CHAT), "--budget", "200", "--counter", "approx", "--explain"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith(", approximate)")
    assert main(["pack", str(CHAT), "--budget", "200", "--counter", "o200k", "--explain"]) == 2
    line = _error_line(capsys)
    assert "--counter 'o200k' is not one of approx" in line and "o200k_base" in line


def test_an_unknown_model_gets_command_line_advice(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", str(CHAT), "--budget", "100", "--model", "llama-3"]) == 2
    line = _error_line(capsys)
    assert "--counter cl100k_base" in line
    assert "counter=" not in line  # no Python advice


def test_a_claude_model_warns_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["pack", str(CHAT), "--budget", "300", "--model", "claude-sonnet-4-5", "--explain"]
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert err[0].startswith("ctxpack: warning: 'claude-sonnet-4-5' has no public tokenizer")


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "assistant", "content": "hello"}],
        [
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}],
            }
        ],
    ],
    ids=["only an assistant turn", "a result without its call"],
)
def test_an_anthropic_pack_left_with_no_message_warns(
    messages: list[dict[str, object]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It exited 0 with {"messages": []} and nothing said: the API refuses an empty list.
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"system": "s", "messages": messages}))
    assert main(["pack", str(path), "--budget", "500"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["messages"] == []
    (line,) = captured.err.splitlines()
    assert line.startswith("ctxpack: warning: the packed request holds no message")


def _cli_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}


def test_a_pipe_closed_by_the_reader_ends_quietly(tmp_path: Path) -> None:
    # Far more than a pipe holds, so the command is still writing when the reader goes.
    chat = [{"role": "user", "content": f"line {i} " * 30} for i in range(1000)]
    argv = ["pack", _write(tmp_path, "big.json", chat), "--budget", "1000000"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxpack", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_cli_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10) == b"[\n  {\n    "
    proc.stdout.close()  # as `head` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == EXIT_BROKEN_PIPE
    assert err == ""


@pytest.mark.parametrize("command", ["pack", "code", "demo", "context"])
def test_a_closed_pipe_ends_every_command_quietly(command: str, tmp_path: Path) -> None:
    if command in ("pack", "context"):
        argv = [command, str(CHAT), *(["--budget", "1000"] if command == "pack" else [])]
    elif command == "code":
        root = tmp_path / "repo"
        root.mkdir()
        (root / "greet.py").write_text("def hello():\n    return 'hello'\n", encoding="utf-8")
        argv = ["code", "retrieve", str(root), "hello", "--db", str(tmp_path / "i.db")]
    else:
        argv = ["demo"]
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "ctxpack", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=_cli_env(),
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == EXIT_BROKEN_PIPE
    assert proc.stderr == b""


HOSTILE_FILES: list[tuple[str, bytes, str]] = [
    ("not UTF-8", b"\xff\xfe[]", "is not UTF-8 text"),
    ("nested 100,000 deep", b"[" * 100_000 + b"]" * 100_000, "nested more than"),
    (
        "metadata nested 5,000 deep",
        b'[{"role": "user", "content": "hi", "metadata": '
        + b'{"a": ' * 5000
        + b"1"
        + b"}" * 5001
        + b"]",
        "nested more than",
    ),
    ("a tool that is a number", b'{"messages": [], "tools": [1]}', "tools[0] must be an object"),
    ("tools that are a string", b'{"messages": [], "tools": "x"}', "'tools' must be a list"),
    ("a lone surrogate", b'[{"role": "user", "content": "\\ud800"}]', "lone surrogate"),
    ("empty", b"", "is not valid JSON"),
    ("NaN", b'[{"role": "user", "content": "hi", "priority": NaN}]', "NaN is not a JSON value"),
    ("Infinity", b'[{"role": "user", "content": "hi", "priority": -Infinity}]', "-Infinity"),
    # Valid JSON that Python reads as inf: written back, it was the invalid literal Infinity.
    ("1e999", b'[{"role": "user", "content": "hi", "n": -1e999}]', "past the range"),
    ("1e999 in the payload", b'{"messages": [], "temperature": 1e999}', "past the range"),
    ("a number", b"42", "must hold a JSON list of messages"),
    ("null", b"null", "must hold a JSON list of messages"),
    ("a message that is a string", b'["hi"]', "message 0"),
    ("messages that are an object", b'{"messages": {"role": "user"}}', "must hold"),
    ("a message without role", b'[{"content": "hi"}]', "message 0"),
    ("content that is a number", b'[{"role": "user", "content": 5}]', "message 0"),
    ("anthropic messages not a list", b'{"system": "s", "messages": 3}', "Anthropic payload"),
    ("anthropic system a number", b'{"system": 3, "messages": []}', "system"),
]


@pytest.mark.parametrize(
    ("content", "expected"),
    [pytest.param(c, e, id=name) for name, c, e in HOSTILE_FILES],
)
@pytest.mark.parametrize("command", ["pack", "context"])
def test_a_hostile_file_exits_2_with_one_line(
    command: str, content: bytes, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "hostile.json"
    path.write_bytes(content)
    argv = [command, str(path), *(["--budget", "100"] if command == "pack" else [])]
    assert main(argv) == 2
    assert expected in _error_line(capsys)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["pack", "CHAT", "--budget", "-5"], "argument --budget: expected a positive integer"),
        (["pack", "CHAT", "--budget", "1e9"], "argument --budget: expected a positive integer"),
        (["pack", "CHAT", "--budget", "100", "--reserve", "-1"], "argument --reserve"),
        (["pack", "CHAT", "--budget", "100", "--reserve", "100"], "--reserve (100) must be"),
        (["pack", "CHAT", "--budget", "100", "--provider", "google"], "argument --provider"),
        (["pack", "CHAT", "--budget", "100", "--model", ""], "no public tokenizer"),
        (["pack", "CHAT", "--budget", "100", "--frobnicate"], "unrecognized arguments"),
        (["pack", "CHAT", "--budget", "100", "--counter", "approx2"], "--counter 'approx2'"),
        (["pack", "a_folder", "--budget", "100"], "cannot read"),
        (["demo", "--budget", "0"], "argument --budget"),
        (["context", "CHAT", "--window", "0"], "argument --window"),
        (
            ["context", "CHAT", "--window", "1000", "--compaction-window", "5000"],
            "--compaction-window (5000) must not exceed --window (1000)",
        ),
        (["context", "CHAT", "--memory", "a_folder"], "cannot read"),
        (["context", "CHAT", "--model", "llama-3"], "--counter cl100k_base"),
        (["code", "retrieve", "a_folder", "task", "--budget", "0"], "argument --budget"),
        (["code", "retrieve", "a_folder", "task", "--max-cycles", "0"], "--max-cycles"),
        (["code", "search", "a_folder", "task", "-k", "0"], "argument -k"),
        (["code", "search", "nowhere", "task"], "nowhere"),
        (["code"], "required"),
        (["code", "retrieve", "a_folder"], "required"),
        (["code", "retrieve", "a_folder", "  "], "the task is empty"),
        (["code", "search", "a_folder", ""], "the task is empty"),
        (["code", "search", "a_folder", "task", "--db", "a_folder"], "is a directory"),
        (["code", "search", "a_folder", "task", "--db", "not_a_db"], "is not an SQLite database"),
    ],
)
def test_a_bad_argument_exits_2_with_one_line(
    argv: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    not_a_db = tmp_path / "garbage.db"
    not_a_db.write_text("not SQLite", encoding="utf-8")
    where = {
        "CHAT": str(CHAT),
        "a_folder": str(folder),
        "nowhere": str(tmp_path / "nowhere"),
        "not_a_db": str(not_a_db),
    }
    argv = [where.get(a, a) for a in argv]
    if argv[0] == "code" and len(argv) > 3 and "--db" not in argv:
        argv.extend(["--db", str(tmp_path / "i.db")])
    assert main(argv) == 2
    assert expected in _error_line(capsys)


def test_code_retrieve_with_a_budget_too_small_for_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "greet.py").write_text("def hello():\n    return 'hello'\n", encoding="utf-8")
    base = ["code", "retrieve", str(root), "hello", "--db", str(tmp_path / "i.db")]
    assert main([*base, "--budget", "1"]) == 2
    assert "--budget 1 holds nothing" in _error_line(capsys)
    assert main([*base, "--budget", "500"]) == 0
    assert "def hello" in capsys.readouterr().out


def _chat_request(tmp_path: Path, model: str) -> str:
    """The chat fixture as a request object naming ``model``."""
    request = {"model": model, "messages": json.loads(CHAT.read_text("utf-8"))}
    return _write(tmp_path, "request.json", request)


def test_the_request_model_counts_unless_model_or_counter_say(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _chat_request(tmp_path, "claude-sonnet-4-5")
    assert main(["pack", path, "--budget", "400", "--explain", "--provider", "openai"]) == 0
    captured = capsys.readouterr()
    assert "counter anthropic-approx" in captured.out.splitlines()[-1]
    assert captured.err.startswith("ctxpack: warning: 'claude-sonnet-4-5'")
    argv = ["pack", path, "--budget", "400", "--explain", "--provider", "openai"]
    assert main([*argv, "--model", "gpt-4"]) == 0
    assert "counter cl100k_base)" in capsys.readouterr().out
    assert main([*argv, "--counter", "approx"]) == 0
    assert "counter approx, approximate)" in capsys.readouterr().out


def test_a_file_model_without_a_tokenizer_warns_and_counts_with_the_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _chat_request(tmp_path, "gemini-3-pro")
    assert main(["pack", path, "--budget", "400", "--explain"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-1].endswith("counter cl100k_base)")
    assert captured.err == (
        "ctxpack: warning: no public tokenizer is known for the file's model 'gemini-3-pro'; "
        "counting with cl100k_base (--model or --counter names another)\n"
    )


def test_stdin_is_named_stdin_in_errors(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"\xff[]")))
    assert main(["pack", "-", "--budget", "100"]) == 2
    assert _error_line(capsys) == (
        "ctxpack: error: stdin is not UTF-8 text (byte 0xff at offset 0); save it as UTF-8"
    )
