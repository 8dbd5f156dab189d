"""A secret value found in one tool output is redacted in every later one, where no rule would
find it alone: in a Session (in memory, or stored, across replicas) and within one pack()."""

from __future__ import annotations

import json
from typing import Any

import pytest

import ctxpack
from ctxpack import InvalidMessageError, Message, Session, pack
from ctxpack.guard import ArrivalGuard
from ctxpack.redaction import redact_for_roles
from ctxpack.store import SQLiteArtifactStore
from ctxpack.tokens import get_counter

PASSWORD = "Vq8nT2zLp4Rw"
ENV = f"DB_HOST=db.internal\nDB_PASSWORD={PASSWORD}\nDEBUG=true\n"


def _exchange(i: int, command: str, output: str) -> list[dict[str, Any]]:
    arguments = json.dumps({"command": command})
    call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": arguments}}
    return [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": output},
    ]


def _history(*outputs: tuple[str, str]) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "user", "content": "Why does the app fail?"}]
    for i, (command, output) in enumerate(outputs):
        history += _exchange(i, command, output)
    return history


CAT_THEN_ECHO = _history(("cat .env", ENV), ("echo $DB_PASSWORD", f"{PASSWORD}\n"))


def test_a_bare_value_alone_is_no_secret_to_the_rules() -> None:
    # What makes the hunt necessary: alone, the value has nothing a rule knows.
    echoed = Message(role="tool", tool_call_id="c1", content=f"{PASSWORD}\n")
    assert redact_for_roles(echoed, ("tool",))[1] == ()


def test_a_session_redacts_a_value_it_found_earlier_wherever_it_reappears() -> None:
    session = Session(model="gpt-4", filters=False)
    session.extend(CAT_THEN_ECHO)
    seen = json.dumps(session.render().to_openai()) + repr(session.transcript())
    assert PASSWORD not in seen
    assert session.transcript()[-1].text == "[REDACTED secret-assignment]\n"
    redacted = [d for d in session.render().decisions if d.action == "redacted"]
    assert [d.message_id for d in redacted] == ["s2", "s4"]
    assert redacted[1].reason.startswith("1 secret replaced: secret-assignment")


def test_the_value_is_found_inside_later_text_but_not_inside_a_longer_word() -> None:
    later = [
        ("psql", f"connecting to db.internal as app ('{PASSWORD}'), ok;"),
        ("grep", f"config.yaml:3:  pass: {PASSWORD}\nlog: x{PASSWORD}y kept"),
    ]
    session = Session(model="gpt-4", filters=False)
    session.extend(_history(("cat .env", ENV), *later))
    texts = [m.text for m in session.transcript()]
    assert texts[-3] == "connecting to db.internal as app ('[REDACTED secret-assignment]'), ok;"
    assert texts[-1] == (
        f"config.yaml:3:  pass: [REDACTED secret-assignment]\nlog: x{PASSWORD}y kept"
    )


def test_a_value_with_symbols_found_in_a_url_is_hunted_with_them() -> None:
    password = "h7+Kx-9q=Zr2.w"
    url = f"DATABASE_URL=postgres://app:{password}@db:5432/main"
    session = Session(model="gpt-4", filters=False)
    session.extend(_history(("env", url), ("echo", f"pw is {password}.\n{password}")))
    assert session.transcript()[-1].text == (
        "pw is [REDACTED url-credentials].\n[REDACTED url-credentials]"
    )


def test_a_value_shorter_than_the_minimum_or_a_word_is_never_hunted() -> None:
    env = "DB_PASSWORD=tiger7x\nADMIN_PASSWORD=development\n"
    session = Session(model="gpt-4", filters=False)
    session.extend(_history(("cat .env", env), ("echo", "tiger7x\nthe development build")))
    assert session.transcript()[-1].text == "tiger7x\nthe development build"


def test_what_a_user_typed_is_not_hunted_unless_asked() -> None:
    session = Session(model="gpt-4", filters=False)
    session.extend(CAT_THEN_ECHO)
    session.append({"role": "user", "content": f"is {PASSWORD} right?"})
    assert session.transcript()[-1].text == f"is {PASSWORD} right?"


