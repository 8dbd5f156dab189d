"""A store of one's own that breaks the ``ArtifactStore`` contract fails where it is used,
naming the store and the method: a ``put`` that forgot its ``return`` had the model told to
retrieve artifact ``"None"`` (the original lost with no error), a ``get`` returning ``None``
had the retrieve tool answer that ``find_secrets()`` takes a str."""

from __future__ import annotations

from typing import Any

import pytest

import ctxpack
from ctxpack.retrieval import handle_retrieve_call

LOG = "\n".join(f"2024-01-01 12:00:{i % 60:02d} INFO step {i} of the build ok" for i in range(3000))


class ForgetsItsReturn:
    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    def put(self, text: str, **metadata: Any) -> None:  # the id is never returned
        self.texts[ctxpack.store.artifact_id(text)] = text

    def get(self, artifact: str) -> str:
        return self.texts[artifact]


class GivesBytes:
    def put(self, text: str, **metadata: Any) -> str:
        return "art_1"

    def get(self, artifact: str) -> Any:
        return b"the original, as bytes"


def _tool_turn(session: ctxpack.Session) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    session.extend(
        [
            {"role": "user", "content": "Build it."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": LOG},
        ]
    )


def test_a_put_that_returns_no_id_is_refused_naming_the_store() -> None:
    session = ctxpack.Session(store=ForgetsItsReturn())  # type: ignore[arg-type]
    with pytest.raises(ctxpack.ConfigError, match=r"ForgetsItsReturn\.put\(\) returned None"):
        _tool_turn(session)


def test_a_get_that_returns_no_str_is_answered_naming_the_store() -> None:
    answer = handle_retrieve_call(GivesBytes(), {"artifact": "art_1"})  # type: ignore[arg-type]
    assert "GivesBytes.get('art_1') returned a bytes" in answer
    assert "find_secrets" not in answer


def test_a_store_that_keeps_the_contract_is_used_as_it_is() -> None:
    store = ctxpack.store.SQLiteArtifactStore()
    session = ctxpack.Session(store=store)
    _tool_turn(session)
    [tool] = [m for m in session.render().messages if m.role == "tool"]
    assert "art_" in tool.text and len(tool.text) < len(LOG)
