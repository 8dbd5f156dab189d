"""validate_openai / validate_anthropic over a corpus of malformed payloads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ctxpack
from ctxpack import InvalidMessageError
from ctxpack.adapters import validate_anthropic, validate_openai

from .malformed import ANTHROPIC, OPENAI, Case

FIXTURES = Path(__file__).parent / "fixtures"


def _load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def test_the_corpus_is_large_enough() -> None:
    assert len(OPENAI) + len(ANTHROPIC) >= 30
    assert len({c.name for c in OPENAI}) == len(OPENAI)
    assert len({c.name for c in ANTHROPIC}) == len(ANTHROPIC)


def _check(validate: Any, case: Case) -> None:
    with pytest.raises(InvalidMessageError) as info:
        validate(case.payload)
    err = info.value
    assert (err.index, err.field) == (case.index, case.field)
    assert case.says in str(err)
    if case.index is not None:
        assert str(err).startswith(f"message {case.index}: ")


@pytest.mark.parametrize("case", OPENAI, ids=lambda c: c.name)
def test_validate_openai_names_index_and_field(case: Case) -> None:
    _check(validate_openai, case)


@pytest.mark.parametrize("case", ANTHROPIC, ids=lambda c: c.name)
def test_validate_anthropic_names_index_and_field(case: Case) -> None:
    _check(validate_anthropic, case)


@pytest.mark.parametrize("case", [c for c in OPENAI if c.pairing], ids=lambda c: c.name)
def test_openai_pairing_mistakes_pass_without_pairing_checks(case: Case) -> None:
    validate_openai(case.payload, tool_pairing=False)


@pytest.mark.parametrize("case", [c for c in ANTHROPIC if c.pairing], ids=lambda c: c.name)
def test_anthropic_pairing_mistakes_pass_without_pairing_checks(case: Case) -> None:
    validate_anthropic(case.payload, tool_pairing=False)


def test_the_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="tool_call_id"):
        validate_openai([{"role": "tool", "content": "1"}])


def test_valid_fixtures_pass() -> None:
    validate_openai(_load("openai_tools.json"))
    validate_anthropic(_load("anthropic_tools.json"))
    validate_anthropic(_load("anthropic_tools.json")["messages"])


def test_a_trailing_call_may_wait_for_its_result() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    validate_openai(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [call]}]
    )
    use = {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
    validate_anthropic(
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [use]}]}
    )


@pytest.mark.parametrize(
    "case", [c for c in OPENAI if not c.pairing and c.index is not None], ids=lambda c: c.name
)
def test_pack_rejects_malformed_openai_messages(case: Case) -> None:
    with pytest.raises(InvalidMessageError) as info:
        ctxpack.pack(case.payload, budget=1000, model="gpt-4")
    assert (info.value.index, info.value.field) == (case.index, case.field)


@pytest.mark.parametrize(
    "case",
    [
        c
        for c in ANTHROPIC
        if not c.pairing
        and isinstance(c.payload, dict)
        and isinstance(c.payload.get("messages"), list)
    ],
    ids=lambda c: c.name,
)
def test_from_anthropic_rejects_malformed_payloads(case: Case) -> None:
    payload = case.payload
    with pytest.raises(InvalidMessageError) as info:
        ctxpack.from_anthropic(payload["messages"], system=payload.get("system"))
    assert (info.value.index, info.value.field) == (case.index, case.field)


def test_a_last_assistant_turn_may_be_left_empty_for_the_model() -> None:
    validate_anthropic(
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""}]}
    )


def test_to_anthropic_sends_what_the_turn_rules_take() -> None:
    # A user spoke between a call and its result; an assistant said nothing; a text was blank.
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "user", "content": "hurry"},
        {"role": "tool", "tool_call_id": "c1", "content": "r1"},
        {"role": "assistant", "content": ""},
        {
            "role": "user",
            "content": [{"type": "text", "text": " "}, {"type": "text", "text": "and?"}],
        },
    ]
    payload = ctxpack.to_anthropic(history)
    validate_anthropic(payload)
    assert payload["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "r1"},
        {"type": "text", "text": "hurry"},
        {"type": "text", "text": "and?"},
    ]
    packed = ctxpack.pack(history, budget=500, provider="anthropic")
    validate_anthropic(packed.to_anthropic())


def test_a_text_file_goes_to_anthropic_as_a_text_document() -> None:
    part = {
        "type": "file",
        "file": {"filename": "notes.txt", "file_data": "data:text/plain;base64,aGVsbG8gw6l0w6k="},
    }
    payload = ctxpack.to_anthropic(
        [{"role": "user", "content": [{"type": "text", "text": "Sum up"}, part]}]
    )
    validate_anthropic(payload)
    assert payload["messages"][0]["content"][1] == {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "hello été"},
        "title": "notes.txt",
    }


def test_a_text_file_that_is_not_base64_is_named_not_a_crash() -> None:
    # Refused as the file it is, before a document block the API refuses is made of it.
    part = {"type": "file", "file": {"filename": "a.txt", "file_data": "data:text/plain;base64,@@"}}
    with pytest.raises(InvalidMessageError, match="is not valid base64") as info:
        ctxpack.to_anthropic([{"role": "user", "content": [part]}])
    assert (info.value.index, info.value.field) == (0, "content[0].file.file_data")


_ASK = {"role": "user", "content": "And Paris?"}


def _server_turn(*pairs: tuple[str, str]) -> dict[str, Any]:
    """An assistant turn calling server tools (name, result type), each answered in the turn."""
    blocks: list[dict[str, Any]] = []
    for k, (name, result) in enumerate(pairs):
        use = "mcp_tool_use" if result == "mcp_tool_result" else "server_tool_use"
        blocks.append({"type": use, "id": f"srvtoolu_{k}", "name": name, "input": {}})
        blocks.append({"type": result, "tool_use_id": f"srvtoolu_{k}", "content": []})
    return {"role": "assistant", "content": [*blocks, {"type": "text", "text": "Done."}]}


def test_server_tools_answered_in_their_turn_pass() -> None:
    turn = _server_turn(
        ("web_search", "web_search_tool_result"),
        ("web_fetch", "web_fetch_tool_result"),
        ("code_execution", "code_execution_tool_result"),
        ("bash_code_execution", "bash_code_execution_tool_result"),
        ("text_editor_code_execution", "text_editor_code_execution_tool_result"),
        ("tool_search_tool_regex", "tool_search_tool_result"),
        ("read_env", "mcp_tool_result"),
    )
    validate_anthropic([{"role": "user", "content": "Look it up."}, turn])
    validate_anthropic([{"role": "user", "content": "Look it up."}, turn, _ASK])


def _code_calls(*ids: str) -> dict[str, Any]:
    """An assistant turn of client tool calls made by the code srvtoolu_1 runs."""
    caller = {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}
    calls = [{"type": "tool_use", "id": i, "name": "f", "input": {}, "caller": caller} for i in ids]
    return {"role": "assistant", "content": calls}


def _answers(*ids: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": i, "content": "3 C"} for i in ids],
    }


def test_a_server_tool_may_wait_on_the_client_tools_its_code_calls() -> None:
    """Programmatic tool calling: the code_execution_tool_result comes turns after its call,
    each turn between calling client tools for it; the last messages may still be waiting."""
    run = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "code_execution", "input": {}}
    first = _code_calls("toolu_1")
    first["content"].insert(0, run)
    done = {
        "role": "assistant",
        "content": [
            {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_1", "content": {}},
            {"type": "text", "text": "3 C."},
        ],
    }
    thread = [_ASK, first, _answers("toolu_1"), _code_calls("toolu_2"), _answers("toolu_2")]
    for end in range(2, len(thread) + 1):
        validate_anthropic(thread[:end])  # still running
    validate_anthropic([*thread, done, _ASK])
    # The turn of the pause (the last message) may leave its call waiting too.
    validate_anthropic([_ASK, {"role": "assistant", "content": [run]}])


def test_base64_without_its_padding_passes() -> None:
    """Only what is not base64 is refused: the padding may be left out, as encoders that strip
    it write it."""
    for data in ("iVBORw0KGgo", "iVBORw0KGgo=", "", "QUJD"):
        url = f"data:image/png;base64,{data}"
        validate_openai(
            [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]
        )
        source = {"type": "base64", "media_type": "image/png", "data": data}
        validate_anthropic([{"role": "user", "content": [{"type": "image", "source": source}]}])


def test_the_converters_refuse_a_data_url_that_is_not_base64() -> None:
    bad = {"type": "image_url", "image_url": {"url": "data:image/png;base64,not base64!"}}
    history = [{"role": "user", "content": "hi"}, {"role": "user", "content": [bad]}]
    for convert in (ctxpack.to_openai, ctxpack.to_anthropic):
        with pytest.raises(InvalidMessageError, match="not valid base64") as info:
            convert(history)
        assert (info.value.index, info.value.field) == (1, "content[0].image_url.url")
