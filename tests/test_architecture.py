"""The layout's rules, checked: no import cycle inside ctxpack, and private modules stay private.

The import graph is read from the sources with ``ast``: every ``import`` and ``from ... import``,
at module level or inside a function (a lazy import still ties two modules together), except
those under ``if TYPE_CHECKING:``, which never run. Importing ``a.b.c`` also runs ``a/__init__``
and ``a/b/__init__``, so those are edges too; the importing module's own packages are not (they
are already being imported when it runs).
"""

from __future__ import annotations

import ast
import re
import sys
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from .helpers import api_reference_generator

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "ctxpack"
PRIVATE = f"{PACKAGE}._internal"


def module_files(root: Path, package: str) -> dict[str, Path]:
    """Every module of a package under ``root``, by dotted name (a package by its own name)."""
    modules: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements under ``node``, skipping the bodies of ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield from _import_nodes(ast.Module(body=[other], type_ignores=[]))
            continue
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        yield from _import_nodes(child)


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Which modules of the package each module imports (directly), by dotted name."""
    files = module_files(root, package)
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
                continue
            target = _absolute(name, is_package, node)
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                targets.add(submodule if submodule in files else target)
        for target in targets:
            parts = target.split(".")
            # Importing a.b.c runs a/b/__init__ (and a/__init__) first.
            chain = [".".join(parts[:k]) for k in range(1, len(parts) + 1)]
            for module in chain:
                ancestor = name == module or name.startswith(module + ".")
                if module in files and not ancestor:
                    graph[name].add(module)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component, as the modules along it in import order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component: set[str] = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                components.append(component)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                connect(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(_shortest_cycle(graph, component) for component in components)


def _shortest_cycle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """The shortest way from the component's first module back to itself, inside it."""
    start = min(component)
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(graph[v] & component):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return path[::-1]
            if w not in came_from:
                came_from[w] = v
                queue.append(w)
    raise AssertionError(f"{sorted(component)} is not a cycle")  # pragma: no cover


def _describe(cycles: list[list[str]]) -> str:
    return "; ".join(" -> ".join([*cycle, cycle[0]]) for cycle in cycles)


def test_ctxpack_has_no_import_cycle() -> None:
    cycles = find_cycles(import_graph(ROOT, PACKAGE))
    assert not cycles, f"import cycles: {_describe(cycles)}"


# The layers, lowest first: a module imports only from its own layer or the ones below.
CORE = frozenset(
    {"errors", "caches", "sdk", "messages", "tokens", "providers", "adapters", "pipeline",
     "_internal", "redaction", "injection"}
)  # fmt: skip
SCORING = frozenset({"stages", "signals"})


