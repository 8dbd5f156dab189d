"""The ``history`` signal: commit messages lend their score to the files the commits touched."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ctxpack.code import DEFAULT_WEIGHTS, CodeIndex

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

QUERY = "Totals lose their currency rounding"
FILES = {
    # Holds the query's words in its code: the ranking without history puts it first.
    "ledger.py": "def totals(entries):\n    '''Totals of the ledger, no currency.'''\n"
    "    return sum(e.amount for e in entries)\n",
    # Where the fix belongs: none of the query's words are in it, its commit message has them.
    "amounts.py": "def quantize(value, places):\n    return round(value, places)\n",
    "report.py": "def render(rows):\n    return '\\n'.join(map(str, rows))\n",
}


def _git(root: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z",
    }
    subprocess.run(["git", "-C", str(root), *args], env=env, check=True, capture_output=True)


def _commit(root: Path, message: str, changes: dict[str, str]) -> None:
    for path, text in changes.items():
        (root / path).write_text(text)
    _git(root, "add", "--", *changes)
    _git(root, "commit", "-q", "-m", message)


@pytest.fixture
def history_repo(tmp_path: Path) -> Path:
    root = tmp_path / "books"
    root.mkdir()
    _git(root, "init", "-q")
    _commit(root, "Start the books", FILES)
    _commit(
        root,
        "Fix currency rounding of totals\n\nAmounts are quantized to the currency's places.",
        {"amounts.py": FILES["amounts.py"] + "\nCURRENCY_PLACES = 2\n"},
    )
    # A sweep over every file holds the same words but says little about any one of them.
    _commit(
        root,
        "Reformat: currency totals rounding style",
        {p: t + "\n# end\n" for p, t in FILES.items()},
    )
    return root


def _ranking(root: Path, weight: float, db: str = ":memory:") -> list[tuple[str, float]]:
    index = CodeIndex(root, db=db, weights={"history": weight})
    try:
        return [(h.path, h.score) for h in index.rank_files(QUERY)]
    finally:
        index.close()


def test_history_is_off_by_default() -> None:
    assert DEFAULT_WEIGHTS["history"] == 0.0


def test_history_lifts_the_file_a_matching_commit_touched(history_repo: Path) -> None:
    assert _ranking(history_repo, 0.0)[0][0] == "ledger.py"
    assert _ranking(history_repo, 2.0)[0][0] == "amounts.py"
    hits = CodeIndex(history_repo, db=":memory:", weights={"history": 2.0}).rank_files(QUERY)
    lent = {h.path: h.signals["history"] for h in hits}
    assert lent["amounts.py"] == 1.0
    # The sweep touched ledger.py too, with the query's words, but shared among three files.
    assert 0.0 < lent["ledger.py"] < 0.5


def test_no_history_when_root_is_not_a_git_work_tree(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    for path, text in FILES.items():
        (root / path).write_text(text)
    hits = CodeIndex(root, db=":memory:", weights={"history": 2.0}).rank_files(QUERY)
    assert hits and all(h.signals["history"] == 0.0 for h in hits)
    assert _ranking(root, 2.0) == _ranking(root, 0.0)


def test_history_stops_at_head(history_repo: Path) -> None:
    # A checkout of an older commit knows nothing of what came after it.
    _git(history_repo, "checkout", "-q", "--detach", "HEAD~2")
    hits = CodeIndex(history_repo, db=":memory:", weights={"history": 2.0}).rank_files(QUERY)
    assert all(h.signals["history"] == 0.0 for h in hits)
    assert hits[0].path == "ledger.py"


def test_history_ranking_is_deterministic(history_repo: Path, tmp_path: Path) -> None:
    first = _ranking(history_repo, 1.0)
    assert first == _ranking(history_repo, 1.0)
    assert first == _ranking(history_repo, 1.0, db=str(tmp_path / "a.sqlite"))


def _git_logging_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put a ``git`` on PATH that records its arguments, then runs the real git."""
    real = shutil.which("git")
    assert real is not None
    calls = tmp_path / "git-calls.txt"
    shim = tmp_path / "bin" / "git"
    shim.parent.mkdir()
    shim.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        f"with open({str(calls)!r}, 'a') as f:\n"
        "    f.write(' '.join(sys.argv[1:]) + '\\n')\n"
        f"os.execv({real!r}, [{real!r}, *sys.argv[1:]])\n"
    )
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ['PATH']}")
    return calls


def test_the_index_file_keeps_the_history(
    history_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "index.sqlite")
    calls = _git_logging_calls(tmp_path, monkeypatch)
    first = _ranking(history_repo, 2.0, db=db)
    assert sum(" log " in line for line in calls.read_text().splitlines()) == 1
    # Reopened on the same HEAD: the history comes from the index file, not from git log.
    assert _ranking(history_repo, 2.0, db=db) == first
    assert sum(" log " in line for line in calls.read_text().splitlines()) == 1
    # A new commit is a new HEAD: its history is read again, and its message counts.
    _commit(history_repo, "Render totals in the report", {"report.py": "def render():\n    1\n"})
    hits = CodeIndex(history_repo, db=db, weights={"history": 2.0}).rank_files("render totals")
    assert sum(" log " in line for line in calls.read_text().splitlines()) == 2
    assert {h.path: h.signals["history"] for h in hits}["report.py"] == 1.0


def test_an_index_that_ignores_history_runs_no_git(
    history_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _git_logging_calls(tmp_path, monkeypatch)
    _ranking(history_repo, 0.0)
    assert not calls.exists()
