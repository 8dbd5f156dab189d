"""A clearer or a compactor in a Session's pipeline puts the originals it replaces in the
session's store: the artifact each placeholder names is one the retrieve tool, and
``session.retrieve()``, can read, whether or not the stage was given a store."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ctxpack import ConfigError, Pipeline, Session
from ctxpack.editing import Compactor, ToolResultClearer
from ctxpack.messages import Message
from ctxpack.retrieval import RETRIEVE_TOOL_NAME
from ctxpack.store import SQLiteArtifactStore

ARTIFACT = re.compile(r"art_[0-9a-f]{16}")


def words(text: str) -> int:  # a toy counter: sizes read easily, and nothing to download
    return len(text.split())


def output(i: int, lines: int) -> str:
    return "\n".join(f"line {k} of part_{i}.py: value = {k * i}" for k in range(lines))


def agent_history(outputs: int, lines: int = 40) -> list[dict[str, Any]]:
    """A task, then ``outputs`` tool calls each with its output, then a question."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent.", "id": "sys"},
        {"role": "user", "content": "Fix the failing test.", "id": "task"},
    ]
    for i in range(outputs):
        arguments = json.dumps({"command": f"cat part_{i}.py"})
        function = {"name": "bash", "arguments": arguments}
        history.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{i}", "type": "function", "function": function}],
                "id": f"a{i}",
            }
        )
        history.append(
            {"role": "tool", "tool_call_id": f"c{i}", "content": output(i, lines), "id": f"t{i}"}
        )
    history.append({"role": "user", "content": "Go on.", "id": "next"})
    return history


def retrieve_call(artifact: str, lines: str) -> dict[str, Any]:
    arguments = json.dumps({"artifact": artifact, "lines": lines})
    return {
        "id": "r1",
        "type": "function",
        "function": {"name": RETRIEVE_TOOL_NAME, "arguments": arguments},
    }


def assert_retrievable(session: Session, artifact: str, original: str) -> None:
    """``session`` reads ``artifact`` back as ``original``: from its store, with
    ``retrieve()``, and as the model does, through the retrieve tool."""
    assert session.store.get(artifact) == original
    head = "\n".join(original.split("\n")[:2])
    assert session.retrieve(artifact, lines=(1, 2)).text == head
    assert session.handle(retrieve_call(artifact, "1-2")).endswith(head)


def cleared_artifacts(messages: list[Message]) -> dict[str, str]:
    """The artifact each cleared tool result's placeholder names, by message id."""
    return {
        m.id: ARTIFACT.findall(m.text)[0]
        for m in messages
        if m.role == "tool" and m.text.startswith("[ctxpack: old tool result cleared")
    }


def summarised_artifacts(messages: list[Message]) -> dict[str, str]:
    """The artifact a compaction's summary names for each tool output it replaces."""
    summary = next(m for m in messages if m.id.startswith("summary-"))
    return dict(re.findall(r"(t\d+)=(art_[0-9a-f]{16})", summary.text))


def clearer() -> ToolResultClearer:
    return ToolResultClearer(trigger=400, keep=1, cache_aware=False)


def compactor(calls: list[int] | None = None) -> Compactor:
    def summarize(messages: list[Message], instructions: str | None) -> str:
        if calls is not None:
            calls.append(len(messages))
        return "The agent read the parts."

    return Compactor(summarizer=summarize, trigger=50_000, keep_recent=2)


def test_a_clearer_without_a_store_clears_into_the_sessions_store() -> None:
    stage = clearer()
    pipeline = Pipeline([stage])
    session = Session(counter=words, filters=False, pipeline=pipeline)
    history = agent_history(4)
    session.extend(history)
    result = session.render()
    named = cleared_artifacts(result.messages)
    assert sorted(named) == ["t0", "t1", "t2"]
    originals = {m["id"]: m["content"] for m in history}
    for message_id, artifact in named.items():
        assert_retrievable(session, artifact, originals[message_id])
    # The caller's objects are left as they were: the session runs its own copy.
    assert stage.store is None
    assert session.pipeline is pipeline and pipeline.steps == [("clear", stage)]
    assert session.render().messages == result.messages  # the same request, render after render


def test_a_compactor_without_a_store_compacts_into_the_sessions_store() -> None:
    calls: list[int] = []
    stage = compactor(calls)
    session = Session(counter=words, filters=False, pipeline=Pipeline([stage]))
    history = agent_history(16, lines=500)
    session.extend(history)
    result = session.render()
    named = summarised_artifacts(result.messages)
    assert named, "the history is long enough to be compacted"
    originals = {m["id"]: m["content"] for m in history}
    for message_id, artifact in named.items():
        assert_retrievable(session, artifact, originals[message_id])
    assert stage.store is None
    # The summaries are still memoised on the caller's stage: one call, however many renders.
    assert session.render().messages == result.messages
    assert len(calls) == 1
    stage.clear_cache()
    session.render()
    assert len(calls) == 2


