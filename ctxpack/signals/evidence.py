"""Evidence: the identifiers, file paths and numbers a text names, which an agent needs verbatim.

One definition for the library and its measurements: the extractive digest keeps these terms of
what was said (:func:`ctxpack.editing.extractive_digest`), and the agent-sessions benchmark
counts a step's evidence with the same function.
"""

from __future__ import annotations

import re
from typing import Literal

from .._internal.arguments import shown
from ..caches import memoize
from ..errors import ConfigError

__all__ = [
    "evidence_terms",
]

# File paths: something with a slash, or a name with a file extension. Each is tried once per
# run, not from each of its characters (quadratic on a long run that is neither): a path never
# starts after a path character, as no match ends before one and the path would have been found
# from it; a name whose extension fails fails from every later start in its [\w-] run, which
# the last alternative ("run", no term) skips.
_PATH = re.compile(
    r"(?<![\w./-])(?:[\w.-]*/)+[\w.-]+"
    r"|\b[\w-]+\.(?:py|pyx|c|h|cfg|toml|ini|txt|rst|md|json|yml|yaml|js|ts|html)\b"
    r"|(?P<run>\b[\w-]+)"
)
# Identifiers: snake_case with an underscore inside, or camelCase/PascalCase with an inner capital.
_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
_INNER_CAPITAL = re.compile(r"[a-z0-9][A-Z]")
# Numbers that carry information: three digits or more (line numbers, codes) or a decimal.
_NUMBER = re.compile(r"(?<![\w.])(?:\d{3,}|\d+\.\d+)(?!\d)")


EvidenceKind = Literal["path", "identifier", "number"]
"""What an evidence term is: a file path, an identifier or a number."""


def labelled_evidence_terms(text: str) -> list[tuple[EvidenceKind, str]]:
    """Each evidence term of ``text`` with its kind, in order of first appearance, without
    repeats: the terms of :func:`evidence_terms`, where a path that its dots and slashes at both
    ends reduce to a plain word (``"build/.."``) stays a path.

    Raises:
        ConfigError: ``text`` is not a string.

    Example:
        >>> labelled_evidence_terms("see ./src/app.py, line 120 of HttpClient")
        [('path', 'src/app.py'), ('number', '120'), ('identifier', 'HttpClient')]
    """
    if not isinstance(text, str):
        raise ConfigError(f"text must be a string, got {type(text).__name__}")
    return list(_labelled(text))


# Kept by text: each compaction of a managed session reads the terms of the whole summarised
# history again, most of it the same tool outputs as the compaction before.
@memoize(maxsize=100_000, maxbytes=16 * 2**20, name="evidence terms")
def _labelled(text: str) -> tuple[tuple[EvidenceKind, str], ...]:
    found: dict[tuple[EvidenceKind, str], int] = {}
    for match in _PATH.finditer(text):
        if match.group("run") is not None:
            continue
        path = match.group().strip("./")
        if len(path) >= 4 and not path.replace("/", "").isdigit():
            found.setdefault(("path", path), match.start())
    for match in _IDENT.finditer(text):
        word = match.group()
        stripped = word.strip("_")
        inner = "_" in stripped and not stripped.isupper()
        if len(word) >= 4 and (inner or _INNER_CAPITAL.search(word)):
            found.setdefault(("identifier", word), match.start())
    for match in _NUMBER.finditer(text):
        found.setdefault(("number", match.group()), match.start())
    return tuple(sorted(found, key=found.__getitem__))


def evidence_term_set(text: str, sep: str = "\n") -> set[str]:
    """The set of :func:`evidence_terms` of ``text``, read piece by piece (split on ``sep``, a
    line break or a space): no term spans either, and each side of one is a boundary to every
    pattern, as the text's ends are. Each piece's terms are kept by text, so a text that repeats
    most of an earlier one's pieces (a managed window's digest, written again at each
    compaction) reads only its new ones."""
    if sep not in ("\n", " "):
        raise ConfigError(f"sep must be a line break or a space, got {shown(sep)}")
    return {term for piece in text.split(sep) for _, term in _labelled(piece)}


def evidence_terms(text: str) -> list[str]:
    """The identifiers, file paths and numbers of ``text``, in order of first appearance,
    without repeats.

    A path has a slash or a known file extension (the dots and slashes at its ends dropped, at
    least 4 characters); an identifier has an underscore inside or an inner capital
    (``refresh_token``, ``getValue``, ``HttpClient``; at least 4 characters, not an
    all-capitals constant); a number has three digits or more, or a decimal point.

    Raises:
        ConfigError: ``text`` is not a string.

    Example:
        >>> evidence_terms("Fixed auth/token.py:88, refresh_token() now returns 3600")
        ['auth/token.py', 'refresh_token', '3600']
    """
    return list(dict.fromkeys(term for _, term in labelled_evidence_terms(text)))
