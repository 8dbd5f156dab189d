"""The context's promise: ``tokens`` is the count of ``context`` and never over ``budget``,
whatever the counter (one that does not add up over pieces of text included)."""

from __future__ import annotations

import pytest

from ctxpack.code import CodeIndex, iterative_retrieve


def quarter_chars(text: str) -> int:
    # A fair approximate counter, and one whose count of two texts joined may be more than
    # the sum of their counts (floor division drops each piece's remainder).
    return len(text) // 4


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> CodeIndex:
    root = tmp_path_factory.mktemp("many")
    for i in range(12):
        units = (f"def token_{i}_{j}(x):\n    return x + {j}\n\n" for j in range(4))
        (root / f"m{i}.py").write_text("".join(units))
    return CodeIndex(root, db=":memory:", counter=quarter_chars)


@pytest.mark.parametrize("budget", [34, 90, 153, 209, 237, 300, 370])
def test_the_context_never_takes_more_than_the_budget(index: CodeIndex, budget: int) -> None:
    result = iterative_retrieve("token x return", index, budget=budget)
    assert result.tokens == quarter_chars(result.context) <= budget
    assert result.context  # the budget holds at least one unit


def test_a_task_that_finds_no_file_scores_no_unit(
    index: CodeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With no file found, scoring the tree's units for the context was seconds of work on a
    # long task, for an empty context.
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("units scored for no file")

    monkeypatch.setattr(index, "unit_scores", refuse)
    result = iterative_retrieve("zyxwvut qponmlk", index)
    assert result.files == ()
    assert result.context == "" and result.tokens == quarter_chars("") == 0
