"""scripts/privatise_modules.py, the public-surface plan, on a small fake tree."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from .helpers import ROOT, load_script


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return load_script(ROOT / "scripts" / "privatise_modules.py", "privatise_modules")


def _tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_leaf_modules_turn_private_and_imports_follow(tmp_path: Path, script: ModuleType) -> None:
    root = _tree(
        tmp_path,
        {
            "ctxpack/__init__.py": "",
            "ctxpack/stages/__init__.py": (
                'from .pack import Packer\nfrom . import util as helpers\n__all__ = ["Packer"]\n'
            ),
            "ctxpack/stages/pack.py": "from .util import helper\nclass Packer: ...\n",
            "ctxpack/stages/util.py": "def helper(): ...\n",
            "ctxpack/store/__init__.py": "",
            "ctxpack/store/postgres.py": "X = 1\n",  # an optional driver: stays public
            "ctxpack/session.py": (
                "from .stages.util import helper\ndef f():\n    from .stages.pack import _private\n"
            ),
            "tests/test_x.py": (
                "from ctxpack.stages.pack import Packer\nfrom ctxpack.stages import util\n"
                'TARGET = "ctxpack.stages.util.helper"\n'
            ),
        },
    )
    plan = script.plan_renames(root)
    assert plan.renames == {
        "ctxpack.stages.pack": "ctxpack.stages._pack",
        "ctxpack.stages.util": "ctxpack.stages._util",
    }
    init = root / "ctxpack/stages/__init__.py"
    assert script.rewrite_python(plan, init, init.read_text(), inside=True) == (
        'from ._pack import Packer\nfrom . import _util as helpers\n__all__ = ["Packer"]\n'
    )
    session = root / "ctxpack/session.py"
    # From another package: through the package, which must re-export the name; a private name
    # keeps its module path (the architecture test then names it).
    assert script.rewrite_python(plan, session, session.read_text(), inside=True) == (
        "from .stages import helper\ndef f():\n    from .stages._pack import _private\n"
    )
    test = root / "tests/test_x.py"
    assert script.rewrite_python(plan, test, test.read_text(), inside=False) == (
        "from ctxpack.stages import Packer\nfrom ctxpack.stages import _util as util\n"
        'TARGET = "ctxpack.stages._util.helper"\n'
    )
    assert plan.reexports["ctxpack.stages"] == {
        "helper": "ctxpack.stages._util",
        "Packer": "ctxpack.stages._pack",
    }
    script.add_reexports(plan)
    assert "from ._util import helper as helper\n" in init.read_text()
    assert "Packer as Packer" not in init.read_text()  # bound there already


def test_names_leave_all_but_stay_importable(tmp_path: Path, script: ModuleType) -> None:
    root = _tree(
        tmp_path,
        {
            "ctxpack/__init__.py": "",
            "ctxpack/caches.py": (
                "from ._impl import Memo, memoize, register\n"
                '__all__ = ["Memo", "memoize", "register"]\n'
            ),
            "docs/guide.md": "```python\nfrom ctxpack.caches import register\n```\n",
        },
    )
    removed = script.trim_all(root)
    # REMOVE lists Memo and register for ctxpack.caches; the docs import register: it stays.
    assert removed == ["ctxpack.caches.Memo"]
    assert (root / "ctxpack/caches.py").read_text() == (
        "from ._impl import (\n    Memo as Memo,\n    memoize,\n    register,\n)\n"
        '__all__ = [\n    "memoize",\n    "register",\n]\n'
    )
