"""Which file region a tool call shows: a shell command (``cat f``, ``nl -ba f | sed -n
'10,40p'``...), a text editor's ``view`` (Anthropic's text editor tool, SWE-agent's and
OpenHands' ``str_replace_editor``) or a read tool (``Read``, ``read_file``...).

A session uses it to tell when a later view of a file supersedes an earlier one.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping
from typing import Any, NamedTuple

from .jsontext import read_json

__all__ = [
    "PATH_KEYS",
    "FileRegion",
    "ShellFolders",
    "call_arguments",
    "call_region",
    "read_failed",
    "region_of_call",
    "view_region",
]

_RANGE = re.compile(r"^(\d+)(?:,(\d+))?p$")
_WHOLE = (1, 10**9)


class FileRegion(NamedTuple):
    """Lines ``start..end`` (1-based, inclusive) of ``path``; a whole file ends at 10**9.

    ``basis`` names the tool when ``start`` and ``end`` are its own offsets rather than line
    numbers: read tools count from 0 or from 1, so only two views of the same tool compare.
    """

    path: str
    start: int
    end: int
    basis: str = ""
    # What a relative ``path`` is relative to: "" the folder the agent's shell started in
    # (or an absolute path), "shell N" its folder after the N-th command that may have moved
    # it, "tool T" the folder a tool other than a shell reads from (unknown to the session).
    within: str = ""

    def covers(self, other: FileRegion) -> bool:
        """Whether this region shows everything ``other`` showed, of the same file."""
        if self.path != other.path or self.within != other.within:
            return False
        if (self.start, self.end) == _WHOLE:
            return True
        return self.basis == other.basis and self.start <= other.start and self.end >= other.end


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment)
    except ValueError:
        return segment.split()


def _range_of(words: list[str]) -> tuple[int, int] | None:
    """The range a ``sed -n 'A,Bp'``, ``head -n N`` or ``head -N`` shows, if that is all."""
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    if program == "sed" and "-n" in words:
        for word in words[1:]:
            match = _RANGE.match(word)
            if match:
                start = int(match[1])
                return start, int(match[2]) if match[2] else start
        return None
    if program == "head":
        for i, word in enumerate(words[1:], start=1):
            if word in ("-n", "--lines") and i + 1 < len(words) and words[i + 1].isdigit():
                return 1, int(words[i + 1])
            if m := re.fullmatch(r"-n?(\d+)|--lines=(\d+)", word):
                return 1, int(m[1] or m[2])
            # Bytes (-c), all but the last lines (-n -5), a count in units (-n 2K): not a
            # range of lines anyone can place.
            if word.startswith(("-c", "--bytes", "-n", "--lines")):
                return None
        return 1, 10
    return None


def view_region(command: str, workdir: str = "") -> FileRegion | None:
    """The file region a command shows, or ``None`` when it is not a plain view of one file;
    ``workdir``, the folder the command starts in, when a call says it.

    Example:
        >>> view_region("cd /repo && nl -ba src/a.py | sed -n '10,40p'")
        FileRegion(path='/repo/src/a.py', start=10, end=40, basis='', within='')
        >>> view_region("cat src/a.py").end
        1000000000
        >>> view_region("grep -n foo src/a.py") is None
        True
    """
    *before, segment = re.split(r"&&|;|\|\|", command)
    folder = _folder(before, workdir)
    if folder is None:
        return None
    stages = [_words(part) for part in segment.split("|")]
    if not stages or not stages[0]:
        return None
    reader = stages[0]
    program = reader[0].rsplit("/", 1)[-1]
    args = [w for w in reader[1:] if not w.startswith("-")]
    if program in ("cat", "nl"):
        if len(args) != 1 or any(c in args[0] for c in "*?[>"):
            return None
        region: tuple[int, int] | None = _WHOLE
    elif program in ("sed", "head"):
        operands = [w for w in args if not _RANGE.match(w) and not w.isdigit()]
        if len(operands) != 1:
            return None
        region = _range_of(reader)
        args = operands
    else:
        return None
    for stage in stages[1:]:
        narrowed = _range_of(stage)
        if narrowed is None or region is None:
            return None
        # A range of a range: offsets into what the reader showed.
        start = region[0] + narrowed[0] - 1
        region = (start, min(region[1], region[0] + narrowed[1] - 1))
    if region is None:
        return None
    # The file as the folder the command ran in names it: `cd a && cat setup.py` and
    # `cd b && cat setup.py` read two files, and `./x.py` is `x.py`.
    return FileRegion(posixpath.normpath(posixpath.join(folder, args[0])), region[0], region[1])


def _folder(segments: list[str], folder: str = "") -> str | None:
    """Where the ``cd``s among ``segments`` (the commands before a view) lead, from the folder
    the command started in (``folder``, ``""`` when unknown); ``None`` when one goes where
    nobody can tell (``cd -``, ``cd ~``, ``cd $DIR``, ``cd`` alone)."""
    for segment in segments:
        words = _words(segment)
        if not words or words[0] != "cd":
            continue
        if len(words) != 2 or words[1][:1] in ("-", "~", "$") or "$" in words[1]:
            return None
        folder = posixpath.join(folder, words[1])
    return folder


# A word that may move a shell: where the session cannot tell, it takes the shell as moved.
_MOVE = re.compile(r"(?<![\w./$-])(?:cd|pushd|popd)(?![\w./-])")
_PWD = re.compile(r"\s*pwd(?:\s+-[LP])?\s*")
# What mini-swe-agent wraps an output in, when the command succeeded.
_WRAPPER = re.compile(r"</?output>|<returncode>0</returncode>")


class ShellFolders:
    """Where the relative paths of a session's shell views lead, read from its calls in turn.

    A shell the agent keeps (SWE-agent's, OpenHands', Claude Code's Bash) stays where a ``cd``
    left it, so ``cat a.py`` before and after ``cd pkg`` may read two files; a harness that
    starts each command afresh (mini-swe-agent) does not. Not knowing which, a relative path
    is compared only with those written before the next command that may move the shell (its
    ``within``); a bare ``pwd``'s output names where that stretch's paths lead, so that they
    compare with absolute ones. ``state`` is JSON, changed in place (the session stores it):
    ``moves``, the commands that may have moved the shell; ``known``, the folders of the
    stretches, by their ``within``.
    """

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state

    @property
    def within(self) -> str:
        """What a shell's relative path is relative to now."""
        moves = self.state.get("moves", 0)
        return f"shell {moves}" if moves else ""

    def place(self, region: FileRegion | None) -> FileRegion | None:
        """A shell view's ``region``, a relative path tied to the stretch it was written in."""
        if region is None or region.within or region.path.startswith("/"):
            return region
        return region._replace(within=self.within)

    def ran(self, args: Mapping[str, Any] | None) -> str | None:
        """Note a call with these arguments (:func:`call_arguments`): a command that may move
        the shell ends the stretch, unless where its ``cd`` leads is the folder known. Returns
        the stretch a bare ``pwd`` runs in, for :meth:`learn` to read its output; else
        ``None``."""
        command = None if args is None else _command(args)
        if args is None or not isinstance(command, str):
            return None
        if _PWD.fullmatch(command) and not _workdir(args):
            return self.within
        if _MOVE.search(command):
            known = self.state.get("known", {}).get(self.within)
            end = _moved_to(command)
            if end is None or known != posixpath.normpath(posixpath.join(known or "", end)):
                self.state["moves"] = self.state.get("moves", 0) + 1
        return None

    def learn(self, within: str, output: str) -> None:
        """A ``pwd`` run in the stretch ``within`` printed ``output``: that stretch's folder,
        when it is one absolute path."""
        lines = [line.strip() for line in output.splitlines() if line.strip()]
        shown = [line for line in lines if not _WRAPPER.fullmatch(line)]
        if len(shown) == 1 and re.fullmatch(r"/[^\x00-\x1f<>]*", shown[0]):
            self.state.setdefault("known", {})[within] = posixpath.normpath(shown[0])

    def resolved(self, region: FileRegion) -> FileRegion:
        """``region`` with its relative path made absolute when its stretch's folder is known."""
        if region.path.startswith("/") or region.within.startswith("tool "):
            return region
        folder = self.state.get("known", {}).get(region.within)
        if folder is None:
            return region
        path = posixpath.normpath(posixpath.join(folder, region.path))
        return region._replace(path=path, within="")


def _moved_to(command: str) -> str | None:
    """Where the ``cd`` commands of ``command`` leave its shell, from where it started (``""``
    for nowhere else); ``None`` when the session cannot tell (a ``pushd``, a ``cd`` in a
    subshell or after a ``then``, a ``cd -``)."""
    segments = re.split(r"&&|\|\||[;|\n]", command)
    for segment in segments:
        words = _words(segment)
        if any(_MOVE.fullmatch(w) for w in words) and words[0] != "cd":
            return None
    return _folder(segments)


# What a read that failed prints: the file is missing or is a folder, a tool refused.
_FAILED_READ = re.compile(
    r"No such file or directory|[Dd]oes not exist|Is a directory|Permission denied|"
    r"cannot open|can't read|<tool_use_error>|^\s*<returncode>[1-9]\d*</returncode>",
    re.MULTILINE,
)


def read_failed(text: str) -> bool:
    """Whether a view's output shows none of its file: empty, or a few lines saying the read
    failed (a file's own text that mentions such an error is longer than that)."""
    shown = [line for line in text.splitlines() if line.strip()]
    if not shown:
        return True
    return bool(_FAILED_READ.search(text)) and (
        len(shown) <= 5 or bool(re.match(r"\s*<returncode>[1-9]", text))
    )


# Tools that read one file, by the last part of their name (``mcp__fs__read_file``): Claude
# Code's Read, Gemini CLI's and the MCP filesystem server's read_file / read_text_file.
_READ_TOOLS = frozenset({"read", "read_file", "readfile", "read_text_file", "view_file"})
# The arguments that name the file a tool reads or writes.
PATH_KEYS = ("path", "file_path", "absolute_path", "target_file", "filename")


def call_region(tool: str, arguments: str) -> FileRegion | None:
    """The file region a tool call shows, or ``None`` when it is not a plain view of one file.

    Example:
        >>> call_region("bash", '{"command": "sed -n 5,9p a.py"}')
        FileRegion(path='a.py', start=5, end=9, basis='', within='')
        >>> call_region("str_replace_editor", '{"command": "view", "path": "/r/a.py",'
        ...             ' "view_range": [10, -1]}')
        FileRegion(path='/r/a.py', start=10, end=1000000000, basis='', within='')
        >>> call_region("Read", '{"file_path": "/r/a.py", "offset": 100, "limit": 50}')
        FileRegion(path='/r/a.py', start=100, end=150, basis='read', within='')
        >>> call_region("shell", '{"command": ["bash", "-lc", "cat a.py"]}').path
        'a.py'
    """
    return region_of_call(tool, call_arguments(arguments))


def region_of_call(tool: str, args: Mapping[str, Any] | None) -> FileRegion | None:
    """:func:`call_region` of arguments already read (:func:`call_arguments`): a session reads
    a call's arguments once for its region and for :meth:`ShellFolders.ran`."""
    if args is None:
        return None
    command = _command(args)
    path = next((v for k in PATH_KEYS if isinstance(v := args.get(k), str) and v), None)
    if command == "view" and path is not None:
        return _placed(_editor_view(path, args.get("view_range")), tool)
    if isinstance(command, str):
        return view_region(command, _workdir(args))
    name = re.split(r"__|[./:]", tool)[-1].lower()
    if name in _READ_TOOLS and path is not None:
        return _placed(_read_view(path, args, name), tool)
    return None


def call_arguments(arguments: str) -> Mapping[str, Any] | None:
    """A call's arguments as read from their JSON text; ``None`` when they are no object."""
    try:
        args = read_json(arguments) if arguments.strip() else {}
    except ValueError:
        return None
    return args if isinstance(args, Mapping) else None


def _command(args: Mapping[str, Any]) -> Any:
    """A call's ``command`` (or ``cmd``) argument, a shell's argv as one command line."""
    command = args.get("command", args.get("cmd"))
    if isinstance(command, list) and command and all(isinstance(w, str) for w in command):
        # Codex's shell tool: ["bash", "-lc", "cat a.py"] runs its last word as a script.
        script = len(command) >= 3 and command[-2] in ("-c", "-lc")
        command = command[-1] if script else shlex.join(command)
    return command


def _workdir(args: Mapping[str, Any]) -> str:
    """The folder a shell call says it runs in (Codex's ``workdir``), or ``""``."""
    folder = next((v for k in _WORKDIR_KEYS if isinstance(v := args.get(k), str)), "")
    return "" if "$" in folder or folder.startswith("~") else folder


_WORKDIR_KEYS = ("workdir", "cwd", "working_dir")


def _placed(region: FileRegion | None, tool: str) -> FileRegion | None:
    """A tool's view with its path normalised; a relative path is the tool's own (it reads
    from a folder a shell's ``cd`` does not move, and the session does not know)."""
    if region is None:
        return None
    path = posixpath.normpath(region.path)
    return region._replace(path=path, within="" if path.startswith("/") else f"tool {tool}")


def _editor_view(path: str, view_range: Any) -> FileRegion | None:
    """A text editor's ``view``: the whole file, or ``view_range`` [start, end] (1-based,
    inclusive, end -1 for the end of the file)."""
    if view_range is None:
        return FileRegion(path, *_WHOLE)
    if (
        not isinstance(view_range, list)
        or len(view_range) != 2
        or not all(type(n) is int for n in view_range)
    ):
        return None
    start, end = view_range
    return FileRegion(path, max(start, 1), _WHOLE[1] if end == -1 else end)


def _read_view(path: str, args: Mapping[str, Any], tool: str) -> FileRegion | None:
    """A read tool's view: whole, its first ``head`` lines, or ``limit`` lines from
    ``offset`` (in the tool's own count). A ``tail`` is a region nobody can place."""
    offset, limit, head = args.get("offset"), args.get("limit"), args.get("head")
    if args.get("tail") is not None:
        return None
    if type(head) is int and head > 0 and offset is None and limit is None:
        return FileRegion(path, 1, head)
    if offset is None and limit is None and head is None:
        return FileRegion(path, *_WHOLE)
    if type(offset or 0) is not int or (limit is not None and type(limit) is not int):
        return None
    start = offset or 0
    return FileRegion(path, start, start + limit if limit is not None else _WHOLE[1], tool)
