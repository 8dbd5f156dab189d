"""What a code search returns: the symbol units that matched, and the files ranked."""

from __future__ import annotations

from pydantic import ConfigDict

from .._internal.options import FieldErrorModel

__all__ = ["FileHit", "SearchHit"]


class SearchHit(FieldErrorModel):
    """A symbol unit that matched a query.

    Attributes:
        path: Repository-relative path of its file.
        name: Symbol name (``"<module>"`` for lines outside any symbol).
        kind: ``function``, ``method``, ``class``, ``interface``, ``type``, ``impl``, ``module``.
        start_line: First line (1-based).
        end_line: Last line (inclusive).
        score: The unit's own BM25 score plus its file's score.
        text: The unit's source.
    """

    model_config = ConfigDict(frozen=True)

    path: str
    name: str
    kind: str
    start_line: int
    end_line: int
    score: float
    text: str


class FileHit(FieldErrorModel):
    """A file ranked for a query, with the signals that put it there and its best units.

    Attributes:
        path: Repository-relative path.
        score: Weighted sum of the signals.
        signals: Each signal's normalised value (see :data:`DEFAULT_WEIGHTS`).
        units: Its symbol units that matched, best first.
    """

    model_config = ConfigDict(frozen=True)

    path: str
    score: float
    signals: dict[str, float]
    units: tuple[SearchHit, ...] = ()
