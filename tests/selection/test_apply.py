"""apply_selection: the context for the large model, a decision per item, nothing silently lost."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack.adapters import validate_openai
from ctxpack.errors import ConfigError, SelectionError
from ctxpack.selection import (
    CONTEXT_ID,
    FileRequest,
    ItemReason,
    Selection,
    Workspace,
    apply_selection,
    check_selection,
)
from ctxpack.store import SQLiteArtifactStore

from .helpers import make_repo, session_messages


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(session_messages(), root=make_repo(tmp_path / "repo"))


def test_every_message_gets_one_decision_with_the_selectors_reason(ws: Workspace) -> None:
    sel = Selection(
        include_messages=[7],
        include_tool_results=["call_2"],
        omit_reason="Irrelevant build logs",
        reasons=[ItemReason(item="call_2", reason="the failing test's output")],
        selector="test",
    )
    result = apply_selection(sel, ws)
    ids = [m.id for m in ws.messages]
    about_messages = [d for d in result.decisions if d.message_id in ids]
    assert sorted(d.message_id for d in about_messages) == sorted(ids)
    by_id = {d.message_id: d for d in about_messages}
    assert by_id[ids[5]].action == "selected"
    assert by_id[ids[5]].reason == "selected by test: the failing test's output"
    assert by_id[ids[4]].reason == by_id[ids[5]].reason  # the call that made it
    assert by_id[ids[3]].action == "dropped"
    assert by_id[ids[3]].reason == "omitted by test: Irrelevant build logs"
    assert by_id[ids[3]].tokens_after == 0 and by_id[ids[3]].tokens_before
    assert result.dropped_ids == [ids[2], ids[3]]


def test_user_instructions_are_always_kept_and_recorded_as_such(ws: Workspace) -> None:
    # The selector left out both user messages (the task and a constraint).
    result = apply_selection(Selection(include_messages=[7], selector="test"), ws)
    kept = [m.id for m in result.messages]
    for i in (1, 6):
        msg = ws.messages[i]
        assert msg.id in kept
        (decision,) = result.decisions_for(msg.id)
        assert decision.action == "kept"
        assert decision.reason == "user instruction: always kept, though test left it out"
        # Kept verbatim: never compressed or rephrased.
        assert next(m for m in result.messages if m.id == msg.id) == msg
    assert ws.messages[0].id in kept  # the system prompt


def test_the_order_is_stable(ws: Workspace) -> None:
    sel = Selection(
        include_messages=[7, 1],
        include_files=[FileRequest(path="src/auth.ts", lines="3-9")],
        durable_notes=["The user rejected cookie-based sessions."],
    )
    result = apply_selection(sel, ws)
    ids = [m.id for m in ws.messages]
    assert [m.id for m in result.messages] == [ids[0], ids[1], ids[6], ids[7], CONTEXT_ID]
    again = apply_selection(sel, ws)
    assert again.messages == result.messages


def test_file_passages_are_labelled_with_path_and_line_numbers(ws: Workspace) -> None:
    sel = Selection(
        include_files=[
            FileRequest(path="src/auth.ts", lines="3-9"),
            FileRequest(path="tests/auth.test.ts", match="refreshes expired"),
        ],
        include_reason="the code under test",
    )
    result = apply_selection(sel, ws)
    context = next(m for m in result.messages if m.id == CONTEXT_ID).text
    assert "--- src/auth.ts, lines 3-9 of 13\n3 | export function refreshToken" in context
    assert "--- tests/auth.test.ts, lines 3-13 of 13 (match 'refreshes expired')" in context
    assert ' 8 |   it("refreshes expired token", () => {' in context
    (file_decision,) = [d for d in result.decisions if d.message_id == "file:src/auth.ts:3-9"]
    assert file_decision.reason == "selected by manual: the code under test"
    assert file_decision.tokens_after and file_decision.tokens_after > 10
    assert "Left out of this step: messages 2-5, 7." in context


def test_a_passage_asked_for_twice_is_shown_once(ws: Workspace) -> None:
    # The passage went out twice, under two decisions of one id.
    request = FileRequest(path="src/auth.ts", lines="1-3")
    sel = Selection(include_files=[request, FileRequest(path="src\\auth.ts", lines="1-3")])
    result = apply_selection(sel, ws)
    labels = [d.message_id for d in result.decisions if d.message_id.startswith("file:")]
    assert len(labels) == len(set(labels))
    assert result.messages[-1].text.count("--- src/auth.ts, lines 1-3") == 1


def test_durable_notes_are_kept_across_later_selections(ws: Workspace) -> None:
    note = "The user rejected cookie-based sessions."
    first = apply_selection(Selection(durable_notes=[note], selector="one"), ws)
    assert [d.action for d in first.decisions if d.message_id == "note:0"] == ["selected"]
    # A later selection that does not repeat the note still carries it.
    later = apply_selection(Selection(include_messages=[7], selector="two"), ws)
    context = next(m for m in later.messages if m.id == CONTEXT_ID).text
    assert f"Durable notes:\n- {note}" in context
    (decision,) = [d for d in later.decisions if d.message_id == "note:0"]
    assert decision.action == "kept" and "from an earlier selection" in decision.reason
    assert ws.notes == (note,)
    ws.forget_note(note)
    assert ws.notes == ()


def test_unknown_items_are_all_reported_with_what_exists(ws: Workspace) -> None:
    sel = Selection(
        include_messages=[12, "m99-nothing"],
        include_tool_results=["call_184"],
        include_files=[FileRequest(path="src/auth.js"), FileRequest(path="../etc/passwd")],
        uncertain=["whatever"],
    )
    with pytest.raises(SelectionError) as caught:
        apply_selection(sel, ws)
    problems = caught.value.problems
    assert len(problems) == 6
    text = "\n".join(problems)
    assert "message index 12 is out of range: the workspace has messages 0-7" in text
    assert "no message with id 'm99-nothing'" in text
    assert "no tool call 'call_184'; the workspace's tool calls are: call_1, call_2" in text
    assert (
        "file 'src/auth.js': no such file under the root (5 files there); did you mean src/auth.ts"
        in text
    )
    assert "file '../etc/passwd': '..' is refused" in text
    assert "uncertain item 'whatever': names nothing in the workspace" in text
    assert ws.notes == ()  # nothing applied


def test_an_unknown_item_of_an_empty_workspace_names_no_index_range() -> None:
    with pytest.raises(SelectionError) as caught:
        apply_selection(Selection(uncertain=["x"]), Workspace([]))
    (problem,) = caught.value.problems
    assert "0--1" not in problem  # was: "give a message index (0--1) or id"
    assert "a message (there are none)" in problem


def test_a_tool_exchange_is_kept_whole_and_valid_for_the_provider(ws: Workspace) -> None:
    # The assistant message that made call_1, without naming its result.
    result = apply_selection(Selection(include_messages=[2]), ws)
    ids = [m.id for m in ws.messages]
    assert ids[3] in result.kept_ids
    (decision,) = result.decisions_for(ids[3])
    assert decision.reason.startswith("same tool exchange as message 2: kept whole")
    validate_openai(result.to_openai())


def test_uncertain_items_are_included_and_labelled(ws: Workspace) -> None:
    result = apply_selection(Selection(uncertain=["call_1", "README.md", "7"]), ws)
    ids = [m.id for m in ws.messages]
    for i in (2, 3, 7):
        (decision,) = result.decisions_for(ids[i])
        assert decision.action == "selected" and "uncertain" in decision.reason
    assert any(d.message_id == "file:README.md:1-3" for d in result.decisions)


def test_a_stored_original_can_be_selected_by_artifact_id(tmp_path: Path) -> None:
    store = SQLiteArtifactStore(":memory:")
    ref = store.put("FAIL tests/auth.test.ts\n" + "noise\n" * 50)
    ws = Workspace(session_messages(), store=store)
    result = apply_selection(Selection(include_tool_results=[ref]), ws)
    context = next(m for m in result.messages if m.id == CONTEXT_ID).text
    assert f"Stored original {ref}:\nFAIL tests/auth.test.ts" in context
    assert any(d.message_id == f"artifact:{ref}" for d in result.decisions)
    with pytest.raises(SelectionError, match="no artifact 'art_0000000000000000'"):
        apply_selection(Selection(include_tool_results=["art_0000000000000000"]), ws)
    no_store = Workspace(session_messages())
    with pytest.raises(SelectionError, match="an artifact id, but the workspace has no store"):
        apply_selection(Selection(include_tool_results=[ref]), no_store)


def test_the_selection_decision_records_who_chose_and_any_fallback(ws: Workspace) -> None:
    sel = Selection(selector="LexicalSelector (fallback)", fallback="the model failed", goal="g")
    (first, *_) = apply_selection(sel, ws).decisions
    assert first.message_id == "selection"
    assert (
        first.reason
        == "chosen by LexicalSelector (fallback) for the goal 'g'; fell back: the model failed"
    )


def test_a_budget_is_checked(ws: Workspace) -> None:
    result = apply_selection(Selection(include_messages=[7]), ws, budget=10_000)
    assert result.budget == 10_000 and result.tokens <= 10_000
    assert result.tokens == ws.counter.count_messages(result.messages)
    # The messages kept in any case take 50 tokens: within 80, the selection is over.
    with pytest.raises(SelectionError, match="over the budget of 80; select less") as caught:
        apply_selection(Selection(include_messages=[7], durable_notes=["a note"]), ws, budget=80)
    assert f"{ws.messages[7].id} (22 tokens)" in str(caught.value)
    assert ws.notes == ()  # a refused selection adds no note


def test_a_workspace_holding_an_earlier_context_message_is_refused_by_index(
    ws: Workspace,
) -> None:
    # An agent that keeps what it sent feeds the last step's context message back: the new
    # context used to go out next to it, two messages with the id "selection-context".
    sent = apply_selection(Selection(include_messages=[7], omit_reason="old"), ws).messages
    again = Workspace([*sent, {"role": "user", "content": "And now?"}])
    with pytest.raises(ConfigError, match=f"workspace message {len(sent) - 1} has the id"):
        apply_selection(Selection(), again)


def test_a_budget_below_what_is_always_kept_says_so() -> None:
    # The pinned message alone is over: the error used to say "select less", naming as the
    # largest selected item the record of who chose, "selection (0 tokens)".
    ws = Workspace(
        [
            {"role": "assistant", "content": "pinned " * 100, "pinned": True},
            {"role": "user", "content": "q"},
        ]
    )
    with pytest.raises(SelectionError) as caught:
        apply_selection(Selection(), ws, budget=20)
    (problem,) = caught.value.problems
    assert "raise the budget" in problem and "select less" not in problem
    assert "selection (0 tokens)" not in problem
    kept = ws.counter.count_messages(list(ws.messages))
    assert f"take {kept} tokens alone" in problem


def test_without_a_budget_none_is_reported(ws: Workspace) -> None:
    result = apply_selection(Selection(include_messages=[7]), ws)
    assert result.budget is None
    assert "(no budget, counter" in result.summary()


def test_a_workspace_over_a_session_selects_a_filtered_output_or_its_original() -> None:
    from ctxpack import Session

    session = Session(model="gpt-4")
    log = "\n".join(
        [f"tests/test_{i}.py::test_ok PASSED" for i in range(60)]
        + ["FAILED tests/test_auth.py::test_refresh - KeyError: 'exp'", "1 failed, 60 passed"]
    )
    session.extend(
        [
            {"role": "user", "content": "Why does the auth test fail?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "pytest -q"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": log},
        ]
    )
    ws = Workspace.from_session(session)
    assert ws.store is session.store and ws.counter is session.counter
    filtered = ws.messages[2].text
    assert "FAILED tests/test_auth.py::test_refresh" in filtered and filtered.count("PASSED") < 60
    # The selection can show the filtered output (by call id) or the original (by artifact id).
    (ref,) = re.findall(r"art_[0-9a-f]{16}", filtered)[:1]
    result = apply_selection(Selection(include_tool_results=["c1", ref]), ws)
    assert result.messages[2].text == filtered
    assert result.messages[-1].text.count("PASSED") == 60
    whole = Workspace.from_session(session, record="transcript")
    assert whole.messages[2].text == log


@settings(max_examples=60, deadline=None)
@given(
    chosen=st.lists(st.integers(min_value=0, max_value=7), max_size=8),
    calls=st.lists(st.sampled_from(["call_1", "call_2"]), max_size=2),
)
def test_any_selection_keeps_the_promise(chosen: list[int], calls: list[str]) -> None:
    ws = Workspace(session_messages())
    result = apply_selection(
        Selection(include_messages=list(chosen), include_tool_results=calls), ws
    )
    ids = [m.id for m in ws.messages]
    # One decision per workspace message; every chosen, user and system message is there.
    decided = [d.message_id for d in result.decisions if d.message_id in ids]
    assert sorted(decided) == sorted(ids)
    kept = [m.id for m in result.messages if m.id in ids]
    for i, msg in enumerate(ws.messages):
        if i in chosen or msg.role in ("user", "system"):
            assert msg.id in kept
    # The original order, and valid tool exchanges.
    assert kept == [i for i in ids if i in kept]
    validate_openai(result.to_openai())


def test_check_selection_names_an_argument_of_the_wrong_type(ws: Workspace) -> None:
    # Both used to fail deep inside: AttributeError: 'dict' object has no attribute 'reasons'
    # ('list' object has no attribute 'calls').
    with pytest.raises(ConfigError, match=r"selection must be a Selection \(Selection.from_answer"):
        check_selection({"include_messages": [0]}, ws)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="workspace must be a Workspace, got list"):
        check_selection(Selection(), [])  # type: ignore[arg-type]
