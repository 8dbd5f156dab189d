"""A first build parsed in worker processes is the index a build in one process gives."""

from __future__ import annotations

import resource
import shutil
import sqlite3
import threading
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pytest

from ctxpack import ConfigError
from ctxpack.code import CodeIndex

_QUERIES = (
    "decode the JWT claims",
    "Crash in fetch_record when the key is missing",
    "something is off in services/audit/audit.go",
    "price with tax\nadd invoice to the report",
)


@pytest.fixture
def tree(repo: Path) -> Path:
    """The fixture repository with its source files copied into five more packages: more
    files than a refresh parses in this process (64), in every language."""
    sources = [p for p in repo.rglob("*") if p.suffix in {".py", ".ts", ".js", ".go", ".rs"}]
    sources += list(repo.rglob("*.java"))
    for copy in range(5):
        for source in sources:
            target = repo / f"copy{copy}" / source.relative_to(repo)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    assert len(CodeIndex(repo, db=":memory:", workers=1).files) > 64
    return repo


def _index(root: Path, db: Path, **kwargs: Any) -> tuple[Any, ...]:
    """What a build stores and ranks: each file's row (but when it was read) and rankings."""
    index = CodeIndex(root, db=db, **kwargs)
    stats = index.refresh()
    with sqlite3.connect(db) as conn:
        rows = sorted(
            conn.execute("SELECT path, size, sha256, tokens, parsed, terms, grams FROM files")
        )
    conn.close()
    ranked = [[hit.model_dump() for hit in index.rank_files(q, k=20)] for q in _QUERIES]
    return stats.model_dump(), rows, ranked, [index.parsed(p) for p in index.files]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def test_a_build_in_worker_processes_is_the_build_in_one(tree: Path, tmp_path: Path) -> None:
    serial = _index(tree, tmp_path / "serial.sqlite", workers=1)
    before = _children_cpu()
    parallel = _index(tree, tmp_path / "parallel.sqlite", workers=2)
    assert _children_cpu() > before  # the workers parsed
    assert parallel == serial
    # Read back from its file, the parallel build ranks as the serial one.
    assert _index(tree, tmp_path / "parallel.sqlite")[1:] == serial[1:]


def test_a_build_in_worker_processes_from_a_thread(tree: Path, tmp_path: Path) -> None:
    serial = _index(tree, tmp_path / "serial.sqlite", workers=1)
    found: list[Any] = []
    thread = threading.Thread(
        target=lambda: found.append(_index(tree, tmp_path / "thread.sqlite", workers=2))
    )
    thread.start()
    thread.join()
    assert found == [serial]


class _NoProcesses:
    """A process pool on a platform without process semaphores."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise OSError(38, "Function not implemented")


class _DiesAfterTwoChunks:
    """A process pool whose worker is killed after its second share of the files."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.submitted = 0

    def submit(self, fn: Any, chunk: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self.submitted += 1
        if self.submitted <= 2:
            future.set_result(fn(chunk))
        else:
            future.set_exception(BrokenProcessPool("a worker was killed"))
        return future

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass


@pytest.mark.parametrize("pool", [_NoProcesses, _DiesAfterTwoChunks])
def test_files_a_pool_did_not_parse_are_parsed_in_this_process(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pool: type
) -> None:
    serial = _index(tree, tmp_path / "serial.sqlite", workers=1)
    monkeypatch.setattr("ctxpack.code._parallel.ProcessPoolExecutor", pool)
    assert _index(tree, tmp_path / "fallback.sqlite", workers=2) == serial


def test_a_counters_error_is_not_taken_for_a_pool_that_failed(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def count(text: str) -> int:
        # Once only: swallowed, the files would be parsed again and counted without an error.
        calls.append(text)
        if len(calls) == 1:
            raise OSError("the counter failed")
        return len(text)

    monkeypatch.setattr("ctxpack.code._parallel.ProcessPoolExecutor", _DiesAfterTwoChunks)
    with pytest.raises(OSError, match="the counter failed"):
        CodeIndex(tree, db=":memory:", counter=count, workers=2).refresh()


@pytest.mark.parametrize("workers", [0, -1, True, 1.5, "2"])
def test_workers_must_be_a_positive_int(repo: Path, workers: Any) -> None:
    with pytest.raises(ConfigError, match="workers must be a positive int"):
        CodeIndex(repo, db=":memory:", workers=workers)
