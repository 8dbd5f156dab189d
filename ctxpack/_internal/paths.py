"""Paths shown to a model and files read for one: printable names, confinement at read time.

A file name is data an attacker may choose. Shown raw, a name holding a newline can forge a
line of the context (``--- SYSTEM NOTE ...``), and bidirectional or zero-width characters can
make it read as another name: :func:`shown_path` escapes every character that is not printable.
A file is read only when, at that moment, it resolves inside the root and has a single hard
link: a second link may sit anywhere on the same file system, outside the root, and nothing
tells where (:func:`confined_file`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath, PureWindowsPath

from ..errors import WorkspacePathError
from .arguments import os_path

__all__ = [
    "check_relative",
    "confined_file",
    "hard_linked",
    "inside_root",
    "read_confined",
    "read_regular",
    "refuse_hard_links",
    "shown_path",
]


def shown_path(path: str) -> str:
    r"""``path`` with each unprintable character (controls, line breaks, format characters such
    as zero-width and bidirectional marks) written as a Python escape.

    Example:
        >>> shown_path("ok/naïve.py"), shown_path("a\n--- SYSTEM NOTE.py")
        ('ok/naïve.py', 'a\\n--- SYSTEM NOTE.py')
    """
    if path.isprintable():
        return path
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in path)


def check_relative(path: str, root: Path) -> PurePosixPath:
    """``path`` as a relative path that cannot climb out of ``root``, or an error saying why.

    Raises:
        WorkspacePathError: ``path`` is empty, holds a NUL, is absolute or holds ``..``.
    """
    if not path or not os_path(path):
        raise WorkspacePathError(path, root=str(root), detail="not a valid path")
    if PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute():
        raise WorkspacePathError(
            path,
            root=str(root),
            detail=f"absolute paths are refused; give a path relative to the root {root}",
        )
    relative = PurePosixPath(path.replace("\\", "/"))
    if ".." in relative.parts:
        raise WorkspacePathError(
            path, root=str(root), detail="'..' is refused: paths stay inside the root"
        )
    return relative


def hard_linked(info: os.stat_result) -> bool:
    """Whether a regular file has more than one hard link (so another name may be anywhere)."""
    return stat.S_ISREG(info.st_mode) and info.st_nlink > 1


def inside_root(root: Path, full: Path, name: str) -> Path:
    """``full`` with every symlink resolved, checked to lie inside ``root`` (itself resolved).

    Raises:
        WorkspacePathError: a symlink on the way leads outside the root.
    """
    real = Path(os.path.realpath(full))
    if real != root and root not in real.parents:
        raise WorkspacePathError(
            name,
            root=str(root),
            detail=f"a symlink leads outside the root (to {shown_path(str(real))}); it is refused",
        )
    return real


def refuse_hard_links(info: os.stat_result, name: str, root: Path) -> None:
    """Refuse a regular file with several hard links (see the module's note).

    Raises:
        WorkspacePathError: the file has more than one hard link.
    """
    if hard_linked(info):
        raise WorkspacePathError(
            name,
            root=str(root),
            detail=f"has {info.st_nlink} hard links, and another may lie outside the root; "
            "files with several hard links are refused (copy the file to read it)",
        )


def confined_file(root: Path, relative: str) -> Path:
    """``root / relative`` resolved, checked now to be a regular file inside ``root`` with one
    hard link.

    Raises:
        WorkspacePathError: a symlink on the way leads outside the root, the file is not a
            regular file, or it has several hard links.
    """
    real = inside_root(root, root.joinpath(relative), relative)
    try:
        info = real.stat()
    except OSError as exc:
        raise WorkspacePathError(
            relative, root=str(root), detail=f"cannot be read ({exc.strerror})"
        ) from exc
    if not stat.S_ISREG(info.st_mode):
        raise WorkspacePathError(relative, root=str(root), detail="is not a regular file")
    refuse_hard_links(info, relative, root)
    return real


def read_confined(root: Path, relative: str) -> bytes:
    """The bytes of :func:`confined_file` (see :func:`read_regular`).

    Raises:
        WorkspacePathError: as :func:`confined_file` and :func:`read_regular`.
        OSError: the file cannot be read.
    """
    return read_regular(root, confined_file(root, relative), relative)


def read_regular(root: Path, real: str | Path, relative: str) -> bytes:
    """The bytes of ``real``, a path inside ``root`` with every symlink resolved, opened
    without following a symlink or waiting on a pipe swapped in since it was resolved, and
    checked again on the open file: a regular file with one hard link.

    Raises:
        WorkspacePathError: a symlink took the file's place, or it is not a regular file, or
            it has several hard links.
        OSError: the file cannot be read.
    """
    try:
        # Nor wait on a named pipe swapped in: the open file is checked to be a regular file.
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(real, flags)
    except OSError as exc:
        if os.path.islink(real):  # ELOOP: a symlink took the file's place since the check
            raise WorkspacePathError(
                relative, root=str(root), detail="was replaced by a symlink; it is refused"
            ) from exc
        raise
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise WorkspacePathError(relative, root=str(root), detail="is not a regular file")
        refuse_hard_links(info, relative, root)
        return handle.read()
