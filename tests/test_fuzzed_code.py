"""What fuzzing the code retrieval and selection packages found, kept as tests.

Every entry point (``CodeIndex``, ``rank_files``, ``iterative_retrieve``, ``grep``,
``parse_source``, the judges, ``Workspace``, ``apply_selection``...) given odd arguments and odd
repositories (empty, binary, not UTF-8, names the file system cannot hold, broken
``.gitignore``, one huge line) must give a sensible result or ctxpack's own error naming the
argument. The repositories are small ones made in ``tmp_path``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxpack import ConfigError, CtxpackError
from ctxpack.code import (
    CodeIndex,
    JudgeError,
    ModelJudge,
    RankingJudge,
    grep,
    iterative_retrieve,
    parse_source,
)
from ctxpack.errors import WorkspacePathError
from ctxpack.selection import (
    FileRequest,
    LexicalSelector,
    Selection,
    Workspace,
    apply_selection,
)

from .helpers import cpu_seconds

ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=5),
    st.floats(allow_nan=True),
    st.binary(max_size=4),
    st.text(max_size=12),
    st.sampled_from(["", " ", "!!!?..", "\x00", "\ud800", "é日本🙂", "a" * 300, "(((", "a.b.c"]),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
FUZZ = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A CodeIndex without db= keeps its SQLite file in the user's cache folder.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _repo(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "auth.py").write_text("def refresh_token(session):\n    return session\n")
    (root / "users.py").write_text("import auth\n\ndef profile(user):\n    return auth.x(user)\n")
    return root


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _repo(tmp_path_factory.mktemp("repo"))


@pytest.fixture(scope="module")
def index(repo: Path) -> CodeIndex:
    return CodeIndex(repo, db=":memory:")


def _sensible_or_ctxpack_error(call: Any) -> Any:
    try:
        return call()
    except CtxpackError as exc:
        assert str(exc), "an error with no message"
        return exc


# ------------------------------------------------------------------------ odd arguments


@FUZZ
@given(query=ODD)
def test_rank_files_and_search_take_any_query_or_name_it(index: CodeIndex, query: Any) -> None:
    for call in (lambda: index.rank_files(query), lambda: index.search(query)):
        out = _sensible_or_ctxpack_error(call)
        if isinstance(out, CtxpackError):
            # A query of whitespace alone matches nothing: refused, not answered with [].
            assert "query" in str(out) and not (isinstance(query, str) and query.strip())
        else:
            assert isinstance(query, str) and all(h.path in index.files for h in out)


@FUZZ
@given(option=st.sampled_from(["k", "exclude", "boost"]), value=ODD)
def test_rank_files_options_are_used_or_named(index: CodeIndex, option: str, value: Any) -> None:
    out = _sensible_or_ctxpack_error(lambda: index.rank_files("refresh", **{option: value}))
    if isinstance(out, CtxpackError):
        assert option in str(out)


@FUZZ
@given(
    option=st.sampled_from(["task", "judge", "max_cycles", "candidates", "budget", "store"]),
    value=ODD,
)
def test_iterative_retrieve_options_are_used_or_named(
    index: CodeIndex, option: str, value: Any
) -> None:
    arguments: dict[str, Any] = {"task": "refresh the token", option: value}
    out = _sensible_or_ctxpack_error(lambda: iterative_retrieve(root=index, **arguments))
    if isinstance(out, CtxpackError):
        assert option in str(out)
    else:
        assert set(out.files) <= set(index.files)


@FUZZ
@given(argument=st.sampled_from(["root", "db", "weights", "embedder"]), value=ODD)
def test_code_index_arguments_are_used_or_named(repo: Path, argument: str, value: Any) -> None:
    arguments: dict[str, Any] = {"root": repo, "db": ":memory:", argument: value}
    if argument == "db" and isinstance(value, str) and value not in ("", ":memory:"):
        arguments["db"] = str(repo.parent / "dbs" / value) if value.strip("/. ") else ":memory:"

    def build() -> Any:
        return CodeIndex(**arguments).search("refresh token")

    out = _sensible_or_ctxpack_error(build)
    if isinstance(out, CtxpackError):
        assert argument in str(out)


@FUZZ
@given(pattern=ODD, engine=st.sampled_from(["auto", "python"]))
def test_grep_takes_any_pattern_or_names_it(repo: Path, pattern: Any, engine: str) -> None:
    out = _sensible_or_ctxpack_error(lambda: grep(repo, pattern, engine=engine))  # type: ignore[arg-type]
    if not isinstance(out, CtxpackError):
        assert all(hit.path in ("auth.py", "users.py") for hit in out)


@FUZZ
@given(source=st.text(max_size=40) | ODD, language=st.sampled_from(["python", "go", "rust"]))
def test_parse_source_takes_any_text_or_names_it(source: Any, language: str) -> None:
    out = _sensible_or_ctxpack_error(lambda: parse_source("x.py", language, source))
    if isinstance(out, CtxpackError):
        assert "source" in str(out)


# --------------------------------------------------------------- what the fuzzing found


@pytest.mark.parametrize(
    ("call", "named"),
    [
        # ValueError: embedded null byte, UnicodeEncodeError, OSError: File name too long.
        (lambda repo: CodeIndex("a\x00b", db=":memory:"), "root"),
        (lambda repo: CodeIndex("\ud800", db=":memory:"), "root"),
        (lambda repo: CodeIndex("a" * 5000, db=":memory:"), "root"),
        (lambda repo: CodeIndex(repo, db="x\x00.sqlite").files, "db"),
        # sqlite3.OperationalError: unable to open database file.
        (lambda repo: CodeIndex(repo, db=str(repo / ("a" * 5000))).files, "db"),
        (lambda repo: CodeIndex(repo, db=str(repo)).files, "db"),
        # TypeError: 'str' object is not callable, at the first search.
        (lambda repo: CodeIndex(repo, db=":memory:", embedder="minilm").search("x"), "embedder"),
        # AttributeError: 'str' object has no attribute 'put'.
        (lambda repo: iterative_retrieve("refresh", repo, store="mem"), "store"),
        # AttributeError: 'NoneType' / 'dict' object has no attribute 'path'.
        (lambda repo: iterative_retrieve("refresh", repo, judge=lambda t, c: None), "judge"),
        (lambda repo: iterative_retrieve("refresh", repo, judge=lambda t, c: [{}]), "judge"),
        # AttributeError: 'str' object has no attribute 'hit'; TypeError: not iterable.
        (lambda repo: RankingJudge()("task", "abc"), "candidates"),
        (lambda repo: RankingJudge()("task", 5), "candidates"),
        (lambda repo: ModelJudge("not callable"), "complete"),
        (lambda repo: ModelJudge(lambda p: "[]", excerpt_chars=-1), "excerpt_chars"),
        # UnicodeEncodeError inside tree-sitter or the file system.
        (lambda repo: parse_source("x.py", "python", "x = '\ud800'"), "source"),
        # ValueError: embedded null byte (ripgrep's argument); OSError: Argument list too long.
        (lambda repo: grep(repo, "\x00", engine="ripgrep"), "ripgrep"),
        (lambda repo: grep(repo, "a" * 200_000, engine="ripgrep"), "ripgrep"),
        # TypeError: Value after * must be an iterable, not NoneType.
        (lambda repo: Workspace([]).extend(None), "messages"),
    ],
)
def test_an_odd_argument_is_ctxpacks_error_naming_it(repo: Path, call: Any, named: str) -> None:
    try:
        call(repo)
    except CtxpackError as exc:
        assert named in str(exc), str(exc)
    else:
        if "ripgrep" in named:
            pytest.skip("this ripgrep check is about an argument the system refuses")
        pytest.fail("no error")


def test_grep_falls_back_to_python_for_a_pattern_ripgrep_cannot_take(repo: Path) -> None:
    # engine="auto" passed NUL to subprocess (ValueError) and a 200 KB pattern (OSError).
    assert grep(repo, "\x00") == []
    assert grep(repo, "a" * 200_000) == []
    assert [h.path for h in grep(repo, "def refresh_token")] == ["auth.py"]


def test_a_model_judge_whose_model_answers_other_than_text_is_a_judge_error(repo: Path) -> None:
    # AttributeError: 'NoneType' object has no attribute 'find'.
    with pytest.raises(JudgeError, match="not text"):
        iterative_retrieve("refresh", repo, judge=ModelJudge(lambda prompt: None))  # type: ignore[arg-type,return-value]


def test_a_path_the_file_system_refuses_is_a_workspace_path_error(repo: Path) -> None:
    workspace = Workspace([{"role": "user", "content": "x"}], repo)
    for path in ("\ud800.py", "a" * 5000 + ".py"):
        with pytest.raises(WorkspacePathError):
            workspace.resolve_path(path)
        with pytest.raises(CtxpackError):
            selection = Selection.from_answer({"include_files": [{"path": path}]})
            apply_selection(selection, workspace)


# ------------------------------------------------------------------------ odd repositories


def _odd_repo(root: Path, kind: str) -> Path:
    root.mkdir()
    (root / "ok.py").write_text("def refresh_token(session):\n    return session\n")
    if kind == "empty":
        (root / "ok.py").unlink()
    elif kind == "binary":
        (root / "blob.py").write_bytes(b"\x00\x01\xff\xfe def x(): pass")
    elif kind == "latin-1":
        (root / "cafe.py").write_bytes("def caf\xe9(): return '\xe9'\n".encode("latin-1"))
    elif kind == "huge line":
        (root / "big.py").write_text("x = '" + "refresh " * 100_000 + "'\n")
    elif kind == "symlink loops":
        (root / "pkg").mkdir()
        os.symlink(root / "pkg", root / "pkg" / "loop")
        os.symlink(root / "b.py", root / "c.py")
        os.symlink(root / "c.py", root / "b.py")
    elif kind == "unreadable":
        (root / "secret.py").write_text("def hidden(): pass\n")
        (root / "secret.py").chmod(0)
        (root / "closed").mkdir()
        (root / "closed" / "x.py").write_text("def x(): pass\n")
        (root / "closed").chmod(0)
    elif kind == "name not UTF-8":
        # PydanticSerializationError when the index stored the file's record: left out now.
        (root / os.fsdecode(b"caf\xe9.py")).write_text("def cafe(): pass\n")
    elif kind == "broken .gitignore":
        # pathspec's GitIgnorePatternError for the line "!": git skips the line.
        (root / ".gitignore").write_text("!\nignored.py\n")
        (root / "ignored.py").write_text("def refresh_token(): pass\n")
    return root


ODD_REPOS = [
    "empty",
    "binary",
    "latin-1",
    "huge line",
    "symlink loops",
    "unreadable",
    "name not UTF-8",
    "broken .gitignore",
]


@pytest.mark.parametrize("kind", ODD_REPOS)
def test_an_odd_repository_is_indexed_searched_and_retrieved_from(
    tmp_path: Path, kind: str
) -> None:
    root = _odd_repo(tmp_path / "repo", kind)
    try:
        index = CodeIndex(root, db=":memory:")
        files = index.files
        assert all(f.encode("utf-8") and not f.startswith("/") for f in files)
        if kind != "empty":
            assert "ok.py" in files
        if kind == "broken .gitignore":
            assert "ignored.py" not in files
        hits = index.rank_files("refresh the token")
        assert {h.path for h in hits} <= set(files)
        result = iterative_retrieve("refresh the token", index)
        assert set(result.files) <= set(files)
        assert grep(root, "refresh", engine="python") is not None
        workspace = Workspace([{"role": "user", "content": "refresh the token"}], root)
        apply_selection(LexicalSelector()(workspace, "refresh the token"), workspace)
    finally:
        for path in (root / "secret.py", root / "closed"):
            if path.exists():
                path.chmod(0o700)


def test_a_huge_one_word_query_is_ranked_in_linear_time(index: CodeIndex) -> None:
    # Two regular expressions tried from every position of a word: 20,000 letters took
    # seconds, 60,000 most of a minute. Now both sizes take about as long per letter.
    def cost(n: int) -> float:
        def once() -> None:
            index.rank_files("a" * n)
            iterative_retrieve("x" * n + "==1", index, max_cycles=1)

        return cpu_seconds(once, repeat=2)

    cost(1_000)
    small, large = cost(20_000), cost(200_000)
    assert large < 40 * max(small, 0.005)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"path": 5}, "path=5"),
        ({"path": "a.py", "lines": "x-y"}, "lines='x-y'"),
        ({"path": "a.py", "lines": "3", "match": "b"}, "either lines or match"),
    ],
)
def test_a_file_request_built_by_hand_names_its_bad_field(
    fields: dict[str, Any], named: str
) -> None:
    # Its docstring shows it built by hand: pydantic's own error stopped there.
    with pytest.raises(ConfigError, match=named):
        FileRequest(**fields)
    with pytest.raises(ConfigError, match=named):
        FileRequest.model_validate(fields)
