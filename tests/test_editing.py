"""ToolResultClearer and Compactor: Anthropic's semantics, the cache-aware batches, compaction,
the digest, and provider validity after each edit."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import Message, Pipeline
from ctxpack.editing import NOT_ENOUGH_MESSAGES, Compactor, ToolResultClearer, extractive_digest
from ctxpack.store import SQLiteArtifactStore, artifact_id
from ctxpack.testing import check_stage

from .helpers import cpu_seconds


def words(text: str) -> int:
    """A token counter that counts words: sizes in these tests are easy to read."""
    return len(text.split())


BIG = 10**9


def call(call_id: str, name: str = "bash", **args: Any) -> dict[str, Any]:
    arguments = json.dumps(args or {"command": f"run {call_id}"})
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def agent_history(
    outputs: Sequence[int], *, names: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """A system prompt, a task, then one tool exchange per output size (in words)."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent.", "id": "sys"},
        {"role": "user", "content": "Fix the failing test. Never push to main.", "id": "task"},
    ]
    for i, size in enumerate(outputs):
        name = names[i] if names else "bash"
        history.append(
            {
                "role": "assistant",
                "content": f"Step {i}: I'll look at part {i}.",
                "tool_calls": [call(f"c{i}", name, command=f"cat src/part_{i}.py")],
                "id": f"a{i}",
            }
        )
        history.append(
            {
                "role": "tool",
                "tool_call_id": f"c{i}",
                "content": f"<returncode>0</returncode> out{i} " + "w " * size,
                "id": f"t{i}",
            }
        )
    return history


def clear(history: Sequence[Any], **options: Any) -> ctxpack.PackResult:
    stage = ToolResultClearer(**options)
    return ctxpack.pack(history, budget=BIG, counter=words, pipeline=Pipeline([stage]))


def cleared_ids(result: ctxpack.PackResult) -> list[str]:
    return [d.message_id for d in result.decisions if d.action == "cleared"]


# ------------------------------------------------------------ Anthropic semantics (plain mode)


def test_nothing_is_cleared_under_the_trigger() -> None:
    history = agent_history([100] * 5)
    result = clear(history, trigger=1_000, cache_aware=False)
    assert cleared_ids(result) == []
    assert [m.content for m in result.messages] == [m["content"] for m in history]


def test_over_the_trigger_every_result_but_the_last_keep_is_cleared_and_inputs_stay() -> None:
    history = agent_history([100] * 5)
    result = clear(history, trigger=300, keep=2, cache_aware=False)
    assert cleared_ids(result) == ["t0", "t1", "t2"]
    by_id = {m.id: m for m in result.messages}
    for i in range(3):
        original = history[3 + 2 * i]["content"]
        assert by_id[f"t{i}"].text == (
            f"[ctxpack: old tool result cleared to save context; original: artifact "
            f"{artifact_id(original)}]"
        )
        assert result.original(f"t{i}").text == original  # type: ignore[union-attr]
        # The call that produced it is untouched: the model still sees what it did.
        assert (
            by_id[f"a{i}"].tool_calls
            == ctxpack.messages.ensure_messages(history)[2 + 2 * i].tool_calls
        )
    assert by_id["t3"].text == history[9]["content"]
    assert by_id["t4"].text == history[11]["content"]
    for d in result.decisions:
        if d.action == "cleared":
            assert d.tokens_before is not None and d.tokens_after is not None
            assert d.tokens_before > 100 > d.tokens_after


def test_plain_clearing_moves_its_boundary_at_every_new_result() -> None:
    # The Anthropic semantics the cache-aware mode avoids: one more result, one more clear.
    history = agent_history([100] * 6)
    assert cleared_ids(clear(history[:10], trigger=300, cache_aware=False)) == ["t0"]
    assert cleared_ids(clear(history[:12], trigger=300, cache_aware=False)) == ["t0", "t1"]
    assert cleared_ids(clear(history, trigger=300, cache_aware=False)) == ["t0", "t1", "t2"]


@pytest.mark.parametrize(("keep", "expected"), [(0, 5), (3, 2), (5, 0), (9, 0)])
def test_keep_counts_the_most_recent_tool_results(keep: int, expected: int) -> None:
    result = clear(agent_history([100] * 5), trigger=300, keep=keep, cache_aware=False)
    assert cleared_ids(result) == [f"t{i}" for i in range(expected)]


def test_clear_at_least_skips_a_clear_that_removes_too_little() -> None:
    history = agent_history([100] * 5)
    assert cleared_ids(clear(history, trigger=300, keep=3, clear_at_least=150, cache_aware=False))
    assert not cleared_ids(
        clear(history, trigger=300, keep=3, clear_at_least=500, cache_aware=False)
    )


def test_excluded_tools_are_never_cleared() -> None:
    history = agent_history([100] * 5, names=["memory", "bash", "memory", "bash", "bash"])
    result = clear(history, trigger=300, keep=1, exclude_tools=("memory",), cache_aware=False)
    assert cleared_ids(result) == ["t1", "t3"]


