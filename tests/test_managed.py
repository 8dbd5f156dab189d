"""Managed mode: ``Session(window=W)`` keeps every request within the window, instructions
verbatim, everything removed retrievable, each edit recorded with its cache effect."""

from __future__ import annotations

import itertools
import json
import pickle
import re
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import BudgetExceededError, ConfigError, Message, Session, get_counter
from ctxpack.cost import Price, price
from ctxpack.managed import WindowPolicy, WindowState, fit_digest
from ctxpack.tokens import REPLY_PRIMING

from .helpers import ORIGINAL_NOTE, cpu_seconds

SYSTEM = {"role": "system", "content": "You are a coding agent. Never push to main."}
TASK = {"role": "user", "content": "Fix the flaky test in tests/test_cache.py; keep the API."}
COUNTER = get_counter(counter="cl100k_base")
# Thresholds above the defaults, at which these short sessions clear before they compact.
CLEARING = WindowPolicy(window=16_000, clear_at=0.35, compact_at=0.6, keep=5)


def step(i: int, lines: int = 25) -> list[dict[str, Any]]:
    """One agent step: a call to bash, and an output that filters do not shorten."""
    call_id = f"c{i}"
    command = f"python probe_{i}.py"
    output = "\n".join(f"probe {i} row {j}: value_{i}_{j} = {i * 1000 + j}" for j in range(lines))
    return [
        {
            "role": "assistant",
            "content": f"THOUGHT: step {i}, I need to run probe {i}.",
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": command})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": output},
    ]


def run(session: Session, steps: int, *, lines: int = 25) -> list[ctxpack.PackResult]:
    """Append a whole session step by step, rendering one request before each assistant
    message (as an agent does)."""
    session.extend([SYSTEM, TASK])
    results = []
    for i in range(steps):
        results.append(session.render())
        session.extend(step(i, lines))
    results.append(session.render())
    return results


@pytest.mark.parametrize("policy", [None, CLEARING], ids=["defaults", "clearing first"])
def test_every_request_fits_the_window_with_the_reply_room(policy: WindowPolicy | None) -> None:
    window = 8_000 if policy is None else policy.model_copy(update={"window": 8_000})
    session = Session(counter=COUNTER, filters=False, window=window)
    results = run(session, 60)
    room = session.window.window - session.window.reserve
    assert max(r.tokens for r in results) <= room
    raw = sum(COUNTER.count_message(m) for m in session.transcript())
    assert raw > 3 * session.window.window  # the session is far longer than the window
    actions = {e.action for e in session.window_state.events}
    assert actions >= ({"compacted"} if policy is None else {"cleared", "compacted"})


def test_system_prompt_task_and_user_messages_stay_verbatim_in_every_request() -> None:
    session = Session(counter=COUNTER, filters=False, window=8_000)
    session.extend([SYSTEM, TASK])
    for i in range(40):
        session.extend(step(i))
        if i % 10 == 5:
            session.append({"role": "user", "content": f"Also check case {i}, do not skip it."})
        sent = [m.text for m in session.render().messages]
        users = [m.text for m in session.transcript() if m.role in ("system", "user")]
        assert all(u in sent for u in users)
        assert sent[0] == SYSTEM["content"] and sent[1] == TASK["content"]


def test_what_is_removed_stays_retrievable() -> None:
    session = Session(counter=COUNTER, filters=False, window=8_000)
    results = run(session, 40)
    last = results[-1]
    state = session.window_state
    assert state.cleared or state.compacted
    sent_ids = {m.id for m in last.messages}
    text = "\n".join(m.text for m in last.messages)
    for msg in session.transcript():
        if msg.role != "tool" or msg.text in text:
            continue
        # Gone from the request: its original is in the result and in the store.
        assert last.original(msg.id).text == msg.text
        assert msg.id not in sent_ids or msg.id in state.cleared
    # The summary names an index artifact that lists every summarised message's original.
    summary = next(m for m in last.messages if m.id == state.summary_id)
    assert state.index_artifact in summary.text
    index = session.store.get(state.index_artifact)
    for mid in state.compacted:
        line = next(row for row in index.splitlines() if row.startswith(mid + "\t"))
        artifact = line.rsplit("\t", 1)[1]
        original = next(m for m in session.transcript() if m.id == mid)
        if original.role == "tool":
            assert session.store.get(artifact) == original.text


def test_clearing_placeholders_name_the_original() -> None:
    session = Session(counter=COUNTER, filters=False, window=CLEARING)
    run(session, 30)
    state = session.window_state
    assert state.cleared
    mid, artifact = next(iter(state.cleared.items()))
    original = next(m for m in session.transcript() if m.id == mid)
    assert session.store.get(artifact) == original.text
    sent = next(m for m in session.render().messages if m.id == mid)
    assert artifact in sent.text and "retrieve_original" in sent.text
    note = ORIGINAL_NOTE.fullmatch(sent.text)
    assert note is not None and note.group(1) == artifact


def test_each_edit_is_a_decision_with_its_cache_effect() -> None:
    session = Session(
        counter=COUNTER, filters=False, window=CLEARING.model_copy(update={"window": 8_000})
    )
    results = run(session, 40)
    decisions = results[-1].decisions
    window = [d for d in decisions if d.stage == "window"]
    assert {"cleared", "merged", "warned"} <= {d.action for d in window}
    # The session names no model: its edits are timed by Claude's cache, which bills the tool
    # definitions (the retrieve tool) as Anthropic tools.
    tools = ctxpack.count_tokens(
        "", model="claude-sonnet-4-5", counter=COUNTER, tools=session.tools()
    )
    for event in session.window_state.events:
        # At most the whole prompt: the tool definitions too.
        assert 0 < event.rewritten <= event.tokens_after + tools
        assert event.tokens_after < event.tokens_before
    warned = [d for d in window if d.action == "warned"]
    assert len(warned) == len(session.window_state.events)
    assert all("writes" in d.reason and "tokens again" in d.reason for d in warned)


def test_between_edits_requests_only_grow_at_their_end() -> None:
    # What a prompt cache needs: a request is the previous one plus new messages, except at a
    # recorded edit.
    session = Session(counter=COUNTER, filters=False, window=16_000)
    results = run(session, 50)
    edited = {e.request for e in session.window_state.events}
    for k in range(1, len(results)):
        before = [m.model_dump() for m in results[k - 1].messages]
        after = [m.model_dump() for m in results[k].messages]
        if k not in edited:
            assert after[: len(before)] == before, f"request {k} rewrote its prefix"
    # Batches: far fewer edits than requests.
    assert 0 < len(edited) <= len(results) // 5


def test_the_state_round_trips_through_json_and_goes_on_the_same_way() -> None:
    one = Session(counter=COUNTER, filters=False, window=8_000)
    run(one, 25)
    saved = one.window_state.to_json()
    two = Session(
        counter=COUNTER,
        filters=False,
        window=8_000,
        store=one.store,
        window_state=WindowState.from_json(saved),
    )
    two.extend(one.transcript())
    assert two.render().messages == one.render().messages
    for i in range(25, 40):
        one.extend(step(i))
        two.extend(step(i))
        assert two.render().messages == one.render().messages
    with pytest.raises(ConfigError, match="WindowState"):
        WindowState.from_json("{not json")


def pinned_after_compaction(session: Session) -> Message:
    """The pinned message a session re-injects after 40 steps have made it compact."""
    for i in range(40):
        session.render()
        session.extend(step(i))
    result = session.render()
    assert session.window_state.compacted
    return next(m for m in result.messages if m.id == "ctxpack-pinned")


# Budgets a long skill passes (it is cut to its head) and two skills pass (the older dropped).
PIN_POLICY = WindowPolicy(window=12_000, skill_budget=300, pinned_budget=500)
MEMORY = "Always run ruff before committing."
OLD_SKILL = "\n".join(f"old skill line {j}" for j in range(40))
DEPLOY_SKILL = "\n".join(f"deploy step {j}: run stage {j}" for j in range(200))


def session_with_pins() -> Session:
    """A session under ``PIN_POLICY`` whose task is followed by a memory file (``MEMORY``), an
    older skill (``OLD_SKILL``) and a long one (``DEPLOY_SKILL``), pinned in that order."""
    session = Session(counter=COUNTER, filters=False, window=PIN_POLICY)
    session.extend([SYSTEM, TASK])
    session.pin(MEMORY, name="CLAUDE.md", kind="memory")
    session.pin(OLD_SKILL, name="old-skill")
    session.pin(DEPLOY_SKILL, name="deploy")
    return session


