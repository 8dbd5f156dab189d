"""A JSON payload nested deeper than the filter walks: the values past the depth limit are
hidden behind a note naming their path, the rest slimmed as usual; the result stays JSON."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from ctxpack import Session, count_tokens
from ctxpack.filters import JSONPayloadFilter, ToolOutput, ToolOutputFilter

ITEMS = [{"name": f"n{i}", "status": "ok", "id": i} for i in range(2_000)]


def _nested(depth: int, *, indent: bool) -> str:
    inner = json.dumps({"items": ITEMS}, indent=2 if indent else None)
    if indent:
        return '{\n  "data":\n' * depth + inner + "\n}" * depth
    return '{"data":' * depth + inner + "}" * depth


def _session_with(text: str) -> Session:
    session = Session(model="gpt-4")
    args = json.dumps({"path": "/v1/search"})
    session.extend(
        [
            {"role": "user", "content": "Find the failing item."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "api", "arguments": args}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": text},
        ]
    )
    return session


@pytest.mark.parametrize("indent", [True, False])
def test_json_nested_past_the_walk_is_shortened_and_stays_json(indent: bool) -> None:
    # 600 levels: the walk raised RecursionError and the payload was kept whole (66,862
    # tokens when indented; compact, its one line was cut and no longer JSON).
    text = _nested(600, indent=indent)
    out = ToolOutputFilter()(text, tool="api")
    assert out.kind == "json" and out.shortened
    assert "1 values nested deeper than 100 levels hidden" in out.summary
    body = out.text.rsplit("\n", 1)[0]
    slim: Any = json.loads(body)
    for _ in range(100):
        slim = slim["data"]
    assert (
        slim
        == "[… an object of 1 key nested deeper than 100 levels hidden: json_path $"
        + (".data" * 100)
        + "]"
    )
    assert count_tokens(out.text) < 1_000 < count_tokens(text) // 40
    # The original stays whole in the store, every item readable.
    session = _session_with(text)
    record = next(r for r in session.records if r.shortened)
    assert record.artifact is not None and session.store.get(record.artifact) == text
    found = session.retrieve(record.artifact, regex='"n1999"')
    assert found.matches == 1


def test_the_note_names_a_path_retrieve_reads() -> None:
    text = _nested(140, indent=True)
    out = JSONPayloadFilter().extract(ToolOutput(text))
    assert out is not None and "1 values nested deeper than 100 levels hidden" in out.summary
    path = re.search(r"json_path (\$[.\w]*)\]", out.text)
    assert path is not None and path[1] == "$" + ".data" * 100
    session = _session_with(text)
    record = next(r for r in session.records if r.shortened)
    assert record.artifact is not None
    first = session.retrieve(record.artifact, json_path=path[1])
    last = session.retrieve(record.artifact, json_path=path[1], page=first.pages)
    assert first.matches == 1 and '"n0"' in first.text and '"n1999"' in last.text


def test_shallow_payloads_are_slimmed_as_before() -> None:
    doc = {"data": {"result": {"items": ITEMS}}}
    out = JSONPayloadFilter().extract(ToolOutput(json.dumps(doc)))
    assert out is not None and "nested" not in out.summary
    slim = json.loads(out.text)
    assert slim["data"]["result"]["items"][:2] == [
        {"name": "n0", "status": "ok"},
        {"name": "n1", "status": "ok"},
    ]
    assert slim["data"]["result"]["items"][-1] == "[… 1995 more items hidden]"
    # 100 levels, the last the items' fields: walked whole, as before.
    deepest = JSONPayloadFilter().extract(ToolOutput(_nested(97, indent=False)))
    assert deepest is not None and deepest.summary == "5 noise fields and 1995 array items hidden"