def test_clear_tool_inputs_empties_the_arguments_of_the_cleared_calls() -> None:
    history = agent_history([100] * 3)
    result = clear(history, trigger=200, keep=1, clear_tool_inputs=True, cache_aware=False)
    by_id = {m.id: m for m in result.messages}
    assert [c.function.arguments for c in by_id["a0"].tool_calls or ()] == ["{}"]
    assert "cat src/part_2.py" in (by_id["a2"].tool_calls or [])[0].function.arguments
    original = result.original("a0")
    assert original is not None and original.tool_calls is not None
    assert "src/part_0.py" in original.tool_calls[0].function.arguments


def test_originals_go_to_the_store_under_the_id_the_placeholder_names() -> None:
    store = SQLiteArtifactStore(":memory:")
    history = agent_history([100] * 3)
    result = clear(history, trigger=200, keep=1, cache_aware=False, store=store)
    placeholder = next(m.text for m in result.messages if m.id == "t0")
    ref = placeholder.split("artifact ")[1].rstrip(".]")
    assert store.get(ref) == history[3]["content"]
    assert store.metadata(ref)["message_id"] == "t0"


def test_custom_placeholder() -> None:
    result = clear(
        agent_history([100] * 3), trigger=200, keep=1, cache_aware=False, placeholder="[cleared]"
    )
    assert {m.id: m.text for m in result.messages}["t0"] == "[cleared]"


def test_thinking_blocks_are_cleared_except_the_last_turns() -> None:
    payload = json.loads(
        (
            __import__("pathlib").Path(__file__).parent / "adapters/fixtures/anthropic_tools.json"
        ).read_text()
    )
    messages = ctxpack.from_anthropic(payload["messages"], system=payload["system"])
    stage = ToolResultClearer(trigger=0, keep=9, clear_thinking=1, cache_aware=False)
    result = ctxpack.pack(messages, budget=BIG, pipeline=Pipeline([stage]))
    thinking = [
        m.id
        for m in result.messages
        if isinstance(m.content, list)
        and any(p.get("type") in ("thinking", "redacted_thinking") for p in m.content)
    ]
    with_thinking = [
        m.id
        for m in messages
        if isinstance(m.content, list)
        and any(p.get("type") in ("thinking", "redacted_thinking") for p in m.content)
    ]
    assert len(with_thinking) >= 2
    assert thinking == with_thinking[-1:]
    ctxpack.adapters.validate_anthropic(result.to_anthropic())


def test_thinking_litellm_returns_beside_a_message_is_cleared_as_blocks_are() -> None:
    """LiteLLM's reply from Claude holds its thinking beside the message (``thinking_blocks``,
    ``reasoning_content``): clear_thinking left it in every turn, sent to Claude as thinking
    blocks, while the same thinking in content was cleared."""
    block = {"type": "thinking", "thinking": "Think it over. " * 40, "signature": "sig"}
    history: list[dict[str, Any]] = []
    for i in range(3):
        history += [
            {"role": "user", "content": f"Question {i}?", "id": f"u{i}"},
            {
                "role": "assistant",
                "content": f"Answer {i}.",
                "reasoning_content": block["thinking"],
                "thinking_blocks": [block],
                "id": f"a{i}",
            },
        ]
    stage = ToolResultClearer(trigger=0, keep=9, clear_thinking=1, cache_aware=False)
    result = ctxpack.pack(history, budget=BIG, pipeline=Pipeline([stage]), counter="cl100k_base")
    sent = {m.id: m for m in result.messages}
    assert [i for i in ("a0", "a1", "a2") if "thinking_blocks" in sent[i].extras] == ["a2"]
    assert "reasoning_content" not in sent["a0"].extras
    assert sent["a0"].text == "Answer 0."
    cleared = [d for d in result.decisions if d.action == "cleared"]
    assert [d.message_id for d in cleared] == ["a0", "a1"]
    assert all(d.tokens_after < d.tokens_before for d in cleared)
    assert result.original("a0").extras["thinking_blocks"] == [block]
    turns = result.to_anthropic()["messages"]
    assert [isinstance(t["content"], list) for t in turns] == [False] * 5 + [True]


def test_invalid_options_raise_config_errors() -> None:
    with pytest.raises(ctxpack.ConfigError, match="keep"):
        ToolResultClearer(keep=-1)
    with pytest.raises(ctxpack.ConfigError, match="no price for model"):
        ToolResultClearer(model="not-a-model")
    with pytest.raises(ctxpack.ConfigError, match="valid options are"):
        ToolResultClearer(triger=5)


def test_the_stages_keep_the_stage_contract() -> None:
    history = agent_history([100] * 5)
    check_stage(ToolResultClearer(trigger=300, keep=1, cache_aware=False), examples=[history])
    check_stage(ToolResultClearer(trigger=300, keep=1, expected_resends=50), examples=[history])
    check_stage(ToolResultClearer())
    check_stage(Compactor())


# ---------------------------------------------------------------------------- cache-aware mode


# Sonnet's prices with a cache that keeps prefixes of any length: these short prompts are
# below its minimum cacheable length, where nothing is cached and an edit rewrites nothing the
# request would not write anyway.
SONNET_ANY_LENGTH = ctxpack.cost.price("claude-sonnet-4-5").model_copy(
    update={"min_cacheable_tokens": 0}
)


