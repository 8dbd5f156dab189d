"""Thinking inside a tool loop: behind ``wrap_anthropic``, the assistant turn whose tool calls
the request answers is sent with its thinking blocks as the API returned them, signatures
included, whatever the window did to the history before it (a compaction, a clearing).

With manual extended thinking on, Anthropic refuses a request whose last assistant turn lost
its thinking ("Expected `thinking` or `redacted_thinking`, but found `tool_use`"), the rule
``tests/api_rules.py`` holds every request to.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest

import ctxpack
from ctxpack.managed import WindowPolicy
from tests.api_rules import anthropic_problems
from tests.sdk_mock import Capture, anthropic_client, anthropic_content_tokens, anthropic_message

MODEL = "claude-sonnet-4-5"  # manual extended thinking, no prefix check on thinking blocks
THINKING = {"type": "enabled", "budget_tokens": 1_024}
BASH = {"name": "bash", "description": "Run a command.", "input_schema": {"type": "object"}}
REPLY_ROOM = 1_000

Blocks = list[dict[str, Any]]


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ctxpack.tokens.ApproximateTokenCountWarning)
        yield


def _thinking(i: int) -> dict[str, Any]:
    plan = " ".join(f"plan_{i}_{k}" for k in range(60))
    return {
        "type": "thinking",
        "thinking": f"Step {i}: {plan}",
        "signature": f"sig_{i}_" + "x" * 40,
    }


def _one_call(i: int) -> Blocks:
    return [
        _thinking(i),
        {"type": "tool_use", "id": f"toolu_{i}", "name": "bash", "input": {"cmd": f"cat f{i}.py"}},
    ]


def _parallel_calls(i: int) -> Blocks:
    # Redacted thinking first, then readable thinking, text and two calls answered together.
    return [
        {"type": "redacted_thinking", "data": f"enc_{i}_" + "z" * 300},
        _thinking(i),
        {"type": "text", "text": "Reading both files."},
        *(
            {"type": "tool_use", "id": f"toolu_{i}{s}", "name": "bash", "input": {"cmd": s}}
            for s in "ab"
        ),
    ]


def _results(turn: Blocks, step: int, lines: int) -> dict[str, Any]:
    calls = [block["id"] for block in turn if block["type"] == "tool_use"]
    return {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": call,
                "content": "\n".join(
                    f"{call} line {j}: value = compute_{step}_{j}(x)" for j in range(lines)
                ),
            }
            for call in calls
        ],
    }


def _loop(
    client: Any,
    capture: Capture,
    make: Callable[[int], Blocks],
    *,
    steps: int,
    lines: int,
    model: str = MODEL,
    thinking: dict[str, Any] = THINKING,
    after: Callable[[], None] = lambda: None,
) -> list[Blocks]:
    """Run an agent's tool loop through ``client``: each reply thinks and calls a tool, each
    call's large output is answered in the next request (``after`` runs after each). Returns
    the turns the API made."""
    made: list[Blocks] = []

    def reply(body: dict[str, Any]) -> httpx2.Response:
        made.append(make(len(made)))
        answer = {**anthropic_message(made[-1]), "model": model, "stop_reason": "tool_use"}
        return httpx2.Response(200, json=answer)

    capture.reply = reply
    history: list[Any] = [{"role": "user", "content": "Find the bug in the repository."}]
    for step in range(steps):
        client.messages.create(
            model=model,
            max_tokens=REPLY_ROOM,
            system="You fix bugs.",
            messages=history,
            thinking=thinking,
            tools=[BASH],
        )
        after()
        history += [{"role": "assistant", "content": made[-1]}, _results(made[-1], step, lines)]
    return made


def _answered_turn(body: dict[str, Any]) -> Any:
    """The assistant turn whose tool calls the request's last message answers."""
    assert body["messages"][-1]["content"][0]["type"] == "tool_result"
    return body["messages"][-2]


def test_the_api_rules_refuse_a_tool_loop_turn_sent_without_its_thinking() -> None:
    turn = _one_call(0)
    payload: dict[str, Any] = {
        "thinking": THINKING,
        "messages": [
            {"role": "user", "content": "Find the bug."},
            {"role": "assistant", "content": turn[1:]},
            _results(turn, 0, 2),
        ],
    }
    assert anthropic_problems(payload) == [
        "messages[1].content[0].type: Expected `thinking` or `redacted_thinking`, but found "
        "`tool_use`: with thinking enabled, the assistant message the tool results answer "
        "must start with its thinking block"
    ]
    payload["messages"][1]["content"] = turn
    assert anthropic_problems(payload) == []
    # Adaptive thinking may skip thinking (a forced tool call does): not held to the rule.
    payload["messages"][1]["content"] = turn[1:]
    assert anthropic_problems({**payload, "thinking": {"type": "adaptive"}}) == []


