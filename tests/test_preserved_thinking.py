"""Preserved thinking: a managed window, pack() and render(budget=...) never send a thinking
block whose prefix changed."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack import (
    BudgetExceededError,
    ConfigError,
    Message,
    PackResult,
    Session,
    from_anthropic,
    get_counter,
    pack,
)
from ctxpack.managed import WindowPolicy
from ctxpack.providers import preserves_thinking

COUNTER = get_counter(counter="cl100k_base")
SYSTEM = {"role": "system", "content": "You are a coding agent. Never push to main."}
TASK = {"role": "user", "content": "Fix the flaky test in tests/test_cache.py; keep the API."}
PRESERVED = "claude-sonnet-5-5"
PREFIX_CHECK = "thinking blocks cleared (prefix check"


def _thinks(msg: Message) -> bool:
    return isinstance(msg.content, list) and any(
        part.get("type") in ("thinking", "redacted_thinking") for part in msg.content
    )


def _json(messages: list[Message]) -> str:
    return json.dumps([m.model_dump(mode="json") for m in messages], sort_keys=True)


def _turn(i: int, words: int, lines: int, call: bool) -> list[dict[str, Any]]:
    """An assistant turn with thinking, then a tool call and its result (or a text answer and
    a user note)."""
    thinking = {
        "type": "thinking",
        "thinking": " ".join(f"idea_{i}_{k}" for k in range(words)),
        "signature": f"sig{i}",
    }
    if not call:
        return [
            {
                "role": "assistant",
                "id": f"a{i}",
                "content": [thinking, {"type": "text", "text": "ok"}],
            },
            {"role": "user", "content": f"Note {i}: go on."},
        ]
    output = "\n".join(f"probe {i} row {j}: value_{i}_{j}" for j in range(lines))
    return [
        {
            "role": "assistant",
            "id": f"a{i}",
            "content": [
                thinking,
                {"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"cmd": f"ls {i}"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": output}],
        },
    ]


def _session(
    model: str, window: int, keep_thinking: int | None, turns: list[Any], compact_at: float = 0.35
) -> list[Any]:
    """Run a managed session as an agent does (render, then append the reply), checking every
    request as the API does: each thinking block sent back must follow exactly the request
    that produced it. Returns each render's result."""
    policy = WindowPolicy(
        window=window, keep_thinking=keep_thinking, clear_at=0.3, compact_at=compact_at, keep=2
    )
    session = Session(model=model, counter=COUNTER, filters=False, window=policy)
    session.extend([SYSTEM, TASK])
    produced: dict[str, str] = {}  # assistant id -> the request it answered, as JSON
    results = []
    for i, (words, lines, call) in enumerate(turns):
        result = session.render()
        results.append(result)
        for k, msg in enumerate(result.messages):
            if msg.role == "assistant" and _thinks(msg) and model == PRESERVED:
                assert _json(result.messages[:k]) == produced[msg.id], (
                    f"request {i}: the thinking of {msg.id} follows a changed prefix"
                )
        state = session.window_state
        if i > 0 and all(e.request != state.requests - 1 for e in state.events):
            # Produced after every earlier edit, the last turn's thinking stays.
            assert _thinks(next(m for m in result.messages if m.id == f"a{i - 1}"))
        produced[f"a{i}"] = _json(result.messages)
        session.extend(_turn(i, words, lines, call))
    results.append(session.render())
    return results


TURNS = st.lists(
    st.tuples(st.integers(5, 150), st.integers(1, 60), st.booleans()), min_size=3, max_size=25
)


@settings(max_examples=60, deadline=None)
@given(
    window=st.integers(2_000, 6_000),
    keep_thinking=st.sampled_from([None, 0, 1, 3]),
    turns=TURNS,
    # Late compaction: clearing batches, then emergencies, do most of the edits.
    compact_at=st.sampled_from([0.35, 0.9]),
)
def test_no_thinking_block_follows_an_edited_prefix(
    window: int, keep_thinking: int | None, turns: list[Any], compact_at: float
) -> None:
    """On a model with preserved thinking, every thinking block a request carries comes right
    after the very messages of the request that produced it (the API's prefix check)."""
    results = _session(PRESERVED, window, keep_thinking, turns, compact_at)
    assert all(r.tokens <= window - WindowPolicy(window=window).reserve for r in results)


