"""The ``message`` signal: an issue quotes a message (an error, a warning, a log line) that a
file's string literals hold.

An issue's traceback ends with the error it hit, in the words of the code that raised it:
``ValueError: TimeSeries object is invalid - expected 'time' as the first column`` comes from
``f"{name} object is invalid - expected '{required}' as the first column..."``. Each string
literal is cut at its placeholders (``{...}``, ``%s``) into fixed pieces, and every run of
:data:`GRAM` words of a piece is looked up among the runs of words of the query. A run that
several files hold says less: it counts 1 / (number of files holding it), and runs held by more
than :data:`_MAX_HOLDERS` files are ignored (``"is not a"`` names nothing). Test files are left
out: they quote the messages of the code they check (``pytest.raises(match=...)``), and that
code is what raises them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._symbols import ParsedFile
from .roles import is_test_path

__all__: list[str] = []

GRAM = 4
"""Words in a run: fewer match prose by chance, more miss messages with values in them."""

_MAX_HOLDERS = 5
_TRIPLE = re.compile(r'("""|\'\'\')[\s\S]*?\1')
_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"|\'((?:[^\'\\\n]|\\.)*)\'')
_PLACEHOLDER = re.compile(r"\{[^{}]*\}|%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]")
_WORD = re.compile(r"[A-Za-z0-9_]+")


def _grams(words: Sequence[str]) -> Iterable[tuple[str, ...]]:
    for i in range(len(words) - GRAM + 1):
        yield tuple(words[i : i + GRAM])


def literal_grams(source: str) -> set[tuple[str, ...]]:
    """The runs of words of the fixed pieces of ``source``'s one-line string literals
    (docstrings and other triple-quoted strings left out: they are prose, not messages).

    Example:
        >>> sorted(literal_grams('raise ValueError(f"expected {n} columns but found none here")'))
        [('but', 'found', 'none', 'here'), ('columns', 'but', 'found', 'none')]
    """
    out: set[tuple[str, ...]] = set()
    for match in _STRING.finditer(_TRIPLE.sub("", source)):
        literal = match.group(1) if match.group(1) is not None else match.group(2)
        for piece in _PLACEHOLDER.split(literal):
            out.update(_grams([w.lower() for w in _WORD.findall(piece)]))
    return out


def file_grams(parsed: ParsedFile) -> str:
    """The runs of words of the string literals of a file's units (see :func:`literal_grams`),
    sorted, one a line, words joined by a space: what :class:`LiteralIndex` reads of it (a
    file's index row keeps it, so that a later process does not scan every literal again).

    Example:
        >>> from ctxpack.code._symbols import parse_source
        >>> print(file_grams(parse_source("a.py", "python", 'x = "one two three four five"')))
        one two three four
        two three four five
    """
    grams: set[tuple[str, ...]] = set()
    for unit in parsed.symbols:
        grams |= literal_grams(unit.text)
    return "\n".join(sorted(" ".join(gram) for gram in grams))


class LiteralIndex:
    """The string-literal runs of a set of files (test files left out), looked up from a query.

    Args:
        paths: The files (their order is the order of the array returned).
        grams: Each file's runs of words (see :func:`file_grams`).
    """

    def __init__(self, paths: Sequence[str], grams: Mapping[str, str]) -> None:
        self._size = len(paths)
        holders: dict[str, list[int]] = {}
        for i, path in enumerate(paths):
            if is_test_path(path) or not grams[path]:
                continue
            for gram in grams[path].split("\n"):
                holders.setdefault(gram, []).append(i)
        self._holders = {g: h for g, h in holders.items() if len(h) <= _MAX_HOLDERS}

    def matches(self, query: str) -> Any:
        """Per file, the query's runs of words its literals hold, each shared among the files
        holding it (not normalised)."""
        import numpy as np

        out = np.zeros(self._size)
        words = [w.lower() for w in _WORD.findall(query)]
        for gram in dict.fromkeys(_grams(words)):
            files = self._holders.get(" ".join(gram))
            if files:
                out[files] += 1.0 / len(files)
        return out
