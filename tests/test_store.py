"""The artifact store: content-addressed, durable, and clear about missing ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxpack import ConfigError
from ctxpack.errors import ArtifactNotFoundError, CtxpackError
from ctxpack.retrieval import MAX_PAGE_CHARS, read_artifact
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


def test_text_that_is_not_valid_unicode_is_refused_naming_it() -> None:
    # A lone surrogate escaped as UnicodeEncodeError from hashing the text for its id.
    with pytest.raises(ConfigError, match="text: holds a lone surrogate"):
        SQLiteArtifactStore().put("ok \ud800")


@pytest.mark.parametrize("bad", ["\ud800", ["art_1"]])
def test_an_id_no_put_could_give_is_not_found(bad: object) -> None:
    # A lone surrogate escaped as UnicodeEncodeError, a list as SQLite's binding error.
    store = SQLiteArtifactStore()
    with pytest.raises(ArtifactNotFoundError):
        store.get(bad)  # type: ignore[arg-type]
    assert bad not in store


# ----------------------------------------------------------------------------- durability


_WRITER = """
import sys
from ctxpack.store import SQLiteArtifactStore

store = SQLiteArtifactStore(sys.argv[1])
i = 0
while True:
    ref = store.put(f"output {i}\\n" + "x" * (i % 500), step=i)
    print(ref, flush=True)  # announced only once put() has returned
    i += 1
"""


def test_put_survives_sigkill_of_the_writer(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    path = tmp_path / "killed.db"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    announced = [proc.stdout.readline().strip() for _ in range(200)]
    # Killed mid-run: it is still putting when the signal lands.
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    reopened = SQLiteArtifactStore(path)
    assert all(ref in reopened for ref in announced)
    assert reopened.get(announced[199]).startswith("output 199\n")
    assert reopened.metadata(announced[7]) == {"step": 7}
    assert len(reopened) >= 200
    # The reopened store is in WAL mode and writable.
    mode = reopened._db.conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    assert reopened.get(reopened.put("after")) == "after"


# ------------------------------------------------------------------------------ retrieval


LOG = "\n".join(
    ["collecting ...", *(f"test_{i} PASSED" for i in range(1, 60)), "E   KeyError: 'token'"]
    + [f"tail {i}" for i in range(40)]
)


def test_line_range_is_one_based_and_inclusive() -> None:
    store = SQLiteArtifactStore()
    ref = store.put(LOG)
    got = read_artifact(store, ref, lines="2-4")
    assert got.text.split("\n") == ["test_1 PASSED", "test_2 PASSED", "test_3 PASSED"]
    assert got.selector == "lines 2-4" and got.total_lines == 101
    assert read_artifact(store, ref, lines=(101, 101)).text == "tail 39"
    assert read_artifact(store, ref, lines="100-").text == "tail 38\ntail 39"
    assert read_artifact(store, ref, lines="96-500").text.count("\n") == 5


@pytest.mark.parametrize("bad", ["ten", "5-2", "0-3"])
def test_bad_line_range_says_what_is_valid(bad: str) -> None:
    store = SQLiteArtifactStore()
    with pytest.raises(ConfigError, match="lines="):
        read_artifact(store, store.put(LOG), lines=bad)


def test_regex_gives_matches_with_context_like_grep() -> None:
    store = SQLiteArtifactStore()
    ref = store.put(LOG)
    got = read_artifact(store, ref, regex=r"KeyError", context=1)
    assert got.matches == 1
    assert got.text.split("\n") == ["60-test_59 PASSED", "61:E   KeyError: 'token'", "62-tail 0"]
    two = read_artifact(store, ref, regex=r"^test_(5|7) ", context=0)
    assert two.text.split("\n") == ["6:test_5 PASSED", "--", "8:test_7 PASSED"]
    with pytest.raises(ConfigError, match="not a valid regular expression"):
        read_artifact(store, ref, regex="(")


def test_json_path_selects_values() -> None:
    store = SQLiteArtifactStore()
    doc = {"items": [{"id": 1, "name": "a b"}, {"id": 2, "name": "c"}], "next": None}
    import json

    ref = store.put(json.dumps(doc))
    assert json.loads(read_artifact(store, ref, json_path="$.items[1].name").text) == "c"
    assert json.loads(read_artifact(store, ref, json_path="$.items[*].id").text) == [1, 2]
    assert json.loads(read_artifact(store, ref, json_path="$['items'][0]").text) == doc["items"][0]
    assert read_artifact(store, ref, json_path="$.missing").matches == 0
    with pytest.raises(ConfigError, match="not"):
        read_artifact(store, store.put("not json"), json_path="$.a")
    with pytest.raises(ConfigError, match="cannot read"):
        read_artifact(store, ref, json_path="$..x")


def test_pages_are_capped_and_cover_the_selection() -> None:
    store = SQLiteArtifactStore()
    ref = store.put(LOG)
    first = read_artifact(store, ref, max_chars=200)
    assert first.pages > 1 and len(first.text) <= 200
    pages = [
        read_artifact(store, ref, max_chars=200, page=p).text for p in range(1, first.pages + 1)
    ]
    assert "\n".join(pages) == LOG
    assert "page=2" in first.render()
    with pytest.raises(ConfigError, match="past the end"):
        read_artifact(store, ref, max_chars=200, page=first.pages + 1)
    huge = store.put("y" * (MAX_PAGE_CHARS * 2 + 10))
    capped = read_artifact(store, huge, max_chars=10**9)
    assert len(capped.text) == MAX_PAGE_CHARS and capped.pages == 3


def test_one_selector_at_a_time() -> None:
    store = SQLiteArtifactStore()
    with pytest.raises(ConfigError, match="at most one"):
        read_artifact(store, store.put(LOG), lines="1-2", regex="x")


def test_read_artifact_works_on_any_backend() -> None:
    class DictStore:
        def __init__(self) -> None:
            self.data: dict[str, str] = {}

        def put(self, text: str, **metadata: object) -> str:
            self.data[artifact_id(text)] = text
            return artifact_id(text)

        def get(self, artifact: str) -> str:
            try:
                return self.data[artifact]
            except KeyError:
                raise ArtifactNotFoundError(artifact, store="dict") from None

    store = DictStore()
    assert isinstance(store, ArtifactStore)
    ref = store.put(LOG)
    assert read_artifact(store, ref, lines="1").text == "collecting ..."
    with pytest.raises(ArtifactNotFoundError):
        read_artifact(store, "art_missing")
