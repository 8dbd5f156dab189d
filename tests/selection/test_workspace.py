"""Workspace: files are read only inside the root, passages are checked and labelled."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ctxpack import ConfigError
from ctxpack.code import list_files
from ctxpack.errors import SelectionError, WorkspacePathError
from ctxpack.selection import FileRequest, Passage, Workspace

from .helpers import make_repo, session_messages


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def _read(ws: Workspace, **request: str) -> list[Passage]:
    got = ws.read(FileRequest(**request))  # type: ignore[arg-type]
    return got if isinstance(got, list) else [got]


def test_files_skip_hidden_and_dependency_folders(repo: Path) -> None:
    ws = Workspace([], root=repo)
    assert ws.files() == [
        "README.md",
        "logo.png",
        "src/auth.ts",
        "src/session.ts",
        "tests/auth.test.ts",
    ]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("../secret.txt", "'..' is refused"),
        ("src/../../secret.txt", "'..' is refused"),
        ("/etc/passwd", "absolute paths are refused"),
        ("src/nothere.ts", "no such file"),
        ("src", "is a directory; its files: src/auth.ts, src/session.ts"),
    ],
)
def test_paths_that_leave_the_root_or_name_nothing_are_refused(
    repo: Path, path: str, expected: str
) -> None:
    (repo.parent / "secret.txt").write_text("password")
    ws = Workspace([], root=repo)
    with pytest.raises(WorkspacePathError) as caught:
        ws.read(FileRequest(path=path))
    assert expected in str(caught.value)
    assert caught.value.path == path


def test_a_missing_file_suggests_close_names(repo: Path) -> None:
    with pytest.raises(WorkspacePathError, match=r"did you mean src/auth\.ts"):
        Workspace([], root=repo).resolve_path("src/auth.js")


def test_a_symlink_leading_out_of_the_root_is_refused(repo: Path) -> None:
    outside = repo.parent / "outside.txt"
    outside.write_text("secret\n")
    os.symlink(outside, repo / "src" / "link.ts")
    os.symlink(repo.parent, repo / "up")
    ws = Workspace([], root=repo)
    for path in ("src/link.ts", "up/outside.txt"):
        with pytest.raises(WorkspacePathError, match="a symlink leads outside the root"):
            ws.read(FileRequest(path=path))


def test_a_symlink_inside_the_root_is_read(repo: Path) -> None:
    os.symlink(repo / "src" / "auth.ts", repo / "alias.ts")
    (passage,) = _read(Workspace([], root=repo), path="alias.ts", lines="3")
    assert passage.lines == ("export function refreshToken(session: Session): Session {",)
    assert passage.path == "src/auth.ts"  # labelled with the real file


def test_without_a_root_no_file_is_read() -> None:
    with pytest.raises(WorkspacePathError, match="no root"):
        Workspace([]).read(FileRequest(path="a.py"))


def test_a_binary_file_is_described_not_shown(repo: Path) -> None:
    (passage,) = _read(Workspace([], root=repo), path="logo.png")
    assert passage.lines == ()
    assert passage.render().startswith("--- logo.png (binary file, ")
    assert passage.render().endswith("bytes: not shown)")


def test_a_line_range_is_checked_against_the_file(repo: Path) -> None:
    ws = Workspace([], root=repo)
    (passage,) = _read(ws, path="src/auth.ts", lines="3-5")
    assert (passage.start, passage.end, passage.total_lines) == (3, 5, 13)
    assert passage.render().splitlines()[0] == "--- src/auth.ts, lines 3-5 of 13"
    assert (
        passage.render().splitlines()[1]
        == "3 | export function refreshToken(session: Session): Session {"
    )
    with pytest.raises(SelectionError, match=r"lines 12-20 of src/auth.ts: the file has 13 lines"):
        ws.read(FileRequest(path="src/auth.ts", lines="12-20"))
    with pytest.raises(SelectionError, match=r"the file has 13 lines \(1-13\)"):
        ws.read(FileRequest(path="src/auth.ts", lines="40-48"))


def test_a_match_shows_windows_around_the_matching_lines(repo: Path) -> None:
    ws = Workspace([], root=repo, match_context=1)
    passages = _read(ws, path="tests/auth.test.ts", match="Refreshes")
    assert [(p.start, p.end) for p in passages] == [(7, 9)]
    assert passages[0].lines[1] == '  it("refreshes expired token", () => {'
    # Close matches merge into one window.
    merged = _read(ws, path="src/auth.ts", match="token")
    assert [(p.start, p.end) for p in merged] == [(2, 7), (10, 13)]


def test_matches_beyond_the_limit_are_counted(repo: Path) -> None:
    ws = Workspace([], root=repo, match_context=0, max_matches=1)
    passages = _read(ws, path="src/auth.ts", match="token")
    assert len(passages) == 1
    assert "more matching line(s)" in passages[0].note


def test_a_match_found_nowhere_is_an_error_with_a_hint(repo: Path) -> None:
    with pytest.raises(SelectionError, match=r"no line of src/auth\.ts contains it; these words"):
        Workspace([], root=repo).read(
            FileRequest(path="src/auth.ts", match="expired session token")
        )


def test_a_long_passage_is_cut_and_says_so(repo: Path) -> None:
    (repo / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    ws = Workspace([], root=repo, max_passage_lines=10)
    (whole,) = _read(ws, path="long.txt")
    assert (whole.start, whole.end) == (1, 10) and "first 10 of 100 lines" in whole.note
    (ranged,) = _read(ws, path="long.txt", lines="20-60")
    assert (ranged.start, ranged.end) == (20, 29) and "lines 30-60 not shown" in ranged.note


def test_a_huge_file_serves_ranges_and_matches_not_the_whole(repo: Path) -> None:
    (repo / "huge.log").write_text(
        "".join(f"step {i} ok\n" for i in range(1, 5001)) + "ERROR boom\n"
    )
    ws = Workspace([], root=repo, max_file_bytes=1000)
    with pytest.raises(SelectionError, match="over the 1000-byte limit"):
        ws.read(FileRequest(path="huge.log"))
    (tail,) = _read(ws, path="huge.log", lines="5000-5001")
    assert tail.lines == ("step 5000 ok", "ERROR boom")
    (hit,) = _read(ws, path="huge.log", match="error")
    assert hit.end == 5001 and hit.lines[-1] == "ERROR boom"


def test_message_references_resolve_or_say_what_exists() -> None:
    ws = Workspace(session_messages())
    assert ws.index_of(3) == 3 and ws.index_of("3") == 3
    assert ws.index_of(ws.messages[5].id) == 5
    with pytest.raises(
        SelectionError, match="message index 8 is out of range: the workspace has messages 0-7"
    ):
        ws.index_of(8)
    with pytest.raises(SelectionError, match="no message with id 'nope'"):
        ws.index_of("nope")
    assert ws.calls() == {"call_1": (2, 3), "call_2": (4, 5)}


def test_bad_options_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"root '.*missing' is not a directory"):
        Workspace([], root=tmp_path / "missing")
    with pytest.raises(ConfigError, match="max_passage_lines"):
        Workspace([], max_passage_lines=0)
    with pytest.raises(ConfigError, match="ArtifactStore"):
        Workspace([], store=object())  # type: ignore[arg-type]


def test_files_are_listed_by_code_retrieval_s_walk(repo: Path) -> None:
    # .gitignore (nested ones below their folder), build folders, symlinks and hard-linked
    # files: what code retrieval leaves out, the workspace leaves out too.
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "src" / ".gitignore").write_text("generated/\n")
    (repo / "src" / "generated").mkdir()
    (repo / "src" / "generated" / "api.ts").write_text("export const x = 1\n")
    (repo / "debug.log").write_text("token\n")
    (repo / "build").mkdir()
    (repo / "build" / "auth.js").write_text("refreshToken()\n")
    os.symlink(repo / "src" / "auth.ts", repo / "alias.ts")
    os.link(repo / "README.md", repo / "README.copy.md")
    (repo / ".github").mkdir()
    (repo / ".github" / "ci.py").write_text("print('ci')\n")
    ws = Workspace([], root=repo)
    assert ws.files() == ["logo.png", "src/auth.ts", "src/session.ts", "tests/auth.test.ts"]
    # Code retrieval lists hidden folders' source files; the workspace, none (local settings
    # and secrets live there).
    assert list_files(repo) == [
        ".github/ci.py",
        "src/auth.ts",
        "src/session.ts",
        "tests/auth.test.ts",
    ]


def test_a_file_left_out_of_the_listing_is_still_read_by_its_path(repo: Path) -> None:
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "debug.log").write_text("step 1\nERROR token expired\n")
    ws = Workspace([], root=repo)
    assert "debug.log" not in ws.files()
    (passage,) = _read(ws, path="debug.log", match="error")
    assert passage.lines[-1] == "ERROR token expired"


def test_the_listing_limit_keeps_a_folder_s_files_before_its_subfolders(repo: Path) -> None:
    ws = Workspace([], root=repo, max_listed_files=3)
    assert ws.files() == ["README.md", "logo.png", "src/auth.ts"]


def test_a_text_file_in_another_encoding_is_shown_not_called_binary(repo: Path) -> None:
    # Binary means a NUL byte in the first 8000 bytes (git's rule), for the workspace as for
    # code retrieval; bytes that are not UTF-8 are shown replaced.
    (repo / "notes.txt").write_bytes("café token\n".encode("latin-1"))
    (passage,) = _read(Workspace([], root=repo), path="notes.txt")
    assert passage.lines == ("caf\ufffd token",)
    counts = Workspace([], root=repo, search="python").searcher().counts(["token"])
    assert counts["notes.txt"] == {"token": 1}


def test_reading_something_other_than_a_file_request_is_a_config_error(tmp_path: Path) -> None:
    # A dict used to fail deep inside: AttributeError: 'dict' object has no attribute 'path'.
    ws = Workspace([], root=make_repo(tmp_path / "repo"))
    with pytest.raises(ConfigError, match=r"request must be a FileRequest .*got dict"):
        ws.read({"path": "src/auth.ts"})  # type: ignore[arg-type]
