"""Tool-output filters: keep what matters of a tool's output once, when it arrives.

One module per kind of output. Each filter recognises its kind from the content and, when known,
the tool name and command, and keeps lines verbatim (it never rewrites a number, a path or a
name); it only adds notes that count what it hid. :class:`ToolOutputFilter` picks the filter,
stores the original in an artifact store and ends the result with a marker naming the original
and, when the retrieve tool is offered, how to read more of it. A short output passes through
untouched, and a filtered output is never longer than the original.

    >>> from ctxpack.filters import ToolOutputFilter
    >>> log = "\\n".join([f"test_{i} PASSED" for i in range(80)]
    ...                  + ["FAILED tests/test_auth.py::test_refresh - KeyError: 'exp'",
    ...                     "==== 1 failed, 80 passed in 2.31s ===="])
    >>> out = ToolOutputFilter()(log, command="pytest -q")
    >>> print(out.text)
    [… 80 lines hidden: 1-80]
    FAILED tests/test_auth.py::test_refresh - KeyError: 'exp'
    ==== 1 failed, 80 passed in 2.31s ====
    [ctxpack: test_run output shortened (totals and failures kept); original: 82 lines,
    artifact art_...; more with retrieve_original(artifact="art_...", lines="A-B" or regex="...")]
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ConfigDict

from .._internal.arguments import (
    flag,
    item_list,
    number,
    optional_text,
    sendable,
    shown,
    string,
    tokens,
)
from .._internal.options import FieldErrorModel
from ..errors import ConfigError
from ..store import ArtifactStore, artifact_id, check_artifact_store, put_original
from ._base import (
    MAX_LINE_CHARS,
    Extract,
    OutputFilter,
    ToolOutput,
    assemble,
    cut_middle,
)
from ._base import (
    command_program as command_program,
)
from ._base import (
    gap_note as gap_note,
)
from ._base import (
    goal_terms as goal_terms,
)
from ._base import (
    hidden as hidden,
)
from ._base import (
    is_note as is_note,
)
from ._builds import (
    BuildLogFilter as BuildLogFilter,
)
from ._diagnostics import (
    DiagnosticFilter as DiagnosticFilter,
)
from ._files import (
    DiffFilter as DiffFilter,
)
from ._files import (
    FileViewFilter as FileViewFilter,
)
from ._generic import (
    GenericFilter as GenericFilter,
)
from ._listings import (
    ListingFilter as ListingFilter,
)
from ._payloads import (
    JSONPayloadFilter as JSONPayloadFilter,
)
from ._testruns import (
    TestRunFilter as TestRunFilter,
)
from ._tracebacks import (
    TracebackFilter as TracebackFilter,
)

__all__ = [
    "Extract",
    "OutputFilter",
    "ToolOutput",
    "ToolOutputFilter",
    "assemble",
    "default_filters",
    "original_note",
]

RETRIEVE_TOOL_NAME = "retrieve_original"
"""The name of the retrieve tool the markers refer to (see :mod:`ctxpack.retrieval`)."""


def default_filters() -> list[OutputFilter]:
    """One filter per kind of output, in the order ties between equally sure filters go."""
    return [
        TestRunFilter(),
        DiagnosticFilter(),
        BuildLogFilter(),
        DiffFilter(),
        FileViewFilter(),
        ListingFilter(),
        TracebackFilter(),
        JSONPayloadFilter(),
        GenericFilter(),
    ]


class FilteredOutput(FieldErrorModel):
    """A tool output after filtering.

    Attributes:
        text: What the model is sent: the kept lines, the notes, and the marker; or the
            original, untouched, when ``shortened`` is false.
        kind: The kind of output detected (``"test_run"``, ``"file_view"``...), or ``"short"``
            for an output below the size where filtering starts.
        shortened: Whether ``text`` differs from the original.
        artifact: The id of the stored original (``None`` when nothing was shortened).
        summary: What the filter kept, in words, as the marker says it.
        reason: Why the output was or was not shortened.
    """

    model_config = ConfigDict(frozen=True)

    text: str
    kind: str
    shortened: bool
    artifact: str | None = None
    summary: str = ""
    reason: str = ""


class ToolOutputFilter:
    """Filters a tool output once: detect its kind, keep what matters, store the original.

    Args:
        filters: The filters to choose from (:func:`default_filters` when ``None``); the one
            whose ``detect`` is surest is applied, ties going to the earlier one.
        min_chars: Outputs shorter than this pass through untouched.
        min_saving: A filtered output is used only if it is at most ``1 - min_saving`` of the
            original's length (marker included); otherwise the original passes.
        retrievable: Whether the marker offers the retrieve tool (set it to whether the tool is
            offered to the model); otherwise it only says what was shortened.
        max_line_chars: A line of the result longer than this keeps its start and end around
            a note of the characters hidden (a base64 blob, minified code: one line that no
            filter of lines shortens); ``None`` keeps every line whole. A JSON payload's filter
            cuts its long strings instead, so that it stays valid JSON.

    Raises:
        ConfigError: an option is out of range, or a filter lacks ``detect``/``extract``.
    """

    def __init__(
        self,
        filters: Sequence[OutputFilter] | None = None,
        *,
        min_chars: int = 1_200,
        min_saving: float = 0.1,
        retrievable: bool = True,
        max_line_chars: int | None = MAX_LINE_CHARS,
    ) -> None:
        chosen = (
            default_filters()
            if filters is None
            else item_list(filters, "filters", what="output filters")
        )
        for i, f in enumerate(chosen):
            if not isinstance(f, OutputFilter):
                raise ConfigError(
                    f"filters[{i}]: {type(f).__name__} is not an output filter: it needs a kind, "
                    "detect(output) -> float and extract(output) -> Extract | None"
                )
        tokens(min_chars, "min_chars", minimum=0, unit="characters")
        if not number(min_saving, "min_saving") < 1:
            raise ConfigError(f"min_saving must be in [0, 1), got {shown(min_saving)}")
        self.filters = chosen
        self.min_chars = min_chars
        self.min_saving = min_saving
        self.retrievable = flag(retrievable, "retrievable")
        self.max_line_chars = (
            None
            if max_line_chars is None
            else tokens(max_line_chars, "max_line_chars", minimum=100, unit="characters, or None")
        )

    def __repr__(self) -> str:
        return (
            f"ToolOutputFilter({self.filters!r}, min_chars={self.min_chars}, "
            f"min_saving={self.min_saving}, retrievable={self.retrievable}, "
            f"max_line_chars={self.max_line_chars})"
        )

    def detect(self, output: ToolOutput) -> OutputFilter:
        """The filter for ``output``: the surest one."""
        if not isinstance(output, ToolOutput):
            raise ConfigError(
                f"output must be a ToolOutput (ToolOutput(text, tool=...)), got "
                f"{type(output).__name__}"
            )
        best, best_score = self.filters[-1], -1.0
        for f in self.filters:
            score = f.detect(output)
            if score > best_score:
                best, best_score = f, score
        return best

    def __call__(
        self,
        text: str,
        *,
        tool: str | None = None,
        command: str | None = None,
        goal: str | None = None,
        store: ArtifactStore | None = None,
        **metadata: object,
    ) -> FilteredOutput:
        """Filter one output.

        Args:
            text: The output, raw.
            tool: The tool's name, when known.
            command: The command line, when known.
            goal: What the agent is after (the call's reasoning, the user's question).
            store: Where the original goes when the output is shortened; without one, the
                marker names the id the original would have.
            metadata: Stored with the original.

        Raises:
            ConfigError: an argument is of the wrong type, or ``text`` holds a lone surrogate
                (its original could not be stored, nor sent, as UTF-8).
        """
        sendable(string(text, "text"), "text", ConfigError)
        for argument, value in (("tool", tool), ("command", command), ("goal", goal)):
            optional_text(value, argument)
        if store is not None:
            check_artifact_store(store)
        if len(text) < self.min_chars:
            return FilteredOutput(
                text=text, kind="short", shortened=False, reason=f"under {self.min_chars} chars"
            )
        output = ToolOutput(text, tool=tool, command=command, goal=goal)
        chosen = self.detect(output)
        extract = self._cut_long_lines(chosen, chosen.extract(output), text)
        if extract is None:
            return FilteredOutput(
                text=text, kind=chosen.kind, shortened=False, reason="nothing to drop"
            )
        ref = artifact_id(text)
        marker = self.marker(chosen.kind, extract.summary, ref, len(output.lines))
        compact = f"{extract.text}\n{marker}"
        if len(compact) > (1 - self.min_saving) * len(text):
            return FilteredOutput(
                text=text,
                kind=chosen.kind,
                shortened=False,
                reason=f"filtering would save less than {self.min_saving:.0%}",
            )
        if store is not None:
            stored = put_original(
                store, text, kind=chosen.kind, tool=tool, command=command, **metadata
            )
            if stored != ref:
                # Another backend may name artifacts its own way: the marker must use its id.
                ref = stored
                marker = self.marker(chosen.kind, extract.summary, ref, len(output.lines))
                compact = f"{extract.text}\n{marker}"
        return FilteredOutput(
            text=compact,
            kind=chosen.kind,
            shortened=True,
            artifact=ref,
            summary=extract.summary,
            reason=f"{chosen.kind} filter: {extract.summary}",
        )

    def _cut_long_lines(
        self, chosen: OutputFilter, extract: Extract | None, text: str
    ) -> Extract | None:
        """``extract`` (or the whole output, when the filter kept everything) with each line
        over ``max_line_chars`` cut in its middle."""
        limit = self.max_line_chars
        # A JSON payload's filter cuts its long strings itself, keeping it valid JSON; but
        # JSON it kept whole (nothing to drop) may still be one line of any length.
        if limit is None or (chosen.kind == "json" and extract is not None):
            return extract
        lines = (text if extract is None else extract.text).split("\n")
        long = sum(len(line) > limit for line in lines)
        if not long:
            return extract
        cut = "\n".join(cut_middle(line, limit) for line in lines)
        note = f"{long} line{'s' * (long > 1)} over {limit:,} characters cut"
        summary = note if extract is None else f"{extract.summary}; {note}"
        return Extract(cut, summary)

    def marker(self, kind: str, summary: str, artifact: str, lines: int) -> str:
        """The last line of a filtered output: what was shortened and where the original is."""
        what = f"{kind} output shortened" + (f" ({summary})" if summary else "")
        return original_note(what, artifact, lines=lines, retrievable=self.retrievable)


def original_note(
    what: str, artifact: str, *, lines: int | None = None, retrievable: bool = False
) -> str:
    """The note that ends or replaces a shortened output: what ctxpack did to it and the artifact
    its original is stored as, in the one form the retrieve tool's description tells the model
    to look for (``[ctxpack: ... artifact art_...]``).

    Args:
        what: What was done to the output, as a phrase ("old tool output cleared").
        artifact: The id the original is stored under.
        lines: The original's length in lines, for an output the model sees part of; the note
            then tells how to read a range of it.
        retrievable: Whether the retrieve tool is offered, and so the note says how to call it.

    Example:
        >>> original_note("old tool output cleared", "art_0123456789abcdef", retrievable=True)
        '[ctxpack: old tool output cleared; original: artifact art_0123456789abcdef;
        retrieve_original(artifact="art_0123456789abcdef") reads it]'
    """
    size = f"{lines} line{'s' * (lines != 1)}, " if lines is not None else ""
    how = ""
    if retrievable and lines is not None:
        how = f'; more with {RETRIEVE_TOOL_NAME}(artifact="{artifact}", lines="A-B" or regex="...")'
    elif retrievable:
        how = f'; {RETRIEVE_TOOL_NAME}(artifact="{artifact}") reads it'
    return f"[ctxpack: {what}; original: {size}artifact {artifact}{how}]"
