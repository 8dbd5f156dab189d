"""Keywords of a goal and a lexical search of a workspace's files for them.

The search runs :func:`ctxpack.code.grep` (ripgrep when installed, else Python) over the files
the workspace lists (:func:`ctxpack.code._files.walk_files`), and ranks files by how many lines
match each keyword, rare keywords weighing most.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .._internal.arguments import shown, string
from .._internal.arguments import tokens as check_tokens
from ..code import Engine, grep, ripgrep_path, searchable
from ..errors import ConfigError
from ..signals.lexical import SPACELESS_START, STOP_WORDS, WORD, word_pieces

__all__ = ["FileSearch", "keywords"]


def keywords(goal: str, *, most: int = 12) -> list[str]:
    """The words of ``goal`` worth searching files for: no stop words, at least 3 characters,
    lower-cased, first occurrence first; identifiers (``refresh_token``, ``auth.ts``) whole; in
    Chinese, Japanese, Korean or Thai, which write no space between words, pairs of characters.

    Example:
        >>> keywords("Why does refresh_token fail in auth.ts?")
        ['refresh_token', 'auth.ts', 'fail']
    """
    string(goal, "goal")
    check_tokens(most, "most", minimum=0, unit="keywords")
    found: dict[str, None] = {}
    for token in goal.split():
        token = token.strip("`'\"()[]{}<>,;:!?").rstrip(".")
        if len(token) >= 3 and ("_" in token or "." in token or "/" in token):
            found.setdefault(token.lower(), None)
    for lowered in (piece for word in WORD.findall(goal) for piece in word_pieces(word.lower())):
        # A pair of characters of a script written without spaces is a word of its own.
        shortest = 2 if not lowered.isascii() and SPACELESS_START.match(lowered) else 3
        if len(lowered) < shortest or lowered in STOP_WORDS or lowered.isdigit():
            continue
        # "refresh" is already searched through "refresh_token".
        if not any(lowered in whole and lowered != whole for whole in found):
            found.setdefault(lowered, None)
    return list(found)[:most]


@dataclass(frozen=True)
class KeywordHit:
    """A file holding some of the searched keywords: how many of its lines match each one, and
    its score (not to be confused with :class:`ctxpack.code.FileHit`, a file ranked by
    ``CodeIndex`` from its symbols and the import graph).

    Attributes:
        path: Path relative to the root, with ``/`` separators.
        counts: Lines matched, per keyword (lower-cased).
        score: ``FileSearch``'s score (see the class).
    """

    path: str
    counts: dict[str, int]
    score: float


class FileSearch:
    """Case-insensitive literal search of keywords over the files of a root.

    Through :func:`ctxpack.code.grep`: ripgrep when installed (``engine="auto"``), else Python;
    both search the same files (those given, less the symlinks, files with several hard links,
    binary files and files over ``max_bytes`` among them) and give the same counts. Files are
    ranked by ``sum(idf(k) * (1 + log(lines matched)))`` over the keywords they hold, with
    ``idf(k) = log(1 + files / files holding k)``: a rare keyword says more than a common one.
    """

    def __init__(
        self, root: Path, files: Sequence[str], *, engine: Engine = "auto", max_bytes: int
    ) -> None:
        if engine not in ("auto", "ripgrep", "python"):
            raise ConfigError(f"engine must be 'auto', 'ripgrep' or 'python', got {shown(engine)}")
        self.root = root
        self.files = list(files)
        self.max_bytes = max_bytes
        rg = ripgrep_path() if engine != "python" else None
        if engine == "ripgrep" and rg is None:
            raise ConfigError("engine='ripgrep' but no rg binary was found; pip install ripgrep")
        self.ripgrep = rg
        self.engine = "ripgrep" if rg else "python"

    def counts(self, words: Sequence[str]) -> dict[str, Counter[str]]:
        """Per file path, matching lines per keyword (files with no match left out)."""
        if not words or not self.files:
            return {}
        return self._count(words, "ripgrep" if self.ripgrep else "python")

    def search(self, words: Sequence[str], *, most: int) -> list[KeywordHit]:
        """The ``most`` best files for ``words``, best first (ties by path)."""
        counts = self.counts(words)
        held = Counter(word for per_file in counts.values() for word in per_file)
        total = max(len(self.files), 1)
        hits = []
        for path, per_word in counts.items():
            score = sum(
                math.log(1 + total / held[w]) * (1 + math.log(n)) for w, n in per_word.items()
            )
            # A keyword in the file's own name is worth a match in its text.
            name = path.lower()
            score += sum(math.log(1 + total / max(held[w], 1)) for w in words if w in name)
            hits.append(KeywordHit(path, dict(per_word), score))
        hits.sort(key=lambda h: (-h.score, h.path))
        return hits[:most]

    def _count(self, words: Sequence[str], engine: Engine) -> dict[str, Counter[str]]:
        # One literal search per keyword (ripgrep or Python, the same lines either way), over
        # the files that may be searched now.
        paths = [rel for rel in self.files if searchable(self.root / rel, max_bytes=self.max_bytes)]
        found: dict[str, Counter[str]] = {}
        if not paths:
            return found
        for word in words:
            lowered = word.lower()
            for hit in grep(self.root, word, context=0, engine=engine, paths=paths):
                found.setdefault(hit.path, Counter())[lowered] += 1
        return found
