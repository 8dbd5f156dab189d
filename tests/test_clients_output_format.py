"""A structured output's schema joins the prompt: the wrappers keep room for it.

OpenAI and Anthropic add the schema a request asks its reply to follow (``response_format``,
``text.format``, ``output_config.format``, or a pydantic model given to ``parse``) to the
prompt they bill. Left uncounted, a request packed to the window's edge passed it by the size
of the schema.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest

import ctxpack
from tests.sdk_mock import (
    Capture,
    anthropic_client,
    anthropic_message,
    chat_completion,
    openai_client,
)
from tests.test_clients import anthropic_history, long_history
from tests.test_clients_responses import long_input, text_reply


class Invoice(pydantic.BaseModel):
    """An invoice read from the conversation."""

    number: str = pydantic.Field(description="The invoice's number, as printed.")
    address: str = pydantic.Field(description="The billing address, one line.")
    lines: list[str] = pydantic.Field(description="Each line item, with its amount.")


SCHEMA = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "description": "The answer, in one sentence."},
        "sources": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["answer", "sources"],
    "additionalProperties": False,
}
RESPONSE_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "answer", "schema": SCHEMA, "strict": True},
}


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def schema_tokens(value: Any, model: str = "gpt-4o") -> int:
    return ctxpack.count_tokens(compact(value), model=model)


def openai_json_reply() -> dict[str, Any]:
    content = json.dumps({"number": "F-1", "address": "1 Main St", "lines": ["a: 1"]})
    return chat_completion({"role": "assistant", "content": content, "refusal": None})


def test_a_json_schema_is_reserved_beside_the_reply() -> None:
    capture = Capture(openai_json_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=1_500, reserve=20)
    client.chat.completions.create(
        model="gpt-4o", messages=long_history(), max_tokens=100, response_format=RESPONSE_FORMAT
    )
    assert capture.body["response_format"] == RESPONSE_FORMAT
    result = client.last_result
    assert result is not None
    schema = schema_tokens({"name": "answer", "schema": SCHEMA})
    assert result.reserve == 20 + 100 + schema
    assert result.tokens + schema + 100 <= 1_500 - 20


def test_a_pydantic_model_given_to_parse_is_counted_as_its_schema() -> None:
    capture = Capture(openai_json_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=1_500)
    reply = client.chat.completions.parse(
        model="gpt-4o", messages=long_history(), max_tokens=100, response_format=Invoice
    )
    assert reply.choices[0].message.parsed == Invoice(
        number="F-1", address="1 Main St", lines=["a: 1"]
    )
    sent = capture.body["response_format"]["json_schema"]["schema"]
    result = client.last_result
    assert result is not None
    schema = result.reserve - 100
    # The JSON schema pydantic writes, which the SDK sends in its strict form: about its size.
    assert schema == schema_tokens(Invoice.model_json_schema())
    assert abs(schema - schema_tokens(sent)) <= 0.2 * schema_tokens(sent)


def test_json_mode_without_a_schema_reserves_nothing() -> None:
    capture = Capture(openai_json_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=1_500)
    client.chat.completions.create(
        model="gpt-4o",
        messages=long_history(),
        max_tokens=100,
        response_format={"type": "json_object"},
    )
    assert client.last_result is not None and client.last_result.reserve == 100


@pytest.mark.parametrize("how", ["text", "text_format"])
def test_the_responses_api_format_is_reserved(how: str) -> None:
    capture = Capture(text_reply(json.dumps({"number": "F-1", "address": "x", "lines": []})))
    client = ctxpack.wrap_openai(openai_client(capture), window=2_000)
    if how == "text":
        fmt = {"type": "json_schema", "name": "answer", "schema": SCHEMA, "strict": True}
        client.responses.create(
            model="gpt-4o", input=long_input(), max_output_tokens=100, text={"format": fmt}
        )
        expected = schema_tokens({"name": "answer", "schema": SCHEMA})
    else:
        client.responses.parse(
            model="gpt-4o", input=long_input(), max_output_tokens=100, text_format=Invoice
        )
        expected = schema_tokens(Invoice.model_json_schema())
    assert capture.body["text"]["format"]["type"] == "json_schema"
    result = client.last_result
    assert result is not None and result.reserve == 100 + expected


def test_an_anthropic_output_format_is_reserved() -> None:
    reply = anthropic_message(
        [{"type": "text", "text": json.dumps({"answer": "x", "sources": []})}]
    )
    capture = Capture(reply)
    client = ctxpack.wrap_anthropic(anthropic_client(capture), window=3_000, counter="cl100k_base")
    config = {"format": {"type": "json_schema", "schema": SCHEMA}}
    client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=300,
        messages=anthropic_history(),
        output_config=config,
    )
    assert capture.body["output_config"] == config
    result = client.last_result
    assert result is not None
    assert result.reserve == 300 + ctxpack.count_tokens(compact({"schema": SCHEMA}))


def test_a_schema_that_leaves_no_room_fails_before_sending_naming_it() -> None:
    capture = Capture(openai_json_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=150)
    with pytest.raises(
        ctxpack.ConfigError, match=r"max_tokens \(100\), the output format's schema \(\d+ tokens\),"
    ):
        client.chat.completions.create(
            model="gpt-4o", messages=long_history(), max_tokens=100, response_format=RESPONSE_FORMAT
        )
    assert capture.requests == []


def test_a_managed_session_keeps_the_schema_within_its_reply_room() -> None:
    capture = Capture(openai_json_reply())
    session = ctxpack.Session(
        model="gpt-4o", window=ctxpack.managed.WindowPolicy(window=8_000, reply_room=1_000)
    )
    client = ctxpack.wrap_openai(openai_client(capture), session=session)
    schema = schema_tokens({"name": "answer", "schema": SCHEMA})
    client.chat.completions.create(
        model="gpt-4o",
        messages=long_history(),
        max_tokens=1_000 - schema,
        response_format=RESPONSE_FORMAT,
    )
    with pytest.raises(
        ctxpack.ConfigError, match=rf"the output format's schema \({schema} tokens\)"
    ):
        client.chat.completions.create(
            model="gpt-4o",
            messages=long_history(),
            max_tokens=1_000,
            response_format=RESPONSE_FORMAT,
        )


def test_an_anthropic_model_given_to_parse_is_counted_as_its_schema() -> None:
    text = json.dumps({"number": "F-1", "address": "1 Main St", "lines": []})
    capture = Capture(anthropic_message([{"type": "text", "text": text}]))
    client = ctxpack.wrap_anthropic(anthropic_client(capture), window=3_000, counter="cl100k_base")
    reply = client.messages.parse(
        model="claude-sonnet-4-5",
        max_tokens=300,
        messages=anthropic_history(),
        output_format=Invoice,
    )
    assert reply.parsed_output == Invoice(number="F-1", address="1 Main St", lines=[])
    assert capture.body["output_config"]["format"]["type"] == "json_schema"
    result = client.last_result
    assert result is not None
    assert result.reserve == 300 + ctxpack.count_tokens(compact(Invoice.model_json_schema()))
