"""A long Codex-style agent session in the Responses API's form (shell, apply_patch, custom and
function calls, server tools' items in their turn, reasoning, phases), driven step by step
through a managed session and through ``pack``: every request within the window as counted
and as sent, valid for the SDK, calls paired, the user's words verbatim, nothing lost, the same
history giving the same bytes."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pydantic
import pytest

import ctxpack
from ctxpack.adapters import from_openai
from ctxpack.managed import WindowPolicy
from ctxpack.tokens import ApproximateTokenCountWarning

from .responses_histories import CALLS, AgentHistory

openai_responses = pytest.importorskip("openai.types.responses")
ITEM = pydantic.TypeAdapter(openai_responses.ResponseInputItemParam)


def check_request(sent: list[dict[str, Any]], users: list[str]) -> None:
    answered: list[str] = []
    calls: list[str] = []
    ids = [item["id"] for item in sent if "id" in item]
    assert len(ids) == len(set(ids))
    for i, item in enumerate(sent):
        ITEM.validate_python(item)
        kind = item.get("type")
        if kind in CALLS:
            calls.append(item["call_id"])
        elif kind in {f"{c}_output" for c in CALLS}:
            call_id = item.get("call_id", item.get("id"))  # a local shell's output: its id
            assert call_id in calls  # after its call
            answered.append(call_id)
        elif kind == "reasoning":  # followed by an item of its response, sent with its id
            assert i + 1 < len(sent) and "id" in sent[i + 1]
        if kind == "message" and "id" in item and i + 1 < len(sent):
            # The calls after a message of their response go with their ids too.
            after = sent[i + 1]
            assert after.get("type") not in CALLS or "id" in after, after
    assert sorted(calls) == sorted(answered)
    text = json.dumps(sent)
    assert all(json.dumps(u)[1:-1] in text for u in users)


def run_session(window: int, history: AgentHistory) -> list[str]:
    session = ctxpack.Session(model="gpt-5", window=WindowPolicy(window=window, managed_room=None))
    users: list[str] = []
    requests = []
    for turn, outputs in history.steps():
        users += [item["content"] for item in turn if item.get("role") == "user"]
        session.extend(from_openai(turn + outputs))
        result = session.render()
        sent = result.to_openai(api="responses")
        assert result.tokens <= window - session.window.reserve
        # As sent, too: the JSON's tokens, framing and all, are within the window.
        assert ctxpack.count_tokens(json.dumps(sent), model="gpt-5") <= window
        check_request(sent, users)
        shown = {m.id for m in result.messages}
        for message in session.transcript():
            assert message.id in shown or result.original(message.id) is not None
        requests.append(json.dumps(sent))
    return requests


@pytest.mark.parametrize("window", [12_000, 24_000])
def test_a_long_responses_session_keeps_every_promise(window: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        first = run_session(window, AgentHistory(3, 24, write_lines=3_000))
        again = run_session(window, AgentHistory(3, 24, write_lines=3_000))
    assert first == again


def test_a_long_responses_history_packs_valid_and_whole() -> None:
    history = [item for turn, outputs in AgentHistory(5, 30).steps() for item in turn + outputs]
    users = [item["content"] for item in history if item.get("role") == "user"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        packed = ctxpack.pack(from_openai(history), budget=16_000, model="gpt-5")
    sent = packed.to_openai(api="responses")
    assert packed.tokens <= 16_000
    check_request(sent, users[:1])  # the task; later instructions compete for the budget
    assert sorted(packed.kept_ids + packed.dropped_ids) == sorted(packed.input_ids)
    assert all(packed.decisions_for(mid) for mid in packed.input_ids)