def test_a_stage_in_a_nested_pipeline_is_given_the_store_too() -> None:
    stage = clearer()
    session = Session(
        counter=words, filters=False, pipeline=Pipeline([("edits", Pipeline([stage]))])
    )
    session.extend(agent_history(4))
    named = cleared_artifacts(session.render().messages)
    assert named
    for artifact in named.values():
        session.retrieve(artifact)  # raises ArtifactNotFoundError if the store lacks it
    assert stage.store is None


def test_a_stage_given_the_sessions_own_store_keeps_it() -> None:
    store = SQLiteArtifactStore(":memory:")
    session = Session(
        counter=words,
        filters=False,
        store=store,
        pipeline=Pipeline([clearer().model_copy(update={"store": store})]),
    )
    session.extend(agent_history(4))
    named = cleared_artifacts(session.render().messages)
    assert named and all(store.get(a) for a in named.values())


@pytest.mark.parametrize("how", ["the same path", "a relative path", "a symlink"])
def test_a_stage_given_a_store_opened_on_the_sessions_database_file_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Two SQLiteArtifactStores opened on one file keep their artifacts in one place: what the
    stage puts, the session reads. They are one store, not two."""
    path = tmp_path / "artifacts.db"
    store = SQLiteArtifactStore(path)
    if how == "a relative path":
        monkeypatch.chdir(tmp_path)
        own = SQLiteArtifactStore("artifacts.db")
    elif how == "a symlink":
        (tmp_path / "link.db").symlink_to(path)
        own = SQLiteArtifactStore(tmp_path / "link.db")
    else:
        own = SQLiteArtifactStore(path)
    stage = clearer().model_copy(update={"store": own})
    session = Session(counter=words, filters=False, store=store, pipeline=Pipeline([stage]))
    session.extend(agent_history(4))
    named = cleared_artifacts(session.render().messages)
    assert sorted(named) == ["t0", "t1", "t2"]
    originals = {m["id"]: m["content"] for m in agent_history(4)}
    for message_id, artifact in named.items():
        assert_retrievable(session, artifact, originals[message_id])
        assert own.get(artifact) == originals[message_id]


def test_stores_on_two_files_or_in_memory_are_two_stores(tmp_path: Path) -> None:
    cases = [
        (SQLiteArtifactStore(tmp_path / "a.db"), SQLiteArtifactStore(tmp_path / "b.db")),
        (SQLiteArtifactStore(":memory:"), SQLiteArtifactStore(":memory:")),
        (SQLiteArtifactStore(tmp_path / "a.db"), SQLiteArtifactStore(":memory:")),
    ]
    for session_store, stage_store in cases:
        stage = clearer().model_copy(update={"store": stage_store})
        with pytest.raises(ConfigError, match=r"pipeline\[0\] .*a store of its own"):
            Session(counter=words, store=session_store, pipeline=Pipeline([stage]))
    # A stored session's originals are its own, whatever the stage's store opened.
    stage = clearer().model_copy(update={"store": SQLiteArtifactStore(tmp_path / "a.db")})
    url = f"sqlite:///{tmp_path / 'a.db'}"
    with pytest.raises(ConfigError, match=r"pipeline\[0\]"):
        Session.open("s1", store=url, counter=words, pipeline=Pipeline([stage]))


@pytest.mark.parametrize("stage", [clearer, compactor], ids=["clearer", "compactor"])
def test_a_stage_with_another_store_than_the_sessions_is_refused(stage: Any) -> None:
    other = stage().model_copy(update={"store": SQLiteArtifactStore(":memory:")})
    name = type(other).__name__
    with pytest.raises(ConfigError, match=rf"pipeline\[1\] \('{other.name}', {name}\)"):
        Session(counter=words, pipeline=Pipeline([("first", clearer()), other]))
    with pytest.raises(ConfigError, match=r"pipeline\[0\]\[0\] .*leave its store unset"):
        Session(counter=words, pipeline=Pipeline([Pipeline([other])]))
    with pytest.raises(ConfigError, match=r"pipeline \(" + name):
        Session(counter=words, pipeline=other)
    with pytest.raises(ConfigError, match=r"pipeline\[0\]"):
        Session.open("s1", store="memory://", counter=words, pipeline=Pipeline([other]))
