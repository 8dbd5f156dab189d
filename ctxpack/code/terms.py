"""Code-aware index terms: identifiers split at ``snake_case`` and ``camelCase``, paths as terms.

``parseHTTPResponse`` and ``parse_http_response`` both give ``pars``, ``http``, ``respons``
(English Snowball stems, as the conversation stages use) plus the whole identifier
``parsehttprespons``, so a query written in prose finds code written either way, and a query that
names the identifier exactly finds it first.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from itertools import chain
from typing import TYPE_CHECKING

from ..caches import register_lru
from ..signals.lexical import STOP_WORDS
from ..signals.lexical import split_identifier as split_identifier
from ..signals.lexical import stem as _stem

if TYPE_CHECKING:
    from .units import ParsedFile

__all__: list[str] = []

# An identifier as Python reads one: a letter of any script or "_", then letters, digits, "_"
# (``rückerstattung``, ``größe``, ``обработать``: an ASCII-only rule cut them into fragments).
IDENTIFIER = r"[^\W\d]\w*"
_IDENT = re.compile(IDENTIFIER)
# The same on ASCII text (most source files; str.isascii() is a flag CPython keeps), where it
# runs in two thirds of the time: a build reads every word of a repository.
_ASCII_IDENT = re.compile(r"[A-Za-z_]\w*", re.ASCII)

# Words of code that match everything and so rank nothing.
CODE_STOP_WORDS = frozenset(
    {
        "self",
        "cls",
        "def",
        "return",
        "import",
        "none",
        "true",
        "false",
        "null",
        "nil",
        "let",
        "var",
        "const",
        "func",
        "fn",
        "pub",
        "public",
        "private",
        "protected",
        "static",
        "void",
        "new",
        "elif",
        "else",
        "args",
        "kwargs",
        "str",
        "int",
        "py",
    }
)


def identifiers(text: str) -> list[str]:
    """The identifier-shaped words of ``text``, as written.

    Example:
        >>> identifiers("call resolve_redirects() on Session.send")
        ['call', 'resolve_redirects', 'on', 'Session', 'send']
    """
    return (_ASCII_IDENT if text.isascii() else _IDENT).findall(text)


def _word_terms(word: str) -> tuple[str, ...]:
    parts = split_identifier(word)
    out: list[str] = []
    for part in parts:
        if len(part) < 2 or part in STOP_WORDS or part in CODE_STOP_WORDS or part.isdigit():
            continue
        out.append(_stem(part, "en"))
    if len(parts) > 1:
        whole = "".join(parts)
        if whole not in CODE_STOP_WORDS:
            out.append(_stem(whole, "en"))
    return tuple(out)


# Longer words (a hash, a base64 run) are split each time, so that every entry of the C-speed
# cache below has a ceiling: the word, and at most 21 terms of its 40 characters with the
# tuple holding them and the cache's own link. Indexing reads a file's words together, so a
# small cache hits almost as often as one holding a repository's every word.
_MAX_CACHED_WORD = 40
_cached_word_terms = register_lru(
    lru_cache(maxsize=32_768)(_word_terms),
    name="index terms of code words",
    entry_bytes=(49 + _MAX_CACHED_WORD) + (40 + 8 * 21) + (21 * 49 + 2 * _MAX_CACHED_WORD) + 100,
)


def code_terms(text: str) -> list[str]:
    """The index terms of a text, code or prose.

    Example:
        >>> code_terms("def rateLimit(request): return throttle_request()")
        ['rate', 'limit', 'ratelimit', 'request', 'throttl', 'request', 'throttlerequest']
    """
    words = identifiers(text)
    if not words or len(max(words, key=len)) <= _MAX_CACHED_WORD:
        # Every word cached: the loop below, run in C (an index reads every word of a tree).
        return list(chain.from_iterable(map(_cached_word_terms, words)))
    out: list[str] = []
    for word in words:
        out.extend(_cached_word_terms(word) if len(word) <= _MAX_CACHED_WORD else _word_terms(word))
    return out


def path_terms(path: str) -> list[str]:
    """The terms of a repository path: its folders and file name, without the extension.

    Example:
        >>> path_terms("src/_pytest/mark/expression.py")
        ['src', 'pytest', 'mark', 'express']
    """
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    return code_terms(stem.replace("/", " "))


Counted = tuple[dict[str, int], int]
"""Terms of a text with how often it holds each, and how many terms it holds in all."""

CountedTerms = tuple[list[Counted], Counted]
"""The terms of each symbol unit of a file, then of the whole file (see :func:`counted_terms`)."""


def counted_terms(parsed: ParsedFile) -> CountedTerms:
    """The index terms of each symbol unit of a parsed file (of its text, its name, its class
    and its file's path), counted; then those of the whole file (its path's and its units').

    Example:
        >>> from ctxpack.code._symbols import parse_source
        >>> parsed = parse_source("a/limits.py", "python", "def throttle(): ...")
        >>> units, whole = counted_terms(parsed)
        >>> units
        [({'throttl': 2, 'limit': 1}, 3)]
        >>> whole
        ({'limit': 2, 'throttl': 2}, 4)
    """
    where = path_terms(parsed.path)
    whole = Counter(where)
    length = len(where)
    units: list[Counted] = []
    for unit in parsed.symbols:
        name_terms = code_terms(unit.name) if unit.kind != "module" else []
        parent_terms = code_terms(unit.parent) if unit.parent else []
        unit_terms = [*code_terms(unit.text), *name_terms, *parent_terms, *where]
        whole.update(unit_terms)
        length += len(unit_terms)
        units.append((dict(Counter(unit_terms)), len(unit_terms)))
    return units, (dict(whole), length)
