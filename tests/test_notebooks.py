"""The notebooks are stored with their outputs, and running them again prints the same.

Outputs are committed so that the repository's web view shows them (figures included); a
rerun must reproduce every text output, so a stored output never describes code that has
changed since. ``python scripts/run_notebooks.py`` refreshes them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .helpers import load_script

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
REFRESH = "run `python scripts/run_notebooks.py` and commit the notebooks"


def _runner() -> Any:
    return load_script(ROOT / "scripts" / "run_notebooks.py", "run_notebooks")


def _code_cells(notebook: dict[str, Any]) -> list[dict[str, Any]]:
    return [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]


def test_there_is_a_notebook() -> None:
    assert ROOT / "notebooks" / "quickstart.ipynb" in NOTEBOOKS


def test_a_cells_prints_compare_whole_however_the_kernel_flushed_them() -> None:
    def cell(*outputs: dict[str, Any]) -> dict[str, Any]:
        return {"cell_type": "code", "outputs": list(outputs)}

    one = {"cells": [cell({"output_type": "stream", "name": "stdout", "text": "a\nb\n"})]}
    split = {
        "cells": [
            cell(
                {"output_type": "stream", "name": "stdout", "text": "a\n"},
                {"output_type": "stream", "name": "stdout", "text": ["b", "\n"]},
            )
        ]
    }
    other = {"cells": [cell({"output_type": "stream", "name": "stdout", "text": "a\nc\n"})]}
    runner = _runner()
    assert runner.text_outputs(one) == runner.text_outputs(split) != runner.text_outputs(other)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_with_its_outputs_from_one_run(path: Path) -> None:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cells = _code_cells(notebook)
    # One run, top to bottom: the execution counts are 1, 2, 3...
    counts = [cell.get("execution_count") for cell in cells]
    assert counts == list(range(1, len(cells) + 1)), f"{counts}: {REFRESH}"
    for index, cell in enumerate(cells):
        kinds = {output["output_type"] for output in cell["outputs"]}
        assert "error" not in kinds, f"code cell {index} stored an error"
        assert cell["outputs"], f"code cell {index} shows nothing: {REFRESH}"
        if "plt.show()" in "".join(cell["source"]):
            figures = [o for o in cell["outputs"] if "image/png" in o.get("data", {})]
            assert figures, f"code cell {index} draws a figure but stores none: {REFRESH}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_and_prints_what_it_stores(path: Path, tmp_path: Path) -> None:
    try:
        import nbclient  # noqa: F401
        import nbformat
    except ImportError:
        pytest.skip("nbclient is not installed: pip install -e '.[docs]' to run the notebooks")
    runner = _runner()
    stored = runner.text_outputs(nbformat.read(path, as_version=4))
    fresh = runner.text_outputs(runner.execute(path, tmp_path))
    for index, (was, now) in enumerate(zip(stored, fresh, strict=True)):
        assert now == was, f"code cell {index} now prints something else: {REFRESH}"
