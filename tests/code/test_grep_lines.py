"""grep's lines: both engines number, match and show the lines of a file as ripgrep does, and a
file that goes away while grep runs is skipped, whichever engine reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ctxpack import ConfigError
from ctxpack.code import grep, ripgrep_path

ENGINES = ["python", "ripgrep"] if ripgrep_path() else ["python"]


def _where(hits: Any) -> list[tuple[str, int, str]]:
    return [(h.path, h.line, h.text) for h in hits]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "calc.py").write_text("a = 1\n\ndef add(x):\n    return x + a\n")
    return root


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("pattern", "lines"),
    [(r"^def ", [3]), (r"1$", [1]), (r"^$", [2]), (r"^\s+return", [4]), (r"^a\b", [1])],
)
def test_an_anchored_pattern_matches_at_each_line(
    tree: Path, engine: Any, pattern: str, lines: list[int]
) -> None:
    # ^ and $ anchor at each line, as ripgrep reads them: the Python scan matched them at the
    # file's start and end only, so `^def ` found no function past the first line.
    hits = grep(tree, pattern, regex=True, engine=engine, context=0)
    assert [h.line for h in hits] == lines


@pytest.mark.parametrize("engine", ENGINES)
def test_no_line_past_the_end_of_a_file(tree: Path, engine: Any) -> None:
    # A file ending with a line end has no empty line after it: the context showed one.
    hits = grep(tree, "return", engine=engine, context=2)
    assert _where(hits) == [("calc.py", 4, "    return x + a")]
    assert hits[0].after == ()
    (tree / "calc.py").write_text("")
    assert grep(tree, r"^$", regex=True, engine=engine) == []


@pytest.mark.skipif(ripgrep_path() is None, reason="ripgrep is not installed")
@pytest.mark.parametrize("ends", [b"\r", b"\r\n", b"\n"])
def test_both_engines_give_the_same_lines_whatever_the_line_ends(
    tmp_path: Path, ends: bytes
) -> None:
    # ripgrep ends a line at "\n" only; the Python scan read a lone "\r" as a line end too, so
    # the engines numbered a classic Mac file apart, and ripgrep's hit showed another line.
    (tmp_path / "mac.py").write_bytes(ends.join([b"x = 1", b"def f():", b"    pass", b""]))
    for pattern, regex in (("def f", False), (r"^\s+pass", True), (r"1$", True)):
        fast = grep(tmp_path, pattern, regex=regex, engine="ripgrep")
        assert fast == grep(tmp_path, pattern, regex=regex, engine="python")
        assert all(pattern.strip("^$\\s+") in h.text for h in fast)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_file_gone_after_the_listing_is_skipped(
    tree: Path, engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Files come and go while an agent works: ripgrep's error on a listed file that is gone
    # was raised as "ripgrep failed", where the Python scan skips it.
    from ctxpack.code import _grep

    (tree / "gone.py").write_text("a = 2\n")
    listed = _grep.list_files

    def then_deleted(root: Any) -> list[str]:
        files = listed(root)
        (tree / "gone.py").unlink()
        return files

    monkeypatch.setattr(_grep, "list_files", then_deleted)
    assert _where(grep(tree, "a = ", engine=engine)) == [("calc.py", 1, "a = 1")]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_file_cut_short_between_the_match_and_its_lines_is_no_crash(
    tree: Path, engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The lines of a hit are read again after the match: a file cut short meanwhile has no
    # line where the match was (an IndexError), and its hit is left out.
    from ctxpack.code import _grep

    scan = _grep._ripgrep if engine == "ripgrep" else _grep._python

    def then_cut(*args: Any, **options: Any) -> Any:
        found = scan(*args, **options)
        (tree / "calc.py").write_text("a = 1\n")
        return found

    monkeypatch.setattr(_grep, "_ripgrep" if engine == "ripgrep" else "_python", then_cut)
    assert _where(grep(tree, "a", engine=engine)) == [("calc.py", 1, "a = 1")]


@pytest.mark.skipif(ripgrep_path() is None, reason="needs ripgrep")
@pytest.mark.parametrize(("pattern", "lines"), [(r"x(?= \+)", [4]), (r"(\w) = \1", [])])
def test_an_expression_only_python_takes_is_scanned_in_python_by_auto(
    tree: Path, pattern: str, lines: list[int]
) -> None:
    # ripgrep refuses look-arounds and back-references, which Python's re takes: "auto" (the
    # default) failed with "ripgrep failed" where the Python scan finds the lines.
    assert [h.line for h in grep(tree, pattern, regex=True, context=0)] == lines
    assert grep(tree, pattern, regex=True, context=0, engine="python") == grep(
        tree, pattern, regex=True, context=0
    )
    with pytest.raises(ConfigError, match="ripgrep failed"):
        grep(tree, pattern, regex=True, engine="ripgrep")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_long_line_is_cut_around_its_match_and_the_cut_is_said(
    tmp_path: Path, engine: Any
) -> None:
    # A minified bundle is one line of megabytes: grep returned it whole, and an agent pasting
    # the hit into its prompt sent all of it.
    head, tail = "var a=1;" * 20_000, ";b=2" * 30_000
    long_context = "x" * 5_000
    (tmp_path / "bundle.js").write_text(f"{long_context}\n{head}THROTTLE(){tail}\nshort\n")
    [hit] = grep(tmp_path, "throttle", engine=engine, context=1)
    assert "THROTTLE()" in hit.text
    cut_before = len(head) - 1_000 // 3
    cut_after = len(head) + len("THROTTLE()") + len(tail) - cut_before - 1_000
    assert hit.text == (
        f"[... {cut_before:,} characters cut] "
        + f"{head}THROTTLE(){tail}"[cut_before : cut_before + 1_000]
        + f" [... {cut_after:,} characters cut]"
    )
    assert hit.before == ("x" * 1_000 + " [... 4,000 characters cut]",)
    assert hit.after == ("short",)
    [whole] = grep(tmp_path, "throttle", engine=engine, context=0, max_columns=None)
    assert whole.text == f"{head}THROTTLE(){tail}"
    [narrow] = grep(tmp_path, "b=2;b=2$", regex=True, engine=engine, context=0, max_columns=20)
    assert narrow.text.startswith("[... ") and narrow.text.endswith(";b=2;b=2")


@pytest.mark.parametrize("bad", [0, -1, 2.5, "100", True])
def test_max_columns_is_a_positive_int(tree: Path, bad: Any) -> None:
    with pytest.raises(ConfigError, match="max_columns"):
        grep(tree, "return", max_columns=bad)
