"""The extractive digest: a summary without a model, copied verbatim from the messages."""

from __future__ import annotations

import copy
import heapq
import json
import re
import shlex
import threading
from bisect import bisect_left
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from .._internal import forks
from .._internal.arguments import optional_text
from .._internal.jsontext import read_json
from .._internal.prefix import common_prefix, likely_prefix
from .._internal.tool_items import shell_command
from .._internal.views import PATH_KEYS
from ..caches import memoize, register
from ..messages import Message, message_objects
from ..signals.evidence import evidence_term_set, evidence_terms
from ..signals.stop_words import STOP_WORDS

__all__ = ["evidence_terms", "extractive_digest"]

_PATH = re.compile(
    r"(?<![\w/.-])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:py|pyi|js|ts|tsx|"
    r"jsx|json|toml|yaml|yml|cfg|ini|txt|md|rst|c|h|cc|cpp|go|rs|java|rb|sh|html|"
    r"css|sql|lock|diff|patch)\b"
)
# How a run ended, as agent harnesses write it: mini-swe-agent's <returncode>, OpenHands'
# "[Command finished with exit code 1]", Claude Code's "Exit code 1", `go test`'s "exit status 1",
# Codex's {"exit_code": 1}.
_EXIT_CODE = re.compile(
    r"<returncode>\s*(-?\d+)\s*</returncode>"
    r"|\bexit(?:ed with)? (?:code|status)\b:?\s*(-?\d+)"
    r"|\"exit_code\"\s*:\s*(-?\d+)",
    re.IGNORECASE,
)
_ERROR_LINE = re.compile(
    r"Traceback|Error\b|Exception\b|\bFAILED\b|\bFAIL\b|error:|\bassert(?:ion)?\b|"
    r"No such file|not found|command not found|SyntaxError|^\s*File \"",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(?:I'll|I will|I need to|I should|we should|we need|let's|let me|decided?|instead|"
    r"the (?:fix|issue|problem|bug|cause) is|root cause|because|so that|plan)\b",
    re.IGNORECASE,
)
_PLAN_LINE = re.compile(
    r"^\s*(?:\d+[.)]\s|[-*]\s\[[ x]\]|TODO|FIXME|Next(?: step)?s?:|Plan:)", re.IGNORECASE
)
_WRITES = re.compile(
    r"\bsed\s+-i|>>?\s*\S|\btee\b|\bpatch\b|\bgit\s+(?:apply|checkout|restore)|\bmv\b|\bcp\b|"
    r"\brm\b|\btouch\b|\bmkdir\b|\bcreate\b|\b(?:create|update|delete)_file\b|"
    r"\bstr_replace\b|\bwrite\b|\bedit\b|open\([^)]*['\"]w",
    re.IGNORECASE,
)
# An ``apply_patch`` call's operations: each writes its file.
_PATCH_OPERATIONS = ("create_file", "update_file", "delete_file")
_SECTIONS = ("instructions", "decisions", "files", "commands", "errors", "plan", "diff", "evidence")
_SECTION_WORDS = {
    "decisions": ("decision", "decisions", "decided"),
    "files": ("file", "files", "path", "paths"),
    "commands": ("command", "commands"),
    "errors": ("error", "errors", "failure", "failures", "traceback"),
    "plan": ("plan", "todo", "todos", "next"),
    "diff": ("diff", "diffs", "patch", "patches", "change", "changes"),
    "evidence": ("identifier", "identifiers", "number", "numbers", "id", "ids"),
}
# An instruction's own words ("focus on ...", "keep ...") name no section and focus on nothing.
_STOP = STOP_WORDS | {"focus", "keep"}
_ERROR_CHARS = 300  # an error line is clipped to this: no longer command can be in one
_OPEN_ERRORS = 20


def _call_text(msg: Message) -> list[tuple[str, str, str]]:
    """(call id, tool name, command or arguments) of each call ``msg`` makes."""
    out = []
    for call in msg.tool_calls or ():
        args = call.function.arguments
        try:
            value = read_json(args) if args.strip() else {}
        except ValueError:
            value = args
        if isinstance(value, dict) and len(value) == 1:
            value = next(iter(value.values()))
        text = value if isinstance(value, str) else _built_in_command(value)
        out.append((call.id, call.function.name, text))
    return out


def _built_in_command(value: Any) -> str:
    """The Responses API's shell call as its command lines, an ``apply_patch`` operation as
    its kind and file (its diff is the call's, not a name); other arguments as JSON."""
    if (shell := shell_command(value)) is not None:
        return shell
    if isinstance(value, dict):
        kind, path = value.get("type"), value.get("path")
        if kind in _PATCH_OPERATIONS and isinstance(path, str):
            return f"{kind} {shlex.quote(path)}"
    return json.dumps(value, ensure_ascii=False)


# A compaction reads the whole history again, and shlex is slow.
@memoize(maxsize=100_000, maxbytes=8 * 2**20, name="paths a command names")
def _command_paths(command: str) -> tuple[str, ...]:
    """The files a call names: the words of its command line that are paths (an argument, a
    redirection's target, an option's value, a test's file), not the path-like pieces of a
    quoted script or a sed expression (``'316s/return False/return NotImplemented/'``). A call
    with several arguments (``{"command": "view", "path": "/r/a.py"}``, as :func:`_call_text`
    gives it) names its path arguments and the paths of its command line; its other arguments
    are text (an editor's ``old_str``), not names."""
    if command.startswith("{"):
        try:
            arguments = read_json(command)
        except ValueError:
            arguments = None
        if isinstance(arguments, dict):
            named = [arguments.get(key) for key in (*PATH_KEYS, "command", "cmd")]
            return tuple(
                dict.fromkeys(p for v in named if isinstance(v, str) for p in _command_paths(v))
            )
    try:
        words = shlex.split(command)
    except ValueError:  # an unbalanced quote: the words as typed
        words = command.split()
    out: dict[str, None] = {}
    for word in words:
        word = word.rpartition("=")[2].lstrip("<>").partition("::")[0]
        if _PATH.fullmatch(word):
            out[word] = None
    return tuple(out)


def _says_something(sentence: str) -> bool:
    """Whether a sentence names something or is long enough to state a reason: "Let's look at
    it." says nothing a summary needs."""
    return len(sentence.split()) >= 6 or bool(evidence_terms(sentence))


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _wanted_sections(instructions: str | None) -> tuple[set[str], list[str]]:
    """Sections to write and focus words, read from the instruction."""
    if not instructions:
        return set(_SECTIONS), []
    words = [w.lower() for w in re.findall(r"[\w./-]+", instructions)]
    named = {s for s, cues in _SECTION_WORDS.items() if any(w in cues for w in words)}
    cue_words = {w for cues in _SECTION_WORDS.values() for w in cues}
    focus = [w for w in words if w not in _STOP and w not in cue_words and len(w) > 2]
    if "only" in words and named:
        return named | {"instructions"}, focus
    return set(_SECTIONS), focus


def extractive_digest(messages: Sequence[Message], instructions: str | None = None) -> str:
    """A summary without a model: what an agent needs to go on, copied verbatim from ``messages``.

    It keeps every user instruction (verbatim), the decisions the assistant stated (those that
    name something or give a reason), the files touched (the paths its command lines name) with
    the last command on each and its return code, the commands run, the errors still open (those
    of the latest failing outputs), the current plan and TODOs, the diff lines, and an index of
    the identifiers, paths and numbers the assistant's words and commands name (separated by
    spaces, those named last at its end). The instruction steers it:
    ``"keep only the plan and the diff"`` writes only those sections (user instructions are
    always kept); other words (``"focus on the auth bug fix"``) add a section with every line
    that names them.

    Args:
        messages: The messages to summarise, chronological.
        instructions: What to keep, in words; ``None`` keeps every section.

    Returns:
        The digest, as Markdown sections.

    Example:
        >>> from ctxpack import Message, ToolCall, FunctionCall
        >>> call = ToolCall(id="c1", function=FunctionCall(
        ...     name="bash", arguments='{"command": "pytest tests/test_auth.py"}'))
        >>> digest = extractive_digest([
        ...     Message(role="user", content="Fix the refresh bug. Never touch cookies."),
        ...     Message(role="assistant", content="I'll run the auth tests.", tool_calls=[call]),
        ...     Message(role="tool", tool_call_id="c1",
        ...             content="<returncode>1</returncode>\\nFAILED test_x - KeyError: 'exp'"),
        ... ])
        >>> "Never touch cookies." in digest and "KeyError: 'exp'" in digest
        True
    """
    optional_text(instructions, "instructions")
    return _digest(message_objects(messages), instructions)


def _digest(messages: Sequence[Message], instructions: str | None) -> str:
    sections, focus = _wanted_sections(instructions)
    digest = _Digest(focus)
    for msg in messages:
        digest.read(msg)
    return digest.render(sections)


def window_digest(messages: Sequence[Message], instructions: str | None) -> str:
    """:func:`extractive_digest` for a compaction that also stores an index of every summarised
    message with its command (the managed window's): the commands are listed there, so the digest
    leaves them out and keeps its room for what exists nowhere else in the prompt. A last section
    lists the identifiers, paths and numbers the tool outputs showed and the digest does not
    name, those seen last at the end (:func:`~ctxpack.managed.fit_digest` drops the others
    first): the outputs themselves leave the prompt, their names tell the model what it has seen
    and what to read back.

    ``messages`` must be ctxpack's own, which never change: a history that extends one read
    lately, by the identity of its messages, is read from where that one ended."""
    sections, _ = _wanted_sections(instructions)
    digest = _WINDOW_READS.read(messages, instructions)
    # A term the digest names as a term: "323" inside "1323" or a path does not name it.
    text, named = digest.rendered(sections - {"commands"})
    assert digest.seen is not None
    terms = [t for t in digest.seen if t not in named]
    if not terms:
        return text
    return f"{text}\n\n## Identifiers, paths and numbers seen in tool outputs\n{' '.join(terms)}"


class _Digest:
    """What :func:`extractive_digest` collects from the messages, section by section."""

    def __init__(self, focus: list[str], *, outputs_seen: bool = False) -> None:
        self.focus = focus
        self.commands: dict[str, tuple[str, str]] = {}  # call id -> (tool, command)
        self.user: list[str] = []
        self.decisions: list[str] = []
        self.ran: list[str] = []
        self.files: dict[str, str] = {}
        # Every error line as it was added, and each succeeding command with how many lines had
        # been added at its last success: a success closes the lines added before it that
        # contain its command. Closing them at each success would look for its command in every
        # line still open, thousands in a long session; which are open is worked out once, for
        # the few the digest lists, in :meth:`open_errors`.
        self.errors_added: list[str] = []
        self.succeeded: dict[str, int] = {}
        self.plan: list[str] = []
        self.diff: list[str] = []
        self.focus_lines: dict[str, None] = {}
        # The terms of the assistant's text and commands, each where it was named last: the
        # index's terms.
        self.latest: dict[str, None] = {}
        # With outputs_seen, the terms of the tool outputs, each where it was seen last.
        self.seen: dict[str, None] | None = {} if outputs_seen else None

    def copy(self) -> _Digest:
        """A copy that reads on without changing this one (every container copied; what they
        hold is immutable)."""
        copied = copy.copy(self)
        for name, value in vars(self).items():
            if isinstance(value, list | dict):
                setattr(copied, name, value.copy())
        return copied

    def read(self, msg: Message) -> None:
        text = msg.text
        if self.focus:
            for line in text.splitlines():
                low = line.lower()
                if line.strip() and any(w in low for w in self.focus):
                    self.focus_lines[_clip(line, 300)] = None
        if msg.role in ("user", "system", "developer"):
            if text.strip():
                self.user.append(text.strip())
        elif msg.role == "assistant":
            self._assistant(msg, text)
        else:
            self._tool_result(msg, text)

    def _assistant(self, msg: Message, text: str) -> None:
        _named_last(self.latest, text)
        kept = [s for s in _sentences(text) if _DECISION.search(s) and _says_something(s)]
        self.decisions.extend(_clip(s, 300) for s in kept[:3])
        current_plan = [line.strip() for line in text.splitlines() if _PLAN_LINE.match(line)]
        if current_plan:
            self.plan = current_plan  # the latest plan replaces the earlier ones
        for call_id, tool, command in _call_text(msg):
            self.commands[call_id] = (tool, command)
            _named_last(self.latest, command)

    def _tool_result(self, msg: Message, text: str) -> None:
        """How its command ended, what it touched, what failed."""
        if self.seen is not None:
            _named_last(self.seen, text)
        tool, command = self.commands.get(msg.tool_call_id or "", ("tool", ""))
        found = _EXIT_CODE.search(text)
        code = next((g for g in found.groups() if g is not None), None) if found else None
        status = f"rc {code}" if code is not None else "done"
        self.ran.append(f"`{_clip(command, 200)}` ({tool}, {status})")
        for path in _command_paths(command):
            verb = "modified" if _WRITES.search(command) else "read"
            self.files[path] = f"{verb} by `{_clip(command, 120)}` ({status})"
        failing = [line for line in text.splitlines() if _ERROR_LINE.search(line)]
        if failing or (code is not None and code != "0"):
            for line in failing[-8:] or text.strip().splitlines()[-3:]:
                self.errors_added.append(_clip(line, _ERROR_CHARS))
        elif command and len(command) <= _ERROR_CHARS:
            # A command that now succeeds closes the errors an earlier run of it left open.
            self.succeeded[command] = len(self.errors_added)
        if re.search(r"^diff --git|^@@ ", text, re.MULTILINE):
            self.diff.extend(
                line
                for line in text.splitlines()
                if line.startswith(("+", "-", "@@", "diff --git"))
                and not line.startswith(("+++", "---"))
            )

    def render(self, sections: set[str]) -> str:
        """The sections asked for, as Markdown, then the index of what is named elsewhere."""
        return self.rendered(sections)[0]

    def rendered(self, sections: set[str]) -> tuple[str, set[str]]:
        """:meth:`render`'s text, and the evidence terms it names (``evidence_terms`` of it)."""
        out: list[str] = []

        def section(key: str, title: str, lines: Sequence[str]) -> None:
            if key in sections and lines:
                out.append(f"## {title}\n" + "\n".join(lines))

        files = [f"- {p}: {s}" for p, s in self.files.items()]
        section("instructions", "User instructions (verbatim)", [f"> {u}" for u in self.user])
        section("decisions", "Decisions", [f"- {d}" for d in dict.fromkeys(self.decisions)])
        section("files", "Files touched (last known state)", files)
        section("commands", "Commands run", [f"- {r}" for r in self.ran])
        errors = self.open_errors(_OPEN_ERRORS) if "errors" in sections else []
        section("errors", "Open errors", [f"- {e}" for e in errors])
        section("plan", "Current plan and TODOs", [f"- {p}" for p in self.plan])
        section("diff", "Diff", ["```diff", *self.diff[-200:], "```"] if self.diff else [])
        if self.focus:
            out.append(
                f"## Lines about: {' '.join(self.focus)}\n"
                + "\n".join(f"- {f}" for f in self.focus_lines)
            )
        # As terms: "323" inside "1323" is not named. Line by line: most lines are the ones the
        # compaction before wrote, and a long history's digest is large before it is fitted.
        named = evidence_term_set("\n".join(out))
        # Named last, listed last: the fit drops the front first, and a term named at the
        # start and again lately is current.
        index = [t for t in self.latest if t not in named]
        before = len(out)
        section(
            "evidence", "Identifiers, paths and numbers named", [" ".join(index)] if index else []
        )
        # No term spans the line breaks between sections: the text names what its sections do.
        # Term by term: the index lists the same terms from one compaction to the next.
        for added in out[before:]:
            named.update(evidence_term_set(added, " "))
        return "\n\n".join(out), named

    def open_errors(self, keep: int) -> list[str]:
        """The last ``keep`` error lines still open, in the order they were opened. A line is
        open when it was added after the last success of every command it contains; it was
        opened by its first addition after that success (adding an open line again does not
        move it). Lines are read newest first, and only until no older one can be among them."""
        additions: dict[str, list[int]] = {}
        for i, line in enumerate(self.errors_added):
            additions.setdefault(line, []).append(i)
        closers: _LargestContained | None = None
        opened: list[int] = []  # a heap of the positions kept, the oldest on top
        for i in range(len(self.errors_added) - 1, -1, -1):
            line = self.errors_added[i]
            at = additions[line]
            if at[-1] != i:  # not its last addition: the line was read already
                continue
            # Its opening is no later than its last addition: none older can displace the kept.
            if len(opened) == keep and opened[0] > i:
                break
            if closers is None:
                closers = _LargestContained(self.succeeded)
            closed = closers.largest(line)
            if i < closed:
                continue
            heapq.heappush(opened, at[bisect_left(at, closed)])
            if len(opened) > keep:
                heapq.heappop(opened)
        return [self.errors_added[i] for i in sorted(opened)]


def _named_last(terms: dict[str, None], text: str) -> None:
    """Move the evidence terms of ``text`` to the end of ``terms``, in their order."""
    for term in evidence_terms(text):
        terms.pop(term, None)
        terms[term] = None


class _Reads:
    """The digests of the last histories a managed window summarised, to read on from.

    Each compaction summarises the whole history so far (so that a second compaction does not
    summarise a summary), which is the history the compaction before read and the messages
    summarised since: reading it again made each compaction of a long session cost more than
    the one before. A history that extends one read lately, by the identity of its messages
    (ctxpack's own, which never change), goes on from a copy of that one's digest; any other is
    read from its start."""

    def __init__(self, slots: int = 8) -> None:
        self._slots = slots
        # Most recent first: (messages, instructions, the digest having read them).
        self._entries: list[tuple[tuple[Message, ...], str | None, _Digest]] = []
        self._lock = forks.freed_in_child(threading.Lock(), self.clear)
        register(self)

    def read(self, messages: Sequence[Message], instructions: str | None) -> _Digest:
        """The digest of ``messages`` (with the tool outputs' terms); never change it."""
        items = tuple(messages)
        with self._lock:
            entries = self._entries
        base = next(
            (
                entry
                for entry in entries
                if entry[1] == instructions
                and len(entry[0]) <= len(items)
                and likely_prefix(items, entry[0]) == len(entry[0])
                and common_prefix(items, entry[0]) == len(entry[0])
            ),
            None,
        )
        if base is None:
            digest = _Digest(_wanted_sections(instructions)[1], outputs_seen=True)
        else:
            digest = base[2].copy()
        for msg in items[len(base[0]) if base else 0 :]:
            digest.read(msg)
        with self._lock:
            # The history read on from is superseded by this one.
            kept = [e for e in self._entries if e is not base]
            self._entries = [(items, instructions, digest), *kept][: self._slots]
        return digest

    def clear(self) -> None:
        with self._lock:
            self._entries = []


_WINDOW_READS = _Reads()


class _LargestContained:
    """The largest value of the keys a text contains. The first texts are checked against each
    key; once that has cost about what an Aho-Corasick automaton of the keys costs to build
    (their length), the automaton is built, and each further text is read once whatever the
    number of keys: a few texts cost a few scans, many cost their length and the keys'."""

    def __init__(self, values: Mapping[str, int]) -> None:
        self.values = values
        self.allowance = sum(map(len, values))  # key checks left before the automaton pays
        self.goto: list[dict[str, int]] = []
        self.fail: list[int] = []
        self.best: list[int] = []  # per state: the largest value of the keys ending there

    def largest(self, text: str) -> int:
        """The largest value of a key ``text`` contains, 0 when it contains none."""
        if self.allowance > 0:
            self.allowance -= len(self.values)
            return max((v for k, v in self.values.items() if k in text), default=0)
        if not self.goto:
            self._build()
        goto, fail, best = self.goto, self.fail, self.best
        state = found = 0
        for char in text:
            while state and char not in goto[state]:
                state = fail[state]
            state = goto[state].get(char, 0)
            found = max(found, best[state])
        return found

    def _build(self) -> None:
        goto: list[dict[str, int]] = [{}]
        best = [0]
        for key, value in self.values.items():
            state = 0
            for char in key:
                nxt = goto[state].get(char)
                if nxt is None:
                    nxt = goto[state][char] = len(goto)
                    goto.append({})
                    best.append(0)
                state = nxt
            best[state] = max(best[state], value)
        fail = [0] * len(goto)
        # Breadth first, so that a state's fallback (a shorter suffix) is complete before it.
        queue = deque(goto[0].values())
        while queue:
            state = queue.popleft()
            best[state] = max(best[state], best[fail[state]])
            for char, nxt in goto[state].items():
                back = fail[state]
                while back and char not in goto[back]:
                    back = fail[back]
                fail[nxt] = goto[back].get(char, 0)
                queue.append(nxt)
        self.goto, self.fail, self.best = goto, fail, best


# ---------------------------------------------------------------------------------- compaction
