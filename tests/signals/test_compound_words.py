"""CompoundWords: two query words also count as the word they make together."""

from __future__ import annotations

import pytest

import ctxpack
from ctxpack.signals import CompoundWords, QueryWords

from .helpers import query_of

HISTORY = ["The roadtrip to Lyon was long.", "Please log in first; the login page is slow."]


def test_words_written_apart_find_the_word_written_together() -> None:
    query = query_of(HISTORY, "How did the road trip go?")
    assert CompoundWords().terms_for(query) == {"roadtrip": 1.0}
    assert CompoundWords(weight=0.5).terms_for(query) == {"roadtrip": 0.5}
    assert CompoundWords(weight=0).terms_for(query) == {}


def test_only_words_the_conversation_holds() -> None:
    # "ice cream" makes "icecream", which nobody wrote: nothing to add.
    assert CompoundWords().terms_for(query_of(HISTORY, "Any ice cream left?")) == {}


def test_explained_with_the_query_words() -> None:
    # Same note, same rank: a message holding "road" and "roadtrip" names both as matched.
    assert CompoundWords.note == QueryWords.note
    assert CompoundWords.rank == QueryWords.rank
    with pytest.raises(ctxpack.ConfigError, match=r"CompoundWords .*weight='x'"):
        CompoundWords(weight="x")
