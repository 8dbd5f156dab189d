"""Retention: with a ttl, a session and its originals are gone once it has not been appended
to for that long, on every backend; Redis keys are namespaced and carry the expiry."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from ctxpack.errors import ArtifactNotFoundError
from ctxpack.store import MemoryStore, SessionStore, open_store

from .backends import backend_url, server_url


def store_with_ttl(backend: str, tmp_path: Path, ttl: float) -> SessionStore:
    if backend == "memory":
        return MemoryStore(ttl=ttl)
    return open_store(backend_url(backend, tmp_path), ttl=ttl)


def test_a_session_expires_after_its_ttl(backend: str, tmp_path: Path, session_id: str) -> None:
    store = store_with_ttl(backend, tmp_path, ttl=0.5)
    kept = store_with_ttl(backend, tmp_path, ttl=3600)
    try:
        store.append(session_id, "e0", version=0, state="s", artifacts={"art_1": "original"})
        kept.append(session_id + "-kept", "e0", version=0, state="s")
        assert store.load(session_id).version == 1
        time.sleep(0.8)
        assert store.load(session_id).version == 0
        with pytest.raises(ArtifactNotFoundError):
            store.get_artifact(session_id, "art_1")
        assert kept.load(session_id + "-kept").version == 1
        # The id can start again from nothing.
        store.append(session_id, "new life", version=0, state="s")
        assert store.load(session_id).entries == ("new life",)
    finally:
        kept.delete_session(session_id + "-kept")
        store.delete_session(session_id)
        store.close()
        kept.close()


def test_redis_keys_are_namespaced_and_expire() -> None:
    import redis

    url = server_url("redis")
    prefix = f"test{uuid.uuid4().hex[:8]}"
    store = open_store(url, ttl=60, prefix=prefix)
    store.append("u{1}", "e0", version=0, state="s", artifacts={"art_1": "original"})
    client = redis.Redis.from_url(url)
    try:
        keys = sorted(k.decode() for k in client.scan_iter(f"{prefix}:*"))
        assert keys == [
            f"{prefix}:{{u{{{{1}}}}}}:artifacts",
            f"{prefix}:{{u{{{{1}}}}}}:entries",
            f"{prefix}:{{u{{{{1}}}}}}:meta",
        ]
        assert all(0 < client.pttl(k) <= 60_000 for k in keys)
    finally:
        store.delete_session("u{1}")
        assert list(client.scan_iter(f"{prefix}:*")) == []
        client.close()
        store.close()


def test_sql_stores_purge_expired_sessions(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 's.db'}", ttl=0.2)
    store.append("old", "e0", version=0, state="s")
    time.sleep(0.4)
    assert store.purge_expired() == 1  # type: ignore[attr-defined]
    assert store.purge_expired() == 0  # type: ignore[attr-defined]
