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
from ..tokens import TokenCounter
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
    unit (its imports and module docstring, mostly); one deleted or made unreadable since it
    was indexed shows nothing. Passages and stored files are redacted as tool outputs are
    (:func:`ctxpack.redaction.redact`): the context goes to a model. A passage that would
    overflow the budget is left out and the next, smaller one may still fit; the token count
    returned is the text's own, at most ``budget``.

    Returns:
        The text, its token count, and the artifact id of each file that has a passage.
    """
    if not files:  # scoring every unit of the tree for no file took seconds on a long task
        return "", index.counter.count(""), {}
    counter = index.counter
    scored = index.unit_scores(query, files, boost=boost)
    blocks: list[tuple[str, str]] = []  # (path, block)
    used = 0
    stored: dict[str, str] = {}
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
        except OSError:
            continue  # unreadable since (a chmod): left out, as a refresh leaves it out
        # Read for a model as a tool's output is: a key in a settings file is redacted.
        artifact = put_original(store, redact(whole).text, path=path)
        for unit in sorted(units, key=lambda u: u.start_line):
            block = f"{_header(unit, artifact)}\n{redact(unit.text).text}\n"
            # The blank line between blocks costs what it costs once joined.
            cost = counter.count(block + "\n")
            if used + cost > budget:
                continue
            blocks.append((path, block))
            used += cost
            stored[path] = artifact
    text, tokens = _within(blocks, counter, budget)
    kept = {path for path, _ in blocks}
    return text, tokens, {path: a for path, a in stored.items() if path in kept}


def _within(blocks: list[tuple[str, str]], counter: TokenCounter, budget: int) -> tuple[str, int]:
    """The blocks joined, and their count: the last ones left out (from ``blocks`` too) while
    the whole is over ``budget``. The blocks' own counts are what chose them, and a count of
    joined texts may be more than the sum of theirs (a counter that rounds each text down)."""
    while True:
        text = "\n".join(block for _, block in blocks)
        tokens = counter.count(text)
        if tokens <= budget or not blocks:
            return text, tokens
        blocks.pop()