def test_pinned_content_is_reinjected_within_budgets_after_a_compaction() -> None:
    pinned = pinned_after_compaction(session_with_pins())
    assert "Always run ruff before committing." in pinned.text  # memory: whole
    assert "deploy step 0: run stage 0" in pinned.text  # the head of the truncated skill
    assert "deploy step 199" not in pinned.text
    assert "old skill line 0" not in pinned.text  # the oldest skill, dropped past the budget
    assert COUNTER.count(pinned.text) < 300 + 100


def test_a_skill_pinned_twice_is_reinjected_once_within_the_budget() -> None:
    # Each copy was re-injected, and counted against pinned_budget: invoking a skill twice
    # pushed an older skill out of the re-injection.
    session = Session(counter=COUNTER, filters=False, window=PIN_POLICY)
    session.extend([SYSTEM, TASK])
    session.pin("lint: run ruff check, then ruff format", name="lint")
    session.pin(DEPLOY_SKILL, name="deploy")
    session.extend(step(0))
    session.pin(DEPLOY_SKILL, name="deploy")
    pinned = pinned_after_compaction(session)
    assert pinned.text.count("deploy step 0: run stage 0") == 1
    assert "lint: run ruff check" in pinned.text  # within the budget once the copy goes


def test_a_skill_pinned_again_after_a_compaction_is_reinjected_once() -> None:
    # The next compaction re-injected both copies and raised KeyError recording the older one.
    session = Session(counter=COUNTER, filters=False, window=PIN_POLICY)
    session.extend([SYSTEM, TASK])
    session.pin(MEMORY, name="CLAUDE.md", kind="memory")
    compactions = 0
    for i in range(80):
        session.render()
        events = session.window_state.events
        if compactions == 0 and any(e.action == "compacted" for e in events):
            session.pin(MEMORY, name="CLAUDE.md", kind="memory")
        compactions = sum(e.action == "compacted" for e in events)
        session.extend(step(i))
    result = session.render()
    assert compactions >= 2
    (pinned,) = [m for m in result.messages if m.id == "ctxpack-pinned"]
    assert pinned.text.count(MEMORY) == 1


def test_thinking_blocks_are_cleared_keeping_the_last_turns() -> None:
    policy = CLEARING.model_copy(update={"window": 8_000, "keep_thinking": 1})
    session = Session(counter=COUNTER, filters=False, window=policy)
    session.extend([SYSTEM, TASK])
    for i in range(30):
        session.render()
        block = {
            "type": "thinking",
            "thinking": f"thinking about probe {i} " * 33,
            "signature": "s",
        }
        session.append(
            {
                "role": "assistant",
                "content": [
                    block,
                    {"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"command": "ls"}},
                ],
            }
        )
        session.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x\n" * 50}],
            }
        )
    result = session.render()
    cleared = [d for d in result.decisions if d.reason.startswith("thinking blocks cleared")]
    assert cleared and all(d.tokens_after < d.tokens_before for d in cleared)
    with_thinking = [
        m
        for m in result.messages
        if m.role == "assistant"
        and isinstance(m.content, list)
        and any(p.get("type") == "thinking" for p in m.content)
    ]
    assert len(with_thinking) <= 1 + 1  # the last turn, and any not yet in a batch
    assert result.tokens <= policy.window - policy.reserve


