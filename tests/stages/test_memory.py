from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from ctxpack import ConfigError, MemorySelector

from ..helpers import ctx_of, ids

HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "sys", "id": "s"},
    {"role": "user", "content": "old question", "id": "u1", "metadata": {"important": True}},
    {"role": "assistant", "content": "old answer", "id": "a1"},
    {"role": "user", "content": "q2", "id": "u2", "priority": 2.0},
    {"role": "assistant", "content": "a2", "id": "a2"},
    {"role": "user", "content": "q3", "id": "u3"},
    {"role": "assistant", "content": "a3", "id": "a3", "pinned": True},
    {"role": "user", "content": "q4", "id": "u4"},
    {"role": "assistant", "content": "a4", "id": "a4"},
]


def _memory(signals: Mapping[str, Mapping[str, float]]) -> set[str]:
    return {mid for mid, value in signals.get("memory", {}).items() if value}


def test_rolling_window_and_episodic_memory() -> None:
    out = MemorySelector(window=2)(ctx_of(HISTORY))
    # Recent: from the second-to-last user turn on. Episodic: important, high priority.
    assert _memory(out.signals) == {"u3", "a3", "u4", "a4", "u1", "u2"}
    assert ids(out) == ids(ctx_of(HISTORY)), "memory selection never drops"
    reasons = {d.message_id: d.reason for d in out.decisions}
    assert reasons["u4"].startswith("recent")
    assert reasons["u1"].startswith("episodic")
    assert {d.action for d in out.decisions} == {"selected"}


def test_pinned_outside_the_window_is_episodic() -> None:
    out = MemorySelector(window=1)(ctx_of(HISTORY))
    assert _memory(out.signals) == {"u4", "a4", "a3", "u1", "u2"}


def test_important_priority_threshold() -> None:
    out = MemorySelector(window=1, important_priority=5.0)(ctx_of(HISTORY))
    assert "u2" not in _memory(out.signals)


def test_window_zero_keeps_only_episodic() -> None:
    out = MemorySelector(window=0)(ctx_of(HISTORY))
    assert _memory(out.signals) == {"u1", "u2", "a3"}


def test_config_is_validated() -> None:
    with pytest.raises((ConfigError, ValueError)):
        MemorySelector(window=-1)
