"""A secret value a Session recognises is never sent again, in outputs that arrived before it
was recognised too: in what render() sends, in the originals a result hands back and in the
retrieve tool's answers."""

from __future__ import annotations

import json
from typing import Any

from ctxpack import Session
from ctxpack.managed import WindowPolicy

PASSWORD = "Vq8nT2zLp4Rw"
ENV = f"DB_HOST=db.internal\nDB_PASSWORD={PASSWORD}\n"
# Long enough for the default filter to shorten it (its original stored), the value kept.
LOG = "\n".join(
    f"2024-01-01 12:00:{i % 60:02d} INFO worker {i} connected to db.internal" for i in range(400)
) + (f"\nERROR auth failed for password {PASSWORD}\n")


def _exchange(i: int, command: str, output: str) -> list[dict[str, Any]]:
    arguments = json.dumps({"command": command})
    call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": arguments}}
    return [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": output},
    ]


ECHO_THEN_CAT = [
    {"role": "user", "content": "Why does the app fail?"},
    *_exchange(1, "echo $DB_PASSWORD", f"{PASSWORD}\n"),
    *_exchange(2, "cat .env", ENV),
]


def test_an_output_before_the_value_was_recognised_is_not_sent_with_it() -> None:
    session = Session(model="gpt-4", filters=False)
    session.extend(ECHO_THEN_CAT)
    result = session.render()
    assert PASSWORD not in json.dumps(result.to_openai())
    assert result.messages[2].text == "[REDACTED secret-assignment]\n"
    redacted = [d for d in result.decisions if d.action == "redacted"]
    assert sorted(d.message_id for d in redacted) == ["s2", "s4"]
    assert all(PASSWORD not in d.reason for d in result.decisions)
    # Nor in a packed render (the pipeline's path) nor in a managed one.
    packed = session.render(budget=2_000)
    assert PASSWORD not in json.dumps(packed.to_openai())
    managed = Session(model="gpt-4", filters=False, window=WindowPolicy(window=8_000))
    managed.extend(ECHO_THEN_CAT)
    assert PASSWORD not in json.dumps(managed.render().to_openai())


def test_a_value_recognised_later_is_hunted_in_every_render_after() -> None:
    session = Session(model="gpt-4", filters=False)
    session.extend(ECHO_THEN_CAT[:3])
    assert session.render().messages[2].text == f"{PASSWORD}\n"  # not yet known
    session.extend(ECHO_THEN_CAT[3:])
    first, again = session.render(), session.render()
    assert first.messages[2].text == again.messages[2].text == "[REDACTED secret-assignment]\n"


def _log_then_env() -> Session:
    session = Session(model="gpt-4")
    session.extend(
        [
            {"role": "user", "content": "Why does the app fail?"},
            *_exchange(1, "cat app.log", LOG),
            *_exchange(2, "cat .env", ENV),
        ]
    )
    return session


def test_the_original_of_an_earlier_output_hides_the_value() -> None:
    original = _log_then_env().render().original("s2")
    assert original is not None and PASSWORD not in original.text
    assert "ERROR auth failed for password [REDACTED secret-assignment]" in original.text


def test_the_retrieve_answers_of_an_earlier_output_hide_the_value() -> None:
    session = _log_then_env()
    (artifact,) = [r.artifact for r in session.records if r.artifact is not None]
    last = session.retrieve(artifact, lines="401").text
    assert last == "ERROR auth failed for password [REDACTED secret-assignment]"
    # A regex matches the placeholder, never the value (its matches would spell it out).
    answer = session.handle({"artifact": artifact, "regex": PASSWORD[:6]})
    header, page = answer.split("\n", 1)
    assert "0 matches" in header and PASSWORD[:6] not in page


def test_an_original_kept_with_store_secrets_is_retrieved_without_a_hunted_value() -> None:
    # store_secrets keeps the original of every message redacted, one whose only secret is
    # a value hunted too: what the store holds is the caller's risk, what is read back is not.
    session = Session(model="gpt-4", filters=False, store_secrets=True)
    session.extend(ECHO_THEN_CAT[:1] + _exchange(1, "cat .env", ENV))
    session.extend(_exchange(2, "echo $DB_PASSWORD", f"{PASSWORD}\n"))
    decisions = session.render().decisions
    (decision,) = [d for d in decisions if d.message_id == "s4" and d.action == "redacted"]
    artifact = decision.reason.rsplit(" ", 1)[-1]
    assert session.store.get(artifact) == f"{PASSWORD}\n"
    assert session.retrieve(artifact).text == "[REDACTED secret-assignment]\n"
    assert PASSWORD not in session.handle({"artifact": artifact})


def _thinking_turn(i: int, command: str, output: str) -> list[dict[str, Any]]:
    call = {"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"command": command}}
    thinking = {"type": "thinking", "thinking": f"step {i}: run {command}", "signature": f"s{i}"}
    result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": output}
    return [
        {"role": "assistant", "content": [thinking, call]},
        {"role": "user", "content": [result]},
    ]


# An agent's thinking before each call; the value printed bare at step 1, recognised at step 3.
THINKING_STEPS = [
    {"role": "user", "content": "Why does the app fail?"},
    *_thinking_turn(0, "ls", "app.py\n.env\n"),
    *_thinking_turn(1, "echo $DB_PASSWORD", f"{PASSWORD}\n"),
    *_thinking_turn(2, "cat app.py", "import os\n"),
    *_thinking_turn(3, "cat .env", ENV),
]


def _thinking_of(request: dict[str, Any]) -> list[str]:
    return [
        block["signature"]
        for message in request["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "thinking"
    ]


def test_a_hunt_in_an_earlier_output_clears_the_thinking_after_it_on_preserved_thinking() -> None:
    # The value's replacement in step 1's output changes what precedes the thinking of steps
    # 2 and 3: a model with preserved thinking refuses those blocks (400) or drops them.
    preserved = Session(model="claude-sonnet-5-5", filters=False)
    preserved.extend(THINKING_STEPS)
    result = preserved.render()
    request = result.to_anthropic()
    assert PASSWORD not in json.dumps(request)
    assert _thinking_of(request) == ["s0", "s1"]
    cleared = [d for d in result.decisions if d.action == "cleared" and d.stage == "redact"]
    assert len(cleared) == 2 and all("preserved thinking" in d.reason for d in cleared)
    assert all(d.tokens_after < d.tokens_before for d in cleared)
    assert _thinking_of(preserved.render().to_anthropic()) == ["s0", "s1"]  # the same each time
    # Another model reads the thinking as sent: nothing of it goes.
    other = Session(model="claude-sonnet-4-5", filters=False)
    other.extend(THINKING_STEPS)
    assert _thinking_of(other.render().to_anthropic()) == ["s0", "s1", "s2", "s3"]
    # Before the value is recognised, nothing changed, and every thinking block is sent.
    early = Session(model="claude-sonnet-5-5", filters=False)
    early.extend(THINKING_STEPS[:-2])
    assert _thinking_of(early.render().to_anthropic()) == ["s0", "s1", "s2"]
