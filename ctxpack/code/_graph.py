"""The import/call graph of a repository: who imports whom, who calls what is defined where.

Imports are resolved to repository files by path suffix (Python modules and relative imports,
JavaScript/TypeScript relative specifiers, Go package folders, Rust ``mod``/``use`` paths, Java
classes); a call or type use of a name links the caller's file to the files defining that name,
weighed down when many files define it (``__init__``, ``get``).
"""

from __future__ import annotations

import math
import posixpath
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._symbols import ParsedFile

__all__ = ["CodeGraph", "personalised_pagerank", "resolve_import"]

_JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
# A name defined in more files than this says nothing about which one a call means.
_MAX_DEFINERS = 4


class _Suffixes:
    """Repository files by every path suffix (``a/b/c.py`` under ``c.py``, ``b/c.py``...)."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.by_suffix: dict[str, list[str]] = defaultdict(list)
        self.by_folder: dict[str, list[str]] = defaultdict(list)
        self.paths = set()
        for path in paths:
            self.paths.add(path)
            parts = path.split("/")
            for i in range(len(parts)):
                self.by_suffix["/".join(parts[i:])].append(path)
            folder = parts[:-1]
            for i in range(len(folder)):
                self.by_folder["/".join(folder[i:])].append(path)

    def exact(self, candidates: Iterable[str]) -> list[str]:
        return [c for c in candidates if c in self.paths]

    def ending(self, candidates: Iterable[str]) -> list[str]:
        for candidate in candidates:
            found = self.by_suffix.get(candidate)
            if found:
                return found
        return []


def resolve_import(importer: ParsedFile, spec: str, files: _Suffixes) -> list[str]:
    """The repository files an import statement of ``importer`` refers to (none for packages
    from outside the repository)."""
    language = importer.language
    here = posixpath.dirname(importer.path)
    if language == "python":
        return _python(here, spec, files)
    if language in ("javascript", "typescript", "tsx"):
        if not spec.startswith("."):
            return []
        base = posixpath.normpath(posixpath.join(here, spec))
        candidates = [base] + [base + ext for ext in _JS_EXTENSIONS]
        candidates += [f"{base}/index{ext}" for ext in _JS_EXTENSIONS]
        # TypeScript sources import "./x.js" meaning "./x.ts".
        stem, ext = posixpath.splitext(base)
        if ext in (".js", ".mjs", ".cjs"):
            candidates += [stem + ".ts", stem + ".tsx"]
        return files.exact(candidates)[:1]
    if language == "go":
        parts = spec.split("/")
        for i in range(max(0, len(parts) - 3), len(parts)):
            found = files.by_folder.get("/".join(parts[i:]))
            if found:
                return [
                    f
                    for f in found
                    if f.endswith(".go") and "/" + "/".join(parts[i:]) + "/" in "/" + f
                ]
        return []
    if language == "rust":
        return _rust(importer.path, spec, files)
    if language == "java":
        parts = spec.split(".")
        if parts[-1] == "*":
            folder = "/".join(parts[:-1])
            return [
                f for f in files.by_folder.get(folder, []) if posixpath.dirname(f).endswith(folder)
            ]
        return _longest_module(files, parts, (".java",))
    return []


def _python(here: str, spec: str, files: _Suffixes) -> list[str]:
    level = len(spec) - len(spec.lstrip("."))
    parts = [p for p in spec.lstrip(".").split(".") if p]
    if level:
        base = here
        for _ in range(level - 1):
            base = posixpath.dirname(base)
        for i in range(len(parts), -1, -1):
            stem = "/".join([base, *parts[:i]]) if base else "/".join(parts[:i])
            found = files.exact([stem + ".py", stem + "/__init__.py"]) if stem else []
            if found:
                return found[:1]
        return []
    return _longest_module(files, parts, (".py", "/__init__.py"))


def _rust(path: str, spec: str, files: _Suffixes) -> list[str]:
    spec = spec.split("::{", 1)[0].split(" as ", 1)[0]
    parts = [p for p in spec.split("::") if p and p != "*"]
    if not parts:
        return []
    here = posixpath.dirname(path)
    name = posixpath.basename(path)
    if parts[0] == "self":
        base = (
            here
            if name in ("lib.rs", "main.rs", "mod.rs")
            else posixpath.join(here, name[: -len(".rs")])
        )
        parts = parts[1:]
        for i in range(len(parts), 0, -1):
            stem = posixpath.join(base, *parts[:i])
            found = files.exact([stem + ".rs", stem + "/mod.rs"])
            if found:
                return found[:1]
        return []
    if parts[0] in ("crate", "super"):
        parts = parts[1:]
    return _longest_module(files, parts, (".rs", "/mod.rs"))


def _longest_module(files: _Suffixes, parts: list[str], suffixes: tuple[str, ...]) -> list[str]:
    """The file a dotted module path names: its longest leading part (the rest being names
    inside the module) that some file's path ends with, plus one of ``suffixes``."""
    for i in range(len(parts), 0, -1):
        stem = "/".join(parts[:i])
        found = files.ending([stem + suffix for suffix in suffixes])
        if found:
            return found[:1]
    return []


