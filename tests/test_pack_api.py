"""pack() end to end on a realistic conversation (tests/fixtures/chat.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ctxpack
from ctxpack import ConfigError, count_tokens, pack

CHAT: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "fixtures" / "chat.json").read_text("utf-8")
)
ALL_IDS = [m["id"] for m in CHAT]


def test_everything_fits_when_the_budget_is_roomy() -> None:
    result = pack(CHAT, budget=10_000, model="gpt-4")
    # u1 repeats u3 word for word: the older copy is deduplicated.
    assert result.kept_ids == [i for i in ALL_IDS if i != "u1"]
    assert result.dropped_ids == ["u1"]
    assert result.tokens == count_tokens(result.messages, model="gpt-4")
    assert result.input_tokens == count_tokens(CHAT, model="gpt-4")
    assert result.input_ids == ALL_IDS
    assert (result.budget, result.reserve, result.counter, result.exact) == (
        10_000,
        0,
        "cl100k_base",
        True,
    )


@pytest.mark.parametrize("budget", [60, 80, 100, 140])
def test_tight_budgets(budget: int) -> None:
    result = pack(CHAT, budget=budget, model="gpt-4")
    assert result.tokens == count_tokens(result.messages, model="gpt-4")
    assert result.tokens <= budget
    kept = result.kept_ids
    # System, pinned and the current question survive.
    assert {"sys", "u4", "u5"} <= set(kept)
    # Chronological order.
    assert kept == [i for i in ALL_IDS if i in kept]
    # The tool exchange is kept or dropped whole.
    assert ("a3" in kept) == ("t1" in kept)
    # Every input message has a decision; every dropped one says so.
    for mid in ALL_IDS:
        actions = {d.action for d in result.decisions_for(mid)}
        assert actions, mid
        if mid in result.dropped_ids:
            assert actions & {"dropped", "deduped"}


def test_query_defaults_to_the_last_user_message() -> None:
    assert pack(CHAT, budget=10_000).query == "Why does test_refresh_expired_token fail?"
    assert pack(CHAT, budget=10_000, query="cookies").query == "cookies"
    assert pack([{"role": "system", "content": "x"}], budget=100).query is None


def test_the_query_steers_what_is_kept() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Tell me about the Paris office.", "id": "u1"},
        {"role": "assistant", "content": "The Paris office opens at nine.", "id": "a1"},
        {"role": "user", "content": "And the Berlin warehouse?", "id": "u2"},
        {"role": "assistant", "content": "The Berlin warehouse opens at ten.", "id": "a2"},
        {"role": "user", "content": "Thanks. One more thing.", "id": "u3"},
    ]
    sizes = ctxpack.messages.ensure_messages(history)
    counter = ctxpack.get_counter("gpt-4")
    budget = 3 + counter.count_message(sizes[4]) + counter.count_message(sizes[1]) + 1
    paris = pack(history, budget=budget, model="gpt-4", query="When does the Paris office open?")
    berlin = pack(history, budget=budget, model="gpt-4", query="When does Berlin open?")
    assert "a1" in paris.kept_ids and "a2" not in paris.kept_ids
    assert "a2" in berlin.kept_ids and "a1" not in berlin.kept_ids


def test_decisions_cover_every_input_id() -> None:
    result = pack(CHAT, budget=90, model="gpt-4")
    assert {d.message_id for d in result.decisions} >= set(ALL_IDS)
    assert result.decisions_for("sys")[0].action == "pinned"


def test_citations_are_inherited_in_the_result() -> None:
    result = pack(CHAT, budget=10_000, model="gpt-4")
    a2 = next(m for m in result.messages if m.id == "a2")
    assert a2.source == "acme/login/config/auth.yaml"


def test_report_and_summary() -> None:
    result = pack(CHAT, budget=90, model="gpt-4")
    summary = result.summary()
    assert summary == (
        f"10 messages, {result.input_tokens} tokens -> {len(result.messages)} messages, "
        f"{result.tokens} tokens (budget 90, reserve 0, counter cl100k_base)"
    )
    assert str(result) == summary
    report = result.report()
    lines = report.splitlines()
    assert lines[0].split()[:4] == ["id", "final", "tokens", "actions"]
    assert lines[-1] == summary
    # Continuation lines (a wrapped reason) start with blanks.
    body = {line.split()[0]: line for line in lines[2:-2] if not line.startswith(" ")}
    assert set(body) == set(ALL_IDS)
    assert body["u1"].split()[1] == "deduped"
    assert body["sys"].split()[1] == "kept"
    for mid in result.dropped_ids:
        assert body[mid].split()[1] in ("dropped", "deduped")
        assert body[mid].split()[2].endswith("->0")
    assert all(len(line) <= 120 for line in lines)


def test_report_wraps_reasons_at_word_boundaries() -> None:
    result = pack(CHAT, budget=90, model="gpt-4")
    reasons = {d.message_id: d.reason for d in result.decisions}  # the last one per message
    for width in (60, 80, 120):
        lines = result.report(width=width).splitlines()
        rows: dict[str, list[str]] = {}
        column = lines[0].index("reason")
        for line in lines[2:-2]:
            if not line.startswith(" "):
                current = line.split()[0]
            rows.setdefault(current, []).append(line[column:])
        for mid, parts in rows.items():
            # Every word of the reason is there, whole, in order.
            assert " ".join(parts).split() == reasons[mid].split()
        if width >= 100:  # narrower, the reason column keeps a readable 30 characters
            assert all(len(line) <= width for line in lines[:-1])


def test_a_session_report_has_no_blank_cell_and_no_invented_budget() -> None:
    session = ctxpack.Session(model="gpt-4")
    session.extend(CHAT)
    result = session.render()
    assert result.budget is None
    assert "no budget" in result.summary() and "budget 0" not in result.summary()
    lines = result.report().splitlines()
    for line in lines[2:-2]:
        _id, final, tokens, actions, *reason = line.split()
        assert final == "kept" and "->" in tokens and actions and reason
    assert "kept, not filtered" in result.report()
    assert {d.message_id for d in result.decisions} >= set(result.input_ids)
    assert session.render(budget=500).budget == 500


def test_compressed_originals_are_artifacts() -> None:
    long_log = "\n".join(f"PASSED tests/test_{i}.py::test_case_{i}" for i in range(60))
    long_log += "\nFAILED tests/test_auth.py::test_refresh - expiresAt undefined (auth.py:88)"
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a CI assistant.", "id": "s"},
        {"role": "user", "content": "Run the tests.", "id": "u1"},
        {"role": "assistant", "content": None, "id": "c", "tool_calls": [_call("x")]},
        {"role": "tool", "content": long_log, "tool_call_id": "x", "id": "t"},
        {"role": "user", "content": "Which test failed in auth.py?", "id": "u2"},
    ]
    result = pack(history, budget=300, model="gpt-4")
    assert "t" in result.kept_ids
    original = result.original("t")
    assert original is not None and original.text == long_log
    packed = next(m for m in result.messages if m.id == "t")
    assert "FAILED tests/test_auth.py" in packed.text
    (compressed,) = [d for d in result.decisions_for("t") if d.action == "compressed"]
    assert compressed.tokens_after is not None and compressed.tokens_before is not None
    assert compressed.tokens_after < compressed.tokens_before
    assert result.original("s") is None


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "run", "arguments": "{}"}}


@pytest.mark.parametrize("budget", [0, -5, 1.5, "100", True, None])
def test_invalid_budget(budget: Any) -> None:
    with pytest.raises(ConfigError, match="budget must be a positive int"):
        pack(CHAT, budget=budget)


@pytest.mark.parametrize("reserve", [-1, 100, 500, 2.0, True])
def test_invalid_reserve(reserve: Any) -> None:
    with pytest.raises(ConfigError, match=r"reserve must be an int in \[0, budget\)"):
        pack(CHAT, budget=100, reserve=reserve)


def test_reserve_is_honoured() -> None:
    result = pack(CHAT, budget=150, reserve=40, model="gpt-4")
    assert result.tokens <= 110
    assert result.reserve == 40


def test_budget_too_small_for_the_pinned_messages() -> None:
    with pytest.raises(ctxpack.BudgetExceededError) as info:
        pack(CHAT, budget=30, model="gpt-4")
    err = info.value
    assert err.budget == 30
    assert err.required > 30
    assert err.pinned_ids == ["sys", "u4", "u5"]


def test_a_budget_taken_by_the_tools_says_so() -> None:
    tool = {
        "type": "function",
        "function": {"name": "lookup", "description": "look it up " * 60, "parameters": {}},
    }
    tool_tokens = count_tokens([], tools=[tool]) - count_tokens([])
    with pytest.raises(ctxpack.BudgetExceededError) as info:
        pack([{"role": "user", "content": "hi"}], budget=tool_tokens, tools=[tool])
    err = info.value
    assert err.tool_tokens == tool_tokens and err.required > tool_tokens
    assert f"with the tool definitions ({tool_tokens} tokens)" in str(err)
    assert "send fewer tools" in str(err)
    with pytest.raises(ctxpack.BudgetExceededError) as without:
        pack(CHAT, budget=30, model="gpt-4")
    assert without.value.tool_tokens == 0 and "tool" not in str(without.value)


def test_invalid_message_is_reported_with_its_index() -> None:
    bad = [*CHAT[:3], {"role": "wizard", "content": "zap"}]
    with pytest.raises(ctxpack.InvalidMessageError) as info:
        pack(bad, budget=100)
    assert (info.value.index, info.value.field) == (3, "role")
    assert str(info.value).startswith("message 3: role")
    assert "'wizard' is not one of system, developer, user, assistant, tool" in str(info.value)


def test_inputs_are_not_mutated_and_messages_accepted() -> None:
    messages = ctxpack.messages.ensure_messages(CHAT)
    dumped = [m.model_dump() for m in messages]
    by_dict = pack(CHAT, budget=90, model="gpt-4")
    by_msg = pack(messages, budget=90, model="gpt-4")
    assert by_dict == by_msg
    assert [m.model_dump() for m in messages] == dumped


def test_to_openai_round_trip() -> None:
    result = pack(CHAT, budget=10_000, model="gpt-4")
    payload = result.to_openai()
    assert [m["role"] for m in payload] == [m.role for m in result.messages]
    assert count_tokens(payload, model="gpt-4") == result.tokens


def test_repacking_sees_messages_edited_in_place() -> None:
    # Conversions are cached per dict; an edit made in place between two packs must show.
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief.", "id": "s"},
        {"role": "user", "content": "The code word is apple.", "id": "u1"},
        {"role": "user", "content": [{"type": "text", "text": "nested part"}], "id": "u2"},
        {"role": "user", "content": "What is the code word?", "id": "q"},
    ]
    first = ctxpack.pack(history, budget=200, model="gpt-4")
    history[1]["content"] = "The code word is banana."
    history[2]["content"][0]["text"] = "edited nested part"
    second = ctxpack.pack(history, budget=200, model="gpt-4")
    texts = {m.id: m.text for m in second.messages}
    assert texts["u1"] == "The code word is banana."
    assert texts["u2"] == "edited nested part"
    assert {m.id: m.text for m in first.messages}["u1"] == "The code word is apple."


def test_an_invalid_edit_is_caught_on_repack() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "hi", "id": "u"}]
    ctxpack.pack(history, budget=50, model="gpt-4")
    history[0]["role"] = "wizard"
    with pytest.raises(ctxpack.InvalidMessageError, match="message 0: role"):
        ctxpack.pack(history, budget=50, model="gpt-4")
