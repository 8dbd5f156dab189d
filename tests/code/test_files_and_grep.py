from __future__ import annotations

from pathlib import Path

import pytest

from ctxpack import ConfigError
from ctxpack.code import grep, list_files, ripgrep_path


def test_list_files_respects_gitignore_and_skips_binaries(repo: Path) -> None:
    files = list_files(repo)
    assert "api/throttle.py" in files
    assert "engine/src/scheduler.rs" in files
    assert "jvm/src/main/java/com/acme/util/Formatter.java" in files
    assert not [f for f in files if f.startswith(("generated/", "node_modules/"))]
    assert "web/legacy/vendor.min.js" not in files
    assert "web/logo.py" not in files  # NUL bytes: binary
    assert "README.md" not in files  # not a supported language
    assert files == sorted(files)


def test_nested_gitignore_applies_below_its_folder(repo: Path) -> None:
    (repo / "web" / ".gitignore").write_text("session.ts\n")
    files = list_files(repo)
    assert "web/src/session.ts" not in files
    assert "web/src/jwt.ts" in files


def test_python_grep_finds_lines_with_context(repo: Path) -> None:
    hits = grep(repo, "token-bucket", engine="python", context=1)
    assert [(h.path, h.line) for h in hits] == [("api/throttle.py", 1)]
    assert hits[0].text == '"""Token-bucket throttling of incoming requests."""'
    assert hits[0].before == ()
    assert hits[0].after == ("",)


def test_python_grep_literal_and_regex(repo: Path) -> None:
    literal = grep(repo, "TokenBucket(", engine="python")
    assert [(h.path, h.line) for h in literal] == [("api/throttle.py", 32)]
    assert [line.strip() for line in literal[0].before] == ["", "def throttled(request):"]
    regex = grep(repo, r"def \w+_middleware", regex=True, engine="python")
    assert [(h.path, h.text) for h in regex] == [
        ("api/middleware.py", "def install_middleware(app):")
    ]
    assert grep(repo, "THROTTLE", engine="python", ignore_case=False) == []


@pytest.mark.skipif(ripgrep_path() is None, reason="ripgrep is not installed")
@pytest.mark.parametrize(
    ("pattern", "regex", "ignore_case"),
    [
        ("throttle", False, True),
        ("Throttle", False, False),
        ("self.", False, True),
        (r"fn \w+|func \w+", True, True),
        (r"\bconnect\b", True, False),
    ],
)
def test_ripgrep_and_python_find_the_same_lines(
    repo: Path, pattern: str, regex: bool, ignore_case: bool
) -> None:
    fast = grep(repo, pattern, regex=regex, ignore_case=ignore_case, engine="ripgrep")
    slow = grep(repo, pattern, regex=regex, ignore_case=ignore_case, engine="python")
    assert fast == slow
    assert fast  # every pattern matches something in the fixture


def test_grep_never_reads_ignored_files(repo: Path) -> None:
    for engine in ("auto", "python"):
        paths = {h.path for h in grep(repo, "throttle", engine=engine)}  # type: ignore[arg-type]
        assert "generated/throttle_copy.py" not in paths
        assert "api/throttle.py" in paths


def test_grep_errors_say_what_is_wrong(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="non-empty"):
        grep(repo, "")
    with pytest.raises(ConfigError, match="invalid regular expression"):
        grep(repo, "(", regex=True)
    with pytest.raises(ConfigError, match="not a directory"):
        grep(tmp_path / "missing", "x")
    with pytest.raises(ConfigError, match="engine"):
        grep(repo, "x", engine="grep")  # type: ignore[arg-type]


def test_compiled_gitignore_rules_are_emptied_by_clear_caches(repo: Path) -> None:
    from ctxpack.caches import clear_caches
    from ctxpack.code._files import _spec

    list_files(repo)
    assert _spec.cache_info().currsize > 0
    clear_caches()
    assert _spec.cache_info().currsize == 0


@pytest.mark.parametrize("marker", ["pyvenv.cfg", "conda-meta/history"])
def test_an_environment_of_any_name_is_not_the_project(repo: Path, marker: str) -> None:
    """``python -m venv env`` (before Python 3.13) writes no ``.gitignore``, and an
    environment may have any name (``env``, ``venv311``, ``.direnv/python-3.11``): its
    site-packages were indexed as the project's code, 892 files beside one of the project's in
    a probe, and ranked among its files. A folder holding ``pyvenv.cfg`` (a virtual
    environment) or ``conda-meta`` (a conda environment) is skipped like ``.venv``."""
    env = repo / "env311"
    site = env / "lib" / "python3.11" / "site-packages" / "requests"
    site.mkdir(parents=True)
    (site / "api.py").write_text("def throttle(url):\n    return url\n")
    (env / marker).parent.mkdir(parents=True, exist_ok=True)
    (env / marker).write_text("home = /usr/bin\n")
    files = list_files(repo)
    assert "api/throttle.py" in files
    assert not [f for f in files if f.startswith("env311/")]
    assert not [h for h in grep(repo, "def throttle(url)") if h.path.startswith("env311/")]
    # The root itself may be an environment a user means to search.
    assert list_files(env) == ["lib/python3.11/site-packages/requests/api.py"]
