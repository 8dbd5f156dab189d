"""Files under a workspace root: safe paths, passages by line range or match, a lexical search.

Every path is relative to the root and stays inside it: absolute paths, ``..``, symlinks
that lead out and files with several hard links (another name may lie outside the root) are
refused, and a path is shown with its unprintable characters escaped. Binary files are
described, never shown; files over a size limit are read as a stream, so a line range of a huge
log costs the range, not the file.
"""

from __future__ import annotations

import difflib
import math
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Literal

from .._internal.paths import hard_linked, inside_root, refuse_hard_links, shown_path
from ..errors import ConfigError, WorkspacePathError
from ..signals.lexical import STOP_WORDS, WORD

__all__ = ["FileSearch", "Passage", "find_ripgrep", "keywords"]

# Folders no selector wants: version control, dependencies, caches, build output.
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "node_modules",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".idea",
        ".vscode",
    }
)
_SNIFF = 8192


@dataclass(frozen=True)
class Passage:
    """Consecutive lines of one file, as the large model will read them.

    Attributes:
        path: Path relative to the root, with ``/`` separators.
        start: First line shown (1-based).
        end: Last line shown (inclusive); ``start - 1`` when nothing is shown.
        lines: The lines, without their line ends.
        total_lines: Lines in the file.
        note: What the reader should know (truncated, binary, more matches not shown).
    """

    path: str
    start: int
    end: int
    lines: tuple[str, ...]
    total_lines: int
    note: str = ""

    @property
    def label(self) -> str:
        """``path:start-end``, the passage's name in decisions."""
        return f"{shown_path(self.path)}:{self.start}-{self.end}"

    def render(self) -> str:
        """The passage with a header naming the file and lines, each line numbered."""
        path = shown_path(self.path)
        if not self.lines:
            return f"--- {path} ({self.note or 'nothing to show'})"
        head = f"--- {path}, lines {self.start}-{self.end} of {self.total_lines}"
        if self.note:
            head += f" ({self.note})"
        width = len(str(self.end))
        body = [f"{n:>{width}} | {line}" for n, line in enumerate(self.lines, self.start)]
        return "\n".join([head, *body])


def check_relative(path: str, root: Path | None) -> PurePosixPath:
    """``path`` as a relative path that cannot climb out of the root, or an error saying why."""
    shown_root = str(root) if root is not None else None
    if root is None:
        raise WorkspacePathError(
            path,
            root=None,
            detail="the workspace has no root; give Workspace(root=...) to read files",
        )
    if not path or "\x00" in path:
        raise WorkspacePathError(path, root=shown_root, detail="not a valid path")
    if PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute():
        raise WorkspacePathError(
            path,
            root=shown_root,
            detail=f"absolute paths are refused; give a path relative to the root {shown_root}",
        )
    relative = PurePosixPath(path.replace("\\", "/"))
    if ".." in relative.parts:
        raise WorkspacePathError(
            path, root=shown_root, detail="'..' is refused: paths stay inside the root"
        )
    return relative


def resolve(path: str, root: Path | None, listing: Sequence[str] = ()) -> Path:
    """The file ``path`` names inside ``root`` (resolved), checked to be a file inside it.

    Raises:
        WorkspacePathError: absolute, ``..``, a symlink leading out, missing (with close
            matches from ``listing``), a directory (with the files in it), or a file with
            several hard links.
    """
    relative = check_relative(path, root)
    assert root is not None
    real = inside_root(root, root.joinpath(*relative.parts), path)
    if real.is_dir():
        inside = [p for p in listing if p.startswith(relative.as_posix().rstrip("/") + "/")]
        shown = ", ".join(map(shown_path, inside[:10])) + (
            f" and {len(inside) - 10} more" if len(inside) > 10 else ""
        )
        raise WorkspacePathError(
            path, root=str(root), detail=f"is a directory; its files: {shown or 'none'}"
        )
    if not real.is_file():
        close = difflib.get_close_matches(relative.as_posix(), listing, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(map(shown_path, close))}?" if close else ""
        raise WorkspacePathError(
            path,
            root=str(root),
            detail=f"no such file under the root ({len(listing)} files there){hint}",
        )
    refuse_hard_links(real.stat(), path, root)
    return real


def is_binary(full: Path) -> bool:
    """Whether a file looks binary: a NUL byte, or no valid UTF-8, in its first 8 KiB."""
    with full.open("rb") as handle:
        head = handle.read(_SNIFF)
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by the sniff window is not a sign of binary.
        return exc.start < len(head) - 4
    return False


