"""ctxpack.Session: tool outputs filtered once on arrival, originals kept, two records side by
side, append-only rendering, the retrieve tool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import ConfigError, Decision, InvalidMessageError, Pipeline, Session
from ctxpack.adapters import validate_anthropic, validate_openai
from ctxpack.errors import ArtifactNotFoundError
from ctxpack.filters import is_note
from ctxpack.pipeline import PackContext
from ctxpack.retrieval import RETRIEVE_TOOL_NAME, handle_retrieve_call, retrieve_tool
from ctxpack.store import SQLiteArtifactStore

from .helpers import ORIGINAL_NOTE, cpu_seconds

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tool_outputs"
JEST = (FIXTURES / "jest_auth.txt").read_text()
PYTEST = (FIXTURES / "pytest_failures.txt").read_text()
CAT = (FIXTURES / "cat_tax_py.txt").read_text()


def call(call_id: str, command: str, thought: str = "") -> dict[str, Any]:
    args = json.dumps({"command": command})
    return {
        "role": "assistant",
        "content": thought or None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": args}}
        ],
    }


def result(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def agent_history() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a coding agent. Never push to main."},
        {"role": "user", "content": "The auth tests fail; find out why. Do not touch the DB."},
        call("c1", "npm test", "Running the test suite first."),
        result("c1", JEST),
        call("c2", "python -m pytest", "Now the billing tests."),
        result("c2", PYTEST),
        call("c3", "cat src/billing/tax.py", "Looking at compute_vat."),
        result("c3", CAT),
        {"role": "assistant", "content": "compute_vat rounds to 0.001 instead of cents."},
    ]


def test_tool_outputs_are_filtered_on_arrival_and_originals_kept() -> None:
    session = Session(model="gpt-4")
    session.extend(agent_history())
    transcript = session.transcript()
    compact = session.compact()
    assert [m.text for m in transcript] == [
        (m["content"] or "") for m in agent_history()
    ]  # the human record is untouched
    assert len(compact) == len(transcript)
    shortened = [r for r in session.records if r.shortened]
    assert [r.kind for r in shortened] == ["test_run", "test_run", "file_view"]
    for record in shortened:
        assert record.tokens_after < record.tokens_before
        raw = next(m for m in transcript if m.id == record.message_id)
        assert record.artifact is not None
        assert session.store.get(record.artifact) == raw.text
        assert (
            session.retrieve(record.artifact).text
            == raw.text[: len(session.retrieve(record.artifact).text)]
        )


def test_render_links_every_compact_item_to_its_original() -> None:
    session = Session(model="gpt-4")
    session.extend(agent_history())
    result = session.render()
    assert isinstance(result, ctxpack.PackResult)
    assert result.input_ids == [m.id for m in session.transcript()]
    assert result.tokens < result.input_tokens
    jest_id = session.transcript()[3].id
    original = result.original(jest_id)
    assert original is not None and original.text == JEST
    assert result.original(session.transcript()[1].id) is None  # the user's message: untouched
    decision = result.decisions_for(jest_id)[0]
    assert decision.stage == "filter" and decision.action == "compressed"
    assert decision.tokens_before is not None and decision.tokens_after is not None
    assert decision.tokens_after < decision.tokens_before
    record = session.records[0]
    assert record.artifact is not None and record.artifact in decision.reason
    # Every tool output has a filter decision, kept or compressed.
    tool_ids = {m.id for m in session.transcript() if m.role == "tool"}
    assert {d.message_id for d in result.decisions if d.stage == "filter"} == tool_ids


def test_appending_only_appends_to_what_is_sent() -> None:
    history = agent_history()
    session = Session(model="gpt-4")
    sent: list[str] = []
    for message in history:
        session.append(message)
        if message["role"] == "assistant" and len(session) > 2:
            payload = [json.dumps(m, sort_keys=True) for m in session.render().to_openai()]
            # The prefix sent last turn is still the prefix this turn.
            assert payload[: len(sent)] == sent
            sent = payload


def test_the_same_history_renders_to_the_same_bytes() -> None:
    one, two = Session(model="gpt-4"), Session(model="gpt-4")
    one.extend(agent_history())
    for message in agent_history():
        two.append(message)
        two.render()  # rendering in between changes nothing
    first = json.dumps(one.render().to_openai())
    assert first == json.dumps(two.render().to_openai())
    assert first == json.dumps(one.render().to_openai())


def test_user_instructions_and_system_prompt_are_never_compressed() -> None:
    huge_rules = "\n".join(
        f"Rule {i}: never delete /srv/data/{i} without asking." for i in range(400)
    )
    session = Session(model="gpt-4")
    session.extend(
        [
            {"role": "system", "content": huge_rules},
            {"role": "user", "content": huge_rules},
            {"role": "developer", "content": huge_rules},
        ]
    )
    rendered = session.render()
    assert [m.text for m in rendered.messages] == [huge_rules] * 3
    assert not session.records


def test_a_retrieved_original_is_never_filtered_again() -> None:
    session = Session(model="gpt-4")
    session.extend(agent_history()[:4])
    artifact = session.records[0].artifact
    assert artifact is not None
    retrieve_call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "r1",
                "type": "function",
                "function": {
                    "name": RETRIEVE_TOOL_NAME,
                    "arguments": json.dumps({"artifact": artifact}),
                },
            }
        ],
    }
    session.append(retrieve_call)
    answer = session.handle(retrieve_call["tool_calls"][0])
    assert JEST.split("\n")[0] in answer and len(answer) > len(JEST) * 0.9
    session.append(result("r1", answer))
    assert session.render().messages[-1].text == answer
    assert session.records[-1].reason == "a retrieved original is never filtered again"


def test_markers_offer_retrieval_only_when_the_tool_is_offered() -> None:
    offered, silent = Session(model="gpt-4"), Session(model="gpt-4", retrieve_tool=False)
    offered.extend(agent_history())
    silent.extend(agent_history())
    assert offered.tools() == [retrieve_tool()]
    assert offered.tools("anthropic") == [retrieve_tool("anthropic")]
    assert silent.tools() == []
    marker_on = offered.compact()[3].text.split("\n")[-1]
    marker_off = silent.compact()[3].text.split("\n")[-1]
    assert RETRIEVE_TOOL_NAME in marker_on
    assert RETRIEVE_TOOL_NAME not in marker_off and "art_" in marker_off
    # The retrieve tool's definition is counted when offered.
    assert offered.render().tool_tokens > 0 and silent.render().tool_tokens == 0


def test_anthropic_messages_go_in_and_come_out_valid() -> None:
    session = Session(model="gpt-4")
    session.append({"role": "user", "content": "Why do the tests fail?"})
    session.append(
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Running them."},
                {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "npm test"}},
            ],
        }
    )
    session.append(
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": JEST}]}
    )
    assert [m.role for m in session.transcript()] == ["user", "assistant", "tool"]
    assert session.provider == "anthropic"  # told by the messages' shape
    assert session.render().tool_tokens == session.render(provider="anthropic").tool_tokens
    assert session.records[0].shortened and session.records[0].kind == "test_run"
    result = session.render(provider="anthropic")
    payload = result.to_anthropic()
    validate_anthropic(payload)
    block = payload["messages"][-1]["content"][0]
    assert block["type"] == "tool_result" and "Tests:       1 failed" in block["content"]
    assert result.original(session.transcript()[-1].id).text == JEST  # type: ignore[union-attr]


def test_render_with_a_budget_packs_and_keeps_the_originals() -> None:
    session = Session(model="gpt-4")
    session.extend(agent_history())
    result = session.render(budget=1_500)
    assert result.tokens <= 1_500
    validate_openai(result.to_openai())
    filtered_ids = [r.message_id for r in session.records if r.shortened]
    for mid in filtered_ids:
        original = result.original(mid)
        assert original is not None and not any(is_note(x) for x in original.text.split("\n")[:1])
    assert {d.stage for d in result.decisions} >= {"filter", "pack"}


def test_extra_stages_run_at_render_time() -> None:
    seen: list[int] = []

    def clear_first_tool_result(ctx: PackContext, /) -> PackContext:
        seen.append(len(ctx.messages))
        messages = list(ctx.messages)
        first = next(i for i, m in enumerate(messages) if m.role == "tool")
        new = messages[first].model_copy(update={"content": "[cleared]"})
        decision = Decision(stage="clear", action="cleared", message_id=new.id, reason="test stage")
        messages[first] = new
        return ctx.decide(
            decision,
            messages=tuple(messages),
            artifacts={**ctx.artifacts, new.id: ctx.messages[first]},
        )

    session = Session(model="gpt-4", pipeline=Pipeline([clear_first_tool_result]))
    session.extend(agent_history())
    result = session.render()
    assert seen == [len(agent_history())]
    assert result.messages[3].text == "[cleared]"
    # The session's original (the raw output) wins over the stage's (the filtered text).
    assert result.original(result.messages[3].id).text == JEST  # type: ignore[union-attr]
    assert [d.stage for d in result.decisions_for(result.messages[3].id)][:2] == [
        "filter",
        "clear",
    ]


def test_a_pipeline_without_a_budget_packs_under_the_models_context_window() -> None:
    chat = [{"role": "user", "content": f"note {i}: " + "word " * 3_300} for i in range(40)]
    packer = ctxpack.GreedyPacker(signal_weights={})  # no scorer before it
    known = Session(model="gpt-4o", pipeline=Pipeline([packer]), filters=False)
    known.extend(chat)
    result = known.render()
    assert result.budget == 128_000  # gpt-4o's context window, from the price table
    assert known.counter.count_messages(known.compact()) > result.budget >= result.tokens
    assert any(d.action == "dropped" for d in result.decisions)
    # A context window the price table does not know: no limit, the record whole.
    unknown = Session(counter=known.counter, pipeline=Pipeline([packer]), filters=False)
    unknown.extend(chat)
    whole = unknown.render()
    assert whole.budget is None and len(whole.messages) == len(chat)


def test_filter_when_answered_shows_an_output_whole_until_the_agent_answers() -> None:
    session = Session(model="gpt-4", filter_when="answered")
    history = agent_history()
    session.extend(history[:4])
    assert session.render().messages[-1].text == JEST  # not answered yet: whole
    session.append(history[4])
    compact = session.compact()
    assert compact[3].text != JEST and session.records[0].shortened
    with pytest.raises(ConfigError, match="filter_when"):
        Session(filter_when="later")  # type: ignore[arg-type]


def test_filter_when_answered_in_a_window_filters_at_arrival_what_never_fits_it() -> None:
    # Left whole until answered, an output larger than the window's room was cleared unread by
    # the window's emergency edit: the model saw a placeholder instead of the filtered output.
    history = agent_history()
    log = "\n".join(
        f"INFO worker {i % 7} handled request {i:06x} in {i % 89} ms" for i in range(3_000)
    )
    big = {**history[3], "content": f"{log}\n{JEST}"}
    session = Session(model="gpt-4", filter_when="answered", window=8_000)
    session.extend([*history[:3], big])
    assert session.counter.count_message(session.transcript()[3]) > 8_000
    sent = session.render().messages[-1]
    assert sent.role == "tool" and "FAIL src/auth/auth.test.ts" in sent.text
    assert len(sent.text) < len(log)
    assert session.records[-1].shortened and not session.window_state.events
    # One that fits the room waits for the answer, whole, as without a window.
    small = Session(model="gpt-4", filter_when="answered", window=8_000)
    small.extend(history[:4])
    assert small.render().messages[-1].text == JEST


def test_originals_outlive_the_session_in_a_file_store(tmp_path: Path) -> None:
    path = tmp_path / "artifacts.db"
    session = Session(model="gpt-4", store=SQLiteArtifactStore(path))
    session.extend(agent_history())
    artifacts = [r.artifact for r in session.records if r.artifact]
    del session
    reopened = SQLiteArtifactStore(path)
    assert all(reopened.get(a) for a in artifacts)
    assert reopened.metadata(artifacts[0])["kind"] == "test_run"


def test_filters_can_be_turned_off_or_chosen() -> None:
    off = Session(model="gpt-4", filters=False)
    off.extend(agent_history())
    assert [m.text for m in off.compact()] == [m.text for m in off.transcript()]
    only_views = Session(model="gpt-4", filters=[ctxpack.filters.FileViewFilter(max_lines=10)])
    only_views.extend(agent_history())
    assert [r.kind for r in only_views.records if r.shortened] == [
        "file_view",
        "file_view",
        "file_view",
    ]


def test_handle_answers_mistakes_in_words() -> None:
    store = SQLiteArtifactStore()
    ref = store.put("a\nb")
    assert handle_retrieve_call(store, {"artifact": "art_0000000000000000"}).startswith("error:")
    assert "unknown argument(s) 'x'" in handle_retrieve_call(store, {"artifact": ref, "x": 1})
    assert "lines=" in handle_retrieve_call(store, {"artifact": ref, "lines": "9-1"})
    assert handle_retrieve_call(store, '{"artifact": "' + ref + '"}').endswith("a\nb")
    anthropic_call = {
        "type": "tool_use",
        "id": "t",
        "name": RETRIEVE_TOOL_NAME,
        "input": {"artifact": ref, "regex": "b", "context": 0},
    }
    assert handle_retrieve_call(store, anthropic_call).endswith("2:b")
    with pytest.raises(ConfigError, match="not to"):
        handle_retrieve_call(store, {"type": "tool_use", "id": "t", "name": "bash", "input": {}})
    with pytest.raises(ArtifactNotFoundError):
        Session().retrieve("art_0000000000000000")


def test_bad_input_is_refused_clearly() -> None:
    session = Session(model="gpt-4")
    with pytest.raises(ConfigError, match="empty"):
        session.render()
    session.append({"role": "user", "content": "hi", "id": "u1"})
    with pytest.raises(InvalidMessageError, match="already used"):
        session.append({"role": "user", "content": "again", "id": "u1"})
    with pytest.raises(InvalidMessageError, match="role"):
        session.append({"role": "robot", "content": "x"})
    with pytest.raises(InvalidMessageError, match="append"):
        session.extend({"role": "user", "content": "x"})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="store"):
        Session(store=object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="filters"):
        Session(filters=42)  # type: ignore[arg-type]


def test_a_callers_id_shaped_like_the_sessions_own_is_never_given_twice() -> None:
    # The caller named its first message "s1": the second, without an id, was given "s1" too
    # and refused as a duplicate the caller never wrote.
    session = Session(model="gpt-4")
    session.append({"role": "user", "content": "hi", "id": "s1"})
    session.append({"role": "assistant", "content": "hello"})
    session.extend([{"role": "user", "content": "a", "id": "s3"}, {"role": "user", "content": "b"}])
    ids = [m.id for m in session.transcript()]
    assert ids == ["s1", "s1.1", "s3", "s3.1"]
    assert session.render().input_ids == ids


def test_extend_adds_all_messages_or_none() -> None:
    session = Session(model="gpt-4")
    session.append({"role": "user", "content": "hi"})
    with pytest.raises(InvalidMessageError, match=r"message 2: role") as info:
        session.extend(
            [{"role": "assistant", "content": "hello"}, {"role": "robot", "content": "x"}]
        )
    assert info.value.index == 2 and info.value.field == "role"
    with pytest.raises(InvalidMessageError, match="already used"):
        session.extend(
            [
                {"role": "assistant", "content": "a", "id": "dup"},
                {"role": "user", "content": "b", "id": "dup"},
            ]
        )
    assert [m.text for m in session.transcript()] == ["hi"]
    session.extend([{"role": "assistant", "content": "hello"}])
    assert [m.id for m in session.transcript()] == ["s0", "s1"]


def view_history(views: int, lines: int = 60) -> list[dict[str, Any]]:
    """The agent reads the same file again and again (after each edit, say)."""
    out: list[dict[str, Any]] = [{"role": "user", "content": "Fix compute_vat."}]
    for n in range(views):
        text = "\n".join(f"    value_{i} = {i + n}" for i in range(lines))
        out += [call(f"v{n}", "nl -ba src/tax.py", "Reading it again."), result(f"v{n}", text)]
    return out


def test_superseded_file_views_are_replaced_in_one_batch() -> None:
    history = view_history(6)
    session = Session(model="gpt-4", supersede_batch=2_000)
    sent: list[Any] = []
    changes = 0
    for message in history:
        session.append(message)
        now = session.render().to_openai()
        if now[: len(sent)] != sent:
            changes += 1
        sent = now
    assert changes == 1  # one batch, not a rewrite per view
    compact = session.compact()
    notes = [m for m in compact if m.role == "tool" and m.text.startswith("[ctxpack: superseded")]
    assert 3 <= len(notes) <= 5
    assert compact[-1].text == history[-1]["content"]  # the latest view stays whole
    result = session.render()
    for note in notes:
        assert "src/tax.py" in note.text
        original = result.original(note.id)
        assert original is not None and original.text.startswith("    value_0 = ")
        (decision,) = [d for d in result.decisions_for(note.id) if d.stage == "supersede"]
        assert decision.action == "cleared"
        artifact = next(r.artifact for r in session.records if r.message_id == note.id)
        assert artifact is not None and session.store.get(artifact) == original.text
        match = ORIGINAL_NOTE.fullmatch(note.text)
        assert match is not None and match.group(1) == artifact


def test_views_of_other_regions_or_files_are_not_superseded() -> None:
    session = Session(model="gpt-4", supersede_batch=1)
    text = "\n".join(f"line {i}" for i in range(50))
    session.extend(
        [
            {"role": "user", "content": "Read."},
            call("a", "sed -n '1,50p' a.py"),
            result("a", text),
            call("b", "sed -n '40,90p' a.py"),  # overlaps, does not cover
            result("b", text),
            call("c", "cat b.py"),  # another file
            result("c", text),
            call("d", "grep -n line a.py"),  # not a view
            result("d", text),
        ]
    )
    assert [m.text for m in session.compact()] == [m.text for m in session.transcript()]
    session.extend([call("e", "cat a.py"), result("e", text)])
    superseded = [r.message_id for r in session.records if r.kind == "superseded"]
    assert superseded == [session.transcript()[2].id, session.transcript()[4].id]
    with pytest.raises(ConfigError, match="supersede_batch"):
        Session(supersede_batch=0)


def tool_call(call_id: str, tool: str, **arguments: Any) -> dict[str, Any]:
    function = {"name": tool, "arguments": json.dumps(arguments)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def test_text_editor_and_read_tool_views_are_superseded_like_shell_views() -> None:
    # Anthropic's text editor tool (SWE-agent's and OpenHands' str_replace_editor) and read
    # tools such as Claude Code's Read name the file and range in their arguments.
    session = Session(model="gpt-4", supersede_batch=1)
    text = "\n".join(f"line {i}" for i in range(50))
    editor, read = "str_replace_based_edit_tool", "Read"
    session.extend(
        [
            {"role": "user", "content": "Read."},
            tool_call("a", editor, command="view", path="/r/a.py", view_range=[10, 30]),
            result("a", text),
            tool_call("b", editor, command="view", path="/r/a.py", view_range=[20, 60]),
            result("b", text),  # overlaps a, does not cover it
            tool_call("c", read, file_path="/r/b.py", offset=100, limit=50),
            result("c", text),
            tool_call("d", editor, command="view", path="/r/b.py", view_range=[100, 150]),
            result("d", text),  # lines, not Read's offsets: no telling whether it covers c
            tool_call("e", editor, command="str_replace", path="/r/a.py", old_str="x"),
            result("e", text),  # an edit is not a view
        ]
    )
    assert not [r for r in session.records if r.kind == "superseded"]
    session.extend(
        [
            tool_call("f", editor, command="view", path="/r/a.py", view_range=[1, -1]),
            result("f", text),
            tool_call("g", read, file_path="/r/b.py", offset=90, limit=100),
            result("g", text),
        ]
    )
    ids = {m.tool_call_id: m.id for m in session.transcript() if m.role == "tool"}
    superseded = {r.message_id for r in session.records if r.kind == "superseded"}
    assert superseded == {ids["a"], ids["b"], ids["c"]}
    note = next(m for m in session.compact() if m.id == ids["a"])
    assert "superseded by a later view of /r/a.py" in note.text


_OUTPUTS = {
    "npm test": JEST,
    "python -m pytest": PYTEST,
    "cat src/billing/tax.py": CAT,
    "ls": "a.py\nb.py",
    "grep -rn compute_vat .": "\n".join(f"src/m{i}.py:{i}: compute_vat(x)" for i in range(90)),
}


@settings(max_examples=25, deadline=None)
@given(steps=st.lists(st.sampled_from(sorted(_OUTPUTS)), min_size=1, max_size=8))
def test_rendering_is_append_only_and_deterministic_for_any_history(steps: list[str]) -> None:
    session = Session(model="gpt-4")
    session.append({"role": "user", "content": "Investigate."})
    history: list[dict[str, Any]] = [{"role": "user", "content": "Investigate."}]
    sent: list[dict[str, Any]] = []
    for n, command in enumerate(steps):
        for message in (call(f"c{n}", command), result(f"c{n}", _OUTPUTS[command])):
            session.append(message)
            history.append(message)
        now = session.render().to_openai()
        assert now[: len(sent)] == sent
        sent = now
    again = Session(model="gpt-4")
    again.extend(history)
    assert again.render().to_openai() == sent
    for message, raw in zip(session.transcript(), history, strict=True):
        assert message.text == (raw["content"] or "")


def test_file_views_stored_before_regions_had_a_basis_still_load() -> None:
    # A replica of an earlier release stored each live view as [position, path, start, end].
    session = Session(model="gpt-4", supersede_batch=1)
    text = "\n".join(f"line {i}" for i in range(50))  # longer than the note replacing it
    session.extend([{"role": "user", "content": "Read."}, call("a", "cat a.py"), result("a", text)])
    state = session._state()
    assert state["views"] == [[2, "a.py", 1, 10**9, ""]]
    session._set_state(state, 2)  # as this release stores it
    state["views"] = [view[:4] for view in state["views"]]
    session._set_state(state, 2)
    session.extend([call("b", "cat a.py"), result("b", text)])
    assert [r.kind for r in session.records if r.kind == "superseded"] == ["superseded"]


def test_a_render_does_not_count_a_long_history_again() -> None:
    # The counter's text cache holds 12 MB of longer texts: 14 MB of outputs used to be
    # re-tokenised at every render (0.9 s each here), the least recently counted always gone.
    session = Session(model="gpt-4o", filters=False, redact_secrets=False, flag_injections=False)
    words = "the build passed on the second try and the cache was warm " * 330  # 20 kB
    for i in range(700):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
        session.extend(
            [
                {"role": "user", "content": f"Step {i}."},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{i}", "content": f"run {i}: {words}"},
            ]
        )
    renders: list[ctxpack.PackResult] = []
    cold = cpu_seconds(lambda: renders.append(session.render()), repeat=1)
    warm = cpu_seconds(lambda: renders.append(session.render()), repeat=2)
    assert len({(r.tokens, r.input_tokens) for r in renders}) == 1
    assert warm < cold / 4


def test_a_one_line_output_of_any_size_is_sent_cut_and_kept_whole() -> None:
    # One line of base64: no filter of lines shortened it, and a session without a window
    # sent all of it (546,000 tokens for 800,000 characters).
    blob = "".join(f"{i:05d}iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB" for i in range(20_000))
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    session = Session(model="gpt-4o")
    session.extend(
        [
            {"role": "user", "content": "Why is the logo blank?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": blob},
        ]
    )
    result = session.render()
    assert result.tokens < 5_000
    output_id = session.transcript()[-1].id
    assert result.original(output_id).text == blob  # type: ignore[union-attr]
