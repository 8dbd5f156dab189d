"""ctxpack.providers: one place tells the two wire formats apart."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

import ctxpack
from ctxpack.errors import ConfigError
from ctxpack.messages import ensure_messages
from ctxpack.providers import (
    check_provider,
    detect_provider,
    is_anthropic_response,
    provider_from_client,
    provider_from_message,
    provider_from_model,
    provider_from_request,
    response_answer,
    response_usage,
    tool_call_parts,
    tool_definition,
    tool_definition_parts,
)
from ctxpack.tools_on_demand import describe_tools


def test_a_bad_provider_names_the_argument() -> None:
    assert check_provider("anthropic") == "anthropic"
    with pytest.raises(ConfigError, match="target must be 'openai' or 'anthropic', got 'gemini'"):
        check_provider("gemini", "target")


def test_only_claude_names_tell_the_provider() -> None:
    assert provider_from_model("Claude-3-5-sonnet") == "anthropic"
    assert provider_from_model("anthropic/claude-x") == "anthropic"
    assert provider_from_model("gpt-4o") is None
    assert provider_from_model(None) is None


def test_a_client_is_told_by_its_create_method() -> None:
    create = SimpleNamespace(create=lambda **_: None)
    assert provider_from_client(SimpleNamespace(chat=SimpleNamespace(completions=create))) == (
        "openai"
    )
    assert provider_from_client(SimpleNamespace(messages=create)) == "anthropic"
    with pytest.raises(ConfigError, match="cannot tell the provider of SimpleNamespace"):
        provider_from_client(SimpleNamespace())


@pytest.mark.parametrize("block", ["tool_use", "tool_result", "thinking", "image", "document"])
def test_a_block_only_anthropic_has_makes_a_message_anthropic(block: str) -> None:
    assert provider_from_message({"role": "user", "content": [{"type": block}]}) == "anthropic"
    assert provider_from_request(
        {"messages": [{"role": "user", "content": [{"type": block}]}]}
    ) == ("anthropic")


def test_openai_parts_leave_a_message_openai() -> None:
    message = {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url"}]}
    assert provider_from_message(message) == "openai"
    assert provider_from_request({"messages": [message]}) == "openai"
    assert provider_from_request({"system": "Be brief.", "messages": []}) == "anthropic"
    assert provider_from_request({"tools": [{"name": "f", "input_schema": {}}]}) == "anthropic"
    assert provider_from_request([]) == "openai"
    # A block whose type is no string is no Anthropic block (the adapters then name the field).
    assert provider_from_message({"role": "user", "content": [{"type": {"a": 1}}]}) == "openai"


def test_detection_prefers_what_the_caller_said() -> None:
    messages = ensure_messages([{"role": "user", "content": "hi"}])
    assert detect_provider(None, None, messages) == "openai"
    assert detect_provider(None, "claude-sonnet-4-5", messages) == "anthropic"
    assert detect_provider("openai", "claude-sonnet-4-5", messages) == "openai"
    with pytest.raises(ConfigError, match="provider must be"):
        detect_provider("azure", None, messages)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_tool_definition_reads_back_in_its_shape(provider: str) -> None:
    schema = {"type": "object", "properties": {}}
    tool = tool_definition("grep", "Search.", schema, check_provider(provider))
    assert tool_definition_parts(tool) == ("grep", "Search.", schema, provider)


def test_tool_calls_are_read_in_every_shape() -> None:
    openai = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    anthropic = {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}
    responses = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a": 1}'}
    assert tool_call_parts(openai) == ("f", "{}")
    assert tool_call_parts(anthropic) == ("f", {"a": 1})
    assert tool_call_parts(responses) == ("f", '{"a": 1}')
    assert tool_call_parts({"names": ["f"]}) is None


def test_describe_tool_answers_a_responses_api_call() -> None:
    tool = {"name": "grep", "description": "Search.", "input_schema": {"type": "object"}}
    call = {"type": "function_call", "name": "describe_tool", "arguments": '{"names": ["grep"]}'}
    assert json.loads(describe_tools([tool], call)) == [tool]


def test_an_anthropic_response_has_a_role() -> None:
    assert is_anthropic_response({"role": "assistant", "content": []})
    assert not is_anthropic_response({"id": "resp_1", "output": []})


def test_a_chat_completion_answer_and_usage_are_read() -> None:
    response = {
        "choices": [{"message": {"content": '{"items": []}'}}],
        "usage": {"prompt_tokens": 310, "completion_tokens": 12},
    }
    assert response_answer(response, "openai", "select") == '{"items": []}'
    assert response_usage(response, "openai") == (310, 12)
    refused = SimpleNamespace(
        choices=[SimpleNamespace(message=SimpleNamespace(content=None, refusal="no"))]
    )
    assert json.loads(response_answer(refused, "openai", "select")) == {"refusal": "no"}
    assert response_usage(refused, "openai") == (None, None)


def test_an_anthropic_answer_is_the_named_tools_input_else_its_text() -> None:
    text = {"type": "text", "text": "Choosing."}
    use = {"type": "tool_use", "id": "t1", "name": "select", "input": {"items": [1]}}
    response = {"content": [text, use], "usage": {"input_tokens": 5, "output_tokens": 7}}
    assert response_answer(response, "anthropic", "select") == {"items": [1]}
    assert response_answer(response, "anthropic", "other") == "Choosing."
    assert response_usage(response, "anthropic") == (5, 7)


def test_the_provider_type_is_defined_once() -> None:
    root = Path(ctxpack.__file__).parent
    spelled = re.compile(
        r"""Literal\[\s*["'](openai|anthropic)["']\s*,\s*["'](openai|anthropic)["']"""
    )
    places = [
        path.relative_to(root).as_posix()
        for path in sorted(root.rglob("*.py"))
        if spelled.search(path.read_text(encoding="utf-8"))
    ]
    assert places == ["providers.py"]