class CodeGraph:
    """File-to-file links from imports and from calls to definitions.

    Args:
        parsed: Every parsed file of the repository, by path.
    """

    def __init__(self, parsed: Mapping[str, ParsedFile]) -> None:
        files = _Suffixes(parsed)
        self.definers: dict[str, set[str]] = defaultdict(set)
        for path, pf in parsed.items():
            for name in pf.definitions:
                self.definers[name].add(path)
        self.imports: dict[str, set[str]] = {}
        self.calls: dict[str, dict[str, float]] = {}
        for path, pf in parsed.items():
            targets: set[str] = set()
            for spec in pf.imports:
                targets.update(resolve_import(pf, spec, files))
            targets.discard(path)
            self.imports[path] = targets
            weights: dict[str, float] = defaultdict(float)
            for symbol in pf.symbols:
                for name in symbol.references:
                    definers = self.definers.get(name)
                    if not definers or len(definers) > _MAX_DEFINERS or path in definers:
                        continue
                    for target in definers:
                        weights[target] += 1.0 / len(definers)
            self.calls[path] = dict(weights)
        self.importers: dict[str, set[str]] = defaultdict(set)
        self.callers: dict[str, dict[str, float]] = defaultdict(dict)
        for path, targets in self.imports.items():
            for target in targets:
                self.importers[target].add(path)
        for path, weights in self.calls.items():
            for target, weight in weights.items():
                self.callers[target][path] = weight
        # Plain dicts once built: a caller reading index.graph.definers["name"] of a name no
        # file defines inserted it, an empty set the index's own lookups then found.
        self.definers, self.importers = dict(self.definers), dict(self.importers)
        self.callers = dict(self.callers)

    def neighbours(self, path: str) -> dict[str, float]:
        """Files linked to ``path`` either way, weighted in [0, 1] (imports weigh most, calls
        half their share of the strongest call link)."""
        out: dict[str, float] = {}
        links: dict[str, float] = defaultdict(float)
        for target, weight in self.calls.get(path, {}).items():
            links[target] += weight
        for source, weight in self.callers.get(path, {}).items():
            links[source] += weight
        top = max(links.values(), default=0.0)
        for other, weight in links.items():
            out[other] = 0.5 * weight / top if top else 0.0
        # A module everything imports (compat, utils) is near everything, so says little: an
        # import link weighs 1 / sqrt(number of importers), and 1 / sqrt(number of imports) seen
        # from the imported side.
        for other in self.imports.get(path, ()):
            share = 1.0 / math.sqrt(len(self.importers[other]))
            out[other] = max(out.get(other, 0.0), share)
        for other in self.importers.get(path, ()):
            share = 0.5 / math.sqrt(len(self.imports[other]))
            out[other] = max(out.get(other, 0.0), share)
        out.pop(path, None)
        return out

    def edge_arrays(self, paths: Sequence[str]) -> tuple[Any, Any, Any]:
        """The links from a file to what it imports and calls, as arrays of source and target
        positions in ``paths`` and the share of the source's weight each link carries."""
        return _edges(self, {p: i for i, p in enumerate(paths)})


_PAGERANK_STEPS = 20
_PAGERANK_DAMPING = 0.85


def personalised_pagerank(edges: tuple[Any, Any, Any], start: Any) -> Any:
    """PageRank over ``edges`` (from :meth:`CodeGraph.edge_arrays`) that restarts at ``start``
    (non-negative weights per file): how much of the walk ends at each file. All zeros when
    ``start`` is all zeros or there are no edges."""
    import numpy as np

    src, dst, share = edges
    total = float(start.sum())
    if not len(src) or total <= 0:
        return np.zeros(len(start))
    start = start / total
    rank = start.copy()
    for _ in range(_PAGERANK_STEPS):
        flow = np.zeros(len(start))
        np.add.at(flow, dst, rank[src] * share)
        rank = (1 - _PAGERANK_DAMPING) * start + _PAGERANK_DAMPING * flow
    return rank


def _edges(graph: CodeGraph, position: Mapping[str, int]) -> tuple[Any, Any, Any]:
    """The graph's links from a file to what it imports and calls, as arrays of source, target
    and the share of the source's weight each link carries."""
    import numpy as np

    out: dict[tuple[int, int], float] = {}
    for path, targets in graph.imports.items():
        for target in targets:
            out[position[path], position[target]] = 1.0
    for path, weights in graph.calls.items():
        for target, weight in weights.items():
            key = (position[path], position[target])
            out[key] = out.get(key, 0.0) + weight
    pairs = sorted(out)
    src = np.array([a for a, _ in pairs], dtype=np.int64)
    dst = np.array([b for _, b in pairs], dtype=np.int64)
    strength = np.array([out[k] for k in pairs], dtype=float)
    total = np.zeros(len(position))
    np.add.at(total, src, strength)
    share = strength / total[src] if len(pairs) else strength
    return src, dst, share
