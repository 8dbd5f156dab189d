"""A session's requests follow the provider's rules, whatever it was given: a result whose call
it never saw is left out, so is a second result of one call, a call left without a result has
the call removed, and for Anthropic
(a Claude model, or Anthropic messages) the turns start with the user; each change is a
recorded decision, and the session's own record keeps every message."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

import ctxpack
from ctxpack import Session
from ctxpack.adapters import validate_anthropic, validate_openai
from ctxpack.messages import ensure_messages

from .api_rules import anthropic_problems, openai_problems
from .strategies import Conversation, conversations

USER = {"role": "user", "content": "Why does the build fail?"}
CALL = {
    "role": "assistant",
    "content": "Reading the log.",
    "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
    ],
}
ANSWER = {"role": "tool", "tool_call_id": "c1", "content": "error: missing symbol"}

SESSIONS = {
    "plain": {"model": "gpt-4o"},
    "managed": {"model": "gpt-4o", "window": 64_000},
}
CLAUDE = {
    "plain": {"model": "claude-sonnet-4-5", "counter": "cl100k_base"},
    "managed": {"model": "claude-sonnet-4-5", "counter": "cl100k_base", "window": 64_000},
}


@pytest.mark.parametrize("options", SESSIONS.values(), ids=SESSIONS)
def test_a_result_whose_call_is_not_there_is_left_out_and_says_why(
    options: dict[str, Any],
) -> None:
    session = Session(**options)
    session.extend([USER, {"role": "tool", "tool_call_id": "gone", "content": "42", "id": "t"}])
    result = session.render()
    assert result.to_openai() == [USER]
    last = _last_decision(result, "t")
    assert last.action == "dropped"
    assert "orphan" in last.reason
    assert session.transcript()[-1].id == "t"  # still the session's


@pytest.mark.parametrize(
    "options",
    [*SESSIONS.values(), *CLAUDE.values()],
    ids=["gpt", "gpt-managed", "claude", "claude-managed"],
)
def test_a_second_result_of_one_call_is_left_out_and_says_why(options: dict[str, Any]) -> None:
    """An agent that re-runs a tool may append its result twice (a retry, a result after an
    "aborted" placeholder); both providers refuse a request answering one call twice."""
    session = Session(**options)
    again = {"role": "tool", "tool_call_id": "c1", "content": "error: again", "id": "t2"}
    more = {"role": "tool", "tool_call_id": "c2", "content": "ok"}
    session.extend([USER, CALL, ANSWER, again, more, {"role": "user", "content": "And now?"}])
    result = session.render()
    validate_anthropic(result.to_anthropic())
    validate_openai(result.to_openai())
    sent = [m.content for m in result.messages if m.role == "tool"]
    assert sent == ["error: missing symbol", "ok"]
    last = _last_decision(result, "t2")
    assert last.action == "dropped"
    assert "second result" in last.reason
    assert "t2" in [m.id for m in session.transcript()]  # still the session's


@pytest.mark.parametrize("options", SESSIONS.values(), ids=SESSIONS)
def test_a_call_left_without_result_is_removed_and_its_original_kept(
    options: dict[str, Any],
) -> None:
    session = Session(**options)
    session.extend([USER, {**CALL, "id": "a"}, ANSWER, {"role": "user", "content": "And now?"}])
    result = session.render()
    sent = result.to_openai()
    validate_openai(sent)  # what the provider would check
    assert [c["id"] for c in sent[1]["tool_calls"]] == ["c1"]
    assert _last_decision(result, "a").action == "cleared"
    assert [c.id for c in result.original("a").tool_calls or ()] == ["c1", "c2"]


LATE = [
    {"role": "system", "content": "s"},
    USER,
    {**CALL, "content": None, "id": "a"},
    {"role": "user", "content": "wait"},
    {"role": "assistant", "content": "ok"},
    {**ANSWER, "id": "t"},
    {"role": "user", "content": "go on"},
]


@pytest.mark.parametrize(
    "options",
    [*SESSIONS.values(), *CLAUDE.values()],
    ids=["gpt", "gpt-managed", "claude", "claude-managed"],
)
def test_a_result_after_other_turns_is_left_out_and_its_call_removed(
    options: dict[str, Any],
) -> None:
    """A call's results must follow it at once: one coming after other turns answers nothing,
    and its call, its turn closed without it, is unanswered."""
    session = Session(**options)
    session.extend(LATE)
    result = session.render()
    assert openai_problems(result.to_openai()) == []
    assert anthropic_problems(result.to_anthropic()) == []
    sent = [m.content for m in result.messages if m.role != "system"]
    assert sent == [USER["content"], "wait", "ok", "go on"]
    late = _last_decision(result, "t")
    assert late.action == "dropped"
    # Anthropic's rule in its words: a tool_result answers the assistant turn right before it.
    assert "other turns came between" in late.reason or "right before it" in late.reason
    assert _last_decision(result, "a").action == "dropped"
    assert [m.id for m in session.transcript()][2:6:3] == ["a", "t"]  # still the session's


def test_the_last_call_may_wait_for_its_results() -> None:
    session = Session(model="gpt-4o", window=64_000)
    session.extend([USER, CALL])
    assert session.render().to_openai()[-1]["tool_calls"] == CALL["tool_calls"]


@pytest.mark.parametrize("options", CLAUDE.values(), ids=CLAUDE)
def test_a_claude_session_starts_with_the_user(options: dict[str, Any]) -> None:
    """A chatbot's greeting before the user's first message is not sent to Claude, as pack()
    would not send it; sent to an OpenAI model it stays."""
    greeting = {"role": "assistant", "content": "Hi! How can I help?", "id": "hello"}
    session = Session(**options)
    session.extend([{"role": "system", "content": "Be brief."}, greeting, USER])
    result = session.render()
    validate_anthropic(result.to_anthropic())
    assert _last_decision(result, "hello").action == "dropped"
    assert session.render(provider="openai").to_openai()[1]["content"] == greeting["content"]


def _last_decision(result: ctxpack.PackResult, message_id: str) -> ctxpack.Decision:
    return [d for d in result.decisions if d.message_id == message_id][-1]


def _sendable(sent: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Only a trailing assistant message may wait for its results.
    return sent[:-1] if sent and sent[-1].get("tool_calls") else sent


def _sendable_anthropic(payload: dict[str, Any]) -> dict[str, Any]:
    turns = payload["messages"]
    last = turns[-1]["content"] if turns and turns[-1]["role"] == "assistant" else ""
    if isinstance(last, list) and any(block.get("type") == "tool_use" for block in last):
        turns = turns[:-1]
    return {**payload, "messages": turns}


def _pinned_before_the_user(session: Session) -> bool:
    # A pinned message is never dropped, by any ctxpack step: pinned before the user's first
    # message, it is the caller's to move.
    for message in session.transcript():
        if message.role == "user":
            return False
        if message.pinned and message.role in ("assistant", "tool"):
            return True
    return False


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(conversations())
def test_every_request_pairs_calls_and_results(conv: Conversation) -> None:
    """Random conversations (orphan results among them), plain and managed, for an OpenAI model
    and a Claude one: what is sent passes the provider's rules, and every message given has a
    decision."""
    given_ids = [m.id for m in ensure_messages(conv.items)]
    for options in [*SESSIONS.values(), *CLAUDE.values()]:
        session = Session(**options)
        session.extend(conv.items)
        try:
            result = session.render()
        except ctxpack.BudgetExceededError:
            continue  # instructions over the window: their own error, tested elsewhere
        if options in CLAUDE.values():
            if not _pinned_before_the_user(session):
                validate_anthropic(_sendable_anthropic(result.to_anthropic()))
        else:
            validate_openai(_sendable(result.to_openai()))
        decided = set(result.decisions.message_ids())
        ids = [m.id for m in session.transcript()]
        assert len(ids) == len(given_ids)
        assert set(ids) <= decided


# Programmatic tool calling: the code the model runs calls a client tool, so the server tool's
# call and its result are two assistant turns apart, the client tool's exchange between them.
_CODE_CALL = {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}
_SERVER_THREAD = [
    {"role": "user", "content": "Average the weather in Oslo. " + "lorem ipsum dolor " * 300},
    {
        "role": "assistant",
        "content": [
            {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "code_execution",
                "input": {"code": "print(await get_weather('Oslo'))"},
            },
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {"city": "Oslo"},
                "caller": _CODE_CALL,
            },
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "3 C"}],
    },
    {
        "role": "assistant",
        "content": [
            {
                "type": "code_execution_tool_result",
                "tool_use_id": "srvtoolu_1",
                "content": {
                    "type": "code_execution_result",
                    "stdout": "3 C",
                    "stderr": "",
                    "return_code": 0,
                    "content": [],
                },
            },
            {"type": "text", "text": "It is 3 C. " + "lorem ipsum dolor " * 300},
        ],
    },
    {"role": "user", "content": "And Paris?"},
]


def _server_pairs(payload: dict[str, Any]) -> tuple[list[str], list[str]]:
    blocks = [
        b for m in payload["messages"] if isinstance(m["content"], list) for b in m["content"]
    ]
    uses = [b["id"] for b in blocks if b["type"] == "server_tool_use"]
    results = [
        b["tool_use_id"]
        for b in blocks
        if b["type"].endswith("_tool_result") and b["type"] != "tool_result"
    ]
    return uses, results


@pytest.mark.parametrize("budget", [1_000, 1_500, 2_500, 3_000])
def test_a_server_tool_call_keeps_its_result_turns_later(budget: int) -> None:
    """The API refuses a server_tool_use without its result, and a result without its call:
    both are kept or both left out, though turns apart (the pack of 2,500 tokens sent the call
    and the client tool's exchange without the code_execution_tool_result)."""
    messages = ctxpack.from_anthropic(_SERVER_THREAD)
    payload = ctxpack.pack(messages, budget=budget, model="claude-sonnet-4-5").to_anthropic()
    uses, results = _server_pairs(dict(payload))
    assert uses == results
    validate_anthropic(payload)
    session = Session(model="claude-sonnet-4-5", counter="cl100k_base")
    session.extend(_SERVER_THREAD)
    uses, results = _server_pairs(dict(session.render(budget).to_anthropic()))
    assert uses == results


def _code_calls(*ids: str, run: bool = False) -> dict[str, Any]:
    """An assistant turn of client tool calls the code srvtoolu_1 runs made (and that call)."""
    calls: list[dict[str, Any]] = [
        {"type": "tool_use", "id": i, "name": "get_weather", "input": {}, "caller": _CODE_CALL}
        for i in ids
    ]
    if run:
        use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "code_execution"}
        calls.insert(0, {**use, "input": {"code": "for c in cities: await get_weather(c)"}})
    return {"role": "assistant", "content": calls}