def test_a_clear_that_does_not_pay_for_its_cache_rewrite_is_not_made() -> None:
    history = agent_history([100] * 6)
    # Re-sent once, the removed tokens save 0.3 $/M each; the rewrite costs 3.45 $/M a token
    # (the write, 3.75, less the read it replaces).
    cache = {"trigger": 300, "keep": 1, "price": SONNET_ANY_LENGTH}
    assert not cleared_ids(clear(history, expected_resends=1, **cache))
    assert cleared_ids(clear(history, expected_resends=100, **cache))


def test_below_the_minimum_cacheable_length_a_clear_rewrites_nothing_and_goes() -> None:
    # Nothing shorter than 1,024 tokens is cached for Sonnet: every request writes its whole
    # prompt, edited or not, so a clear costs no rewrite and goes at once, however few re-sends
    # it can expect.
    history = agent_history([100] * 6)
    assert cleared_ids(clear(history, trigger=300, keep=1, expected_resends=1))


def test_the_rule_reads_the_price_of_the_model() -> None:
    history = agent_history([100] * 6)
    free_reads = ctxpack.cost.Price(
        input=3, output=15, cache_write_5m=3.75, cache_write_1h=6, cache_read=0
    )
    assert not cleared_ids(
        clear(history, trigger=300, keep=1, expected_resends=100, price=free_reads)
    )


def test_the_rewrite_costs_the_write_less_the_read_it_replaces() -> None:
    # At the request before a3, clearing t0 removes 91 tokens and rewrites 266 (from t0 on), of
    # which the 127 appended since the request before (a2, t2 and the reply's priming) are
    # written anyway: the other 139 would have been read from the cache. 18 re-sends save
    # 91 x 0.3 x 18 = 491.4, more than (3.75 - 0.3) x 139 = 479.55 though less than the full
    # write, 3.75 x 139 = 521.25, or the rewrite priced whole. The batch goes there, as the
    # managed window's rule says. Sonnet's prices, with a cache at every message boundary (a
    # Gemini model's, which reads a prefix whole, not in OpenAI's 128-token increments) that
    # keeps prefixes of any length: what precedes t0 is read.
    history = ctxpack.messages.ensure_messages(agent_history([100] * 6))
    cache = {"model": "gemini-2.5-pro", "price": SONNET_ANY_LENGTH}
    stage = ToolResultClearer(trigger=300, keep=2, expected_resends=18, **cache)
    batches = stage.batches(history, counter=ctxpack.get_counter(counter=words))
    assert batches[0] == ctxpack.editing.ClearBatch(8, ("t0",), 91, 266)
    fewer = ToolResultClearer(trigger=300, keep=2, expected_resends=17, **cache)
    assert fewer.batches(history, counter=ctxpack.get_counter(counter=words))[0].position > 8


def test_cache_aware_clearing_happens_in_batches_not_one_result_per_turn() -> None:
    history = agent_history([100] * 30)
    stage = ToolResultClearer(trigger=800, keep=2, price=SONNET_ANY_LENGTH)
    counter = ctxpack.get_counter(counter=words)
    batches = stage.batches(ctxpack.messages.ensure_messages(history), counter=counter)
    assert 1 <= len(batches) <= 6
    assert all(len([i for i in b.message_ids if i.startswith("t")]) >= 3 for b in batches)
    plain = ToolResultClearer(trigger=800, keep=2, cache_aware=False)
    changes = 0
    previous: list[str] = []
    for k in range(4, len(history) + 1, 2):
        now = cleared_ids(clear(history[:k], **plain.model_dump()))
        changes += now != previous
        previous = now
    assert changes > 3 * len(batches)  # the plain mode re-clears far more often


@st.composite
def agent_sessions(draw: st.DrawFn) -> tuple[list[dict[str, Any]], ToolResultClearer]:
    sizes = draw(st.lists(st.integers(0, 400), min_size=1, max_size=25))
    history = agent_history(sizes)
    # Some turns are plain chat, so request points are not all tool turns.
    for at in draw(st.lists(st.integers(2, len(history)), max_size=3, unique=True)):
        if at < len(history) and history[at]["role"] == "assistant":
            history.insert(at, {"role": "user", "content": "go on " * 20, "id": f"u{at}"})
    stage = ToolResultClearer(
        trigger=draw(st.integers(100, 2_000)),
        keep=draw(st.integers(0, 4)),
        clear_at_least=draw(st.sampled_from([0, 50, 300])),
        expected_resends=draw(st.none() | st.integers(1, 60)),
    )
    return history, stage


@settings(max_examples=60, deadline=None)
@given(agent_sessions())
def test_appending_messages_never_moves_an_earlier_clear_boundary_except_at_a_batch(
    session: tuple[list[dict[str, Any]], ToolResultClearer],
) -> None:
    history, stage = session
    counter = ctxpack.get_counter(counter=words)
    messages = ctxpack.messages.ensure_messages(history)
    everything = stage.batches(messages, counter=counter)
    requests = [
        k
        for k in range(1, len(messages) + 1)
        if k == len(messages) or messages[k].role == "assistant"
    ]
    previous: list[Message] | None = None
    previous_k = 0
    for k in requests:
        # The stateless pack() of a prefix reaches the batches of the whole history up to it...
        assert stage.batches(messages[:k], counter=counter) == [
            b for b in everything if b.position <= k
        ]
        sent = list(
            ctxpack.pack(
                history[:k], budget=BIG, counter=words, pipeline=Pipeline([stage])
            ).messages
        )
        if previous is not None:
            batch_between = any(previous_k < b.position <= k for b in everything)
            # ...so the prompt sent before is a prefix of this one, unless a batch fell between.
            if not batch_between:
                assert sent[: len(previous)] == previous
        previous, previous_k = sent, k


