"""Is the hand-weighted sum of ``rank_files`` the limit, or are its signals? A learned re-ranker.

``CodeIndex.rank_files`` adds its signals with hand-chosen weights. This script learns the
combination instead: a linear model over each file's signals (and, in the larger feature sets,
each signal's rank among the candidates, whether the file is a test or doc, its size, depth and
whether it is an ``__init__``), trained listwise (a softmax over a task's first ``--top``
candidates, the files to find as targets) and measured leaving one dev repository out: trained
on the tasks of seven repositories, it re-ranks the eighth's. Its recall@5 is compared with the
hand weights' on the same tasks, and the candidates' own ceiling (recall at 10, 50, 100 and 300
of ``rank_files``) says how much re-ranking could win at most.

Only tasks of the dev repositories are read (this is tuning); a held-out task is skipped and
listed. Trees and indexes are the ones ``code_retrieval.py`` makes (same ``--repos``,
``--cache`` and ``--index-dir``).

Usage (from the repository root)::

    python benchmarks/code_reranker.py \
        --tasks ../shared/data/code-tasks/tasks.jsonl ../shared/data/code-tasks/tasks-wide.jsonl \
        tasks-fresh.jsonl --repos /path/to/mirrors --cache /path/to/cache \
        --index-dir /path/to/indexes --keep-tests

Nothing runs on import.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from code_retrieval import (
    DEV_REPOS,
    REPO_ROOT,
    MissingRepository,
    load_tasks,
    tree_and_index,
)

from ctxpack.code import CodeIndex
from ctxpack.code._index import _SURE_MENTION
from ctxpack.code.roles import is_doc_path, is_test_path

DEFAULT_OUT = REPO_ROOT / "benchmarks" / "results"
SIGNALS = ("symbol", "file", "mention", "definition", "message", "tested", "graph")
FEATURE_SETS = ("signals", "signals+ranks", "signals+ranks+shape")
L2 = (1e-3, 1e-2, 1e-1)
CANDIDATES = 300
CEILINGS = (5, 10, 50, 100, 300)
# Adam over the listwise loss; enough steps for the loss to settle on ~200 tasks.
_STEPS = 300
_STEP_SIZE = 0.05


class Candidates(NamedTuple):
    task: str
    repo: str
    gold: tuple[str, ...]
    rows: list[dict[str, Any]]  # rank_files' order: path, signals, evidence, tokens


def candidates(
    index: CodeIndex, task_id: str, repo: str, problem: str, gold: Sequence[str]
) -> Candidates:
    rows = [
        {
            "path": hit.path,
            "score": hit.score,
            "signals": hit.signals,
            "evidence": is_test_path(hit.path) or is_doc_path(hit.path),
            "tokens": index.tokens(hit.path),
        }
        for hit in index.rank_files(problem, k=CANDIDATES)
    ]
    return Candidates(task_id, repo, tuple(gold), rows)


def features(rows: Sequence[Mapping[str, Any]], kind: str) -> Any:
    signal = np.array([[r["signals"].get(s, 0.0) for s in SIGNALS] for r in rows], dtype=float)
    evidence = np.array([[1.0 if r["evidence"] else 0.0] for r in rows])
    named = (signal[:, [SIGNALS.index("mention")]] >= _SURE_MENTION).astype(float)
    columns = [signal, evidence, named]
    if kind != "signals":
        # Each signal's rank among the candidates: robust to one outlier squashing the others.
        ranks = np.argsort(np.argsort(-signal, axis=0, kind="stable"), axis=0)
        columns.append(1.0 / (1.0 + ranks))
    if kind == "signals+ranks+shape":
        top = max(r["score"] for r in rows) or 1.0
        shape = [
            [
                math.log1p(r["tokens"]),
                1.0 if r["path"].rsplit("/", 1)[-1] == "__init__.py" else 0.0,
                r["path"].count("/"),
                r["score"] / top,
                1.0 / (1.0 + i),
            ]
            for i, r in enumerate(rows)
        ]
        columns += [evidence * signal, np.array(shape)]
    return np.hstack(columns)


class Model(NamedTuple):
    weights: Any
    mean: Any
    scale: Any


def fit(groups: Sequence[tuple[Any, Any]], l2: float) -> Model:
    """Softmax cross-entropy over each task's candidates, the files to find sharing the target."""
    stacked = np.vstack([x for x, _ in groups])
    mean, scale = stacked.mean(axis=0), stacked.std(axis=0) + 1e-9
    normed = [((x - mean) / scale, y / y.sum()) for x, y in groups]
    w = np.zeros(stacked.shape[1])
    m, v = np.zeros_like(w), np.zeros_like(w)
    for step in range(1, _STEPS + 1):
        grad = l2 * w
        for z, target in normed:
            s = z @ w
            p = np.exp(s - s.max())
            grad += z.T @ (p / p.sum() - target) / len(normed)
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        w -= _STEP_SIZE * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    return Model(w, mean, scale)


def reranked(c: Candidates, x: Any, model: Model) -> list[str]:
    """``c``'s candidates in the model's order, given their features ``x``."""
    score = ((x - model.mean) / model.scale) @ model.weights
    return [c.rows[i]["path"] for i in np.argsort(-score, kind="stable")]


def found(ranking: Sequence[str], gold: Sequence[str], k: int) -> int:
    first = set(ranking[:k])
    return sum(1 for g in gold if g in first)


