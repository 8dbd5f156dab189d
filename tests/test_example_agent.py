"""The example coding agent (examples/coding_agent.py): a managed session in a SQLite store
behind the wrapped Anthropic client, the loop moving to a new process every third step; every
prompt fits the window, the history is compacted, an original is read back, nothing is lost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .helpers import load_script

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "coding_agent.py"


def test_the_agent_finishes_its_task_within_the_window(tmp_path: Path) -> None:
    agent: Any = load_script(EXAMPLE, "coding_agent_example")
    report = agent.run(f"sqlite:///{tmp_path / 'agent.db'}")
    # One request per scripted command, one to read an original back, one for the answer: a
    # prompt over the window would have been refused by the mock API, ending the task early.
    assert report["requests"] == len(agent.SCRIPT) + 2
    assert report["read_back"] and report["answer"].startswith("Clearing is decided")
    assert report["largest_prompt_text_tokens"] + 1_000 <= agent.WINDOW
    assert report["raw_history_tokens"] > agent.WINDOW  # the task outgrew the window
    assert report["edits"].get("compacted", 0) >= 1
    # The session kept every message the agent sent, once: the system prompt, the task, and a
    # call and its result per step but the last answer.
    assert report["transcript"] == 2 + 2 * (report["requests"] - 1)
