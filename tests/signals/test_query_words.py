"""QueryWords: the query's own terms at their weight."""

from __future__ import annotations

import pytest

import ctxpack
from ctxpack.signals import QueryWords

from .helpers import query_of


def test_the_query_terms_at_their_weight() -> None:
    query = query_of(["Our backups run nightly."], "When do the backups run? Backups!")
    assert QueryWords().terms_for(query) == {"backup": 1.0, "run": 1.0}
    assert QueryWords(weight=2.0).terms_for(query) == {"backup": 2.0, "run": 2.0}
    assert QueryWords(weight=0).terms_for(query) == {}, "weight 0 adds nothing"


def test_a_negative_weight_names_the_signal() -> None:
    with pytest.raises(ctxpack.ConfigError, match=r"QueryWords \(signal 'query'\): weight=-1"):
        QueryWords(weight=-1)
    assert QueryWords.note.format(words="backups") == "matched: backups"
