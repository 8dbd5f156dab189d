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
from ctxpack.store import SessionStore

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
