"""ruff's default output (recent versions: 0.17): the rule's code and message, then a
``-->`` location and a code excerpt, as rustc writes them."""

from __future__ import annotations

from ctxpack.filters import DiagnosticFilter, ToolOutput, ToolOutputFilter

# Written by ruff 0.17.6 (`ruff check --isolated --select E,F,S,E741 app.py`).
RUFF = """\
F401 [*] `os` imported but unused
 --> app.py:1:8
  |
1 | import os
  |        ^^
2 | import sys
3 | def f(x):
  |
help: Remove unused import: `os`
  |
  - import os
1 | import sys
  |

S307 Use of possibly insecure function; consider using `ast.literal_eval`
 --> app.py:4:12
  |
2 | import sys
3 | def f(x):
4 |     return eval(x)
  |            ^^^^^^^
5 | def g():
  |

Found 2 errors.
[*] 1 fixable with `--fix`."""


def test_each_ruff_diagnostic_is_kept_with_its_location_and_the_excerpts_go() -> None:
    # Read as neither gcc's nor rustc's form, every diagnostic was hidden among the "other
    # lines": a real run of 79 errors came out as its two config warnings and the totals.
    out = DiagnosticFilter().extract(ToolOutput(RUFF, command="ruff check app.py"))
    assert out is not None
    assert out.text.splitlines() == [
        "F401 [*] `os` imported but unused",
        " --> app.py:1:8",
        "S307 Use of possibly insecure function; consider using `ast.literal_eval`",
        " --> app.py:4:12",
        "Found 2 errors.",
        "[*] 1 fixable with `--fix`.",
    ]
    assert out.summary.startswith("2 distinct diagnostics in 1 files")


def test_a_long_ruff_run_keeps_every_rule_it_shows_and_its_config_warnings_apart() -> None:
    warning = "warning: `D203` and `D211` are incompatible. Ignoring `D203`."
    blocks = [warning]
    for f in range(30):
        for line in (3, 9):
            blocks.append(f"E741 Ambiguous variable name: `l{f}`\n --> pkg/m{f}.py:{line}:5")
            blocks.append("  |\n" + "\n".join(f"{n} |     l = {n}" for n in range(1, 6)) + "\n  |")
    text = "\n".join([*blocks, "Found 60 errors."])
    shown = ToolOutputFilter()(text, tool="bash", command="ruff check pkg").text
    assert shown.startswith(warning + "\n")  # no file's: before the first file's diagnostics
    for f in range(30):
        assert f"E741 Ambiguous variable name: `l{f}`" in shown
        assert f" --> pkg/m{f}.py:3:5" in shown
    assert "l = 3" not in shown and "Found 60 errors." in shown
