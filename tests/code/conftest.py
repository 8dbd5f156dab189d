"""A fresh copy of the fixture repository per test, and an index cache that is the test's own."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "coderepo"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # CodeIndex(root) without db= writes under $XDG_CACHE_HOME: never the user's own.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The fixture repository, copied, plus files its .gitignore rules out (git would not
    let them be committed inside this repository)."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    (root / "generated").mkdir()
    (root / "generated" / "throttle_copy.py").write_text("def throttle():\n    pass\n")
    (root / "web" / "legacy" / "vendor.min.js").write_text("function throttle(){}\n")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "lib.js").write_text("function throttle(){}\n")
    (root / "web" / "logo.py").write_bytes(b"throttle = 1\n\x00\x01binary")
    return root
