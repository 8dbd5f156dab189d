"""The managed window clears old results of the tools the provider ran (a web fetch, an MCP
server's tool, code execution) as it clears a client's tool results: oldest first, the last
``keep`` whole, each clear a decision, the original stored; the block stays where it was with
its type, ids and pairing, and only its text becomes the stand-in, so the request stays valid."""

from __future__ import annotations

import json
from typing import Any

import pytest

import ctxpack
from ctxpack import Session, get_counter
from ctxpack.adapters import from_openai, validate_anthropic
from ctxpack.managed import WindowPolicy

from .helpers import ORIGINAL_NOTE
from .provider_turns import fetch_turn, mcp_turn

COUNTER = get_counter(counter="cl100k_base")
POLICY = WindowPolicy(window=48_000, managed_room=None, clear_at=0.35, compact_at=0.6, keep=1)


def _page(k: int, tokens: int) -> str:
    return " ".join(f"fetched{k} word{j}" for j in range(tokens // 4))


def _fetch(k: int) -> list[dict[str, Any]]:
    return fetch_turn(k, _page(k, 10_000))


def _mcp(k: int) -> list[dict[str, Any]]:
    return mcp_turn(k, _page(100 + k, 6_000))


def _searched_and_ran() -> list[dict[str, Any]]:
    """A web search (its results encrypted: no text to clear) and a bash run in one turn."""
    hits = [
        {
            "type": "web_search_result",
            "url": "https://example.com/s",
            "title": "A hit",
            "encrypted_content": "EqgfCioIARgBIiQ3" * 40,
            "page_age": "1 day",
        }
    ]
    run = {
        "type": "bash_code_execution_result",
        "stdout": _page(300, 2_000),
        "stderr": "warning: slow\n" * 50,
        "return_code": 0,
        "content": [{"type": "bash_code_execution_output", "file_id": "file_011"}],
    }
    return [
        {
            "role": "assistant",
            "content": [
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_s",
                    "name": "web_search",
                    "input": {"query": "flaky"},
                },
                {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_s", "content": hits},
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_b",
                    "name": "bash_code_execution",
                    "input": {"command": "pytest -q"},
                },
                {
                    "type": "bash_code_execution_tool_result",
                    "tool_use_id": "srvtoolu_b",
                    "content": run,
                },
            ],
        },
        {"role": "user", "content": "And the last page?"},
    ]


def _history() -> list[dict[str, Any]]:
    history = [
        {"role": "system", "content": "You are a research agent."},
        {"role": "user", "content": "Read the three pages and the two trackers."},
    ]
    for turn in (_fetch(0), _searched_and_ran(), _mcp(0), _fetch(1), _mcp(1), _fetch(2)):
        history += turn
    return history


def _run(history: list[dict[str, Any]]) -> tuple[Session, ctxpack.PackResult]:
    """The history appended as an agent does: a request before each assistant message."""
    session = Session(model="claude-sonnet-4-5", counter=COUNTER, filters=False, window=POLICY)
    for message in history:
        if message["role"] == "assistant":
            session.render()
        session.append(message)
    return session, session.render()


def _shape(block: Any) -> tuple[Any, ...]:
    return (block["type"], block.get("id"), block.get("tool_use_id"))


def _text(block: dict[str, Any]) -> str:
    content = block["content"]
    if block["type"] == "mcp_tool_result":
        return str(content[0]["text"])
    if block["type"] == "web_fetch_tool_result":
        return str(content["content"]["source"]["data"])
    return str(content["stdout"])


def test_old_provider_tool_results_are_cleared_in_their_blocks() -> None:
    history = _history()
    session, result = _run(history)
    sent = result.to_anthropic()["messages"]
    validate_anthropic(sent)  # each server tool's result still follows its call
    assistants = [m for m in sent if m["role"] == "assistant"]
    originals = [m for m in history if m["role"] == "assistant"]
    # Every turn is still sent (nothing compacted), each block with its type and ids.
    assert len(assistants) == len(originals)
    for now, then in zip(assistants, originals, strict=True):
        assert [_shape(b) for b in now["content"]] == [_shape(b) for b in then["content"]]
    blocks = {b.get("tool_use_id"): b for m in assistants for b in m["content"]}
    state = session.window_state
    cleared = ["srvtoolu_0", "srvtoolu_b", "mcptoolu_0", "srvtoolu_1", "mcptoolu_1"]
    assert sorted(state.results_cleared) == sorted(cleared)
    for rid in cleared:
        assert ORIGINAL_NOTE.fullmatch(_text(blocks[rid])), rid
        # The original is stored whole, as a cleared client result is.
        original = next(b for m in originals for b in m["content"] if b.get("tool_use_id") == rid)
        stored = session.store.get(state.results_cleared[rid])
        assert json.loads(stored) == original
    assert _text(blocks["srvtoolu_2"]).startswith("fetched2")  # the last one kept whole
    # What the API needs in the block's shape stays: the return code and output file.
    ran = blocks["srvtoolu_b"]["content"]
    assert (ran["stderr"], ran["return_code"], ran["content"]) == (
        "",
        0,
        [{"type": "bash_code_execution_output", "file_id": "file_011"}],
    )
    # Encrypted search results have no text form: sent as they came, not counted as cleared.
    assert blocks["srvtoolu_s"] == _searched_and_ran()[0]["content"][1]
    decisions = [d for d in state.decisions if d.action == "cleared"]
    assert len(decisions) == len(cleared)
    sizes = [(d.tokens_before or 0, d.tokens_after or 0) for d in decisions]
    assert all(0 < after < before for before, after in sizes)
    saved = sum(before - after for before, after in sizes)
    assert saved > 30_000
    # The turn's original is the result's too.
    for message in session.transcript():
        if message.role == "assistant" and message.id not in result.kept_ids:
            pytest.fail(f"{message.id} was dropped")
    turn = next(m for m in result.messages if "srvtoolu_0" in json.dumps(m.content))
    original = result.original(turn.id)
    assert original is not None and "fetched0 word2000" in json.dumps(original.content)


def _responses_turn(k: int) -> list[dict[str, Any]]:
    logs = "\n".join(f"row {k}.{j}: {j * k}" for j in range(1_500))
    return [
        {"role": "user", "content": f"Look up item {k} and chart it."},
        {
            "type": "mcp_call",
            "id": f"mcp_{k}",
            "server_label": "docs",
            "name": "lookup",
            "arguments": json.dumps({"item": k}),
            "output": _page(k, 6_000),
        },
        {
            "type": "code_interpreter_call",
            "id": f"ci_{k}",
            "status": "completed",
            "code": f"print(chart({k}))",
            "container_id": "cntr_1",
            "outputs": [
                {"type": "logs", "logs": logs},
                {"type": "image", "url": f"https://files.example/chart{k}.png"},
            ],
        },
        {
            "type": "message",
            "id": f"msg_{k}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": f"Item {k} charted.", "annotations": []}],
        },
    ]


