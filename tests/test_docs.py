"""The documentation's examples run: every ```python block of README.md and docs/, and the
doctests of every ctxpack module.

Blocks of one file run in order and share one namespace, like a reader going down the page, in a
fresh interpreter of their own: a block passes because of what its page does, never because
another test imported something first. A block preceded by an ``<!-- skip -->`` line (blank lines
allowed in between) is not run. A ```text block right after a ```python block (blank lines
allowed in between) is what that block prints, and is compared with it (``...`` in it matches
anything, as in doctests).
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import json
import os
import pkgutil
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

import ctxpack

from .helpers import api_reference_generator

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")
_SKIP = "<!-- skip -->"


@dataclass(frozen=True)
class Example:
    """A runnable ```python block: its first code line number, its code, and the output shown
    for it (the ```text block right after it), if any."""

    line: int
    code: str
    output: str | None = None


def doc_examples(text: str) -> list[Example]:
    """The runnable ```python blocks of a Markdown text, with the output shown for each."""
    lines = text.splitlines()
    blocks: list[tuple[str, int, int, int, bool]] = []  # language, fence, start, end, skipped
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        fence = match["fence"]
        language = (match["info"].split() or [""])[0].lower()
        start = i + 1
        end = start
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        previous = next((line.strip() for line in reversed(lines[:i]) if line.strip()), "")
        blocks.append((language, i, start, end, previous == _SKIP))
        i = end + 1

    def body(fence: int, start: int, end: int) -> str:
        indent = _FENCE.match(lines[fence])["indent"]  # type: ignore[index]
        return "\n".join(line.removeprefix(indent) for line in lines[start:end])

    examples: list[Example] = []
    for n, (language, fence, start, end, skipped) in enumerate(blocks):
        if language not in ("python", "py") or skipped:
            continue
        output = None
        if n + 1 < len(blocks):
            next_language, next_fence, next_start, next_end, _ = blocks[n + 1]
            between = lines[end + 1 : next_fence]
            if next_language == "text" and not any(line.strip() for line in between):
                output = body(next_fence, next_start, next_end) + "\n"
        examples.append(Example(start + 1, body(fence, start, end), output))
    return examples


def python_blocks(text: str) -> list[tuple[int, str]]:
    """The runnable ```python blocks of a Markdown text, as (first code line number, code)."""
    return [(example.line, example.code) for example in doc_examples(text)]


def test_the_block_finder_sees_fences_and_skip_markers() -> None:
    text = "\n".join(
        [
            "# Title",
            "```python",
            "x = 1",
            "```",
            "<!-- skip -->",
            "",
            "```python",
            "raise SystemExit",
            "```",
            "```bash",
            "ls",
            "```",
            "````python",
            "y = '```'",
            "````",
        ]
    )
    assert python_blocks(text) == [(3, "x = 1"), (14, "y = '```'")]


def test_the_output_shown_is_the_text_block_right_after() -> None:
    text = "\n".join(
        [
            "```python",
            "print(1)",
            "```",
            "",
            "```text",
            "1",
            "```",
            "```python",
            "x = 2",
            "```",
            "Some prose.",
            "```text",
            "not an output",
            "```",
        ]
    )
    assert doc_examples(text) == [Example(2, "print(1)", "1\n"), Example(9, "x = 2", None)]


# Runs one page's blocks in order in one namespace, in the interpreter it is given to; reads
# [{"file", "line", "code"}...] on stdin, writes [{"output", "error"}...] to the file argv[1].
_RUNNER = """
import contextlib, io, json, sys, traceback
examples = json.load(sys.stdin)
namespace = {"__name__": sys.argv[2]}
results = []
for example in examples:
    padded = "\\n" * (example["line"] - 1) + example["code"]
    out = io.StringIO()
    error = None
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(padded, example["file"], "exec"), namespace)
    except BaseException as exc:
        error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    results.append({"output": out.getvalue(), "error": error})
    if error is not None:
        break
with open(sys.argv[1], "w", encoding="utf-8") as fh:
    json.dump(results, fh)