@settings(max_examples=30, deadline=None)
@given(
    window=st.integers(2_000, 6_000), keep_thinking=st.sampled_from([None, 0, 1, 3]), turns=TURNS
)
def test_without_preserved_thinking_only_the_batches_clear_thinking(
    window: int, keep_thinking: int | None, turns: list[Any]
) -> None:
    """On another model, thinking goes only with the batches that clear it (old turns past
    ``keep_thinking``, or an emergency), never for the prefix check."""
    results = _session("claude-sonnet-4-5", window, keep_thinking, turns)
    reasons = [d.reason for d in results[-1].decisions if d.stage == "window"]
    assert not any(r.startswith(PREFIX_CHECK) for r in reasons)


def test_an_edit_clears_the_thinking_of_every_later_turn_once() -> None:
    """A clearing of old thinking on a model with preserved thinking clears every later
    turn's in the same request, each a decision naming the prefix check; the next turn's
    thinking, produced after the edit, stays."""
    session = Session(
        model=PRESERVED,
        counter=COUNTER,
        filters=False,
        window=WindowPolicy(window=8_000, keep_thinking=1, clear_at=0.35, compact_at=0.6, keep=5),
    )
    session.extend([SYSTEM, TASK])
    for i in range(30):
        result = session.render()
        session.extend(_turn(i, 60, 40, call=True))
    result = session.render()
    state = session.window_state
    prefix = [d for d in state.decisions if d.reason.startswith(PREFIX_CHECK)]
    assert prefix and all((d.tokens_after or 0) < (d.tokens_before or 0) for d in prefix)
    assert len(state.thinking_cleared) == len(set(state.thinking_cleared))
    edited = {e.request for e in state.events}
    if state.requests - 1 not in edited:
        assert _thinks(next(m for m in result.messages if m.id == "a29"))


def test_the_policy_can_force_preserved_thinking_on_or_off() -> None:
    assert preserves_thinking("claude-sonnet-5-5-20261001")
    assert preserves_thinking("us.anthropic.claude-opus-5-5-20261001-v1:0")
    assert not preserves_thinking("claude-sonnet-4-5") and not preserves_thinking(None)
    on = WindowPolicy(window=8_000, preserved_thinking=True)
    off = WindowPolicy(window=8_000, preserved_thinking=False)
    assert on.checks_thinking_prefix("gpt-4o") and not off.checks_thinking_prefix(PRESERVED)
    assert WindowPolicy(window=8_000).checks_thinking_prefix(PRESERVED)


def test_a_changed_system_prompt_or_tool_set_says_earlier_thinking_becomes_invalid() -> None:
    tool = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}
    reasons = {}
    for model in (PRESERVED, "claude-sonnet-4-5"):
        session = Session(model=model, counter=COUNTER, filters=False, window=8_000)
        session.extend([SYSTEM, TASK])
        session.render(tools=[tool])
        session.extend(_turn(0, 20, 5, call=True))
        retooled = session.render(tools=[])
        reasons[model] = [d.reason for d in retooled.decisions if d.stage == "cache"][-1]
    assert "the tool definitions changed" in reasons[PRESERVED]
    assert "prefix check" in reasons[PRESERVED] and "as a message" in reasons[PRESERVED]
    assert "prefix check" not in reasons["claude-sonnet-4-5"]