def _layer(module: str) -> str:
    top = module.split(".")[1] if "." in module else ""
    return "core" if top in CORE else "scoring" if top in SCORING else "above"


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Imports from a lower layer into a higher one: core -> scoring or above, scoring -> above."""
    rank = {"core": 0, "scoring": 1, "above": 2}
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if rank[_layer(target)] > rank[_layer(module)]
    )


def test_lower_layers_never_import_higher_ones() -> None:
    # messages, tokens and the pipeline know nothing of stages; stages and signals nothing of
    # adapters, the agent side or the command line.
    assert layer_violations(import_graph(ROOT, PACKAGE)) == []


def test_a_layer_violation_is_named(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "ctxpack/__init__.py": "",
            "ctxpack/messages.py": "def f():\n    from .stages import pack\n",
            "ctxpack/stages/__init__.py": "",
            "ctxpack/stages/pack.py": "from ..messages import f\nfrom ..session import S\n",
            "ctxpack/session.py": "from .stages.pack import x\n",
        },
    )
    assert layer_violations(import_graph(root, "ctxpack")) == [
        "ctxpack.messages -> ctxpack.stages",
        "ctxpack.messages -> ctxpack.stages.pack",
        "ctxpack.stages.pack -> ctxpack.session",
    ]


def test_the_graph_sees_ctxpack_s_real_imports() -> None:
    # A graph builder that found no edges would find no cycle either.
    graph = import_graph(ROOT, PACKAGE)
    assert "ctxpack.pipeline" in graph["ctxpack.packing"]
    assert "ctxpack.stages" in graph["ctxpack.packing"]  # through ctxpack/stages/__init__
    assert "ctxpack.messages" in graph["ctxpack.stages._pack"]


# The cycle finder on small fake packages: it must be able to fail.


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_a_cycle_through_a_function_level_import_is_found_and_named(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from .b import g\n",
            "pkg/b.py": "def g():\n    from . import a\n    return a\n",
            "pkg/c.py": "from pkg import a\n",
        },
    )
    cycles = find_cycles(import_graph(root, "pkg"))
    assert cycles == [["pkg.a", "pkg.b"]]
    assert _describe(cycles) == "pkg.a -> pkg.b -> pkg.a"


def test_imports_under_type_checking_are_not_edges(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from .b import g\n",
            "pkg/b.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from .a import A\nelse:\n    import json\n"
                "def g(): ...\n"
            ),
        },
    )
    assert find_cycles(import_graph(root, "pkg")) == []


def test_importing_a_submodule_runs_its_package_init(tmp_path: Path) -> None:
    # pkg.top imports pkg.sub.leaf, which runs pkg/sub/__init__, which imports pkg.top.
    root = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/top.py": "from .sub.leaf import x\n",
            "pkg/sub/__init__.py": "from ..top import y\n",
            "pkg/sub/leaf.py": "x = 1\n",
        },
    )
    graph = import_graph(root, "pkg")
    assert graph["pkg.top"] == {"pkg.sub", "pkg.sub.leaf"}
    assert graph["pkg.sub.leaf"] == set()  # its own package is already being imported
    assert find_cycles(graph) == [["pkg.sub", "pkg.top"]]


# The private modules stay out of the API reference.


@pytest.fixture(scope="module")
def api_reference() -> ModuleType:
    return api_reference_generator()


def test_private_modules_are_not_in_the_api_reference(api_reference: ModuleType) -> None:
    reference = api_reference.build(ROOT)
    text = api_reference.render(reference)
    blocks = re.findall(r"^::: (\S+)", text, re.MULTILINE)
    targets = re.findall(r"\]\(([^)]*)\)", text)
    rows = re.findall(r"^\| \[?`([\w.]+)`", text, re.MULTILINE)
    assert blocks and targets and rows
    for name in [*blocks, *targets, *rows]:
        assert PRIVATE not in name, name
    listed = [module.path for module in reference.modules]
    assert listed and all(api_reference.is_public(path) for path in listed)
    # Every public module is listed, and only those: the private ones are known to exist.
    files = module_files(ROOT, PACKAGE)
    assert any(name.startswith(PRIVATE) for name in files)
    public = {name for name in files if name != PACKAGE and api_reference.is_public(name)}
    assert set(listed) == public
    for identifier in reference.rendered():
        parts = identifier.split(".")
        assert all(not part.startswith("_") for part in parts), identifier
        obj = api_reference._resolve(identifier)
        defined_in = getattr(obj, "__module__", None) or ""
        assert not defined_in.startswith(PRIVATE), f"{identifier} is defined in {defined_in}"


def test_the_reference_refuses_a_name_defined_in_a_private_module(
    api_reference: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ctxpack.caches
    from ctxpack._internal import prefix

    monkeypatch.setattr(ctxpack.caches, "__all__", [*ctxpack.caches.__all__, "PrefixMemo"])
    monkeypatch.setattr(ctxpack.caches, "PrefixMemo", prefix.PrefixMemo, raising=False)
    with pytest.raises(ValueError, match="_internal"):
        api_reference.build(ROOT)


def test_the_architecture_page_maps_every_module() -> None:
    """docs/architecture.md's module map has a row for every module and package of ctxpack."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    first_cells = re.findall(r"^\| ([^|]+) \|", page, re.MULTILINE)
    mapped = {path for cell in first_cells for path in re.findall(r"`([\w/.]+)`", cell)}
    missing = []
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        relative = path.relative_to(ROOT / PACKAGE)
        if relative.as_posix() == "__init__.py":
            name = "__init__.py"
        elif relative.name == "__init__.py":
            name = relative.parent.as_posix() + "/"
        else:
            name = relative.as_posix()
        if name not in mapped:
            missing.append(name)
    assert not missing, f"docs/architecture.md's module map lacks {missing}"


# No package imports another package's private names.