def test_keep_thinking_zero_clears_every_turns_thinking() -> None:
    # 0 was read as None: every turn's thinking stayed, and no batch cleared any.
    policy = CLEARING.model_copy(update={"window": 8_000, "keep_thinking": 0})
    session = Session(counter=COUNTER, filters=False, window=policy)
    session.extend([SYSTEM, TASK])
    for i in range(30):
        session.render()
        block = {
            "type": "thinking",
            "thinking": f"thinking about probe {i} " * 33,
            "signature": "s",
        }
        call = {"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"command": "ls"}}
        session.append({"role": "assistant", "content": [block, call]})
        output = {"type": "tool_result", "tool_use_id": f"t{i}", "content": "x\n" * 50}
        session.append({"role": "user", "content": [output]})
    result = session.render()
    cleared = {d.message_id for d in result.decisions if d.reason.startswith("thinking blocks")}
    assert cleared
    for m in result.messages:
        if m.id in cleared and isinstance(m.content, list):
            assert not any(p.get("type") == "thinking" for p in m.content)


def test_instructions_that_cannot_fit_raise_a_budget_error() -> None:
    session = Session(counter=COUNTER, filters=False, window=2_000)
    session.extend([SYSTEM, {"role": "user", "content": "word " * 3_000}])
    with pytest.raises(BudgetExceededError) as info:
        session.render()
    assert info.value.budget == 2_000
    # The system prompt and the task are kept without anyone pinning them: the message does not
    # ask to unpin them alone.
    system, task = (m.id for m in session.transcript())
    assert info.value.pinned_ids == [system, task]
    assert f"or shorten or unpin some of: {system!r}, {task!r}" in str(info.value)
    # The one to shorten is named with its size, among short ones.
    assert f"; the largest, {task!r}, has {COUNTER.count_message(session.transcript()[1])})" in (
        str(info.value)
    )


def test_a_request_too_large_for_its_instructions_says_so_once_all_else_is_gone() -> None:
    # Every tool result and answer cleared, then the last call summarised and the summary left
    # out: what the error blames is what is left, the instructions, and nothing else is sent.
    # (Until the last call could be summarised, its notes and the summary's header were a
    # "rest" the error named; a request held up by them now fits.)
    session = Session(counter=COUNTER, filters=False, window=2_000)
    task = {"role": "user", "content": "word " * 1_600}
    session.extend([SYSTEM, task, *step(0), {"role": "assistant", "content": "why " * 2_500}])
    with pytest.raises(BudgetExceededError) as info:
        session.render()
    message = str(info.value)
    assert "the rest of the request" not in message
    floor = sum(COUNTER.count_message(m) for m in session.transcript()[:2]) + REPLY_PRIMING
    assert f"the system prompt and user messages ({floor} tokens" in message
    assert session.window is not None
    assert info.value.required == floor + info.value.tool_tokens + session.window.reserve


def _writes(size: int) -> list[dict[str, Any]]:
    """An answer that reasons at length and writes a file through its call's arguments, and
    the call's short result."""
    text = "".join(f"x_{k} = {k}\n" for k in range(size))
    return [
        {
            "role": "assistant",
            "content": "Let me write the whole module again. " * (size // 4),
            "tool_calls": [
                {
                    "id": "write",
                    "type": "function",
                    "function": {"name": "write", "arguments": json.dumps({"text": text})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "write", "content": "written"},
    ]


def test_an_answer_the_window_cannot_hold_is_cleared_and_stays_retrievable() -> None:
    # The last call's answer is kept whole by every clearing and compaction: alone larger than
    # the window, it is the one thing left to shorten before the session cannot go on.
    from ctxpack.store import open_store

    store = open_store("memory://")
    session = Session.open("big-answer", store=store, counter=COUNTER, window=2_000)
    session.extend([SYSTEM, TASK, *step(0), *_writes(600)])
    answer = session.transcript()[-2]
    assert COUNTER.count_message(answer) > 2_000
    result = session.render()
    policy = session.window
    assert policy is not None and result.tokens <= policy.window - policy.reserve
    ids = [m.id for m in result.messages]
    sent = result.messages[ids.index(answer.id)]
    # The call keeps its id and name, so the result after it still answers it.
    assert sent.tool_calls is not None
    assert [(c.id, c.function.name, c.function.arguments) for c in sent.tool_calls] == [
        ("write", "write", "{}")
    ]
    assert result.messages[ids.index(answer.id) + 1].tool_call_id == "write"
    assert isinstance(sent.content, str)
    note = re.fullmatch(ORIGINAL_NOTE, sent.content)
    assert note is not None and "answer" in sent.content
    assert json.loads(session.store.get(note[1])) == answer.model_dump(mode="json")
    assert result.original(answer.id) == answer
    (cleared,) = [
        d for d in result.decisions if d.message_id == answer.id and d.action == "cleared"
    ]
    assert cleared.stage == "window" and note[1] in cleared.reason
    assert session.window_state.events[-1].action == "emergency"
    assert result.to_anthropic()["messages"] and result.to_openai()
    # Cleared once: the next requests send it the same way, here and in another process.
    events = len(session.window_state.events)
    assert session.render().messages == result.messages
    assert len(session.window_state.events) == events
    other = Session.open("big-answer", store=store, counter=COUNTER, window=2_000)
    assert other.render().messages == result.messages


def test_a_window_larger_than_the_models_warns(recwarn: pytest.WarningsRecorder) -> None:
    with pytest.warns(UserWarning, match=r"window=200000 is larger than .*'gpt-4o' \(128000"):
        Session(model="gpt-4o", window=200_000)
    recwarn.clear()
    # Within it, or a model whose window the price table does not know: nothing to say.
    Session(model="gpt-4o", window=128_000)
    Session(model="gpt-4", window=200_000)
    Session(counter=COUNTER, window=200_000)
    assert not [w for w in recwarn if "context window" in str(w.message)]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"window": "64k"}, "window must be a number of tokens"),
        ({"window": 100}, "window"),
        ({"window": 64_000, "pipeline": ctxpack.Pipeline([])}, "window or a pipeline"),
        ({"window_state": {"requests": 1}}, "window_state must be a WindowState"),
    ],
)
def test_bad_window_options_are_config_errors(options: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        Session(**options)


def test_policy_checks_its_fields() -> None:
    with pytest.raises(ValueError, match="reply_room"):
        WindowPolicy(window=4_000, reply_room=4_000)
    with pytest.raises(ValueError, match="clear_at"):
        WindowPolicy(window=4_000, clear_at=0.9, compact_at=0.5)
    with pytest.raises(ValueError, match="no price for model 'no-such-model'"):
        WindowPolicy(window=4_000, model="no-such-model")
    with pytest.raises(ValueError, match="managed_room"):
        WindowPolicy(window=4_000, managed_room=10)
    for share in (0, 1, 1.5, "half"):
        with pytest.raises(ConfigError, match="instructions_share"):
            WindowPolicy(window=4_000, instructions_share=share)


def test_render_takes_no_budget_in_managed_mode() -> None:
    session = Session(window=8_000)
    session.append(TASK)
    with pytest.raises(ConfigError, match="no budget"):
        session.render(budget=1_000)


def test_pin_checks_its_arguments() -> None:
    with pytest.raises(ConfigError, match="name"):
        Session().pin("text", name="")
    with pytest.raises(ConfigError, match="kind"):
        Session().pin("text", name="x", kind="rule")  # type: ignore[arg-type]


def test_a_huge_assistant_message_is_compacted_rather_than_sent() -> None:
    session = Session(counter=COUNTER, filters=False, window=8_000)
    session.extend([SYSTEM, TASK, *step(0), *step(1)])
    session.append({"role": "assistant", "content": "THOUGHT: " + "long reasoning " * 3_000})
    session.append({"role": "user", "content": "Please give exactly one command."})
    result = session.render()
    assert result.tokens <= 8_000 - session.window.reserve
    assert result.messages[-1].text == "Please give exactly one command."


def test_the_summary_names_what_the_summarised_tool_outputs_showed() -> None:
    # The probes' values appear only in tool outputs: once those are summarised, the summary
    # still names the latest ones (the oldest go first when the index passes its budget).
    session = Session(counter=COUNTER, filters=False, window=8_000)
    results = run(session, 40)
    state = session.window_state
    assert state.summary is not None
    assert "## Identifiers, paths and numbers seen in tool outputs" in state.summary
    summarised = [m for m in session.transcript() if m.id in set(state.compacted)]
    last_tool = [m for m in summarised if m.role == "tool"][-1]
    seen = state.summary.rsplit("seen in tool outputs\n", 1)[1]
    last_values = [w for w in last_tool.text.split() if w.startswith("value_")]
    assert any(v in seen for v in last_values)
    # Nothing else in the request holds them: the outputs are gone, the index names them.
    others = "\n".join(m.text for m in results[-1].messages if m.id != state.summary_id)
    assert not any(v in others for v in last_values)


def test_long_instructions_do_not_make_it_compact_at_every_request() -> None:
    # Instructions stay verbatim; when they take much of the room, the summary gets less of it,
    # so that a compaction leaves room to grow instead of rewriting the cache at every request.
    session = Session(counter=COUNTER, filters=False, window=8_000)
    session.extend([SYSTEM, TASK])
    for i in range(60):
        session.render()
        session.extend(step(i))
        if i % 6 == 0:
            session.append(
                {"role": "user", "content": f"Task {i}: " + "keep probe_x stable. " * 40}
            )
    compacted = [e.request for e in session.window_state.events if e.action == "compacted"]
    assert len(compacted) >= 3
    assert all(b - a > 1 for a, b in itertools.pairwise(compacted))


def test_fit_digest_keeps_the_latest_lines_within_the_budget() -> None:
    digest = "## Commands run\n" + "\n".join(f"- `cmd {i}`" for i in range(300))
    digest += "\n\n## Identifiers, paths and numbers named\n" + ", ".join(
        f"name_{i}" for i in range(300)
    )
    short = fit_digest(digest, 200, COUNTER)
    assert COUNTER.count(short) <= 200
    assert "- `cmd 299`" in short and "name_299" in short
    assert "- `cmd 0`" not in short
    assert fit_digest("## Plan\n- a", 100, COUNTER) == "## Plan\n- a"


def test_a_compacted_request_is_valid_for_both_providers() -> None:
    session = Session(counter=COUNTER, filters=False, window=8_000)
    results = run(session, 30)
    assert session.window_state.compacted
    ctxpack.adapters.validate_openai(results[-1].to_openai())
    ctxpack.adapters.validate_anthropic(results[-1].to_anthropic())
    assert isinstance(results[-1].messages[0], Message)


def test_a_changed_model_tool_set_or_system_prompt_is_a_cache_warning() -> None:
    session = Session(counter=COUNTER, filters=False)
    session.extend([SYSTEM, TASK])
    tool = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}
    first = session.render(tools=[tool])
    assert not [d for d in first.decisions if d.action == "warned"]
    same = session.render(tools=[tool])
    assert not [d for d in same.decisions if d.action == "warned"]
    session.model = "claude-sonnet-4-5"
    moved = session.render(tools=[tool])
    (warning,) = [d for d in moved.decisions if d.action == "warned"]
    assert "the model changed from None to 'claude-sonnet-4-5'" in warning.reason
    assert warning.tokens_before == moved.tokens and f"{moved.tokens} tokens" in warning.reason
    retooled = session.render(tools=[])
    assert "the tool definitions changed" in retooled.decisions[-1].reason
    assert retooled.decisions[-1].message_id == retooled.messages[0].id


@settings(max_examples=25, deadline=None)
@given(
    window=st.integers(min_value=3_000, max_value=20_000),
    sizes=st.lists(st.integers(min_value=0, max_value=120), min_size=5, max_size=60),
    # Each note up to a tenth of the window (a word is four tokens): ten of them pass the share.
    instructions=st.dictionaries(
        st.integers(min_value=0, max_value=29), st.floats(min_value=0, max_value=0.1), max_size=10
    ),
    managed_room=st.one_of(st.none(), st.integers(min_value=1_000, max_value=20_000)),
)
@example(  # user notes that together pass instructions_share: the oldest are summarised
    window=3_000, sizes=[5] * 30, instructions=dict.fromkeys(range(10), 0.1), managed_room=None
)
def test_the_promise_holds_on_random_sessions(
    window: int, sizes: list[int], instructions: dict[int, float], managed_room: int | None
) -> None:
    """Every request fits the window less the reply room, and holds the system prompt, the task
    and every other user message verbatim, but those summarised once together they passed
    ``instructions_share`` of the room; between two recorded edits it only grows at its end."""
    policy = WindowPolicy(window=window, managed_room=managed_room)
    session = Session(counter=COUNTER, filters=False, window=policy)
    session.extend([SYSTEM, TASK])
    room = window - session.window.reserve
    previous: list[Message] = []
    for i, lines in enumerate(sizes):
        result = session.render()
        assert result.tokens <= room
        sent = [m.text for m in result.messages]
        assert sent[:2] == [SYSTEM["content"], TASK["content"]]
        released = set(session.window_state.compacted)
        users = [m for m in session.transcript() if m.role == "user"]
        assert all(m.text in sent or m.id in released for m in users)
        edits = {e.request for e in session.window_state.events}
        if session.window_state.requests - 1 not in edits:
            assert result.messages[: len(previous)] == previous
        previous = result.messages
        session.extend(step(i, lines))
        if i in instructions:
            words = " ".join(f"w{i}_{k}" for k in range(int(instructions[i] * window / 4)))
            session.append({"role": "user", "content": f"Note {i}: keep going. {words}"})


def test_a_stored_session_takes_the_window_options() -> None:
    from ctxpack.store import open_store

    session = Session.open(
        "w", store=open_store("memory://"), counter=COUNTER, window=8_000, tools_on_demand=True
    )
    session.extend([SYSTEM, TASK])
    assert session.window is not None and session.window.window == 8_000
    assert session.render().tokens <= 8_000 - session.window.reserve


def test_a_compaction_waits_until_it_pays_for_its_cache_write() -> None:
    # Each request re-sends what a compaction would remove; past compact_at it goes once that
    # has cost the cache write it causes, so compactions are rare and large even when every
    # step is large for the window.
    session = Session(counter=COUNTER, filters=False, window=8_000)
    results = run(session, 60)
    compacted = [e.request for e in session.window_state.events if e.action == "compacted"]
    assert len(compacted) >= 3
    assert min(b - a for a, b in itertools.pairwise(compacted)) >= 3
    room = session.window.room(tool_tokens=0)
    assert max(r.tokens for r in results) <= room


def premiums(p: Price, rewritten: int, after: int, carried: Sequence[int]) -> list[float]:
    """What a compaction rewriting ``rewritten`` tokens costs, at each request of ``carried``
    (their prompt tokens; the request before them left ``after``), over that request sent
    unedited with the cache warm: the tokens it writes instead of reading, at the write price
    less the read price. Those appended since the request before are written either way."""
    tokens = [after, *carried]
    return [
        (p.cache_write_5m - p.cache_read) * max(0, rewritten - (b - a + REPLY_PRIMING))
        for a, b in itertools.pairwise(tokens)
    ]


def test_a_compaction_goes_once_its_rent_since_the_last_one_equals_its_rewrite() -> None:
    # A compaction is certain to come (the window forces it); what costs least is to compact
    # when the reads of what the prompt carries above where the last one left it have cost as
    # much as the next rewrite (the economic order quantity): counted from the last
    # compaction, not from compact_at, and without the clearing's margin of two. The rewrite
    # is priced less what the request appends, which it writes anyway.
    session = Session(counter=COUNTER, filters=False, window=16_000)
    results = run(session, 120)
    p = price("claude-sonnet-4-5")  # what times the edits of a session naming no model
    events = session.window_state.events
    assert len(events) >= 5 and {e.action for e in events} == {"compacted"}
    for last, nxt in itertools.pairwise(events):
        # What a compaction removes is in the messages: the tools are the same every request.
        carried = [r.tokens - r.tool_tokens for r in results[last.request + 1 : nxt.request]]
        carried.append(nxt.tokens_before)
        rents = list(itertools.accumulate(p.cache_read * (t - last.tokens_after) for t in carried))
        premium = premiums(p, last.rewritten, last.tokens_after, carried)
        assert rents[-1] > premium[-1]  # it paid when it went
        assert rents[-2] <= premium[-2]  # and not a request before


def test_thresholds_count_above_the_messages_never_removed() -> None:
    # Long instructions take much of the room; the shares apply to the rest, so a few small
    # steps do not make the session clear or compact what it can barely shrink.
    session = Session(counter=COUNTER, filters=False, window=8_000)
    long_task = {"role": "user", "content": "Keep probe_x stable. " * 500}
    session.extend([SYSTEM, long_task])
    for i in range(8):
        session.render()
        session.extend(step(i, lines=3))
    request = session.render()
    room = session.window.room(tool_tokens=0)
    assert request.tokens > session.window.compact_at * room  # past the old share of the room
    assert session.window_state.events == []


def test_the_summary_leaves_the_commands_to_its_index() -> None:
    session = Session(counter=COUNTER, filters=False, window=8_000)
    run(session, 40)
    state = session.window_state
    assert state.summary is not None and state.index_artifact is not None
    assert "## Commands run" not in state.summary
    index = session.store.get(state.index_artifact)
    assert "python probe_0.py" in index  # the first command, summarised away, is listed there


def test_server_side_policies_default_to_higher_triggers() -> None:
    client = WindowPolicy(window=64_000)
    server = WindowPolicy(window=64_000, server_side=True)
    assert (client.clear_at, client.compact_at, client.keep) == (0.1, 0.35, 20)
    assert (server.clear_at, server.compact_at, server.keep) == (0.35, 0.6, 5)
    given = WindowPolicy(window=64_000, server_side=True, clear_at=0.2, compact_at=0.3, keep=9)
    assert (given.clear_at, given.compact_at, given.keep) == (0.2, 0.3, 9)


@pytest.mark.parametrize("separator", [" ", ", "])
@settings(max_examples=40, deadline=None)
@given(
    lines=st.lists(
        st.text(alphabet="abcxyz_./-(),:`' 0123456789", min_size=1, max_size=60),
        min_size=1,
        max_size=80,
    ),
    names=st.lists(
        st.one_of(
            st.from_regex(r"[a-z_]{1,12}[0-9]{0,4}", fullmatch=True),
            st.integers(min_value=0, max_value=99_999).map(str),
            st.from_regex(r"[a-z]{1,8}(/[a-z_]{1,8}){0,3}\.py", fullmatch=True),
        ),
        max_size=300,
    ),
    budget=st.integers(min_value=20, max_value=600),
)
def test_fit_digest_never_passes_its_budget(
    lines: list[str], names: list[str], budget: int, separator: str
) -> None:
    # Token counts of joined pieces differ from the sum of their counts: the cut is checked on
    # the text it returns. The digests index terms by spaces; a hand-written one by commas.
    digest = "## Files touched\n" + "\n".join(f"- {line}" for line in lines)
    if names:
        digest += "\n\n## Identifiers, paths and numbers seen in tool outputs\n"
        digest += separator.join(names)
    assert COUNTER.count(fit_digest(digest, budget, COUNTER)) <= budget


def test_fit_digest_keeps_more_terms_spaced_than_with_commas() -> None:
    # ", 1725" takes a token more than " 1725": the digests' index is spaced, and the cut counts
    # a spaced term as it is sent, so the same budget keeps a quarter more names.
    terms = [str(n) for n in range(1000, 1800)]
    title = "## Identifiers, paths and numbers seen in tool outputs\n"
    kept = {
        sep: fit_digest(title + sep.join(terms), 400, COUNTER).split("\n")[1].split(sep)
        for sep in (" ", ", ")
    }
    assert kept[" "] == terms[-len(kept[" "]) :]
    assert len(kept[" "]) >= 1.25 * len(kept[", "])


def test_fit_digest_counts_what_it_returns() -> None:
    # ", 1725" is three tokens where "1725" alone is two: counting terms one by one is short.
    digest = "## Plan\n- fix the parser\n\n## Identifiers, paths and numbers seen in tool outputs\n"
    digest += ", ".join(str(n) for n in range(1000, 1800))
    assert COUNTER.count(fit_digest(digest, 500, COUNTER)) <= 500


def test_fit_digest_cuts_a_long_digest_in_about_linear_time() -> None:
    # Each line dropped used to sum every section's remaining lines again to pick the largest:
    # 8,000 lines and 8,000 terms took 1.1 s to fit, 40 times what 1,000 of each took.
    def cost(lines: int) -> float:
        digest = "## Commands run\n" + "\n".join(f"- `ls dir{i}`" for i in range(lines))
        digest += "\n\n## Identifiers, paths and numbers seen in tool outputs\n"
        digest += " ".join(f"name_{i}" for i in range(lines))
        short = fit_digest(digest, 300, COUNTER)  # the lines' counts cached
        assert COUNTER.count(short) <= 300 and short.endswith(f"name_{lines - 1}")
        return cpu_seconds(lambda: fit_digest(digest, 300, COUNTER), repeat=2)

    small, large = cost(1_000), cost(8_000)
    assert large < 25 * max(small, 0.002)


def _long_state(edits: int) -> WindowState:
    return WindowState(
        cleared={f"t{i}": f"art{i}" for i in range(edits)},
        compacted=[f"m{i}" for i in range(edits)],
        decisions=[
            ctxpack.Decision(
                stage="clear",
                action="cleared",
                message_id=f"t{i}",
                reason="cleared: an old tool result",
                tokens_before=900,
                tokens_after=20,
            )
            for i in range(edits)
        ],
        last_fingerprint={"model": "gpt-4o", "tools": None, "system": "abc"},
    )


def test_an_append_costs_the_same_however_many_edits_the_window_made() -> None:
    # Every append (and managed render) copies the window state so that a failure can restore
    # it: a deep copy rebuilt every decision, 32 ms an append after 4,000 edits (4 ms after 500).
    def cost(edits: int) -> float:
        session = Session(model="gpt-4o", window=64_000, window_state=_long_state(edits))
        steps = itertools.count()
        return cpu_seconds(
            lambda: session.append({"role": "user", "content": f"Next step {next(steps)}."}),
            repeat=5,
        )

    cost(10)
    small, large = cost(500), cost(4_000)
    assert large < 3 * max(small, 0.002)


def test_a_failed_append_restores_the_window_state_as_it_was() -> None:
    state = _long_state(3)
    session = Session(model="gpt-4o", window=64_000, window_state=state.model_copy(deep=True))
    with pytest.raises(ctxpack.InvalidMessageError):
        session.extend([{"role": "user", "content": "ok"}, {"role": "nobody", "content": 1}])
    assert session.window_state == state
    session.window_state.cleared["t0"] = "edited"
    session.window_state.compacted.append("m9")
    assert session.window_state != state  # the restored state is the session's own


def test_the_summary_names_a_term_that_only_appears_inside_another() -> None:
    # "323" inside "1323" is not named: the index of names seen compares terms, not substrings.
    from ctxpack.signals.evidence import evidence_terms

    session = Session(counter=COUNTER, filters=False, window=3_000)
    session.extend([SYSTEM, TASK])
    for i in range(30):
        session.render()
        said = "I'll look at row 1323 first." if i == 0 else ""
        shown = "row 323 differs" if i == 20 else ""
        messages = step(i, lines=2)
        messages[0]["content"] = f"THOUGHT: step {i}. {said}"
        messages[1]["content"] += f"\n{shown}"
        session.extend(messages)
    session.render()
    summary = session.window_state.summary
    assert summary is not None and "1323" in summary
    assert "323" in evidence_terms(summary)


def test_a_compaction_keeps_the_output_the_model_has_not_read_yet() -> None:
    # Each output passes the share of the room the tail a compaction keeps may take: the latest
    # one is kept all the same, since the next reply is the model's first look at it.
    session = Session(counter=COUNTER, filters=False, window=8_000)
    session.extend([SYSTEM, TASK])
    compactions = 0
    for i in range(30):
        session.extend(step(i, lines=60))
        before = sum(e.action == "compacted" for e in session.window_state.events)
        sent = [m.text for m in session.render().messages]
        compactions += sum(e.action == "compacted" for e in session.window_state.events) > before
        assert session.transcript()[-1].text in sent
    assert compactions >= 3


def test_by_default_a_clearing_keeps_the_last_twenty_results() -> None:
    # A managed room this large lets results pile up before a compaction is due; the keep is
    # the default one. The session ends before its first compaction, which would summarise
    # the cleared results.
    session = Session(
        counter=COUNTER, filters=False, window=WindowPolicy(window=64_000, managed_room=40_000)
    )
    run(session, 60, lines=15)
    events = session.window_state.events
    assert events and events[0].action == "cleared"  # results piled up before a compaction
    tools = [m for m in session.render().messages if m.role == "tool"]
    cleared = [bool(ORIGINAL_NOTE.search(m.text)) for m in tools]
    assert any(cleared) and not any(cleared[-20:])


def test_where_an_instruction_sits_does_not_change_the_summary() -> None:
    # An instruction is in every request wherever it sits: in the tail a compaction keeps, it
    # takes no room from the summary, which gets what it gets with the instruction at the head.
    note = {"role": "user", "content": "Also keep the probe rows sorted by value. " * 30}
    summaries = []
    for head, tail in (([note], []), ([], [note])):
        session = Session(counter=COUNTER, filters=False, window=8_000)
        session.extend([SYSTEM, TASK, *head, *itertools.chain(*map(step, range(14))), *tail])
        request = session.render()
        assert [e.action for e in session.window_state.events] == ["compacted"]
        assert note["content"] in [m.text for m in request.messages]
        summaries.append(session.window_state.summary)
    assert summaries[0] == summaries[1]


def test_a_compaction_keeps_the_last_results_when_an_instruction_follows_them() -> None:
    # The model has not read the last call's results yet, whatever the user said since.
    note = {"role": "user", "content": "Stop there and sum up what you found."}
    session = Session(counter=COUNTER, filters=False, window=8_000)
    steps = [*itertools.chain(*map(step, range(13))), *step(13, lines=80)]
    session.extend([SYSTEM, TASK, *steps, note])
    request = session.render()
    assert [e.action for e in session.window_state.events] == ["compacted"]
    call, results = session.transcript()[-3:-1]
    sent = {m.id: m.text for m in request.messages}
    assert sent[call.id] == call.text and sent[results.id] == results.text


def test_a_long_answer_without_a_call_is_summarised_when_an_instruction_follows_it() -> None:
    # No call, no results left unread: an agent's runaway answer (it happens: 200k characters
    # in a real session) and the harness's nudge after it do not pin it in every request.
    answer = {"role": "assistant", "content": memory_text(9_000)}
    nudge = {"role": "user", "content": "Please always provide exactly one action."}
    session = Session(counter=COUNTER, filters=False, window=16_000)
    session.extend([SYSTEM, TASK, *itertools.chain(*map(step, range(4))), answer, nudge])
    request = session.render()
    assert request.tokens <= session.window.room(tool_tokens=0)
    assert answer["content"] not in [m.text for m in request.messages]
    assert nudge["content"] in [m.text for m in request.messages]


def memory_text(tokens: int) -> str:
    """A memory file of about ``tokens`` tokens."""
    return "\n".join(f"memory line {j}: keep module_{j} stable" for j in range(tokens // 11))


@pytest.mark.parametrize("kind", ["memory", "skill"])
@pytest.mark.parametrize("window", [16_000, 32_000])
def test_pinned_content_takes_the_room_it_takes_once_re_injected(kind: str, window: int) -> None:
    # Within its budgets, pinned content is in every request after a compaction, as a system
    # prompt is: pinned or in the system prompt, it leaves the same room, so the compactions
    # are as many, land alike and come no earlier, each making the request smaller. (The
    # first one with a pin rewrites the pin in the cache, which a system prompt is not: it
    # waits a little longer to pay for that.)
    policy = WindowPolicy(window=window, skill_budget=window, pinned_budget=window)
    text = memory_text(int(0.7 * policy.room(tool_tokens=0)))
    compactions = []
    for pinned in (True, False):
        session = Session(counter=COUNTER, filters=False, window=policy)
        if pinned:
            session.extend([SYSTEM, TASK])
            session.pin(text, name="CLAUDE.md", kind=kind)  # type: ignore[arg-type]
        else:
            session.extend([{"role": "system", "content": f"{SYSTEM['content']}\n{text}"}, TASK])
        for i in range(30):
            session.render()
            session.extend(step(i, lines=10))
        events = [e for e in session.window_state.events if e.action == "compacted"]
        assert events and all(e.tokens_after < e.tokens_before for e in events)
        compactions.append([(e.request, e.tokens_after) for e in events])
    assert len(compactions[0]) == len(compactions[1])
    for (pinned_at, pinned_after), (system_at, system_after) in zip(*compactions, strict=True):
        assert pinned_at >= system_at
        assert abs(pinned_after - system_after) <= 0.01 * system_after


def test_pinned_content_that_cannot_fit_says_which_budget_to_lower() -> None:
    session = Session(counter=COUNTER, filters=False, window=16_000)
    session.extend([SYSTEM, TASK])
    session.pin(memory_text(9_000), name="CLAUDE.md", kind="memory")
    session.pin(memory_text(6_000), name="deploy")
    with pytest.raises(BudgetExceededError, match="pinned_budget") as info:
        for i in range(10):
            session.render()
            session.extend(step(i))
    pins = [m.id for m in session.transcript() if m.text.startswith("memory line 0")]
    assert set(pins) <= set(info.value.pinned_ids)
    assert info.value.budget == 16_000


@settings(max_examples=50, deadline=None)
# Two memory files of the same text arrive in the tail a compaction keeps whole.
@example(
    window=8_000,
    pins=[("memory", 0.5, 19), ("memory", 0.5, 19), ("skill", 0.5, 0)],
    sizes=[0.0] * 19 + [1.0, 0.0],
)
@given(
    window=st.sampled_from([8_000, 16_000, 32_000]),
    pins=st.lists(
        st.tuples(
            st.sampled_from(["memory", "skill"]),
            st.floats(min_value=0.0, max_value=0.6),
            st.integers(min_value=0, max_value=30),
        ),
        min_size=1,
        max_size=4,
    ),
    sizes=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=10, max_size=40),
)
def test_pinned_content_never_passes_the_window_nor_compacts_twice_in_a_row(
    window: int, pins: list[tuple[str, float, int]], sizes: list[float]
) -> None:
    """With pins of any size and count within its budgets, pinned at any step, no request passes
    the window, and every compaction makes the request smaller and is not followed by another
    at once, but where a pin has just arrived (the outputs stay small for the room the pins
    leave: a large one may need one)."""
    policy = WindowPolicy(window=window, skill_budget=window // 20, pinned_budget=window // 8)
    room = policy.room(tool_tokens=0)
    session = Session(counter=COUNTER, filters=False, window=policy)
    session.extend([SYSTEM, TASK])
    # Memory files are re-injected whole: together they stay within 60% of the room; skills,
    # cut to their budgets when re-injected, each take up to 8% of it as pinned.
    memory = sum(share for kind, share, _ in pins if kind == "memory")
    arrived = set()
    for i, share in enumerate(sizes):
        for k, (kind, size, at) in enumerate(pins):
            if at == i:
                scale = 0.6 / max(0.6, memory) if kind == "memory" else 0.08 / 0.6
                text = memory_text(int(size * room * scale))
                session.pin(text, name=f"pin-{k}", kind=kind)  # type: ignore[arg-type]
                arrived.add(session.window_state.requests)
        assert session.render().tokens <= room
        session.extend(step(i, 2 + int(share * window / 1_000)))
    events = [e for e in session.window_state.events if e.action == "compacted"]
    assert all(e.tokens_after < e.tokens_before for e in events)
    assert all(
        b.request - a.request > 1 or b.request in arrived for a, b in itertools.pairwise(events)
    )


def test_a_compaction_sends_a_text_pinned_twice_in_its_tail_once() -> None:
    # The same memory file pinned twice after the last call: the tail the compaction of that
    # request keeps holds both. The first is sent as a note naming its stored original, and
    # the request carries the text once.
    session = Session(counter=COUNTER, filters=False, window=WindowPolicy(window=8_000))
    session.extend([SYSTEM, TASK])
    for i in range(19):
        session.render()
        session.extend(step(i, lines=2))
    text = memory_text(2_000)
    session.pin(text, name="CLAUDE.md", kind="memory")
    session.pin(text, name="CLAUDE.md", kind="memory")
    first, second = session.transcript()[-2:]
    request = session.render()
    state = session.window_state
    assert [e.action for e in state.events] == ["compacted"]
    assert [m.text for m in request.messages].count(text) == 1
    sent = {m.id: m for m in request.messages}
    assert sent[second.id].text == text
    note = sent[first.id].text
    assert "pinned again below" in note and state.cleared[first.id] in note
    assert request.original(first.id) == first
    deduped = [d for d in state.decisions if d.action == "deduped"]
    assert [d.message_id for d in deduped] == [first.id]
    assert deduped[0].tokens_before == COUNTER.count_message(first)
    assert deduped[0].tokens_after == COUNTER.count_message(sent[first.id])
    assert session.transcript()[-2:] == [first, second]
    # The next request sends the tail as this one did: no second compaction.
    session.extend(step(19, lines=2))
    after = session.render()
    assert len(state.events) == 1
    assert after.messages[: len(request.messages)] == request.messages


def test_a_compaction_measures_its_tail_as_the_request_carries_it() -> None:
    # Resumed right after a clearing with a much smaller window, the session compacts at once.
    # A result cleared before is sent as its placeholder, and the tail kept is measured so: the
    # last keep_recent messages, small as sent, are all kept.
    first = WindowPolicy(window=32_000, keep=0, clear_at=0.35, compact_at=0.6, managed_room=None)
    one = Session(counter=COUNTER, filters=False, window=first)
    one.extend([SYSTEM, TASK])
    for i in range(60):
        one.extend(step(i))
        one.render()
        if one.window_state.events:  # a clearing: every result is now a placeholder
            break
    policy = WindowPolicy(window=4_000, keep=0, keep_recent=4)
    state = WindowState.from_json(one.window_state.to_json())
    two = Session(
        counter=COUNTER, filters=False, window=policy, store=one.store, window_state=state
    )
    two.extend([*one.transcript(), *step(99, lines=2)])
    tail = two.transcript()[-policy.keep_recent :]
    assert sum(m.id in state.cleared for m in tail) == 1
    request = two.render()
    assert [e.action for e in state.events[1:]] == ["compacted"]
    sent = {m.id for m in request.messages}
    assert all(m.id in sent for m in tail)


def test_a_compaction_gives_most_of_its_landing_to_the_summary() -> None:
    # A long task names again what it saw many steps ago: the summary's index keeps those
    # names, a verbatim tail only the last steps. The tail takes at most a quarter of where a
    # compaction lands (midway between clear_at and compact_at above the floor), the summary
    # the rest (it had half: here it takes over 60%).
    policy = WindowPolicy(window=16_000)
    session = Session(counter=COUNTER, filters=False, window=policy)
    requests = run(session, 30)
    first = next(e for e in session.window_state.events if e.action == "compacted")
    sent = requests[first.request].messages
    [at] = [i for i, m in enumerate(sent) if m.id.startswith("summary-")]
    floor = COUNTER.count_messages([SYSTEM, TASK])
    usable = min(policy.room(tool_tokens=0) - floor, policy.managed_room or 0)
    landing = (policy.clear_at + policy.compact_at) / 2 * usable
    tail = sent[at + 1 :]
    assert [m.role for m in tail] == ["assistant", "tool"]  # only the last call and its result
    assert sum(map(COUNTER.count_message, tail)) <= landing / 4
    assert COUNTER.count_message(sent[at]) > 0.6 * landing


def test_skills_pinned_over_the_room_are_re_injected_within_their_budgets_at_once() -> None:
    # Five skills of 7,000 tokens pass a 32k window as pinned; cut to their budgets they fit.
    session = Session(counter=COUNTER, filters=False, window=32_000)
    session.extend([SYSTEM, TASK])
    for k in range(5):
        session.pin(memory_text(7_000), name=f"skill-{k}")
    room = session.window.room(tool_tokens=0)
    for i in range(12):
        request = session.render()
        assert request.tokens <= room
        session.extend(step(i))
    pinned = next(m for m in request.messages if m.id == "ctxpack-pinned")
    assert COUNTER.count(pinned.text) <= session.window.pinned_budget + 100


def crowding_warnings(session: Session) -> list[str]:
    return [d.reason for d in session.window_state.decisions if d.stage == "room"]


def test_a_floor_that_crowds_the_room_is_warned_once_then_again_as_it_grows() -> None:
    policy = WindowPolicy(window=16_000, skill_budget=16_000, pinned_budget=16_000)
    room = policy.room(tool_tokens=0)
    session = Session(counter=COUNTER, filters=False, window=policy)
    session.extend([SYSTEM, TASK])
    session.pin(memory_text(int(0.4 * room)), name="CLAUDE.md", kind="memory")
    for i in range(3):
        session.render()
        session.extend(step(i, lines=5))
    assert crowding_warnings(session) == []  # 40% of the room: no warning
    session.pin(memory_text(int(0.2 * room)), name="deploy")
    for i in range(3, 8):
        session.render()
        session.extend(step(i, lines=5))
    [first] = crowding_warnings(session)  # once, not at every request
    assert "raise window" in first and "pinned_budget" in first
    edits = [
        d for d in session.window_state.decisions if d.stage == "window" and d.action == "warned"
    ]
    assert len(edits) == len(session.window_state.events)  # one per edit, as before
    session.pin(memory_text(int(0.15 * room)), name="review")
    session.render()
    assert len(crowding_warnings(session)) == 2  # it grew by over a tenth of the room
    saved = WindowState.from_json(session.window_state.to_json())
    assert saved.crowded_floor == session.window_state.crowded_floor > room // 2


@pytest.mark.parametrize("window", [128_000, 200_000])
def test_at_a_big_window_requests_stay_within_the_managed_room(window: int) -> None:
    # Re-sending is what costs: a bigger window does not make the prompt bigger, unless asked.
    peaks = {}
    for cap in (20_000, None):
        session = Session(
            counter=COUNTER, filters=False, window=WindowPolicy(window=window, managed_room=cap)
        )
        requests = run(session, 150)
        floor = requests[0].tokens
        peaks[cap] = max(r.tokens for r in requests) - floor
        assert session.window_state.events
    assert peaks[20_000] <= 20_000 < peaks[None]


def test_re_injected_pins_stay_in_the_cache_across_compactions() -> None:
    # Re-injected pins are the same at every compaction: right after the system prompt, before
    # the instructions a compaction moves out of the tail, a prompt cache that keeps every
    # message boundary (OpenAI's) keeps them.
    session = Session(model="gpt-5", counter=COUNTER, filters=False, window=16_000)
    session.extend([SYSTEM, TASK])
    session.pin(memory_text(3_000), name="CLAUDE.md", kind="memory")
    requests = []
    for i in range(80):
        requests.append(session.render())
        session.extend(step(i))
        if i % 10 == 5:
            session.append({"role": "user", "content": f"Note {i}: keep going."})
    compactions = [e for e in session.window_state.events if e.action == "compacted"]
    assert len(compactions) >= 3
    for event in compactions[1:]:
        sent = requests[event.request].messages
        at = [m.id for m in sent].index("ctxpack-pinned")
        assert [m.role for m in sent[:at]] == ["system"]
        summary = next(
            k for k, m in enumerate(sent) if "summary_of" in m.metadata.get("ctxpack", {})
        )
        assert at < summary
        kept = COUNTER.count_messages(sent[: at + 1])
        # OpenAI reads the kept prefix in 128-token increments.
        assert event.rewritten <= event.tokens_after - (kept - kept % 128) + 10


def chat_turn(i: int) -> list[dict[str, Any]]:
    """A chat turn with no tools: the user's words are most of what the session holds."""
    words = " ".join(f"detail_{i}_{j}" for j in range(30))
    return [
        {"role": "user", "content": f"Turn {i}: remember {words}."},
        {"role": "assistant", "content": f"Noted turn {i}."},
    ]


def test_a_chat_whose_user_turns_outgrow_the_window_goes_on() -> None:
    session = Session(counter=COUNTER, filters=False, window=4_000)
    session.extend([SYSTEM, TASK])
    room = session.window.room(tool_tokens=0)
    results = []
    for i in range(150):
        session.extend(chat_turn(i)[:1])
        results.append(session.render())
        session.extend(chat_turn(i)[1:])
    users = sum(COUNTER.count_message(m) for m in session.transcript() if m.role == "user")
    assert users > 3 * session.window.window  # the user messages alone outgrow the window
    assert max(r.tokens for r in results) <= room
    for result in results:
        sent = [m.text for m in result.messages]
        assert sent[:2] == [SYSTEM["content"], TASK["content"]]
        assert sent[-1] == result.messages[-1].text  # the question asked is sent whole
    last = results[-1]
    assert last.messages[-1].text.startswith("Turn 149:")
    state = session.window_state
    summarised = [m for m in session.transcript() if m.role == "user" and m.id in state.compacted]
    assert summarised and TASK["content"] not in {m.text for m in summarised}
    for msg in summarised:
        assert last.original(msg.id).text == msg.text
        [why] = [
            d.reason for d in state.decisions if d.message_id == msg.id and d.action == "merged"
        ]
        assert "instructions_share=0.5" in why
    # The user messages sent whole (but the task) stay within the share of the room.
    kept = [m for m in last.messages[2:] if m.role == "user" and m.id != state.summary_id]
    assert sum(COUNTER.count_message(m) for m in kept) <= 0.5 * room
    # Released in batches: the cache is written again once per so many turns, not at each.
    compacted = [e.request for e in state.events if e.action == "compacted"]
    assert 3 <= len(compacted) <= len(results) / 5
    assert all(b - a > 3 for a, b in itertools.pairwise(compacted))


def test_a_chat_goes_on_the_same_way_from_a_saved_state() -> None:
    one = Session(counter=COUNTER, filters=False, window=4_000)
    one.extend([SYSTEM, TASK])
    for i in range(60):
        one.extend(chat_turn(i))
        one.render()
    assert any(m.role == "user" and m.id in one.window_state.compacted for m in one.transcript())
    two = Session(
        counter=COUNTER,
        filters=False,
        window=4_000,
        store=one.store,
        window_state=WindowState.from_json(one.window_state.to_json()),
    )
    two.extend(one.transcript())
    for i in range(60, 120):
        one.extend(chat_turn(i))
        two.extend(chat_turn(i))
        assert two.render().messages == one.render().messages


def test_without_an_instructions_share_every_user_message_stays_until_none_fits() -> None:
    policy = WindowPolicy(window=4_000, instructions_share=None)
    session = Session(counter=COUNTER, filters=False, window=policy)
    session.extend([SYSTEM, TASK])
    with pytest.raises(BudgetExceededError):
        for i in range(150):
            session.extend(chat_turn(i))
            sent = {m.text for m in session.render().messages}
            assert all(m.text in sent for m in session.transcript() if m.role == "user")
    assert i > 15  # it went on as long as they fit


def test_a_user_message_the_caller_pinned_is_never_summarised_nor_compacts_at_each_request() -> (
    None
):
    session = Session(counter=COUNTER, filters=False, window=8_000)
    room = session.window.room(tool_tokens=0)
    words = " ".join(f"rule_{k}" for k in range(int(0.6 * room / 3)))
    rules = Message(role="user", content=f"House rules: {words}", pinned=True)
    session.extend([SYSTEM, TASK, rules])
    assert COUNTER.count_message(rules) > 0.5 * room
    for i in range(40):
        assert rules.content in [m.text for m in session.render().messages]
        session.extend(step(i, lines=5))
    compacted = [e.request for e in session.window_state.events if e.action == "compacted"]
    assert all(b - a > 1 for a, b in itertools.pairwise(compacted))


def _counting(
    monkeypatch: pytest.MonkeyPatch, module: Any, name: str, calls: list[Any] | None = None
) -> list[Any]:
    """``calls``, where the first argument of every call of ``module.name`` goes from now on."""
    calls = [] if calls is None else calls
    real = getattr(module, name)

    def counted(first: Any, *rest: Any, **kwargs: Any) -> Any:
        calls.append(first)
        return real(first, *rest, **kwargs)

    monkeypatch.setattr(module, name, counted, raising=False)
    return calls


def test_a_render_copies_an_original_only_once_it_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    # A render copied the original of every message ever summarised or cleared, though few are
    # read: the render of a long session took time in proportion to its whole history.
    import ctxpack.result
    import ctxpack.session._render
    from ctxpack.messages import detached

    session = Session(counter=COUNTER, filters=False, window=8_000)
    run(session, 60)
    copied = _counting(monkeypatch, ctxpack.session._render, "detached")
    monkeypatch.setattr(ctxpack.result, "detached", detached, raising=False)
    _counting(monkeypatch, ctxpack.result, "detached", copied)
    result = session.render()
    assert len(result.artifacts) > 60
    assert len(copied) == len(result.messages)  # the request's own copies, no original

    transcript = {m.id: m for m in session.transcript()}
    mid = next(iter(result.artifacts))
    first = result.artifacts[mid]
    assert first == transcript[mid] and len(copied) == len(result.messages) + 1
    # One copy per original and result, as a dict's value: read again, it is the same one.
    assert result.original(mid) is first and result.artifacts.get(mid) is first
    assert dict(result.artifacts)[mid] is first
    assert len(copied) == len(result.messages) + len(result.artifacts)
    assert dict(result.artifacts) == {k: transcript[k] for k in result.artifacts}
    # The result's own: editing it changes neither the session nor the next result.
    first.metadata["seen"] = True
    assert result.artifacts[mid].metadata == {"seen": True}
    assert "seen" not in transcript[mid].metadata
    assert "seen" not in session.transcript()[list(transcript).index(mid)].metadata
    assert "seen" not in session.render().artifacts[mid].metadata
    with pytest.raises(TypeError):
        result.artifacts[mid] = first  # type: ignore[index]
    # Serialised as the dict it was.
    dumped = result.model_dump(mode="json")["artifacts"]
    assert list(dumped) == list(result.artifacts)
    assert dumped[mid] == first.model_dump(mode="json")
    assert json.loads(result.model_dump_json())["artifacts"] == dumped
    assert pickle.loads(pickle.dumps(result)).artifacts == result.artifacts


def test_a_render_reads_the_summarised_history_no_more(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each render looked through every summarised message, three times, for the system prompt,
    # user messages and pinned content it keeps: its time grew with the whole history.
    import ctxpack.managed.view

    session = Session(counter=COUNTER, filters=False, window=8_000)
    run(session, 150)
    assert session.window_state.boundary > 250
    read = _counting(monkeypatch, ctxpack.managed.view, "_pinned_kind")
    quiet = []
    for i in range(150, 170):
        events = len(session.window_state.events)
        del read[:]
        result = session.render()
        if len(session.window_state.events) == events:  # no edit: one request built
            quiet.append((len(read), len(result.messages)))
        session.extend(step(i))
    assert len(quiet) > 5
    # About the messages of the request (and the new ones), not the history's.
    assert all(count <= 3 * sent for count, sent in quiet), quiet


def test_a_compaction_reads_only_the_history_summarised_since_the_one_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each compaction read the whole summarised history again (so that it never summarises a
    # summary): in a long session each cost more than the one before.
    from ctxpack.caches import clear_caches
    from ctxpack.editing import _digest, window_digest

    session = Session(counter=COUNTER, filters=False, window=8_000)
    run(session, 40)
    history = session.transcript()[2:]
    clear_caches()
    read = _counting(monkeypatch, _digest._Digest, "read")
    first = window_digest(history[:30], None)
    whole = window_digest(history, None)
    assert len(read) == len(history)  # the second went on from the first
    assert window_digest(history, None) == whole and len(read) == len(history)
    window_digest(history[1:], None)  # not an extension: read from its start
    assert len(read) == 2 * len(history) - 1
    clear_caches()
    assert window_digest(history, None) == whole
    assert window_digest(history[:30], None) == first
    # A session's compactions, all together, read its history about once.
    del read[:]
    session = Session(counter=COUNTER, filters=False, window=8_000)
    run(session, 150)
    compacted = len(session.window_state.compacted)
    assert sum(e.action == "compacted" for e in session.window_state.events) > 10
    assert len(read) < 1.5 * compacted


def test_a_stored_compaction_reads_the_index_before_it_without_rebuilding_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A compaction's index is stored as the lines it adds to the one before; the next
    # compaction read it back through every index before it, as the originals cleared in
    # between had taken its place as the last original kept whole.
    from ctxpack.persistence import SessionArtifacts

    rebuilt = _counting(monkeypatch, SessionArtifacts, "_rebuilt")
    session = Session.open(
        "rebuilt", store="memory://", counter=COUNTER, filters=False, window=CLEARING
    )
    run(session, 150)
    # Compactions with clearings between them.
    actions = "".join(e.action[:2] for e in session.window_state.events)
    assert actions.count("clco") >= 4
    assert rebuilt == []
    # Another process reads it back through its edits, as before.
    backing = session._backing
    index = session.window_state.index_artifact
    assert backing is not None and index is not None
    other = Session.open(
        "rebuilt", store=backing.store, counter=COUNTER, filters=False, window=CLEARING
    )
    assert other.store.get(index) == session.store.get(index)
    assert rebuilt


@pytest.mark.parametrize("policy", [None, CLEARING], ids=["defaults", "clearing first"])
def test_managed_sessions_send_the_same_requests_with_their_caches_cleared_before_each_render(
    policy: WindowPolicy | None,
) -> None:
    # Renders reuse what earlier renders read (the digest of the summarised history, the marks
    # of the record, the summary message, the originals' snapshot), in caches two sessions
    # rendered in turn share; sessions whose caches are emptied before every render must send,
    # record and hand back exactly the same.
    from ctxpack.caches import clear_caches

    window = 8_000 if policy is None else policy.model_copy(update={"window": 8_000})

    def replay(cold: bool) -> list[Any]:
        sessions = [Session(counter=COUNTER, filters=False, window=window) for _ in range(2)]
        seen: list[Any] = [[], []]
        for session in sessions:
            session.extend([SYSTEM, TASK])
        for i in range(70):
            for k, session in enumerate(sessions):
                if i == 20 + k:
                    session.pin("Always run the linter first.", name="lint", kind="skill")
                if i % 25 == 24:
                    session.append({"role": "user", "content": f"Also check probe {i} twice."})
                if cold:
                    clear_caches()
                result = session.render()
                artifacts = {mid: m.text for mid, m in sorted(result.artifacts.items())}
                decisions = [(d.stage, d.action, d.message_id) for d in result.decisions]
                seen[k].append((result.to_openai(), result.tokens, decisions, artifacts))
                # Two histories of one length with the same system prompt and task, and
                # different steps: neither digest may go on from the other's.
                session.extend(step(i + 1_000 * k))
        for k, session in enumerate(sessions):
            events = session.window_state.events
            assert sum(e.action == "compacted" for e in events) >= 3
            seen[k].append([(e.action, e.tokens_before, e.tokens_after) for e in events])
        return seen

    assert replay(cold=False) == replay(cold=True)


def _parallel(results: int, lines: int) -> list[dict[str, Any]]:
    """One assistant turn calling ``results`` tools at once, and their outputs."""
    calls = [
        {
            "id": f"p{k}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": f"cat part_{k}"})},
        }
        for k in range(results)
    ]
    outputs = [
        {
            "role": "tool",
            "tool_call_id": f"p{k}",
            "content": "\n".join(
                f"part {k} row {j}: value_{k}_{j} = {j * 7}" for j in range(lines)
            ),
        }
        for k in range(results)
    ]
    return [{"role": "assistant", "content": None, "tool_calls": calls}, *outputs]


def test_an_emergency_clears_the_fewest_results_the_oldest_first() -> None:
    # Three results of one parallel call, together over the room: the emergency cleared all
    # three, where clearing the first leaves the other two within it.
    session = Session(counter=COUNTER, filters=False, window=4_000)
    session.extend([SYSTEM, TASK, *_parallel(3, 90)])
    sizes = [COUNTER.count_message(m) for m in session.transcript()[-3:]]
    policy = session.window
    assert policy is not None
    room = policy.window - policy.reserve
    assert sum(sizes) > room > sum(sizes[1:]) + 300
    result = session.render()
    assert result.tokens <= room
    cleared = [d.message_id for d in result.decisions if d.action == "cleared"]
    assert cleared == [session.transcript()[-3].id]
    assert session.window_state.events[-1].action == "emergency"
    sent = {m.id: m for m in result.messages}
    for original in session.transcript()[-2:]:
        assert sent[original.id] == original
    assert result.original(cleared[0]) == session.transcript()[-3]


def test_the_last_tokens_are_those_of_the_request_sent() -> None:
    # A repeated output goes out as a note naming the first; last_tokens counted it whole
    # (663 against the 377 tokens sent).
    session = Session(model="gpt-4", window=100_000)
    session.append({"role": "system", "content": "You are a coding agent."})
    output = "\n".join(f"file{j}.py modified" for j in range(60))
    for i in range(2):
        call = {"name": "bash", "arguments": json.dumps({"command": "git status"})}
        session.append({"role": "user", "content": f"step {i}"})
        session.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{i}", "type": "function", "function": call}],
            }
        )
        session.append({"role": "tool", "tool_call_id": f"c{i}", "content": output})
    result = session.render()
    assert "as in the output of c0 above" in result.messages[-1].text
    sent = session.counter.count_messages(result.messages)
    assert session.window_state.last_tokens == sent == result.tokens - result.tool_tokens


