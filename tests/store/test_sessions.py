"""Session.open: a session whose state lives in a store, resumed anywhere byte for byte,
isolated from the others, erasable."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ctxpack import ConfigError, Session, to_anthropic, to_openai
from ctxpack.errors import ArtifactNotFoundError, StoreError
from ctxpack.store import SessionStore, artifact_id, open_store

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "tool_outputs"
PYTEST = (FIXTURES / "pytest_failures.txt").read_text()
CAT = (FIXTURES / "cat_tax_py.txt").read_text()


def call(call_id: str, command: str) -> dict[str, Any]:
    arguments = json.dumps({"command": command})
    return {
        "role": "assistant",
        "content": f"Running {command}",
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": "bash", "arguments": arguments},
            }
        ],
    }


def turn(n: int, output: str = PYTEST, command: str = "pytest -q") -> list[dict[str, Any]]:
    """A user question, a tool call, its output: one agent turn."""
    return [
        {"role": "user", "content": f"question {n}: why does the auth test fail?"},
        call(f"c{n}", command),
        {"role": "tool", "tool_call_id": f"c{n}", "content": output},
    ]


def wire(session: Session) -> str:
    return json.dumps(to_openai(session.render().messages), sort_keys=True)


def test_a_session_is_resumed_from_the_store_with_the_same_request(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    first = Session.open(session_id, store=replicas(), model="gpt-4")
    first.extend(turn(1))
    first.extend(turn(2, CAT, "cat src/tax.py"))
    again = Session.open(session_id, store=replicas(), model="gpt-4")
    assert again.transcript() == first.transcript()
    assert again.compact() == first.compact()
    assert again.records == first.records
    assert wire(again) == wire(first)
    assert list(again.render().decisions) == list(first.render().decisions)
    shortened = [r for r in first.records if r.shortened]
    assert shortened, "the fixture outputs are long enough to be filtered"
    assert again.retrieve(shortened[0].artifact).text == PYTEST  # type: ignore[arg-type]


def test_a_replica_sees_what_another_appended_at_its_next_render(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    a = Session.open(session_id, store=replicas(), model="gpt-4")
    b = Session.open(session_id, store=replicas(), model="gpt-4")
    a.extend(turn(1))
    b.append({"role": "assistant", "content": "The token has no exp claim."})
    assert [m.id for m in a.transcript()] == ["s0", "s1", "s2", "s3"]
    assert wire(a) == wire(b)


def test_resuming_in_another_process_renders_the_same_bytes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    session = Session.open("u1", store=url, model="gpt-4")
    session.extend(turn(1))
    session.extend(turn(2, CAT, "cat src/tax.py"))
    script = (
        "import json, sys\n"
        "from ctxpack import Session, to_openai\n"
        f"s = Session.open('u1', store={url!r}, model='gpt-4')\n"
        "sys.stdout.write(json.dumps(to_openai(s.render().messages), sort_keys=True))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout == wire(session)


def test_anthropic_messages_resume_as_anthropic(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    first = Session.open(session_id, store=replicas(), model="gpt-4")
    first.extend(
        [
            {"role": "user", "content": "list the files"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py\nb.py"}],
            },
        ]
    )
    again = Session.open(session_id, store=replicas(), model="gpt-4")
    assert again.provider == "anthropic"
    assert to_anthropic(again.render().messages) == to_anthropic(first.render().messages)


@pytest.mark.parametrize("filter_when", ["arrival", "answered"])
def test_every_option_resumes_the_same(
    replicas: Callable[[], SessionStore], session_id: str, filter_when: str
) -> None:
    options: dict[str, Any] = {"filter_when": filter_when, "supersede_batch": 1}
    first = Session.open(session_id, store=replicas(), model="gpt-4", **options)
    first.extend(turn(1, CAT, "cat src/tax.py"))
    first.extend(turn(2, CAT, "cat src/tax.py"))
    first.append({"role": "assistant", "content": "Found it."})
    again = Session.open(session_id, store=replicas(), model="gpt-4", **options)
    assert again.compact() == first.compact()
    assert again.records == first.records
    again.extend(turn(3, PYTEST))
    first.append({"role": "user", "content": "thanks"})
    assert wire(first) == wire(again)


def test_sessions_read_only_their_own_originals(store: SessionStore, session_id: str) -> None:
    alice = Session.open(session_id + "-alice", store=store, model="gpt-4")
    bob = Session.open(session_id + "-bob", store=store, model="gpt-4")
    alice.extend(turn(1))
    bob.extend(turn(1))
    (ref,) = [r.artifact for r in alice.records if r.shortened]
    assert ref is not None
    assert alice.retrieve(ref).text == PYTEST
    with pytest.raises(ArtifactNotFoundError):
        bob.retrieve(ref)
    # The same text in two sessions gets two ids, neither the content hash.
    (bob_ref,) = [r.artifact for r in bob.records if r.shortened]
    assert bob_ref != ref
    assert artifact_id(PYTEST) not in {ref, bob_ref}


def test_delete_session_erases_transcript_record_and_originals(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    store = replicas()
    session = Session.open(session_id, store=store, model="gpt-4")
    session.extend(turn(1))
    (ref,) = [r.artifact for r in session.records if r.shortened]
    store.delete_session(session_id)
    assert store.load(session_id).version == 0
    with pytest.raises(ArtifactNotFoundError):
        store.get_artifact(session_id, ref)  # type: ignore[arg-type]
    fresh = Session.open(session_id, store=replicas(), model="gpt-4")
    assert len(fresh) == 0
    # The live object sees the erasure too, and starts again from nothing.
    assert session.transcript() == []
    session.append({"role": "user", "content": "hello again"})
    assert [m.text for m in fresh.transcript()] == ["hello again"]


def test_a_filter_that_fails_keeps_the_output_whole_and_says_so(
    store: SessionStore, session_id: str
) -> None:
    class Exploding:
        kind = "exploding"

        def detect(self, output: object) -> float:
            return 1.0

        def extract(self, output: object) -> None:
            raise RecursionError("maximum recursion depth exceeded")

    session = Session.open(session_id, store=store, model="gpt-4", filters=[Exploding()])
    session.extend(turn(1))
    session.extend(turn(2))
    first, second = session.records
    assert not first.shortened and first.kind == "error"
    assert second.kind == "error"
    assert "RecursionError" in first.reason
    assert session.compact()[2].text == PYTEST
    assert [m.id for m in session.transcript()] == ["s0", "s1", "s2", "s3", "s4", "s5"]


class FailingStore:
    """A store whose appends fail while ``failing`` is set."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.url = inner.url
        self.failing = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def append(self, *args: Any, **kwargs: Any) -> None:
        if self.failing:
            raise OSError(28, "No space left on device")
        self.inner.append(*args, **kwargs)


