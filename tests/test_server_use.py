"""ctxpack inside a backend: in-place edits, threads, caches, stable ids, the provider.

Each test reproduces what an application does with the objects it keeps (edit a message in
place, edit a returned payload, pack from several threads) and checks that the result is the one
a fresh interpreter gives for the same input.
"""

from __future__ import annotations

import copy
import gc
import json
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

import ctxpack
from ctxpack.caches import LRUCache
from ctxpack.tokens import TiktokenCounter
from tests.threads import switching_often


def _fresh_tokens(messages: list[ctxpack.Message]) -> int:
    """The prompt's tokens by a counter of its own: nothing cached by earlier packs."""
    return TiktokenCounter("cl100k_base").count_messages(messages)


def _same(a: ctxpack.PackResult, b: ctxpack.PackResult) -> None:
    assert a.model_dump() == b.model_dump()
    assert list(a.decisions) == list(b.decisions)


# ---------------------------------------------------------------------------- in-place edits


def test_editing_a_message_content_part_in_place_is_seen() -> None:
    msgs = [
        ctxpack.Message(role="system", content="Be brief."),
        ctxpack.Message(role="user", content=[{"type": "text", "text": "short"}]),
        ctxpack.Message(role="assistant", content="ok"),
        ctxpack.Message(role="user", content="And now?"),
    ]
    ctxpack.pack(msgs, budget=60, model="gpt-4")
    content = msgs[1].content
    assert isinstance(content, list)
    content[0]["text"] = "word " * 500
    result = ctxpack.pack(msgs, budget=60, model="gpt-4")
    assert result.tokens == _fresh_tokens(result.messages) <= 60
    assert result.input_tokens > 500
    assert msgs[1].id not in result.kept_ids or "word" not in result.messages[1].text


def test_metadata_set_in_place_is_seen() -> None:
    msgs = [
        ctxpack.Message(role="system", content="Be brief.", id="s"),
        ctxpack.Message(role="user", content="An old remark about ferns.", id="old"),
        *[ctxpack.Message(role="user", content=f"turn {i}", id=f"t{i}") for i in range(6)],
    ]
    before = ctxpack.pack(msgs, budget=1000, model="gpt-4")
    assert not [d for d in before.decisions_for("old") if d.stage == "memory"]
    msgs[1].metadata["important"] = True
    after = ctxpack.pack(msgs, budget=1000, model="gpt-4")
    reasons = [d.reason for d in after.decisions_for("old") if d.stage == "memory"]
    assert reasons and "episodic" in reasons[0]


def test_editing_a_returned_payload_does_not_reach_the_next_pack() -> None:
    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "What is E42?"}]},
        {"role": "assistant", "content": "A missing image."},
        {"role": "user", "content": [{"type": "text", "text": "And E43?"}]},
    ]
    first = ctxpack.pack(history, budget=100, model="gpt-4")
    for payload in (first.to_openai(), first.to_anthropic()["messages"]):
        for item in payload:
            if isinstance(item["content"], list):
                item["content"][0]["text"] = "word " * 400
                item["content"][0]["cache_control"] = {"type": "ephemeral"}
    for message in first.messages:
        if isinstance(message.content, list):
            message.content[0]["text"] = "word " * 400
        message.metadata["important"] = True
    for original in first.artifacts.values():
        original.metadata["x"] = 1
    second = ctxpack.pack(history, budget=100, model="gpt-4")
    assert second.tokens == _fresh_tokens(second.messages) <= 100
    assert "word" not in json.dumps(second.to_openai())
    assert all(not m.metadata for m in second.messages)


def test_ensure_messages_returns_messages_of_the_callers_own() -> None:
    history = [{"role": "user", "content": [{"type": "text", "text": "hi"}], "metadata": {"a": 1}}]
    first = ctxpack.messages.ensure_messages(history)
    first[0].metadata["a"] = 2
    content = first[0].content
    assert isinstance(content, list)
    content[0]["text"] = "changed"
    again = ctxpack.messages.ensure_messages(history)
    assert again[0].metadata == {"a": 1} and again[0].text == "hi"
    assert history[0]["metadata"] == {"a": 1}


