"""Claude counts: the exact counter on the real anthropic SDK (a mock transport plays the
count-tokens endpoint with a known tokenizer), and the calibration against billed usage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

import ctxpack
from ctxpack.anthropic_tokens import anthropic_token_counter, billed_input_tokens, calibrate
from ctxpack.tokens import anthropic_approx_counter

from .sdk_mock import WEATHER_TOOL, Capture, anthropic_client

# The endpoint's tokenizer here: one token per word, each turn 4 more, each request 7 more.
REQUEST, TURN = 7, 4


def words(content: Any) -> int:
    if isinstance(content, str):
        return len(content.split())
    return sum(len(str(block.get("text", "")).split()) for block in content)


def endpoint(body: dict[str, Any]) -> httpx2.Response:
    for message in body["messages"]:
        if isinstance(message["content"], str) and not message["content"].strip():
            return httpx2.Response(
                400,
                json={
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": "text content blocks must contain non-whitespace text",
                    },
                },
            )
    tokens = REQUEST + sum(TURN + words(m["content"]) for m in body["messages"])
    if body.get("tools"):
        tokens += tool_tokens(body["tools"])
    return httpx2.Response(200, json={"input_tokens": tokens})


def tool_tokens(tools: list[dict[str, Any]]) -> int:
    """The endpoint's tool prompt here: 300, and one token per word of each tool's JSON."""
    return 300 + sum(len(json.dumps(tool).split()) for tool in tools)


def billed(messages: list[dict[str, Any]]) -> int:
    """What the endpoint says for a whole conversation."""
    return REQUEST + sum(TURN + len(m["content"].split()) for m in messages)


def test_counts_are_the_endpoints_and_each_text_is_sent_once() -> None:
    capture = Capture(endpoint)
    counter = anthropic_token_counter(anthropic_client(capture), model="claude-haiku-4-5")
    assert counter.exact and counter.name == "anthropic:claude-haiku-4-5"
    assert counter.count("the cache is warm") == 4
    probes = len(capture.requests)
    assert probes == 3  # two probes for the framing, then the text
    assert counter.count("the cache is warm") == 4
    assert len(capture.requests) == probes  # cached
    assert all(path == "/v1/messages/count_tokens" for path in capture.paths)
    assert capture.body["model"] == "claude-haiku-4-5"
    assert counter.count("") == 0


def test_a_conversation_counts_what_the_endpoint_counts() -> None:
    counter = anthropic_token_counter(anthropic_client(Capture(endpoint)))
    history = [
        {"role": "user", "content": "My deploy fails with error E42"},
        {"role": "assistant", "content": "Which region?"},
        {"role": "user", "content": "eu-west-1, since this morning"},
    ]
    assert ctxpack.count_tokens(history, counter=counter) == billed(history)
    assert counter.count_messages(history) == billed(history)  # dicts, as count_tokens takes
    assert ctxpack.count_tokens([], counter=counter) == REQUEST
    # Whitespace alone is refused by the endpoint: it is counted after a probe instead.
    assert counter.count("   ") == 0


def test_pack_with_the_exact_counter_fits_the_endpoints_count() -> None:
    counter = anthropic_token_counter(anthropic_client(Capture(endpoint)))
    history = []
    for i in range(30):
        history.append({"role": "user", "content": f"question {i} about the invoice address"})
        history.append({"role": "assistant", "content": f"answer {i} under Billing and Profile"})
    history.append({"role": "user", "content": "and the E42 error?"})
    result = ctxpack.pack(history, budget=120, counter=counter, provider="anthropic")
    sent = [m.model_dump(include={"role", "content"}) for m in result.messages]
    assert result.tokens == billed(sent) <= 120
    assert result.exact


def test_tool_definitions_are_counted_by_the_endpoint_in_anthropics_form() -> None:
    capture = Capture(endpoint)
    counter = anthropic_token_counter(anthropic_client(capture))
    anthropic_form = {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "input_schema": WEATHER_TOOL["function"]["parameters"],
    }
    expected = tool_tokens([anthropic_form])
    assert ctxpack.tokens.tool_definition_tokens([WEATHER_TOOL], counter) == expected
    assert [r["tools"] for r in capture.requests if "tools" in r] == [[anthropic_form]]
    sent = len(capture.requests)
    history = [{"role": "user", "content": "Weather in Oslo?"}]
    total = ctxpack.count_tokens(history, counter=counter, tools=[anthropic_form])
    assert total == billed(history) + expected
    assert len(capture.requests) == sent + 1  # the history's text; the tools were cached


def test_endpoint_failures_are_ctxpack_errors() -> None:
    def down(body: dict[str, Any]) -> httpx2.Response:
        return httpx2.Response(
            529,
            json={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        )

    counter = anthropic_token_counter(anthropic_client(Capture(down)))
    with pytest.raises(ctxpack.TokenizerUnavailableError, match="count-tokens endpoint failed"):
        counter.count("hello")
    with pytest.raises(ctxpack.ConfigError, match="anthropic client"):
        anthropic_token_counter(object())


# ------------------------------------------------------------------------------ calibration


def test_billed_input_is_input_plus_cache_write_plus_read() -> None:
    usage = {
        "input_tokens": 3,
        "cache_creation_input_tokens": 200,
        "cache_read_input_tokens": 5000,
        "output_tokens": 50,
    }
    assert billed_input_tokens(usage) == 5203
    with pytest.raises(ctxpack.ConfigError, match="cache_read_input_tokens"):
        billed_input_tokens({"input_tokens": 1, "cache_read_input_tokens": -2})


def test_calibration_reports_the_error_distribution() -> None:
    words_counter = ctxpack.tokens.CallableCounter(lambda t: len(t.split()), name="words")
    requests, usages = [], []
    for n, ratio in zip(
        range(1, 11), [0.8, 0.9, 1.0, 1.0, 1.1, 1.1, 1.2, 1.2, 1.3, 1.5], strict=True
    ):
        request = {"messages": [{"role": "user", "content": "word " * (10 * n)}]}
        counted = ctxpack.count_tokens(request["messages"], counter=words_counter)
        requests.append(request)
        usages.append({"input_tokens": round(counted * ratio)})
    result = calibrate(requests, usages, counter=words_counter, coverage=0.9)
    assert result.requests == 10 and result.counter == "words"
    assert result.under_counted == pytest.approx(0.6)  # six ratios above 1
    assert result.median == pytest.approx(1.1, abs=0.01)
    assert result.factor_for_coverage == pytest.approx(1.3, abs=0.01)  # 9 of 10 covered
    assert result.worst_under_count == pytest.approx(1 - 1 / 1.5, abs=0.01)


def test_calibration_checks_its_input() -> None:
    with pytest.raises(ctxpack.ConfigError, match="one usage per request"):
        calibrate([{"messages": []}], [])
    with pytest.raises(ctxpack.ConfigError, match=r"requests\[0\]"):
        calibrate([{"prompt": "hi"}], [{"input_tokens": 3}])
    with pytest.raises(ctxpack.ConfigError, match="coverage"):
        calibrate([{"messages": []}], [{"input_tokens": 3}], coverage=0)


def test_a_usage_without_input_tokens_is_refused_not_billed_as_zero() -> None:
    # A whole response, an empty dict or None is not a usage: read as 0 billed tokens, it made
    # a calibration of ratio 0 and factor 0 (every request "over-counted").
    anthropic = pytest.importorskip("anthropic")
    response = anthropic.types.Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 40, "output_tokens": 5},
        }
    )
    assert billed_input_tokens(response.usage) == 40
    for bad in (response, {}, None, {"input_tokens": True}, {"input_tokens": None}):
        with pytest.raises(ctxpack.ConfigError, match="input_tokens"):
            billed_input_tokens(bad)
    request = {"messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(ctxpack.ConfigError, match=r"usages\[1\].*input_tokens"):
        calibrate([request, request], [response.usage, response])


def test_calibrate_counts_each_request_with_its_models_approximation() -> None:
    history = [{"role": "user", "content": "Pack warm clothes for Oslo in winter."}]
    newer = {"model": "claude-opus-4-7", "messages": history}
    older = {"model": "claude-sonnet-4-5", "messages": history}
    usage = {"input_tokens": 40}
    by_newer = anthropic_approx_counter(ctxpack.tokens.ANTHROPIC_NEWER_FACTOR)
    counted = by_newer.count_messages(ctxpack.from_anthropic(history))
    alone = calibrate([newer], [usage])
    # What a request to Opus 4.7 is packed with: x1.91, not the older models' x1.41.
    assert alone.counter.startswith(by_newer.name)
    assert alone.ratios == [40 / counted]
    mixed = calibrate([older, newer, {"messages": history}], [usage] * 3)
    assert mixed.counter.split(", ")[0] == anthropic_approx_counter().name
    assert mixed.counter.count("anthropic-approx") == 2
    assert mixed.ratios[1] == 40 / counted and mixed.ratios[0] == mixed.ratios[2] > 40 / counted
    with pytest.raises(ctxpack.ConfigError, match=r"requests\[0\]\['model'\] must be a string"):
        calibrate([{"model": 4, "messages": history}], [usage])


def test_the_default_approximation_carries_the_measured_margin() -> None:
    counter = anthropic_approx_counter()
    assert counter.exact is False
    assert "1.41" in counter.name
    base = ctxpack.count_tokens("refresh tokens expire after an hour", model="gpt-4")
    assert counter.count("refresh tokens expire after an hour") == -(-base * 141 // 100)


def test_the_calibration_script_reads_requests_and_usages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    path = Path(__file__).parents[1] / "scripts" / "calibrate_claude.py"
    spec = importlib.util.spec_from_file_location("calibrate_claude", path)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    lines = [
        {
            "request": {"messages": [{"role": "user", "content": "word " * n}]},
            "usage": {"input_tokens": 2 * n, "cache_read_input_tokens": 10},
        }
        for n in (10, 20, 40)
    ]
    data = tmp_path / "requests.jsonl"
    data.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    assert script.main([str(data), "--factor", "1.0"]) == 0
    out = capsys.readouterr().out
    assert "3 requests" in out and "under-counted: 100.0% of requests" in out


def test_what_rides_beside_a_message_s_content_is_counted_as_the_framed_counters_do() -> None:
    # Claude is sent LiteLLM's thinking_blocks as thinking blocks and a refusal as text: the
    # exact counter counted the content alone, under the approximation's own count.
    counter = anthropic_token_counter(anthropic_client(Capture(endpoint)))
    reasoning = "the user wants the weather in Oslo so call the tool"
    block = {"type": "thinking", "thinking": reasoning, "signature": "c2ln"}
    plain = {"role": "assistant", "content": "Sunny."}
    thinking = {**plain, "thinking_blocks": [block]}
    assert counter.count_message(thinking) >= counter.count_message(plain) + counter.count(
        reasoning
    )
    refusal = {"role": "assistant", "content": None, "refusal": "I cannot help with that request"}
    assert counter.count_message(refusal) == TURN + counter.count(refusal["refusal"])
