"""The notebooks run from top to bottom, and are stored without outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
KERNEL = "python3"


def test_there_is_a_notebook() -> None:
    assert ROOT / "notebooks" / "quickstart.ipynb" in NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_without_outputs(path: Path) -> None:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [], f"cell {index} has outputs; clear them"
            assert cell.get("execution_count") is None, f"cell {index} has an execution count"


def _use_this_interpreter_as_kernel(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point the ``python3`` kernel at this interpreter, the one ctxpack is installed in.

    The spec is written into ``folder`` and put first on ``JUPYTER_PATH``: a ``python3`` kernel
    installed elsewhere (``ipykernel install --user`` from another Python) cannot shadow it, and
    nothing outside ``folder`` changes.
    """
    from ipykernel.kernelspec import install

    install(kernel_name=KERNEL, prefix=str(folder))
    monkeypatch.setenv("JUPYTER_PATH", str(folder / "share" / "jupyter"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        import nbclient
        import nbformat
    except ImportError:
        pytest.skip("nbclient is not installed: pip install -e '.[docs]' to run the notebooks")
    _use_this_interpreter_as_kernel(tmp_path, monkeypatch)
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        kernel_name=KERNEL,
        timeout=120,
        resources={"metadata": {"path": str(path.parent)}},
    )
    # A failing cell raises CellExecutionError, naming the cell and the traceback.
    client.execute()
    errors = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "error"
    ]
    assert errors == []
