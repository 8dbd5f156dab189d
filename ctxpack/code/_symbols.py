"""The structural layer: source files parsed into symbol units, with what each one references.

A *symbol unit* is a whole function, method, class, interface or type, with its docstring (or the
comment right above it) and its line range; the lines of a file outside any symbol (imports,
constants, script code) form ``module`` units. Classes are split: the class unit holds its
header, docstring and fields, each method is a unit of its own, so no line is in two units.

Parsing uses tree-sitter with one grammar package per language (``pip install "ctxpack[code]"``).
Without tree-sitter, Python files are parsed with the standard library's ``ast`` and other files
become one ``module`` unit each, with a :class:`ParserFallbackWarning` saying so once.
"""

from __future__ import annotations

import warnings
from functools import cache

from .._internal.arguments import sendable, string
from ..errors import ConfigError
from ._files import LANGUAGES
from .fallback import parse_python_ast, parse_whole_file
from .treesitter import parse_with_tree_sitter, parser_for
from .units import ParsedFile as ParsedFile
from .units import Symbol as Symbol

# The languages parse_source reads (see LANGUAGES, by extension).
_LANGUAGES = frozenset(LANGUAGES.values())

__all__ = [
    "ParsedFile",
    "ParserFallbackWarning",
    "Symbol",
    "parse_source",
    "tree_sitter_available",
]


class ParserFallbackWarning(UserWarning):
    """tree-sitter is not installed: symbols come from a coarser parser (say which files)."""


def tree_sitter_available(language: str = "python") -> bool:
    """Whether tree-sitter and the grammar for ``language`` are installed."""
    return parser_for(language) is not None


def parse_source(path: str, language: str, source: str) -> ParsedFile:
    """Parse one file's text into symbol units and imports.

    Args:
        path: Its repository-relative path (recorded on every unit).
        language: One of ``python``, ``javascript``, ``typescript``, ``tsx``, ``go``, ``rust``,
            ``java``.
        source: The file's text.

    Raises:
        ConfigError: ``language`` is not one of these, or ``source`` is not text.

    Example:
        >>> source = "import os\\n\\ndef f():\\n    return g()\\n"
        >>> parsed = parse_source("app.py", "python", source)
        >>> [(s.name, s.kind, s.start_line, s.end_line, s.references) for s in parsed.symbols]
        [('<module>', 'module', 1, 1, ()), ('f', 'function', 3, 4, ('g',))]
        >>> parsed.imports
        ('os',)
    """
    string(path, "path")
    if string(language, "language") not in _LANGUAGES:
        raise ConfigError(
            f"language must be one of {', '.join(sorted(_LANGUAGES))}, got {language!r}"
        )
    string(source, "source")
    # Tree-sitter reads UTF-8: a lone surrogate would stop it with UnicodeEncodeError.
    sendable(source, "source", ConfigError)
    parser = parser_for(language)
    if parser is not None:
        return parse_with_tree_sitter(path, language, source, parser)
    _warn_fallback(language)
    if language == "python":
        try:
            return parse_python_ast(path, source)
        except (SyntaxError, ValueError):
            pass
    return parse_whole_file(path, language, source)


@cache
def _warn_fallback(language: str) -> None:
    how = "the standard library's ast" if language == "python" else "one unit per file"
    warnings.warn(
        f"tree-sitter or its {language} grammar is not installed: {language} files are parsed "
        f'with {how}. pip install "ctxpack[code]" for symbol units in every language.',
        ParserFallbackWarning,
        stacklevel=4,
    )