def test_old_responses_server_items_are_cleared_in_their_items() -> None:
    openai_responses = pytest.importorskip("openai.types.responses")
    import pydantic

    item_schema = pydantic.TypeAdapter(openai_responses.ResponseInputItemParam)
    session = Session(model="gpt-5", counter=COUNTER, filters=False, window=POLICY)
    for k in range(4):
        session.extend(from_openai(_responses_turn(k)))
        session.render()
    sent = session.render().to_openai(api="responses")
    for item in sent:
        item_schema.validate_python(item)
    by_id = {item["id"]: item for item in sent if "id" in item}
    assert {f"mcp_{k}" for k in range(4)} | {f"ci_{k}" for k in range(4)} <= by_id.keys()
    cleared = session.window_state.results_cleared
    assert {"mcp_0", "ci_0", "mcp_1", "ci_1"} <= cleared.keys()
    assert "ci_3" not in cleared
    for k in (0, 1):
        assert ORIGINAL_NOTE.fullmatch(by_id[f"mcp_{k}"]["output"])
        outputs = by_id[f"ci_{k}"]["outputs"]
        assert ORIGINAL_NOTE.fullmatch(outputs[0]["logs"])
        assert outputs[1] == {"type": "image", "url": f"https://files.example/chart{k}.png"}
        assert by_id[f"mcp_{k}"]["arguments"] == json.dumps({"item": k})
    assert by_id["ci_3"]["outputs"][0]["logs"].startswith("row 3.0")


