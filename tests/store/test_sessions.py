"""Session.open: a session whose state lives in a store, resumed anywhere byte for byte,
isolated from the others, erasable."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ctxpack import ConfigError, Session, to_anthropic, to_openai
from ctxpack.errors import ArtifactNotFoundError, InvalidMessageError, StoreError
from ctxpack.store import SessionStore, artifact_id, open_async_store, open_store

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


def wire_in_another_process(session_id: str, url: str, options: str = "") -> str:
    """:func:`wire` of the session opened (with ``options``, Python keyword arguments) in a
    new interpreter."""
    script = (
        "import json, sys\n"
        "from ctxpack import Session, to_openai\n"
        f"s = Session.open({session_id!r}, store={url!r}, model='gpt-4'{options})\n"
        "sys.stdout.write(json.dumps(to_openai(s.render().messages), sort_keys=True))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return out.stdout


def test_resuming_in_another_process_renders_the_same_bytes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    session = Session.open("u1", store=url, model="gpt-4")
    session.extend(turn(1))
    session.extend(turn(2, CAT, "cat src/tax.py"))
    assert wire_in_another_process("u1", url) == wire(session)


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


def test_originals_put_before_the_first_append_are_written_with_it(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    # A store keeps originals only beside a session it holds: a stage putting one through a
    # new session's store (pack(..., store=session.store)) must not lose it.
    first = Session.open(session_id, store=replicas(), model="gpt-4")
    ref = first.store.put("an original put before any append")
    assert first.store.get(ref) == "an original put before any append"
    first.append({"role": "user", "content": "hello"})
    other = Session.open(session_id, store=replicas(), model="gpt-4")
    assert other.store.get(ref) == "an original put before any append"


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


@pytest.mark.parametrize("regrown", [2, 3], ids=["as many versions", "more versions"])
def test_a_replica_sees_an_erasure_the_session_id_grew_back_from(
    replicas: Callable[[], SessionStore], session_id: str, regrown: int
) -> None:
    # Versions count appends: erased and written again as often, the id's version alone
    # would not tell the replica that its history is gone.
    store = replicas()
    stale = Session.open(session_id, store=replicas(), model="gpt-4")
    stale.extend([{"role": "user", "content": "erased 1"}])
    stale.append({"role": "user", "content": "erased 2"})
    store.delete_session(session_id)
    other = Session.open(session_id, store=replicas(), model="gpt-4")
    for k in range(regrown):
        other.append({"role": "user", "content": f"new {k}"})
    new = [f"new {k}" for k in range(regrown)]
    assert [m.text for m in stale.transcript()] == new
    assert wire(stale) == wire(other)
    stale.append({"role": "user", "content": "from the stale replica"})
    fresh = Session.open(session_id, store=replicas(), model="gpt-4")
    assert [m.text for m in fresh.transcript()] == [*new, "from the stale replica"]
    assert [m.id for m in fresh.transcript()] == [f"s{k}" for k in range(regrown + 1)]
    other.append({"role": "user", "content": "and on"})
    assert wire(Session.open(session_id, store=replicas(), model="gpt-4")) == wire(other)


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
    # An AsyncSession's store has the same method names: it got as far as reading the
    # coroutine load() returned ("'coroutine' object has no attribute 'state'").
    with pytest.raises(ConfigError, match=r"AsyncSessionStore.*open_store"):
        Session.open("u1", store=open_async_store("memory://"))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown option"):
        Session.open("u1", store="memory://", stor="x")
    with pytest.raises(ConfigError, match=r"'windw' \(did you mean 'window'\?\)"):
        Session.open("u1", store="memory://", windw=64_000)
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


def test_every_message_field_survives_the_store(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    from datetime import datetime, timezone

    from ctxpack import Message

    messages = [
        Message(
            role="system",
            content="You are terse.",
            pinned=True,
            priority=2.5,
            metadata={"tenant": "acme", "nested": {"k": [1, 2]}},
        ),
        Message(
            role="user",
            content=[
                {"type": "text", "text": "What is in this image? caf\u00e9 \U0001f600"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ],
            name="alice",
            source="upload://1",
            timestamp=datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc),
        ),
        Message(role="assistant", content="A cat.", extras={"refusal": None, "audio": {"id": "a"}}),
    ]
    first = Session.open(session_id, store=replicas(), model="gpt-4")
    first.extend(messages)
    again = Session.open(session_id, store=replicas(), model="gpt-4")
    assert again.transcript() == first.transcript()
    assert wire(again) == wire(first)


class FailingArtifacts:
    """An artifact store whose second put fails, as a full disk would."""

    def __init__(self) -> None:
        self.puts = 0
        self.texts: dict[str, str] = {}

    def put(self, text: str, **metadata: Any) -> str:
        self.puts += 1
        if self.puts == 2:
            raise OSError(28, "No space left on device")
        self.texts[artifact_id(text)] = text
        return artifact_id(text)

    def get(self, artifact: str) -> str:
        return self.texts[artifact]


def test_an_in_memory_extend_that_fails_half_way_leaves_nothing() -> None:
    session = Session(model="gpt-4", store=FailingArtifacts())
    batch = [*turn(1), *turn(2, CAT, "cat src/tax.py")]
    with pytest.raises(OSError, match="No space left"):
        session.extend(batch)
    assert len(session) == 0 and session.records == [] and session.compact() == []
    session.extend(batch)  # the ids it had reserved are free again
    assert [m.id for m in session.transcript()] == [f"s{i}" for i in range(6)]
    assert [r.shortened for r in session.records] == [True, True]


def test_a_damaged_or_newer_session_is_refused_clearly(session_id: str) -> None:
    from ctxpack.store import MemoryStore

    store = MemoryStore()
    store.append(session_id, "not json", version=0, state="{}")
    with pytest.raises(StoreError, match="damaged"):
        Session.open(session_id, store=store)
    newer = MemoryStore()
    Session.open(session_id, store=newer).append({"role": "user", "content": "hi"})
    state = json.loads(newer.load(session_id).state or "")
    newer.append(
        session_id, '{"messages": []}', version=1, state=json.dumps({**state, "format": 99})
    )
    with pytest.raises(StoreError, match="newer ctxpack"):
        Session.open(session_id, store=newer)


def test_close_closes_only_a_store_it_opened(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    session = Session.open("u1", store=url)
    session.append({"role": "user", "content": "hi"})
    session.close()
    with pytest.raises(StoreError):
        session.append({"role": "user", "content": "after close"})
    store = open_store(url)
    mine = Session.open("u1", store=store)
    mine.close()
    assert store.load("u1").version == 1  # still open: it is the caller's


def test_store_options_come_from_the_url_or_keywords(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    open_store(f"sqlite:///{path}").append("u1", "e", version=0, state="s")
    reader = open_store(f"sqlite:///{path}?read_only=true&timeout=2")
    assert reader.read_only and reader.timeout == 2  # type: ignore[attr-defined]
    assert open_store("memory://", ttl=5).ttl == 5  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="timeout='soon' must be a number"):
        open_store(f"sqlite:///{path}?timeout=soon")
    with pytest.raises(ConfigError, match="unknown store option"):
        open_store("memory://", pool_size=3)


def test_a_feature_s_own_state_is_stored_and_rolled_back_with_the_session(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    # The contract other features of Session build on (a managed window's cleared positions,
    # a compaction summary): JSON kept in _extensions, changed through _change().
    first = Session.open(session_id, store=replicas(), model="gpt-4")
    first.append({"role": "user", "content": "hi"})

    def clear_one() -> None:
        window = first._extensions.setdefault("window", {"cleared": []})
        window["cleared"].append(len(first))

    first._change(clear_one)
    assert Session.open(session_id, store=replicas())._extensions == {"window": {"cleared": [1]}}

    def fails() -> None:
        first._extensions["window"]["cleared"].append(99)
        raise ValueError("the feature failed")

    with pytest.raises(ValueError, match="the feature failed"):
        first._change(fails)
    assert first._extensions == {"window": {"cleared": [1]}}
    assert Session.open(session_id, store=replicas())._extensions == {"window": {"cleared": [1]}}


@pytest.mark.parametrize("where", ["session_id", "artifact id"])
def test_a_nul_in_an_id_is_refused_by_every_store(store: SessionStore, where: str) -> None:
    # PostgreSQL keeps ids as text, which cannot hold NUL: the session opened in memory,
    # SQLite or Redis failed there with a StoreError from the driver ("DataError: PostgreSQL
    # text fields cannot contain NUL"), and could not move from one store to another.
    session_id, artifact = ("a\x00b", "art_1") if where == "session_id" else ("nul-id", "a\x00b")
    with pytest.raises(ConfigError, match=f"{where}: holds a NUL character"):
        store.append(session_id, "e0", version=0, state="s", artifacts={artifact: "text"})
    if where == "session_id":
        with pytest.raises(ConfigError, match="session_id: holds a NUL character"):
            Session.open(session_id, store=store, model="gpt-4")
        with pytest.raises(ConfigError, match="session_id: holds a NUL character"):
            store.delete_session(session_id)


def test_the_unknown_fields_of_a_tool_call_are_kept_and_not_aliased(
    store: SessionStore, session_id: str
) -> None:
    # Gemini's OpenAI-compatible API returns each call's thought signature in the call's
    # "extra_content", and refuses the next request without it; other servers add a
    # streamed call's "index". A call with a field ctxpack does not model was refused
    # ("tool_calls[0].extra_content: Extra inputs are not permitted").
    extra = {"index": 0, "extra_content": {"google": {"thought_signature": "c2ln"}}}
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    given = [
        {"role": "user", "content": "Go"},
        {"role": "assistant", "content": None, "tool_calls": [copy.deepcopy({**call, **extra})]},
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
    ]
    for session in (
        Session(model="gpt-4"),
        Session.open(session_id, store=store, model="gpt-4"),
    ):
        session.extend(given)
        given[1]["tool_calls"][0]["extra_content"]["google"]["thought_signature"] = "edited"
        result = session.render()
        assert result.to_openai()[1]["tool_calls"] == [{**call, **extra}]
        sent = result.messages[1].tool_calls
        assert sent is not None and sent[0].model_extra is not None
        sent[0].model_extra["extra_content"]["google"]["thought_signature"] = "edited"
        assert session.render().to_openai()[1]["tool_calls"] == [{**call, **extra}]
        given[1]["tool_calls"][0]["extra_content"]["google"]["thought_signature"] = "c2ln"
    replica = Session.open(session_id, store=store, model="gpt-4")
    assert replica.render().to_openai()[1]["tool_calls"] == [{**call, **extra}]
    with pytest.raises(InvalidMessageError, match=r"tool_calls\[0\]\.x: a set value"):
        replica.append({"role": "assistant", "content": None, "tool_calls": [{**call, "x": {1}}]})