# ------------------------------------------------------------------------------- compaction


def big_session(turns: int = 12, size: int = 6_000) -> list[dict[str, Any]]:
    history = agent_history([size] * turns)
    history.insert(1, {"role": "developer", "content": "Refuse to run rm -rf.", "id": "dev"})
    history.append({"role": "assistant", "content": "The test fails at auth.py:88.", "id": "z"})
    history.append({"role": "user", "content": "Fix it without touching cookies.", "id": "last"})
    return history


def compact(history: Sequence[Any], **options: Any) -> ctxpack.PackResult:
    stage = Compactor(**options)
    return ctxpack.pack(history, budget=BIG, counter=words, pipeline=Pipeline([stage]))


def test_the_trigger_has_a_floor_of_50000_tokens() -> None:
    with pytest.raises(ctxpack.ConfigError, match="at least 50,000"):
        Compactor(trigger=49_999)
    Compactor(trigger=50_000)


def test_the_fake_summarizer_gets_the_replaced_messages_and_the_instruction() -> None:
    received: list[tuple[list[str], str | None]] = []

    def summarize(messages: Sequence[Message], instructions: str | None) -> str:
        received.append(([m.id for m in messages], instructions))
        return "SUMMARY: part_0 to part_9 read."

    history = big_session()
    result = compact(
        history,
        summarizer=summarize,
        trigger=50_000,
        keep_recent=4,
        instructions="focus on the auth bug fix",
    )
    assert len(received) == 1
    ids, instructions = received[0]
    assert instructions == "focus on the auth bug fix"
    # Only assistant turns and tool results are summarised, never the instructions.
    assert ids and not {"sys", "dev", "task", "last"} & set(ids)
    assert ids == [m["id"] for m in history if m["id"] in ids]
    roles = [m.role for m in result.messages]
    assert roles[:4] == ["system", "developer", "user", "user"]
    assert [m.text for m in result.messages[:3]] == [m["content"] for m in history[:3]]
    summary = result.messages[3]
    assert "SUMMARY: part_0 to part_9 read." in summary.text
    assert summary.metadata["ctxpack"]["summary_of"] == ids
    for mid in ids:
        original = result.original(mid)
        assert original is not None
        assert original.text == next(m["content"] or "" for m in history if m["id"] == mid)
    assert result.messages[-1].id == "last"
    assert result.tokens < 50_000


def test_summaries_are_memoised_and_a_longer_history_keeps_its_first_compaction() -> None:
    calls: list[int] = []

    def summarize(messages: Sequence[Message], instructions: str | None) -> str:
        calls.append(len(messages))
        return "summary"

    stage = Compactor(summarizer=summarize, trigger=50_000, keep_recent=4)
    history = big_session()
    first = ctxpack.pack(history, budget=BIG, counter=words, pipeline=Pipeline([stage]))
    again = ctxpack.pack(history, budget=BIG, counter=words, pipeline=Pipeline([stage]))
    assert calls == [calls[0]] and first.messages == again.messages
    longer = [*history, {"role": "assistant", "content": "On it.", "id": "more"}]
    later = ctxpack.pack(longer, budget=BIG, counter=words, pipeline=Pipeline([stage]))
    assert len(calls) == 1
    assert later.messages[: len(first.messages)] == first.messages
    stage.clear_cache()
    ctxpack.pack(history, budget=BIG, counter=words, pipeline=Pipeline([stage]))
    assert len(calls) == 2


def test_too_little_history_is_a_result_not_an_error() -> None:
    history = [
        {"role": "system", "content": "Be brief.", "id": "s"},
        {"role": "user", "content": "paste " * 60_000, "id": "u"},
    ]
    result = compact(history, trigger=50_000)
    assert [m.id for m in result.messages] == ["s", "u"]
    assert any(d.reason == NOT_ENOUGH_MESSAGES for d in result.decisions)


def test_a_summarizer_that_returns_no_text_is_a_config_error() -> None:
    with pytest.raises(ctxpack.ConfigError, match="not str"):
        compact(big_session(), summarizer=lambda m, i: None, trigger=50_000)


def test_the_default_digest_keeps_paths_numbers_and_errors_verbatim() -> None:
    history = big_session()
    history[4]["content"] = (
        "<returncode>1</returncode>\nTraceback (most recent call last):\n"
        "  File \"src/auth.py\", line 88, in refresh\nKeyError: 'expiresAt'\n" + "w " * 6_000
    )
    result = compact(history, trigger=50_000, keep_recent=4)
    summary = next(m for m in result.messages if m.id.startswith("summary-"))
    for needle in ("src/part_0.py", "KeyError: 'expiresAt'", "rc 1", "line 88"):
        assert needle in summary.text
    assert result.tokens < result.input_tokens / 2


