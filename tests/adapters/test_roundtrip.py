"""Golden round trips and cross-provider conversions."""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import from_anthropic, from_openai, to_anthropic, to_openai

FIXTURES = Path(__file__).parent / "fixtures"


def _load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def test_openai_golden_round_trip_is_exact() -> None:
    original = _load("openai_tools.json")
    assert to_openai(from_openai(original)) == original


def test_openai_round_trip_keeps_absent_and_null_content_apart() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    absent = [{"role": "assistant", "tool_calls": [call]}]
    null = [{"role": "assistant", "content": None, "tool_calls": [call]}]
    assert "content" not in to_openai(from_openai(absent))[0]
    assert to_openai(from_openai(null))[0]["content"] is None


@pytest.mark.parametrize("system", [None, "Be brief.", "", "golden"])
def test_anthropic_golden_round_trip_is_exact(system: Any) -> None:
    payload = _load("anthropic_tools.json")
    if system == "golden":
        system = payload["system"]
    messages = payload["messages"]
    assert to_anthropic(from_anthropic(messages, system=system)) == {
        "system": system,
        "messages": messages,
    }


def test_anthropic_tool_results_become_tool_messages() -> None:
    payload = _load("anthropic_tools.json")
    msgs = from_anthropic(payload["messages"], system=payload["system"])
    assert [m.role for m in msgs] == [
        "system", "user", "assistant", "tool", "tool", "user", "assistant", "tool",
        "assistant", "user",
    ]  # fmt: skip
    calling = msgs[2]
    assert [c.id for c in calling.tool_calls or []] == ["toolu_1", "toolu_2"]
    assert json.loads((calling.tool_calls or [])[1].function.arguments) == {
        "city": "Paris",
        "unit": "C",
        "days": [1, 2],
    }
    assert [m.tool_call_id for m in msgs if m.role == "tool"] == ["toolu_1", "toolu_2", "toolu_3"]


@pytest.mark.parametrize(
    ("source", "convert", "golden"),
    [
        ("openai_tools.json", "to_anthropic", "openai_tools.as_anthropic.json"),
        ("anthropic_tools.json", "to_openai", "anthropic_tools.as_openai.json"),
    ],
)
def test_cross_provider_snapshots(source: str, convert: str, golden: str) -> None:
    data = _load(source)
    if isinstance(data, dict):
        msgs = from_anthropic(data["messages"], system=data["system"])
    else:
        msgs = from_openai(data)
    converted = getattr(ctxpack, convert)(msgs)
    assert converted == _load(golden)
    if convert == "to_anthropic":
        ctxpack.adapters.validate_anthropic(converted)
    else:
        ctxpack.adapters.validate_openai(converted)


def test_to_anthropic_merges_same_role_neighbours_and_hoists_system() -> None:
    payload = to_anthropic(
        [
            {"role": "user", "content": "a"},
            {"role": "system", "content": "late instructions"},
            {"role": "user", "content": [{"type": "text", "text": "b"}]},
            {"role": "assistant", "content": "c"},
        ]
    )
    a, b = ({"type": "text", "text": t} for t in "ab")
    assert payload == {
        "system": "late instructions",
        "messages": [{"role": "user", "content": [a, b]}, {"role": "assistant", "content": "c"}],
    }


def test_data_url_images_become_base64_blocks_and_back() -> None:
    url = "data:image/jpeg;base64,/9j/4AAQ"
    payload = to_anthropic(
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]
    )
    block = payload["messages"][0]["content"][0]
    assert block == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"},
    }
    back = to_openai(from_anthropic(payload["messages"]))
    assert back[0]["content"] == [{"type": "image_url", "image_url": {"url": url}}]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=40, deadline=None)
@given(
    inputs=st.lists(st.dictionaries(st.text(max_size=6), _json, max_size=4), min_size=1, max_size=3)
)
def test_tool_inputs_survive_the_round_trip(inputs: list[dict[str, Any]]) -> None:
    uses = [
        {"type": "tool_use", "id": f"t{i}", "name": "f", "input": v} for i, v in enumerate(inputs)
    ]
    results = [{"type": "tool_result", "tool_use_id": f"t{i}"} for i in range(len(inputs))]
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": uses},
        {"role": "user", "content": results},
    ]
    assert to_anthropic(from_anthropic(messages)) == {"system": None, "messages": messages}


def test_an_id_beside_an_anthropic_message_is_ctxpacks_and_never_sent() -> None:
    # As in an OpenAI dict: the message's id (a session keeps it), not a field of the API,
    # which refuses fields it does not know.
    messages = from_anthropic(
        [{"role": "user", "content": "Hi.", "id": "q1"}, {"role": "assistant", "content": "Yo."}]
    )
    assert messages[0].id == "q1"
    assert to_anthropic(messages)["messages"][0] == {"role": "user", "content": "Hi."}
    session = ctxpack.Session(counter="cl100k_base")
    session.extend([{"role": "user", "content": "Hi.", "id": "q1"}], provider="anthropic")
    assert [m.id for m in session.transcript()] == ["q1"]
    assert session.render().to_anthropic()["messages"] == [{"role": "user", "content": "Hi."}]


