"""Token counters cross process boundaries: a counter passed to a task of a process pool, or
held by a stage sent there, pickles, and counts the same in the other process, its caches
starting empty there."""

from __future__ import annotations

import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor

import pytest

import ctxpack
from ctxpack.tokens import TokenCounter, count_tokens_approx, get_counter

TEXTS = ["hello world", "naïve café " * 80, "def f(x):\n    return x ** 2\n"]


@pytest.mark.parametrize(
    "counter",
    [
        get_counter("gpt-4"),
        get_counter("gpt-4o"),
        get_counter(counter="o200k_base"),
        count_tokens_approx(3.5, safety_margin=1.2),
        ctxpack.tokens.anthropic_approx_counter(),
    ],
    ids=lambda c: c.name,
)
def test_a_counter_pickles_and_counts_the_same(counter: TokenCounter) -> None:
    counts = [counter.count(text) for text in TEXTS]
    again = pickle.loads(pickle.dumps(counter))
    assert (again.name, again.exact) == (counter.name, counter.exact)
    assert [again.count(text) for text in TEXTS] == counts
    messages = [ctxpack.Message(role="user", content=text) for text in TEXTS]
    assert again.count_messages(messages) == counter.count_messages(messages)


def test_a_pickled_counter_carries_the_encodings_name_not_its_vocabulary() -> None:
    # The vocabulary is megabytes: it would ride with every task sent to a pool.
    counter = get_counter("gpt-4o")
    counter.count("warm the caches " * 50)
    assert len(pickle.dumps(counter)) < 10_000


def _tokens(counter: TokenCounter, text: str) -> int:
    return ctxpack.count_tokens(text, counter=counter)


def test_a_counter_goes_to_a_spawned_worker() -> None:
    counter = get_counter("gpt-4")
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context) as pool:
        assert pool.submit(_tokens, counter, TEXTS[1]).result(timeout=120) == counter.count(
            TEXTS[1]
        )
