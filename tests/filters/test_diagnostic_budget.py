"""A type checker's run over hundreds of files: the diagnostics shown are bounded in all, not
only per file, and the files left out are counted."""

from __future__ import annotations

from ctxpack import count_tokens
from ctxpack.filters import DiagnosticFilter, ToolOutput, ToolOutputFilter, is_note

from .test_filters import fixture


def _mypy_run(files: int, per_file: int) -> str:
    lines = [
        f'src/pkg/module_{k}.py:{j + 1}: error: Name "x{j}" is not defined  [name-defined]'
        for k in range(files)
        for j in range(per_file)
    ]
    total = files * per_file
    return "\n".join([*lines, f"Found {total} errors in {files} files (checked 900 source files)"])


def test_a_run_over_hundreds_of_files_shows_the_first_files_and_counts_the_rest() -> None:
    # 300 files of 40 distinct errors: 25 per file were shown for every file, 7,800 lines.
    raw = _mypy_run(300, 40)
    extract = DiagnosticFilter().extract(ToolOutput(raw, command="mypy ."))
    assert extract is not None
    lines = extract.text.split("\n")
    kept = [line for line in lines if not is_note(line)]
    assert len(kept) <= 226
    files = list(dict.fromkeys(line.split(":")[0] for line in kept[:-1]))
    assert files == [f"src/pkg/module_{k}.py" for k in range(len(files))]  # in order
    assert "[… 292 more files with 11680 diagnostics hidden]" in lines
    assert lines[-1] == "Found 12000 errors in 300 files (checked 900 source files)"
    assert "292 files hidden" in extract.summary
    out = ToolOutputFilter()(raw, command="mypy .")
    assert count_tokens(out.text) < 10_000  # was 106,000


def test_a_run_within_the_budget_is_shown_as_before() -> None:
    raw = _mypy_run(8, 25)
    extract = DiagnosticFilter().extract(ToolOutput(raw, command="mypy ."))
    assert extract is not None
    assert extract.text == raw and "hidden" not in extract.summary
    mypy = DiagnosticFilter().extract(ToolOutput(fixture("mypy.txt"), command="mypy src"))
    assert mypy is not None and "more files" not in mypy.text


def test_the_files_the_goal_names_are_shown_first_in_a_long_run() -> None:
    # The agent editing module_250 got the first eight files' errors and a count for its own.
    raw = _mypy_run(300, 40)
    goal = "Fix the type errors in module_250 after the refactor"
    extract = DiagnosticFilter().extract(ToolOutput(raw, command="mypy .", goal=goal))
    assert extract is not None
    lines = extract.text.split("\n")
    assert 'src/pkg/module_250.py:1: error: Name "x0" is not defined  [name-defined]' in lines
    files = list(dict.fromkeys(line.split(":")[0] for line in lines if ".py:" in line))
    # Still in the run's order, the named file among the first ones, the budget unchanged.
    assert files == [*(f"src/pkg/module_{k}.py" for k in range(7)), "src/pkg/module_250.py"]
    assert "[… 292 more files with 11680 diagnostics hidden]" in lines
