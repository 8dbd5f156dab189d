"""Reuse across calls: PrefixMemo, the prefix path of ensure_messages, the plain-dict fast path,
and the garbage-collector pause of pack() on long histories."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import InvalidMessageError, Message
from ctxpack._internal.prefix import PrefixMemo, common_prefix, likely_prefix
from ctxpack.adapters import check_openai_message
from ctxpack.messages import ensure_messages
from ctxpack.messages._model import from_mapping
from ctxpack.messages._owned import _RECENT, _plain_message
from ctxpack.pipeline import PackContext


class Box:
    """A distinct object per instance, compared by identity like messages are."""

    def __init__(self, value: int) -> None:
        self.value = value


def test_common_and_likely_prefix() -> None:
    a = [Box(i) for i in range(10)]
    b = [*a[:6], Box(6), *a[7:]]
    assert common_prefix(a, b) == 6
    assert common_prefix(a, a[:4]) == 4
    assert common_prefix([], a) == 0
    assert likely_prefix(a, [*a[:7], Box(0)]) == 7
    # An item replaced in the middle fools the binary search; callers verify with
    # common_prefix.
    assert likely_prefix(a, b) >= common_prefix(a, b)


def test_memo_computes_only_what_is_new() -> None:
    calls: list[int] = []

    def fn(box: Box) -> int:
        calls.append(box.value)
        return box.value * 10

    memo: PrefixMemo[Box, int] = PrefixMemo(fn)
    history = [Box(i) for i in range(5)]
    assert memo(history) == (0, 10, 20, 30, 40)
    assert memo([*history, Box(5)]) == (0, 10, 20, 30, 40, 50)
    assert calls == [0, 1, 2, 3, 4, 5]
    # A new question replacing the last one: only it is computed.
    assert memo([*history, Box(6)]) == (0, 10, 20, 30, 40, 60)
    assert calls[-1:] == [6] and len(calls) == 7
    # An item replaced in the middle: everything from it on is computed again.
    edited = [*history[:2], Box(9), *history[3:]]
    assert memo(edited) == (0, 10, 90, 30, 40)
    assert calls[7:] == [9, 3, 4]


def test_memo_keeps_several_conversations() -> None:
    calls: list[int] = []
    memo: PrefixMemo[Box, int] = PrefixMemo(lambda b: calls.append(b.value) or b.value)
    first = [Box(i) for i in range(3)]
    second = [Box(i) for i in range(10, 13)]
    memo(first)
    memo(second)
    calls.clear()
    assert memo([*first, Box(3)]) == (0, 1, 2, 3)
    assert memo([*second, Box(13)]) == (10, 11, 12, 13)
    assert calls == [3, 13]


def _edited(base: Sequence[Box], op: str, data: st.DataObject, fresh: int) -> list[Box]:
    """``base`` after ``op``, new boxes numbered from ``fresh``."""
    out = list(base)
    if op == "append":
        out.append(Box(fresh))
    elif op == "replace" and out:
        out[data.draw(st.integers(0, len(out) - 1))] = Box(fresh)
    elif op == "truncate":
        out = out[: data.draw(st.integers(0, len(out)))]
    elif op == "new":
        out = [Box(fresh + k) for k in range(3)]
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["append", "replace", "truncate", "new"]), st.data())))
def test_memo_always_equals_a_fresh_map(steps: list[tuple[str, st.DataObject]]) -> None:
    memo: PrefixMemo[Box, int] = PrefixMemo(lambda b: b.value * 3 + 1, slots=3)
    sequences: list[list[Box]] = [[Box(0)]]
    for step, (op, data) in enumerate(steps, start=1):
        base = _edited(data.draw(st.sampled_from(sequences)), op, data, 5 * step)
        sequences.append(base)
        assert memo(base) == tuple(b.value * 3 + 1 for b in base)


@given(st.lists(st.tuples(st.sampled_from(["append", "replace", "truncate", "same"]), st.data())))
def test_memos_sharing_sequences_always_equal_fresh_maps(
    steps: list[tuple[str, st.DataObject]],
) -> None:
    # Several memos over the very same tuples, as the stages of one pack: the prefix one memo
    # verified is reused by the next, and must never leak to a pair it was not verified for.
    functions = [lambda b: b.value * 3 + 1, lambda b: -b.value]
    memos: list[PrefixMemo[Box, int]] = [PrefixMemo(functions[0], slots=2)]
    memos.append(PrefixMemo(functions[1], slots=3))
    sequences: list[tuple[Box, ...]] = [(Box(0),)]
    for step, (op, data) in enumerate(steps, start=1):
        old = data.draw(st.sampled_from(sequences))
        items = old if op == "same" else tuple(_edited(old, op, data, 5 * step))
        sequences.append(items)
        # Each memo may or may not see the sequence first, so their histories differ.
        for memo, fn in zip(memos, functions, strict=True):
            if data.draw(st.booleans()):
                assert memo(items) == tuple(map(fn, items))
        for memo, fn in zip(memos, functions, strict=True):
            assert memo(items) == tuple(map(fn, items))


def test_a_prefix_verified_for_one_memo_is_not_reused_for_another_pair() -> None:
    a, b, c, d, x, y = (Box(v) for v in range(6))
    first: PrefixMemo[Box, int] = PrefixMemo(lambda box: box.value)
    second: PrefixMemo[Box, int] = PrefixMemo(lambda box: box.value)
    first((a, b, c))
    second((a, x, y))
    new = (a, b, c, d)
    assert first(new) == (0, 1, 2, 3)
    assert second(new) == (0, 1, 2, 3), "second shares one item with what it saw, not three"


def _plain_history(n: int) -> list[dict[str, Any]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}", "id": f"t{i}"}
        for i in range(n)
    ]


def test_a_dict_edited_in_place_is_converted_again() -> None:
    history = _plain_history(6)
    before = ensure_messages(history)
    history[2]["content"] = "edited"
    after = ensure_messages(history)
    assert after[2].text == "edited"
    assert [m.text for m in after] != [m.text for m in before]
    history[3]["role"] = "wizard"
    with pytest.raises(InvalidMessageError, match="message 3"):
        ensure_messages(history)


def test_ids_are_checked_against_the_reused_prefix() -> None:
    history = _plain_history(5)
    ensure_messages(history)
    with pytest.raises(InvalidMessageError, match=r"message 5: .*'t1'.*message 1"):
        ensure_messages([*history, {"role": "user", "content": "again", "id": "t1"}])
    # The id of a message that is no longer there is free again.
    shorter = history[:4]
    out = ensure_messages([*shorter, {"role": "user", "content": "new", "id": "t4"}])
    assert [m.id for m in out] == ["t0", "t1", "t2", "t3", "t4"]
    assert out[4].text == "new"


def test_a_conversion_without_checks_is_not_reused_for_a_checked_one() -> None:
    # Valid as a Message, rejected by the OpenAI payload rules (name must be a string).
    odd = {"role": "user", "content": "hi", "name": None, "id": "odd"}
    history = [*_plain_history(3), odd]
    assert [m.id for m in ensure_messages(history)][-1] == "odd"
    with pytest.raises(InvalidMessageError, match="message 3"):
        ensure_messages(history, check=check_openai_message)


_ROLES = st.sampled_from(["system", "developer", "user", "assistant"])
_VALUES = st.text(max_size=12)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["keep", "append", "edit", "replace", "drop"]), st.data()),
        max_size=8,
    )
)
def test_ensure_messages_equals_a_fresh_conversion(steps: list[tuple[str, Any]]) -> None:
    history: list[Any] = [{"role": "system", "content": "rules"}]
    for n, (op, data) in enumerate(steps):
        if op == "append":
            item: dict[str, Any] = {"role": data.draw(_ROLES), "content": data.draw(_VALUES)}
            if data.draw(st.booleans()):
                item["id"] = f"x{n}"
            history = [*history, item if data.draw(st.booleans()) else Message(**item)]
        elif op == "edit" and len(history) > 1:
            at = data.draw(st.integers(1, len(history) - 1))
            if isinstance(history[at], dict):
                history[at]["content"] = data.draw(_VALUES)
        elif op == "replace" and len(history) > 1:
            at = data.draw(st.integers(1, len(history) - 1))
            history = [*history[:at], {"role": "user", "content": f"r{n}"}, *history[at + 1 :]]
        elif op == "drop" and len(history) > 1:
            history = history[:-1]
        got = ensure_messages(history, check=check_openai_message)
        saved = list(_RECENT.entries)
        _RECENT.clear()
        try:
            fresh = ensure_messages(history, check=check_openai_message)
        finally:
            _RECENT.entries = saved
        assert got == fresh
        assert [m.model_fields_set for m in got] == [m.model_fields_set for m in fresh]


@settings(max_examples=200, deadline=None)
@given(
    role=_ROLES,
    content=_VALUES,
    mid=st.one_of(st.none(), _VALUES),
    name=st.one_of(st.none(), _VALUES),
)
def test_plain_dicts_skip_validation_without_changing_the_result(
    role: str, content: str, mid: str | None, name: str | None
) -> None:
    item: dict[str, Any] = {"role": role, "content": content}
    if mid is not None:
        item["id"] = mid
    if name is not None:
        item["name"] = name
    fast = _plain_message(item)
    assert fast is not None
    slow = from_mapping(0, item)
    assert fast == slow
    assert list(fast.__dict__) == list(slow.__dict__)
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.model_dump() == slow.model_dump()
    # What ctxpack hands out owns its mutable fields (the converted ones share empty dicts).
    handed = ensure_messages([item, dict(item, id="other")])
    assert handed[0].metadata is not handed[1].metadata
    assert handed[0].extras is not handed[1].extras


def test_a_stage_editing_a_message_in_place_is_named_and_undone() -> None:
    def scribble(ctx: PackContext) -> PackContext:
        ctx.messages[0].metadata["note"] = "edited in place"
        return ctx

    history = [{"role": "user", "content": "hello", "id": "a"}]
    pipeline = ctxpack.default_pipeline().insert("pack", ("scribble", scribble))
    with pytest.raises(ctxpack.ConfigError, match=r"metadata in place \(keys \['note'\]\)"):
        ctxpack.pack(history, budget=100, model="gpt-4", pipeline=pipeline)
    # The shared empty dict is empty again: later messages carry no stray metadata.
    assert ensure_messages([{"role": "user", "content": "later"}])[0].metadata == {}
    assert ctxpack.pack(history, budget=100, model="gpt-4").messages[0].metadata == {}


@pytest.mark.parametrize(
    "item",
    [
        {"role": "tool", "content": "x", "tool_call_id": "c"},
        {"role": "user", "content": None},
        {"role": "user", "content": [{"type": "text", "text": "x"}]},
        {"role": "user", "content": "x", "id": None},
        {"role": "user", "content": "x", "name": None},
        {"role": "user", "content": "x", "pinned": True},
        {"role": "user", "content": "x", "refusal": "no"},
    ],
)
def test_other_dicts_take_the_validated_path(item: dict[str, Any]) -> None:
    assert _plain_message(item) is None


@pytest.mark.parametrize("enabled", [True, False])
def test_pack_restores_the_garbage_collector(enabled: bool) -> None:
    history = [{"role": "system", "content": "rules"}, *_plain_history(5_001)]
    was = gc.isenabled()
    try:
        if not enabled:
            gc.disable()
        ctxpack.pack(history, budget=200, model="gpt-4")
        assert gc.isenabled() is enabled
        with pytest.raises(InvalidMessageError):
            ctxpack.pack([*history, {"role": "wizard", "content": "x"}], budget=200)
        assert gc.isenabled() is enabled
    finally:
        if was:
            gc.enable()
        else:  # pragma: no cover - the suite runs with the collector on
            gc.disable()


def test_a_custom_check_runs_on_every_dict_once() -> None:
    seen: list[int] = []

    def check(item: Any, index: int) -> None:
        seen.append(index)

    history = _plain_history(3)
    ensure_messages(history, check=check)
    ensure_messages([*history, {"role": "user", "content": "more"}], check=check)
    assert seen == [0, 1, 2, 3]
    # Another check is not satisfied by conversions made under the first one.
    other: list[int] = []
    ensure_messages(history, check=lambda item, index: other.append(index))
    assert other == [0, 1, 2]


def test_a_sequence_that_differs_in_the_middle_from_the_last_reuses_one_it_matches() -> None:
    # A session's transcript and its record hunted again alternate: each differs from the other
    # in the middle, and the binary search's guess on the last one seen is too high.
    calls: list[Box] = []
    memo: PrefixMemo[Box, int] = PrefixMemo(lambda b: calls.append(b) or b.value)
    a = [Box(i) for i in range(50)]
    b = [*a[:5], Box(5), *a[6:]]
    memo(a)
    memo(b)
    calls.clear()
    memo(a)
    memo(b)
    assert calls == []
