"""MkDocs hook: the API reference, written from ``__all__`` at build time.

``docs/api.md`` holds the introduction and a marker line; this hook replaces the marker with the
reference itself, so the rendered page follows the code with no hand edit:

- the everyday names, ``ctxpack.__all__``, grouped by the module that defines them;
- one section per public module (every module of ``ctxpack`` whose dotted path has no part that
  starts with ``_``), with the names of that module's ``__all__`` that are not documented above;
- a module index: every public module, its summary line, and every name of its ``__all__`` linked
  to where it is documented.

Each object is documented once, at its first place in that order; every other place that exports
it links there. Private modules (``ctxpack._internal``, ``_base``) never appear, and neither does
an object they define. ``tests/test_docs.py`` checks the output covers every public name.

A module that cannot be imported (an optional dependency is missing) is read without importing
it: its ``__all__`` is taken from the source, and its names are documented in its own section.
Modules are imported once per process: under ``mkdocs serve``, a changed ``__all__`` shows after
a restart.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

PACKAGE = "ctxpack"
PAGE = "api.md"
MARKER = "<!-- api-reference: generated from __all__ by docs/_ext/api_reference.py -->"
ROOT = Path(__file__).resolve().parents[2]

# Page order, by the module that defines (or exports) a name: the prefixes are dotted module paths.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Packing", ("ctxpack.packing", "ctxpack.result")),
    ("Messages", ("ctxpack.messages",)),
    ("Pipeline and decisions", ("ctxpack.pipeline",)),
    ("Stages", ("ctxpack.stages",)),
    ("Signals", ("ctxpack.signals",)),
    ("Token counting", ("ctxpack.tokens",)),
    (
        "Providers and client wrappers",
        ("ctxpack.providers", "ctxpack.adapters", "ctxpack.sdk", "ctxpack.integrations"),
    ),
    (
        "Agent sessions",
        (
            "ctxpack.session",
            "ctxpack.filters",
            "ctxpack.store",
            "ctxpack.retrieval",
            "ctxpack.guard",
            "ctxpack.redaction",
            "ctxpack.injection",
        ),
    ),
    ("Clearing and compaction", ("ctxpack.editing",)),
    ("Selection", ("ctxpack.selection",)),
    ("Cost", ("ctxpack.cost",)),
    ("Context usage", ("ctxpack.usage", "ctxpack.plot")),
    ("Code retrieval", ("ctxpack.code",)),
    ("Caches", ("ctxpack.caches",)),
    ("Errors", ("ctxpack.errors",)),
    ("Testing a stage", ("ctxpack.testing",)),
    ("Command line", ("ctxpack.cli",)),
)
OTHER = "Other"

# Within a group, these names lead when ``ctxpack.__all__`` has them (the stages in the order
# default_pipeline() runs them); the rest follow in the order their module defines them.
LEADING: tuple[str, ...] = (
    "pack", "PackResult", "default_pipeline", "Message", "ToolCall", "FunctionCall",
    "Pipeline", "Stage", "PackContext", "Decision", "DecisionLog",
    "PromptComposer", "MemorySelector", "Deduplicator", "CitationInheritor", "RelevanceScorer",
    "SemanticScorer", "ExtractiveCompressor", "GreedyPacker", "TurnAlternator",
    "count_tokens", "get_counter", "TokenCounter",
    "to_openai", "from_openai", "to_anthropic", "from_anthropic", "wrap_openai", "wrap_anthropic",
    "Session", "simulate", "context_usage", "CtxpackError",
)  # fmt: skip

_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")


@dataclass
class Module:
    """One public module: its dotted path, summary line, and ``__all__``."""

    path: str
    summary: str
    names: list[str]
    module: ModuleType | None  # None when it could not be imported
    documented: list[str] = field(default_factory=list)  # identifiers rendered in its section


@dataclass
class Reference:
    """The reference as data: which identifier documents each exported name."""

    everyday: list[tuple[str, list[str]]]  # (group title, names of ctxpack.__all__)
    modules: list[Module]
    # (module path, name) -> where it is documented: "#identifier" on this page, or
    # "page.md#identifier" on a guide that renders it
    where: dict[tuple[str, str], str]

    def local(self, module: str, name: str) -> bool:
        """Whether ``module.name`` is rendered on this page (not linked to a guide)."""
        return self.where[(module, name)].startswith("#")

    def link(self, module: str, name: str) -> str:
        """A Markdown link from the name to where it is documented."""
        return f"[`{name}`]({self.where[(module, name)]})"

    def rendered(self) -> list[str]:
        """Every identifier rendered with ``:::`` on this page, in page order."""
        out = [
            self.where[(PACKAGE, n)][1:]
            for _, names in self.everyday
            for n in names
            if self.local(PACKAGE, n)
        ]
        return out + [identifier for m in self.modules for identifier in m.documented]


def is_public(path: str) -> bool:
    """Whether a dotted module path is public: no part of it starts with an underscore."""
    return not any(part.startswith("_") for part in path.split("."))


def _group_index(module_path: str) -> int:
    for index, (_, prefixes) in enumerate(GROUPS):
        if any(module_path == p or module_path.startswith(p + ".") for p in prefixes):
            return index
    return len(GROUPS)


def _defining_module(obj: Any, fallback: str) -> str:
    name = getattr(obj, "__module__", None)
    return name if isinstance(name, str) else fallback


def _source_line(obj: Any) -> int:
    try:
        return inspect.getsourcelines(obj)[1]
    except (TypeError, OSError):
        return 1 << 30


def _summary(doc: str | None) -> str:
    """The first paragraph of a docstring, on one line, safe inside a Markdown table cell."""
    paragraph = (doc or "").strip().split("\n\n")[0]
    text = " ".join(paragraph.split())
    text = _ROLE.sub(r"`\1`", text).replace("``", "`")
    return text.replace("|", "\\|")


def _static_all(path: Path) -> list[str]:
    """A module's ``__all__`` read from its source, for a module that cannot be imported."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return [str(name) for name in ast.literal_eval(value)]
    raise ValueError(f"{path} has no __all__")