def test_an_edited_input_dict_gives_what_a_fresh_interpreter_gives() -> None:
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "First question about billing.", "metadata": {"k": [1]}},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "result"},
        {"role": "user", "content": "What about refunds?"},
    ]
    ctxpack.pack(history, budget=60, model="gpt-4")
    history[2]["tool_calls"][0]["function"]["arguments"] = json.dumps({"q": "x " * 300})
    history[1]["metadata"]["k"].append(2)
    history[1]["pinned"] = True
    result = ctxpack.pack(history, budget=400, model="gpt-4")
    code = (
        "import json, sys, ctxpack\n"
        "r = ctxpack.pack(json.loads(sys.stdin.read()), budget=400, model='gpt-4')\n"
        "print(json.dumps({'dump': r.model_dump(mode='json'), "
        "'decisions': [d.model_dump() for d in r.decisions]}))\n"
    )
    fresh = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(history),
        capture_output=True,
        text=True,
        check=True,
    )
    expected = json.loads(fresh.stdout)
    assert result.model_dump(mode="json") == expected["dump"]
    assert [d.model_dump() for d in result.decisions] == expected["decisions"]


# ---------------------------------------------------------------------------------- threads


def _run_threads(count: int, work: Callable[[int], Any]) -> tuple[list[Any], list[BaseException]]:
    results: list[Any] = [None] * count
    errors: list[BaseException] = []
    start = threading.Barrier(count)

    def run(k: int) -> None:
        try:
            start.wait()
            results[k] = work(k)
        except BaseException as exc:  # every failure is reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results, errors


def _conversation(k: int) -> list[dict[str, Any]]:
    # Every conversation starts with the same system prompt and first turns, then diverges.
    shared = [
        {"role": "system", "content": "You are the support agent of Acme Cloud."},
        {"role": "user", "content": "Hello, I have a question about my account."},
        {"role": "assistant", "content": "Of course, what is it about?"},
    ]
    own = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"topic {k} detail {i} " * 3}
        for i in range(40 + 7 * k)
    ]
    question = {"role": "user", "content": f"What did we say about topic {k} detail 3?"}
    return shared + own + [question]


def test_threads_packing_conversations_that_begin_alike() -> None:
    conversations = [_conversation(k) for k in range(8)]
    ctxpack.caches.clear_caches()
    serial = [ctxpack.pack(c, budget=300, model="gpt-4") for c in conversations]
    expected = [(r.model_dump(), list(r.decisions)) for r in serial]
    ctxpack.caches.clear_caches()

    def work(k: int) -> list[Any]:
        out = []
        for _ in range(4):
            r = ctxpack.pack(conversations[k], budget=300, model="gpt-4")
            out.append((r.model_dump(), list(r.decisions)))
        return out

    with switching_often():
        results, errors = _run_threads(8, work)
    assert errors == []
    for k, runs in enumerate(results):
        assert all(run == expected[k] for run in runs), f"thread {k} got another result"


def test_concurrent_first_reads_of_decisions_build_them_once() -> None:
    calls = []
    gate = threading.Event()

    def build() -> list[ctxpack.Decision]:
        calls.append(1)
        gate.wait(0.05)  # the other readers arrive while this one builds
        return [ctxpack.Decision(stage="s", action="kept", message_id="m", reason="r")]

    log = ctxpack.pipeline.DecisionLog.deferred(["m"], build)
    with switching_often():
        results, errors = _run_threads(8, lambda _: tuple(log))
    assert errors == []
    assert len(calls) == 1
    assert all(r is results[0] or r == results[0] for r in results)


def test_concurrent_reads_of_one_result_agree() -> None:
    result = ctxpack.pack(_conversation(3), budget=300, model="gpt-4")
    with switching_often():
        results, errors = _run_threads(8, lambda _: [d.reason for d in result.decisions])
    assert errors == []
    assert all(r == results[0] for r in results)


def test_pack_leaves_the_garbage_collector_alone() -> None:
    seen: list[bool] = []

    def spy(ctx: ctxpack.pipeline.PackContext) -> ctxpack.pipeline.PackContext:
        seen.append(gc.isenabled())
        return ctx

    pipeline = ctxpack.default_pipeline().insert("compose", ("spy", spy))
    history = [{"role": "user", "content": f"m {i}", "id": f"i{i}"} for i in range(6000)]
    assert gc.isenabled()
    ctxpack.pack(history, budget=200, model="gpt-4", pipeline=pipeline)
    assert seen == [True]


# ----------------------------------------------------------------------------------- caches


def test_lru_cache_evicts_the_least_recently_used_one_at_a_time() -> None:
    cache: LRUCache[str, int] = LRUCache(3)
    for key, value in (("a", 1), ("b", 2), ("c", 3)):
        cache.put(key, value)
    assert cache.get("a") == 1  # now the most recently used
    cache.put("d", 4)
    assert cache.get("b") is None
    assert [cache.get(k) for k in "acd"] == [1, 3, 4]
    assert len(cache) == 3


