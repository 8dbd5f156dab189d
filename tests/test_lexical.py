"""Terms, BM25 and the incremental index behind relevance scoring."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack.lexical import InvertedIndex, bm25_scores, shared_index, terms

WORDS = ["alpha", "beta", "gamma", "delta", "backup", "backups", "the", "Caroline's", "42"]
texts_st = st.lists(
    st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join), min_size=0, max_size=25
)


def reference_bm25(
    query: Sequence[str], documents: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75
) -> list[float]:
    """BM25 written out plainly, independent of ctxpack's index: the oracle for the tests."""
    n = len(documents)
    avg = (sum(len(d) for d in documents) / n if n else 0.0) or 1.0
    scores = []
    for doc in documents:
        score = 0.0
        for term in set(query):
            df = sum(1 for d in documents if term in d)
            tf = doc.count(term)
            if tf:
                idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
                score += idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len(doc) / avg))
        scores.append(score)
    return scores


def test_terms_lowercase_stem_and_drop_stop_words() -> None:
    assert terms("The Backups ran at 02:00") == ("backup", "ran", "02", "00")
    assert terms("Caroline's paintings") == ("carolin", "paint")


def test_bm25_prefers_rarer_terms_and_handles_empty_inputs() -> None:
    docs = [terms("alpha beta"), terms("alpha"), terms("alpha gamma")]
    scores = bm25_scores(terms("alpha gamma"), docs)
    assert scores[2] == max(scores)
    assert bm25_scores(terms("alpha"), []) == []
    assert bm25_scores((), docs) == [0.0, 0.0, 0.0]


@settings(max_examples=150, deadline=None)
@given(first=texts_st, second=texts_st, keep=st.integers(0, 25), query=st.sampled_from(WORDS))
def test_incremental_index_equals_a_fresh_one(
    first: list[str], second: list[str], keep: int, query: str
) -> None:
    # Sync to one history, then to another sharing a prefix of it: the scores must be those of
    # an index built from scratch on the second.
    index = InvertedIndex()
    index.sync(first)
    target = first[:keep] + second
    index.sync(target)
    expected = reference_bm25(terms(query), [terms(t) for t in target])
    assert np.allclose(index.bm25(terms(query)), expected)
    assert np.allclose(bm25_scores(terms(query), [terms(t) for t in target]), expected)
    assert len(index) == len(target)


def test_shared_index_is_reused_for_a_growing_conversation() -> None:
    history = ["system prompt xyz", "first turn", "second turn"]
    index = shared_index(history)
    assert shared_index([*history, "a new question"]) is index
    assert len(index) == 4