def test_the_digest_lists_named_terms_by_their_last_mention() -> None:
    # A fit cuts the index from its front: a term named at the start and again lately must sit
    # at the end, after one named only in between.
    messages = ctxpack.messages.ensure_messages(
        [
            {"role": "assistant", "content": "Look at parse_header_v2 first."},
            {"role": "assistant", "content": "Then read_chunk_size, once."},
            {"role": "assistant", "content": "Back to parse_header_v2 for the fix."},
        ]
    )
    index = extractive_digest(messages).split("## Identifiers, paths and numbers named\n")[1]
    assert index.split() == ["read_chunk_size", "parse_header_v2"]


def _bash(call_id: str, command: str) -> dict[str, object]:
    arguments = json.dumps({"command": command})
    call = {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": arguments}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def test_the_digest_lists_the_files_a_command_names_not_the_pieces_of_its_script() -> None:
    # A sed expression or a quoted script holds slashes; its pieces are no files.
    messages = ctxpack.messages.ensure_messages(
        [
            _bash("c1", "sed -i '316s/return False # x != y/return NotImplemented/' a/b.py"),
            {"role": "tool", "tool_call_id": "c1", "content": "<returncode>0</returncode>"},
            _bash("c2", "python -m pytest tests/test_b.py::test_eq -q > out/log.txt"),
            {"role": "tool", "tool_call_id": "c2", "content": "<returncode>0</returncode>"},
        ]
    )
    files = extractive_digest(messages).split("## Files touched (last known state)\n")[1]
    listed = [line.split(": ")[0].removeprefix("- ") for line in files.split("\n\n")[0].split("\n")]
    assert listed == ["a/b.py", "tests/test_b.py", "out/log.txt"]


def test_the_digest_lists_the_file_an_editor_tool_names_in_its_arguments() -> None:
    # SWE-agent's and Anthropic's text editor: the path is an argument of its own.
    def editor(call_id: str, **arguments: str) -> dict[str, object]:
        function = {"name": "str_replace_editor", "arguments": json.dumps(arguments)}
        call = {"id": call_id, "type": "function", "function": function}
        return {"role": "assistant", "content": "", "tool_calls": [call]}

    messages = ctxpack.messages.ensure_messages(
        [
            editor("c1", command="view", path="/testbed/src/app.py"),
            {"role": "tool", "tool_call_id": "c1", "content": "     1\timport os"},
            editor(
                "c2", command="str_replace", path="/testbed/src/util.py", old_str="a/b", new_str="c"
            ),
            {"role": "tool", "tool_call_id": "c2", "content": "The file has been edited."},
        ]
    )
    files = extractive_digest(messages).split("## Files touched (last known state)\n")[1]
    lines = files.split("\n\n")[0].split("\n")
    assert [line.split(": ")[0] for line in lines] == [
        "- /testbed/src/app.py",
        "- /testbed/src/util.py",
    ]
    assert "read by" in lines[0] and "modified by" in lines[1]


def test_the_digest_reads_the_shell_and_apply_patch_tools_calls() -> None:
    # The Responses API's built-in tools: a shell call's commands, a patch's operation.
    def output(call_id: str) -> dict[str, Any]:
        result = {"stdout": "ok\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}
        return {"type": "shell_call_output", "call_id": call_id, "output": [result]}

    def patch(call_id: str, kind: str, path: str) -> list[dict[str, Any]]:
        operation = {"type": kind, "path": path, **({"diff": "+x\n"} if kind[0] != "d" else {})}
        call = {"type": "apply_patch_call", "call_id": call_id, "status": "completed"}
        done = {"type": "apply_patch_call_output", "call_id": call_id, "status": "completed"}
        return [{**call, "operation": operation}, done]

    action = {"commands": ["cat src/app.py", "git status"], "timeout_ms": 60_000}
    messages = ctxpack.from_openai(
        [
            {"type": "shell_call", "call_id": "c1", "action": action, "status": "completed"},
            output("c1"),
            *patch("c2", "update_file", "src/util.py"),
            *patch("c3", "delete_file", "src/old.py"),
            *patch("c4", "create_file", "src/new.py"),
        ]
    )
    digest = extractive_digest(messages)
    files = digest.split("## Files touched (last known state)\n")[1].split("\n\n")[0]
    verbs = {line.split(": ")[0][2:]: line.split(": ")[1] for line in files.split("\n")}
    assert list(verbs) == ["src/app.py", "src/util.py", "src/old.py", "src/new.py"]
    assert verbs["src/app.py"].startswith("read by `cat src/app.py")
    assert all(verbs[p].startswith("modified by") for p in ("src/util.py", "src/old.py"))
    assert "`delete_file src/old.py`" in verbs["src/old.py"]
    assert "timeout_ms" not in digest


@pytest.mark.parametrize(
    ("output", "status"),
    [
        ("<returncode>1</returncode>\n<output>boom</output>", "rc 1"),
        ("boom\n[Command finished with exit code 1]", "rc 1"),
        ("Exit code 2\nboom", "rc 2"),
        ('{"output": "boom", "metadata": {"exit_code": 1}}', "rc 1"),
        ("ok\n[Command finished with exit code 0]", "rc 0"),
        ("boom", "done"),
    ],
)
def test_the_digest_reads_how_each_harness_says_a_run_ended(output: str, status: str) -> None:
    # mini-swe-agent, OpenHands, Claude Code and Codex each write a run's exit code their own
    # way; a run that failed leaves its last lines among the open errors, whatever they say.
    messages = ctxpack.messages.ensure_messages(
        [_bash("c1", "./check.sh"), {"role": "tool", "tool_call_id": "c1", "content": output}]
    )
    digest = extractive_digest(messages)
    assert f"`./check.sh` ({status})" in digest
    failed = status not in ("rc 0", "done")
    assert ("## Open errors" in digest) is failed


def _run(call_id: str, command: str, output: str) -> list[dict[str, object]]:
    return [_bash(call_id, command), {"role": "tool", "tool_call_id": call_id, "content": output}]


def _open_errors(messages: Sequence[dict[str, object]]) -> list[str]:
    digest = extractive_digest(ctxpack.messages.ensure_messages(messages))
    if "## Open errors\n" not in digest:
        return []
    return digest.split("## Open errors\n")[1].split("\n\n")[0].split("\n")


def test_a_command_that_succeeds_closes_the_errors_that_name_it() -> None:
    # An error repeated while open keeps its place; one closed and raised again is the latest.
    messages = [
        *_run("c1", "./lint.sh", "<returncode>1</returncode>\nError: ./lint.sh found 2 issues"),
        *_run("c2", "make", "<returncode>2</returncode>\nError: make: no rule for 'all'"),
        *_run("c3", "pytest", "<returncode>1</returncode>\nFAILED test_a - KeyError: 'exp'"),
        *_run("c4", "./lint.sh", "<returncode>1</returncode>\nError: ./lint.sh found 2 issues"),
        *_run("c5", "make", "<returncode>0</returncode>\nbuilt"),
        *_run("c6", "./lint.sh", "<returncode>0</returncode>\nclean"),
        *_run("c7", "./lint.sh", "<returncode>1</returncode>\nError: ./lint.sh found 2 issues"),
        *_run("c8", "./build.sh", "<returncode>1</returncode>\nError: make: no rule for 'all'"),
    ]
    assert _open_errors(messages[:8]) == [
        "- Error: ./lint.sh found 2 issues",
        "- Error: make: no rule for 'all'",
        "- FAILED test_a - KeyError: 'exp'",
    ]
    assert _open_errors(messages) == [
        "- FAILED test_a - KeyError: 'exp'",
        "- Error: ./lint.sh found 2 issues",
        "- Error: make: no rule for 'all'",
    ]
    many = [m for i in range(30) for m in _run(f"d{i}", "tox", f"<returncode>1</returncode>\nE{i}")]
    assert _open_errors(many) == [f"- E{i}" for i in range(10, 30)]


_WORDS = st.lists(st.sampled_from(["a", "b", "ab", "ba"]), min_size=1, max_size=3).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(_WORDS, st.none() | st.lists(_WORDS.map("Error: {}".format), max_size=10)),
        max_size=40,
    )
)
def test_open_errors_follow_the_rule_run_by_run(runs: list[tuple[str, list[str] | None]]) -> None:
    # The rule, applied as each run ends: a failing run opens its last eight error lines (a
    # line already open keeps its place), a run that passes closes every open line holding its
    # command; the digest lists the last 20 open. Commands and lines of two letters contain one
    # another often, so lines close, reopen and repeat.
    messages: list[dict[str, object]] = []
    expected: dict[str, None] = {}
    for i, (command, errors) in enumerate(runs):
        if errors is None:
            messages += _run(f"c{i}", command, "<returncode>0</returncode>\nok")
            expected = {line: None for line in expected if command not in line}
        else:
            output = "\n".join(["<returncode>1</returncode>", *errors])
            messages += _run(f"c{i}", command, output)
            for line in errors[-8:] or output.splitlines()[-3:]:
                expected.setdefault(line)
    assert _open_errors(messages) == [f"- {line}" for line in list(expected)[-20:]]