def leave_one_repository_out(
    tasks: Sequence[Candidates], kind: str, l2: float, top: int
) -> dict[str, tuple[int, int, int]]:
    """Per repository left out: files found at 5 by the hand weights, by the learned model, and
    files to find."""
    # Each task's features and targets once: every fold but its own trains on them.
    data = [
        (
            features(c.rows[:top], kind),
            np.array([1.0 if r["path"] in c.gold else 0.0 for r in c.rows[:top]]),
        )
        if c.rows
        else None
        for c in tasks
    ]
    out: dict[str, tuple[int, int, int]] = {}
    for held in sorted({c.repo for c in tasks}):
        train = [d for c, d in zip(tasks, data, strict=True) if c.repo != held and d is not None]
        model = fit([(x, y) for x, y in train if y.sum()], l2)
        tested = [(c, d) for c, d in zip(tasks, data, strict=True) if c.repo == held]
        hand = sum(found([r["path"] for r in c.rows], c.gold, 5) for c, _ in tested)
        learned = sum(
            found(reranked(c, d[0], model), c.gold, 5) for c, d in tested if d is not None
        )
        total = sum(len(c.gold) for c, _ in tested)
        out[held] = (hand, learned, total)
    return out


def render(
    tasks: Sequence[Candidates],
    runs: Mapping[str, Mapping[str, tuple[int, int, int]]],
    top: int,
    skipped: Sequence[str],
) -> str:
    total = sum(len(c.gold) for c in tasks)
    lines = [
        "# Code retrieval: a learned re-ranker over rank_files' candidates",
        "",
        f"{len(tasks)} tasks of the dev repositories, {total} files to find. Each run trains a "
        f"linear listwise model on the first {top} candidates of the tasks of seven repositories "
        "and re-ranks the eighth's (leave one repository out); 'hand' is `rank_files` as it "
        "ships. Recall@5 in files found.",
        "",
    ]
    if skipped:
        lines += [f"Skipped (held-out repositories or no clone): {len(skipped)} tasks.", ""]
    lines += ["## The candidates' ceiling (recall@k of rank_files)", "", "| k | found | recall |"]
    lines.append("|---|---|---|")
    for k in CEILINGS:
        n = sum(found([r["path"] for r in c.rows], c.gold, k) for c in tasks)
        lines.append(f"| {k} | {n} | {n / total:.1%} |")
    repos = sorted({c.repo for c in tasks})
    lines += ["", "## Leave one repository out: recall@5", ""]
    lines.append(
        "| features | l2 | hand | learned | " + " | ".join(r.split("/")[1] for r in repos) + " |"
    )
    lines.append("|---" * (4 + len(repos)) + "|")
    for name, per in runs.items():
        kind, l2 = name.rsplit(" ", 1)
        hand = sum(h for h, _, _ in per.values())
        learned = sum(m for _, m, _ in per.values())
        cells = " | ".join(f"{per[r][0]}→{per[r][1]}/{per[r][2]}" for r in repos)
        lines.append(f"| {kind} | {l2} | {hand / total:.1%} | {learned / total:.1%} | {cells} |")
    return "\n".join(lines) + "\n"


def plot(runs: Mapping[str, Mapping[str, tuple[int, int, int]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(runs)
    totals = [sum(t for _, _, t in runs[n].values()) for n in names]
    hand = sum(h for h, _, _ in runs[names[0]].values()) / totals[0]
    learned = [
        sum(m for _, m, _ in runs[n].values()) / t for n, t in zip(names, totals, strict=True)
    ]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.barh(names, [100 * x for x in learned], color="tab:orange", label="learned")
    ax.axvline(100 * hand, color="tab:blue", label="hand weights")
    ax.set_xlabel("recall@5, leaving one dev repository out (%)")
    ax.set_xlim(60, 90)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=Path, nargs="+", required=True)
    parser.add_argument("--repos", type=Path, required=True, help="folder of clones or mirrors")
    parser.add_argument("--cache", type=Path, required=True, help="where base commits go")
    parser.add_argument("--index-dir", type=Path, default=None, help="index files (kept)")
    parser.add_argument("--keep-tests", action="store_true", help="export test folders too")
    parser.add_argument(
        "--dev-repos",
        default=",".join(DEV_REPOS),
        help="comma-separated repositories tuned on, the only ones read (default: %(default)s)",
    )
    parser.add_argument("--top", type=int, default=100, help="candidates the model re-ranks")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder")
    args = parser.parse_args(argv)
    dev_repos = {r for r in args.dev_repos.split(",") if r}
    tasks: list[Candidates] = []
    skipped: list[str] = []
    for path in args.tasks:
        for task in load_tasks(path):
            if task.repo not in dev_repos:
                skipped.append(task.instance_id)
                continue
            try:
                root, db = tree_and_index(
                    task, args.repos, args.cache, args.index_dir, args.keep_tests
                )
            except MissingRepository:
                skipped.append(task.instance_id)
                continue
            index = CodeIndex(root, db=db)
            tasks.append(candidates(index, task.instance_id, task.repo, task.problem, task.gold))
            print(task.instance_id, file=sys.stderr)
    if len({c.repo for c in tasks}) < 2:
        raise SystemExit("error: leaving one repository out needs tasks of two dev repositories")
    runs = {
        f"{kind} {l2:g}": leave_one_repository_out(tasks, kind, l2, args.top)
        for kind in FEATURE_SETS
        for l2 in L2
    }
    args.out.mkdir(parents=True, exist_ok=True)
    report = render(tasks, runs, args.top, skipped)
    (args.out / "code_reranker.md").write_text(report, encoding="utf-8")
    (args.out / "code_reranker.json").write_text(
        json.dumps(
            {
                "top": args.top,
                "tasks": [c.task for c in tasks],
                "skipped": skipped,
                "runs": {n: {r: list(v) for r, v in per.items()} for n, per in runs.items()},
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    plot(runs, args.out / "code_reranker.png")
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
