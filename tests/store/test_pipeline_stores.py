"""A stored session's clearer or compactor (``Session.open(..., pipeline=...)``) puts the
originals it replaces in the session store: every replica reads the artifacts its placeholders
name, and sends the same request."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ctxpack import AsyncSession, Pipeline, Session, to_openai
from ctxpack.store import MemoryStore, SessionStore

from ..test_session_pipeline_store import (
    agent_history,
    assert_retrievable,
    cleared_artifacts,
    clearer,
    compactor,
    summarised_artifacts,
    words,
)

# Each stage, the history that makes it edit, and the artifacts its request names.
CASES = {
    "clearer": (clearer, agent_history(4), cleared_artifacts),
    "compactor": (compactor, agent_history(16, lines=500), summarised_artifacts),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_replica_reads_what_a_stage_without_a_store_replaced(
    case: str, replicas: Callable[[], SessionStore], session_id: str
) -> None:
    make, history, named_in = CASES[case]
    stage = make()

    def opened() -> Session:
        # The same options on every replica, as Session.open asks.
        return Session.open(
            session_id, store=replicas(), counter=words, filters=False, pipeline=Pipeline([stage])
        )

    first = opened()
    first.extend(history)
    result = first.render()
    named = named_in(result.messages)
    assert named, f"the history is long enough for the {case} to edit it"
    originals: dict[str, Any] = {m["id"]: m["content"] for m in history}
    # A replica opened afterwards reads them (stored by the render), and renders the same.
    again = opened()
    for message_id, artifact in named.items():
        assert_retrievable(first, artifact, originals[message_id])
        assert_retrievable(again, artifact, originals[message_id])
    sent = json.dumps(to_openai(again.render().messages), sort_keys=True)
    assert sent == json.dumps(to_openai(result.messages), sort_keys=True)
    assert stage.store is None


class CountingStore(MemoryStore):
    """A memory store that lists the originals put in it."""

    def __init__(self) -> None:
        super().__init__()
        self.puts: list[str] = []

    def put_artifact(
        self, session_id: str, artifact: str, text: str, *, life: str | None = None
    ) -> None:
        self.puts.append(artifact)
        super().put_artifact(session_id, artifact, text, life=life)


def test_a_render_writes_only_the_originals_the_session_was_not_known_to_hold() -> None:
    store = CountingStore()
    options: dict[str, Any] = {"counter": words, "filters": False}
    session = Session.open("s1", store=store, pipeline=Pipeline([clearer()]), **options)
    session.extend(agent_history(4))
    named = cleared_artifacts(session.render().messages)
    assert sorted(store.puts) == sorted(named.values())
    # Put again at every render, by the stage; written once: a round trip each would cost a
    # server session more than the render.
    session.render()
    assert len(store.puts) == len(named)
    # Erased, then started again: the new life's originals are its own, and written.
    store.delete_session("s1")
    session.extend(agent_history(4))
    again = cleared_artifacts(session.render().messages)
    assert sorted(store.puts[len(named) :]) == sorted(again.values())
    reopened = Session.open("s1", store=store, pipeline=Pipeline([clearer()]), **options)
    history = {m["id"]: m["content"] for m in agent_history(4)}
    for message_id, artifact in again.items():
        assert_retrievable(reopened, artifact, history[message_id])


def test_an_async_sessions_replica_reads_what_its_clearer_replaced(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    options: dict[str, Any] = {"counter": words, "filters": False}
    history = agent_history(4)

    async def main() -> None:
        first = await AsyncSession.open("a1", store=url, pipeline=Pipeline([clearer()]), **options)
        await first.extend(history)
        named = cleared_artifacts((await first.render()).messages)
        again = await AsyncSession.open("a1", store=url, pipeline=Pipeline([clearer()]), **options)
        originals = {m["id"]: m["content"] for m in history}
        assert named
        for message_id, artifact in named.items():
            head = "\n".join(originals[message_id].split("\n")[:2])
            assert (await again.retrieve(artifact, lines=(1, 2))).text == head
        await first.close()
        await again.close()

    asyncio.run(main())