_TEXT = _page(200, 6_000)
# Each shape a provider's tool result holds its text in: (call name, result type, content, the
# path of the text field that must hold the stand-in, what must stay as it came).
SHAPES: dict[str, tuple[str, str, Any, tuple[Any, ...], dict[str, Any]]] = {
    "code execution": (
        "code_execution",
        "code_execution_tool_result",
        {
            "type": "code_execution_result",
            "stdout": _TEXT,
            "stderr": "",
            "return_code": 0,
            "content": [],
        },
        ("stdout",),
        {"return_code": 0, "content": []},
    ),
    "file view": (
        "text_editor_code_execution",
        "text_editor_code_execution_tool_result",
        {
            "type": "text_editor_code_execution_view_result",
            "file_type": "text",
            "content": _TEXT,
            "numLines": 900,
            "startLine": 1,
            "totalLines": 900,
        },
        ("content",),
        {"file_type": "text", "numLines": 900},
    ),
    "file edit": (
        "text_editor_code_execution",
        "text_editor_code_execution_tool_result",
        {
            "type": "text_editor_code_execution_str_replace_result",
            "oldStart": 3,
            "oldLines": 1,
            "newStart": 3,
            "newLines": 1,
            "lines": _TEXT.split(" "),
        },
        ("lines", 0),
        {"oldStart": 3, "newLines": 1},
    ),
    "MCP text": ("search_issues", "mcp_tool_result", _TEXT, (), {}),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_each_result_shape_gets_the_stand_in_where_its_text_was(shape: str) -> None:
    name, kind, content, path, kept = SHAPES[shape]
    call_type = "mcp_tool_use" if kind == "mcp_tool_result" else "server_tool_use"
    call: dict[str, Any] = {"type": call_type, "id": "toolu_x", "name": name, "input": {}}
    if call_type == "mcp_tool_use":
        call["server_name"] = "tracker"
    turn: list[dict[str, Any]] = [
        {
            "role": "assistant",
            "content": [call, {"type": kind, "tool_use_id": "toolu_x", "content": content}],
        },
        {"role": "user", "content": "Go on."},
    ]
    history = _history()
    at = history.index(_mcp(0)[0])
    history[at : at + 2] = turn
    session, result = _run(history)
    sent = result.to_anthropic()["messages"]
    validate_anthropic(sent)
    blocks = [b for m in sent if isinstance(m["content"], list) for b in m["content"]]
    block = next(b for b in blocks if b.get("tool_use_id") == "toolu_x")
    assert "toolu_x" in session.window_state.results_cleared
    text: Any = block["content"]
    for key in path:
        text = text[key]
    assert ORIGINAL_NOTE.fullmatch(text)
    assert {k: block["content"][k] for k in kept} == kept


def test_a_filtered_result_cleared_later_stores_the_result_as_it_came() -> None:
    """Filtered at arrival, then cleared: the stored original is the result the provider sent,
    not its filtered version (as a cleared client output names its original)."""
    policy = WindowPolicy(window=8_000, managed_room=None, clear_at=0.35, compact_at=0.6, keep=1)
    session = Session(model="claude-sonnet-4-5", counter=COUNTER, window=policy)
    history = _history()
    for message in history:
        if message["role"] == "assistant":
            session.render()
        session.append(message)
    assert any(r.result_id and r.shortened for r in session.records)
    cleared = session.window_state.results_cleared
    assert cleared
    for rid, artifact in cleared.items():
        original = next(
            b
            for m in history
            if m["role"] == "assistant"
            for b in m["content"]
            if b.get("tool_use_id") == rid
        )
        assert json.loads(session.store.get(artifact)) == original, rid
