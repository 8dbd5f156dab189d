"""The learned re-ranker benchmark's bookkeeping: training, the folds and the report.

Its figures are not tested (benchmarks measure); that the model learns what separates the files
to find, that a repository's tasks are never trained on when it is left out, and the recall
arithmetic are.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from ..helpers import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "code_reranker.py"
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "coderepo"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script(SCRIPT, "code_reranker_benchmark")


def _row(path: str, **signals: float) -> dict[str, object]:
    return {
        "path": path,
        "score": sum(signals.values()),
        "signals": signals,
        "evidence": False,
        "tokens": 100,
    }


def _task(bench: ModuleType, name: str, repo: str, mention_gold: bool) -> object:
    # rank_files put five decoys first; the file to find is sixth. When mention_gold, only the
    # file to find carries a mention, so a model trained on such tasks should lift it.
    decoys = [_row(f"{name}/d{i}.py", symbol=1.0 - i / 10) for i in range(5)]
    gold = _row(f"{name}/gold.py", symbol=0.3, mention=1.0 if mention_gold else 0.0)
    return bench.Candidates(name, repo, (f"{name}/gold.py",), [*decoys, gold])


def test_the_model_learns_what_the_other_repositories_teach(bench: ModuleType) -> None:
    tasks = [_task(bench, f"a{i}", "o/a", True) for i in range(4)]
    tasks += [_task(bench, f"b{i}", "o/b", True) for i in range(4)]
    per = bench.leave_one_repository_out(tasks, "signals", 1e-3, top=100)
    # hand: the file to find is sixth, never in the first five; learned: first.
    assert per == {"o/a": (0, 4, 4), "o/b": (0, 4, 4)}


def test_a_left_out_repository_is_not_trained_on(bench: ModuleType) -> None:
    # In o/a the file to find comes first and a decoy carries the mention: trained on o/a alone,
    # the model learns that a mention is no sign, so o/b's file to find (sixth, the only one
    # mentioned) stays out of the first five. Had o/b's tasks leaked into training, it would rise.
    tasks = []
    for i in range(4):
        decoys = [
            _row(f"a{i}/d{j}.py", symbol=0.8 - j / 10, mention=float(j == 0)) for j in range(5)
        ]
        tasks.append(
            bench.Candidates(
                f"a{i}", "o/a", (f"a{i}/gold.py",), [_row(f"a{i}/gold.py", symbol=1.0), *decoys]
            )
        )
    tasks += [_task(bench, f"b{i}", "o/b", True) for i in range(4)]
    per = bench.leave_one_repository_out(tasks, "signals", 1e-2, top=100)
    assert per["o/b"] == (0, 0, 4)
    assert per["o/a"][0] == 4


def test_found_counts_files_to_find_in_the_first_k(bench: ModuleType) -> None:
    assert bench.found(["a", "b", "c"], ["c", "z"], 2) == 0
    assert bench.found(["a", "b", "c"], ["c", "z"], 3) == 1


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_run_reads_dev_tasks_only_and_reports(bench: ModuleType, tmp_path: Path) -> None:
    commits = {}
    for repo in ("acme/shop", "acme/mall"):
        clone = tmp_path / "mirrors" / repo.replace("/", "+") / "repo"
        shutil.copytree(FIXTURE, clone)
        _git("init", "-q", cwd=clone)
        _git("add", "-A", cwd=clone)
        _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base", cwd=clone)
        commits[repo] = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=clone, check=True, capture_output=True, text=True
        ).stdout.strip()
    lines = [
        {
            "instance_id": f"{repo.split('/')[1]}-{i}",
            "repo": repo,
            "base_commit": commits[repo],
            "problem_statement": "Requests are not rate limited: add rate limiting to the API.",
            "files": ["api/throttle.py"],
        }
        for repo in ("acme/shop", "acme/mall")
        for i in (1, 2)
    ]
    lines.append({**lines[0], "instance_id": "other-1", "repo": "acme/other"})
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in lines))
    out = tmp_path / "out"
    argv = [
        "--tasks",
        str(tasks),
        "--repos",
        str(tmp_path / "mirrors"),
        "--cache",
        str(tmp_path / "cache"),
        "--out",
        str(out),
        "--dev-repos",
        "acme/shop,acme/mall",
    ]
    assert bench.main(argv) == 0
    payload = json.loads((out / "code_reranker.json").read_text())
    assert payload["skipped"] == ["other-1"]  # not a dev repository: never read
    assert sorted(payload["tasks"]) == ["mall-1", "mall-2", "shop-1", "shop-2"]
    run = payload["runs"]["signals 0.001"]
    assert set(run) == {"acme/mall", "acme/shop"}
    assert all(
        total == 2 and 0 <= hand <= 2 and 0 <= learned <= 2 for hand, learned, total in run.values()
    )
    assert "| 300 |" in (out / "code_reranker.md").read_text()
    assert (out / "code_reranker.png").is_file()
    with pytest.raises(SystemExit, match="two dev repositories"):
        bench.main([*argv[:-1], "acme/shop"])
