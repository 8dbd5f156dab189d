"""Artifacts: originals that were shortened, cleared or compacted, kept retrievable by id.

An artifact store is content-addressed: the same text always gets the same id, so putting an
original twice stores it once, and an id read from an old request still resolves. The default
backend is SQLite (a file, or ``":memory:"``); any object with ``put`` and ``get`` can replace it.
Reading parts of an artifact (a line range, a regex, a JSON path) is
:func:`ctxpack.retrieval.read_artifact`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .._internal import forks
from ..errors import ArgumentsError, ArtifactNotFoundError, ConfigError
from ._base import check_unicode
from ._sqlite import SQLiteFile, database_path

__all__ = ["ArtifactStore", "SQLiteArtifactStore", "artifact_id"]


def artifact_id(text: str) -> str:
    """The id an artifact store gives ``text``: ``"art_"`` and 16 hex digits of its SHA-256.

    Example:
        >>> artifact_id("hello")
        'art_2cf24dba5fb0a30e'
    """
    return "art_" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _can_be_id(artifact: object) -> bool:
    """Whether ``artifact`` could name a stored artifact: a str SQLite can take (valid Unicode).
    Anything else is in no store, and SQLite would refuse it with another error."""
    if not isinstance(artifact, str):
        return False
    try:
        check_unicode(artifact, "artifact")
    except ConfigError:
        return False
    return True


@runtime_checkable
class ArtifactStore(Protocol):
    """Where originals are kept: ``put`` returns an id, ``get`` gives the text back."""

    def put(self, text: str, **metadata: Any) -> str: ...

    def get(self, artifact: str) -> str: ...


def check_artifact_store(store: object, argument: str = "store") -> ArtifactStore:
    """``store`` if it is an :class:`ArtifactStore` (has ``put`` and ``get``)."""
    if not isinstance(store, ArtifactStore):
        raise ConfigError(
            f"{argument} must have put(text, **metadata) and get(id) (an ArtifactStore), "
            f"got {type(store).__name__}"
        )
    return store


def same_artifact_store(first: object, second: object) -> bool:
    """Whether ``first`` and ``second`` keep their artifacts in one place, so that what one puts
    the other gets: the same object, or two :class:`SQLiteArtifactStore` opened on one
    database file (``:memory:`` databases are each their own). Any other store is itself
    only: ctxpack cannot tell where it keeps what it is given."""
    if first is second:
        return True
    if isinstance(first, SQLiteArtifactStore) and isinstance(second, SQLiteArtifactStore):
        return first._db.same_file(second._db)
    return False


def put_original(store: ArtifactStore, text: str, **metadata: Any) -> str:
    """``store.put(text, **metadata)``: the id it returns, checked. A store of one's own whose
    ``put`` forgets its ``return`` would otherwise have the model told to retrieve artifact
    ``"None"``, and the original lost with no error.

    Raises:
        ConfigError: ``put`` returned something other than a non-empty ``str``.
    """
    ref = store.put(text, **metadata)
    if not isinstance(ref, str) or not ref:
        raise ConfigError(
            f"store: {type(store).__name__}.put() returned {ref!r}, not an artifact id: an "
            "ArtifactStore's put(text, **metadata) must return the id (a non-empty str) its "
            "get(id) reads the text back by"
        )
    return ref


def get_original(store: ArtifactStore, artifact: str) -> str:
    """``store.get(artifact)``: the text it returns, checked (a store of one's own may return
    ``None`` or bytes, which every reader of an original would fail on far from here).

    Raises:
        ConfigError: ``get`` returned something other than a ``str``.
    """
    text = store.get(artifact)
    if not isinstance(text, str):
        raise ConfigError(
            f"store: {type(store).__name__}.get({artifact!r}) returned a "
            f"{type(text).__name__}, not the artifact's text: an ArtifactStore's get(id) must "
            "return the str put() was given (or raise ArtifactNotFoundError)"
        )
    return text


class SQLiteArtifactStore(forks.ProcessBound):
    """Artifacts in SQLite: content-addressed, durable once ``put()`` returns, safe under threads.

    Args:
        path: A database file (created if missing) or ``":memory:"``.

    Example:
        >>> store = SQLiteArtifactStore(":memory:")
        >>> ref = store.put("pytest output ...", tool="bash")
        >>> store.get(ref)
        'pytest output ...'
        >>> store.metadata(ref)
        {'tool': 'bash'}
    """

    def __init__(
        self, path: str | Path = ":memory:", *, timeout: float = 5.0, read_only: bool = False
    ) -> None:
        self.path = database_path(path)
        self._db = SQLiteFile(
            self.path, url=f"sqlite:///{self.path}", timeout=timeout, read_only=read_only
        )
        if not self._db.read_only:
            with self._db.transaction("open") as conn:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS artifacts ("
                    " id TEXT PRIMARY KEY, text TEXT NOT NULL, metadata TEXT NOT NULL)"
                )

    def put(self, text: str, **metadata: Any) -> str:
        """Store ``text`` (once, whatever the number of calls) and return its id.

        Metadata must be JSON-serialisable; the first ``put`` of a text sets it.
        """
        if not isinstance(text, str):
            raise ArgumentsError(
                f"put(): text must be a str (an artifact), got {type(text).__name__}"
            )
        ref = artifact_id(check_unicode(text, "text"))
        meta = json.dumps(metadata, sort_keys=True, default=str)
        with self._db.transaction("put an artifact") as conn:
            conn.execute(
                "INSERT OR IGNORE INTO artifacts (id, text, metadata) VALUES (?, ?, ?)",
                (ref, text, meta),
            )
        return ref

    def get(self, artifact: str) -> str:
        """The text stored under ``artifact``.

        Raises:
            ArtifactNotFoundError: no such id in this store.
        """
        return str(self._row(artifact)[0])

    def metadata(self, artifact: str) -> dict[str, Any]:
        """The metadata given when ``artifact`` was first put."""
        meta: dict[str, Any] = json.loads(self._row(artifact)[1])
        return meta

    def __contains__(self, artifact: object) -> bool:
        if not _can_be_id(artifact):
            return False
        with self._db.reading("look an artifact up") as conn:
            row = conn.execute("SELECT 1 FROM artifacts WHERE id = ?", (artifact,))
            return row.fetchone() is not None

    def __len__(self) -> int:
        with self._db.reading("count artifacts") as conn:
            (n,) = conn.execute("SELECT COUNT(*) FROM artifacts").fetchone()
        return int(n)

    def close(self) -> None:
        """Close the connection; the file keeps everything that was put."""
        self._db.close()

    def _row(self, artifact: str) -> tuple[str, str]:
        if not _can_be_id(artifact):
            raise ArtifactNotFoundError(artifact, store=self.path)
        with self._db.reading("read an artifact") as conn:
            row = conn.execute(
                "SELECT text, metadata FROM artifacts WHERE id = ?", (artifact,)
            ).fetchone()
        if row is None:
            raise ArtifactNotFoundError(artifact, store=self.path)
        return (row[0], row[1])

    def __repr__(self) -> str:
        return f"SQLiteArtifactStore({self.path!r})"
