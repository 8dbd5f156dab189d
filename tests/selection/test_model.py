"""Selection: the answer shape, a schema strict structured outputs accept, clear validation."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from ctxpack.cost import Price
from ctxpack.errors import ConfigError, SelectionError
from ctxpack.selection import Selection, SelectorUsage

from .helpers import answer

EXAMPLE_ANSWER = """
{"include_messages": [2, 7, 11],
 "include_files": [{"path": "src/auth.ts", "lines": "48-126"},
                   {"path": "tests/auth.test.ts", "match": "refresh token"}],
 "include_tool_results": ["call_184"],
 "durable_notes": ["The user rejected cookie-based sessions."],
 "omit_reason": "Irrelevant build logs and stale files"}
"""


def test_the_example_answer_is_a_selection() -> None:
    s = Selection.from_answer(EXAMPLE_ANSWER)
    assert s.include_messages == [2, 7, 11]
    assert s.include_files[0].line_range == (48, 126)
    assert s.include_files[1].match == "refresh token"
    assert s.include_tool_results == ["call_184"]
    assert s.durable_notes == ["The user rejected cookie-based sessions."]
    assert s.omit_reason == "Irrelevant build logs and stale files"


def _objects(schema: Any) -> list[dict[str, Any]]:
    if isinstance(schema, dict):
        found = [schema] if schema.get("type") == "object" else []
        return found + [o for value in schema.values() for o in _objects(value)]
    if isinstance(schema, list):
        return [o for value in schema for o in _objects(value)]
    return []


def test_the_schema_follows_strict_mode_rules() -> None:
    schema = Selection.json_schema()
    objects = _objects(schema)
    assert len(objects) == 3  # the selection, a file request, an item reason
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])
    # Only the fields a model fills: who chose and at what cost are the selector's to say.
    assert set(schema["properties"]) == {
        "include_messages",
        "include_files",
        "include_tool_results",
        "durable_notes",
        "omit_reason",
        "include_reason",
        "uncertain",
        "reasons",
    }


def test_a_selection_round_trips_through_its_schema() -> None:
    s = Selection.from_answer(EXAMPLE_ANSWER)
    data = s.answer()
    jsonschema.validate(data, Selection.json_schema())
    assert Selection.from_answer(data) == s


def test_strict_nulls_mean_not_given() -> None:
    s = Selection.from_answer(
        answer(include_files=[{"path": "a.py", "lines": None, "match": None}], uncertain=None)
    )
    assert s.include_files[0].line_range is None and s.uncertain == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"include_messages": [1,', "not JSON"),
        ("[1, 2]", "JSON list, not an object"),
        ('{"selector": "me"}', "unknown field(s) selector"),
        ('{"include_files": [{"path": "a.ts", "lines": "126-48"}]}', "include_files.0.lines"),
        ('{"include_files": [{"path": "a.ts", "lines": "x"}]}', "not a range"),
        ('{"include_files": [{"path": "a.ts", "lines": "1-2", "match": "x"}]}', "not both"),
        ('{"include_messages": [-1]}', "not a message index"),
        ('{"include_messages": [true]}', "not a message index"),
    ],
)
def test_an_invalid_answer_names_the_problem(text: str, expected: str) -> None:
    with pytest.raises(SelectionError) as caught:
        Selection.from_answer(text)
    assert expected in str(caught.value)
    assert caught.value.problems


def test_usage_is_billed_at_the_small_models_price() -> None:
    small = Price(
        input=0.25, output=1.5, cache_write_5m=0.3125, cache_write_1h=0.5, cache_read=0.025
    )
    usage = SelectorUsage(calls=1, input_tokens=100_000, output_tokens=10_000)
    assert usage.cost(small) == pytest.approx(0.025 + 0.015)
    with pytest.raises(ConfigError, match="cache_read_tokens"):
        SelectorUsage(input_tokens=10, cache_read_tokens=8, cache_write_tokens=3)
    total = usage + SelectorUsage(calls=1, input_tokens=1, output_tokens=2, exact=False)
    assert (total.calls, total.input_tokens, total.output_tokens, total.exact) == (
        2,
        100_001,
        10_002,
        False,
    )
