"""Managed mode under hostile but legitimate inputs: the window promise holds, or the error
names what cannot fit and which argument makes room."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxpack import BudgetExceededError, Session, get_counter
from ctxpack.managed import WindowPolicy

COUNTER = get_counter(counter="cl100k_base")
SYSTEM = {"role": "system", "content": "rule " * 100}
TASK = {"role": "user", "content": "task " * 80}


def step(i: int, lines: int = 10) -> list[dict[str, Any]]:
    """One agent step: a call to bash and its output."""
    output = "\n".join(f"probe {i} row {j}: value_{i}_{j} = {i * 1000 + j}" for j in range(lines))
    call = {"name": "bash", "arguments": json.dumps({"command": f"python probe_{i}.py"})}
    return [
        {
            "role": "assistant",
            "content": f"THOUGHT: step {i}.",
            "tool_calls": [{"id": f"c{i}", "type": "function", "function": call}],
        },
        {"role": "tool", "tool_call_id": f"c{i}", "content": output},
    ]


def room(session: Session) -> int:
    assert session.window is not None
    return session.window.window - session.window.reserve


@pytest.mark.parametrize("summarizer", [None, lambda messages, instructions: "note " * 400])
def test_a_long_question_after_a_compaction_shrinks_the_summary_rather_than_failing(
    summarizer: Any,
) -> None:
    # The system prompt, the task and the question fit the window with the reply room; the
    # summary a compaction fitted to the room before the question came must give way.
    policy = WindowPolicy(window=1024, summarizer=summarizer)
    session = Session(counter=COUNTER, filters=False, window=policy, retrieve_tool=False)
    session.extend([SYSTEM, TASK])
    for i in range(4):
        session.extend(step(i))
        session.render()
    assert session.window_state.summary is not None
    question = {"role": "user", "content": "question " * 560}
    session.append(question)
    floor = sum(COUNTER.count_message(m) for m in session.transcript() if m.role != "tool")
    assert floor < room(session)  # what must stay fits, with every other message gone
    result = session.render()
    assert result.tokens <= room(session)
    sent = [m.text for m in result.messages]
    assert sent[0] == SYSTEM["content"] and sent[1] == TASK["content"]
    assert question["content"] in sent
    # Every summarised message is still listed with its original.
    index = session.store.get(session.window_state.index_artifact)
    assert all(mid in index for mid in session.window_state.compacted)
    assert any(e.action == "emergency" for e in session.window_state.events)


def test_what_cannot_fit_still_raises_naming_the_arguments() -> None:
    session = Session(counter=COUNTER, filters=False, window=1024, retrieve_tool=False)
    session.extend([SYSTEM, TASK])
    for i in range(4):
        session.extend(step(i))
        session.render()
    session.append({"role": "user", "content": "question " * 900})
    with pytest.raises(BudgetExceededError, match="raise window, lower reply_room"):
        session.render()
