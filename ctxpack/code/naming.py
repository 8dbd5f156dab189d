"""How a query names files: by path, dotted module or file name (a *mention*), or by a function,
class or ``Class.member`` a file defines (a *definition*)."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ._symbols import ParsedFile
from .terms import IDENTIFIER, identifiers

__all__: list[str] = []


class QueryNames:
    """The names of a set of files, looked up from a query's words.

    Args:
        paths: The files, repository-relative (their order is the order of the arrays returned).
        parsed: Each file's parsed form.
        definers: Each defined name's files (see :attr:`CodeGraph.definers`).
    """

    def __init__(
        self,
        paths: Sequence[str],
        parsed: Mapping[str, ParsedFile],
        definers: Mapping[str, set[str]],
    ) -> None:
        self._paths = list(paths)
        self._position = {p: i for i, p in enumerate(self._paths)}
        self._definers = definers
        # Where each method is defined, by its class: ``Expression.compile`` in a query names
        # one file where ``compile`` alone names dozens.
        self._members: dict[str, set[str]] = {}
        for path in self._paths:
            for unit in parsed[path].symbols:
                if unit.parent:
                    self._members.setdefault(f"{unit.parent}.{unit.name}", set()).add(path)
        # Every way a query can name a file, looked up by the path-like pieces of the query.
        self._named_by: dict[str, list[tuple[int, float]]] = {}
        names = _mention_names(self._paths)
        for i, path in enumerate(self._paths):
            for name, strength in names[path]:
                self._named_by.setdefault(name, []).append((i, strength))

    def mentions(self, query: str) -> Any:
        """Per file, how surely the query names it (1 for its path, less for a bare file name
        that several files share; 0 when not named)."""
        import numpy as np

        out = np.zeros(len(self._paths))
        for name in _pieces(query) & self._named_by.keys():
            for i, strength in self._named_by[name]:
                out[i] = max(out[i], strength)
        return out

    def definitions(self, query: str) -> Any:
        """Per file, the names the query uses that the file defines, each name shared among the
        files that define it (not normalised)."""
        import numpy as np

        out = np.zeros(len(self._paths))
        position = self._position
        # Each name once, in the query's order (a set's order would follow the hash seed, and
        # with it the floating-point sum below).
        for name in dict.fromkeys(identifiers(query)):
            # Short or plain words ("get", "data") are prose as often as code.
            if len(name) < 4 or (name.islower() and "_" not in name):
                continue
            definers = self._definers.get(name)
            if not definers:
                continue
            for path in definers:
                out[position[path]] += 1.0 / len(definers)
        for name in dict.fromkeys(_QUALIFIED.findall(query)):
            for pair in _member_pairs(name):
                members = self._members.get(pair)
                if members:
                    for path in members:
                        out[position[path]] += 1.0 / len(members)
        return out


# Tried only where a word starts, skipping the word characters a name cannot start with: from
# every position of a long word, a failed try would read the rest of it again, in time that grows
# with the square of its length. The names found are the same (the group).
_QUALIFIED = re.compile(rf"(?<!\w)\d*({IDENTIFIER}(?:\.{IDENTIFIER})+)")


def _member_pairs(dotted: str) -> list[str]:
    """The ``Class.member`` pairs of a dotted name: ``a.Model.save`` gives ``Model.save`` (and
    ``a.Model``, which names nothing unless ``a`` is a class)."""
    parts = dotted.split(".")
    return [f"{a}.{b}" for a, b in itertools.pairwise(parts)]


_PATHLIKE = re.compile(r"[\w./-]+")
_SEPARATORS = "/.-"
# A longer path-like word is cut at this many separators at most (a URL, a long dotted name).
_MAX_SEPARATORS = 12


def _pieces(text: str) -> set[str]:
    """Every run of a path-like word between separators (``/``, ``.``, ``-``) or its ends:
    ``src/_pytest/capture.py`` gives ``capture.py``, ``_pytest/capture.py``, ``_pytest`` ...

    Example:
        >>> sorted(_pieces("see a/b.py"))
        ['a', 'a/b', 'a/b.py', 'b', 'b.py', 'py', 'see']
    """
    out: set[str] = set()
    for word in _PATHLIKE.findall(text):
        cuts = [k for k, c in enumerate(word) if c in _SEPARATORS][:_MAX_SEPARATORS]
        starts = [0, *(k + 1 for k in cuts)]
        ends = [*cuts, len(word)]
        for i in starts:
            for j in ends:
                if j > i:
                    out.add(word[i:j])
    return out


# How surely each way of naming a file names that one: its path, its dotted module, its
# package's dotted name (which names a folder of modules as much as its ``__init__``), its file
# name (shared among the files that have it).
_BY_PATH = 1.0
_BY_MODULE = 0.9
_BY_PACKAGE = 0.5
_BY_FILE_NAME = 0.8


def _mention_names(paths: Sequence[str]) -> dict[str, list[tuple[str, float]]]:
    """The ways a query can name each file, with how surely it names that one. Names are matched
    as written: ``astropy.wcs.WCS`` names a class, not ``astropy/wcs/wcs.py``."""
    basenames = Counter(p.rsplit("/", 1)[-1] for p in paths)
    out: dict[str, list[tuple[str, float]]] = {}
    for path in paths:
        names: list[tuple[str, float]] = [(path, _BY_PATH)]
        parts = path.split("/")
        for i in range(1, len(parts) - 1):
            names.append(("/".join(parts[i:]), _BY_PATH))
        dotted = path.rsplit(".", 1)[0].replace("/", ".")
        package = dotted.endswith(".__init__")
        if package:
            dotted = dotted[: -len(".__init__")]
        dparts = dotted.split(".")
        for i in range(len(dparts) - 1):
            names.append((".".join(dparts[i:]), _BY_PACKAGE if package else _BY_MODULE))
        base = parts[-1]
        if not base.startswith("__init__"):
            names.append((base, _BY_FILE_NAME / basenames[base]))
        out[path] = names
    return out
