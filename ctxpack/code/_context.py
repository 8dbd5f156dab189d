"""The text sent to a model: the passages of the retrieved files, labelled and token-counted.

Each passage is a whole symbol unit under a header naming its file, its lines, the symbol and the
artifact that holds the whole file, so that a model (or a person) can ask for the original.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from .._internal.paths import shown_path
from ..errors import WorkspacePathError
from ..redaction import redact
from ..store import ArtifactStore, put_original
from ._index import CodeIndex
from ._symbols import Symbol

__all__ = ["build_context"]

# Units of a file shown at most, best first, then put back in line order.
_UNITS_PER_FILE = 3


def _header(unit: Symbol, artifact: str) -> str:
    what = f"{unit.kind} {unit.name}" if unit.kind != "module" else "module code"
    where = f"{shown_path(unit.path)}:{unit.start_line}-{unit.end_line}"
    return f"### {where} ({what}; whole file: {artifact})"


def build_context(
    index: CodeIndex,
    files: Sequence[str],
    query: str,
    *,
    budget: int,
    store: ArtifactStore,
    boost: Mapping[str, float] | None = None,
) -> tuple[str, int, dict[str, str]]:
    """The passages of ``files`` that best match ``query``, in the order of ``files``, within
    ``budget`` tokens.

    Every file is stored whole in ``store``; a file whose units match nothing shows its first
    unit (its imports and module docstring, mostly). Passages and stored files are redacted as
    tool outputs are (:func:`ctxpack.redaction.redact`): the context goes to a model. A passage
    that would overflow the budget is left out and the next, smaller one may still fit.

    Returns:
        The text, its token count, and the artifact id of each file that has a passage.
    """
    counter = index.counter
    scored = index.unit_scores(query, files, boost=boost)
    blocks: list[str] = []
    used = 0
    artifacts: dict[str, str] = {}
    for path in files:
        units = [u for u, _ in scored.get(path, [])[:_UNITS_PER_FILE]]
        if not units:
            symbols = index.symbols_of(path)
            units = list(symbols[:1])
        try:
            whole = index.read(path)
        except WorkspacePathError:
            if os.path.lexists(index.root / path):
                raise
            continue  # deleted since the index read the tree: nothing left to quote
        # Read for a model as a tool's output is: a key in a settings file is redacted.
        artifact = put_original(store, redact(whole).text, path=path)
        for unit in sorted(units, key=lambda u: u.start_line):
            block = f"{_header(unit, artifact)}\n{redact(unit.text).text}\n"
            # The blank line between blocks costs what it costs once joined.
            cost = counter.count(block + "\n")
            if used + cost > budget:
                continue
            blocks.append(block)
            used += cost
            artifacts[path] = artifact
    text = "\n".join(blocks)
    return text, counter.count(text), artifacts