def _failing_session(pairs: int) -> list[Message]:
    """Test runs that fail with eight new errors each, every other one a run that passes."""
    messages: list[dict[str, object]] = [{"role": "user", "content": "Make the suite pass."}]
    for i in range(pairs):
        passes = i % 2 == 1
        command = f"python -m pytest tests/test_mod{i % 40}.py" + (" -x" if passes else "")
        errors = (
            f"E   KeyError: 'field_{i}_{j}' in " + "tests/test_mod.py::test_x " * 10
            for j in range(8)
        )
        output = "3 passed" if passes else "\n".join(errors)
        code = 0 if passes else 1
        messages += _run(f"c{i}", command, f"<returncode>{code}</returncode>\n{output}")
    return ctxpack.messages.ensure_messages(messages)


def test_the_digest_of_many_failing_runs_takes_about_linear_time() -> None:
    # Each run that passed used to look for its command in every error still open, and failing
    # runs leave thousands of them: the time grew with the square of the runs.
    def cost(pairs: int) -> float:
        messages = _failing_session(pairs)
        digest = extractive_digest(messages)  # the paths cached, as at a second compaction
        assert f"'field_{pairs - 2}_7'" in digest.split("## Open errors\n")[1]
        return cpu_seconds(lambda: extractive_digest(messages), repeat=2)

    small, large = cost(250), cost(4_000)
    assert large < 40 * max(small, 0.005)


