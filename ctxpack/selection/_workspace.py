"""Workspace: what a selector chooses from: messages, a repository, stored originals.

The repository's files are listed, checked and read through :mod:`ctxpack.code.files`, as code
retrieval's are; a passage (:class:`Passage`) is what the large model reads of one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._internal.arguments import item_list, shown, string, strings, tokens
from .._internal.paths import shown_path
from ..code import Engine, is_binary, iter_lines, resolve_file, resolve_root, walk_files
from ..errors import ConfigError, SelectionError, WorkspacePathError
from ..messages import Message, ensure_messages
from ..stages import tool_answers
from ..store import ArtifactStore, check_artifact_store
from ..tokens import CounterLike, TokenCounter, get_counter
from ._model import FileRequest
from ._search import FileSearch, keywords

if TYPE_CHECKING:
    from ..session import Session

__all__ = ["Passage", "Workspace"]


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


class Workspace:
    """The agent's workspace: its messages (tool results included), a repository root for files,
    and a store of originals.

    Files are read only inside ``root``: absolute paths, ``..`` and symlinks leading out are
    refused with :class:`~ctxpack.errors.WorkspacePathError`. Binary files are described, never
    shown. Files over ``max_file_bytes`` are streamed: a line range or a match of a huge log
    costs what it shows.

    The workspace also keeps the **durable notes** of the selections applied to it:
    :func:`~ctxpack.selection.apply_selection` adds each selection's notes, and every later context
    carries them, whether or not the later selection repeats them.

    Args:
        messages: ``Message`` objects or OpenAI-style dicts, chronological. Message indexes
            are positions in this list, from 0.
        root: The repository's folder, or ``None`` for a workspace without files.
        store: An :class:`~ctxpack.store.ArtifactStore` holding originals (a selection may name
            an artifact id among its tool results).
        model: Picks the token counter (as in :func:`ctxpack.pack`).
        counter: A token counter instead.
        max_file_bytes: Above this size a file is streamed, and only line ranges and matches
            are served from it.
        max_passage_lines: At most this many lines per passage; a longer range is cut, and says so.
        match_context: Lines shown before and after each matching line.
        max_matches: At most this many match windows per file; the passage says how many more.
        max_listed_files: At most this many files are listed and searched.
        search: ``"auto"`` (ripgrep when installed, else Python), ``"ripgrep"`` or ``"python"``.

    Example:
        >>> ws = Workspace([{"role": "user", "content": "Fix the login bug."}])
        >>> len(ws.messages), ws.root is None
        (1, True)
    """

    def __init__(
        self,
        messages: Iterable[Message | Mapping[str, Any]],
        root: str | Path | None = None,
        store: ArtifactStore | None = None,
        *,
        model: str | None = None,
        counter: CounterLike | None = None,
        max_file_bytes: int = 2_000_000,
        max_passage_lines: int = 300,
        match_context: int = 5,
        max_matches: int = 5,
        max_listed_files: int = 20_000,
        search: Engine = "auto",
    ) -> None:
        self._messages: tuple[Message, ...] = tuple(ensure_messages(messages))
        self.root: Path | None = resolve_root(root) if root is not None else None
        self.store = check_artifact_store(store) if store is not None else None
        self.counter: TokenCounter = get_counter(model, counter)
        for option, value, unit in (
            ("max_file_bytes", max_file_bytes, "bytes"),
            ("max_passage_lines", max_passage_lines, "lines"),
            ("max_matches", max_matches, "matches"),
            ("max_listed_files", max_listed_files, "files"),
        ):
            tokens(value, option, unit=unit)
        tokens(match_context, "match_context", minimum=0, unit="lines")
        self.max_file_bytes = max_file_bytes
        self.max_passage_lines = max_passage_lines
        self.match_context = match_context
        self.max_matches = max_matches
        self.max_listed_files = max_listed_files
        if search not in ("auto", "ripgrep", "python"):
            raise ConfigError(f"search must be 'auto', 'ripgrep' or 'python', got {shown(search)}")
        self.search_engine: Engine = search
        self._notes: list[str] = []
        self._files: list[str] | None = None

    @classmethod
    def from_session(
        cls,
        session: Session,
        root: str | Path | None = None,
        *,
        record: Literal["compact", "transcript"] = "compact",
        **options: Any,
    ) -> Workspace:
        """A workspace over a :class:`~ctxpack.Session`: its messages, its store, its counter.

        Args:
            session: The agent's session.
            root: The repository's folder, if files may be selected.
            record: ``"compact"`` (the default): tool outputs as the session filtered them,
                each marker naming the artifact id of its original, which a selection may
                include among its tool results to show the original whole; ``"transcript"``:
                every message as it arrived.
            options: Any other :class:`Workspace` option (``max_passage_lines``...).

        Example:
            >>> from ctxpack import Session
            >>> session = Session(model="gpt-4")
            >>> session.append({"role": "user", "content": "Fix the login bug."})
            >>> Workspace.from_session(session).messages[0].text
            'Fix the login bug.'
        """
        from ..session import Session

        if not isinstance(session, Session):
            raise ConfigError(f"session must be a Session, got {type(session).__name__}")
        if record not in ("compact", "transcript"):
            raise ConfigError(f"record must be 'compact' or 'transcript', got {shown(record)}")
        messages = session.compact() if record == "compact" else session.transcript()
        options.setdefault("counter", session.counter)
        return cls(messages, root, session.store, **options)

    # -- messages -------------------------------------------------------------------------

    @property
    def messages(self) -> tuple[Message, ...]:
        """The messages; a message's index is its position here, from 0."""
        return self._messages

    def extend(self, messages: Iterable[Message | Mapping[str, Any]]) -> None:
        """Add messages at the end (the durable notes stay)."""
        added = item_list(messages, "messages", what="messages or dicts")
        self._messages = tuple(ensure_messages([*self._messages, *added]))

    def calls(self) -> dict[str, tuple[int, int | None]]:
        """Each tool call id: the index of the assistant message that made it, and of the tool
        message answering it (``None`` while unanswered).

        The answer is the first result in the call's turn, the one the model read, as the
        packer pairs them (``ctxpack.stages.unanswered_calls``): a provider takes one result
        per call, right after it, so a tool re-run, or a result after other turns, answers
        nothing; an id an agent reuses names its last call."""
        out: dict[str, tuple[int, int | None]] = {}
        for i, msg in enumerate(self._messages):
            for call in msg.tool_calls or ():
                out[call.id] = (i, None)
        for answer, caller in tool_answers(self._messages).items():
            call_id = self._messages[answer].tool_call_id or ""
            if out.get(call_id, (-1, None))[0] == caller:
                out[call_id] = (caller, answer)
        return out

    def index_of(self, ref: int | str) -> int:
        """The index a selection's message reference names: an index, an id, or an index
        written as text.

        Raises:
            SelectionError: no such message (the error says which indexes and ids exist).
        """
        n = len(self._messages)
        if isinstance(ref, int) and not isinstance(ref, bool):
            if 0 <= ref < n:
                return ref
            raise SelectionError([f"message index {ref} is out of range: {self._extent()}"])
        for i, msg in enumerate(self._messages):
            if msg.id == ref:
                return i
        # Decimal digits only: "²" is a digit to str.isdigit() but not to int(), and a text
        # of thousands of digits is past int()'s limit; either names no message.
        digits = ref.strip() if isinstance(ref, str) else ""
        if digits.isdecimal() and len(digits) <= 18:
            return self.index_of(int(digits))
        ids = ", ".join(m.id for m in self._messages[:8]) + (", ..." if n > 8 else "")
        raise SelectionError([f"no message with id {ref!r}: {self._extent()} (ids {ids})"])

    def _extent(self) -> str:
        n = len(self._messages)
        return f"the workspace has messages 0-{n - 1}" if n else "the workspace has no messages"

    # -- durable notes ---------------------------------------------------------------------

    @property
    def notes(self) -> tuple[str, ...]:
        """The durable notes so far, oldest first."""
        return tuple(self._notes)

    def add_notes(self, notes: Iterable[str]) -> list[str]:
        """Keep ``notes`` (blank and repeated ones are skipped); returns the new ones."""
        added = []
        for note in strings(notes, "notes", what="notes"):
            text = note.strip()
            if text and text not in self._notes:
                self._notes.append(text)
                added.append(text)
        return added

    def forget_note(self, note: str) -> None:
        """Drop a durable note that no longer holds.

        Raises:
            KeyError: no such note (the error lists the notes).
        """
        text = string(note, "note").strip()
        if text not in self._notes:
            raise KeyError(f"no durable note {note!r}; notes are {self._notes}")
        self._notes.remove(text)

    # -- files -----------------------------------------------------------------------------

    def files(self) -> list[str]:
        """The files under the root (relative, ``/``-separated, sorted), at most
        ``max_listed_files``; empty without a root.

        The walk is code retrieval's (:mod:`ctxpack.code.files`): ``.gitignore`` respected,
        version-control, dependency and build folders skipped, no symlink followed, no file
        with several hard links; hidden files and folders are left out too. Listed once; call
        :meth:`refresh_files` after the repository changes."""
        if self.root is None:
            return []
        if self._files is None:
            self._files = walk_files(self.root, hidden=False, limit=self.max_listed_files)
        return list(self._files)

    def refresh_files(self) -> None:
        """Forget the file listing, so that the next use lists the root again."""
        self._files = None

    def resolve_path(self, path: str) -> Path:
        """The absolute path of the file ``path`` names inside the root.

        Raises:
            WorkspacePathError: no root, an absolute path, ``..``, a symlink leading out, a
                directory or a missing file; the message says which and what exists.
        """
        if self.root is None:
            raise WorkspacePathError(
                path,
                root=None,
                detail="the workspace has no root; give Workspace(root=...) to read files",
            )
        return resolve_file(self.root, string(path, "path"), self.files())

    def searcher(self) -> FileSearch:
        """A :class:`~ctxpack.selection.FileSearch` over :meth:`files`.

        Raises:
            ConfigError: the workspace has no root.
        """
        if self.root is None:
            raise ConfigError("the workspace has no root to search; give Workspace(root=...)")
        return FileSearch(
            self.root, self.files(), engine=self.search_engine, max_bytes=self.max_file_bytes
        )

    def read(self, request: FileRequest) -> Passage | list[Passage]:
        """The passages a file request shows: one for a range or the start of the file, one
        per match window for a match.

        Raises:
            WorkspacePathError: the path is refused (see :meth:`resolve_path`).
            SelectionError: the range lies outside the file, or nothing matches.
            ConfigError: ``request`` is not a :class:`~ctxpack.selection.FileRequest`.
        """
        if not isinstance(request, FileRequest):
            raise ConfigError(
                f"request must be a FileRequest (FileRequest(path=..., lines=... or match=...)), "
                f"got {type(request).__name__}"
            )
        full = self.resolve_path(request.path)
        rel = Path(full).relative_to(self.root).as_posix() if self.root else request.path
        size = full.stat().st_size
        if is_binary(full):
            return Passage(rel, 1, 0, (), 0, f"binary file, {size} bytes: not shown")
        huge = size > self.max_file_bytes
        if request.match is not None:
            return self._matches(full, rel, request.match)
        wanted = request.line_range
        if wanted is None:
            if huge:
                raise SelectionError(
                    [
                        f"{rel} has {size} bytes, over the {self.max_file_bytes}-byte limit for "
                        "a whole file; ask for a lines range or a match"
                    ]
                )
            return self._range(full, rel, 1, self.max_passage_lines, whole=True)
        return self._range(full, rel, *wanted, whole=False)

    def _range(self, full: Path, rel: str, start: int, end: int, *, whole: bool) -> Passage:
        shown: list[str] = []
        total = 0
        limit = start + self.max_passage_lines - 1
        for total, line in enumerate(iter_lines(full), 1):
            if start <= total <= min(end, limit):
                shown.append(line)
        if total == 0:
            return Passage(rel, 1, 0, (), 0, "empty file")
        if not whole and start > total:
            raise SelectionError(
                [f"lines {start}-{end} of {rel}: the file has {total} lines (1-{total})"]
            )
        if not whole and end > total:
            raise SelectionError(
                [f"lines {start}-{end} of {rel}: the file has {total} lines, ending at {total}"]
            )
        last = start + len(shown) - 1
        note = ""
        if whole and last < total:
            note = f"first {len(shown)} of {total} lines; ask for a lines range for more"
        elif not whole and last < end:
            note = f"cut at {self.max_passage_lines} lines; lines {last + 1}-{end} not shown"
        return Passage(rel, start, last, tuple(shown), total, note)

    def _matches(self, full: Path, rel: str, text: str) -> list[Passage]:
        # Two streamed passes, so that a huge file is never held in memory: find the matching
        # lines, then read the windows around them.
        needle = text.lower()
        hits: list[int] = []
        total = 0
        for total, line in enumerate(iter_lines(full), 1):
            if needle in line.lower():
                hits.append(total)
        if not hits:
            words = keywords(text, most=3)
            found = [w for w in words if _contains(full, w)]
            hint = f"; these words of it are there: {', '.join(found)}" if found else ""
            raise SelectionError([f"match {text!r}: no line of {rel} contains it{hint}"])
        windows: list[list[int]] = []
        for line_no in hits:
            lo, hi = max(1, line_no - self.match_context), min(total, line_no + self.match_context)
            if windows and lo <= windows[-1][1] + 1:
                windows[-1][1] = max(windows[-1][1], hi)
            else:
                windows.append([lo, hi])
        kept = [(lo, min(hi, lo + self.max_passage_lines - 1)) for lo, hi in windows]
        kept = kept[: self.max_matches]
        wanted: dict[int, str] = {}
        for line_no, line in enumerate(iter_lines(full), 1):
            if line_no > kept[-1][1]:
                break
            if any(lo <= line_no <= hi for lo, hi in kept):
                wanted[line_no] = line
        passages = []
        for n, (lo, hi) in enumerate(kept):
            note = f"match {text!r}"
            if n == len(kept) - 1 and len(windows) > len(kept):
                rest = sum(1 for h in hits if h > hi)
                note += f"; {rest} more matching line(s) after line {hi} not shown"
            shown = tuple(wanted[i] for i in range(lo, hi + 1))
            passages.append(Passage(rel, lo, hi, shown, total, note))
        return passages

    def __repr__(self) -> str:
        root = str(self.root) if self.root else None
        return (
            f"Workspace({len(self._messages)} messages, root={root!r}, "
            f"notes={len(self._notes)}, store={self.store!r})"
        )


_ARTIFACT = re.compile(r"art_[0-9a-f]{16}")


def is_artifact_id(ref: str) -> bool:
    """Whether ``ref`` has the shape of an artifact store id (``art_`` and 16 hex digits)."""
    return bool(_ARTIFACT.fullmatch(ref))


def _contains(full: Path, word: str) -> bool:
    return any(word in line.lower() for line in iter_lines(full))


def check_workspace(workspace: object, goal: object = "") -> None:
    """Raise :class:`~ctxpack.ConfigError` unless ``workspace`` is a :class:`Workspace` and
    ``goal`` a string: what a selector is called with."""
    if not isinstance(workspace, Workspace):
        raise ConfigError(f"workspace must be a Workspace, got {type(workspace).__name__}")
    string(goal, "goal")