def test_a_changed_tool_set_warns_of_thinking_held_in_litellms_shape() -> None:
    # LiteLLM returns Claude's thinking beside an OpenAI-shaped message (thinking_blocks, and
    # its text as reasoning_content); the prefix check refuses those blocks just the same.
    tool = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    block = {"type": "thinking", "thinking": "Run the tests first.", "signature": "sig"}
    for beside in ({"thinking_blocks": [block]}, {"reasoning_content": "Run the tests first."}):
        session = Session(model=PRESERVED, counter=COUNTER, filters=False, window=8_000)
        session.extend([SYSTEM, TASK])
        session.render(tools=[tool])
        turn = {"role": "assistant", "content": None, "tool_calls": [call], **beside}
        session.extend([turn, {"role": "tool", "tool_call_id": "c1", "content": "3 failed"}])
        retooled = session.render(tools=[])
        reason = [d.reason for d in retooled.decisions if d.stage == "cache"][-1]
        assert "prefix check" in reason, beside


# ------------------------------------------------------------- pack() and render(budget=...)

OTHER = "claude-sonnet-4-5"


def _history(turns: list[Any]) -> list[Message]:
    """An agent's history (system, task, then ``turns`` as :func:`_turn` makes them) as
    messages, every assistant turn with thinking."""
    items: list[Any] = [TASK]
    for i, (words, lines, call) in enumerate(turns):
        items += _turn(i, words, lines, call)
    items.append({"role": "user", "content": "Go on."})
    return list(from_anthropic(items, system=str(SYSTEM["content"])))


def _first_change(sent: list[Message], history: list[Message]) -> int:
    """The first position where the request differs from the history (a drop, an edit)."""
    pairs = zip(_dumped(sent), _dumped(history), strict=False)
    return next((k for k, (a, b) in enumerate(pairs) if a != b), min(len(sent), len(history)))


def _dumped(messages: list[Message]) -> list[str]:
    return [json.dumps(m.model_dump(mode="json"), sort_keys=True) for m in messages]


def _check_prefixes(result: PackResult, history: list[Message], preserved: bool) -> None:
    """With ``preserved``, every thinking block sent follows the very messages that preceded it
    in the history, and the turns before the first change keep theirs; else no turn loses its
    thinking. Each turn stripped is a ``cleared`` decision, its original kept."""
    first = _first_change(result.messages, history)
    by_id = {m.id: m for m in history}
    stripped = [m.id for m in result.messages if _thinks(by_id[m.id]) and not _thinks(m)]
    for k, msg in enumerate(result.messages):
        if preserved and _thinks(msg):
            assert _dumped(result.messages[:k]) == _dumped(history[:k]), (
                f"the thinking of {msg.id} follows a changed prefix"
            )
        if k < first:
            assert _thinks(msg) == _thinks(history[k]), f"{msg.id} lost its thinking"
    if not preserved:
        assert not stripped
    cleared = [d for d in result.decisions if d.reason.startswith(PREFIX_CHECK)]
    # A turn cleared before a second packing may then go: cleared, then dropped.
    sent = {m.id for m in result.messages}
    assert sorted(d.message_id for d in cleared if d.message_id in sent) == sorted(stripped)
    assert len({d.message_id for d in cleared}) == len(cleared)
    for d in cleared:
        assert d.action == "cleared" and (d.tokens_after or 0) < (d.tokens_before or 0)
        original = result.original(d.message_id)
        assert original is not None and _thinks(original)
        if d.message_id not in sent:
            assert result.decisions_for(d.message_id)[-1].action in ("dropped", "deduped")
    # Each message's first count (what report() shows) is of the message as given.
    for m in history:
        counts = [d.tokens_before for d in result.decisions_for(m.id) if d.tokens_before]
        assert not counts or counts[0] == COUNTER.count_message(m), m.id


