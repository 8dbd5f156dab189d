"""What of an issue's text is the issue's own words, for ranking the code it is about.

Two things an issue carries say nothing about where its code lives, and their many words pull
the ranking towards any file that shares them:

- an issue template's instructions, in HTML comments hidden from the reader (``<!-- ... -->``;
  an unclosed comment runs to the end, as a browser reads it);
- a listing of the reporter's environment: installed packages and their versions, as
  ``pip list``, ``pip freeze``, tox or a ``show_versions()`` print them (``attrs 19.3.0``,
  ``pluggy==0.13.1``, ``numpy: 1.24.2``), one package a line or several pins on a line.
"""

from __future__ import annotations

import re

__all__ = ["issue_words"]

_HIDDEN = re.compile(r"<!--[\s\S]*?(?:-->|$)")
# ``name==version``, wherever it stands (tox prints pins separated by commas). Tried only where
# a run of name characters starts, its leading characters a name cannot start with kept (group
# 1): from every position of a long word, a failed try would read the rest of it again.
_PIN = re.compile(r"(?<![\w.\-])((?:[^\WA-Za-z]|[.\-])*)[A-Za-z][\w.\-]*==[\w.\-+!]+,?")
# A line holding only a package and its version (and maybe a location after it):
# ``packaging      20.4``, ``numpy: 1.24.2``, ``Python 3.7.3``.
_PACKAGE_LINE = re.compile(
    r"^[ \t]*[A-Za-z][\w.\-]*[ \t]*(?::[ \t]*|[ \t]+)v?\d+(?:\.\w+)+\S*(?:[ \t]+\S+)?[ \t\r]*$",
    re.MULTILINE,
)
# ``pip list``'s header: ``Package    Version    Location``.
_PIP_HEADER = re.compile(r"^[ \t]*Package[ \t]+Version\b.*$", re.MULTILINE)


def issue_words(text: str) -> str:
    """``text`` without hidden comments and environment listings (each replaced by a space).

    Example:
        >>> issue_words("xfail ignored <!-- fill in -->\\nattrs  19.3.0\\npy==1.8.0,six==1.13.0")
        'xfail ignored  \\n \\n  '
    """
    text = _HIDDEN.sub(" ", text)
    text = _PIN.sub(r"\1 ", text)
    text = _PIP_HEADER.sub(" ", text)
    return _PACKAGE_LINE.sub(" ", text)
