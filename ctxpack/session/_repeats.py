"""Repeated lines: what an earlier tool output of the same request already shows, sent once.

An agent re-opens a file it has read, re-runs a test whose output hardly changed, views a region
again after an edit; most of the new output is lines the request already holds. Each run of such
lines is replaced by a note naming the earlier output, so the request holds every line at least
once and the model reads where it is.

A tool output is shortened only by what comes before it in the request. When what comes before
is unchanged, so is the output's shortened text: the request keeps its prefix from one render to
the next, and a prompt cache keeps reading it. The record is not touched: a render without an
earlier copy (the earlier output cleared, compacted or superseded) sends the lines again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate

from ..messages import Message
from ..pipeline import Decision
from ..tokens import TokenCounter

# Fixed before any measurement, not tuned: lines count as shown when the four consecutive lines
# around them are, and a run is replaced only past 200 characters (a note costs about 15 tokens).
WINDOW = 4
MIN_RUN_CHARS = 200
# A window of blank or nearly blank lines (a closing brace, separators) proves nothing.
MIN_WINDOW_CHARS = 20


@dataclass
class _Output:
    """One tool output as the last render sent it."""

    given: Message
    sent: Message
    decision: Decision | None
    windows: list[bytes]  # the windows of ``sent`` this output was the first to show


@dataclass
class RepeatedLines:
    """Send each repeated run of tool-output lines once, per request.

    It remembers the last request's tool outputs, so that a render that only appended messages
    shortens only the new outputs: the agent loop's render costs what its new lines do.
    """

    _outputs: list[_Output] = field(default_factory=list)
    # Each window shown so far, by its digest, with the label of the output that showed it
    # first. Digests, not the windows' text: each line is in four windows, so their text would
    # take several times the outputs'.
    _first: dict[bytes, str] = field(default_factory=dict)

    def apply(
        self, messages: Sequence[Message], counter: TokenCounter
    ) -> tuple[list[Message], list[Decision], dict[str, Message]]:
        """``messages`` with their repeated tool-output lines replaced by notes, a ``deduped``
        decision per shortened message, and the messages as given, by id."""
        sent: list[Message] = []
        decisions: list[Decision] = []
        originals: dict[str, Message] = {}
        position = 0
        for message in messages:
            if message.role != "tool" or not isinstance(message.content, str):
                sent.append(message)
                continue
            output = self._output(position, message, counter)
            position += 1
            sent.append(output.sent)
            if output.decision is not None:
                decisions.append(output.decision)
                originals[message.id] = message
        self._forget(position)
        return sent, decisions, originals

    def _output(self, position: int, message: Message, counter: TokenCounter) -> _Output:
        if position < len(self._outputs):
            known = self._outputs[position]
            if _same(known.given, message):
                return known
            self._forget(position)
        output = self._shorten(message, counter)
        self._outputs.append(output)
        return output

    def _forget(self, position: int) -> None:
        """Forget the outputs from ``position`` on, and the windows they showed first."""
        for output in self._outputs[position:]:
            for window in output.windows:
                del self._first[window]
        del self._outputs[position:]

    def _shorten(self, message: Message, counter: TokenCounter) -> _Output:
        assert isinstance(message.content, str)
        lines = message.content.split("\n")
        keys = _window_keys(message.content)
        source: list[str | None] = [None] * len(lines)
        for start, key in enumerate(keys):
            label = self._first.get(key)
            if label is None:
                continue
            for i in range(start, start + WINDOW):
                if source[i] is None:
                    source[i] = label
        kept: list[str] = []
        replaced = 0
        i = 0
        while i < len(lines):
            if source[i] is None:
                kept.append(lines[i])
                i += 1
                continue
            end = i
            labels: dict[str, None] = {}
            while end < len(lines) and (label := source[end]) is not None:
                labels[label] = None
                end += 1
            run = lines[i:end]
            if sum(map(len, run)) < MIN_RUN_CHARS:
                kept.extend(run)
            else:
                names = " and ".join(list(labels)[:2]) + (", ..." if len(labels) > 2 else "")
                kept.append(f"[… {len(run)} lines as in the output of {names} above]")
                replaced += len(run)
            i = end
        label = message.tool_call_id or message.id
        windows = []
        content = "\n".join(kept)
        for start, key in enumerate(_window_keys(content) if replaced else keys):
            if (
                key not in self._first
                and len("\n".join(kept[start : start + WINDOW]).strip()) >= MIN_WINDOW_CHARS
            ):
                self._first[key] = label
                windows.append(key)
        if not replaced:
            return _Output(message, message, None, windows)
        sent = message.model_copy(update={"content": content})
        decision = Decision(
            stage="session",
            action="deduped",
            message_id=message.id,
            reason=f"{replaced} lines an earlier tool output of the request shows, sent once",
            tokens_before=counter.count_message(message),
            tokens_after=counter.count_message(sent),
        )
        return _Output(message, sent, decision, windows)


def _window_keys(text: str) -> list[bytes]:
    """A digest of each window of ``text``'s lines. Two windows have the same digest when their
    lines are the same: a window's bytes hold its three newlines, so they split one way only,
    and 128 bits leave a collision out of reach."""
    data = text.encode("utf-8", "surrogatepass")
    starts = [0, *accumulate(len(line) + 1 for line in data.split(b"\n"))]
    view = memoryview(data)
    return [
        hashlib.blake2b(view[starts[i] : starts[i + WINDOW] - 1], digest_size=16).digest()
        for i in range(len(starts) - WINDOW)
    ]


def _same(a: Message, b: Message) -> bool:
    return a is b or (a.id == b.id and a.tool_call_id == b.tool_call_id and a.content == b.content)
