"""ToolResultClearer counts and clears the results of the tools the provider ran (an Anthropic
web fetch or MCP block, a Responses API ``mcp_call`` item) with the client's: one keep-last-N
order, the same batches, a decision per edited message, the original retrievable; the block
stays where it was with its type and ids, only its text becomes the placeholder."""

from __future__ import annotations

import json
from typing import Any

import pytest

import ctxpack
from ctxpack import Pipeline
from ctxpack.adapters import from_anthropic, from_openai, validate_anthropic
from ctxpack.editing import ToolResultClearer
from ctxpack.store import SQLiteArtifactStore, artifact_id

from .helpers import ORIGINAL_NOTE
from .provider_turns import fetch_turn, mcp_turn


def words(text: str) -> int:
    return len(text.split())


BIG = 10**9


def _page(k: int, size: int) -> str:
    return " ".join(f"page{k}w{j}" for j in range(size))


def _fetch(k: int) -> list[dict[str, Any]]:
    return fetch_turn(k, _page(k, 300))


def _mcp(k: int) -> list[dict[str, Any]]:
    return mcp_turn(k, _page(100 + k, 300))


def _bash(k: int) -> list[dict[str, Any]]:
    """A client tool's exchange."""
    use = {"type": "tool_use", "id": f"toolu_{k}", "name": "bash", "input": {"cmd": f"ls {k}"}}
    result = {"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": _page(200 + k, 300)}
    return [
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
        {"role": "assistant", "content": f"Listed {k}."},
        {"role": "user", "content": f"Next after {k}."},
    ]


def _history() -> list[ctxpack.Message]:
    turns = [_fetch(0), _bash(0), _mcp(0), _fetch(1), _bash(1), _mcp(1), _fetch(2)]
    history = [{"role": "user", "content": "Read the pages, the trackers and the files."}]
    for turn in turns:
        history += turn
    return from_anthropic(history, system="You are a research agent.")


# The ids of _history's tool results, oldest first.
ORDER = [
    "srvtoolu_0",
    "toolu_0",
    "mcptoolu_0",
    "srvtoolu_1",
    "toolu_1",
    "mcptoolu_1",
    "srvtoolu_2",
]


def _blocks(sent: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        b["tool_use_id"]: b
        for m in sent
        if isinstance(m["content"], list)
        for b in m["content"]
        if "tool_use_id" in b
    }


def _text(block: dict[str, Any]) -> str:
    content = block["content"]
    if block["type"] == "web_fetch_tool_result":
        return str(content["content"]["source"]["data"])
    if block["type"] == "mcp_tool_result":
        return str(content[0]["text"])
    return str(content if isinstance(content, str) else content[0]["text"])


def _pack(history: list[ctxpack.Message], **options: Any) -> ctxpack.PackResult:
    stage = ToolResultClearer(**{"trigger": 0, "cache_aware": False, **options})
    return ctxpack.pack(history, budget=BIG, counter=words, pipeline=Pipeline([stage]))


def test_provider_results_are_cleared_with_the_clients_keeping_the_last_n() -> None:
    history = _history()
    result = _pack(history, keep=3)
    sent = result.to_anthropic()["messages"]
    validate_anthropic(sent)  # each server tool's result still follows its call
    original = ctxpack.pack(history, budget=BIG, counter=words).to_anthropic()["messages"]
    # Every block stays where it was, with its type and ids.
    assert [
        [(b.get("type"), b.get("id"), b.get("tool_use_id")) for b in m["content"]]
        for m in sent
        if isinstance(m["content"], list)
    ] == [
        [(b.get("type"), b.get("id"), b.get("tool_use_id")) for b in m["content"]]
        for m in original
        if isinstance(m["content"], list)
    ]
    blocks, was = _blocks(sent), _blocks(original)
    for rid in ORDER[:-3]:
        assert ORIGINAL_NOTE.fullmatch(_text(blocks[rid])), rid
    for rid in ORDER[-3:]:
        assert blocks[rid] == was[rid], rid
    # What the fetch result needs in its shape stays.
    fetched = blocks["srvtoolu_0"]["content"]
    assert fetched["url"] == "https://example.com/0"
    assert fetched["content"]["title"] == "Page 0"


def test_a_cleared_provider_result_is_retrievable_and_decided() -> None:
    history = _history()
    result = _pack(history, keep=3)
    cleared = {d.message_id: d for d in result.decisions if d.action == "cleared"}
    turn = next(m for m in history if "srvtoolu_0" in json.dumps(m.content))
    decision = cleared[turn.id]
    assert "web_fetch" in decision.reason and "srvtoolu_0" in decision.reason
    assert decision.tokens_before is not None and decision.tokens_after is not None
    assert decision.tokens_after < decision.tokens_before - 250
    # The whole turn as it came, by its id; the note names the result's own artifact.
    assert result.original(turn.id) == turn
    parts = turn.content if isinstance(turn.content, list) else []
    part = next(p for p in parts if isinstance(p, dict) and p.get("tool_use_id") == "srvtoolu_0")
    note = _text(_blocks(result.to_anthropic()["messages"])["srvtoolu_0"])
    assert artifact_id(json.dumps(part, ensure_ascii=False)) in note
    # One decision per edited message: three provider turns and a client result.
    assert len(cleared) == 4


