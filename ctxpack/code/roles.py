"""What a file is for: source, tests of the source, or docs and examples of it (evidence of
where the code lives).

A test file rarely holds the fix for an issue, but it names the code it exercises: its path
(``tests/test_models.py`` tests ``models.py``) and its imports point at the module under test.
Docs, examples and benchmarks use the code's names in the issue's own words, but the code they
demonstrate is the answer. :func:`is_test_path` and :func:`is_doc_path` tell them from source by
path alone, :func:`outside_packages` finds a Python tree's scripts (modules beside its packages);
:func:`tested_modules` maps each test file to the source files it tests.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__: list[str] = []

TEST_DIRS = frozenset({"test", "tests", "testing", "__tests__"})
"""Folder names whose files are tests (``__tests__``: Jest's)."""

# JUnit, NUnit, XCTest...: a class named for the class it tests, before or after the word
# ("FooTest", "FooTests", "FooIT" for an integration test, "TestFoo"). Matched on the name's
# case: "Latest" or "EDIT" names no test. Not "FooSpec": JavaPoet's TypeSpec is source.
_CAMEL_SUFFIXES = ("Tests", "Test", "IT")

DOC_DIRS = frozenset(
    {"doc", "docs", "example", "examples", "tutorial", "tutorials", "benchmark", "benchmarks"}
)
"""Folder names whose files document or demonstrate the code (docs, examples, benchmarks)."""

BUILD_FILES = frozenset({"setup.py", "conf.py", "noxfile.py"})
"""File names of the project's build and documentation tooling."""


def _stem(name: str) -> str:
    return name.rsplit(".", 1)[0]


def is_test_path(path: str) -> bool:
    """Whether a repository path is a test file: inside a test folder, or named as a test.

    Example:
        >>> is_test_path("sympy/core/tests/test_basic.py"), is_test_path("pkg/testing_utils.py")
        (True, False)
        >>> is_test_path("src/foo_test.go"), is_test_path("conftest.py")
        (True, True)
    """
    parts = path.lower().split("/")
    if any(part in TEST_DIRS for part in parts[:-1]):
        return True
    stem = _stem(parts[-1])
    return (
        stem.startswith("test_")
        or stem.endswith(("_test", "_tests"))
        or stem.endswith((".test", ".spec"))
        or stem == "conftest"
        or _camel_tested(_stem(path.rsplit("/", 1)[-1])) is not None
    )


def _camel_tested(stem: str) -> str | None:
    """The class a CamelCase test class is named for: ``FooBarTest`` -> ``FooBar``."""
    for cut in _CAMEL_SUFFIXES:
        head = stem[: -len(cut)]
        # The name before the word ends a word of its own: "FooIT", not "EDIT" or "Unit".
        if (
            stem.endswith(cut)
            and head[:1].isupper()
            and (head[-1:].islower() or head[-1:].isdigit())
        ):
            return head
    if stem.startswith("Test") and stem[4:5].isupper():
        return stem[4:]
    return None


def is_doc_path(path: str) -> bool:
    """Whether a repository path documents or demonstrates the code rather than being it: inside
    a docs, examples or benchmarks folder, or a build script (``setup.py``, Sphinx's
    ``conf.py``).

    Example:
        >>> is_doc_path("doc/en/conf.py"), is_doc_path("examples/plot_iris.py")
        (True, True)
        >>> is_doc_path("setup.py"), is_doc_path("sklearn/datasets/_base.py")
        (True, False)
    """
    parts = path.lower().split("/")
    return parts[-1] in BUILD_FILES or any(part in DOC_DIRS for part in parts[:-1])


def outside_packages(paths: Iterable[str], root: Path | None = None) -> set[str]:
    """The Python modules that sit outside every package of a tree that has packages: build and
    release scripts (``setupext.py``, ``versioneer.py``), tools and one-off scripts.

    A tree's code lives in its packages (folders with an ``__init__.py``, and the folders inside
    them) and beside its top packages in a source folder (``src/pytest.py``). A module at the
    top of the tree or in a plain folder beside the packages is run, not imported: it uses the
    code's words without being the code. A tree whose only packages are tests has no such
    split: a single-module project keeps its code at the top.

    Args:
        paths: The tree's files.
        root: The tree's folder: an ``__init__.py`` on disk but missing from ``paths`` still
            makes its folder a package (the listing leaves out a file with several hard links,
            as an unpacked archive may make of its empty ``__init__.py`` files).

    Example:
        >>> sorted(outside_packages(["src/pkg/__init__.py", "src/pkg/core.py", "src/pkg_api.py",
        ...                          "setupext.py", "tools/release.py"]))
        ['setupext.py', 'tools/release.py']
        >>> outside_packages(["six.py", "tests/__init__.py", "tests/test_six.py"])
        set()
    """
    python = [p for p in paths if p.endswith(".py")]
    folders = {p.rpartition("/")[0] for p in python}
    listed = {p.rpartition("/")[0] for p in python if p.rpartition("/")[2] == "__init__.py"}
    packages = {
        folder
        for folder in folders
        if not is_test_path(f"{folder}/__init__.py")
        and (folder in listed or (root is not None and (root / folder / "__init__.py").is_file()))
    }
    if not packages:
        return set()
    tops = {f.rpartition("/")[0] for f in packages if f.rpartition("/")[0] not in packages}
    roots = tops - {""}

    def outside(folder: str) -> bool:
        # A folder inside a package is code even without its own __init__.py: a namespace
        # package, or a tree that lost its empty __init__.py files (some source distributions).
        if folder in roots:
            return False
        while folder:
            if folder in packages:
                return False
            folder = folder.rpartition("/")[0]
        return True

    return {p for p in python if outside(p.rpartition("/")[0])}


def _tested_name(path: str) -> str | None:
    """The module name a test file's name points at: ``test_models.py`` -> ``models``,
    ``CartServiceTest.java`` -> ``cartservice``."""
    camel = _camel_tested(_stem(path.rsplit("/", 1)[-1]))
    if camel is not None:
        return camel.lower()
    stem = _stem(path.rsplit("/", 1)[-1].lower())
    if "/__tests__/" in f"/{path.lower()}":
        # Jest's folder: __tests__/cart.js (or cart.test.js) tests ../cart.js.
        return stem.removesuffix(".test").removesuffix(".spec") or None
    for cut in ("test_", "tests_"):
        if stem.startswith(cut):
            return stem[len(cut) :] or None
    for cut in ("_tests", "_test", ".test", ".spec"):
        if stem.endswith(cut):
            return stem[: -len(cut)] or None
    return None


def _shared_prefix(a: str, b: str) -> int:
    """Folders two paths share from the root."""
    n = 0
    for x, y in zip(a.split("/")[:-1], b.split("/")[:-1], strict=False):
        if x != y:
            break
        n += 1
    return n


def tested_modules(
    paths: Iterable[str], imports: Mapping[str, Iterable[str]]
) -> dict[str, dict[str, float]]:
    """For each test file, the source files it tests, each with how surely (0-1].

    A source file whose name the test's name points at (``test_models.py``, ``models_test.go``)
    is tested surely; when several files share that name, the one sharing most folders with the
    test wins. A source file the test imports is tested less surely (a test imports helpers too),
    the more so the fewer source files it imports.

    Args:
        paths: Every indexed file.
        imports: Each file's imported files (see :class:`ctxpack.code.CodeGraph`).

    Example:
        >>> tested_modules(["pkg/models.py", "pkg/tests/test_models.py"], {})
        {'pkg/tests/test_models.py': {'pkg/models.py': 1.0}}
    """
    all_paths = sorted(paths)
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in all_paths:
        if not is_test_path(path):
            name = _stem(path.rsplit("/", 1)[-1].lower())
            if name == "__init__" and "/" in path:
                name = path.rsplit("/", 2)[-2].lower()
            by_name[name].append(path)
    out: dict[str, dict[str, float]] = {}
    for test in all_paths:
        if not is_test_path(test):
            continue
        targets: dict[str, float] = {}
        sources = [p for p in imports.get(test, ()) if not is_test_path(p)]
        for source in sources:
            targets[source] = 0.5 / len(sources) ** 0.5
        tested = _tested_name(test)
        named = by_name.get(tested, []) if tested else []
        if named:
            closest = max(_shared_prefix(test, p) for p in named)
            for source in named:
                if _shared_prefix(test, source) == closest:
                    targets[source] = 1.0
        if targets:
            out[test] = targets
    return out