def test_lru_cache_get_many_returns_hits_and_refreshes_them() -> None:
    cache: LRUCache[str, bool] = LRUCache(3)
    for key, value in (("a", False), ("b", True), ("c", True)):
        cache.put(key, value)
    assert cache.get_many(["a", "x", "b"]) == {"a": False, "b": True}  # a cached False is a hit
    cache.put("d", True)  # c is now the least recently used
    assert cache.get("c") is None and cache.get("a") is False


def test_clear_caches_changes_no_result() -> None:
    history = _conversation(2)
    warm = ctxpack.pack(history, budget=300, model="gpt-4")
    ctxpack.caches.clear_caches()
    cold = ctxpack.pack(copy.deepcopy(history), budget=300, model="gpt-4")
    _same(warm, cold)


def test_conversations_packed_in_turn_stay_warm(monkeypatch: pytest.MonkeyPatch) -> None:
    # Four conversations that begin alike, packed in turn: each keeps its own index, so the
    # second round indexes no text again (the old cache, keyed by the first texts, re-synced
    # one shared index on every call).
    from ctxpack.signals.bm25 import InvertedIndex

    conversations = [_conversation(k) for k in range(4)]
    for conv in conversations:
        ctxpack.pack(conv, budget=300, model="gpt-4")
    indexed: list[str] = []
    append = InvertedIndex.append_terms

    def spy(self: InvertedIndex, text: str, doc_terms: Any) -> None:
        indexed.append(text)
        append(self, text, doc_terms)

    monkeypatch.setattr(InvertedIndex, "append_terms", spy)
    for conv in conversations:
        ctxpack.pack(conv, budget=300, model="gpt-4")
    assert indexed == []


# -------------------------------------------------------------------------------------- ids


def test_generated_ids_survive_trimming_and_appending() -> None:
    history = [{"role": "user" if i % 2 else "assistant", "content": f"t{i}"} for i in range(6)]
    ids = ctxpack.pack(history, budget=1000, model="gpt-4").input_ids
    trimmed = ctxpack.pack(history[2:], budget=1000, model="gpt-4").input_ids
    longer = [*history, {"role": "user", "content": "new"}]
    assert trimmed == ids[2:]
    assert ctxpack.pack(longer, budget=1000, model="gpt-4").input_ids[:6] == ids


def test_identical_messages_are_numbered_in_order_and_caller_ids_kept() -> None:
    history = [
        {"role": "user", "content": "ok"},
        {"role": "assistant", "content": "ok", "id": "mine"},
        {"role": "user", "content": "ok"},
        {"role": "user", "content": "ok"},
    ]
    ids = ctxpack.messages.ensure_messages(history)
    first = ids[0].id
    assert [m.id for m in ids] == [first, "mine", first + "-2", first + "-3"]


# --------------------------------------------------------------------------------- provider


def test_a_user_metadata_key_named_anthropic_changes_nothing() -> None:
    history = [
        {"role": "assistant", "content": "Welcome!", "metadata": {"anthropic": {"turn": 0}}},
        {"role": "user", "content": "Hi.", "metadata": {"anthropic": "my own tag"}},
        {"role": "user", "content": "Are you there?"},
    ]
    tagged = ctxpack.pack(history, budget=200, model="gpt-4")
    plain = ctxpack.pack(
        [{k: v for k, v in m.items() if k != "metadata"} for m in history],
        budget=200,
        model="gpt-4",
    )
    assert tagged.kept_ids == plain.kept_ids
    assert [d.action for d in tagged.decisions] == [d.action for d in plain.decisions]
    assert "merged" not in {d.action for d in tagged.decisions}


def test_anthropic_rules_when_told() -> None:
    payload = [
        {"role": "user", "content": "Hi."},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Weather?"},
    ]
    messages = ctxpack.from_anthropic(payload, system="Be brief.")
    # Told by the messages from_anthropic() made, even once dumped and rebuilt? No: by the
    # messages themselves, or by provider= / a Claude model.
    told = [
        ctxpack.pack(messages, budget=200, counter="cl100k_base"),
        ctxpack.pack(
            [m.model_dump(exclude_none=True) for m in messages],
            budget=200,
            provider="anthropic",
            model="gpt-4",
        ),
    ]
    for result in told:
        assert result.to_anthropic()["messages"][0]["role"] == "user"
    leading = [{"role": "assistant", "content": "Welcome!"}, {"role": "user", "content": "Hi."}]
    with pytest.warns(ctxpack.tokens.ApproximateTokenCountWarning):
        claude = ctxpack.pack(leading, budget=200, model="claude-sonnet-4")
    assert [m.role for m in claude.messages] == ["user"]