@pytest.mark.parametrize("make", [_one_call, _parallel_calls], ids=["one call", "parallel"])
def test_a_compaction_inside_a_tool_loop_sends_the_answered_turn_with_its_thinking(
    make: Callable[[int], Blocks],
) -> None:
    window = 8_000
    session = ctxpack.Session(model=MODEL, window=window, counter="cl100k_base")
    capture = Capture(anthropic_message([]))
    client = ctxpack.wrap_anthropic(anthropic_client(capture), session=session)
    made = _loop(client, capture, make, steps=12, lines=150 // len(make(0)))
    compactions = [e for e in session.window_state.events if e.action == "compacted"]
    assert len(compactions) >= 3  # the window filled mid-loop, again and again
    for step, body in enumerate(capture.requests[1:], start=1):
        assert anthropic_problems(body) == []
        # The turn the results answer, verbatim: thinking first, signatures and all.
        assert _answered_turn(body) == {"role": "assistant", "content": made[step - 1]}
        # ...and counted: the request, that turn's thinking included, fits the window.
        assert anthropic_content_tokens(body["system"], body["messages"]) + REPLY_ROOM <= window
    # The last requests were compacted: a summary, then the turn and its results.
    assert len(capture.body["messages"]) < 2 * len(made)
    assert session.window_state.thinking_cleared == []


def test_packing_without_a_session_sends_the_answered_turn_with_its_thinking() -> None:
    capture = Capture(anthropic_message([]))
    client = ctxpack.wrap_anthropic(anthropic_client(capture), window=8_000, counter="cl100k_base")
    made = _loop(client, capture, _parallel_calls, steps=10, lines=70)
    assert len(capture.body["messages"]) < 2 * len(made)  # older turns dropped to fit
    for step, body in enumerate(capture.requests[1:], start=1):
        assert anthropic_problems(body) == []
        assert _answered_turn(body) == {"role": "assistant", "content": made[step - 1]}


def test_clearing_old_thinking_keeps_the_answered_turns() -> None:
    # keep_thinking=1 clears the thinking of every turn but the last, in each clearing batch.
    policy = WindowPolicy(window=20_000, keep=2, keep_thinking=1)
    session = ctxpack.Session(model=MODEL, window=policy, counter="cl100k_base")
    capture = Capture(anthropic_message([]))
    client = ctxpack.wrap_anthropic(anthropic_client(capture), session=session)
    made = _loop(client, capture, _one_call, steps=14, lines=40)
    assert {e.action for e in session.window_state.events} == {"cleared"}
    assert len(session.window_state.thinking_cleared) >= 5
    for step, body in enumerate(capture.requests[1:], start=1):
        assert anthropic_problems(body) == []
        assert _answered_turn(body) == {"role": "assistant", "content": made[step - 1]}
    # Older turns went out without their thinking (cleared in batches, so not every one yet).
    earlier = [m for m in capture.body["messages"][:-2] if m["role"] == "assistant"]
    assert any(m["content"][0]["type"] == "tool_use" for m in earlier)


def test_on_a_model_with_preserved_thinking_only_a_request_that_edits_drops_the_turns() -> None:
    """Such a model refuses a thinking block once anything before it changed (Anthropic's
    "Prefix checks on thinking blocks": for history trimmed or summarised client-side, remove
    the thinking of the kept turns). A compaction inside the loop changes what the answered
    turn's thinking followed, so that request sends the turn without it (these models think
    adaptively only: a turn without thinking is taken); every request that edits nothing
    sends the turns produced since the edit, the answered one included, as they came."""
    session = ctxpack.Session(model="claude-sonnet-5-5", window=20_000, counter="cl100k_base")
    capture = Capture(anthropic_message([]))
    client = ctxpack.wrap_anthropic(anthropic_client(capture), session=session)
    edits: list[int] = []
    made = _loop(
        client,
        capture,
        _one_call,
        steps=25,
        lines=40,
        model="claude-sonnet-5-5",
        thinking={"type": "adaptive"},
        after=lambda: edits.append(len(session.window_state.events)),
    )
    edited = [k for k in range(1, len(edits)) if edits[k] > edits[k - 1]]
    assert len(edited) >= 2
    for step, body in enumerate(capture.requests[1:], start=1):
        assert anthropic_problems(body) == []
        turn = made[step - 1]
        sent = _answered_turn(body)["content"]
        assert sent == (turn[1:] if step in edited else turn)
    # The last request edited nothing: the turns produced since the last edit kept theirs.
    sent_turns = [m["content"] for m in capture.body["messages"] if m["role"] == "assistant"]
    since = made[edited[-1] : len(made) - 1]
    assert len(since) >= 2 and all(turn in sent_turns for turn in since)


@pytest.mark.parametrize("in_extra_body", [False, True])
def test_manual_thinking_with_keep_thinking_0_is_refused_before_sending(
    in_extra_body: bool,
) -> None:
    # keep_thinking=0 clears the answered turn's thinking too: Anthropic would refuse every
    # request after a clearing inside a tool loop.
    policy = WindowPolicy(window=20_000, keep_thinking=0)
    session = ctxpack.Session(model=MODEL, window=policy, counter="cl100k_base")
    capture = Capture(anthropic_message([]))
    client = ctxpack.wrap_anthropic(anthropic_client(capture), session=session)
    asked: dict[str, Any] = {"model": MODEL, "max_tokens": REPLY_ROOM}
    asked |= {"extra_body": {"thinking": THINKING}} if in_extra_body else {"thinking": THINKING}
    with pytest.raises(ctxpack.ConfigError, match=r"^thinking: .*keep_thinking=0"):
        client.messages.create(messages=[{"role": "user", "content": "Hi"}], **asked)
    assert capture.requests == []


@pytest.mark.parametrize("thinking", [{"type": "adaptive"}, {"type": "disabled"}, None])
def test_keep_thinking_0_goes_with_thinking_that_may_be_dropped(
    thinking: dict[str, Any] | None,
) -> None:
    policy = WindowPolicy(window=20_000, keep_thinking=0)
    session = ctxpack.Session(model=MODEL, window=policy, counter="cl100k_base")
    capture = Capture(anthropic_message([]))
    client = ctxpack.wrap_anthropic(anthropic_client(capture), session=session)
    asked: dict[str, Any] = {} if thinking is None else {"thinking": thinking}
    messages = [{"role": "user", "content": "Hi"}]
    client.messages.create(model=MODEL, max_tokens=REPLY_ROOM, messages=messages, **asked)
    assert len(capture.requests) == 1