def test_the_original_provider_result_is_stored(tmp_path: Any) -> None:
    history = _history()
    store = SQLiteArtifactStore(tmp_path / "a.db")
    result = _pack(history, keep=3, store=store)
    blocks = _blocks(result.to_anthropic()["messages"])
    for rid in ("srvtoolu_0", "mcptoolu_0", "srvtoolu_1"):
        match = ORIGINAL_NOTE.fullmatch(_text(blocks[rid]))
        assert match is not None
        stored = json.loads(store.get(match.group(1)))
        assert stored["tool_use_id"] == rid
        assert stored["type"] in ("web_fetch_tool_result", "mcp_tool_result")


def test_exclude_tools_names_provider_tools_too() -> None:
    result = _pack(_history(), keep=0, exclude_tools=("web_fetch",))
    blocks = _blocks(result.to_anthropic()["messages"])
    for rid in ORDER:
        fetch = rid.startswith("srvtoolu")
        assert (ORIGINAL_NOTE.fullmatch(_text(blocks[rid])) is None) == fetch, rid
    result = _pack(_history(), keep=0, exclude_tools=("search_issues",))
    blocks = _blocks(result.to_anthropic()["messages"])
    assert _text(blocks["mcptoolu_0"]).startswith("page100w0")
    assert ORIGINAL_NOTE.fullmatch(_text(blocks["srvtoolu_0"]))


def test_cache_aware_batches_count_provider_results() -> None:
    history = _history()
    counter = ctxpack.get_counter(counter=words)
    clearer = ToolResultClearer(trigger=1_000, keep=1, expected_resends=50)
    found = clearer.batches(history, counter=counter)
    assert found
    turn = next(m for m in history if "srvtoolu_0" in json.dumps(m.content))
    assert turn.id in found[0].message_ids
    # A shorter history reaches the same first batch.
    assert clearer.batches(history[: found[0].position], counter=counter)[0] == found[0]
    result = ctxpack.pack(history, budget=BIG, counter=words, pipeline=Pipeline([clearer]))
    validate_anthropic(result.to_anthropic()["messages"])
    assert {d.message_id for d in result.decisions if d.action == "cleared"} == {
        mid for batch in found for mid in batch.message_ids
    }


def test_kept_thinking_stays_when_its_turn_is_edited_for_another_reason() -> None:
    """A turn edited for its results (or its call's inputs) keeps its thinking when it is
    among the last ``clear_thinking`` turns that have some."""
    history = _history()
    thinking = {"type": "thinking", "thinking": "Fetch the last page.", "signature": "sig"}
    last = max(i for i, m in enumerate(history) if "srvtoolu_1" in json.dumps(m.content))
    content = [thinking, *(history[last].content or [])]
    history[last] = history[last].model_copy(update={"content": content})
    result = _pack(history, keep=3, clear_thinking=1)
    kept = next(m for m in result.messages if m.id == history[last].id)
    assert kept.content is not None and kept.content[0] == thinking
    assert ORIGINAL_NOTE.fullmatch(_text(_blocks(result.to_anthropic()["messages"])["srvtoolu_1"]))


def test_kept_thinking_stays_when_only_the_calls_inputs_are_cleared() -> None:
    history = from_anthropic(
        [
            {"role": "user", "content": "List."},
            *_bash(0)[:2],
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Done.", "signature": "s"},
                    {"type": "text", "text": "Listed."},
                ],
            },
        ]
    )
    thinking = {"type": "thinking", "thinking": "List it.", "signature": "sig"}
    first = history[1]
    history[1] = first.model_copy(update={"content": [thinking]})
    result = _pack(history, keep=0, clear_tool_inputs=True, clear_thinking=2)
    call_turn = result.messages[1]
    assert call_turn.content == [thinking]  # among the last two turns with thinking
    assert call_turn.tool_calls and call_turn.tool_calls[0].function.arguments == "{}"


def _responses_turn(k: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"Look up item {k}."},
        {
            "type": "mcp_call",
            "id": f"mcp_{k}",
            "server_label": "docs",
            "name": "lookup",
            "arguments": json.dumps({"item": k}),
            "output": _page(k, 300),
        },
        {
            "type": "message",
            "id": f"msg_{k}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": f"Item {k} found.", "annotations": []}],
        },
    ]


def test_responses_mcp_calls_are_cleared_in_their_items() -> None:
    history = [m for k in range(4) for m in from_openai(_responses_turn(k))]
    result = _pack(history, keep=1)
    sent = result.to_openai(api="responses")
    by_id = {item["id"]: item for item in sent if "id" in item}
    for k in range(3):
        assert ORIGINAL_NOTE.fullmatch(by_id[f"mcp_{k}"]["output"]), k
        assert by_id[f"mcp_{k}"]["arguments"] == json.dumps({"item": k})
        assert by_id[f"mcp_{k}"]["type"] == "mcp_call"
    assert by_id["mcp_3"]["output"] == _page(3, 300)
    cleared = [d for d in result.decisions if d.action == "cleared"]
    assert len(cleared) == 3 and all("'lookup'" in d.reason for d in cleared)
    turn = next(m for m in history if "mcp_0" in json.dumps(m.content))
    assert result.original(turn.id) == turn
    kept = _pack(history, keep=0, exclude_tools=("lookup",))
    assert not [d for d in kept.decisions if d.action == "cleared"]


