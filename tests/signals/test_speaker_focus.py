"""SpeakerFocus: a query naming one speaker damps the others."""

from __future__ import annotations

import numpy as np
import pytest

import ctxpack
from ctxpack.signals import SpeakerFocus, named_speaker
from ctxpack.signals._speaker_focus import _SPEAKER

from .helpers import query_of

DIALOGUE = [
    "Ann: I started painting landscapes.",
    "Bob: Painting? I took up painting too.",
    "Ann: We should go hiking.",
    "Bob: Sure, next weekend.",
    "Ann: Great.",
    "Bob: See you.",
]
SCORES = np.array([1.0, 0.8, 0.5, 0.4, 0.0, 0.2])


def test_other_speakers_keep_focus_of_their_relevance() -> None:
    adjusted = SpeakerFocus().adjust(SCORES, query_of(DIALOGUE, "What does Bob paint?"))
    assert adjusted is not None
    assert adjusted.scores.tolist() == pytest.approx([0.3, 0.8, 0.15, 0.4, 0.0, 0.2])
    assert adjusted.note == "x0.3: the query is about Bob"
    half = SpeakerFocus(focus=0.5).adjust(SCORES, query_of(DIALOGUE, "What did Ann say?"))
    assert half is not None and half.scores.tolist() == [1.0, 0.4, 0.5, 0.2, 0.0, 0.1]
    assert half.note == "x0.5: the query is about Ann"


def test_no_focus_without_exactly_one_named_speaker() -> None:
    focus = SpeakerFocus()
    assert focus.adjust(SCORES, query_of(DIALOGUE, "Who paints?")) is None
    assert focus.adjust(SCORES, query_of(DIALOGUE, "Do Ann and Bob paint?")) is None
    assert SpeakerFocus(focus=1).adjust(SCORES, query_of(DIALOGUE, "Bob?")) is None


def test_named_speaker_needs_regular_speakers() -> None:
    two = ["Ann", "Bob"] * 3
    assert named_speaker("Did Ann go?", two) == "Ann"
    assert named_speaker("did ann go?", two) is None, "a name is capitalised"
    assert named_speaker("Did Ann go?", ["Ann"] * 6) is None, "one speaker is no dialogue"
    assert named_speaker("Did Ann go?", ["Ann", "Bob"] * 2) is None, "three times each"
    # An occasional "Note:" in a chat without speakers is not a participant.
    notes = ["Note", None, None, "Note", None, "Note", "Todo", None, "Todo", None, "Todo", None]
    assert named_speaker("Any Note about it?", [*notes, None]) is None
    assert named_speaker("Any Note about it?", notes) == "Note", "half the messages is enough"


def test_speaker_prefixes_in_french_typography() -> None:
    # French puts a space, often a narrow no-break one, before the colon.
    for text in ("Marie : bonjour", "Marie\u202f: bonjour", "Marie\u00a0: bonjour"):
        match = _SPEAKER.match(text)
        assert match is not None and match.group(1) == "Marie", text
    assert _SPEAKER.match("Jean Paul : salut").group(1) == "Jean Paul"  # type: ignore[union-attr]
    # Two spaces, or none after the colon, are not a speaker's prefix.
    assert _SPEAKER.match("Marie  : x") is None
    assert _SPEAKER.match("Marie:x") is None


def test_options_are_validated() -> None:
    with pytest.raises(ctxpack.ConfigError, match=r"SpeakerFocus \(signal 'speaker'\): focus=2"):
        SpeakerFocus(focus=2)


def test_speakers_whose_names_begin_with_an_accented_capital() -> None:
    # A message's ``name`` may only be ASCII for OpenAI: "Émilie" and "Łukasz" are speakers
    # through the "Name:" prefix alone, which took A to Z only as a capital.
    dialogue = [
        "Émilie: J'ai commencé la peinture.",
        "Łukasz: Moi aussi, la peinture à l'huile.",
        "Émilie: On devrait faire de la randonnée.",
        "Łukasz: Oui, le week-end prochain.",
        "Émilie: Super.",
        "Łukasz: À bientôt.",
    ]
    adjusted = SpeakerFocus().adjust(SCORES, query_of(dialogue, "Qu'a peint Émilie ?"))
    assert adjusted is not None and adjusted.note == "x0.3: the query is about Émilie"
    assert adjusted.scores.tolist() == pytest.approx([1.0, 0.24, 0.5, 0.12, 0.0, 0.06])
