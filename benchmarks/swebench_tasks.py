"""Code-retrieval tasks from a SWE-bench jsonl, in the format ``code_retrieval.py`` reads.

A SWE-bench row gives ``instance_id``, ``repo``, ``base_commit``, ``problem_statement`` and the
gold ``patch``. A task's gold files are the files the patch modifies that exist at the base
commit, outside test folders (as in the shared data's ``tasks-wide.jsonl``); a task left with
none is dropped and counted.

This is how a split of repositories never used for tuning is made: take every task of
repositories the ranking has not seen, run ``code_retrieval.py`` on it once, report. With
``--exclude``, it also makes the tasks of the dev repositories that no rule was chosen on (every
task not already in the given task files): how the ranking does on a dev repository's tasks it
was not tuned on, apart from how it does on repositories never seen.

Usage (from the repository root)::

    python benchmarks/swebench_tasks.py --swebench swebench_verified.jsonl \
        --repos /path/to/mirrors --only pydata/xarray,sphinx-doc/sphinx --out tasks.jsonl
    python benchmarks/swebench_tasks.py --swebench swebench_verified.jsonl \
        --repos /path/to/mirrors --only sympy/sympy --exclude tasks.jsonl tasks-wide.jsonl \
        --out tasks-fresh.jsonl

Nothing runs on import.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from code_retrieval import TEST_DIRS, MissingRepository, find_repository, load_tasks

# "diff --git a/x b/x" starts each file of a unified git patch; a new file has /dev/null as
# its "---" side, which the existence check at the base commit drops anyway.
_DIFF = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)


def patch_files(patch: str) -> list[str]:
    """Files a git patch touches, in order, each once (the pre-image path)."""
    seen: dict[str, None] = {}
    for before, _after in _DIFF.findall(patch):
        seen.setdefault(before, None)
    return list(seen)


def in_test_folder(path: str) -> bool:
    return any(part in TEST_DIRS for part in path.split("/")[:-1])


def existing(git_dir: Path, commit: str, paths: list[str]) -> list[str]:
    """The paths that are files at ``commit``."""
    if not paths:
        return []
    listing = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "--name-only", commit, "--", *paths],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    present = set(listing)
    return [p for p in paths if p in present]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--swebench", type=Path, required=True, help="SWE-bench jsonl")
    parser.add_argument("--repos", type=Path, required=True, help="folder of clones or mirrors")
    parser.add_argument("--only", default="", help="comma-separated repositories to keep")
    parser.add_argument(
        "--exclude",
        type=Path,
        nargs="+",
        default=[],
        help="task files whose tasks are left out (those the ranking was tuned on)",
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    only = {r for r in args.only.split(",") if r}
    seen = {task.instance_id for path in args.exclude for task in load_tasks(path)}
    kept = dropped = 0
    missing: set[str] = set()
    with args.out.open("w", encoding="utf-8") as out:
        for line in args.swebench.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            if (only and row["repo"] not in only) or row["instance_id"] in seen:
                continue
            try:
                git_dir = find_repository(args.repos, row["repo"])
            except MissingRepository:
                missing.add(row["repo"])
                continue
            candidates = [p for p in patch_files(row["patch"]) if not in_test_folder(p)]
            gold = existing(git_dir, row["base_commit"], candidates)
            if not gold:
                dropped += 1
                continue
            task = {
                "instance_id": row["instance_id"],
                "repo": row["repo"],
                "base_commit": row["base_commit"],
                "problem_statement": row["problem_statement"],
                "files": gold,
                "gold_source": "swe-bench patch",
            }
            out.write(json.dumps(task) + "\n")
            kept += 1
    print(f"{kept} tasks written to {args.out}; {dropped} without a gold file left out")
    if missing:
        print(f"no clone of: {', '.join(sorted(missing))}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