def test_a_failing_store_leaves_the_session_unchanged_and_usable(
    store: SessionStore, session_id: str
) -> None:
    flaky = FailingStore(store)
    session = Session.open(session_id, store=flaky, model="gpt-4")  # type: ignore[arg-type]
    session.extend(turn(1))
    before = (session.transcript(), session.compact(), session.records, wire(session))
    flaky.failing = True
    with pytest.raises(StoreError, match="No space left on device") as caught:
        session.extend(turn(2))
    assert "append to session" in str(caught.value)
    assert (session.transcript(), session.compact(), session.records, wire(session)) == before
    flaky.failing = False
    session.extend(turn(2))
    assert [m.id for m in session.transcript()][-3:] == ["s3", "s4", "s5"]
    assert wire(Session.open(session_id, store=store, model="gpt-4")) == wire(session)


def test_open_checks_its_arguments(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="session_id"):
        Session.open("", store="memory://")
    with pytest.raises(ConfigError, match="unknown store URL"):
        Session.open("u1", store="mysql://db/x")
    with pytest.raises(ConfigError, match="store must be a store URL"):
        Session.open("u1", store=42)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown option"):
        Session.open("u1", store="memory://", stor="x")
    with pytest.raises(StoreError, match="folder"):
        Session.open("u1", store=f"sqlite:///{tmp_path}")


def test_the_in_memory_constructor_is_unchanged() -> None:
    session = Session(model="gpt-4")
    session.extend(turn(1))
    assert session.session_id is None
    assert session.records[0].artifact == artifact_id(PYTEST)


def test_open_store_picks_the_backend_from_the_url(tmp_path: Path) -> None:
    assert type(open_store(f"sqlite:///{tmp_path / 'a.db'}?ttl=60")).__name__ == "SQLiteStore"
    assert type(open_store("memory://")).__name__ == "MemoryStore"
    with pytest.raises(ConfigError, match="ttl"):
        open_store("memory://?ttl=-1")
