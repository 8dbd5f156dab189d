"""The artifact store: content-addressed, durable, and clear about missing ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxpack.errors import ArtifactNotFoundError, CtxpackError
from ctxpack.store import ArtifactStore, SQLiteArtifactStore, artifact_id


def test_put_returns_content_address_and_get_gives_text_back() -> None:
    store = SQLiteArtifactStore(":memory:")
    ref = store.put("line 1\nline 2", tool="bash")
    assert ref == artifact_id("line 1\nline 2")
    assert store.get(ref) == "line 1\nline 2"
    assert store.metadata(ref) == {"tool": "bash"}
    assert isinstance(store, ArtifactStore)


def test_same_text_is_stored_once() -> None:
    store = SQLiteArtifactStore(":memory:")
    assert store.put("x") == store.put("x", other="meta")
    assert len(store) == 1
    assert store.metadata(artifact_id("x")) == {}


def test_missing_id_names_the_store(tmp_path: Path) -> None:
    store = SQLiteArtifactStore(tmp_path / "a.db")
    with pytest.raises(ArtifactNotFoundError, match="art_0000") as info:
        store.get("art_0000")
    assert isinstance(info.value, KeyError) and isinstance(info.value, CtxpackError)
    assert "art_0000" not in store


def test_file_store_keeps_artifacts_after_reopening(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    ref = SQLiteArtifactStore(path).put("kept")
    assert SQLiteArtifactStore(path).get(ref) == "kept"


def test_put_rejects_non_text() -> None:
    with pytest.raises(TypeError, match="bytes"):
        SQLiteArtifactStore().put(b"raw")  # type: ignore[arg-type]
