"""Speaker focus: "What did Caroline paint?" is answered by Caroline."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import Field

from .._internal.prefix import PrefixMemo
from ..messages import Message
from ._base import Adjustment, Query, ScoreSignal

__all__ = ["SpeakerFocus", "named_speaker"]

# "Caroline: I went hiking." A speaker is one to four capitalised words before a colon, which
# French typography spaces ("Marie : bonjour", often with a narrow no-break space). Python's re
# has no class of capitals beyond A to Z: each word begins with a letter, which _speaker checks
# is a capital ("Émilie", "Łukasz").
_SPEAKER = re.compile(r"\s*([^\W\d_][\w'’.-]*(?: [^\W\d_][\w'’.-]*){0,3})[ \u00a0\u202f]?:\s")
_WORDS = re.compile(r"[^\W_]+")


def _speaker(msg: Message) -> str | None:
    # Only people speak: a tool result starting with "Error:" is not a participant.
    if msg.role not in ("user", "assistant"):
        return None
    if msg.name:
        return msg.name
    match = _SPEAKER.match(msg.text[:80])
    if match is None or not all(word[0].isupper() for word in match.group(1).split(" ")):
        return None
    return match.group(1)


_SPEAKERS: PrefixMemo[Message, str | None] = PrefixMemo(_speaker)


def named_speaker(query: str, speakers: Sequence[str | None]) -> str | None:
    """The one speaker of the conversation the query names, if exactly one.

    Speakers are the ``name`` of messages or a ``Name:`` prefix on their text. They count only
    when at least two of them speak three times or more and together they start at least half of
    the messages, so that an occasional ``Note:`` is never taken for a participant. The query
    names a speaker when it contains the speaker's first name, capitalised.

    Example:
        >>> speakers = ["Ann", "Bob", "Ann", "Bob", "Ann", "Bob", None]
        >>> named_speaker("What did Ann say?", speakers)
        'Ann'
        >>> named_speaker("What did they say?", speakers) is None
        True
    """
    counts = Counter(speakers)
    counts.pop(None, None)
    regular = [name for name, count in counts.items() if name is not None and count >= 3]
    if len(regular) < 2 or 2 * sum(counts[name] for name in regular) < len(speakers):
        return None
    words = set(_WORDS.findall(query))
    named = [name for name in regular if name.split()[0] in words]
    return named[0] if len(named) == 1 else None


class SpeakerFocus(ScoreSignal):
    """When the conversation's messages carry speakers (``Name:`` prefixes or ``name``) and
    the query names exactly one of them (:func:`named_speaker`), the other speakers' messages
    keep ``focus`` of their relevance. A message damped this way says so: ``x0.3: the query is
    about Caroline``.

    Placed after :class:`~ctxpack.signals.Neighbors`, the other speaker's question still lends
    its share to the answer next to it, then counts less itself.

    Args:
        focus: Share of relevance kept by messages of speakers the query does not name (1
            turns it off).
    """

    name: ClassVar[str] = "speaker"

    focus: float = Field(default=0.3, ge=0.0, le=1.0)

    def adjust(self, scores: npt.NDArray[np.float64], query: Query) -> Adjustment | None:
        if self.focus >= 1.0:
            return None
        speakers = _SPEAKERS(query.messages)
        speaker = named_speaker(query.text, speakers)
        if speaker is None:
            return None
        other = {s: s is not None and s != speaker for s in set(speakers)}
        marks = map(other.__getitem__, speakers)
        damped = np.fromiter(marks, dtype=bool, count=len(speakers))
        focused = scores.copy()
        focused[damped] *= self.focus
        return Adjustment(focused, f"x{self.focus:g}: the query is about {speaker}")
