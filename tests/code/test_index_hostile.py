"""A CodeIndex against a user who keeps what it hands out, passes odd callables, and a root
that goes away: its state is its own, and what cannot be done is said, not done quietly."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ctxpack import ConfigError
from ctxpack.code import CodeIndex, iterative_retrieve


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "auth.py").write_text("def refresh_token(session):\n    return session.token\n")
    (root / "users.py").write_text("import auth\n\ndef profile(user):\n    return user\n")
    return root


def test_the_terms_handed_out_are_not_the_indexs_own(tree: Path) -> None:
    # file_terms returned the set the loop reads: a caller's .clear() emptied the file's
    # terms for every later cycle of every loop on the index.
    index = CodeIndex(tree, db=":memory:")
    before = set(index.file_terms("auth.py"))
    terms = index.file_terms("auth.py")
    with pytest.raises(AttributeError):
        terms.clear()  # type: ignore[attr-defined]
    assert index.file_terms("auth.py") == before and "refresh" in before


async def _async_embedder(texts: list[str]) -> list[list[float]]:
    return [[1.0] for _ in texts]


@pytest.mark.parametrize(
    "embedder", [_async_embedder, lambda: [[1.0]], lambda texts, more: [[1.0]]], ids=str
)
def test_an_embedder_that_cannot_be_called_so_is_refused_when_given(
    tree: Path, embedder: object
) -> None:
    # As a counter is: refused by the constructor, not at the first query (an async one then
    # left a coroutine never awaited, and the error came from inside the ranking).
    with pytest.raises(ConfigError, match="embedder must be"):
        CodeIndex(tree, db=":memory:", embedder=embedder)  # type: ignore[arg-type]


def test_a_root_gone_is_an_error_and_leaves_the_stored_index_alone(tree: Path) -> None:
    # A root that is gone (moved, an unmounted drive) read as a tree of no files: the refresh
    # deleted every stored file's row, and the loop answered with nothing found.
    db = tree.parent / "index.sqlite"
    CodeIndex(tree, db=db).refresh()
    index = CodeIndex(tree, db=db)
    index.refresh()
    moved = tree.parent / "moved"
    shutil.move(tree, moved)
    for call in (index.refresh, lambda: iterative_retrieve("refresh token", index)):
        with pytest.raises(ConfigError, match=r"root .* is not a directory"):
            call()
    assert index.files == ("auth.py", "users.py")
    shutil.move(moved, tree)
    assert CodeIndex(tree, db=db).refresh().unchanged == 2


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts /proc/self/fd")
def test_an_index_made_for_one_call_is_closed_when_it_returns(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a folder, iterative_retrieve and decide_loading make an index in the default
    # file and left its SQLite connection open until the garbage collector found it: an agent
    # calling them in a loop held more files open at each call.
    import gc

    from ctxpack.code import decide_loading

    def open_files() -> int:
        return len(list(Path("/proc/self/fd").iterdir()))

    iterative_retrieve("refresh token", tree)  # the index file exists from here on
    gc.collect()
    gc.disable()
    try:
        before = open_files()
        for _ in range(3):
            iterative_retrieve("refresh token", tree)
            decide_loading("refresh token", tree, window=100_000)
        assert open_files() == before
    finally:
        gc.enable()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts /proc/self/fd")
def test_an_index_used_in_a_with_block_is_closed_at_its_end(tree: Path) -> None:
    # As a sqlite3 connection or a file: the block's end closes it, not the garbage collector.
    import gc

    def open_files() -> int:
        return len(list(Path("/proc/self/fd").iterdir()))

    CodeIndex(tree).close()  # the index file exists from here on
    gc.collect()
    gc.disable()
    try:
        before = open_files()
        with CodeIndex(tree) as index:
            assert index.rank_files("refresh token")[0].path == "auth.py"
            assert open_files() > before
        assert open_files() == before
        assert index.rank_files("user profile")[0].path == "users.py"  # opens it again
        index.close()
    finally:
        gc.enable()


def test_a_second_index_on_a_file_in_use_keeps_the_first_ones_locks(tree: Path) -> None:
    # CodeIndex(...) read the first bytes of its file with a plain open() and close(): a close
    # drops every POSIX lock the process holds on the file, SQLite's included, so another
    # process took itself for the file's last user and deleted the write-ahead log under the
    # open index (indexes sharing a file then failed with "disk I/O error").
    import subprocess
    import sys

    db = tree.parent / "shared.sqlite"
    first = CodeIndex(tree, db=db)
    first.refresh()  # its connection stays open, holding its lock
    wal = Path(f"{db}-wal")
    assert wal.exists()
    CodeIndex(tree, db=db)
    other = (
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT 1 FROM files')"
    )
    subprocess.run([sys.executable, "-c", other + "; c.close()", str(db)], check=True)
    assert wal.exists()  # the other process saw the first index's lock: not the last user
    assert first.refresh().unchanged == 2


def test_a_file_left_out_for_its_hard_links_is_named(tree: Path) -> None:
    # A tree made with `cp -al` or rsync --link-dest: its files have several names, one of
    # which may lie outside the root, so they are not read; they were left out unnamed, where
    # every other file left out is named in the refresh's stats.
    import os

    os.link(tree / "auth.py", tree.parent / "backup_auth.py")
    stats = CodeIndex(tree, db=":memory:").refresh()
    assert stats.hard_linked == ("auth.py",)
    assert (stats.parsed, stats.invalid_names, stats.unreadable) == (1, (), ())


def test_an_embedder_returning_nan_is_named(tree: Path) -> None:
    # A zero vector normalised by the embedder itself is NaN: its cosines were NaN, and a file
    # with a NaN score fell out of the fused ranking, silently.
    def nan_for_users(texts: list[str]) -> list[list[float]]:
        return [[float("nan"), 1.0] if "users" in t else [1.0, 0.0] for t in texts]

    index = CodeIndex(tree, db=":memory:", embedder=nan_for_users)
    with pytest.raises(ConfigError, match=r"embedder: .*NaN"):
        index.rank_files("profile user")


def test_a_file_made_unreadable_while_the_loop_runs_is_left_out(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As a file deleted meanwhile is: its PermissionError (a chmod, a file locked on Windows)
    # escaped the loop bare, from the context's read of it.
    import os
    import time

    from ctxpack._internal import paths

    for file in tree.iterdir():  # not read again by the loop's refresh: older than a tick
        os.utime(file, (time.time() - 60, time.time() - 60))
    index = CodeIndex(tree, db=":memory:")
    first = iterative_retrieve("refresh token", index)
    assert "auth.py" in first.artifacts
    read = paths.read_regular

    def locked(root: Path, real: str | Path, relative: str) -> bytes:
        if relative == "auth.py":
            raise PermissionError(13, "Permission denied", str(real))
        return read(root, real, relative)

    monkeypatch.setattr(paths, "read_regular", locked)
    result = iterative_retrieve("refresh token", index)
    assert "auth.py" in result.files and "auth.py" not in result.artifacts
    assert "### auth.py:" not in result.context and result.tokens == index.counter.count(
        result.context
    )


def test_reading_the_graph_does_not_change_it(tree: Path) -> None:
    # Its maps were defaultdicts: reading a name no file defines inserted it.
    index = CodeIndex(tree, db=":memory:")
    graph = index.graph
    before = (dict(graph.definers), dict(graph.importers), dict(graph.callers))
    for table in (graph.definers, graph.importers, graph.callers):
        with pytest.raises(KeyError):
            table["no_such_name"]
    assert (graph.definers, graph.importers, graph.callers) == before
    assert graph.definers["refresh_token"] == {"auth.py"}
