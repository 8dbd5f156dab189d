"""Run the notebooks top to bottom and store them with their outputs.

The notebooks under ``notebooks/`` are committed with their outputs, so that the repository's
web view shows what each cell prints and draws. ``tests/test_notebooks.py`` runs them again and
fails when what a cell prints no longer matches what is stored: rerun this script after a change
that alters an output, and commit the notebooks it rewrites.

Each notebook runs in a fresh kernel of this interpreter (the one ctxpack is installed in), from
the ``notebooks/`` folder, without timing metadata, so that a rerun with the same code writes
the same text outputs (figures are PNGs, which may differ by a few bytes across matplotlib
versions).

Usage (from the repository root; needs the ``docs`` extra: nbclient, nbformat, ipykernel)::

    python scripts/run_notebooks.py               # every notebook
    python scripts/run_notebooks.py notebooks/quickstart.ipynb
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
KERNEL = "python3"


def execute(path: Path, kernel_folder: Path) -> Any:
    """The notebook at ``path``, run top to bottom in a kernel of this interpreter.

    The kernel spec is written into ``kernel_folder``, which goes first on ``JUPYTER_PATH`` (for
    the kernel's launch only): a ``python3`` kernel installed elsewhere cannot shadow it.
    """
    import nbclient
    import nbformat
    from ipykernel.kernelspec import install

    install(kernel_name=KERNEL, prefix=str(kernel_folder))
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        kernel_name=KERNEL,
        timeout=180,
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    previous = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = str(kernel_folder / "share" / "jupyter")
    try:
        # A failing cell raises CellExecutionError, naming the cell and the traceback.
        client.execute()
    finally:
        if previous is None:
            del os.environ["JUPYTER_PATH"]
        else:
            os.environ["JUPYTER_PATH"] = previous
    return notebook


def text_outputs(notebook: Any) -> list[list[str]]:
    """Per code cell, the text it printed or returned: what a rerun must reproduce."""
    cells = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        texts: list[str] = []
        previous_stream = None
        for output in cell["outputs"]:
            if output["output_type"] == "stream":
                # The kernel flushes a cell's prints in one or several chunks, as the machine's
                # load has it: consecutive chunks of one stream are one text.
                text = _joined(output["text"])
                if previous_stream == output["name"]:
                    texts[-1] += text
                else:
                    texts.append(f"{output['name']}: {text}")
                previous_stream = output["name"]
                continue
            previous_stream = None
            if output["output_type"] in ("execute_result", "display_data"):
                texts.append(
                    f"{output['output_type']}: {_joined(output['data'].get('text/plain', ''))}"
                )
            else:
                texts.append(f"{output['output_type']}: {output.get('ename', '')}")
        cells.append(texts)
    return cells


def coalesce_streams(notebook: Any) -> None:
    """Join each cell's consecutive chunks of one stream into one output, so that what is stored
    does not depend on how the kernel happened to flush."""
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        outputs: list[Any] = []
        for output in cell["outputs"]:
            last = outputs[-1] if outputs else None
            if (
                output["output_type"] == "stream"
                and last is not None
                and last["output_type"] == "stream"
                and last["name"] == output["name"]
            ):
                last["text"] = _joined(last["text"]) + _joined(output["text"])
            else:
                outputs.append(output)
        cell["outputs"] = outputs


def _joined(text: str | list[str]) -> str:
    return text if isinstance(text, str) else "".join(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="default: every notebook")
    args = parser.parse_args(argv)
    import nbformat

    with tempfile.TemporaryDirectory() as folder:
        for path in args.paths or NOTEBOOKS:
            notebook = execute(path.resolve(), Path(folder))
            coalesce_streams(notebook)
            nbformat.write(notebook, path)
            print(f"wrote {path}")


if __name__ == "__main__":
    main()
