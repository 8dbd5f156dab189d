"""ModelSelector: structured outputs or a forced tool call, validated, retried once, with a
recorded fallback; tested with fake clients, recorded answers and the real SDKs offline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ctxpack
from ctxpack import ConfigError
from ctxpack.cost import price
from ctxpack.selection import (
    SYSTEM_PROMPT,
    TOOL_NAME,
    ModelSelector,
    Selection,
    Workspace,
    apply_selection,
    selection_prompt,
)

from .helpers import (
    FakeAnthropic,
    FakeOpenAI,
    answer,
    anthropic_response,
    load,
    make_repo,
    openai_response,
    session_messages,
)

GOAL = "fix the failing refresh token test"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(session_messages(), root=make_repo(tmp_path / "repo"))


def test_a_valid_openai_answer_is_taken_with_its_usage(ws: Workspace) -> None:
    client = FakeOpenAI(load("openai_valid.json"))
    sel = ModelSelector(client, model="gpt-4.1-nano")(ws, GOAL)
    assert sel.include_messages == [7] and sel.include_tool_results == ["call_2"]
    assert sel.selector == "ModelSelector(gpt-4.1-nano)" and sel.fallback is None
    assert sel.usage is not None
    assert (sel.usage.calls, sel.usage.input_tokens, sel.usage.output_tokens) == (1, 812, 121)
    assert sel.usage.exact
    (request,) = client.requests
    assert request["model"] == "gpt-4.1-nano"
    assert request["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": TOOL_NAME, "schema": Selection.json_schema(), "strict": True},
    }
    assert request["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert request["messages"][1] == {"role": "user", "content": selection_prompt(ws, GOAL)}
    result = apply_selection(sel, ws)
    assert "The user rejected cookie-based sessions." in result.messages[-1].text


def test_the_listing_numbers_messages_and_names_calls(ws: Workspace) -> None:
    prompt = selection_prompt(ws, GOAL)
    assert prompt.startswith(f"Goal: {GOAL}\n")
    assert '[2] assistant, 16 tokens, calls call_1 bash({"command": "npm run build"})' in prompt
    assert "[5] tool result of call_2, 50 tokens: FAIL tests/auth.test.ts refreshes" in prompt
    assert "Candidate files (path: lines matching the goal's words):" in prompt
    assert "tests/auth.test.ts: " in prompt
    assert "node_modules" not in prompt


def test_invalid_json_is_retried_with_the_error(ws: Workspace) -> None:
    client = FakeOpenAI(
        openai_response('{"include_messages": [7', usage=(700, 9)),
        openai_response(json.dumps(answer(include_messages=[7])), usage=(760, 40)),
    )
    sel = ModelSelector(client, model="small")(ws, GOAL)
    assert sel.include_messages == [7] and sel.fallback is None
    assert sel.usage is not None and (sel.usage.calls, sel.usage.input_tokens) == (2, 1460)
    retry = client.requests[1]["messages"]
    assert retry[2] == {"role": "assistant", "content": '{"include_messages": [7'}
    assert retry[3]["role"] == "user" and "the answer is not JSON" in retry[3]["content"]


def test_unknown_ids_twice_fall_back_to_the_lexical_selector(ws: Workspace) -> None:
    wrong = json.dumps(answer(include_messages=[42], include_tool_results=["call_184"]))
    client = FakeOpenAI(openai_response(wrong), openai_response(wrong))
    sel = ModelSelector(client, model="small")(ws, GOAL)
    assert len(client.requests) == 2
    fix = client.requests[1]["messages"][-1]["content"]
    assert "message index 42 is out of range: the workspace has messages 0-7" in fix
    assert "no tool call 'call_184'; the workspace's tool calls are: call_1, call_2" in fix
    assert sel.selector == "LexicalSelector (fallback)"
    assert sel.fallback is not None
    assert sel.fallback.startswith(
        "ModelSelector(small) failed after 2 attempt(s): message index 42"
    )
    assert sel.usage is not None and sel.usage.calls == 2  # the failed calls are billed too
    (first, *_) = apply_selection(sel, ws).decisions
    assert "fell back: ModelSelector(small) failed after 2 attempt(s)" in first.reason


def test_a_path_escape_is_refused_and_corrected(ws: Workspace) -> None:
    escape = answer(include_files=[{"path": "../../etc/passwd", "lines": None, "match": None}])
    fixed = answer(include_files=[{"path": "src/auth.ts", "lines": "3-9", "match": None}])
    client = FakeOpenAI(openai_response(json.dumps(escape)), openai_response(json.dumps(fixed)))
    sel = ModelSelector(client, model="small")(ws, GOAL)
    assert (
        "file '../../etc/passwd': '..' is refused" in client.requests[1]["messages"][-1]["content"]
    )
    assert [f.path for f in sel.include_files] == ["src/auth.ts"]


def test_an_omitted_user_instruction_is_kept_anyway(ws: Workspace) -> None:
    client = FakeOpenAI(openai_response(json.dumps(answer(include_messages=[7]))))
    sel = ModelSelector(client, model="small")(ws, GOAL)
    result = apply_selection(sel, ws)
    constraint = ws.messages[6]
    assert constraint.text == "Keep the public API of src/auth.ts unchanged."
    assert constraint in result.messages
    (decision,) = result.decisions_for(constraint.id)
    assert decision.reason == (
        "user instruction: always kept, though ModelSelector(small) left it out"
    )


def test_a_failing_call_falls_back_and_says_why(ws: Workspace) -> None:
    client = FakeOpenAI(TimeoutError("read timed out"))
    sel = ModelSelector(client, model="small")(ws, GOAL)
    assert sel.fallback == (
        "ModelSelector(small) failed after 1 attempt(s): "
        "the call failed (TimeoutError: read timed out)"
    )
    assert sel.include_messages  # the lexical selector chose


def test_without_reported_usage_tokens_are_counted_as_the_request_was_sent(
    ws: Workspace,
) -> None:
    # The prompt's texts alone were counted: the answer's schema (about 425 tokens, sent with
    # every call), the messages' framing and Anthropic's tool-use prompt were left out.
    client = FakeOpenAI(openai_response(json.dumps(answer(include_messages=[7])), usage=None))
    sel = ModelSelector(client, model="small")(ws, GOAL)
    assert sel.usage is not None and not sel.usage.exact
    sent = client.requests[0]
    assert [m["content"] for m in sent["messages"]] == [SYSTEM_PROMPT, selection_prompt(ws, GOAL)]
    schema = json.dumps(sent["response_format"]["json_schema"], separators=(",", ":"))
    messages = ctxpack.count_tokens(sent["messages"], counter=ws.counter)
    assert sel.usage.input_tokens == messages + ws.counter.count(schema)
    assert sel.usage.output_tokens == ws.counter.count(json.dumps(answer(include_messages=[7])))
    body = anthropic_response(answer(include_messages=[1]))
    del body["usage"]
    client = FakeAnthropic(body)
    sel = ModelSelector(client, model="small")(ws, GOAL)
    assert sel.usage is not None and not sel.usage.exact
    sent = client.requests[0]
    tools = ctxpack.tokens.tool_definition_tokens(sent["tools"], ws.counter)
    history = ctxpack.adapters.from_anthropic(sent["messages"], system=sent["system"])
    assert sel.usage.input_tokens == ctxpack.count_tokens(history, counter=ws.counter) + tools


def test_an_anthropic_client_answers_through_a_forced_tool(ws: Workspace) -> None:
    client = FakeAnthropic(load("anthropic_valid.json"))
    sel = ModelSelector(client, model="claude-haiku-4-5")(ws, GOAL)
    assert sel.include_tool_results == ["call_2"] and sel.uncertain == ["tests/auth.test.ts"]
    assert sel.usage is not None and (sel.usage.input_tokens, sel.usage.output_tokens) == (790, 98)
    (request,) = client.requests
    assert request["tool_choice"] == {"type": "tool", "name": TOOL_NAME}
    assert request["tools"][0]["input_schema"] == Selection.json_schema()
    assert request["system"] == SYSTEM_PROMPT and request["max_tokens"] == 2048
    result = apply_selection(sel, ws)
    assert any(d.message_id.startswith("file:tests/auth.test.ts") for d in result.decisions)


def test_anthropic_cached_prompt_tokens_count_as_input(ws: Workspace) -> None:
    # With prompt caching (a top-level cache_control in request_options), Anthropic reports
    # only the tokens after the breakpoint as input_tokens: the prompt is all three fields.
    anthropic = pytest.importorskip("anthropic")
    body = anthropic_response(answer(include_messages=[1]))
    body["usage"] = {
        "input_tokens": 12,
        "cache_creation_input_tokens": 3000,
        "cache_read_input_tokens": None,
        "output_tokens": 80,
    }
    reply = anthropic.types.Message.model_validate(body)
    options = {"cache_control": {"type": "ephemeral"}}
    sel = ModelSelector(FakeAnthropic(reply), model="small", request_options=options)(ws, GOAL)
    assert sel.usage is not None and sel.usage.exact
    assert (sel.usage.input_tokens, sel.usage.output_tokens) == (3012, 80)


def test_openai_cached_prompt_tokens_are_billed_at_the_cache_read_price(ws: Workspace) -> None:
    # OpenAI caches a repeated prefix of 1,024 tokens or more on its own (the system prompt, the
    # schema, an unchanged goal and listing): cached_tokens are part of prompt_tokens.
    openai = pytest.importorskip("openai")
    body = openai_response(json.dumps(answer(include_messages=[7])), usage=(1500, 40))
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": 1280, "audio_tokens": 0}
    body["usage"]["completion_tokens_details"] = {"reasoning_tokens": 32}
    reply = openai.types.chat.ChatCompletion.model_validate(body)
    sel = ModelSelector(FakeOpenAI(reply), model="gpt-5-mini")(ws, GOAL)
    usage = sel.usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (1500, 40)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (1280, 0)
    mini = price("gpt-5-mini")  # reads at a tenth of the input price
    expected = (220 * mini.input + 1280 * mini.cache_read + 40 * mini.output) / 1e6
    assert usage.cost(mini) == pytest.approx(expected)


def test_anthropic_cache_writes_and_reads_are_billed_at_their_prices(ws: Workspace) -> None:
    anthropic = pytest.importorskip("anthropic")
    body = anthropic_response(answer(include_messages=[1]))
    body["usage"] = {
        "input_tokens": 12,
        "cache_creation_input_tokens": 3000,
        "cache_read_input_tokens": 500,
        "output_tokens": 80,
    }
    reply = anthropic.types.Message.model_validate(body)
    options = {"cache_control": {"type": "ephemeral"}}
    sel = ModelSelector(FakeAnthropic(reply), model="claude-haiku-4-5", request_options=options)(
        ws, GOAL
    )
    usage = sel.usage
    assert usage is not None and usage.input_tokens == 3512
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (500, 3000)
    haiku = price("claude-haiku-4-5")
    expected = (
        12 * haiku.input + 3000 * haiku.cache_write_5m + 500 * haiku.cache_read + 80 * haiku.output
    ) / 1e6
    assert usage.cost(haiku) == pytest.approx(expected)
    assert (usage + usage).cache_write_tokens == 6000


def test_anthropic_one_hour_cache_writes_are_billed_at_the_one_hour_price(ws: Workspace) -> None:
    # Anthropic bills a 1-hour write at 2x the input price, a 5-minute one at 1.25x, and says
    # which is which in usage.cache_creation: every write was billed at the 5-minute price.
    anthropic = pytest.importorskip("anthropic")
    body = anthropic_response(answer(include_messages=[1]))
    body["usage"] = {
        "input_tokens": 12,
        "cache_creation_input_tokens": 3000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000},
        "cache_read_input_tokens": 500,
        "output_tokens": 80,
    }
    reply = anthropic.types.Message.model_validate(body)
    options = {"cache_control": {"type": "ephemeral", "ttl": "1h"}}
    sel = ModelSelector(FakeAnthropic(reply), model="claude-haiku-4-5", request_options=options)(
        ws, GOAL
    )
    usage = sel.usage
    assert usage is not None and usage.input_tokens == 3512
    assert (usage.cache_write_tokens, usage.cache_write_1h_tokens) == (3000, 2000)
    haiku = price("claude-haiku-4-5")
    expected = (
        12 * haiku.input
        + 1000 * haiku.cache_write_5m
        + 2000 * haiku.cache_write_1h
        + 500 * haiku.cache_read
        + 80 * haiku.output
    ) / 1e6
    assert usage.cost(haiku) == pytest.approx(expected)
    assert (usage + usage).cache_write_1h_tokens == 4000
    # A dict of usage as a proxy returns it, and a breakdown past the writes, are read alike.
    body["usage"]["cache_creation"]["ephemeral_1h_input_tokens"] = 9000
    sel = ModelSelector(FakeAnthropic(body), model="claude-haiku-4-5")(ws, GOAL)
    assert sel.usage is not None and sel.usage.cache_write_1h_tokens == 3000


def test_an_anthropic_retry_answers_the_tool_call_with_the_error(ws: Workspace) -> None:
    client = FakeAnthropic(
        anthropic_response(answer(include_messages=[99])),
        anthropic_response(answer(include_messages=[1])),
    )
    sel = ModelSelector(client, model="small")(ws, GOAL)
    assert sel.include_messages == [1]
    assistant, user = client.requests[1]["messages"][1:]
    assert assistant["content"][0]["type"] == "tool_use"
    result = user["content"][0]
    assert result["type"] == "tool_result" and result["is_error"] is True
    assert result["tool_use_id"] == "toolu_test"
    assert "message index 99 is out of range" in result["content"]


def test_an_unknown_client_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="cannot tell the provider of object"):
        ModelSelector(object(), model="x")


@pytest.mark.parametrize("model", [None, 5, ""])
def test_a_model_that_is_no_name_is_a_config_error(model: Any) -> None:
    # model=None was taken, sent to the provider as "model": null, named "ModelSelector(None)".
    with pytest.raises(ConfigError, match="model must be a non-empty string"):
        ModelSelector(FakeOpenAI(), model=model)


def test_a_fallback_that_is_no_selector_is_a_config_error(ws: Workspace) -> None:
    # A fallback that cannot choose used to fail only when needed, deep inside: TypeError
    # ("'int' object is not callable"), or AttributeError for an answer that is no Selection.
    with pytest.raises(ConfigError, match="fallback must be a selector"):
        ModelSelector(FakeOpenAI(), model="small", fallback=5)  # type: ignore[arg-type]
    failing = FakeOpenAI(TimeoutError("read timed out"))
    selector = ModelSelector(failing, model="small", fallback=lambda w, g: {"x": 1})  # type: ignore[arg-type,return-value]
    with pytest.raises(ConfigError, match="fallback must return a Selection, got dict"):
        selector(ws, GOAL)


# The real SDKs, offline: a mock transport answers with the recorded bodies and keeps what
# was sent, so that the request shape is the one the provider receives.


def _http_client(body: dict[str, Any], sent: list[dict[str, Any]]) -> Any:
    # Recent SDKs are built on httpx2, older ones on httpx: use the one installed.
    try:
        import httpx2 as http
    except ImportError:
        import httpx as http

    def handle(request: Any) -> Any:
        sent.append({"path": request.url.path, "json": json.loads(request.content)})
        return http.Response(200, json=body)

    return http.Client(transport=http.MockTransport(handle))


def test_the_openai_sdk_sends_structured_outputs(ws: Workspace) -> None:
    openai = pytest.importorskip("openai")
    sent: list[dict[str, Any]] = []
    client = openai.OpenAI(
        api_key="test",
        base_url="http://openai.test/v1",
        http_client=_http_client(load("openai_valid.json"), sent),
    )
    sel = ModelSelector(client, model="gpt-4.1-nano", max_tokens=800)(ws, GOAL)
    assert sel.include_tool_results == ["call_2"] and sel.usage is not None
    assert sel.usage.input_tokens == 812
    (call,) = sent
    assert call["path"] == "/v1/chat/completions"
    assert call["json"]["response_format"]["json_schema"]["strict"] is True
    assert call["json"]["max_completion_tokens"] == 800


def test_the_anthropic_sdk_sends_a_forced_tool(ws: Workspace) -> None:
    anthropic = pytest.importorskip("anthropic")
    sent: list[dict[str, Any]] = []
    client = anthropic.Anthropic(
        api_key="test",
        base_url="http://anthropic.test",
        http_client=_http_client(load("anthropic_valid.json"), sent),
    )
    sel = ModelSelector(client, model="claude-haiku-4-5")(ws, GOAL)
    assert sel.include_files[0].path == "src/auth.ts" and sel.usage is not None
    assert sel.usage.output_tokens == 98
    (call,) = sent
    assert call["path"] == "/v1/messages"
    assert call["json"]["tool_choice"] == {"type": "tool", "name": TOOL_NAME}
