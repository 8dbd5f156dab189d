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