@settings(max_examples=60, deadline=None)
@given(
    turns=TURNS,
    share=st.floats(0.05, 1.1),
    reserve=st.integers(0, 50),
    model=st.sampled_from([PRESERVED, OTHER]),
)
def test_pack_sends_no_thinking_block_after_a_dropped_message(
    turns: list[Any], share: float, reserve: int, model: str
) -> None:
    """pack() on a model with preserved thinking sends no thinking block after a message it
    dropped or changed (and keeps the thinking before it); on another model no thinking goes.
    The packer's promises hold: within the budget, in order, the same result for the same
    input, the input untouched, every message decided."""
    history = _history(turns)
    before = _dumped(history)
    budget = max(reserve + 1, int(COUNTER.count_messages(history) * share))
    try:
        result = pack(history, budget=budget, reserve=reserve, counter=COUNTER, model=model)
    except BudgetExceededError:
        return
    assert _dumped(history) == before
    assert result.tokens <= budget - reserve
    assert result.tokens == COUNTER.count_messages(result.messages)
    order = [m.id for m in history]
    positions = [order.index(m.id) for m in result.messages]
    assert positions == sorted(positions)
    assert {d.message_id for d in result.decisions} >= set(order)
    kept = set(result.kept_ids)
    assert {history[0].id, history[-1].id} <= kept  # the system prompt, the current question
    calls = {c.id for m in result.messages for c in m.tool_calls or ()}
    assert calls == {m.tool_call_id for m in result.messages if m.role == "tool"}
    again = pack(history, budget=budget, reserve=reserve, counter=COUNTER, model=model)
    assert _dumped(again.messages) == _dumped(result.messages)
    assert list(again.decisions) == list(result.decisions)
    _check_prefixes(result, history, preserved=model == PRESERVED)
    if model == PRESERVED:
        # Never worse than clearing the thinking after the packing a model without the check
        # gets: as many tokens of the history at least.
        other = pack(history, budget=budget, reserve=reserve, counter=COUNTER, model=OTHER)
        assert result.tokens >= _pass_one(other, history)


def _pass_one(other: PackResult, history: list[Message]) -> int:
    """Tokens of ``other``'s packing (made for a model without the prefix check)
    once the thinking of every turn from its first change on is cleared."""
    first = _first_change(other.messages, history)
    sent = [_cleared(m) if k >= first else m for k, m in enumerate(other.messages)]
    return COUNTER.count_messages(sent)


def _cleared(msg: Message) -> Message:
    """``msg`` without its thinking blocks, unless they are all it holds."""
    if not _thinks(msg) or not isinstance(msg.content, list):
        return msg
    rest = [p for p in msg.content if p.get("type") not in ("thinking", "redacted_thinking")]
    return msg.model_copy(update={"content": rest or None}) if rest or msg.tool_calls else msg


def _agent_history() -> list[Message]:
    return _history([(60, 40, True), (30, 5, False), (60, 40, True), (40, 10, True)])


def test_pack_clears_the_thinking_of_each_turn_after_the_first_drop() -> None:
    history = _agent_history()
    budget = COUNTER.count_messages(history) // 5
    result = pack(history, budget=budget, counter=COUNTER, model=PRESERVED)
    assert result.dropped_ids and result.tokens <= budget
    _check_prefixes(result, history, preserved=True)
    cleared = [d for d in result.decisions if d.reason.startswith(PREFIX_CHECK)]
    assert cleared and all(d.stage == "pack()" for d in cleared)
    kept = pack(history, budget=budget, counter=COUNTER, model=OTHER)
    assert len(kept.messages) <= len(result.messages)
    _check_prefixes(kept, history, preserved=False)


def test_pack_uses_the_room_that_cleared_thinking_frees() -> None:
    """The thinking the prefix check clears no longer counts against the budget: the messages
    dropped to make room for it are kept."""
    history = _agent_history()
    budget = COUNTER.count_messages(history) * 2 // 3
    other = pack(history, budget=budget, counter=COUNTER, model=OTHER)
    assert other.dropped_ids
    result = pack(history, budget=budget, counter=COUNTER, model=PRESERVED)
    assert result.dropped_ids == [] and result.tokens <= budget
    _check_prefixes(result, history, preserved=True)
    assert _pass_one(other, history) < result.tokens
    assert len(other.messages) < len(result.messages)
    # The first turn dropped for the other model is sent, without its thinking.
    first = other.dropped_ids[0]
    assert result.decisions_for(first)[0].action == "cleared"
    assert not _thinks(next(m for m in result.messages if m.id == first))