def _rows(call_id: str) -> dict[str, Any]:
    result = {"type": "tool_result", "tool_use_id": call_id, "content": "row " * 400}
    return {"role": "user", "content": [result]}


# The code calls a client tool twice, a turn each, before its result comes.
_TWO_ROUNDS = [
    {"role": "user", "content": "Average the weather. " + "lorem ipsum " * 100},
    _code_calls("toolu_1", run=True),
    _rows("toolu_1"),
    _code_calls("toolu_2"),
    _rows("toolu_2"),
    {
        "role": "assistant",
        "content": [
            _SERVER_THREAD[3]["content"][0],  # the code_execution_tool_result
            {"type": "text", "text": "3 C. " + "sit amet " * 200},
        ],
    },
    {"role": "user", "content": "And Paris?"},
]
_CHAIN = {"srvtoolu_1", "toolu_1", "toolu_2"}


@pytest.mark.parametrize("budget", range(700, 2_100, 200))
def test_the_client_calls_a_server_tools_code_made_go_with_it(budget: int) -> None:
    """The calls the code of a server tool makes, a turn each, are kept or left out with it:
    packs of 700 to 1,100 tokens sent the second without the server_tool_use (its caller), and
    of 1,200 to 1,500 the server tool's call and result without the second round."""
    validate_anthropic(_TWO_ROUNDS)
    messages = ctxpack.from_anthropic(_TWO_ROUNDS)
    session = Session(model="claude-sonnet-4-5", counter="cl100k_base")
    session.extend(_TWO_ROUNDS)
    for result in (
        ctxpack.pack(messages, budget=budget, counter="cl100k_base", provider="anthropic"),
        session.render(budget + 600),  # its tool definitions' tokens too
    ):
        payload = result.to_anthropic()
        blocks = [b for m in payload["messages"] if isinstance(m["content"], list)
                  for b in m["content"]]  # fmt: skip
        sent = {b.get("id") or b.get("tool_use_id") for b in blocks}
        assert sent >= _CHAIN or not _CHAIN & sent, sent
        validate_anthropic(payload)