def iter_lines(full: Path) -> Iterator[str]:
    """The file's lines without line ends, streamed (undecodable bytes replaced)."""
    with full.open("r", encoding="utf-8", errors="replace", newline=None) as handle:
        for line in handle:
            yield line.rstrip("\n")


def walk(root: Path, limit: int) -> list[str]:
    """Relative paths of the files under ``root``, sorted, without hidden or skipped folders
    and hidden files, at most ``limit``; symlinks are not followed."""
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        base = Path(folder).relative_to(root)
        for name in sorted(files):
            if name.startswith("."):
                continue
            found.append((base / name).as_posix())
            if len(found) >= limit:
                return sorted(found)
    return sorted(found)


def keywords(goal: str, *, most: int = 12) -> list[str]:
    """The words of ``goal`` worth searching files for: no stop words, at least 3 characters,
    lower-cased, first occurrence first; identifiers (``refresh_token``, ``auth.ts``) whole.

    Example:
        >>> keywords("Why does refresh_token fail in auth.ts?")
        ['refresh_token', 'auth.ts', 'fail']
    """
    found: dict[str, None] = {}
    for token in goal.split():
        token = token.strip("`'\"()[]{}<>,;:!?").rstrip(".")
        if len(token) >= 3 and ("_" in token or "." in token or "/" in token):
            found.setdefault(token.lower(), None)
    for word in WORD.findall(goal):
        lowered = word.lower()
        if len(lowered) < 3 or lowered in STOP_WORDS or lowered.isdigit():
            continue
        # "refresh" is already searched through "refresh_token".
        if not any(lowered in whole and lowered != whole for whole in found):
            found.setdefault(lowered, None)
    return list(found)[:most]


def find_ripgrep() -> str | None:
    """The ``rg`` binary the search uses (:func:`ctxpack.code.ripgrep_path`), or ``None``."""
    from ..code.grep import ripgrep_path

    return ripgrep_path()


Engine = Literal["auto", "ripgrep", "python"]


@dataclass(frozen=True)
class FileHit:
    """A file that matched a search: how many lines each keyword matched."""

    path: str
    counts: dict[str, int]
    score: float


class FileSearch:
    """Case-insensitive literal search of keywords over the files of a root.

    Through :func:`ctxpack.code.grep`: ripgrep when installed (``engine="auto"``), else Python;
    both search the same files (those :func:`walk` lists: no hidden or skipped folders, no
    binary files, none over ``max_bytes``) and give the same counts. Files are ranked by
    ``sum(idf(k) * (1 + log(lines matched)))`` over the keywords they hold, with
    ``idf(k) = log(1 + files / files holding k)``: a rare keyword says more than a common one.
    """

    def __init__(
        self, root: Path, files: Sequence[str], *, engine: Engine = "auto", max_bytes: int
    ) -> None:
        if engine not in ("auto", "ripgrep", "python"):
            raise ConfigError(f"engine must be 'auto', 'ripgrep' or 'python', got {engine!r}")
        self.root = root
        self.files = list(files)
        self.max_bytes = max_bytes
        rg = find_ripgrep() if engine != "python" else None
        if engine == "ripgrep" and rg is None:
            raise ConfigError("engine='ripgrep' but no rg binary was found; pip install ripgrep")
        self.ripgrep = rg
        self.engine = "ripgrep" if rg else "python"

    def counts(self, words: Sequence[str]) -> dict[str, Counter[str]]:
        """Per file path, matching lines per keyword (files with no match left out)."""
        if not words or not self.files:
            return {}
        return self._count(words, "ripgrep" if self.ripgrep else "python")

    def search(self, words: Sequence[str], *, most: int) -> list[FileHit]:
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
            hits.append(FileHit(path, dict(per_word), score))
        hits.sort(key=lambda h: (-h.score, h.path))
        return hits[:most]

    def _searchable(self) -> list[str]:
        out = []
        for rel in self.files:
            full = self.root / rel
            try:
                info = full.lstat()
                if (
                    full.is_symlink()
                    or hard_linked(info)
                    or info.st_size > self.max_bytes
                    or is_binary(full)
                ):
                    continue
            except OSError:
                continue
            out.append(rel)
        return out

    def _count(self, words: Sequence[str], engine: Engine) -> dict[str, Counter[str]]:
        # One literal search per keyword through ctxpack.code's grep (ripgrep or Python, the
        # same lines either way), over the files this search covers.
        from ..code.grep import grep

        searchable = self._searchable()
        found: dict[str, Counter[str]] = {}
        if not searchable:
            return found
        for word in words:
            lowered = word.lower()
            for hit in grep(self.root, word, context=0, engine=engine, paths=searchable):
                found.setdefault(hit.path, Counter())[lowered] += 1
        return found
