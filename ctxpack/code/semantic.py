"""The optional embedding layer of code retrieval: files ranked by meaning, fused with BM25.

A file is embedded by its summary (its path, its module docstring, the names it defines), so
that a query in prose ("where are token counts cached?") meets code that never uses its words.
The embedding ranking and the lexical one are fused by reciprocal rank fusion: each file scores
``1 / (RRF_K + rank)`` in each ranking, summed. Any callable ``list[str] -> array (n, d)`` is an
embedder (see :class:`ctxpack.signals.embeddings.MiniLMEmbedder`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._symbols import ParsedFile

__all__: list[str] = []

RRF_K = 60
"""The rank offset of reciprocal rank fusion (the value of its original paper): how much the
top ranks of one ranking weigh against agreement between rankings."""

_SUMMARY_CHARS = 1000


def file_summary(path: str, parsed: ParsedFile) -> str:
    """What a file is embedded by: its path in words, its module docstring, the names it
    defines (classes with their methods).

    Example:
        >>> from ctxpack.code import parse_source
        >>> source = "def add_item(cart):\\n    pass\\n"
        >>> file_summary("shop/cart.py", parse_source("shop/cart.py", "python", source))
        'shop cart\\nadd_item'
    """
    stem = path.rsplit(".", 1)[0].replace("/", " ").replace("_", " ")
    docstring = next((s.docstring for s in parsed.symbols if s.kind == "module"), "")
    names = [
        f"{s.parent}.{s.name}" if s.parent else s.name for s in parsed.symbols if s.kind != "module"
    ]
    text = "\n".join(part for part in (stem, docstring.strip(), " ".join(names)) if part)
    return text[:_SUMMARY_CHARS]


def reciprocal_rank_fusion(scores: Sequence[Any], *, k: int = RRF_K) -> Any:
    """Fuse several score arrays over the same files: each file gets ``1 / (k + rank)`` from
    every array in which it scores above 0 (rank 1 = the best), summed.

    Example:
        >>> import numpy as np
        >>> fused = reciprocal_rank_fusion([np.array([3.0, 2.0, 0.0]), np.array([0.1, 0.9, 0.5])])
        >>> [int(i) for i in np.argsort(-fused, kind="stable")]
        [1, 0, 2]
    """
    import numpy as np

    fused = np.zeros(len(scores[0]))
    for values in scores:
        order = np.argsort(-values, kind="stable")
        ranks = np.empty(len(values))
        ranks[order] = np.arange(1, len(values) + 1)
        fused += np.where(values > 0, 1.0 / (k + ranks), 0.0)
    return fused
