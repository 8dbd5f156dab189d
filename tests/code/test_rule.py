from __future__ import annotations

from pathlib import Path

import pytest

from ctxpack import ConfigError
from ctxpack.code import CodeIndex, decide_loading, is_whole_repository_task


def test_whole_repository_task_that_fits_is_loaded(repo: Path) -> None:
    index = CodeIndex(repo, db=":memory:")
    tokens = index.tokens()
    decision = decide_loading("Review the whole codebase", index, window=tokens * 10)
    assert decision.action == "load"
    assert decision.repository_tokens == tokens
    assert decision.threshold == int(0.15 * tokens * 10)
    assert any("fits" in r for r in decision.reasons)


def test_too_large_or_partial_tasks_are_retrieved(repo: Path) -> None:
    index = CodeIndex(repo, db=":memory:")
    tokens = index.tokens()
    # The window's first 15% is less than the repository: retrieve even a whole-repo task.
    big = decide_loading("Review the whole codebase", index, window=tokens * 5)
    assert big.action == "retrieve" and big.whole_task
    assert "does not fit" in big.reasons[0]
    # A part of the repository: retrieve, however large the window.
    part = decide_loading("Fix the refresh bug in session.ts", index, window=10_000_000)
    assert part.action == "retrieve" and not part.whole_task
    # The caller can say what the task is.
    forced = decide_loading("Fix it", index, window=10_000_000, whole_task=True)
    assert forced.action == "load"


def test_the_share_is_a_parameter(repo: Path) -> None:
    index = CodeIndex(repo, db=":memory:")
    tokens = index.tokens()
    task = "Summarise the architecture of the project"
    assert decide_loading(task, index, window=tokens * 2, share=0.6).action == "load"
    assert decide_loading(task, index, window=tokens * 2).action == "retrieve"
    with pytest.raises(ConfigError, match="window"):
        decide_loading(task, index, window=0)
    with pytest.raises(ConfigError, match="share"):
        decide_loading(task, index, window=100, share=1.5)


@pytest.mark.parametrize(
    ("task", "whole"),
    [
        ("Review the whole codebase for SQL injection", True),
        ("Summarize how this repository is organised", True),
        ("Explain the architecture", True),
        ("Fix the crash in fetch_record", False),
        ("Add rate limiting to the API endpoints", False),
        ("Review this function", False),
    ],
)
def test_whole_repository_tasks_are_read_from_their_words(task: str, whole: bool) -> None:
    assert is_whole_repository_task(task) is whole


@pytest.mark.parametrize("task", [None, 3, b"review the codebase"])
def test_a_task_that_is_not_text_is_named(task: object) -> None:
    # The regular expressions raised a bare TypeError ("expected string or bytes-like object").
    with pytest.raises(ConfigError, match="task must be a string"):
        is_whole_repository_task(task)  # type: ignore[arg-type]
