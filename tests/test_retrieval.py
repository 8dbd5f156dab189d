"""The retrieve tool against a hostile caller: every bad call answered in words, fast.

The model calls this tool, and what it read may steer it; each call below once hung, raised or
answered with an empty page. Time is measured as processor time, which is what the tool bounds
(and what a busy machine does not inflate); the wall-clock bound only catches a hang.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from ctxpack import ConfigError, Session
from ctxpack.retrieval import (
    MAX_CONTEXT,
    MAX_REGEX_CHARS,
    RETRIEVE_TOOL_NAME,
    handle_retrieve_call,
    read_artifact,
    retrieve_tool,
)
from ctxpack.store import SQLiteArtifactStore

from .api_rules import openai_tools_problems
from .helpers import ORIGINAL_NOTE

SIXTY_K_LINES = "\n".join(f"line {i} " + "a" * 30 for i in range(60_000))
A_RUN = "a" * 5_000 + "!"  # (a+)+$ backtracks exponentially on it


def _deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def _answer(store: SQLiteArtifactStore, **args: object) -> tuple[str, float]:
    """The call's answer and the processor time it took: its budget's measure, which a busy
    machine's waits do not count (a call that hangs meets the suite's per-test timeout)."""
    start = time.process_time()
    answer = handle_retrieve_call(store, args)
    return answer, time.process_time() - start


@pytest.fixture(scope="module")
def store() -> SQLiteArtifactStore:
    return SQLiteArtifactStore(":memory:")


HOSTILE: dict[str, Callable[[SQLiteArtifactStore], dict[str, object]]] = {
    "catastrophic regex": lambda s: {"artifact": s.put(A_RUN), "regex": "(a+)+$"},
    "catastrophic regex over many lines": lambda s: {
        "artifact": s.put("\n".join([A_RUN] * 50)),
        "regex": "(a|aa)+$",
    },
    "huge context on 60k lines": lambda s: {
        "artifact": s.put(SIXTY_K_LINES),
        "regex": "a",
        "context": 60_000,
    },
    "json path $ on deep JSON": lambda s: {
        "artifact": s.put(_deep_json(100_000)),
        "json_path": "$",
    },
    "json path [0] on deep JSON": lambda s: {
        "artifact": s.put(_deep_json(100_000)),
        "json_path": "$[0]",
    },
    "5000-digit line number": lambda s: {"artifact": s.put("a\nb"), "lines": "9" * 5_000},
    "range past the end": lambda s: {"artifact": s.put("a\nb\nc"), "lines": "10-20"},
    "regex too long": lambda s: {"artifact": s.put("a"), "regex": "a" * (MAX_REGEX_CHARS + 1)},
    "invalid regex": lambda s: {"artifact": s.put("a"), "regex": "(unclosed"},
    "regex not a string": lambda s: {"artifact": s.put("a"), "regex": 42},
    "json path not a string": lambda s: {"artifact": s.put("{}"), "json_path": ["$"]},
    "json path of a thousand steps": lambda s: {
        "artifact": s.put("{}"),
        "json_path": "$" + ".a" * 1_000,
    },
    "lines as a list": lambda s: {"artifact": s.put("a"), "lines": [1, 2]},
    "page as a string": lambda s: {"artifact": s.put("a"), "page": "2"},
    "page past the end": lambda s: {"artifact": s.put("a"), "page": 99},
    "negative context": lambda s: {"artifact": s.put("a"), "regex": "a", "context": -1},
    "context a float": lambda s: {"artifact": s.put("a"), "regex": "a", "context": 2.5},
    "two selectors": lambda s: {"artifact": s.put("a"), "regex": "a", "lines": "1"},
    "unknown artifact a megabyte long": lambda s: {"artifact": "art_" + "0" * 1_000_000},
    "artifact not a string": lambda s: {"artifact": 7},
    "unknown argument": lambda s: {"artifact": s.put("a"), "grep": "a"},
    "nested counted repeats": lambda s: {
        "artifact": s.put("a" * 100),
        "regex": "(?:(?:a{1000}){1000}){1000}",
    },
    "page of 5000 digits": lambda s: {"artifact": s.put("a"), "page": 10**5000},
    "lines of 5000 digits as a number": lambda s: {"artifact": s.put("a"), "lines": 10**5000},
}


@pytest.mark.parametrize(
    "raw",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"artifact": "art_0", "page": ' + "9" * 5_000 + "}",
        "not json",
        "[1, 2]",
    ],
    ids=["nested arguments", "5000-digit number", "not JSON", "not an object"],
)
def test_unreadable_arguments_are_answered_in_words(store: SQLiteArtifactStore, raw: str) -> None:
    call = {
        "id": "c",
        "type": "function",
        "function": {"name": RETRIEVE_TOOL_NAME, "arguments": raw},
    }
    answer = handle_retrieve_call(store, call)
    assert answer.startswith("error: ")
    assert len(answer) < 2_000


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_call_is_answered_in_words_under_a_second(
    store: SQLiteArtifactStore, name: str
) -> None:
    args = HOSTILE[name](store)
    answer, seconds = _answer(store, **args)
    assert answer.startswith("error: "), answer[:300]
    assert len(answer) < 2_000
    assert seconds < 1.0, f"{name}: {seconds:.2f} s of processor time"


def test_catastrophic_regex_error_says_why_and_what_to_do(store: SQLiteArtifactStore) -> None:
    answer, _ = _answer(store, artifact=store.put(A_RUN), regex="(a+)+$")
    assert "took more than" in answer
    assert "lines=" in answer


def test_a_plain_search_through_a_large_artifact_finishes(store: SQLiteArtifactStore) -> None:
    # 10 MB of short lines spend a fixed quarter second on their own; the long line at the end
    # then needs some milliseconds, which a budget that did not grow with the artifact lacked.
    text = "INFO worker processed an item\n" * 350_000 + "ab " * 350_000 + "LASTLINEMARK"
    answer = handle_retrieve_call(store, {"artifact": store.put(text), "regex": r"\w{12}"})
    assert not answer.startswith("error:"), answer[:300]
    assert "350001 lines in all, 1 matches" in answer


def test_a_plain_search_on_a_busy_machine_is_not_failed_by_the_time_it_waits(
    store: SQLiteArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A busy machine, simulated: every reading of a wall clock finds a second gone, as if the
    # search had waited for a core that long between two lines. Only the CPU time it spends
    # counts against its budget.
    from ctxpack._internal import regex_search

    class _BusyClock:
        def __init__(self) -> None:
            self.wall = time.monotonic()

        def __getattr__(self, name: str) -> object:
            return getattr(time, name)

        def monotonic(self) -> float:
            self.wall += 1.0
            return self.wall

        perf_counter = time = monotonic

    monkeypatch.setattr(regex_search, "time", _BusyClock())
    answer = handle_retrieve_call(store, {"artifact": store.put(SIXTY_K_LINES), "regex": "line 59"})
    assert not answer.startswith("error:"), answer[:300]
    assert "1111 matches" in answer


def test_a_line_whose_search_ran_out_of_wall_time_while_waiting_is_searched_again(
    store: SQLiteArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The regex package times a line's search on the wall clock: a thread the machine kept
    # waiting longer than the CPU time left failed an ordinary search ("took more than").
    from ctxpack._internal import regex_search

    real_compile = regex_search.regex_engine.compile

    class _Waited:
        def __init__(self, pattern: Any) -> None:
            self.pattern, self.waited = pattern, False

        def search(self, line: str, timeout: float) -> Any:
            if not self.waited and "line 59" in line:
                self.waited = True  # its wall-time timeout ran out as the thread waited
                raise TimeoutError
            return self.pattern.search(line, timeout=timeout)

    monkeypatch.setattr(
        regex_search.regex_engine, "compile", lambda *a, **k: _Waited(real_compile(*a, **k))
    )
    answer = handle_retrieve_call(store, {"artifact": store.put(SIXTY_K_LINES), "regex": "line 59"})
    assert not answer.startswith("error:"), answer[:300]
    assert "1111 matches" in answer


def test_a_catastrophic_regex_on_a_large_artifact_is_stopped_within_its_budget(
    store: SQLiteArtifactStore,
) -> None:
    text = "\n".join([A_RUN] * 400)  # 2 MB: a budget of two quarter seconds
    answer, seconds = _answer(store, artifact=store.put(text), regex="(a|aa)+$")
    assert answer.startswith("error: regex='(a|aa)+$' took more than 0.5 s"), answer[:300]
    assert seconds < 2.0


def test_range_past_the_end_names_the_length(store: SQLiteArtifactStore) -> None:
    answer, _ = _answer(store, artifact=store.put("a\nb\nc"), lines="10-20")
    assert "3 lines" in answer


def test_a_range_running_past_the_end_reads_to_the_end(store: SQLiteArtifactStore) -> None:
    ref = store.put("a\nb\nc")
    assert read_artifact(store, ref, lines="2-99").text == "b\nc"


def test_context_at_the_cap_is_answered_and_each_line_shown_once(
    store: SQLiteArtifactStore,
) -> None:
    start = time.process_time()
    out = read_artifact(store, store.put(SIXTY_K_LINES), regex="a", context=MAX_CONTEXT)
    # Each line shown once costs half a second; shown once per match around it, tens of
    # seconds. The bound sits between, far from both, for a slower or busier processor.
    assert time.process_time() - start < 5.0
    assert out.matches == 60_000
    assert out.pages > 1


def test_overlapping_context_is_merged_as_grep_does(store: SQLiteArtifactStore) -> None:
    ref = store.put("\n".join(["x", "hit", "x", "hit", "x", "x", "x", "x", "hit"]))
    out = read_artifact(store, ref, regex="hit", context=1)
    assert out.text.split("\n") == ["1-x", "2:hit", "3-x", "4:hit", "5-x", "--", "8-x", "9:hit"]


def test_json_path_reads_deep_documents_within_the_limit(store: SQLiteArtifactStore) -> None:
    nested: object = {"leaf": 1}
    for _ in range(500):
        nested = {"a": nested}
    ref = store.put(json.dumps(nested))
    path = "$" + ".a" * 99
    out = read_artifact(store, ref, json_path=path)
    assert out.matches == 1


def test_redacts_secrets_the_store_holds(store: SQLiteArtifactStore) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    ref = store.put(f"GITHUB_TOKEN={token}\nok")
    assert token not in handle_retrieve_call(store, {"artifact": ref})
    assert "[REDACTED github-pat]" in handle_retrieve_call(store, {"artifact": ref})
    assert token in handle_retrieve_call(store, {"artifact": ref}, redact_secrets=False)


def test_anthropic_and_openai_calls_are_read(store: SQLiteArtifactStore) -> None:
    ref = store.put("a\nb")
    openai_call = {
        "id": "c1",
        "type": "function",
        "function": {"name": RETRIEVE_TOOL_NAME, "arguments": json.dumps({"artifact": ref})},
    }
    anthropic_call = {"type": "tool_use", "name": RETRIEVE_TOOL_NAME, "input": {"artifact": ref}}
    assert handle_retrieve_call(store, openai_call).endswith("a\nb")
    assert handle_retrieve_call(store, anthropic_call).endswith("a\nb")


def test_a_bad_artifact_or_argument_is_answered_as_it_is(store: SQLiteArtifactStore) -> None:
    # An int artifact was answered "the artifact argument is required", and the valid arguments
    # as "artifact, ['context', ...]".
    ref = store.put("a")
    assert handle_retrieve_call(store, {"artifact": 5}) == (
        "error: artifact must be a string, an art_... id, got int"
    )
    assert handle_retrieve_call(store, {}) == (
        "error: the artifact argument is required (the art_... id a marker names)"
    )
    assert handle_retrieve_call(store, {"artifact": ref, "grep": "a", "n": 1}) == (
        "error: unknown argument(s) 'grep', 'n'; "
        "valid: artifact, lines, regex, context, json_path, page"
    )


def test_a_tool_call_without_its_function_is_the_callers_error(store: SQLiteArtifactStore) -> None:
    # It was answered "the artifact argument is required", which the model cannot act on.
    call = {"id": "c1", "type": "function", "function": None}
    with pytest.raises(ConfigError, match=r"^call\.function must be an object .*, got None$"):
        handle_retrieve_call(store, call)
    with pytest.raises(ConfigError, match=r"^call\.function"):
        Session().handle(call)


def test_counted_repeats_within_reason_still_run(store: SQLiteArtifactStore) -> None:
    ref = store.put("ab" * 50 + "\nxyz")
    assert read_artifact(store, ref, regex="(?:ab){50}", context=0).matches == 1
    assert read_artifact(store, ref, regex="^[x-z]{3}$", context=0).matches == 1


def test_the_tool_tells_the_model_the_form_every_original_note_has() -> None:
    description = retrieve_tool("anthropic")["description"]
    assert "'[ctxpack: ... artifact art_...]'" in description
    shown = "[ctxpack: a view cleared; original: artifact art_0123456789abcdef]"
    assert ORIGINAL_NOTE.fullmatch(shown)


def test_json_path_on_a_number_too_long_to_read_names_the_artifact(
    store: SQLiteArtifactStore,
) -> None:
    ref = store.put('{"a": ' + "1" * 5_000 + "}")
    with pytest.raises(
        ConfigError, match=f"json_path needs an artifact whose JSON can be read; {ref}"
    ):
        read_artifact(store, ref, json_path="$.a")


def test_the_strict_retrieve_tool_is_the_loose_one_in_openais_strict_mode() -> None:
    # chat.completions.parse takes strict function tools only; OpenAI's strict mode needs
    # additionalProperties false and every property required, the optional ones nullable.
    strict, loose = retrieve_tool(strict=True), retrieve_tool()
    assert strict["function"]["strict"] is True
    assert openai_tools_problems([strict], strict_only=True) == []
    schema = strict["function"]["parameters"]
    assert sorted(schema["required"]) == sorted(loose["function"]["parameters"]["properties"])
    assert schema["properties"]["artifact"]["type"] == "string"
    assert schema["properties"]["context"]["type"] == ["integer", "null"]
    # Anthropic's tool has no strict variant here: the same definition either way.
    assert retrieve_tool("anthropic", strict=True) == retrieve_tool("anthropic")
    with pytest.raises(ConfigError, match="strict"):
        retrieve_tool(strict="yes")  # type: ignore[arg-type]


def test_a_strict_call_with_null_arguments_reads_them_as_absent(
    store: SQLiteArtifactStore,
) -> None:
    # The strict tool's model sends every argument: context=None and page=None were refused.
    ref = store.put("alpha\nbeta\ngamma")
    nulls = {"lines": None, "regex": None, "context": None, "json_path": None, "page": None}
    call = {
        "id": "call_1",
        "type": "function",
        "function": {
            "name": "retrieve_original",
            "arguments": json.dumps({"artifact": ref, **nulls, "regex": "beta"}),
        },
    }
    answer = handle_retrieve_call(store, call)
    assert answer.startswith(f"[{ref}: regex 'beta' (2 lines of context)") and "2:beta" in answer
    whole = Session(model="gpt-4o").handle({"artifact": "art_0", **nulls})
    assert whole.startswith("error: no artifact 'art_0'")
    assert handle_retrieve_call(store, {"artifact": ref, **nulls}).startswith(f"[{ref}: whole")
