"""A user message too large for the window, once a later one is the question: the next request
summarises it (``instructions_share``) rather than waiting for it to leave the tail.

It waited: the message stayed in the last ``keep_recent`` messages, which a compaction keeps,
so every request raised ``BudgetExceededError`` (none could be sent to bring the messages that
would push it out of the tail) until five more user messages had been sent in vain.

Short user messages under the share that leave no room once the summary is counted give way
too: every request raised from then on.
"""

from __future__ import annotations

import pytest

from ctxpack import BudgetExceededError, Session, get_counter
from ctxpack.managed import WindowPolicy

COUNTER = get_counter(counter="cl100k_base")
SYSTEM = {"role": "system", "content": "You are a coding agent."}
TASK = {"role": "user", "content": "Fix the build."}
# About 12,000 tokens: more than an 8,000-token window holds.
LOG = "Here is the whole log:\n" + "\n".join(
    f"2024-01-01 12:00:{i % 60:02d} ERROR worker-{i} cannot reach db-{i % 7}: timeout {i}ms"
    for i in range(400)
)


def pasted(session: Session) -> str:
    """The pasted log's message id, once the session holds it."""
    return next(m.id for m in session.transcript() if m.text == LOG)


def test_a_pasted_log_past_the_window_is_summarised_once_a_later_message_asks() -> None:
    session = Session(counter=COUNTER, filters=False, window=8_000)
    session.extend([SYSTEM, TASK, {"role": "assistant", "content": "Which error?"}])
    session.append({"role": "user", "content": LOG})
    assert COUNTER.count(LOG) > 8_000
    with pytest.raises(BudgetExceededError):
        session.render()  # the question itself is sent whole, or not at all
    question = "Sorry, that was too long: the build fails on db-3 timeouts."
    session.append({"role": "user", "content": question})
    result = session.render()
    assert result.tokens <= 8_000 - session.window.reserve
    sent = [m.text for m in result.messages]
    assert sent[:2] == [SYSTEM["content"], TASK["content"]] and sent[-1] == question
    assert LOG not in sent
    log = pasted(session)
    assert result.original(log).text == LOG
    [why] = [d.reason for d in result.decisions if d.message_id == log and d.action == "merged"]
    assert "instructions_share" in why


def test_without_an_instructions_share_the_pasted_log_still_raises() -> None:
    policy = WindowPolicy(window=8_000, instructions_share=None)
    session = Session(counter=COUNTER, filters=False, window=policy)
    session.extend([SYSTEM, TASK, {"role": "user", "content": LOG}])
    session.append({"role": "user", "content": "Sorry, too long."})
    with pytest.raises(BudgetExceededError):
        session.render()


def test_a_user_message_that_fits_waits_for_the_tail_as_before() -> None:
    # Below the window the release keeps its timing: the cache is written again once per so
    # many turns, not as soon as the share is passed by a message of the tail.
    session = Session(counter=COUNTER, filters=False, window=8_000)
    note = "Notes: " + " ".join(f"detail_{i}" for i in range(1_200))
    session.extend([SYSTEM, TASK, {"role": "user", "content": note}])
    session.append({"role": "user", "content": "And the build?"})
    result = session.render()
    assert note in [m.text for m in result.messages]
    assert not session.window_state.compacted


def nagged(policy: WindowPolicy, steps: int = 100) -> Session:
    """An agent told off for its format every third step (mini-SWE-agent's "provide EXACTLY ONE
    action"), under a task that takes most of an 8,000-token window: the floor and the
    summary outgrow the room while the short user messages stay under instructions_share."""
    session = Session(counter=COUNTER, filters=False, window=policy)
    details = "\n".join(f"- module_{i} fails check {i}" for i in range(620))
    task = "Fix the build. Details:\n" + details
    session.extend([SYSTEM, {"role": "user", "content": task}])
    for step in range(steps):
        call = {"id": f"c{step}", "type": "function"}
        call["function"] = {"name": "bash", "arguments": f'{{"cmd": "make {step}"}}'}
        session.append({"role": "assistant", "content": f"Trying {step}.", "tool_calls": [call]})
        output = "\n".join(f"line {j} of run {step}: ok" for j in range(60))
        session.append({"role": "tool", "tool_call_id": f"c{step}", "content": output})
        if step % 3 == 2:
            found = f"found {step % 5 + 2} actions"
            nag = f"Please always provide EXACTLY ONE action in triple backticks, {found}."
            session.append({"role": "user", "content": nag + " Use the format shown." * 8})
        render_and_check(session)
    return session


def render_and_check(session: Session) -> None:
    """Render as the agent would before its next message, and check what must hold."""
    result = session.render()
    assert result.tokens <= 8_000 - session.window.reserve
    users = [m for m in session.transcript() if m.role == "user"]
    sent = [m.text for m in result.messages]
    assert sent[1] == users[0].text and sent.count(users[-1].text) >= 1  # task, question


def test_short_user_messages_give_way_when_the_floor_and_summary_leave_no_room() -> None:
    # The floor (system prompt, task, the nags) fitted the room, but not with the summary and
    # the reply room: every request raised BudgetExceededError from the 23rd step on.
    session = nagged(WindowPolicy(window=8_000))
    result = session.render()
    merged = [d for d in result.decisions if d.action == "merged" and "no request" in d.reason]
    assert merged, "no user message was released"
    # All that may go goes at once: releasing only what is over rewrote the prompt cache at
    # every third step (17 compactions in these 100 steps).
    assert len({d.reason.split("compacted into ")[1] for d in merged}) <= 3
    for decision in merged:
        original = result.original(decision.message_id)
        assert original.role == "user" and "EXACTLY ONE action" in original.text


def test_without_an_instructions_share_the_nags_still_raise() -> None:
    with pytest.raises(BudgetExceededError):
        nagged(WindowPolicy(window=8_000, instructions_share=None))
