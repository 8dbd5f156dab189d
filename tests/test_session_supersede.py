"""Superseded file views never take away the latest view of lines that shows them: a later read
that failed, one the filter shortened, or one of another file of the same name supersedes
nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxpack import Session

from .test_session import call, result

SOURCE = "\n".join(f"def func_{i}(x):\n    return x * {i}  # body {i}" for i in range(1_000))


def numbered(first: int, last: int) -> str:
    """Lines ``first..last`` of SOURCE as ``cat -n`` prints them."""
    lines = SOURCE.split("\n")
    return "\n".join(f"{n:6}\t{lines[n - 1]}" for n in range(first, last + 1))


def superseded(session: Session) -> list[str]:
    return [r.message_id for r in session.records if r.kind == "superseded"]


def views(*steps: tuple[str, str], **options: Any) -> Session:
    session = Session(model="gpt-4o", supersede_batch=1, **options)
    session.append({"role": "user", "content": "Fix the bug in func_120."})
    for k, (command, output) in enumerate(steps):
        session.extend([call(f"c{k}", command, "Reading."), result(f"c{k}", output)])
    return session


def test_a_later_view_the_filter_shortened_does_not_supersede_the_lines_read() -> None:
    # The agent reads func_120's lines, then the whole 2,000-line file, which the filter cuts
    # to its head, its tail and a few windows: lines 230-260 are in neither.
    session = views(
        ("nl -ba src/m.py | sed -n '230,260p'", numbered(230, 260)),
        ("cat -n src/m.py", numbered(1, 2_000)),
    )
    assert [r.shortened for r in session.records] == [False, True]
    assert superseded(session) == []
    sent = "\n".join(m.text for m in session.render().messages)
    assert "   245\tdef func_122(x):" in sent


def test_a_view_sent_whole_still_supersedes_one_a_shortened_view_did_not() -> None:
    session = views(
        ("nl -ba src/m.py | sed -n '230,260p'", numbered(230, 260)),
        ("cat -n src/m.py", numbered(1, 2_000)),
        ("nl -ba src/m.py | sed -n '200,300p'", numbered(200, 300)),
    )
    ids = [m.id for m in session.transcript() if m.role == "tool"]
    assert superseded(session) == [ids[0]]


@pytest.mark.parametrize(
    "failure",
    [
        "cat: src/m.py: No such file or directory",
        "<returncode>1</returncode>\n<output>\ncat: src/m.py: No such file or directory\n</output>",
        "",
        "cat: src/m.py: Is a directory",
    ],
)
def test_a_read_that_failed_supersedes_nothing(failure: str) -> None:
    session = views(("cat src/m.py", numbered(1, 40)), ("cat src/m.py", failure))
    assert superseded(session) == []
    assert session.render().messages[2].text == numbered(1, 40)


def test_files_of_one_name_in_two_folders_are_two_files() -> None:
    session = views(
        ("cd pkg_a && cat setup.py", numbered(1, 40)),
        ("cd pkg_b && cat setup.py", numbered(41, 80)),
    )
    assert superseded(session) == []
    # The same file by two names (a folder and a path through it, ./) is still one (in this
    # order: a shell kept between commands stays in pkg_a after its cd).
    session = views(
        ("cat ./pkg_a/setup.py", numbered(1, 40)),
        ("cd pkg_a && cat setup.py", numbered(1, 40)),
    )
    assert superseded(session) == [session.transcript()[2].id]


def test_a_later_view_filtered_once_answered_is_judged_then() -> None:
    session = views(
        ("nl -ba src/m.py | sed -n '230,260p'", numbered(230, 260)),
        ("cat -n src/m.py", numbered(1, 2_000)),
        filter_when="answered",
    )
    session.append({"role": "assistant", "content": "The file is long."})
    session.extend([call("c9", "ls", "More."), result("c9", "a.py")])
    assert superseded(session) == []
    sent = "\n".join(m.text for m in session.render().messages)
    assert "   245\tdef func_122(x):" in sent


@pytest.mark.parametrize(
    ("first", "shows"),
    [
        ("head --lines=50 src/m.py", (1, 50)),
        ("head -c 2000 src/m.py", (1, 70)),  # bytes, not lines
        ("head -n -5 src/m.py", (1, 1_995)),  # all but the last five lines
    ],
)
def test_heads_are_read_for_the_lines_they_show(first: str, shows: tuple[int, int]) -> None:
    # Each shows more than ten lines: the default head of ten lines after it covers none.
    session = views((first, numbered(*shows)[:6_000]), ("head src/m.py", numbered(1, 10)))
    assert superseded(session) == []


def test_a_real_sessions_view_is_not_superseded_by_its_failed_read() -> None:
    # sphinx-doc__sphinx-10614 (mini-swe-agent, Gemini 3 Pro): the agent reads a generated
    # SVG, removes the build, and reads it again: "No such file or directory".
    fixture = Path(__file__).parent / "fixtures" / "view_then_failed_read.json"
    messages = json.loads(fixture.read_text())["messages"]
    session = Session(model="gpt-4o", supersede_batch=1)
    session.extend(messages)
    assert superseded(session) == []
    svg = messages[2]["content"]
    assert "<ns0:title>MyClass1</ns0:title>" in svg
    assert svg in [m.text for m in session.render().messages]
