"""Symbol units and parsed files: what every parser of :mod:`ctxpack.code.symbols` returns.

Also the one rule for ``module`` units shared by the parsers: the lines of a file outside every
symbol, cut into runs at the symbols, each run with words in it a unit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from pydantic import ConfigDict

from .._internal.options import FieldErrorModel

__all__: list[str] = []


class Symbol(FieldErrorModel):
    """One symbol unit of a source file.

    Attributes:
        path: Repository-relative path of its file.
        name: The symbol's name (``"<module>"`` for lines outside any symbol).
        kind: ``function``, ``method``, ``class``, ``interface``, ``type``, ``impl`` or
            ``module``.
        parent: The enclosing class (or impl) of a method, else ``None``.
        start_line: First line, 1-based (the comment right above a symbol is part of it).
        end_line: Last line, inclusive.
        docstring: Its docstring or leading comment, ``""`` when it has none.
        text: The source lines of the unit.
        references: Names it calls or uses as types, in source order (by where each call or use
            starts; a chained call such as ``x[f()].g()`` lists ``g`` before ``f``).
    """

    model_config = ConfigDict(frozen=True)

    path: str
    name: str
    kind: str
    parent: str | None = None
    start_line: int
    end_line: int
    docstring: str = ""
    text: str
    references: tuple[str, ...] = ()


class ParsedFile(FieldErrorModel):
    """A parsed source file: its symbol units (in line order) and the modules it imports."""

    model_config = ConfigDict(frozen=True)

    path: str
    language: str
    symbols: tuple[Symbol, ...]
    imports: tuple[str, ...] = ()

    @property
    def definitions(self) -> tuple[str, ...]:
        """Names this file defines (module units left out)."""
        return tuple(s.name for s in self.symbols if s.kind != "module")


def module_units(
    path: str,
    lines: list[str],
    covered: set[int],
    docstring: str,
    references: Callable[[int, int], tuple[str, ...]],
) -> list[Symbol]:
    """The ``module`` units of a file: runs of lines (0-based) outside ``covered``, trimmed of
    blank lines, with words in them; the first carries the module's ``docstring`` and each one
    the names ``references(first, last)`` finds on its lines."""
    units: list[Symbol] = []
    run: list[int] = []
    for n in range(len(lines) + 1):
        if n < len(lines) and n not in covered:
            run.append(n)
            continue
        while run and not lines[run[-1]].strip():
            run.pop()
        while run and not lines[run[0]].strip():
            run.pop(0)
        if run and _has_words(lines, run):
            units.append(
                Symbol(
                    path=path,
                    name="<module>",
                    kind="module",
                    start_line=run[0] + 1,
                    end_line=run[-1] + 1,
                    docstring="" if units else docstring,
                    text="\n".join(lines[run[0] : run[-1] + 1]),
                    references=references(run[0], run[-1]),
                )
            )
        run = []
    return units


def _has_words(lines: list[str], run: list[int]) -> bool:
    """Whether lines hold more than punctuation (a class's closing brace is not a unit)."""
    return any(re.search(r"\w", lines[n]) for n in run)


def unique(items: Iterable[str]) -> list[str]:
    """``items`` without repeats or empty strings, in first-seen order."""
    seen: dict[str, None] = {}
    for item in items:
        if item:
            seen.setdefault(item, None)
    return list(seen)