def test_metadata_json_cannot_hold_is_kept_and_the_original_stored_with_a_placeholder() -> None:
    # A session without a store takes any metadata value: a window compacting or clearing the
    # message stores its original whole, the value JSON cannot write named by its type.
    session = Session(counter=COUNTER, filters=False, window=8_000)
    session.extend([SYSTEM, TASK, *step(0), *step(1)])
    huge = {"role": "assistant", "content": "THOUGHT: " + "long reasoning " * 3_000}
    session.append({**huge, "metadata": {"trace": object(), "b": b"\xff"}})
    session.append({"role": "user", "content": "Please give exactly one command."})
    result = session.render()
    mid = session.transcript()[-2].id
    assert mid in session.window_state.compacted
    assert type(result.original(mid).metadata["trace"]) is object
    index = session.store.get(session.window_state.index_artifact)
    line = next(row for row in index.splitlines() if row.startswith(mid + "\t"))
    whole = json.loads(session.store.get(line.rsplit("\t", 1)[1]))
    assert whole["metadata"] == {"trace": "<object, not JSON>", "b": "_w=="}
    assert whole["content"] == huge["content"]


def test_the_stored_original_of_a_message_json_can_hold_is_unchanged() -> None:
    # The placeholder is a fallback only: an original JSON can write keeps its text, and so
    # its artifact id.
    session = Session(counter=COUNTER, filters=False, window=8_000)
    session.extend([SYSTEM, TASK, *step(0), *step(1)])
    huge = {"role": "assistant", "content": "THOUGHT: " + "long reasoning " * 3_000}
    session.append({**huge, "metadata": {"when": "2026-01-01", "n": [1, 2.5, None]}})
    session.append({"role": "user", "content": "Please give exactly one command."})
    session.render()
    msg = session.transcript()[-2]
    text = json.dumps(msg.model_dump(mode="json"), ensure_ascii=False)
    assert session.store.get(ctxpack.store.artifact_id(text)) == text