"""


def _matches(expected: str, got: str) -> bool:
    checker = doctest.OutputChecker()
    strip = "\n".join(line.rstrip() for line in got.splitlines()) + "\n"
    return checker.check_output(expected, strip, doctest.ELLIPSIS)


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_run(path: Path, tmp_path: Path) -> None:
    relative = path.relative_to(ROOT)
    examples = doc_examples(path.read_text(encoding="utf-8"))
    if not examples:
        return
    # Examples that write files write them in a scratch folder.
    work = tmp_path / "work"
    work.mkdir()
    results_file = tmp_path / "results.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    payload = [{"file": str(relative), "line": e.line, "code": e.code} for e in examples]
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(results_file), f"docs_{path.stem}"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
        timeout=900,
        check=False,
    )
    assert results_file.exists(), f"{relative}: the interpreter died\n{proc.stderr[-3000:]}"
    results = json.loads(results_file.read_text(encoding="utf-8"))
    for example, result in zip(examples, results, strict=False):
        where = f"{relative}, block at line {example.line}"
        if result["error"] is not None:
            pytest.fail(f"{where}: {result['error']}")
        if example.output is not None and not _matches(example.output, result["output"]):
            pytest.fail(f"{where} prints\n{result['output']}\nbut the page shows\n{example.output}")


def _ctxpack_modules() -> list[str]:
    names = ["ctxpack"]
    for info in pkgutil.walk_packages(ctxpack.__path__, prefix="ctxpack."):
        # ``python -m ctxpack`` runs the command line on import.
        if info.name.rsplit(".", 1)[-1] != "__main__":
            names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("module_name", _ctxpack_modules())
def test_doctests(module_name: str) -> None:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and not exc.name.startswith("ctxpack"):
            pytest.skip(f"{module_name} needs the optional package {exc.name!r}")
        raise
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    for test in finder.find(module, module_name):
        runner.run(test, out=report.append)
    results = runner.summarize(verbose=False)
    assert results.failed == 0, "".join(report)


def _normalise(text: str) -> str:
    return " ".join(text.replace("`", "").split()).casefold()


def promise_quote(path: Path) -> str:
    """The block quote of the ``## The promise`` section of a Markdown file."""
    text = path.read_text(encoding="utf-8")
    section = text.split("## The promise", 1)[1].split("\n## ", 1)[0]
    quote = [line[1:] for line in section.splitlines() if line.startswith(">")]
    assert quote, f"{path.relative_to(ROOT)}: no block quote in 'The promise'"
    return _normalise(" ".join(quote))


@pytest.mark.parametrize(
    ("page", "module_name", "attribute"),
    [
        ("README.md", "ctxpack.packing", "pack"),
        ("docs/concepts.md", "ctxpack.packing", "pack"),
        ("docs/stages/pack.md", "ctxpack.stages._pack", None),
    ],
)
def test_the_quoted_promise_is_the_docstring_one(
    page: str, module_name: str, attribute: str | None
) -> None:
    module = importlib.import_module(module_name)
    documented = getattr(module, attribute) if attribute else module
    assert promise_quote(ROOT / page) in _normalise(documented.__doc__ or "")


def test_the_api_reference_page_is_generated_when_the_site_is_built() -> None:
    generator = api_reference_generator()
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    assert generator.MARKER in page
    assert not re.findall(r"^:::", page, re.MULTILINE), "docs/api.md lists names by hand"
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert re.search(r"^hooks:\n\s+- docs/_ext/api_reference\.py$", config, re.MULTILINE)


def test_the_api_reference_documents_every_public_name() -> None:
    """Every name of every public module's ``__all__`` is rendered on the API page or on the
    guide the reference links to, as the same object."""
    generator = api_reference_generator()
    reference = generator.build(ROOT)
    text = generator.render(reference)
    blocks = {"": re.findall(r"^::: (\S+)$", text, re.MULTILINE)}
    for page in (ROOT / "docs").rglob("*.md"):
        found = re.findall(r"^::: (\S+)\s*$", page.read_text(encoding="utf-8"), re.MULTILINE)
        blocks[page.relative_to(ROOT / "docs").as_posix()] = found
    assert len(blocks[""]) == len(set(blocks[""])), "an identifier is rendered twice"

    rows = {
        match["module"]: match["names"]
        for match in re.finditer(r"^\| \[?`(?P<module>[\w.]+)`.*\| (?P<names>.*) \|$", text, re.M)
    }
    submodules = sorted(
        info.name
        for info in pkgutil.walk_packages(ctxpack.__path__, "ctxpack.")
        if not any(part.startswith("_") for part in info.name.split("."))
    )
    assert sorted(rows) == submodules
    for module_name in ["ctxpack", *submodules]:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            target = reference.where[(module_name, name)]
            page, _, identifier = target.partition("#")
            assert identifier in blocks[page], f"{module_name}.{name}: no ::: {identifier}"
            obj = getattr(module, name)
            if not (obj is None or isinstance(obj, (bool, int))):
                assert generator._resolve(identifier) is obj, f"{module_name}.{name}"
            if module_name != "ctxpack":
                assert f"[`{name}`]({target})" in rows[module_name]
    # The everyday names have their own sections, before the advanced ones.
    everyday = [name for _, names in reference.everyday for name in names]
    assert sorted(everyday) == sorted(ctxpack.__all__)


def test_a_module_that_cannot_be_imported_is_read_from_its_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Without langchain, ctxpack.integrations.langchain_agent raises ImportError on import; the
    # reference still lists its __all__, read from the source.
    generator = api_reference_generator()
    real_import = importlib.import_module
    missing = "ctxpack.integrations.langchain_agent"

    def import_module(name: str, package: str | None = None) -> ModuleType:
        if name == missing:
            raise ImportError("No module named 'langchain'")
        return real_import(name, package)

    monkeypatch.setattr(generator.importlib, "import_module", import_module)
    reference = generator.build(ROOT)
    (module,) = [m for m in reference.modules if m.path == missing]
    assert module.module is None
    assert module.documented == [f"{missing}.PackingMiddleware", f"{missing}.SessionMiddleware"]
    assert module.summary.startswith("LangChain v1 agent middleware")
    assert f"::: {missing}.SessionMiddleware" in generator.render(reference)
