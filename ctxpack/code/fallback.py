"""Parsers for when tree-sitter is missing: Python files with the standard library's ``ast``,
any other file as ``module`` units."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable

from .blocks import UNREADABLE, without_broken_blocks
from .terms import IDENTIFIER
from .units import ParsedFile, Symbol, module_units, unique

__all__: list[str] = []


def parse_python_ast(path: str, source: str) -> ParsedFile:
    try:
        tree = ast.parse(source)
    except UNREADABLE:
        # One stray bracket made the whole file a single module unit; the definitions in
        # the parts that parse are kept, the broken parts read as module text.
        tree = ast.parse(without_broken_blocks(source))
    lines = source.split("\n")
    symbols: list[Symbol] = []
    covered: set[int] = set()

    def emit(node: ast.AST, name: str, kind: str, parent: str | None, end: int) -> None:
        decorators = getattr(node, "decorator_list", [])
        start = min([node.lineno, *(d.lineno for d in decorators)]) - 1  # type: ignore[attr-defined]
        span = [n for n in range(start, end + 1) if n not in covered]
        if not span:
            return
        covered.update(span)
        text = "\n".join(lines[span[0] : span[-1] + 1])
        doc = ast.get_docstring(node) if isinstance(node, _AST_DEFS) else None
        symbols.append(
            Symbol(
                path=path,
                name=name,
                kind=kind,
                parent=parent,
                start_line=span[0] + 1,
                end_line=span[-1] + 1,
                docstring=doc or "",
                text=text,
                references=tuple(unique(_ast_calls(node))),
            )
        )

    def visit(body: list[ast.stmt], parent: str | None) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                members = [m for m in node.body if isinstance(m, _AST_DEFS)]
                if members:
                    first = min(
                        min([m.lineno, *(d.lineno for d in m.decorator_list)]) for m in members
                    )
                    emit(node, node.name, "class", parent, first - 2)
                    visit(node.body, node.name)
                else:
                    emit(node, node.name, "class", parent, (node.end_lineno or node.lineno) - 1)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                kind = "method" if parent else "function"
                emit(node, node.name, kind, parent, (node.end_lineno or node.lineno) - 1)

    visit(tree.body, None)
    imports: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            sep = "" if base.endswith(".") else "."
            imports.extend(f"{base}{sep}{alias.name}" for alias in node.names)
            if node.module:
                imports.append(base)
    doc = ast.get_docstring(tree) or ""
    module = module_units(path, lines, covered, doc, functools.partial(_calls_on, lines))
    symbols.extend(module)
    symbols.sort(key=lambda s: s.start_line)
    return ParsedFile(
        path=path, language="python", symbols=tuple(symbols), imports=tuple(unique(imports))
    )


_AST_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _ast_calls(node: ast.AST) -> Iterable[str]:
    for child in ast.walk(node):
        if isinstance(child, ast.Call):
            target = child.func
            if isinstance(target, ast.Attribute):
                yield target.attr
            elif isinstance(target, ast.Name):
                yield target.id


def parse_whole_file(path: str, language: str, source: str) -> ParsedFile:
    """Any file as ``module`` units (runs of lines with words in them), calls found by pattern."""
    lines = source.split("\n")
    units = module_units(path, lines, set(), "", functools.partial(_calls_on, lines))
    return ParsedFile(path=path, language=language, symbols=tuple(units))


_CALL = re.compile(rf"({IDENTIFIER})\s*\(")
_KEYWORDS = frozenset(
    {"if", "for", "while", "switch", "return", "print", "catch", "with", "elif", "and", "or"}
    | {"not", "in", "function", "func", "fn", "super", "assert", "except", "sizeof", "typeof"}
)


def call_names(text: str) -> Iterable[str]:
    """The names ``text`` calls, found by pattern (``name(``), keywords left out."""
    for match in _CALL.finditer(text):
        if match.group(1) not in _KEYWORDS:
            yield match.group(1)


def _calls_on(lines: list[str], first: int, last: int) -> tuple[str, ...]:
    return tuple(unique(call_names("\n".join(lines[first : last + 1]))))
