"""What every filter shares: the output it reads, the lines it keeps, the notes it adds.

A filter is extractive: it returns a selection of the output's lines, verbatim and in order (a
filter of diagnostics may group them by file), with notes in between that say what was hidden
and counts ("[… 57 lines hidden]"). Every note starts with ``[…`` or ``[ctxpack``, so a reader
(and a test) can tell a kept line from a note.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from numbers import Integral
from typing import Protocol, runtime_checkable

from .._internal.arguments import optional_text, shown, string, strings
from .._internal.escapes import TERMINAL_CODE
from ..errors import ConfigError
from ..signals.stop_words import GOAL_STOP_WORDS

__all__ = [
    "MAX_LINE_CHARS",
    "NOTE_PREFIXES",
    "Extract",
    "OutputFilter",
    "ToolOutput",
    "add_gap",
    "assemble",
    "cut_middle",
    "gap_note",
    "goal_terms",
    "hidden",
    "is_note",
]

NOTE_PREFIXES = ("[…", "[ctxpack")

MAX_LINE_CHARS = 4_000
"""The longest line (or JSON string) a filtered tool output keeps whole: about 1,000 tokens of
prose or code, 3,000 of base64."""

# The wrapper a harness puts around a command's output (mini-swe-agent's, among others): short
# lines that frame the output rather than belong to it.
_ENVELOPE = re.compile(
    r"^\s*</?(returncode|output|output_head|output_tail|elided_chars|warning|stdout|stderr)>"
)
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


def _clean(line: str) -> str:
    # A progress bar redraws its line with carriage returns: what a terminal shows is the last.
    if "\r" in line:
        line = line.rstrip("\r").rsplit("\r", 1)[-1]
    return TERMINAL_CODE.sub("", line) if "\x1b" in line else line


@dataclass(frozen=True)
class ToolOutput:
    """A tool's output as it arrived, with what is known about where it came from.

    Args:
        text: The output, raw.
        tool: The tool's name (``"bash"``, ``"read_file"``, an MCP tool...), when known.
        command: The command line that produced it, when known (a shell tool's argument).
        goal: What the agent is after: the reasoning that made the call, the user's question.
            Filters keep the lines that share words with it.
    """

    text: str
    tool: str | None = None
    command: str | None = None
    goal: str | None = None
    terms: frozenset[str] = field(default=frozenset(), compare=False)

    def __post_init__(self) -> None:
        string(self.text, "ToolOutput.text")
        for name in ("tool", "command", "goal"):
            optional_text(getattr(self, name), f"ToolOutput.{name}")
        if not isinstance(self.terms, frozenset):
            # A frozen dataclass sets its own fields this way.
            terms = frozenset(strings(self.terms, "ToolOutput.terms", what="words"))
            object.__setattr__(self, "terms", terms)

    @cached_property
    def lines(self) -> list[str]:
        """The output's lines, ANSI codes and carriage-return redraws removed."""
        if "\r" not in self.text and "\x1b" not in self.text:
            return self.text.split("\n")
        return [_clean(line) for line in self.text.split("\n")]

    @cached_property
    def envelope(self) -> frozenset[int]:
        """Indices of the harness's wrapper lines (``<returncode>``, ``<output>``...)."""
        if "<" not in self.text:  # the wrapper's tags: most outputs have none
            return frozenset()
        return frozenset(i for i, line in enumerate(self.lines) if _ENVELOPE.match(line))

    @cached_property
    def body(self) -> list[int]:
        """Indices of the lines that are the output proper (not the wrapper)."""
        env = self.envelope
        if not env:
            return list(range(len(self.lines)))
        return [i for i in range(len(self.lines)) if i not in env]

    @cached_property
    def goal_words(self) -> frozenset[str]:
        """Lower-case words of the goal (3 letters or more, common words left out)."""
        return self.terms or goal_terms(self.goal or "")

    @cached_property
    def program(self) -> str:
        """The first program of the command, without its path (``"pytest"``, ``"npm"``...)."""
        return command_program(self.command or "")

    def mentions_goal(self, line: str) -> bool:
        """Whether ``line`` shares a word with the goal."""
        words = self.goal_words
        return bool(words) and any(w.lower() in words for w in _WORDS.findall(line))


def command_program(command: str) -> str:
    """The program a command line runs: the first word that is not an env assignment, ``cd x
    &&``, ``sudo`` or a wrapper like ``python -m``.

    Example:
        >>> command_program("cd /repo && python -m pytest tests/ -x")
        'pytest'
        >>> command_program("FOO=1 npx jest --ci")
        'jest'
    """
    segment = command.split("&&")[-1] if "&&" in command else command
    segment = segment.split("|")[0]
    words = segment.split()
    i = 0
    while i < len(words):
        word = words[i]
        base = word.rsplit("/", 1)[-1]
        if ("=" in word and not word.startswith("-") and i == 0) or base in ("sudo", "env", "time"):
            i += 1
            continue
        if base in ("npx", "uv", "poetry", "pipenv") and i + 1 < len(words):
            i += 1
            if words[i] == "run" and i + 1 < len(words):
                i += 1
            continue
        if re.fullmatch(r"python[\d.]*", base) and i + 2 < len(words) and words[i + 1] == "-m":
            return words[i + 2]
        return base
    return ""


def goal_terms(goal: str) -> frozenset[str]:
    """The words of a goal that can locate a line: identifiers of 3+ characters, lower-cased,
    without common English words.

    Example:
        >>> sorted(goal_terms("Check that refresh_token handles expiresAt"))
        ['expiresat', 'handles', 'refresh_token']
    """
    return frozenset(w.lower() for w in _WORDS.findall(goal) if w.lower() not in GOAL_STOP_WORDS)


def is_note(line: str) -> bool:
    """Whether a line of a filtered output is a note the filter added (not a kept line)."""
    return line.startswith(NOTE_PREFIXES)


def hidden(count: int, what: str = "lines", where: str = "") -> str:
    """The note that stands for ``count`` hidden items: ``[… 57 lines hidden]``."""
    return f"[… {count} {what} hidden{where}]"


def cut_middle(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters; else its first three quarters of
    ``limit`` and its last quarter, around a note of how many characters are hidden between.

    Example:
        >>> cut_middle("a" * 30 + "b" * 10, 20)
        'aaaaaaaaaaaaaaa[… 20 characters hidden]bbbbb'
    """
    if len(text) <= limit:
        return text
    head, tail = limit * 3 // 4, limit // 4
    return text[:head] + hidden(len(text) - head - tail, "characters") + text[len(text) - tail :]


def gap_note(first: int, last: int) -> str:
    """The note for hidden lines ``first..last`` (1-based, inclusive)."""
    if first == last:
        return f"[… 1 line hidden: {first}]"
    return f"[… {last - first + 1} lines hidden: {first}-{last}]"


def add_gap(out: list[str], lines: Sequence[str], start: int, stop: int) -> None:
    """``lines[start:stop]``, hidden, added to ``out``: one note naming them, or the lines
    themselves when they are no longer than it (a note standing for a line of two characters
    costs more than the line)."""
    if stop <= start:
        return
    note = gap_note(start + 1, stop)
    if sum(map(len, lines[start:stop])) + stop - start <= len(note) + 1:
        out.extend(lines[start:stop])
    else:
        out.append(note)


def _is_index(value: object) -> bool:
    # An int first, the common case; numpy's integers too, but not a bool.
    return type(value) is int or (isinstance(value, Integral) and not isinstance(value, bool))


def _checked_assembly(
    output: object, keep: object, notes: object
) -> tuple[list[int], Mapping[int, str]]:
    """:func:`assemble`'s arguments checked: the kept indices sorted, and the notes."""
    if not isinstance(output, ToolOutput):
        raise ConfigError(f"output must be a ToolOutput, got {type(output).__name__}")
    if isinstance(keep, (str, bytes, Mapping)) or not isinstance(keep, Iterable):
        raise ConfigError(f"keep must be a list of line indices, got {type(keep).__name__}")
    # Each item checked before the set is made: a list in it is not hashable, and a sentinel of
    # None would take a None item for "nothing wrong".
    items = list(keep)
    wrong = next((i for i, item in enumerate(items) if not _is_index(item)), None)
    if wrong is not None:
        raise ConfigError(f"keep must hold line indices (ints), got {shown(items[wrong])}")
    kept = sorted({int(i) for i in items})
    if kept and not (kept[0] >= 0 and kept[-1] < len(output.lines)):
        raise ConfigError(
            f"keep holds {kept[0] if kept[0] < 0 else kept[-1]}, not an index of the output's "
            f"{len(output.lines)} lines (0 is the first)"
        )
    if notes is not None and not (
        isinstance(notes, Mapping)
        and all(_is_index(i) and isinstance(n, str) for i, n in notes.items())
    ):
        raise ConfigError("notes must map line indices (ints) to note texts")
    return kept, notes or {}


def assemble(
    output: ToolOutput, keep: Iterable[int], *, notes: dict[int, str] | None = None
) -> str:
    """The kept lines in order, with a note for each gap saying which original lines it hides
    (numbered from 1, as the retrieve tool reads them). A gap whose lines are no longer than
    its note is shown instead: a note must save something.

    Args:
        output: The output the indices refer to.
        keep: Indices of the lines to keep.
        notes: Extra notes, placed before the kept line of that index (or at the end for an
            index past the last line).
    """
    kept, extra = _checked_assembly(output, keep, notes)
    lines = output.lines
    out: list[str] = []
    previous = -1

    for i in kept:
        add_gap(out, lines, previous + 1, i)
        if i in extra:
            out.append(extra[i])
        out.append(lines[i])
        previous = i
    add_gap(out, lines, previous + 1, len(lines))
    out.extend(note for i, note in sorted(extra.items()) if i >= len(lines) or i not in kept)
    return "\n".join(out)


@dataclass(frozen=True)
class Extract:
    """What a filter keeps of an output.

    Args:
        text: The kept lines and the notes between them.
        summary: One line for the marker, counted from the output ("14 passed, 1 failed").
    """

    text: str
    summary: str = ""


@runtime_checkable
class OutputFilter(Protocol):
    """One kind of tool output: recognise it, and keep what matters of it.

    ``kind`` names the kind (``"test_run"``, ``"traceback"``...). ``detect`` says how sure it
    is that an output is of this kind, from 0 (not this kind) to 1 (the command says so), from
    its content and, when known, its tool name and command; the surest filter is applied.
    ``extract`` returns what to keep, or ``None`` when it finds nothing to drop.
    """

    @property
    def kind(self) -> str: ...

    def detect(self, output: ToolOutput, /) -> float: ...

    def extract(self, output: ToolOutput, /) -> Extract | None: ...


def any_of(patterns: Sequence[str]) -> re.Pattern[str]:
    """One pattern found in a line where any of ``patterns`` is: a line is searched once, not
    once for each (a megabyte of short lines, searched for some 30 patterns each, took 6 s)."""
    return re.compile("|".join(f"(?:{p})" for p in patterns))