def test_a_tool_result_of_tool_references_goes_through_whole() -> None:
    """A client-side tool search answers with tool_reference blocks (and a browser toolset's
    result carries a browser_state block), both in the SDK's tool_result content: they were
    refused as unknown block types, and no request holding them could be packed."""
    results = [
        {"type": "tool_reference", "tool_name": "get_weather"},
        {
            "type": "tool_reference",
            "tool_name": "get_forecast",
            "cache_control": {"type": "ephemeral"},
        },
    ]
    browser = {"type": "browser_state", "tabs": [{"url": "https://example.com", "active": True}]}
    messages = [
        {"role": "user", "content": "Weather in Oslo?"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "search_tools", "input": {"q": "weather"}},
                {"type": "tool_use", "id": "t2", "name": "navigate", "input": {"url": "x"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": results},
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": [{"type": "text", "text": "ok"}, browser],
                },
            ],
        },
    ]
    packed = ctxpack.pack(from_anthropic(messages), budget=10_000, model="claude-sonnet-4-5")
    assert packed.to_anthropic()["messages"] == messages
    session = ctxpack.Session(model="claude-sonnet-4-5")
    session.extend(messages)
    assert session.render().to_anthropic()["messages"] == messages
    bad = [
        messages[0],
        messages[1],
        {
            **messages[2],
            "content": [
                {**messages[2]["content"][0], "content": [{"type": "tool_reference"}]},
                messages[2]["content"][1],
            ],
        },
    ]
    with pytest.raises(ctxpack.InvalidMessageError) as caught:
        from_anthropic(bad)
    assert (caught.value.index, caught.value.field) == (2, "content[0].content[0].tool_name")


def test_tool_references_and_browser_state_are_named_when_sent_to_openai() -> None:
    # A tool result holding only tool_reference blocks went to OpenAI as an empty output: the
    # model saw its call answered with nothing, not which tools the search found.
    messages = [
        {"role": "user", "content": "Weather in Oslo?"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "search_tools", "input": {"q": "w"}},
                {"type": "tool_use", "id": "t2", "name": "navigate", "input": {"url": "x"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [
                        {"type": "tool_reference", "tool_name": "get_weather"},
                        {"type": "tool_reference", "tool_name": "get_forecast"},
                    ],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": [
                        {"type": "text", "text": "ok"},
                        {"type": "browser_state", "tabs": [{"url": "https://example.com"}]},
                    ],
                },
            ],
        },
    ]
    for api in ("chat", "responses"):
        sent = ctxpack.to_openai(from_anthropic(messages), api=api)
        outputs = [
            m for m in sent if m.get("role") == "tool" or m.get("type") == "function_call_output"
        ]
        texts = [str(m.get("content", m.get("output"))) for m in outputs]
        assert "get_weather" in texts[0] and "get_forecast" in texts[0], (api, texts)
        assert "ok" in texts[1] and "browser_state" in texts[1], (api, texts)


def _failed_call(content: Any) -> list[dict[str, Any]]:
    use = {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": content, "is_error": True}
    return [
        {"role": "user", "content": "List."},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]


@pytest.mark.parametrize(
    "content", ["No such directory.", [{"type": "text", "text": "No such directory."}]]
)
def test_a_failed_tool_result_says_so_in_openai_formats_and_back(content: Any) -> None:
    """Anthropic's is_error has no OpenAI field: it was lost, and the model read a failure as
    the tool's answer. The text says it, and reading that text back sets is_error again."""
    history = _failed_call(content)
    messages = from_anthropic(history)
    chat = to_openai(messages)
    assert ctxpack.Message(**chat[2]).text == "[tool error] No such directory."
    output = to_openai(messages, api="responses")[2]["output"]
    text = output if isinstance(output, str) else output[0]["text"]
    assert text.startswith("[tool error] ")
    assert to_anthropic(messages)["messages"] == history
    assert to_anthropic(from_openai(chat))["messages"][2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": content,
        "is_error": True,
    }


@pytest.mark.parametrize(
    "content",
    [
        "No such directory.",
        [{"type": "text", "text": "No such directory."}],
        [{"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}],
    ],
)
def test_a_failed_tool_result_is_counted_with_the_mark_openai_reads(content: Any) -> None:
    # The mark was sent, not counted: a request of failed results passed its budget by it.
    messages = from_anthropic(_failed_call(content))
    counter = ctxpack.get_counter(model="gpt-4o")
    for api in ("chat", "responses"):
        sent = from_openai(to_openai(messages, api=api))
        assert counter.count_messages(messages) >= counter.count_messages(sent)


def test_a_tool_use_input_given_as_a_mapping_that_is_not_a_dict_becomes_its_arguments() -> None:
    # The validator takes any mapping as a tool's input (an SDK's, a frozen one); json.dumps
    # takes dicts only, and a TypeError came from inside from_anthropic and count_tokens.
    frozen = MappingProxyType({"path": ".", "options": MappingProxyType({"all": True})})
    use = {"type": "tool_use", "id": "t1", "name": "ls", "input": frozen}
    history = [{"role": "user", "content": "List."}, {"role": "assistant", "content": [use]}]
    call = (ctxpack.from_anthropic(history)[1].tool_calls or [])[0]
    assert json.loads(call.function.arguments) == {"path": ".", "options": {"all": True}}
    as_dict = {**use, "input": {"path": ".", "options": {"all": True}}}
    plain = [history[0], {"role": "assistant", "content": [as_dict]}]
    assert ctxpack.count_tokens(history) == ctxpack.count_tokens(plain)
