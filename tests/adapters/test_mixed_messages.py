"""An assistant message carrying Anthropic blocks (thinking) and OpenAI ``tool_calls`` at once,
as LiteLLM and OpenRouter return them or a user pastes them: its calls are read, never lost."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import ctxpack
from ctxpack import (
    InvalidMessageError,
    Session,
    count_tokens,
    from_anthropic,
    from_openai,
    pack,
    to_anthropic,
    to_openai,
)
from ctxpack.adapters import validate_anthropic, validate_openai
from tests.api_rules import anthropic_problems

THINKING = {"type": "thinking", "thinking": "List the files first.", "signature": "sig"}
CALL = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "ls"}'}}


def _mixed(**fields: Any) -> dict[str, Any]:
    content = [THINKING, {"type": "text", "text": "Looking."}]
    return {"role": "assistant", "content": content, "tool_calls": [CALL], **fields}


def _result() -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": "c1", "content": "a.py b.py"}


def _check_payloads(messages: list[ctxpack.Message]) -> None:
    payload = to_anthropic(messages)
    validate_anthropic(payload)
    turns = payload["messages"]
    assert all(set(turn) == {"role", "content"} for turn in turns)
    assert turns[1]["content"][-1] == {
        "type": "tool_use",
        "id": "c1",
        "name": "bash",
        "input": {"cmd": "ls"},
    }
    assert turns[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "a.py b.py"}
    ]
    chat = to_openai(messages)
    validate_openai(chat)
    assert chat[1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Looking."}],
        "tool_calls": [CALL],
    }


def test_session_keeps_the_tool_pair_of_a_mixed_message() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = Session(model="claude-sonnet-4-5", window=8000)
    for message in ({"role": "user", "content": "List the files."}, _mixed(), _result()):
        session.append(message)
    rendered = session.render()
    assert [m.role for m in rendered.messages] == ["user", "assistant", "tool"]
    assert rendered.messages[1].tool_calls is not None
    assert rendered.messages[1].tool_calls[0].id == "c1"
    assert not [d for d in rendered.decisions if d.action == "dropped"]
    _check_payloads(list(rendered.messages))


def test_pack_keeps_the_tool_pair_of_a_mixed_message() -> None:
    messages = [
        *from_anthropic([{"role": "user", "content": "List the files."}, _mixed()]),
        *from_openai([_result()]),
    ]
    result = pack(messages, budget=1000, provider="anthropic")
    assert [m.role for m in result.messages] == ["user", "assistant", "tool"]
    assert not [d for d in result.decisions if d.action == "dropped"]
    _check_payloads(list(result.messages))


def test_a_mixed_message_counts_its_tool_calls() -> None:
    with_calls = count_tokens([_mixed()], model="gpt-4o")
    without = count_tokens([{k: v for k, v in _mixed().items() if k != "tool_calls"}])
    assert with_calls > without


def test_a_mixed_message_without_calls_sends_no_stray_key() -> None:
    for empty in (None, []):
        payload = to_anthropic(from_anthropic([_mixed(tool_calls=empty)]))
        assert set(payload["messages"][0]) == {"role", "content"}


def test_calls_in_both_formats_are_refused_naming_the_field() -> None:
    use = {"type": "tool_use", "id": "t1", "name": "bash", "input": {}}
    mixed = {"role": "assistant", "content": [THINKING, use], "tool_calls": [CALL]}
    session = Session()
    session.append({"role": "user", "content": "Go."})
    with pytest.raises(InvalidMessageError) as caught:
        session.append(mixed)
    assert (caught.value.index, caught.value.field) == (1, "tool_calls")


def test_a_malformed_call_on_a_mixed_message_names_its_field() -> None:
    bad = _mixed(tool_calls=[{"type": "function", "function": {"name": "bash"}}])
    with pytest.raises(InvalidMessageError) as caught:
        from_anthropic([{"role": "user", "content": "Go."}, bad])
    assert (caught.value.index, caught.value.field) == (1, "tool_calls[0].id")


def test_to_anthropic_sends_litellm_thinking_blocks_back_first() -> None:
    # LiteLLM's reply from Claude: OpenAI's shape, the thinking in thinking_blocks beside it.
    reply = {
        "role": "assistant",
        "content": "Looking.",
        "tool_calls": [CALL],
        "reasoning_content": THINKING["thinking"],
        "thinking_blocks": [THINKING],
    }
    history = [{"role": "user", "content": "List the files."}, reply, _result()]
    payload = to_anthropic(history)
    validate_anthropic(payload)
    turn = payload["messages"][1]
    assert set(turn) == {"role", "content"}
    assert [block["type"] for block in turn["content"]] == ["thinking", "text", "tool_use"]
    assert turn["content"][0] == THINKING
    # Sent back to LiteLLM as it came.
    assert to_openai(history)[1] == reply


def test_openai_fields_beside_an_anthropic_message_are_never_sent_to_anthropic() -> None:
    """An assistant message holding thinking blocks with OpenAI's fields beside it (an
    OpenRouter or LiteLLM reply dumped whole) is read as Anthropic's; its OpenAI fields were
    sent back beside role and content, which the Messages API refuses."""
    reply = _mixed(
        refusal=None, function_call=None, audio=None, name=None, reasoning_content="List."
    )
    history = [{"role": "user", "content": "List the files."}, reply, _result()]
    payload = to_anthropic(from_anthropic(history[:2]) + from_openai(history[2:]))
    assert anthropic_problems(payload) == []
    session = Session(counter="cl100k_base")
    session.extend(history)
    assert anthropic_problems(session.render().to_anthropic()) == []
    assert all(set(turn) == {"role", "content"} for turn in payload["messages"])
