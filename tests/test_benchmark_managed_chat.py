"""The managed-chat benchmark's bookkeeping: what counts as a failure and as a turn present."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ctxpack import Message, get_counter

from .helpers import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "managed_chat.py"
COUNTER = get_counter(counter="cl100k_base")


@pytest.fixture(scope="module")
def chat() -> ModuleType:
    return load_script(SCRIPT, "managed_chat_benchmark")


def history(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "Chat.", "id": "system"}]
    for i in range(turns):
        words = " ".join(f"w{i}_{j}" for j in range(40))
        out.append({"role": "user", "content": f"Ann: turn {i} {words}", "id": f"D1:{2 * i + 1}"})
        out.append({"role": "assistant", "content": f"Bob: ok {i}", "id": f"D1:{2 * i + 2}"})
    return out


def test_a_chat_over_the_window_fails_verbatim_and_goes_on_managed(chat: ModuleType) -> None:
    turns = history(60)
    raw = chat.replay(turns, "raw", 2_000, COUNTER)
    verbatim = chat.replay(turns, "verbatim", 2_000, COUNTER)
    managed = chat.replay(turns, "managed", 2_000, COUNTER)
    assert len(raw["requests"]) == len(managed["requests"]) == 60 and raw["over"] > 0
    assert verbatim["failed"] is not None and verbatim["failed"] < 60
    assert managed["failed"] is None and managed["over"] == 0 and managed["compactions"] > 0
    # raw's last request holds every turn before the last reply
    assert raw["last"] == turns[:-1]


def test_a_turn_is_present_sent_whole_or_copied_into_the_summary(chat: ModuleType) -> None:
    turn = {"role": "user", "content": "Ann: I painted a sunset.", "id": "D1:1"}
    summary = Message(role="user", content="## User instructions\n> I painted a sunset.")
    assert chat.present(turn, [turn])
    assert chat.present(turn, [summary])
    assert not chat.present(turn, [Message(role="user", content="I painted a sun")])
