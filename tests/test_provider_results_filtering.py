"""The results of the tools a provider ran (an MCP server's tool, code execution, a Responses
API ``mcp_call`` or code interpreter), which come back inside the assistant's turn, are filtered
at arrival as a client's tool output is: each text of the result shortened by the same filters,
the original stored and retrievable, one record and one decision per result with the tokens it
saved, and the turn's shape, ids and pairing, and every other part of it, as they came."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxpack import Session, get_counter
from ctxpack.adapters import from_openai, validate_anthropic
from ctxpack.store import open_store

COUNTER = get_counter(counter="cl100k_base")
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tool_outputs"
PYTEST = (FIXTURES / "pytest_failures.txt").read_text()
# A listing no filter keeps whole: a thousand lines of rows.
ROWS = "\n".join(f"row {j}: status=ok value={j * 7} owner=team-{j % 13}" for j in range(1_000))


def _anthropic_turn() -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Running the tests and listing the open issues."},
            {
                "type": "server_tool_use",
                "id": "srvtoolu_b",
                "name": "bash_code_execution",
                "input": {"command": "python -m pytest"},
            },
            {
                "type": "bash_code_execution_tool_result",
                "tool_use_id": "srvtoolu_b",
                "content": {
                    "type": "bash_code_execution_result",
                    "stdout": PYTEST,
                    "stderr": "",
                    "return_code": 1,
                    "content": [],
                },
            },
            {
                "type": "mcp_tool_use",
                "id": "mcptoolu_1",
                "name": "list_issues",
                "server_name": "tracker",
                "input": {"state": "open"},
            },
            {
                "type": "mcp_tool_result",
                "tool_use_id": "mcptoolu_1",
                "is_error": False,
                "content": [{"type": "text", "text": ROWS}],
            },
            {"type": "text", "text": "compute_vat rounds to 0.001; 1,000 issues are open."},
        ],
    }


def _history() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Why does the VAT test fail?"},
        _anthropic_turn(),
        {"role": "user", "content": "Fix it."},
    ]


def _shape(block: Any) -> tuple[Any, ...]:
    return (block["type"], block.get("id"), block.get("tool_use_id"))


def test_provider_tool_results_are_filtered_at_arrival_and_their_originals_kept() -> None:
    session = Session(model="claude-sonnet-4-5", counter=COUNTER)
    session.extend(_history())
    result = session.render()
    sent = result.to_anthropic()["messages"]
    validate_anthropic(sent)  # each result still follows its call
    turn = sent[1]["content"]
    original = _anthropic_turn()["content"]
    assert [_shape(b) for b in turn] == [_shape(b) for b in original]
    # Nothing but the results' texts changed: the words, the calls, the return code.
    for now, then in zip(turn, original, strict=True):
        if now["type"] not in ("bash_code_execution_tool_result", "mcp_tool_result"):
            assert now == then
    ran = turn[2]["content"]
    assert {k: v for k, v in ran.items() if k != "stdout"} == {
        k: v for k, v in original[2]["content"].items() if k != "stdout"
    }
    assert len(ran["stdout"]) < len(PYTEST) and "test_vat_rounding" in ran["stdout"]
    listed = turn[4]["content"]
    assert len(listed) == 1 and listed[0]["type"] == "text"
    assert len(listed[0]["text"]) < len(ROWS)
    # One record per result, named by its paired use, its original stored.
    records = {r.result_id: r for r in session.records}
    assert records.keys() == {"srvtoolu_b", "mcptoolu_1"}
    assert (records["srvtoolu_b"].tool, records["srvtoolu_b"].command) == (
        "bash_code_execution",
        "python -m pytest",
    )
    assert records["srvtoolu_b"].kind == "test_run"
    assert records["mcptoolu_1"].tool == "list_issues"
    turn_id = session.transcript()[2].id
    for record, text in ((records["srvtoolu_b"], PYTEST), (records["mcptoolu_1"], ROWS)):
        assert record.shortened and record.message_id == turn_id
        assert record.tokens_after < record.tokens_before
        assert record.artifact is not None and session.store.get(record.artifact) == text
        assert record.artifact in json.dumps(turn)  # the marker names it
    # A decision per result with the tokens it saved; the turn's original is the whole turn.
    decisions = [d for d in result.decisions if d.stage == "filter"]
    assert [d.message_id for d in decisions] == [turn_id, turn_id]
    assert all((d.tokens_after or 0) < (d.tokens_before or 0) for d in decisions)
    kept = result.original(turn_id)
    assert kept is not None and kept.content == original
    assert session.transcript()[2].content == original  # the transcript keeps it whole


def test_responses_server_items_are_filtered_in_their_items() -> None:
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "Chart the open rows."},
        {
            "type": "mcp_call",
            "id": "mcp_1",
            "server_label": "docs",
            "name": "lookup",
            "arguments": json.dumps({"item": 1}),
            "output": ROWS,
        },
        {
            "type": "code_interpreter_call",
            "id": "ci_1",
            "status": "completed",
            "code": "print(rows())",
            "container_id": "cntr_1",
            "outputs": [
                {"type": "logs", "logs": ROWS.replace("row", "line")},
                {"type": "image", "url": "https://files.example/chart.png"},
            ],
        },
    ]
    session = Session(model="gpt-5")
    session.extend(from_openai(items))
    sent = session.render().to_openai(api="responses")
    by_id = {item["id"]: item for item in sent if "id" in item}
    call, ran = by_id["mcp_1"], by_id["ci_1"]
    assert {k: v for k, v in call.items() if k != "output"} == {
        k: v for k, v in items[1].items() if k != "output"
    }
    assert len(call["output"]) < len(ROWS)
    assert len(ran["outputs"][0]["logs"]) < len(ROWS)
    assert ran["outputs"][1] == items[2]["outputs"][1]
    assert ran["code"] == "print(rows())"
    records = {r.result_id: r for r in session.records}
    assert (records["mcp_1"].tool, records["ci_1"].tool) == ("lookup", "code_interpreter")
    assert all(r.shortened for r in records.values())


def test_a_short_provider_result_is_recorded_as_kept_whole() -> None:
    turn = _anthropic_turn()
    turn["content"][4]["content"] = [{"type": "text", "text": "3 issues open."}]
    session = Session(model="claude-sonnet-4-5", counter=COUNTER)
    session.extend([{"role": "user", "content": "Go."}, turn])
    record = next(r for r in session.records if r.result_id == "mcptoolu_1")
    assert not record.shortened and record.kind == "short"
    assert session.compact()[1].content[4] == turn["content"][4]  # type: ignore[index]


def test_with_filters_off_provider_results_are_sent_whole() -> None:
    session = Session(model="claude-sonnet-4-5", counter=COUNTER, filters=False)
    session.extend(_history())
    assert session.compact()[2].content == _anthropic_turn()["content"]
    assert session.records == []


def test_a_stored_session_reads_back_each_provider_results_record(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    store = open_store(url)
    try:
        a = Session.open("s", store=store, model="claude-sonnet-4-5", counter=COUNTER)
        a.extend(_history())
        b = Session.open("s", store=open_store(url), model="claude-sonnet-4-5", counter=COUNTER)
        assert b.records == a.records
        assert {r.result_id for r in b.records} == {"srvtoolu_b", "mcptoolu_1"}
        assert b.render().to_anthropic() == a.render().to_anthropic()
    finally:
        store.close()


@pytest.mark.parametrize("when", ["arrival", "answered"])
def test_provider_results_are_filtered_whatever_filter_when(when: str) -> None:
    session = Session(model="claude-sonnet-4-5", counter=COUNTER, filter_when=when)  # type: ignore[arg-type]
    session.extend(_history()[:3])
    assert all(r.shortened for r in session.records) and len(session.records) == 2


def test_each_long_text_of_one_result_is_shortened_and_stored() -> None:
    turn = _anthropic_turn()
    ran = turn["content"][2]["content"]
    ran["stderr"] = ROWS.replace("row", "warning")
    session = Session(model="claude-sonnet-4-5", counter=COUNTER)
    session.extend([{"role": "user", "content": "Go."}, turn])
    record = next(r for r in session.records if r.result_id == "srvtoolu_b")
    content: Any = session.compact()[1].content
    sent = content[2]["content"]
    assert len(sent["stdout"]) < len(PYTEST) and len(sent["stderr"]) < len(ran["stderr"])
    named = {
        k: sent[k].split("artifact ")[1].split(";")[0].rstrip("]")
        for k in sent
        if k in ("stdout", "stderr")
    }
    assert session.store.get(named["stdout"]) == PYTEST
    assert session.store.get(named["stderr"]) == ran["stderr"]
    # The record names the longest text's original, and the other's in its reason.
    assert record.artifact == named["stderr"] and named["stdout"] in record.reason


def test_a_result_whose_use_is_not_in_the_turn_is_filtered_by_its_content() -> None:
    turn = _anthropic_turn()
    del turn["content"][3]  # the mcp_tool_use
    session = Session(model="claude-sonnet-4-5", counter=COUNTER)
    session.extend([{"role": "user", "content": "Go."}, turn])
    record = next(r for r in session.records if r.result_id == "mcptoolu_1")
    assert record.shortened and record.tool is None


# The fields of a filter record as the releases reading store format 2 know them.
_FORMAT_2_RECORD = {
    *("message_id", "kind", "shortened", "artifact", "tokens_before", "tokens_after"),
    *("reason", "tool", "command"),
}


def test_replicas_on_the_release_before_read_sessions_without_them_and_refuse_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ctxpack import persistence
    from ctxpack.errors import StoreError
    from ctxpack.store import MemoryStore

    store = MemoryStore()
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    plain = Session.open("plain", store=store, model="claude-sonnet-4-5", counter=COUNTER)
    plain.extend(
        [
            *_history()[:2],
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": PYTEST},
        ]
    )
    mcp = Session.open("mcp", store=store, model="claude-sonnet-4-5", counter=COUNTER)
    mcp.extend(_history())

    def stored(session_id: str) -> tuple[int, list[dict[str, Any]]]:
        loaded = store.load(session_id)
        records = [r for e in loaded.entries for r in json.loads(e)["records"]]
        return json.loads(loaded.state or "")["format"], records

    # A session of client tool outputs is written as before: that release reads it.
    form, records = stored("plain")
    assert form == 2 and records and all(r.keys() <= _FORMAT_2_RECORD for r in records)
    # One whose records name a provider tool's result is marked so that release refuses it
    # with the error that says to upgrade, not one that calls it damaged.
    assert stored("mcp")[0] == 3
    # It stays so after appends holding no such record, by this replica or another one.
    mcp.append({"role": "assistant", "content": "Fixed."})
    assert stored("mcp")[0] == 3
    other = Session.open("mcp", store=store, model="claude-sonnet-4-5", counter=COUNTER)
    other.append({"role": "user", "content": "Thanks."})
    assert stored("mcp")[0] == 3
    monkeypatch.setattr(persistence, "FORMAT", 2)
    with pytest.raises(StoreError, match=r"newer ctxpack \(format 3"):
        Session.open("mcp", store=store, model="claude-sonnet-4-5", counter=COUNTER)
    reread = Session.open("plain", store=store, model="claude-sonnet-4-5", counter=COUNTER)
    assert reread.records == plain.records
