"""The files of a repository that code retrieval reads: source files, ``.gitignore`` respected.

A file is listed when its extension names a supported language, it is not ignored by a
``.gitignore`` on its way from the root (nor by ``.git/info/exclude``), it is not inside a
version-control or dependency folder, and it is text (no NUL byte in its first 8000 bytes).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from .._internal.paths import hard_linked
from ..errors import ConfigError

__all__ = [
    "LANGUAGES",
    "GitignoreUnsupportedWarning",
    "language_of_path",
    "list_files",
    "resolve_root",
]

# Extension -> language name (the names the symbol parser knows).
LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
}

# Never source of the project itself, whatever .gitignore says (a repository without one, or
# an exported tree, still has these).
_SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        "target",
        "dist",
        "build",
        ".ctxpack",
    }
)

_BINARY_PROBE = 8000


def resolve_root(root: str | os.PathLike[str]) -> Path:
    """``root`` as an absolute directory path.

    Raises:
        ConfigError: ``root`` is not a directory.
    """
    path = Path(root).expanduser().resolve()
    if not path.is_dir():
        raise ConfigError(f"{str(root)!r} is not a directory; give the root folder of a codebase")
    return path


def language_of_path(path: str) -> str | None:
    """The language of a file from its extension, or ``None`` when it is not supported.

    Example:
        >>> language_of_path("src/app/throttle.ts"), language_of_path("README.md")
        ('typescript', None)
    """
    return LANGUAGES.get(os.path.splitext(path)[1].lower())


class GitignoreUnsupportedWarning(UserWarning):
    """pathspec is not installed: ``.gitignore`` files are not applied."""


@lru_cache(maxsize=64)
def _spec(lines: tuple[str, ...]) -> Any:
    try:
        import pathspec
    except ImportError:
        _warn_no_pathspec()
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


@cache
def _warn_no_pathspec() -> None:
    warnings.warn(
        "pathspec is not installed, so .gitignore files are not applied (only version-control "
        'and dependency folders are skipped); pip install "ctxpack[code]"',
        GitignoreUnsupportedWarning,
        stacklevel=5,
    )


def _read_ignore(path: Path) -> tuple[str, ...]:
    try:
        return tuple(path.read_text(encoding="utf-8", errors="replace").splitlines())
    except OSError:
        return ()


def _is_text(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return b"\0" not in fh.read(_BINARY_PROBE)
    except OSError:
        return False


def list_files(root: str | os.PathLike[str]) -> list[str]:
    """The source files under ``root``, as sorted repository-relative POSIX paths.

    Each ``.gitignore`` applies to its own folder and below, as git reads it (through
    ``pathspec``'s git-ignore rules); ``.git/info/exclude`` applies to the whole tree.

    Raises:
        ConfigError: ``root`` is not a directory.
    """
    base = resolve_root(root)
    found = sorted(_walk(base))
    return found


def _walk(base: Path) -> Iterator[str]:
    # Each level carries the ignore specs in force: (folder relative to root, spec).
    stack: list[tuple[Path, list[tuple[str, Any]]]] = []
    specs: list[tuple[str, Any]] = []
    exclude = _read_ignore(base / ".git" / "info" / "exclude")
    if exclude:
        specs.append(("", _spec(exclude)))
    stack.append((base, specs))
    while stack:
        folder, inherited = stack.pop()
        rel_folder = folder.relative_to(base).as_posix()
        rel_folder = "" if rel_folder == "." else rel_folder
        own = _read_ignore(folder / ".gitignore")
        active = [*inherited, (rel_folder, _spec(own))] if own else inherited
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
            if entry.is_symlink():
                continue
            if entry.is_dir():
                if entry.name in _SKIPPED_DIRS or _ignored(active, rel + "/"):
                    continue
                stack.append((Path(entry.path), active))
            elif entry.is_file():
                if language_of_path(entry.name) is None or _ignored(active, rel):
                    continue
                if hard_linked(entry.stat(follow_symlinks=False)):
                    continue  # another name may lie outside the root
                if _is_text(Path(entry.path)):
                    yield rel


def _ignored(specs: list[tuple[str, Any]], rel: str) -> bool:
    for folder, spec in specs:
        if folder:
            if not rel.startswith(folder + "/"):
                continue
            sub = rel[len(folder) + 1 :]
        else:
            sub = rel
        if spec is not None and spec.match_file(sub):
            return True
    return False