def _import_package(root: Path) -> ModuleType:
    """Import ctxpack from the project being built, not from another copy on the path."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    package = importlib.import_module(PACKAGE)
    where = Path(package.__file__ or "").resolve().parent
    if where != root / PACKAGE:
        raise RuntimeError(
            f"the API reference would describe {where}, not {root / PACKAGE}: another copy of "
            f"{PACKAGE} was imported first; build from the project root with it first on "
            "PYTHONPATH"
        )
    return package


def public_modules(package: ModuleType) -> list[Module]:
    """Every public module of the package, with its ``__all__``.

    Raises:
        ValueError: a public module has no ``__all__`` (its public names would be a guess).
    """
    modules: list[Module] = []
    infos = pkgutil.walk_packages(package.__path__, package.__name__ + ".")
    for path in sorted(info.name for info in infos if is_public(info.name)):
        try:
            module: ModuleType | None = importlib.import_module(path)
        except ImportError:
            module = None
        if module is not None:
            names = getattr(module, "__all__", None)
            if names is None:
                raise ValueError(f"{path} has no __all__: add one (an empty list if need be)")
            doc = module.__doc__
        else:
            parts = path.split(".")
            file = Path(package.__path__[0]).joinpath(*parts[1:])
            file = file / "__init__.py" if file.is_dir() else file.with_suffix(".py")
            names = _static_all(file)
            doc = ast.get_docstring(ast.parse(file.read_text(encoding="utf-8")))
        modules.append(Module(path, _summary(doc), list(names), module))
    modules.sort(key=lambda m: (_group_index(m.path), m.path))
    return modules


_BLOCK = re.compile(r"^::: (\S+)\s*$", re.MULTILINE)


def _resolve(identifier: str) -> Any:
    """The object a ``:::`` identifier names: its longest importable prefix, then attributes."""
    parts = identifier.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            obj = getattr(obj, attribute)
        return obj
    raise ImportError(f"cannot import any prefix of {identifier}")


def documented_elsewhere(docs: Path) -> dict[str, str]:
    """The ``:::`` blocks of the other pages: identifier -> page (relative to the docs folder).

    A guide that renders an object is where it is documented; the reference links there rather
    than render it twice (two renderings of one object are two primary anchors, which autorefs
    rejects).
    """
    found: dict[str, str] = {}
    for page in sorted(docs.rglob("*.md")):
        relative = page.relative_to(docs).as_posix()
        if relative == PAGE or relative.startswith("_"):
            continue
        for identifier in _BLOCK.findall(page.read_text(encoding="utf-8")):
            found.setdefault(identifier, relative)
    return found


def build(root: Path = ROOT) -> Reference:
    """Work out where each public name is documented."""
    package = _import_package(root)
    seen: dict[int, str] = {}  # id(object) -> the link to where it is documented
    for identifier, page in documented_elsewhere(root / "docs").items():
        try:
            obj = _resolve(identifier)
        except (ImportError, AttributeError):
            continue
        seen.setdefault(id(obj), f"{page}#{identifier}")
    where: dict[tuple[str, str], str] = {}
    modules = public_modules(package)
    submodules = {module.path for module in modules}

    def place(module_path: str, name: str, obj: Any) -> str | None:
        """Record where ``module_path.name`` is documented; its identifier if rendered here."""
        identifier = f"{module_path}.{name}"
        if identifier in submodules and not isinstance(obj, ModuleType):
            # The name shadows a submodule (``ctxpack.code.grep``, the function and the module):
            # griffe would render the module, so name the object by where it is defined.
            identifier = f"{obj.__module__}.{obj.__qualname__}"
        if _defining_module(obj, module_path).startswith(f"{PACKAGE}._internal"):
            raise ValueError(f"{identifier} is defined in {PACKAGE}._internal, not public")
        # Small ints, booleans and None are shared objects: never one name's documentation.
        shared = obj is None or isinstance(obj, (bool, int))
        if not shared and id(obj) in seen:
            where[(module_path, name)] = seen[id(obj)]
            return None
        if not shared:
            seen[id(obj)] = f"#{identifier}"
        where[(module_path, name)] = f"#{identifier}"
        return identifier

    grouped: dict[int, list[tuple[int, str, int, str]]] = {}
    for name in package.__all__:
        obj = getattr(package, name)
        defined_in = _defining_module(obj, PACKAGE)
        place(PACKAGE, name, obj)
        lead = LEADING.index(name) if name in LEADING else len(LEADING)
        key = (lead, defined_in, _source_line(obj), name)
        grouped.setdefault(_group_index(defined_in), []).append(key)
    titles = [title for title, _ in GROUPS] + [OTHER]
    everyday = [
        (titles[index], [key[-1] for key in sorted(keys)])
        for index, keys in sorted(grouped.items())
    ]

    for module in modules:
        for name in module.names:
            if module.module is None:
                module.documented.append(f"{module.path}.{name}")
                where[(module.path, name)] = f"#{module.path}.{name}"
            elif (rendered := place(module.path, name, getattr(module.module, name))) is not None:
                module.documented.append(rendered)
    return Reference(everyday, modules, where)


def _block(identifier: str, level: int) -> str:
    return f"::: {identifier}\n    options:\n      heading_level: {level}\n"


def render(reference: Reference) -> str:
    """The Markdown of the reference: ``:::`` blocks for mkdocstrings, and the module index."""
    out: list[str] = []
    for title, names in reference.everyday:
        out.append(f"## {title}\n")
        here = [name for name in names if reference.local(PACKAGE, name)]
        away = [name for name in names if name not in here]
        out += [_block(reference.where[(PACKAGE, name)][1:], 3) for name in here]
        if away:
            links = ", ".join(reference.link(PACKAGE, name) for name in away)
            out.append(f"Documented in a guide: {links}.\n")

    out.append("## Advanced names, by module\n")
    out.append(
        f"Not in `{PACKAGE}.__all__`: import each from its module, for example "
        "`from ctxpack.pipeline import PackContext`. A module's names documented elsewhere are "
        "listed in the [module index](#module-index).\n"
    )
    for module in reference.modules:
        if not module.documented:
            continue
        out.append(f"### `{module.path}` {{#module-{module.path}}}\n")
        if module.summary:
            out.append(f"{module.summary}\n")
        out += [_block(identifier, 4) for identifier in module.documented]

    out.append("## Module index\n")
    out.append(
        "Every public module, and every name of its `__all__`, linked to where it is "
        f"documented. Modules under `{PACKAGE}._internal` (and `_`-prefixed ones) are private "
        "and may change without notice.\n"
    )
    out.append("| Module | What it holds | Names |")
    out.append("| --- | --- | --- |")
    for module in reference.modules:
        links = ", ".join(reference.link(module.path, name) for name in module.names)
        title = f"`{module.path}`"
        if module.documented:
            title = f"[{title}](#module-{module.path})"
        out.append(f"| {title} | {module.summary} | {links or '(its modules)'} |")
    return "\n".join(out) + "\n"


def generate(root: Path = ROOT) -> str:
    """The generated part of the API reference page."""
    return render(build(root))


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs event: put the generated reference in place of the marker on the API page."""
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"docs/{PAGE} lost its marker line: {MARKER}")
    root = Path(config["config_file_path"]).resolve().parent
    return markdown.replace(MARKER, generate(root))
