"""A code index made before a fork and refreshed in the child: what the child stores stays
stored when the parent closes its index."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ctxpack.code import CodeIndex

from ..forks import fork, needs_fork, succeeded


def write_files(root: Path, numbers: range) -> None:
    for i in numbers:
        (root / f"m{i}.py").write_text(f"def func_{i}(x):\n    return x + {i}\n")


@needs_fork
def test_rows_a_child_stores_survive_the_parent_closing_its_index(tmp_path: Path) -> None:
    # The parent's connection, copied into the child, made SQLite lose the child's writes to
    # the file once the parent closed its own (the write-ahead log deleted under the child).
    root, db = tmp_path / "repo", str(tmp_path / "index.db")
    root.mkdir()
    write_files(root, range(5))
    index = CodeIndex(root, db=db, workers=1)
    index.refresh()
    refreshed, closed = os.pipe(), os.pipe()

    def child() -> None:
        write_files(root, range(5, 10))
        index.refresh()
        os.write(refreshed[1], b"1")
        os.read(closed[0], 1)  # the parent has closed its index
        write_files(root, range(10, 15))
        index.refresh()  # and the child exits without closing

    pid = fork(child)
    os.read(refreshed[0], 1)
    index.close()
    os.write(closed[1], b"1")
    assert succeeded(pid)
    with sqlite3.connect(db) as conn:
        stored = {path for (path,) in conn.execute("SELECT path FROM files")}
    assert stored == {f"m{i}.py" for i in range(15)}
