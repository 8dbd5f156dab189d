"""The files of a repository, in one place: the walk, ``.gitignore``, binary files, reading.

Code retrieval (:func:`list_files`, and through it :class:`~ctxpack.code.CodeIndex` and
:func:`~ctxpack.code.grep`) and the selection workspace (:class:`~ctxpack.selection.Workspace`)
list and read a repository through this module. A walk from the root:

- never enters a version-control, dependency, cache or build folder (``.git``,
  ``node_modules``, ``__pycache__``, ``.venv``, ``target``, ``dist``, ``build``...), whatever
  ``.gitignore`` says (a repository without one, or an exported tree, still has these), nor
  a Python environment of any name (a folder holding ``pyvenv.cfg`` or ``conda-meta``);
- leaves out what a ``.gitignore`` on the way from the root ignores (each applies to its own
  folder and below, as git reads it, through ``pathspec``), and what ``.git/info/exclude``
  ignores;
- never follows a symlink, and leaves out files with several hard links (another name may lie
  outside the root; see :mod:`ctxpack._internal.paths`, which also checks a file again when
  it is read).

Code retrieval lists source files only (an extension of :data:`LANGUAGES`, and text); the
workspace lists every file but hidden ones, which are often local settings and secrets
(``.env``, ``.npmrc``). A file is binary when a NUL byte is among its first 8000 bytes, git's
own rule (:func:`is_binary`).
"""

from __future__ import annotations

import difflib
import itertools
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from .._internal.arguments import file_path
from .._internal.paths import (
    check_relative,
    hard_linked,
    inside_root,
    refuse_hard_links,
    shown_path,
)
from ..caches import register
from ..errors import ConfigError, WorkspacePathError

