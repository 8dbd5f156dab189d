"""DecisionLog: the trace of decisions, as a tuple whose deferred batches are built when read."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

import ctxpack
from ctxpack import ConfigError, Decision, PackResult, Pipeline
from ctxpack.pipeline import DecisionLog, PackContext

from .helpers import ctx_of

HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "be brief", "id": "s"},
    {"role": "user", "content": "My cat is called Tom.", "id": "u1"},
    {"role": "assistant", "content": "Hello Tom!", "id": "a1"},
    {"role": "user", "content": "What is my cat called?", "id": "q"},
]


def decision(message_id: str, action: Any = "kept") -> Decision:
    return Decision(stage="t", action=action, message_id=message_id, reason="because")


def counted(ids: list[str]) -> tuple[DecisionLog, list[int]]:
    """A deferred log about ``ids`` and the list its builder appends to on each build."""
    builds: list[int] = []

    def build() -> list[Decision]:
        builds.append(1)
        return [decision(i, "dropped") for i in ids]

    return DecisionLog.deferred(ids, build), builds


def test_a_log_reads_as_a_tuple() -> None:
    a, b = decision("m1"), decision("m2")
    log = DecisionLog([a]) + (b,)  # noqa: RUF005 (the concatenation is under test)
    assert len(log) == 2
    assert log[0] == a and log[-1] == b
    assert log[:1] == (a,) and isinstance(log[:1], tuple)
    assert list(log) == [a, b] and list(reversed(log)) == [b, a]
    assert b in log and log.index(b) == 1
    assert log == (a, b) and log == [a, b] and log == DecisionLog([a, b])
    assert log != (b, a) and log != DecisionLog([a])
    assert (a,) + DecisionLog([b]) == log, "a tuple plus a log is a log"  # noqa: RUF005
    assert "m2" in repr(log)


def test_deferred_decisions_are_built_once_and_only_when_read() -> None:
    log, builds = counted(["m1", "m2"])
    both = DecisionLog([decision("m0")]) + log
    assert len(both) == 3
    assert list(both.message_ids()) == ["m0", "m1", "m2"]
    assert builds == [], "length and ids need no reasons"
    assert [d.message_id for d in both] == ["m0", "m1", "m2"]
    assert [d.action for d in log] == ["dropped", "dropped"]
    assert builds == [1], "logs sharing a batch build it once"


def test_a_builder_that_breaks_its_word_is_named() -> None:
    log = DecisionLog.deferred(["m1", "m2"], lambda: [decision("m2"), decision("m1")])
    assert list(log.message_ids()) == ["m1", "m2"]
    with pytest.raises(ConfigError, match="build\\(\\) must return one Decision per announced id"):
        list(log)


def test_only_decisions_go_in_a_log() -> None:
    with pytest.raises(ConfigError, match="decision 1: expected a Decision, got str"):
        DecisionLog([decision("m1"), "m2"])  # type: ignore[list-item]


def test_a_log_pickles_with_its_deferred_decisions_built() -> None:
    log, _ = counted(["m1"])
    assert pickle.loads(pickle.dumps(log)) == log


def test_a_context_turns_given_decisions_into_a_log() -> None:
    ctx = PackContext(
        messages=(),
        budget=10,
        counter=ctxpack.get_counter(model="gpt-4"),
        decisions=(decision("m1"),),
    )
    assert isinstance(ctx.decisions, DecisionLog) and ctx.decisions == (decision("m1"),)
    assert isinstance(ctx.decide(decision("m2")).decisions, DecisionLog)


def test_pack_leaves_the_reasons_unwritten_until_read() -> None:
    seen: list[DecisionLog] = []

    def watch(ctx: PackContext, /) -> PackContext:
        seen.append(ctx.decisions)
        return ctx

    result = ctxpack.pack(
        HISTORY, budget=60, pipeline=ctxpack.default_pipeline().insert("pack", watch)
    )
    built = _builds_of(result.decisions)
    assert built and not any(built), "the relevance and packer batches wait for a reader"
    assert len(result.decisions) == len(seen[0]) + len(HISTORY)
    kept = {d.message_id: d.reason for d in result.decisions if d.stage == "pack"}
    assert kept["u1"].startswith("score ") and kept["q"].startswith("protected")
    assert all(_builds_of(result.decisions))


def _builds_of(log: DecisionLog) -> list[bool]:
    # Whether each deferred batch of the log has been built (white box, for the test above).
    return [part._built is not None for part in log._parts if hasattr(part, "_built")]


def test_a_result_serialises_and_validates_its_decisions() -> None:
    result = ctxpack.pack(HISTORY, budget=1000)
    dumped = result.model_dump()
    assert dumped["decisions"] == [d.model_dump() for d in result.decisions]
    again = PackResult.model_validate_json(result.model_dump_json())
    assert isinstance(again.decisions, DecisionLog) and again.decisions == result.decisions
    schema = PackResult.model_json_schema()
    assert schema["properties"]["decisions"]["type"] == "array"


def test_a_stage_may_record_a_deferred_batch() -> None:
    def drop_all_but_system(ctx: PackContext, /) -> PackContext:
        gone = [m.id for m in ctx.messages if m.role != "system"]

        def build() -> list[Decision]:
            return [decision(i, "dropped") for i in gone]

        return ctx.evolve(
            decisions=ctx.decisions + DecisionLog.deferred(gone, build),
            messages=tuple(m for m in ctx.messages if m.role == "system"),
        )

    out = Pipeline([drop_all_but_system])(ctx_of(HISTORY))
    assert [d.message_id for d in out.decisions] == ["u1", "a1", "q"]
    result = ctxpack.pack(HISTORY, budget=1000, pipeline=Pipeline([drop_all_but_system]))
    assert result.kept_ids == ["s"]
    assert [d.stage for d in result.decisions] == ["t", "t", "t", "pack()"], (
        "pack() reads the batch's ids, unbuilt, to find the message no stage decided about"
    )


def test_reasons_read_later_describe_the_pack_that_was_made() -> None:
    packer = ctxpack.GreedyPacker(signal_weights={})
    result = ctxpack.pack(HISTORY, budget=1000, pipeline=Pipeline([packer]))
    with pytest.raises(TypeError):
        packer.role_weights["user"] = 99.0  # type: ignore[index]
    kept = {d.message_id: d.reason for d in result.decisions}
    assert kept["u1"].startswith("score 6.67 = user 6 + "), kept["u1"]
