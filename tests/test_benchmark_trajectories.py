"""benchmarks/trajectory_sessions.py: trajectories become the sessions the benchmarks read."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from .helpers import load_script

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script(ROOT / "benchmarks" / "trajectory_sessions.py", "trajectory_sessions_bench")


TRAJECTORY = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "<pr_description>Fix the VAT rounding.</pr_description>"},
    {"role": "assistant", "content": "THOUGHT: Find it.\n\n```bash\ngrep -rn vat src\n```"},
    {"role": "user", "content": "<returncode>0</returncode>\n<output>\nsrc/tax.py:3\n</output>"},
    {"role": "assistant", "content": "Two at once.\n```bash\nls\n```\n```bash\npwd\n```"},
    {"role": "user", "content": "Please always provide EXACTLY ONE action."},
    {"role": "assistant", "content": [{"type": "text", "text": "Done.\n```bash\nsubmit\n```"}]},
    {"role": "user", "content": [{"type": "text", "text": "<returncode>0</returncode>"}]},
]


def test_one_bash_block_becomes_a_call_and_the_reply_its_result(bench: ModuleType) -> None:
    out = bench.convert(TRAJECTORY)
    assert [m["role"] for m in out] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
    ]
    call = out[2]["tool_calls"][0]
    assert out[2]["content"] == "THOUGHT: Find it."
    assert json.loads(call["function"]["arguments"]) == {"command": "grep -rn vat src"}
    assert out[3] == {
        "role": "tool",
        "tool_call_id": call["id"],
        "content": TRAJECTORY[3]["content"],
    }
    # Two blocks: the harness refused the turn, and so does the conversion.
    assert out[4] == {"role": "assistant", "content": TRAJECTORY[4]["content"]}
    assert out[5]["role"] == "user"
    assert out[7]["content"] == "<returncode>0</returncode>"


def test_main_leaves_out_the_sessions_already_in_a_folder(
    bench: ModuleType, tmp_path: Path
) -> None:
    trajs = tmp_path / "trajs"
    for name in ("a__a-1", "b__b-2"):
        (trajs / name).mkdir(parents=True)
        (trajs / name / f"{name}.traj.json").write_text(json.dumps({"messages": TRAJECTORY}))
    seen = tmp_path / "seen"
    seen.mkdir()
    (seen / "a__a-1.json").write_text("{}")
    out = tmp_path / "out"
    assert bench.main(["--trajs", str(trajs), "--out", str(out), "--exclude", str(seen)]) == 0
    [written] = sorted(out.glob("*.json"))
    session = json.loads(written.read_text())
    assert session["id"] == "b__b-2" and session["messages"] == bench.convert(TRAJECTORY)
    with pytest.raises(SystemExit):
        bench.main(["--trajs", str(seen), "--out", str(out)])


SWE_AGENT_HISTORY = [
    {"role": "system", "content": "SETTING: You are an autonomous programmer.", "agent": "primary"},
    {"role": "user", "content": "--- DEMONSTRATION ---\n...", "is_demo": True, "agent": "primary"},
    {"role": "user", "content": "ISSUE:\nFix the VAT rounding.", "agent": "primary"},
    {
        "role": "assistant",
        "content": "DISCUSSION\nFind it.\n```\nsearch_dir vat\n```",
        "thought": "DISCUSSION\nFind it.\n",
        "action": "search_dir vat\n",
    },
    {"role": "user", "content": 'Found 1 matches for "vat"\n(Current directory: /repo)\nbash-$'},
    {"role": "assistant", "content": "No command here.", "thought": "No command here."},
    {"role": "user", "content": "Your output was not formatted correctly."},
    {"role": "assistant", "content": "Exit due to cost limit", "action": "exit_cost"},
]


def test_a_swe_agent_action_becomes_a_call_and_the_next_user_message_its_result(
    bench: ModuleType,
) -> None:
    out = bench.convert_swe_agent(SWE_AGENT_HISTORY)
    roles = "system user user assistant tool assistant user assistant"
    assert [m["role"] for m in out] == roles.split()
    call = out[3]["tool_calls"][0]
    assert out[3]["content"] == "DISCUSSION\nFind it."
    assert json.loads(call["function"]["arguments"]) == {"command": "search_dir vat"}
    assert out[4]["tool_call_id"] == call["id"]
    assert out[4]["content"] == SWE_AGENT_HISTORY[4]["content"]
    # A turn without an action, and the harness's own exit, are no calls.
    assert out[5] == {"role": "assistant", "content": "No command here."}
    assert out[6] == {"role": "user", "content": "Your output was not formatted correctly."}
    assert out[7] == {"role": "assistant", "content": "Exit due to cost limit"}


def test_main_reads_swe_agent_trajectories(bench: ModuleType, tmp_path: Path) -> None:
    trajs = tmp_path / "trajs"
    trajs.mkdir()
    (trajs / "o__r-7.traj").write_text(json.dumps({"history": SWE_AGENT_HISTORY, "info": {}}))
    out = tmp_path / "out"
    assert bench.main(["--trajs", str(trajs), "--out", str(out)]) == 0
    session = json.loads((out / "o__r-7.json").read_text())
    assert session["id"] == "o__r-7"
    assert session["messages"] == bench.convert_swe_agent(SWE_AGENT_HISTORY)