def _private_owner(module: str) -> str | None:
    """The package a private module belongs to: the path before its first ``_`` part (``None``
    for a public module). ``ctxpack.stages._base`` belongs to ``ctxpack.stages``."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def _is_private_name(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _package_of(module: str, files: dict[str, Path]) -> str:
    """The package holding a module: the module itself when it is a package."""
    return module if files[module].name == "__init__.py" else module.rpartition(".")[0]


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def private_imports(root: Path, package: str) -> list[str]:
    """Imports of a private module or a ``_name`` from outside the package that holds it.

    A private module (a path part starting with ``_``) or name is visible inside its package and
    that package's subpackages: ``ctxpack._internal`` to every module of ctxpack,
    ``ctxpack.stages._base`` to the stages only, ``_name`` of ``ctxpack.tokens`` to ctxpack's
    modules. Lines read ``importer -> target``.
    """
    files = module_files(root, package)
    found: set[str] = set()
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                pairs = [(alias.name, None) for alias in node.names]
            else:
                source = _absolute(name, is_package, node)
                pairs = [
                    (f"{source}.{a.name}", None)
                    if f"{source}.{a.name}" in files
                    else (source, a.name)
                    for a in node.names
                ]
            for module, imported in pairs:
                if not _inside(module, package):
                    continue
                owner = _private_owner(module)
                target = module
                if owner is None and imported is not None and _is_private_name(imported):
                    owner = _package_of(module, files) if module in files else module
                    target = f"{module}.{imported}"
                if owner is not None and not _inside(name, owner):
                    found.add(f"{name} -> {target}")
    return sorted(found)


def test_no_package_imports_another_package_s_private_names() -> None:
    offenders = private_imports(ROOT, PACKAGE)
    assert offenders == [], f"cross-package private imports: {offenders}"


def test_a_cross_package_private_import_is_named(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/_util.py": "def _h(): ...\n",
            "pkg/top.py": (
                "from ._util import _h\nfrom .sub._base import B\nfrom .sub.leaf import _x, y\n"
            ),
            "pkg/sub/__init__.py": "from .._util import _h\n",
            "pkg/sub/_base.py": "class B: ...\n",
            "pkg/sub/leaf.py": "from ._base import B\nfrom pkg.top import _y\n_x = y = 1\n",
            "pkg/other/__init__.py": "def f():\n    import pkg.sub._base\n",
        },
    )
    # The subpackage may use its parent's privates; the parent and siblings not the child's.
    assert private_imports(root, "pkg") == [
        "pkg.other -> pkg.sub._base",
        "pkg.top -> pkg.sub._base",
        "pkg.top -> pkg.sub.leaf._x",
    ]


# Issue 29's numeric rules: a small public surface, short modules and functions.

MAX_TOP_LEVEL_NAMES = 35
MAX_PUBLIC_NAMES = 151
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def public_names(api_reference: ModuleType) -> list[str]:
    """Every public name of ctxpack, once: the distinct objects named in ``ctxpack.__all__`` and
    in the ``__all__`` of every public module the API reference lists, each under the first
    ``module.name`` that exports it. Small ints, booleans and None are shared objects, so each
    of those names counts on its own (as the reference documents them)."""
    package = api_reference._import_package(ROOT)
    modules = [(PACKAGE, package.__all__, package)]
    modules += [(m.path, m.names, m.module) for m in api_reference.public_modules(package)]
    found: dict[object, str] = {}
    for path, names, module in modules:
        for name in names:
            obj = getattr(module, name) if module is not None else None
            shared = obj is None or isinstance(obj, (bool, int))
            found.setdefault((path, name) if shared else id(obj), f"{path}.{name}")
    return sorted(found.values())


def long_modules(root: Path, package: str) -> list[str]:
    """Modules of more than MAX_MODULE_LINES lines, with their length."""
    out = []
    for path in sorted((root / package).rglob("*.py")):
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > MAX_MODULE_LINES:
            out.append(f"{path.relative_to(root).as_posix()} ({lines})")
    return out


def long_functions(root: Path, package: str) -> list[str]:
    """Functions (and methods) of more than MAX_FUNCTION_LINES lines, from ``def`` to their
    last line, docstring included."""
    out = []
    for path in sorted((root / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    where = f"{path.relative_to(root).as_posix()}:{node.lineno}"
                    out.append(f"{where} {node.name} ({lines})")
    return out


def test_at_most_35_top_level_names() -> None:
    import ctxpack

    assert len(ctxpack.__all__) <= MAX_TOP_LEVEL_NAMES, sorted(ctxpack.__all__)


def test_the_public_name_count_counts_each_object_once(api_reference: ModuleType) -> None:
    names = public_names(api_reference)
    assert "ctxpack.pack" in names and "ctxpack.GreedyPacker" in names
    # Re-exported by its package and by ctxpack: one object, one name.
    assert "ctxpack.stages.GreedyPacker" not in names
    assert "ctxpack.stages.StageModel" in names
    assert all(api_reference.is_public(name.rpartition(".")[0]) for name in names)
    assert len(names) > MAX_TOP_LEVEL_NAMES


def test_at_most_151_public_names(api_reference: ModuleType) -> None:
    names = public_names(api_reference)
    assert len(names) <= MAX_PUBLIC_NAMES, f"{len(names)} public names: {names}"


def test_no_module_over_600_lines() -> None:
    assert long_modules(ROOT, PACKAGE) == [], "split them by job"


def test_no_function_over_80_lines() -> None:
    assert long_functions(ROOT, PACKAGE) == []


def test_the_size_rules_see_long_modules_and_functions(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))
    short = "def short():\n" + body
    long = "def long():\n" + body + "    return 0\n"
    filler = "\n" * (MAX_MODULE_LINES - 2 * MAX_FUNCTION_LINES)
    root = _package(
        tmp_path,
        {"pkg/__init__.py": "", "pkg/a.py": short + long, "pkg/b.py": short + long + filler},
    )
    assert long_modules(root, "pkg") == [f"pkg/b.py ({MAX_MODULE_LINES + 1})"]
    assert long_functions(root, "pkg") == [
        f"pkg/a.py:{MAX_FUNCTION_LINES + 1} long ({MAX_FUNCTION_LINES + 1})",
        f"pkg/b.py:{MAX_FUNCTION_LINES + 1} long ({MAX_FUNCTION_LINES + 1})",
    ]
