"""FollowUp: a question that says too little borrows the exchange it follows."""

from __future__ import annotations

from typing import Any

import pytest

import ctxpack
from ctxpack.signals import FollowUp

from .helpers import query_of

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "How does compound interest work? It would help."},
    {"role": "assistant", "content": "You earn interest on the interest."},
    {"role": "user", "content": "My sourdough starter smells like acetone."},
    {"role": "assistant", "content": "It is hungry: feed it twice a day."},
]


def asked(text: str) -> ctxpack.signals.Query:
    return query_of([*CHAT, {"role": "user", "content": text}], text)


def test_a_short_question_borrows_the_previous_exchange() -> None:
    borrowed = FollowUp().terms_for(asked("Why would that help?"))
    assert {"sourdough", "aceton", "hungri", "feed", "twice", "day"} <= set(borrowed)
    assert not {"interest", "help"} & set(borrowed), "the earlier exchange, and the query's own"
    assert set(borrowed.values()) == {0.5}
    assert list(borrowed) == sorted(borrowed), "in a fixed order, whatever the string hashing"
    assert set(FollowUp(weight=0.8).terms_for(asked("Why?")).values()) == {0.8}


def test_a_specific_question_borrows_nothing() -> None:
    assert FollowUp().terms_for(asked("How does compound interest grow?")) == {}
    assert FollowUp(words=3).terms_for(asked("How does compound interest grow?")) != {}


def test_a_pointing_word_makes_a_short_question_a_follow_up() -> None:
    assert FollowUp().follows_up("How do I install it on Windows?", {"instal", "window"})
    assert not FollowUp().follows_up("How do I install Windows?", {"instal", "window"})
    assert not FollowUp(pointing_words=1).follows_up("Install it on Windows?", {"instal", "window"})
    assert FollowUp().follows_up("Et ça marche sous Windows ?", {"march", "window"})


def test_a_query_given_apart_follows_the_last_exchange() -> None:
    # The query is not the last message: the exchange is the last user message and after.
    query = query_of(CHAT, "Why?")
    assert "interest" not in FollowUp().terms_for(query)
    assert "hungri" in FollowUp().terms_for(query)
    assert FollowUp().terms_for(query_of([CHAT[0]], "Why?")) == {}, "no exchange to follow"


def test_options_are_validated() -> None:
    with pytest.raises(ctxpack.ConfigError, match=r"FollowUp \(signal 'follow_up'\): words=-1"):
        FollowUp(words=-1)
