"""The code retrieval benchmark's own bookkeeping, on a git repository made here.

The benchmark's figures are not tested (benchmarks measure); exporting a base commit, the
baselines and the recall arithmetic are.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from ..helpers import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "code_retrieval.py"
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "coderepo"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script(SCRIPT, "code_retrieval_benchmark")


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def mirrors(tmp_path: Path) -> tuple[Path, str]:
    """A folder of clones holding ``acme/shop`` (the fixture plus a tests/ folder)."""
    clone = tmp_path / "mirrors" / "acme+shop" / "repo"
    shutil.copytree(FIXTURE, clone)
    (clone / "tests").mkdir()
    (clone / "tests" / "test_throttle.py").write_text("def test_throttle():\n    pass\n")
    _git("init", "-q", cwd=clone)
    _git("add", "-A", cwd=clone)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base", cwd=clone)
    return tmp_path / "mirrors", _git("rev-parse", "HEAD", cwd=clone)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_run_exports_ranks_and_reports(
    bench: ModuleType, mirrors: tuple[Path, str], tmp_path: Path
) -> None:
    repos, commit = mirrors
    tasks = tmp_path / "tasks.jsonl"
    task = {
        "instance_id": "acme__shop-1",
        "repo": "acme/shop",
        "base_commit": commit,
        "problem_statement": "Requests are not rate limited: add rate limiting to the API.",
        "files": ["api/throttle.py"],
    }
    tasks.write_text(json.dumps(task) + "\n")
    out = tmp_path / "out"
    cache = tmp_path / "cache"
    assert (
        bench.main(
            ["--tasks", str(tasks), "--repos", str(repos), "--cache", str(cache), "--out", str(out)]
        )
        == 0
    )
    exported = cache / "acme__shop-1"
    assert (exported / "api" / "throttle.py").is_file()
    assert not (exported / "tests").exists()  # test folders are left out
    payload = json.loads((out / "code_retrieval.json").read_text())
    # Not a tuning repository: the task is held out, and reported apart.
    assert set(payload["results"]) == {"held-out"}
    assert payload["tasks"][0]["split"] == "held-out"
    results = payload["results"]["held-out"]
    assert set(results) == {
        "ctxpack-search",
        "ctxpack-search (whole files)",
        "ctxpack-loop",
        "bm25-files",
        "ripgrep-identifiers",
        "load-everything",
    }
    assert results["load-everything"]["recall_at"]["1"] == 1.0
    for entry in results.values():
        assert 0.0 <= entry["recall_at"]["5"] <= 1.0
        assert entry["recall_at"]["1"] <= entry["recall_at"]["10"]
    assert results["ctxpack-search"]["max_token_share"] <= payload["config"]["budget_share"]
    assert "| ctxpack-loop |" in (out / "code_retrieval.md").read_text()
    # Named a dev repository, the same task is reported as dev; a kept index is reused.
    index_dir = tmp_path / "indexes"
    argv = ["--tasks", str(tasks), "--repos", str(repos), "--cache", str(cache), "--out", str(out)]
    argv += ["--dev-repos", "acme/shop", "--index-dir", str(index_dir), "--methods", "bm25-files"]
    assert bench.main(argv) == 0
    payload = json.loads((out / "code_retrieval.json").read_text())
    assert set(payload["results"]) == {"dev"}
    assert (index_dir / "acme__shop-1.sqlite").is_file()
    # The first run with --index-dir builds the index; the next one reads it back.
    assert "Cold index build" in (out / "code_retrieval.md").read_text()
    # One split only: the held-out split of a run whose only task is dev has nothing to run.
    assert bench.main([*argv, "--split", "dev"]) == 0
    assert "Index load (kept between runs" in (out / "code_retrieval.md").read_text()
    with pytest.raises(SystemExit, match="no task of the held-out split"):
        bench.main([*argv, "--split", "held-out"])


def test_issue_identifiers(bench: ModuleType) -> None:
    text = "Calling `session.send()` fails in resolve_redirects; see HTTPAdapter and getPeerCert"
    assert bench.issue_identifiers(text) == [
        "session.send",
        "resolve_redirects",
        "getPeerCert",
    ]


def test_whole_files_within_budget(bench: ModuleType) -> None:
    sizes = {"a": 10, "b": 50, "c": 5}
    assert bench._whole_files_within(["a", "b", "c"], ["c"], sizes, 60) == (0, 60)
    assert bench._whole_files_within(["a", "c", "b"], ["c"], sizes, 60) == (1, 15)
    assert bench._ranks(["a", "b"], ["b", "z"]) == (2, None)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_partial_mirror_exports_without_the_files_it_lacks(
    bench: ModuleType, mirrors: tuple[Path, str], tmp_path: Path
) -> None:
    repos, commit = mirrors
    clone = repos / "acme+shop" / "repo"
    blob = _git("rev-parse", f"{commit}:api/users.py", cwd=clone)
    (clone / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # as a size-capped mirror has it
    git_dir = clone / ".git"
    assert bench.missing_blobs(git_dir, commit) == ["api/users.py"]
    task = bench.Task("acme__shop-2", "acme/shop", commit, "users", ("api/db.py",))
    root = bench.export(task, repos, tmp_path / "cache", keep_tests=True)
    assert (root / "api" / "db.py").is_file()
    assert not (root / "api" / "users.py").exists()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_task_without_a_clone_is_skipped_and_listed(
    bench: ModuleType, mirrors: tuple[Path, str], tmp_path: Path
) -> None:
    repos, commit = mirrors
    tasks = tmp_path / "tasks.jsonl"
    rows = [
        {"instance_id": "acme__shop-1", "repo": "acme/shop", "base_commit": commit},
        {"instance_id": "other__big-1", "repo": "other/big", "base_commit": commit},
    ]
    tasks.write_text(
        "".join(
            json.dumps({**r, "problem_statement": "rate limiting", "files": ["api/throttle.py"]})
            + "\n"
            for r in rows
        )
    )
    out = tmp_path / "out"
    argv = ["--tasks", str(tasks), "--repos", str(repos), "--cache", str(tmp_path / "c")]
    assert bench.main([*argv, "--out", str(out), "--methods", "bm25-files"]) == 0
    payload = json.loads((out / "code_retrieval.json").read_text())
    assert [t["task"] for t in payload["tasks"]] == ["acme__shop-1"]
    assert (
        "Skipped: 1 tasks whose repository has no clone in --repos (other/big)"
        in (out / "code_retrieval.md").read_text()
    )


def test_a_linked_tree_is_reported_as_approximate(bench: ModuleType, tmp_path: Path) -> None:
    """A task whose cache entry links to a tree made another way (a release's source
    distribution) runs without a clone, and the report says its tree is approximate."""
    tree = tmp_path / "trees" / "shop-1.0"
    shutil.copytree(FIXTURE, tree)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "acme__shop-2").symlink_to(tree)
    task = {
        "instance_id": "acme__shop-2",
        "repo": "acme/shop",
        "base_commit": "0" * 40,
        "problem_statement": "Requests are not rate limited: add rate limiting to the API.",
        "files": ["api/throttle.py"],
    }
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(task) + "\n")
    out = tmp_path / "out"
    argv = ["--tasks", str(tasks), "--repos", str(tmp_path / "none"), "--cache", str(cache)]
    assert bench.main([*argv, "--out", str(out), "--methods", "bm25-files"]) == 0
    payload = json.loads((out / "code_retrieval.json").read_text())
    assert payload["tasks"][0]["tree"] == "shop-1.0"
    report = (out / "code_retrieval.md").read_text()
    assert "Approximate trees" in report
    assert "acme/shop (1 tasks: shop-1.0)" in report
    # Held-out tasks are not listed one by one in the report.
    assert "| acme__shop-2 |" not in report


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_tasks_from_swebench_keep_the_patched_files_of_the_base_commit(
    mirrors: tuple[Path, str], tmp_path: Path
) -> None:
    builder = load_script(SCRIPT.parent / "swebench_tasks.py", "swebench_tasks_benchmark")
    repos, commit = mirrors

    def diff(*paths: str) -> str:
        return "".join(
            f"diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n@@ -1 +1 @@\n-a\n+b\n" for p in paths
        )

    patch = diff("api/throttle.py", "tests/test_throttle.py", "api/new_module.py")
    rows = [
        {
            "instance_id": "acme__shop-1",
            "repo": "acme/shop",
            "base_commit": commit,
            "problem_statement": "Add rate limiting.",
            "patch": patch,
        },
        # Only a test changed: no file to find, left out.
        {
            "instance_id": "acme__shop-2",
            "repo": "acme/shop",
            "base_commit": commit,
            "problem_statement": "A test.",
            "patch": diff("tests/test_throttle.py"),
        },
        {
            "instance_id": "other__x-1",
            "repo": "other/x",
            "base_commit": commit,
            "problem_statement": "Elsewhere.",
            "patch": patch,
        },
    ]
    source = tmp_path / "swebench.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "tasks.jsonl"
    assert (
        builder.main(
            [
                "--swebench",
                str(source),
                "--repos",
                str(repos),
                "--out",
                str(out),
                "--only",
                "acme/shop",
            ]
        )
        == 0
    )
    tasks = [json.loads(line) for line in out.read_text().splitlines()]
    # The test file and the file the patch creates are not files to find.
    assert [(t["instance_id"], t["files"]) for t in tasks] == [
        ("acme__shop-1", ["api/throttle.py"])
    ]
    assert tasks[0]["problem_statement"] == "Add rate limiting."
    # The tasks of given task files (those tuned on) are left out.
    fresh = tmp_path / "fresh.jsonl"
    argv = ["--swebench", str(source), "--repos", str(repos), "--out", str(fresh)]
    assert builder.main([*argv, "--exclude", str(out)]) == 0
    assert fresh.read_text() == ""


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_tree_with_history_stops_at_the_base_commit(
    bench: ModuleType, mirrors: tuple[Path, str], tmp_path: Path
) -> None:
    repos, base = mirrors
    clone = repos / "acme+shop" / "repo"
    (clone / "api" / "throttle.py").write_text("def throttle():\n    return 'the fix'\n")
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "the fix", cwd=clone)
    task = bench.Task("acme__shop-1", "acme/shop", base, "rate limiting", ("api/throttle.py",))
    root = bench.export_with_history(task, repos, tmp_path / "cache", True)
    assert root == tmp_path / "cache" / "with-history" / "acme__shop-1"
    assert _git("rev-parse", "HEAD", cwd=root) == base
    # The fix came after the base commit: neither its message nor its content is in the tree.
    assert _git("log", "--format=%s", cwd=root) == "base"
    assert "the fix" not in (root / "api" / "throttle.py").read_text()
    assert (root / "tests" / "test_throttle.py").is_file()
    assert bench.export_with_history(task, repos, tmp_path / "cache", True) == root
