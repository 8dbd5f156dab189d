"""``import ctxpack`` imports almost nothing; each everyday name is imported on first use.

Checked by what a fresh interpreter has imported, not by timing it (benchmarks/import_time.py
measures the time).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import ctxpack

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pydantic", "numpy", "tiktoken", "sqlite3", "ctxpack.packing", "ctxpack.session")


def _fresh(code: str) -> dict[str, bool]:
    """Which of the ``HEAVY`` modules a fresh interpreter has imported after ``code``."""
    probe = (
        f"{code}\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    loaded: dict[str, bool] = json.loads(done.stdout)
    return loaded


def test_import_ctxpack_imports_none_of_the_heavy_modules() -> None:
    assert _fresh("import ctxpack") == dict.fromkeys(HEAVY, False)


def test_an_error_class_is_there_without_importing_the_rest() -> None:
    assert _fresh("import ctxpack; ctxpack.ConfigError; ctxpack.CtxpackError") == dict.fromkeys(
        HEAVY, False
    )


def test_the_first_use_of_a_name_imports_what_it_needs() -> None:
    loaded = _fresh("import ctxpack; ctxpack.pack")
    assert loaded["ctxpack.packing"] and loaded["pydantic"] and loaded["numpy"]


def test_every_public_name_is_reachable_and_listed() -> None:
    for name in ctxpack.__all__:
        assert getattr(ctxpack, name) is not None
        assert name in dir(ctxpack)
    namespace: dict[str, object] = {}
    exec("from ctxpack import *", namespace)
    assert set(ctxpack.__all__) <= namespace.keys()
    assert ctxpack.pack is ctxpack.packing.pack