def test_the_session_keeps_fingerprints_never_the_value() -> None:
    session = Session(model="gpt-4", filters=False)
    session.extend(CAT_THEN_ECHO)
    state = repr(vars(session))
    assert PASSWORD not in state


def test_a_failed_append_forgets_what_it_found() -> None:
    session = Session(model="gpt-4", filters=False)
    session.extend(_history(("ls", "app.py")))
    bad: list[Any] = [*_exchange(5, "cat .env", ENV), {"role": "tool"}]
    with pytest.raises(InvalidMessageError):
        session.extend(bad)
    session.extend(_exchange(6, "echo", PASSWORD))
    assert session.transcript()[-1].text == PASSWORD


def test_pack_hunts_a_value_found_anywhere_in_the_history_in_every_tool_output() -> None:
    # Echoed before it was recognised and after: pack() sends the whole history at once.
    history = _history(
        ("echo $DB_PASSWORD", f"{PASSWORD}\n"),
        ("cat .env", ENV),
        ("echo $DB_PASSWORD", f"{PASSWORD}\n"),
    )
    result = pack(history, budget=10_000, model="gpt-4")
    assert PASSWORD not in json.dumps(result.to_openai())
    texts = [m.text for m in result.messages if m.role == "tool"]
    assert texts[0] == texts[2] == "[REDACTED secret-assignment]\n"
    redacted = [d for d in result.decisions if d.action == "redacted"]
    assert len(redacted) == 3


def test_pack_leaves_a_history_whose_values_are_short_as_it_was() -> None:
    history = _history(("cat .env", "DB_PASSWORD=tiger7x\n"), ("echo", "tiger7x"))
    result = pack(history, budget=10_000, model="gpt-4")
    assert result.messages[-1].text == "tiger7x"


def test_the_guard_without_a_session_hunts_nothing() -> None:
    guard = ArrivalGuard()
    store = SQLiteArtifactStore(":memory:")
    counter = get_counter(None, "approx")
    env = Message(role="tool", id="t1", tool_call_id="c1", content=ENV)
    echo = Message(role="tool", id="t2", tool_call_id="c2", content=PASSWORD)
    guard(env, counter, store)
    assert guard(echo, counter, store).message.text == PASSWORD


def _code_execution_turn(stdout: str) -> dict[str, Any]:
    """An Anthropic assistant turn whose bash ran on Anthropic's side, printing ``stdout``."""
    return {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Checking the variable."},
            {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "bash_code_execution",
                "input": {"command": "echo $DB_PASSWORD"},
            },
            {
                "type": "bash_code_execution_tool_result",
                "tool_use_id": "srvtoolu_1",
                "content": {
                    "type": "bash_code_execution_result",
                    "stdout": stdout,
                    "stderr": "",
                    "return_code": 0,
                    "content": [],
                },
            },
            {"type": "text", "text": f"Done; {PASSWORD} is what I typed."},
        ],
    }


def test_the_result_of_a_tool_the_provider_ran_is_hunted_too() -> None:
    history = [
        {"role": "user", "content": "Why does the app fail?"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": ENV}]},
        _code_execution_turn(f"{PASSWORD}\n"),
    ]
    session = Session(model="claude-sonnet-4-5", counter="approx", filters=False)
    session.extend(history)
    last = session.transcript()[-1].content
    assert isinstance(last, list)
    assert last[2]["content"]["stdout"] == "[REDACTED secret-assignment]\n"
    # The assistant's own words are left as written, as they are by the rules.
    assert last[3]["text"] == f"Done; {PASSWORD} is what I typed."
    packed = pack(ctxpack.from_anthropic(history), budget=50_000, counter="approx")
    result = next(m for m in packed.messages if m.role == "assistant" and m.text.startswith("Che"))
    assert isinstance(result.content, list)
    assert result.content[2]["content"]["stdout"] == "[REDACTED secret-assignment]\n"
