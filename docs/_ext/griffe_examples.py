"""Griffe extension for the API reference: read ``Example:`` sections as ``Examples:``.

ctxpack's docstrings follow the Google style guide, which spells the section ``Example:``;
griffe only recognises ``Examples:`` and would render the doctest lines as Markdown quotes.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Rename ``Example:`` section headers to ``Examples:`` in every loaded docstring."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
