"""Vectors an embedder of the caller's returns, checked and made unit length, for cosines: the
semantic stage and the code index's semantic signal both read them so."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ConfigError

__all__: list[str] = []


def embedded(embedder: Callable[[list[str]], Any], texts: list[str], dtype: Any) -> Any:
    """``embedder(texts)`` as a ``dtype`` matrix of unit rows (a zero row stays zero), for
    cosines; a ConfigError when the caller's embedder returns anything but one finite numeric
    vector per text (it came back as numpy's IndexError or AxisError from deep in a ranking)."""
    try:
        vectors = np.asarray(embedder(texts), dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"embedder: it must return one vector of numbers per text, shape (n, d): {exc}"
        ) from exc
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise ConfigError(
            f"embedder: it returned an array of shape {vectors.shape} for {len(texts)} texts; "
            "it must return one vector per text, shape (n, d)"
        )
    finite = np.isfinite(vectors).all(axis=1)
    if not finite.all():
        # A NaN cosine sorts nowhere: the text would drop out of a ranking unnoticed.
        raise ConfigError(
            f"embedder: it returned NaN or infinite values for {int((~finite).sum())} of "
            f"{len(texts)} texts (a zero vector normalised?); it must return finite numbers"
        )
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)
