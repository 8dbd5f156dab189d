from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import Deduplicator

from ..helpers import call, ctx_of, ids
from ..strategies import Conversation, conversations


def test_keeps_only_the_most_recent_copy() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Where is the report?", "id": "u1"},
        {"role": "assistant", "content": "In the shared drive.", "id": "a1"},
        {"role": "user", "content": "Where is the report?", "id": "u2"},
        {"role": "user", "content": "Where is the report?", "id": "u3"},
        {"role": "assistant", "content": "Still in the shared drive.", "id": "a2"},
    ]
    ctx = ctx_of(history)
    out = Deduplicator()(ctx)
    assert ids(out) == ["a1", "u3", "a2"]
    deduped = [d for d in out.decisions if d.action == "deduped"]
    assert [d.message_id for d in deduped] == ["u1", "u2"]
    assert all("'u3'" in d.reason for d in deduped)
    assert deduped[0].tokens_before == ctx.tokens(ctx.messages[0])
    assert deduped[0].tokens_after == 0


def test_whitespace_and_case_are_ignored_unless_case_sensitive() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Hello   World", "id": "u1"},
        {"role": "user", "content": "hello world\n", "id": "u2"},
    ]
    assert ids(Deduplicator()(ctx_of(history))) == ["u2"]
    assert ids(Deduplicator(case_sensitive=True)(ctx_of(history))) == ["u1", "u2"]


def test_same_text_in_another_role_is_not_a_duplicate() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "ok", "id": "u1"},
        {"role": "assistant", "content": "ok", "id": "a1"},
    ]
    ctx = ctx_of(history)
    assert Deduplicator()(ctx) is ctx


def test_protected_pinned_and_tool_exchanges_are_never_removed() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "pinned", "id": "p1", "pinned": True},
        {"role": "user", "content": "pinned", "id": "p2"},
        {"role": "user", "content": "protected", "id": "q1"},
        {"role": "user", "content": "protected", "id": "q2"},
        {"role": "assistant", "content": "calling", "id": "c1", "tool_calls": [call("x")]},
        {"role": "tool", "content": "42", "tool_call_id": "x", "id": "t1"},
        {"role": "assistant", "content": "calling", "id": "c2", "tool_calls": [call("y")]},
        {"role": "tool", "content": "42", "tool_call_id": "y", "id": "t2"},
    ]
    out = Deduplicator()(ctx_of(history, protected=["q1"]))
    assert ids(out) == ["p1", "p2", "q1", "q2", "c1", "t1", "c2", "t2"]


def test_an_older_protected_copy_does_not_remove_the_newer_one() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "same", "id": "u1"},
        {"role": "user", "content": "same", "id": "u2"},
    ]
    out = Deduplicator()(ctx_of(history, protected=["u2"]))
    assert ids(out) == ["u2"]


def test_the_kept_copy_inherits_the_source_of_the_removed_one() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "GDP is 3 trillion", "id": "u1", "source": "wikipedia.org"},
        {"role": "user", "content": "GDP is 3 trillion", "id": "u2"},
    ]
    out = Deduplicator()(ctx_of(history))
    assert ids(out) == ["u2"]
    assert out.messages[0].source == "wikipedia.org"


def test_non_text_and_empty_messages_are_left_alone() -> None:
    image = [{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]
    history: list[dict[str, Any]] = [
        {"role": "user", "content": image, "id": "i1"},
        {"role": "user", "content": image, "id": "i2"},
        {"role": "assistant", "content": "", "id": "e1"},
        {"role": "assistant", "content": "", "id": "e2"},
    ]
    ctx = ctx_of(history)
    assert Deduplicator()(ctx) is ctx


def test_input_context_is_untouched() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "a", "id": "u1", "source": "s"},
        {"role": "user", "content": "a", "id": "u2"},
    ]
    ctx = ctx_of(history)
    Deduplicator()(ctx)
    assert ids(ctx) == ["u1", "u2"]
    assert ctx.messages[1].source is None


def _reference(
    ctx: ctxpack.pipeline.PackContext, case_sensitive: bool
) -> tuple[list[Any], list[Any]]:
    """The first, plain-loop implementation: scan from the end, keep the first copy seen."""
    seen: dict[tuple[str, str], int] = {}
    kept: list[ctxpack.Message] = []
    decisions = []
    for msg in reversed(ctx.messages):
        norm = " ".join(msg.text.split())
        key = (msg.role, norm if case_sensitive else norm.casefold())
        removable = not (
            msg.pinned
            or msg.id in ctx.protected
            or msg.tool_calls
            or msg.role == "tool"
            or (isinstance(msg.content, list) and any(p.get("type") != "text" for p in msg.content))
            or not key[1]
        )
        if removable and key in seen:
            newer = kept[seen[key]]
            if msg.source and not newer.source:
                kept[seen[key]] = newer.model_copy(update={"source": msg.source})
            decisions.append((msg.id, f"duplicate of the more recent message {newer.id!r}"))
            continue
        seen.setdefault(key, len(kept))
        kept.append(msg)
    return list(reversed(kept)), list(reversed(decisions))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.data(), st.booleans())
def test_matches_the_reference_implementation(
    conv: Conversation, data: st.DataObject, case_sensitive: bool
) -> None:
    messages = ctxpack.messages.ensure_messages(conv.items)
    all_ids = [m.id for m in messages]
    protected = data.draw(st.lists(st.sampled_from(all_ids), max_size=3))
    # Twice, the second time with one more message: the second call reuses the first's work.
    for extra in ([], [{"role": "user", "content": messages[-1].text}]):
        ctx = ctx_of([*messages, *extra], protected=protected)
        out = Deduplicator(case_sensitive=case_sensitive)(ctx)
        kept, decisions = _reference(ctx, case_sensitive)
        assert list(out.messages) == kept
        assert [(d.message_id, d.reason) for d in out.decisions] == decisions
        by_id = {m.id: m for m in ctx.messages}
        for d in out.decisions:
            assert d.tokens_before == ctx.tokens(by_id[d.message_id])
            assert d.tokens_after == 0