def test_the_digest_leaves_out_decisions_that_name_nothing() -> None:
    messages = ctxpack.messages.ensure_messages(
        [
            {"role": "assistant", "content": "Let's look at it."},
            {"role": "assistant", "content": "Let's check line 206."},
            {"role": "assistant", "content": "I should check how the tests are run here."},
        ]
    )
    decisions = extractive_digest(messages).split("## Decisions\n")[1].split("\n\n")[0]
    assert decisions.split("\n") == [
        "- Let's check line 206.",
        "- I should check how the tests are run here.",
    ]


def test_the_instruction_steers_the_default_digest() -> None:
    messages = ctxpack.messages.ensure_messages(
        [
            {
                "role": "assistant",
                "content": "Plan:\n1. fix auth\n2. rerun tests",
                "tool_calls": [call("c1", command="git diff")],
            },
            {
                "role": "tool",
                "tool_call_id": "c1",
                "content": "diff --git a/auth.py b/auth.py\n@@ -1 +1 @@\n-old\n+new\ncookie jar",
            },
            {"role": "assistant", "content": "The cookie code is unrelated."},
        ]
    )
    only = extractive_digest(messages, "keep only the plan and the diff")
    assert "## Current plan" in only and "+new" in only
    assert "## Commands run" not in only and "## Decisions" not in only
    focused = extractive_digest(messages, "focus on the cookie code")
    assert "## Lines about: cookie code" in focused and "- cookie jar" in focused
    # Function words are the library's one stop-word list: none of them is a focus word.
    wordy = extractive_digest(messages, "focus more on the cookie code, after all of these")
    assert "## Lines about: cookie code\n" in wordy


# -------------------------------------------------------------- provider validity after edits


def anthropic_session() -> list[Message]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the bug."}]
    for i in range(12):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Step {i}."},
                    {"type": "tool_use", "id": f"tu{i}", "name": "bash", "input": {"n": i}},
                    {"type": "tool_use", "id": f"tv{i}", "name": "grep", "input": {"n": i}},
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"tu{i}", "content": "x " * 3_000},
                    {
                        "type": "tool_result",
                        "tool_use_id": f"tv{i}",
                        "content": "y " * 2_000,
                        "is_error": i % 2 == 0,
                    },
                ],
            }
        )
    messages.append({"role": "assistant", "content": "Found it."})
    messages.append({"role": "user", "content": "Now fix it."})
    return ctxpack.from_anthropic(messages, system="You are a coding agent.")


@pytest.mark.parametrize(
    "stage",
    [
        ToolResultClearer(trigger=1_000, keep=3, cache_aware=False),
        ToolResultClearer(trigger=1_000, keep=3, clear_tool_inputs=True, expected_resends=60),
        Compactor(trigger=50_000, keep_recent=3),
        Compactor(trigger=50_000, keep_recent=0),
    ],
    ids=["clear", "clear-inputs-cache-aware", "compact", "compact-keep-none"],
)
def test_tool_pairing_stays_valid_for_both_providers(stage: Any) -> None:
    openai_history = big_session()
    result = ctxpack.pack(openai_history, budget=BIG, counter=words, pipeline=Pipeline([stage]))
    assert result.decisions_for(result.messages[-1].id) is not None
    assert any(d.action in ("cleared", "merged") for d in result.decisions)
    ctxpack.adapters.validate_openai(result.to_openai())
    anthropic = anthropic_session()
    packed = ctxpack.pack(anthropic, budget=BIG, counter=words, pipeline=Pipeline([stage]))
    assert any(d.action in ("cleared", "merged") for d in packed.decisions)
    ctxpack.adapters.validate_anthropic(packed.to_anthropic())
    ctxpack.adapters.validate_openai(packed.to_openai())


# ---------------------------------------------------------- Anthropic's server-side compaction

COMPACTION = {"type": "compaction", "content": "Summary: auth.py:88 fixed.", "signature": "c2ln"}


def test_a_compaction_block_is_kept_verbatim_and_what_precedes_it_is_dropped() -> None:
    payload = [
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": [{"type": "text", "text": "Reading."}]},
        {"role": "user", "content": "Go on."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "x"},
                COMPACTION,
                {"type": "text", "text": "Continuing."},
            ],
        },
        {"role": "user", "content": "And now?"},
    ]
    messages = ctxpack.from_anthropic(payload, system="Be brief.")
    assert [m.role for m in messages] == ["system", "assistant", "user"]
    assert messages[1].pinned
    out = ctxpack.to_anthropic(messages)
    assert out["messages"][0] == {"role": "assistant", "content": payload[3]["content"][1:]}
    assert json.dumps(out["messages"][0]["content"][0]) == json.dumps(COMPACTION)
    ctxpack.adapters.validate_anthropic(out)
    packed = ctxpack.pack(messages, budget=2_000, provider="anthropic")
    assert packed.to_anthropic()["messages"][0]["content"][0] == COMPACTION