@pytest.mark.parametrize("keep", [0, 2, 7])
def test_keep_counts_client_and_provider_results_together(keep: int) -> None:
    result = _pack(_history(), keep=keep)
    blocks = _blocks(result.to_anthropic()["messages"])
    cleared = [rid for rid in ORDER if ORIGINAL_NOTE.fullmatch(_text(blocks[rid]))]
    assert cleared == ORDER[: len(ORDER) - keep]


def _inputs(sent: list[dict[str, Any]]) -> dict[str, Any]:
    """Each call's input in an Anthropic request, by the call's id."""
    return {
        b["id"]: b["input"]
        for m in sent
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") in ("tool_use", "server_tool_use", "mcp_tool_use")
    }


def test_clear_tool_inputs_clears_the_provider_tools_calls_too() -> None:
    """With clear_tool_inputs, the call of a provider tool whose result is cleared loses its
    input as a client's call does ({}), keeping its type, id and name; the request stays
    valid, the turn comes back whole, and the decision says so."""
    history = _history()
    original = _inputs(ctxpack.pack(history, budget=BIG, counter=words).to_anthropic()["messages"])
    result = _pack(history, keep=3, clear_tool_inputs=True)
    sent = result.to_anthropic()["messages"]
    validate_anthropic(sent)
    inputs = _inputs(sent)
    for rid in ORDER[:-3]:
        assert inputs[rid] == {}, rid
    for rid in ORDER[-3:]:
        assert inputs[rid] == original[rid] != {}, rid
    assert _blocks(sent)["srvtoolu_0"]["type"] == "web_fetch_tool_result"
    for rid in ("srvtoolu_0", "mcptoolu_0", "srvtoolu_1"):
        turn = next(m for m in history if rid in json.dumps(m.content))
        assert result.original(turn.id) == turn
        (decision,) = [d for d in result.decisions_for(turn.id) if d.action == "cleared"]
        assert decision.reason.startswith("tool inputs and result of the provider's tool")
    # Without the option the calls keep their inputs.
    assert _inputs(_pack(history, keep=3).to_anthropic()["messages"])["srvtoolu_0"] != {}


def test_clear_tool_inputs_clears_a_call_answered_in_a_later_turn() -> None:
    """A provider tool's call whose result comes in a later turn (a paused turn resumed) loses
    its input in its own turn, the edit point moving there."""
    use = {
        "type": "server_tool_use",
        "id": "srvtoolu_p",
        "name": "bash_code_execution",
        "input": {"command": "python -c 'print(1)'" + " # pad" * 50},
    }
    output = {
        "type": "bash_code_execution_result",
        "stdout": _page(7, 300),
        "stderr": "",
        "return_code": 0,
        "content": [],
    }
    result_block = {
        "type": "bash_code_execution_tool_result",
        "tool_use_id": "srvtoolu_p",
        "content": output,
    }
    history = from_anthropic(
        [
            {"role": "user", "content": "Run it."},
            {"role": "assistant", "content": [{"type": "text", "text": "Running."}, use]},
            {"role": "user", "content": "Continue."},
            {"role": "assistant", "content": [result_block, {"type": "text", "text": "Ran."}]},
            {"role": "user", "content": "Thanks."},
        ]
    )
    stage = ToolResultClearer(trigger=0, keep=0, clear_tool_inputs=True, cache_aware=False)
    (batch,) = stage.batches(history, counter=ctxpack.get_counter(counter=words))
    result = _pack(history, keep=0, clear_tool_inputs=True)
    assert _inputs(result.to_anthropic()["messages"])["srvtoolu_p"] == {}
    assert ORIGINAL_NOTE.fullmatch(_text_of_stdout(result.messages[3].content))
    assert [d.action for d in result.decisions_for(history[1].id)][-1] == "cleared"
    assert result.original(history[1].id) == history[1]
    assert batch.message_ids == (history[1].id, history[3].id)


def _text_of_stdout(content: Any) -> str:
    return str(
        next(p for p in content if p.get("tool_use_id") == "srvtoolu_p")["content"]["stdout"]
    )


def test_clear_tool_inputs_clears_a_responses_items_arguments() -> None:
    history = [m for k in range(3) for m in from_openai(_responses_turn(k))]
    result = _pack(history, keep=1, clear_tool_inputs=True)
    by_id = {item["id"]: item for item in result.to_openai(api="responses") if "id" in item}
    assert [by_id[f"mcp_{k}"]["arguments"] for k in range(3)] == [
        "{}",
        "{}",
        json.dumps({"item": 2}),
    ]
    assert by_id["mcp_0"]["name"] == "lookup" and ORIGINAL_NOTE.fullmatch(by_id["mcp_0"]["output"])
