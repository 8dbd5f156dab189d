"""The agent-session benchmark's bookkeeping, on a real session's shape (trimmed, shipped in
tests/fixtures): the replay, the strategy interface, evidence survival and the report.

The benchmark's figures are not tested (benchmarks measure); the rules that make them are.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ctxpack import get_counter
from ctxpack.cost import price

from .helpers import load_script

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "agent_sessions.py"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "agent_session.json"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script(SCRIPT, "agent_sessions_benchmark")


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copy(FIXTURE, folder / "session.json")
    return folder


def _billing(bench: ModuleType) -> list[Any]:
    return [bench.Billing.parse("claude-sonnet-4-5@request")]


def _session(bench: ModuleType) -> Any:
    return bench.load_sessions(FIXTURE)[0]


def _steps(session: Any) -> int:
    return sum(1 for i, m in enumerate(session.messages) if i and m["role"] == "assistant")


def test_evidence_is_what_the_agent_uses_that_a_tool_result_showed_first(
    bench: ModuleType,
) -> None:
    messages = [
        {"role": "system", "content": "Use bash."},
        {"role": "user", "content": "Fix parse_header in http/client_base.py"},
        {
            "role": "assistant",
            "content": "Look.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "grep -n x"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": "http/client_base.py:1234: def parse_header(raw_value): see lib/utils.py",
        },
        {
            "role": "assistant",
            "content": "parse_header is at line 1234 of http/client_base.py; raw_value and "
            "lib/utils.py matter, not_seen_before too.",
        },
    ]
    evidence = bench.session_evidence(messages)
    terms = {e.term for e in evidence[4]}
    # parse_header and the path came from the task (a user message) first: not evidence.
    assert terms == {"num:1234", "id:raw_value", "path:lib/utils.py"}
    assert all(e.source == 3 for e in evidence[4])
    assert evidence[2] == []


def test_raw_sends_everything_and_keeps_all_evidence(bench: ModuleType) -> None:
    session = _session(bench)
    counter = get_counter(counter="cl100k_base")
    run = bench.replay(session, "raw", bench.STRATEGIES["raw"], counter, _billing(bench))
    assert len(run.requests) == _steps(session)
    assert run.evidence_total > 0
    assert run.evidence_present == run.evidence_recoverable == run.evidence_total
    assert run.lost == []
    bill = run.bills["claude-sonnet-4-5@request"]
    # An append-only history reads most of itself back from the cache.
    assert bill.cache_read_tokens / bill.input_tokens > 0.7
    # The output billed is the agent's actual messages.
    assert bill.output_tokens > 0


def test_clearing_loses_evidence_and_the_report_names_it(bench: ModuleType) -> None:
    session = _session(bench)
    counter = get_counter(counter="cl100k_base")
    factory = bench._with(bench.ClearToolResults, trigger=1_000, keep=1)
    run = bench.replay(session, "clear", factory, counter, _billing(bench))
    assert 0 < run.evidence_present < run.evidence_total
    assert len(run.lost) == run.evidence_total - run.evidence_present
    sent = {i: run.requests[k] for k, i in enumerate(run.main)}
    steps = [i for i, m in enumerate(session.messages) if i and m["role"] == "assistant"]
    for item in run.lost:
        request = sent[steps.index(item["step"])]
        text = "\n".join(bench.message_text(m) for m in request.messages)
        assert item["term"] not in {t for t in bench.evidence_terms(text)}
        assert session.messages[item["first_seen"]]["role"] == "tool"


class Handles:
    """A stateful strategy: every tool result becomes a handle, its text recoverable."""

    def __init__(self, session: Any) -> None:
        self.store: dict[str, str] = {}
        self.calls = 0

    def __call__(self, history: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls += 1
        out = []
        for m in history:
            if m["role"] == "tool":
                handle = f"handle-{len(self.store)}"
                self.store.setdefault(m["content"], handle)
                m = {**m, "content": f"[stored as {self.store[m['content']]}]"}
            out.append(m)
        return {"messages": out}

    def recoverable(self, request: Sequence[Any]) -> Iterable[str]:
        text = "\n".join(str(m.get("content")) for m in request)
        return [original for original, handle in self.store.items() if handle in text]


def test_a_strategy_gets_a_fresh_instance_per_session_and_handles_count_as_recoverable(
    bench: ModuleType,
) -> None:
    session = _session(bench)
    made: list[Handles] = []

    def factory(info: Any) -> Handles:
        assert info.id == session.id
        made.append(Handles(info))
        return made[-1]

    counter = get_counter(counter="cl100k_base")
    run = bench.replay(session, "handles", factory, counter, _billing(bench))
    assert len(made) == 1 and made[0].calls == _steps(session)
    assert run.evidence_present < run.evidence_total
    assert run.evidence_recoverable == run.evidence_total
    assert all(item["recoverable"] for item in run.lost)


def test_side_requests_are_billed_before_the_main_one(bench: ModuleType) -> None:
    session = _session(bench)
    counter = get_counter(counter="cl100k_base")
    factory = bench._with(bench.ThresholdCompaction, trigger=3_000, summary_tokens=500)
    run = bench.replay(session, "compact", factory, counter, _billing(bench))
    sides = len(run.requests) - len(run.main)
    assert sides >= 1
    first_side = next(i for i in range(len(run.requests)) if i not in run.main)
    summary_call = run.requests[first_side]
    assert summary_call.messages[-1]["content"] == bench.ThresholdCompaction.INSTRUCTION
    assert summary_call.output_tokens > 0
    after = run.requests[first_side + 1]
    assert after.messages[1]["content"].startswith("<summary>")
    # A prompt over the trigger is compacted before it is sent: none goes out over it.
    bill = run.bills["claude-sonnet-4-5@request"]
    assert max(bill.requests[i].input_tokens for i in run.main) <= 3_000


def test_trim_messages_keeps_a_window_under_budget(bench: ModuleType) -> None:
    pytest.importorskip("langchain_core")
    session = _session(bench)
    counter = get_counter(counter="cl100k_base")
    factory = bench._with(bench.TrimMessages, budget=1_500)
    run = bench.replay(session, "trim", factory, counter, _billing(bench))
    bill = run.bills["claude-sonnet-4-5@request"]
    assert max(r.input_tokens for r in bill.requests) <= 1_500
    for request in run.requests:
        assert request.messages[0]["role"] == "system"
        assert request.messages[1]["role"] != "tool"


def test_the_command_line_writes_the_contracted_json(
    bench: ModuleType, data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    code = bench.main(
        [
            "--data",
            str(data),
            "--out",
            str(out),
            "--strategies",
            "raw,clear-30k-keep3",
            "--prices",
            "claude-sonnet-4-5@request,gpt-5@message",
        ]
    )
    assert code == 0
    payload = json.loads((out / "agent_sessions.json").read_text("utf-8"))
    for name in ("raw", "clear-30k-keep3"):
        row = payload["results"][name]
        for key in ("cost_usd", "input_tokens", "cache_read_share", "evidence_survival"):
            assert key in row
    raw = payload["results"]["raw"]
    assert raw["evidence_survival"] == 1.0
    assert set(raw["cost_usd_by_billing"]) == {"claude-sonnet-4-5@request", "gpt-5@message"}
    assert raw["cost_usd"] == raw["cost_usd_by_billing"]["claude-sonnet-4-5@request"]
    assert "| raw |" in (out / "agent_sessions.md").read_text("utf-8")


def test_the_command_line_refuses_unknown_strategies_and_prices(
    bench: ModuleType, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert bench.main(["--data", str(data), "--out", str(tmp_path), "--strategies", "nope"]) == 2
    assert "registered: raw" in capsys.readouterr().err
    assert bench.main(["--data", str(data), "--out", str(tmp_path), "--prices", "gpt-0"]) == 2
    assert "known models" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert bench.main(["--data", str(empty), "--out", str(tmp_path)]) == 2


def test_the_billings_use_the_shipped_prices(bench: ModuleType) -> None:
    billing = bench.Billing.parse("gpt-5@message")
    assert billing.price == price("gpt-5") and billing.cache_points == "message"
    with pytest.raises(ValueError, match="cache points"):
        bench.Billing.parse("gpt-5@token")


def test_trim_messages_starting_on_a_human_turn_shrinks_to_the_system_prompt(
    bench: ModuleType,
) -> None:
    # The only user message is the task: once it is trimmed away, nothing may follow the system.
    pytest.importorskip("langchain_core")
    session = _session(bench)
    counter = get_counter(counter="cl100k_base")
    factory = bench._with(bench.TrimMessages, budget=1_500, start_on="human")
    run = bench.replay(session, "trim-human", factory, counter, _billing(bench))
    assert [m["role"] for m in run.requests[-1].messages] == ["system"]
    assert run.evidence_present < run.evidence_total