__all__ = [
    "LANGUAGES",
    "GitignoreUnsupportedWarning",
    "LeftOut",
    "language_of_path",
    "list_files",
    "resolve_root",
    "shown_invalid",
    "source_files",
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

# Never files of the project itself, whatever .gitignore says.
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

# A folder holding one of these is a Python environment, whatever its name (PEP 405's
# pyvenv.cfg; conda's conda-meta): installed packages, not the project. ``python -m venv``
# writes no .gitignore into it before Python 3.13.
_ENVIRONMENT_MARKERS = frozenset({"pyvenv.cfg", "conda-meta"})

# git's own probe: a NUL byte among the first 8000 bytes makes a file binary.
_BINARY_PROBE = 8000


def resolve_root(root: str | os.PathLike[str]) -> Path:
    """``root`` as an absolute directory path (``~`` expanded, symlinks resolved).

    Raises:
        ConfigError: ``root`` is not a directory.
    """
    given = file_path(root, "root")
    if not given.strip():
        # Path("") is the working directory: an empty setting would index wherever we run.
        raise ConfigError("root is empty; give the root folder of a repository ('.' for here)")
    try:
        path = Path(given).expanduser().resolve()
        is_dir = path.is_dir()
    except (OSError, RuntimeError) as exc:  # a name too long; a loop of symlinks (3.11-3.12)
        detail = getattr(exc, "strerror", None) or exc
        raise ConfigError(f"root {str(root)!r} cannot be read: {detail}") from exc
    if not is_dir:
        raise ConfigError(
            f"root {str(root)!r} is not a directory; give the root folder of a repository"
        )
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


def list_files(root: str | os.PathLike[str]) -> list[str]:
    """The source files under ``root``, as sorted repository-relative POSIX paths.

    A source file has an extension of :data:`LANGUAGES` and is text; the walk is the module's
    (``.gitignore`` respected, version-control, dependency and build folders skipped, no
    symlink followed, no file with several hard links).

    Raises:
        ConfigError: ``root`` is not a directory.
    """
    return walk_files(resolve_root(root), source_only=True)


def walk_files(
    root: Path, *, source_only: bool = False, hidden: bool = True, limit: int | None = None
) -> list[str]:
    """The files under ``root`` (already resolved), as sorted repository-relative POSIX paths.

    Args:
        root: The repository's folder, resolved.
        source_only: Only text files of a language of :data:`LANGUAGES`.
        hidden: Whether files and folders whose name starts with ``.`` are listed.
        limit: At most this many files: the first ones of a walk that takes each folder's files
            before its subfolders, in name order.
    """
    walk = _walk(root, source_only=source_only, hidden=hidden)
    return sorted(rel for rel, _ in itertools.islice(walk, limit))


@dataclass
class LeftOut:
    """What a walk would list but cannot: names that are not text (see :func:`shown_invalid`),
    files and folders it may not read (folders with a trailing ``/``, the root ``./``), and
    files with several hard links (another name may lie outside the root)."""

    invalid_names: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    hard_linked: list[str] = field(default_factory=list)

    def as_fields(self) -> dict[str, tuple[str, ...]]:
        """Each list sorted, by its name (the fields of a refresh's stats)."""
        return {
            "invalid_names": tuple(sorted(self.invalid_names)),
            "unreadable": tuple(sorted(self.unreadable)),
            "hard_linked": tuple(sorted(self.hard_linked)),
        }


def source_files(
    root: Path,
    known: Callable[[str, os.stat_result], bool],
    *,
    left_out: LeftOut | None = None,
) -> list[tuple[str, os.stat_result]]:
    """:func:`list_files` of ``root`` (resolved), each file with its ``stat``, for an index
    refresh: a file ``known(rel, stat)`` says is the text it indexed is not read again to tell
    whether it is binary (a refresh that finds nothing changed opens no file). The source files
    and folders the walk cannot list are added to ``left_out``."""
    walk = _walk(root, source_only=True, hidden=True, known=known, left_out=left_out)
    return sorted(walk)


def _walk(
    base: Path,
    *,
    source_only: bool,
    hidden: bool,
    known: Callable[[str, os.stat_result], bool] | None = None,
    left_out: LeftOut | None = None,
) -> Iterator[tuple[str, os.stat_result]]:
    """The files of the walk, each folder's files before its subfolders, by name; the files
    and folders it would take but cannot are added to ``left_out``."""
    left_out = left_out if left_out is not None else LeftOut()
    # Each folder to visit carries the ignore specs in force: (folder relative to root, spec).
    specs: list[tuple[str, Any]] = []
    exclude = _read_ignore(base / ".git" / "info" / "exclude")
    if exclude:
        specs.append(("", _spec(exclude)))
    stack: list[tuple[Path, list[tuple[str, Any]]]] = [(base, specs)]
    while stack:
        folder, inherited = stack.pop()
        rel_folder = folder.relative_to(base).as_posix()
        rel_folder = "" if rel_folder == "." else rel_folder
        own = _read_ignore(folder / ".gitignore")
        active = [*inherited, (rel_folder, _spec(own))] if own else inherited
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            left_out.unreadable.append(f"{rel_folder or '.'}/")
            continue
        if folder != base and any(e.name in _ENVIRONMENT_MARKERS for e in entries):
            continue  # the root itself may be an environment a user means to search
        subfolders: list[Path] = []
        for entry in entries:
            if entry.is_symlink() or (not hidden and entry.name.startswith(".")):
                continue
            rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
            if entry.is_dir():
                if entry.name not in _SKIPPED_DIRS and not _ignored(active, rel + "/"):
                    if _unicode_name(entry.name):
                        subfolders.append(Path(entry.path))
                    else:
                        left_out.invalid_names.append(shown_invalid(rel) + "/")
            elif entry.is_file():
                if source_only and language_of_path(entry.name) is None:
                    continue
                if _ignored(active, rel):
                    continue
                if not _unicode_name(entry.name):
                    left_out.invalid_names.append(shown_invalid(rel))
                    continue
                try:
                    stat = _listable(entry, rel, source_only=source_only, known=known)
                except PermissionError:
                    left_out.unreadable.append(rel)
                    continue
                if stat is not None and hard_linked(stat):
                    left_out.hard_linked.append(rel)  # another name may lie outside the root
                elif stat is not None:
                    yield rel, stat
        stack.extend((sub, active) for sub in reversed(subfolders))


def _unicode_name(name: str) -> bool:
    """Whether a file's name is text: a name in another encoding than the file system's reads
    with lone surrogates, which no path in a prompt or a JSON record can hold."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_invalid(name: str) -> str:
    r"""A name that is not text as text: each byte that is not UTF-8 written ``\xNN``, as
    ``ls -b`` and Python's ``repr`` of bytes show it.

    Example:
        >>> shown_invalid(os.fsdecode(b"caf\xe9.py"))
        'caf\\xe9.py'
    """
    raw = os.fsencode(name)
    return shown_path(raw.decode("utf-8", errors="backslashreplace"))


def _listable(
    entry: os.DirEntry[str],
    rel: str,
    *,
    source_only: bool,
    known: Callable[[str, os.stat_result], bool] | None,
) -> os.stat_result | None:
    """The file's ``stat`` if it is listed, or is left out only for its hard links.

    Raises:
        PermissionError: the file may not be read.
    """
    try:
        stat = entry.stat(follow_symlinks=False)
        if hard_linked(stat):
            return stat  # never opened: the caller leaves it out
        if source_only and not (known and known(rel, stat)) and is_binary(Path(entry.path)):
            return None
        return stat
    except PermissionError:
        raise
    except OSError:  # gone since the folder was read
        return None


@lru_cache(maxsize=64)
def _spec(lines: tuple[str, ...]) -> Any:
    try:
        import pathspec
    except ImportError:
        _warn_no_pathspec()
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except ValueError:
        # git skips a line that is not a pattern ("!" alone); pathspec refuses the whole file.
        return pathspec.GitIgnoreSpec.from_lines([line for line in lines if _pattern(line)])


def _pattern(line: str) -> bool:
    import pathspec

    try:
        pathspec.GitIgnoreSpec.from_lines([line])
    except ValueError:
        return False
    return True


register(_spec)


@cache
def _warn_no_pathspec() -> None:
    warnings.warn(
        "pathspec is not installed, so .gitignore files are not applied (only version-control, "
        'dependency and build folders are skipped); pip install "ctxpack[code]"',
        GitignoreUnsupportedWarning,
        stacklevel=6,
    )


def _read_ignore(path: Path) -> tuple[str, ...]:
    try:
        return tuple(path.read_text(encoding="utf-8", errors="replace").splitlines())
    except OSError:
        return ()


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


def is_binary(full: Path) -> bool:
    """Whether a file is binary: a NUL byte among its first 8000 bytes (git's rule).

    Raises:
        OSError: the file cannot be read.
    """
    with full.open("rb") as handle:
        return b"\0" in handle.read(_BINARY_PROBE)


def searchable(full: Path, *, max_bytes: int) -> bool:
    """Whether a listed file may be searched now: still a regular file, not a symlink, with one
    hard link, at most ``max_bytes`` long, and text (the listing may be older than the file)."""
    try:
        info = full.lstat()
        if full.is_symlink() or hard_linked(info) or info.st_size > max_bytes:
            return False
        return not is_binary(full)
    except OSError:
        return False


def iter_lines(full: Path) -> Iterator[str]:
    """The file's lines without line ends, streamed (undecodable bytes replaced), so that a
    line range of a huge file costs the range."""
    with full.open("r", encoding="utf-8", errors="replace", newline=None) as handle:
        for line in handle:
            yield line.rstrip("\n")


def resolve_file(root: Path, path: str, listing: Sequence[str] = ()) -> Path:
    """The file ``path`` names inside ``root`` (resolved), checked to be a file inside it.

    Raises:
        WorkspacePathError: absolute, ``..``, a symlink leading out, missing (with close
            matches from ``listing``), a directory (with the files in it), or a file with
            several hard links.
    """
    relative = check_relative(path, root)
    try:
        real = inside_root(root, root.joinpath(*relative.parts), path)
        real.is_dir()
    except OSError as exc:  # a name too long, a loop of symlinks
        raise WorkspacePathError(
            path, root=str(root), detail=f"cannot be read: {exc.strerror or exc}"
        ) from exc
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