def test_pack_keeps_every_thinking_block_when_nothing_is_dropped() -> None:
    history = _agent_history()
    result = pack(history, budget=100_000, counter=COUNTER, model=PRESERVED)
    assert _dumped(result.messages) == _dumped(history)


def test_pack_preserved_thinking_overrides_the_model_name() -> None:
    history = _agent_history()
    budget = COUNTER.count_messages(history) * 2 // 3
    on = pack(history, budget=budget, counter=COUNTER, preserved_thinking=True)
    off = pack(history, budget=budget, counter=COUNTER, model=PRESERVED, preserved_thinking=False)
    _check_prefixes(on, history, preserved=True)
    assert any(d.reason.startswith(PREFIX_CHECK) for d in on.decisions)
    _check_prefixes(off, history, preserved=False)
    with pytest.raises(ConfigError, match="preserved_thinking"):
        pack(history, budget=budget, counter=COUNTER, preserved_thinking="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize("model", [PRESERVED, OTHER])
def test_render_with_a_budget_sends_no_thinking_block_after_a_dropped_message(model: str) -> None:
    history = _agent_history()
    session = Session(model=model, counter=COUNTER, filters=False)
    session.extend(history)
    budget = COUNTER.count_messages(history) * 2 // 5
    result = session.render(budget=budget)
    assert result.dropped_ids and result.tokens <= budget
    _check_prefixes(result, history, preserved=model == PRESERVED)
    assert any(d.reason.startswith(PREFIX_CHECK) for d in result.decisions) == (model == PRESERVED)


def test_pack_keeps_the_thinking_after_a_change_no_provider_sees() -> None:
    """The citation step gives the later messages the source of an earlier one, a field no
    provider sees: the prefix is unchanged and every thinking block stays."""
    history = _agent_history()
    history[1] = history[1].model_copy(update={"source": "docs/cache.md"})
    result = pack(history, budget=100_000, counter=COUNTER, model=PRESERVED)
    assert any(d.action == "cited" for d in result.decisions)
    assert [_thinks(m) for m in result.messages] == [_thinks(m) for m in history]
    assert not any(d.reason.startswith(PREFIX_CHECK) for d in result.decisions)
    # What the provider does see counts, the metadata the adapters send included.
    cached = {"anthropic": {"turn": {"cache_control": {"type": "ephemeral"}}}}
    history[1] = history[1].model_copy(update={"metadata": cached})
    edited = pack(history, budget=100_000, counter=COUNTER, model=PRESERVED)
    assert [_thinks(m) for m in edited.messages] == [_thinks(m) for m in history]
    owned = history[1].model_copy(update={"metadata": {**cached, "mine": 1}})

    def tag(ctx: Any) -> Any:
        msgs = list(ctx.messages)
        msgs[1] = owned if msgs[1].metadata.get("mine") is None else msgs[1]
        return ctx.evolve(messages=tuple(msgs))

    tagged = pack(history, budget=100_000, counter=COUNTER, model=PRESERVED, pipeline=tag)
    assert [_thinks(m) for m in tagged.messages] == [_thinks(m) for m in history]
    sent_meta = history[1].model_copy(update={"metadata": {"anthropic": {"turn": {}}}})

    def recache(ctx: Any) -> Any:
        return ctx.evolve(messages=(ctx.messages[0], sent_meta, *ctx.messages[2:]))

    changed = pack(history, budget=100_000, counter=COUNTER, model=PRESERVED, pipeline=recache)
    assert not any(_thinks(m) for m in changed.messages)


def _agent_loop(
    session: Session, replies: list[list[Any]], budget: int | None = None
) -> list[PackResult]:
    """Render (with ``budget``), check the request as the API does (each thinking block sent
    back follows exactly the request that produced it), append the reply; for each of
    ``replies``."""
    produced: dict[str, str] = {}
    results = []
    for i, reply in enumerate([*replies, []]):
        result = session.render(budget=budget)
        results.append(result)
        for k, msg in enumerate(result.messages):
            if msg.role == "assistant" and _thinks(msg):
                assert _json(result.messages[:k]) == produced[msg.id], (
                    f"request {i}: the thinking of {msg.id} follows a changed prefix"
                )
        for item in reply:
            if item["role"] == "assistant":
                produced[item["id"]] = _json(result.messages)
        session.extend(reply)
    return results


def _viewing(i: int, path: str, text: str) -> list[dict[str, Any]]:
    """An assistant turn with thinking that views ``path``, and the view."""
    turn = _turn(i, 20, 1, call=True)
    turn[0]["content"][1]["input"] = {"cmd": f"cat {path}"}
    turn[1]["content"][0]["content"] = text
    return turn


def test_a_superseded_file_view_clears_the_thinking_after_it() -> None:
    """A file view replaced by a note once a later view of the file arrives was sent whole
    before: on a model with preserved thinking no render sends a thinking block after it."""
    text = "\n".join(
        f"    value_{i} = compute({i})  # the cached value of step {i}" for i in range(60)
    )
    replies = [_viewing(i, "src/cache.py", text) for i in range(4)]
    session = Session(model=PRESERVED, counter=COUNTER, supersede_batch=1)
    session.extend([SYSTEM, TASK])
    results = _agent_loop(session, replies)
    assert any(r.kind == "superseded" for r in session.records)
    cleared = [d for d in results[-1].decisions if d.stage == "session" and d.action == "cleared"]
    assert cleared and all("rewritten after it arrived" in d.reason for d in cleared)
    for d in cleared:
        original = results[-1].original(d.message_id)
        assert original is not None and _thinks(original)
    # The turns before the first view keep their thinking.
    assert _thinks(next(m for m in results[-1].messages if m.id == "a0"))
    other = Session(model=OTHER, counter=COUNTER, supersede_batch=1)
    other.extend([SYSTEM, TASK, *[m for r in replies for m in r]])
    assert all(_thinks(m) for m in other.render().messages if m.role == "assistant")


@pytest.mark.parametrize("budget", [None, 100_000])
def test_an_output_filtered_once_answered_clears_the_thinking_after_it(
    budget: int | None,
) -> None:
    """With filter_when="answered" an output is sent whole, then filtered when the agent's
    answer (with its thinking) arrives: that answer's thinking, and every later turn's, no
    longer follows the request that produced it, with or without a budget."""
    log = "\n".join(
        f"INFO worker {i % 7} handled request {i:06x} in {i % 89} ms" for i in range(400)
    )
    replies = [_turn(i, 20, 1, call=True) for i in range(3)]
    for reply in replies:
        reply[1]["content"][0]["content"] = f"{log}\nFAIL tests/test_cache.py::test_ttl"
    session = Session(model=PRESERVED, counter=COUNTER, filter_when="answered")
    session.extend([SYSTEM, TASK])
    results = _agent_loop(session, replies, budget)
    assert any(r.shortened for r in session.records)
    assert _thinks(next(m for m in results[-1].messages if m.id == "a0"))
    assert not _thinks(next(m for m in results[-1].messages if m.id == "a1"))


def test_a_stored_session_remembers_a_rewritten_message(tmp_path: Any) -> None:
    """Another process resuming the session clears the same thinking: which message was
    rewritten after it arrived is stored with the session."""
    text = "\n".join(f"    value_{i} = compute({i})  # the value of step {i}" for i in range(60))
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    options: dict[str, Any] = {"model": PRESERVED, "counter": COUNTER, "supersede_batch": 1}
    writer = Session.open("s1", store=url, **options)
    writer.extend([SYSTEM, TASK, *[m for i in range(3) for m in _viewing(i, "a.py", text)]])
    sent = writer.render()
    assert any(d.stage == "session" and d.action == "cleared" for d in sent.decisions)
    reader = Session.open("s1", store=url, **options)
    assert _json(reader.render().messages) == _json(sent.messages)
