"""Python source with the blocks that do not parse blanked out, for both Python parsers (``ast``
without tree-sitter, tree-sitter with it): one stray bracket costs its own block, not the file."""

from __future__ import annotations

import ast
import itertools
import re

__all__: list[str] = []

# A top-level definition or decorator: Python is never inside brackets at one, only perhaps
# inside a string spanning lines, which the blocks are checked against.
_TOP_LEVEL_DEFINITION = re.compile(r"(?:@|(?:async[ \t]+)?def[ \t]|class[ \t])")
# A line that starts a top-level statement, unless inside brackets: not blank, not a comment,
# no closing bracket, no clause of the statement before it.
_TOP_LEVEL_STATEMENT = re.compile(r"(?![\s#)\]}]|(?:else|elif|except|finally)\b)")
_STRING_OR_COMMENT = re.compile(
    r'#[^\n]*|"""(?:\\.|[^\\])*?(?:"""|\Z)|' + r"'''(?:\\.|[^\\])*?(?:'''|\Z)"
    r'|"(?:\\.|[^\\\n"])*(?:"|$)|' + r"'(?:\\.|[^\\\n'])*(?:'|$)",
    re.M,
)
_NOT_CARRIAGE_RETURN = re.compile(rb"[^\r]")
# What ast raises for text it cannot read: a nesting too deep for its parser is a MemoryError
# ("too complex") or a RecursionError, not a SyntaxError.
UNREADABLE = (SyntaxError, ValueError, MemoryError, RecursionError)


def without_broken_blocks(source: str) -> str:
    """``source`` with each block that does not parse on its own made spaces.

    A block runs from a top-level definition or decorator (outside a string) to the next, so
    a broken statement costs its own block, not the file. A block that does not parse is tried
    again in pieces, cut at each top-level statement, so that a broken statement after a
    definition does not cost the definition. A blanked line keeps its length in UTF-8 bytes
    (and its carriage returns), so lines, columns and tree-sitter's byte offsets stay right.
    """
    lines = source.split("\n")
    in_string = [False] * len(lines)
    line, counted = 0, 0
    for match in _STRING_OR_COMMENT.finditer(source):
        line += source.count("\n", counted, match.start())
        counted = match.end()
        spans = match.group().count("\n")
        in_string[line + 1 : line + 1 + spans] = [True] * spans
        line += spans

    def starts(first: int, end: int, at: re.Pattern[str]) -> list[int]:
        # A decorator's definition stays in the decorator's block.
        cuts = [
            n
            for n in range(first + 1, end)
            if not in_string[n] and not lines[n - 1].startswith("@") and at.match(lines[n])
        ]
        return [first, *cuts, end]

    kept: list[str] = []
    blocks = starts(0, len(lines), _TOP_LEVEL_DEFINITION)
    for first, end in itertools.pairwise(blocks):
        if parses("\n".join(lines[first:end])):
            kept += lines[first:end]
            continue
        pieces = starts(first, end, _TOP_LEVEL_STATEMENT)
        for start, stop in itertools.pairwise(pieces):
            piece = lines[start:stop]
            kept += piece if parses("\n".join(piece)) else [_blank(text) for text in piece]
    return "\n".join(kept)


def _blank(line: str) -> str:
    data = line.encode("utf-8", "surrogatepass")
    return _NOT_CARRIAGE_RETURN.sub(b" ", data).decode("ascii")


def parses(text: str) -> bool:
    """Whether ``ast`` reads ``text`` as Python (a nesting too deep to read counts as no)."""
    try:
        ast.parse(text)
    except UNREADABLE:
        return False
    return True
