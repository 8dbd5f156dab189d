"""Code retrieval over odd trees: files that change between the walk and the read, symlinks
that lead out of the root, names that are not text."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from ctxpack.code import CodeIndex, grep
from ctxpack.code._files import source_files
from ctxpack.errors import WorkspacePathError

SECRET = "def secret_token():\n    return 'SECRET'\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the repository, with a file no index of it may read."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.py").write_text(SECRET)
    return folder


def test_a_file_swapped_for_a_symlink_out_of_the_root_after_the_walk_is_not_read(
    repo: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The walk lists a regular file; before the refresh reads it, a symlink to a file outside
    # the root takes its place. Its text must not reach the index (nor a context built on it).
    target = repo / "api" / "db.py"

    def then_swapped(root: Path, known: Any, **options: Any) -> list[tuple[str, os.stat_result]]:
        listed = source_files(root, known, **options)
        target.unlink()
        target.symlink_to(outside / "secret.py")
        return listed

    monkeypatch.setattr("ctxpack.code._storage.source_files", then_swapped)
    index = CodeIndex(repo, db=":memory:")
    index.refresh()
    assert "api/db.py" not in index.files
    texts = [u.text for hit in index.rank_files("secret_token SECRET") for u in hit.units]
    assert not any("SECRET" in text for text in texts)
    assert not index.definitions("secret_token")


@pytest.mark.parametrize("engine", ["python", "auto"])
@pytest.mark.parametrize("link", ["leak.py", "out/secret.py"])
def test_grep_refuses_paths_that_lead_out_of_the_root(
    repo: Path, outside: Path, engine: Any, link: str
) -> None:
    (repo / "leak.py").symlink_to(outside / "secret.py")
    (repo / "out").symlink_to(outside)
    with pytest.raises(WorkspacePathError, match="outside the root") as caught:
        grep(repo, "SECRET", paths=["api/db.py", link], engine=engine)
    assert caught.value.path == link


def test_grep_reads_a_symlink_that_stays_inside_the_root(repo: Path) -> None:
    (repo / "alias.py").symlink_to(repo / "api" / "db.py")
    hits = grep(repo, "def ", paths=["alias.py"], engine="python")
    assert hits and {h.path for h in hits} == {"alias.py"}


def test_names_that_are_not_text_are_left_out_and_named(repo: Path) -> None:
    # A Latin-1 name on a UTF-8 system reads with lone surrogates: no prompt or JSON record
    # can hold it, so it is left out of the index, and the refresh says so, bytes escaped.
    folder = os.fsencode(repo)
    with open(folder + b"/caf\xe9.py", "wb") as file:
        file.write(b"def latin_name():\n    pass\n")
    os.mkdir(folder + b"/r\xe9sum\xe9")
    with open(folder + b"/r\xe9sum\xe9/inner.py", "wb") as file:
        file.write(b"def inside_latin_folder():\n    pass\n")
    with open(folder + b"/notes\xff.txt", "wb") as file:  # not source: never listed anyway
        file.write(b"latin\n")
    index = CodeIndex(repo, db=":memory:")
    stats = index.refresh()
    assert stats.invalid_names == ("caf\\xe9.py", "r\\xe9sum\\xe9/")
    assert not any("latin" in path for path in index.files)
    assert not index.definitions("latin_name")
    assert stats.model_dump_json()  # the names are text
    # Renamed, the file is indexed and no longer named.
    os.rename(folder + b"/caf\xe9.py", folder + b"/cafe.py")
    stats = index.refresh()
    assert stats.invalid_names == ("r\\xe9sum\\xe9/",)
    assert index.definitions("latin_name")


# Run as root, the check drops the capabilities that let root read any file (capsh).
_UNREADABLE_CHECK = """
import os, sys
from pathlib import Path
from ctxpack.code import CodeIndex
root = Path(sys.argv[1])
(root / "locked.py").write_text("def locked_away():\\n    pass\\n")
(root / "locked.py").chmod(0)
(root / "closed").mkdir()
(root / "closed" / "inner.py").write_text("def closed_away():\\n    pass\\n")
(root / "closed").chmod(0)
stats = CodeIndex(root, db=":memory:").refresh()
print(stats.unreadable)
"""


def test_files_and_folders_that_cannot_be_read_are_left_out_and_named(repo: Path) -> None:
    import shlex
    import shutil
    import subprocess
    import sys

    command = [sys.executable, "-c", _UNREADABLE_CHECK, str(repo)]
    if os.geteuid() == 0:
        capsh = shutil.which("capsh")
        if capsh is None:
            pytest.skip("run as root without capsh: every file can be read")
        command = [
            capsh,
            "--drop=cap_dac_override,cap_dac_read_search",
            "--",
            "-c",
            shlex.join(command),
        ]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    try:
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "('closed/', 'locked.py')"
    finally:
        for path in (repo / "locked.py", repo / "closed"):
            path.chmod(0o700)  # so that the test's folder can be removed


def _truncated_index(repo: Path, db: Path) -> bytes:
    """An index file of ``repo`` written in full (no write-ahead log beside it), cut in half."""
    import sqlite3

    index = CodeIndex(repo, db=db)
    index.refresh()
    index.close()
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=DELETE")  # the rows move from the log into the file
    conn.close()
    whole = db.read_bytes()
    db.write_bytes(whole[: len(whole) // 2])
    return whole[: len(whole) // 2]


def test_a_truncated_index_file_given_is_named_damaged_and_left_alone(
    repo: Path, tmp_path: Path
) -> None:
    from ctxpack.errors import CtxpackError

    db = tmp_path / "index.sqlite"
    cut = _truncated_index(repo, db)
    with pytest.raises(CtxpackError, match=r"index\.sqlite.*damaged.*remove it to rebuild"):
        CodeIndex(repo, db=db).rank_files("session token expires")
    assert db.read_bytes() == cut


def test_a_file_swapped_for_a_pipe_after_the_walk_does_not_hang_the_refresh(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Opening a named pipe to read waits for a writer, which may never come.
    import threading

    target = repo / "api" / "db.py"

    def then_swapped(root: Path, known: Any, **options: Any) -> list[tuple[str, os.stat_result]]:
        listed = source_files(root, known, **options)
        target.unlink()
        os.mkfifo(target)
        return listed

    monkeypatch.setattr("ctxpack.code._storage.source_files", then_swapped)
    index = CodeIndex(repo, db=":memory:")
    done = threading.Thread(target=index.refresh, daemon=True)
    done.start()
    done.join(timeout=20)
    if done.is_alive():
        with open(target, "wb"):  # lets the blocked read go, so the thread can end
            pass
        pytest.fail("the refresh waits on a named pipe")
    assert "api/db.py" not in index.files


def test_a_tree_of_files_without_a_unit_ranks_the_file_a_query_names(tmp_path: Path) -> None:
    # A new package's empty __init__.py has no unit to score: the best unit's score, taken of
    # none, raised numpy's "zero-size array to reduction operation maximum".
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    hits = CodeIndex(tmp_path).rank_files("fix pkg/__init__.py")
    assert [hit.path for hit in hits] == ["pkg/__init__.py"]


def test_a_file_swapped_for_a_symlink_out_after_reads_check_is_not_read(
    repo: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CodeIndex.read checked the file, then opened it by name, following whatever link took
    # its place in between: a file outside the root was read (a named pipe, waited on).
    from ctxpack._internal import paths

    index = CodeIndex(repo, db=":memory:")
    assert "api/db.py" in index.files
    checked = paths.confined_file

    def then_swapped(root: Path, relative: str) -> Path:
        real = checked(root, relative)
        (repo / "api" / "db.py").unlink()
        (repo / "api" / "db.py").symlink_to(outside / "secret.py")
        return real

    monkeypatch.setattr(paths, "confined_file", then_swapped)
    monkeypatch.setattr("ctxpack.code._index.confined_file", then_swapped, raising=False)
    with pytest.raises(WorkspacePathError, match="symlink"):
        index.read("api/db.py")
