"""What a stored managed session writes: an append writes what it changed, not the session's
history again; a session stored in the earlier layout (format 1) still loads, renders the
same and goes on."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from ctxpack import to_openai
from ctxpack.errors import ArtifactNotFoundError, ConfigError, StoreError
from ctxpack.managed import WindowState
from ctxpack.store import MemoryStore, SessionStore

from .test_managed import agent_turn, managed, wire_of

FORMAT_1 = Path(__file__).parent.parent / "fixtures" / "stored_session_format1.json"


class RecordingStore:
    """A store (a memory one by default) that keeps the arguments of every append."""

    def __init__(self, store: SessionStore | None = None) -> None:
        self.store = store or MemoryStore()
        self.url = self.store.url
        self.appends: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def append(
        self,
        session_id: str,
        entry: str,
        *,
        version: int,
        state: str,
        artifacts: Mapping[str, str] | None = None,
    ) -> None:
        self.store.append(session_id, entry, version=version, state=state, artifacts=artifacts)
        self.appends.append({"entry": entry, "state": state, "artifacts": dict(artifacts or {})})


def test_the_state_an_append_writes_does_not_grow_with_the_session() -> None:
    store = RecordingStore()
    session = managed("long", store)
    for n in range(60):
        session.extend(agent_turn(n))
        session.render()
    state = session.window_state
    assert sum(e.action == "compacted" for e in state.events) >= 5
    assert len(state.decisions) > 100
    sizes = [len(a["state"]) for a in store.appends]
    # Once the first compaction has written a summary, the state stays within the same bound
    # (the summary is replaced, never longer than its budget), however long the session.
    first = next(k for k, a in enumerate(store.appends) if '"summary": null' not in a["state"])
    early = max(sizes[: first + 10])
    assert max(sizes[first + 10 :]) <= early + 200, (early, max(sizes))
    # The window's edits are written once each, in the entry of the append that made them.
    written = [json.loads(a["entry"]).get("window", {}) for a in store.appends]
    kept = 0
    for grown in (w["decisions"] for w in written if "decisions" in w):
        assert grown["keep"] == kept  # none written again
        kept += len(grown["add"])
    assert kept == len(state.decisions)


def test_replicas_taking_turns_through_compactions_read_the_same_window(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    a = managed(session_id, replicas())
    b = managed(session_id, replicas())
    for n in range(30):
        replica, other = (a, b) if n % 3 else (b, a)
        replica.extend(agent_turn(n))
        if n % 2:
            other.extend([{"role": "user", "content": f"and note {n}"}])
        sent = wire_of(replica.render())
        assert wire_of(other.render()) == sent, f"turn {n}"
    assert sum(e.action == "compacted" for e in a.window_state.events) >= 3
    # A reader from the start reads the state the replica that rendered last built, edit by
    # edit (turn 29: b).
    fresh = managed(session_id, replicas())
    assert fresh.window_state == b.window_state
    assert wire_of(fresh.render()) == wire_of(a.render())


def _load_format_1(store: SessionStore) -> dict[str, Any]:
    fixture = json.loads(FORMAT_1.read_text("utf-8"))
    session_id = fixture["session_id"]
    for version, entry in enumerate(fixture["entries"]):
        store.append(session_id, entry, version=version, state=fixture["state"])
    for artifact, text in fixture["artifacts"].items():  # a store keeps them for a session only
        store.put_artifact(session_id, artifact, text)
    return dict(fixture)


def _sha(result: Any) -> str:
    wire = json.dumps(to_openai(result.messages), sort_keys=True)
    return hashlib.sha256(wire.encode()).hexdigest()


def test_a_session_stored_in_format_1_loads_renders_and_goes_on_as_it_did() -> None:
    # Written by ctxpack before format 2: the window's whole state in the stored state.
    store = MemoryStore()
    fixture = _load_format_1(store)
    session = managed(fixture["session_id"], store)
    assert session.window_state == WindowState.model_validate(fixture["window_state"])
    assert [m.model_dump(mode="json") for m in session.transcript()] == fixture["transcript"]
    result = session.render()
    assert _sha(result) == fixture["next_request_sha256"]
    # Every summarised message's original, and the compaction's index of them, are read back.
    state = session.window_state
    assert state.compacted and state.index_artifact
    transcript = {m.id: m for m in session.transcript()}
    for mid in state.compacted:
        assert result.original(mid).text == transcript[mid].text
    index = session.retrieve(state.index_artifact, max_chars=10**6).text
    assert all(mid in index for mid in state.compacted)
    for n, expected in zip(range(18, 23), fixture["continued_requests_sha256"], strict=True):
        session.extend(agent_turn(n))
        assert _sha(session.render()) == expected, f"turn {n}"
    # Gone on in format 2 on top of format 1: a new reader reads the same window back.
    fresh = managed(fixture["session_id"], store)
    assert fresh.window_state == session.window_state
    assert _sha(fresh.render()) == _sha(session.render())


def test_a_replica_that_read_format_1_goes_on_with_one_that_writes_format_2() -> None:
    store = MemoryStore()
    fixture = _load_format_1(store)
    a = managed(fixture["session_id"], store)
    b = managed(fixture["session_id"], store)
    for n in range(18, 26):
        replica, other = (a, b) if n % 2 else (b, a)
        replica.extend(agent_turn(n))
        assert wire_of(other.render()) == wire_of(replica.render()), f"turn {n}"
    a.transcript(), b.transcript()  # both read the last render
    assert a.window_state == b.window_state


def test_each_original_is_written_once_and_every_index_reads_back_whole() -> None:
    store = RecordingStore()
    session = managed("long", store)
    indexes = []
    for n in range(40):
        session.extend(agent_turn(n))
        session.render()
        index = session.window_state.index_artifact
        if index is not None and index not in indexes:
            indexes.append(index)
    assert len(indexes) >= 3
    # A compaction writes the originals of the messages it summarises, not again those of
    # the messages earlier ones summarised.
    compactions = [set(a["artifacts"]) for a in store.appends if set(a["artifacts"]) & {*indexes}]
    assert len(compactions) == len(indexes)
    for k, written in enumerate(compactions):
        assert not written & set().union(*compactions[:k]), f"compaction {k}"
    # A compaction's index is stored as the lines it adds to the one before; each reads back
    # whole: one line per message summarised by then, the newest listing every one.
    stored = {ref: text for a in store.appends for ref, text in a["artifacts"].items()}
    assert all(len(stored[ref]) < 2_000 for ref in indexes[1:])
    compacted = session.window_state.compacted
    for k, ref in enumerate(indexes):
        lines = session.retrieve(ref, max_chars=10**6).text.splitlines()
        assert lines[0] == "message\ttool\tcommand\tartifact"
        ids = [line.split("\t")[0] for line in lines[1:]]
        assert ids == compacted[: len(ids)] or set(ids) <= set(compacted)
        if k == len(indexes) - 1:
            assert sorted(ids) == sorted(compacted)
        for line in lines[1:]:
            assert session.retrieve(line.split("\t")[3]).text
    # A replica reading the session from the store reads the same index.
    again = managed("long", store)
    last = indexes[-1]
    assert (
        again.retrieve(last, max_chars=10**6).text == session.retrieve(last, max_chars=10**6).text
    )
    found = again.retrieve(last, regex=compacted[-1]).text
    assert compacted[-1] in found


def test_a_damaged_index_is_refused_with_a_store_error() -> None:
    store = RecordingStore()
    session = managed("damaged", store)
    for n in range(24):
        session.extend(agent_turn(n))
        session.render()
    index = session.window_state.index_artifact
    assert index is not None
    # The index read back as an edit of itself: the chain never reaches a whole text.
    cycle = json.dumps({"base": index, "added": []})
    store.get_artifact = lambda session_id, artifact: (  # type: ignore[method-assign]
        f"ctxpack-edit:{cycle}"
        if artifact == index
        else store.store.get_artifact(session_id, artifact)
    )
    again = managed("damaged", store)
    with pytest.raises(StoreError, match="damaged"):
        again.retrieve(index)


class ErasedAsIndexRead(RecordingStore):
    """A store whose session is erased (by another replica, say) just after the edit stored
    as ``index`` is read, before the originals it extends are."""

    def __init__(self, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id
        self.index: str | None = None
        self.erased = False

    def get_artifact(self, session_id: str, artifact: str) -> str:
        text = self.store.get_artifact(session_id, artifact)
        if artifact == self.index and not self.erased:
            self.erased = True
            self.store.delete_session(self.session_id)
        return text


def _compacted_then_erased_as_read() -> tuple[ErasedAsIndexRead, str]:
    """A managed session compacted twice, its index stored as the lines it adds to the one
    before, in a store that erases the session once that index is read."""
    store = ErasedAsIndexRead("raced")
    writer = managed("raced", store)
    for n in range(24):
        writer.extend(agent_turn(n))
        writer.render()
    store.index = index = writer.window_state.index_artifact
    assert index is not None
    assert store.store.get_artifact("raced", index).startswith("ctxpack-edit:")
    return store, index


def test_an_erasure_landing_while_a_compaction_index_is_read_is_an_erasure() -> None:
    # The index is stored as the lines it adds to the one before: erased between reading it
    # and reading its base, the session's originals are gone, which is no damage.
    store, index = _compacted_then_erased_as_read()
    reader = managed("raced", store)
    with pytest.raises(ArtifactNotFoundError):
        reader.retrieve(index)
    assert store.erased


def test_a_render_compacting_as_the_session_is_erased_reads_the_erasure() -> None:
    store, _ = _compacted_then_erased_as_read()
    reader = managed("raced", store)
    for n in range(24, 60):  # until a render's compaction reads the index
        reader.extend(agent_turn(n))
        try:
            reader.render()
        except ConfigError as error:  # read the erasure: nothing left to send
            assert "empty" in str(error)
        if store.erased:
            break
    assert store.erased
    assert len(reader) == 0 and len(managed("raced", store)) == 0


def test_a_managed_session_erased_and_started_again_is_read_back_as_written(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    store = replicas()
    a = managed(session_id, store)
    for n in range(14):
        a.extend(agent_turn(n))
        a.render()
    assert a.window_state.compacted
    store.delete_session(session_id)
    b = managed(session_id, replicas())
    for n in range(6):
        b.extend(agent_turn(n))
        b.render()
    # The replica that wrote the erased session starts again from the new one.
    assert wire_of(a.render()) == wire_of(b.render())
    fresh = managed(session_id, replicas())
    assert fresh.window_state == b.window_state
    assert not set(fresh.window_state.compacted) - {m.id for m in fresh.transcript()}