def test_an_on_demand_compaction_block_first_in_a_user_message_is_valid() -> None:
    payload = {
        "messages": [
            {"role": "user", "content": [COMPACTION]},
            {"role": "assistant", "content": "ok"},
        ]
    }
    ctxpack.adapters.validate_anthropic(payload)
    messages = ctxpack.from_anthropic(payload["messages"])
    assert ctxpack.to_anthropic(messages)["messages"] == payload["messages"]
    with pytest.raises(ctxpack.InvalidMessageError, match="content"):
        ctxpack.adapters.validate_anthropic(
            {"messages": [{"role": "user", "content": [{"type": "compaction"}]}]}
        )


# ------------------------------------------------------------------------------------ Session


def test_the_stages_run_in_a_session_and_keep_its_originals_reachable() -> None:
    store = SQLiteArtifactStore(":memory:")
    clearer = ToolResultClearer(trigger=300, keep=1, cache_aware=False, store=store)
    session = ctxpack.Session(
        counter=words, store=store, filters=False, pipeline=Pipeline([clearer])
    )
    history = agent_history([100] * 4)
    session.extend(history)
    result = session.render()
    assert [d.message_id for d in result.decisions if d.action == "cleared"] == ["t0", "t1", "t2"]
    assert result.original("t0").text == history[3]["content"]  # type: ignore[union-attr]
    ref = artifact_id(history[3]["content"])
    assert ref in result.messages[3].text and store.get(ref) == history[3]["content"]
    compactor = Compactor(trigger=50_000, keep_recent=2)
    session = ctxpack.Session(counter=words, filters=False, pipeline=Pipeline([compactor]))
    session.extend(big_session())
    rendered = session.render()
    assert any(m.id.startswith("summary-") for m in rendered.messages)
    ctxpack.adapters.validate_openai(rendered.to_openai())


def test_the_summary_names_the_artifact_ids_of_the_tool_outputs_it_replaces() -> None:
    store = SQLiteArtifactStore(":memory:")
    history = big_session()
    result = compact(history, trigger=50_000, keep_recent=4, store=store)
    summary = next(m for m in result.messages if m.id.startswith("summary-"))
    for mid in summary.metadata["ctxpack"]["summary_of"]:
        original = next(m for m in history if m["id"] == mid)
        if original["role"] == "tool":
            ref = artifact_id(original["content"])
            assert f"{mid}={ref}" in summary.text
            assert store.get(ref) == original["content"]


def test_with_a_stored_session_s_store_the_stages_name_the_ids_the_store_gives() -> None:
    # A stored session names its originals by a per-session key, not by the content hash:
    # a marker must name the id put() returned, or it points at nothing.
    session = ctxpack.Session.open("edits", store="memory://", counter=words, filters=False)
    history = agent_history([100] * 4)
    result = clear(history, trigger=200, keep=1, cache_aware=False, store=session.store)
    by_id = {m["id"]: m for m in history}
    assert cleared_ids(result)
    for message in result.messages:
        if message.id in cleared_ids(result) and message.role == "tool":
            (ref,) = re.findall(r"art_[0-9a-f]{16}", message.text)
            assert ref != artifact_id(by_id[message.id]["content"])
            assert session.store.get(ref) == by_id[message.id]["content"]
    history = big_session()
    by_id = {m["id"]: m for m in history}
    result = compact(history, trigger=50_000, keep_recent=4, store=session.store)
    summary = next(m for m in result.messages if m.id.startswith("summary-"))
    named = dict(re.findall(r"(\w+)=(art_[0-9a-f]{16})", summary.text))
    tools = [mid for mid in summary.metadata["ctxpack"]["summary_of"] if mid.startswith("t")]
    assert tools and sorted(named) == sorted(tools)
    for mid, ref in named.items():
        assert session.store.get(ref) == by_id[mid]["content"]


def test_metadata_json_cannot_hold_does_not_stop_clearing_or_compaction() -> None:
    # The stored original names such a value by its type; the result's original is the
    # message (its metadata copied, as a message's is).
    store = SQLiteArtifactStore(":memory:")
    history = agent_history([100] * 3)
    history[2] = {**history[2], "metadata": {"span": object()}}
    result = clear(
        history, trigger=200, keep=1, clear_tool_inputs=True, cache_aware=False, store=store
    )
    assert_stored_with_placeholder(store, result.original("a0"))
    big = big_session()
    big[3] = {**big[3], "metadata": {"span": object()}}
    store = SQLiteArtifactStore(":memory:")
    result = compact(big, trigger=50_000, store=store)
    assert_stored_with_placeholder(store, result.original(big[3]["id"]))


def assert_stored_with_placeholder(store: SQLiteArtifactStore, original: Message | None) -> None:
    assert original is not None and type(original.metadata["span"]) is object
    stored = original.model_copy(update={"metadata": {"span": "<object, not JSON>"}})
    text = json.dumps(stored.model_dump(mode="json"), ensure_ascii=False)
    assert store.get(artifact_id(text)) == text
