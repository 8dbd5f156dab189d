"""How long ``import ctxpack`` takes, and how long until the first result.

Each run is a fresh interpreter that times, with ``time.perf_counter``:

* ``import ctxpack``: what every program pays, whether it packs or not;
* the first ``ctxpack.pack()`` after it (a three-message chat, ``model="gpt-4"``): the modules
  a first call imports on its way, and the tokenizer's encoding load;
* ``import ctxpack`` followed by one attribute of each kind the documentation uses
  (``ctxpack.pack``, ``ctxpack.Session``, ``ctxpack.selection``...): everything the
  everyday API imports.

The first run is thrown away (it may compile bytecode and read files from disk); the others are
warm: bytecode compiled, files in the OS cache, as on any second start of a program. One more
run with ``python -X importtime`` sums the time each package's modules take.

The target (issue 26): ``import ctxpack`` <= 150 ms warm (median).

Usage (from the repository root)::

    python benchmarks/import_time.py
    python benchmarks/import_time.py --runs 30

Writes benchmarks/results/import_time.md and import_time.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = Path(__file__).resolve().parent / "results"
TARGET_IMPORT_MS = 150.0

CHILD = r"""
import json, time
t0 = time.perf_counter()
import ctxpack
t1 = time.perf_counter()
result = ctxpack.pack(
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"},
     {"role": "assistant", "content": "Hello."}],
    budget=100, model="gpt-4",
)
t2 = time.perf_counter()
for name in ("Session", "context_usage", "simulate", "wrap_openai"):
    getattr(ctxpack, name)
import ctxpack.editing, ctxpack.filters, ctxpack.selection, ctxpack.store
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "first_pack": t2 - t1, "everyday_api": t3 - t2}))
"""

MEASURES = {
    "import": "import ctxpack",
    "first_pack": "then the first pack() (imports it needs, encoding load)",
    "everyday_api": "then Session, context_usage, simulate, wrap_openai, selection, editing...",
}


def _run_child(importtime: bool = False) -> tuple[dict[str, float], str]:
    command = [sys.executable, *(["-X", "importtime"] if importtime else []), "-c", CHILD]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=120
    )
    if done.returncode != 0:
        raise SystemExit(f"the child failed:\n{done.stderr}")
    times = json.loads(done.stdout.strip().splitlines()[-1])
    return {k: v * 1000 for k, v in times.items()}, done.stderr


def _by_package(importtime_log: str, count: int = 10) -> list[tuple[str, float]]:
    """Self import time summed per top-level package (``numpy.linalg`` counts for numpy), in
    ms, largest first: nesting in the log follows import order, not ownership, once names are
    imported lazily, so per-package sums are what compare."""
    totals: dict[str, float] = {}
    for line in importtime_log.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, _, name = line.removeprefix("import time:").split("|")
        package = name.strip().split(".")[0]
        totals[package] = totals.get(package, 0.0) + int(own) / 1000
    return sorted(totals.items(), key=lambda item: -item[1])[:count]


def _loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - not on every platform
        return "n/a"


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": statistics.median(ordered),
        "p90": ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))],
        "min": ordered[0],
        "max": ordered[-1],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="warm runs (default %(default)s)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="default: %(default)s")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    machine = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_start": _loadavg(),
    }
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO_ROOT
    ).stdout.strip()
    _run_child()  # cold: thrown away
    runs = [_run_child()[0] for _ in range(args.runs)]
    _, log = _run_child(importtime=True)
    machine["loadavg_end"] = _loadavg()

    stats = {key: _stats([r[key] for r in runs]) for key in MEASURES}
    top = _by_package(log)
    passed = stats["import"]["median"] <= TARGET_IMPORT_MS
    payload = {
        "machine": machine,
        "commit": commit,
        "runs": runs,
        "stats": stats,
        "top_modules": top,
        "target_import_ms": TARGET_IMPORT_MS,
        "passed": passed,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "import_time.json").write_text(json.dumps(payload, indent=2) + "\n")

    lines = [
        "# import ctxpack: time",
        "",
        f"{args.runs} warm runs, each a fresh interpreter (one cold run before them thrown "
        f"away); ms, measured in the child with time.perf_counter. ctxpack {commit}; Python "
        f"{machine['python']}, {machine['platform']}, {machine['cpus']} CPUs, load average "
        f"{machine['loadavg_start']} at start and {machine['loadavg_end']} at the end.",
        "",
        "| measure | median | p90 | min | max |",
        "|---|---|---|---|---|",
    ]
    for key, label in MEASURES.items():
        s = stats[key]
        lines.append(
            f"| {label} | {s['median']:.1f} | {s['p90']:.1f} | {s['min']:.1f} | {s['max']:.1f} |"
        )
    lines += [
        "",
        f"- **{'PASS' if passed else 'FAIL'}** `import ctxpack` warm median <= "
        f"{TARGET_IMPORT_MS:.0f} ms: {stats['import']['median']:.1f} ms",
        "",
        "Import time per package in one more run (`python -X importtime`, the whole child: "
        "import, first pack, everyday API; the sum of each package's modules' own time):",
        "",
        "| package | ms |",
        "|---|---|",
        *(f"| {name} | {own:.1f} |" for name, own in top),
        "",
    ]
    (args.out / "import_time.md").write_text("\n".join(lines))
    print("\n".join(lines))
    print(f"wrote {args.out / 'import_time.md'} and .json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
