"""What a line built to make the secret rules work hardest costs, against the same line that
gives them nothing to read.

Two rules read a value after a key: an environment variable naming a secret (``X_AUTH=...``)
and a key before a value (``secret=...``, gitleaks' generic-api-key and ctxpack's key=value).
When no end follows a value, they once tried it again at each shorter length: a line of
``X_AUTH=`` cost five times the same line with ``+`` in place of ``=`` (a line the rules find no
value in), a line of ``secret=`` seven times. Each value is now read once (the rules' regexes
take it in a lookahead and match it by back-reference, so nothing is tried again); the tests
check that the shipped rules keep that form and find what the old form found.

The factor is a constant (a value is at most 200 characters), not a growth with the line's
length, so it is measured here and not asserted in a test: on a shared machine, one run of
``X_AUTH=`` measured 4.2 times its control where this machine measures 3.3.

Each line is scanned with :func:`ctxpack.redaction.find_secrets`; a scan's cost is the least
CPU time of this thread over ``--repeat`` scans (each of a new text, so that no cache answers),
and the factor of each round is pathological / control. The table gives the median and the
highest factor over ``--rounds`` rounds.

Usage (from the repository root)::

    python benchmarks/pathological_lines.py
    python benchmarks/pathological_lines.py --rounds 20

Writes benchmarks/results/pathological_lines.md and pathological_lines.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import platform
import statistics
import subprocess
from collections.abc import Callable
from pathlib import Path

from ctxpack.redaction import find_secrets

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = Path(__file__).resolve().parent / "results"

# (name, pathological unit, control unit, repeats, factor before each value was read once)
CASES = [
    ("secret names (X_AUTH=)", "X_AUTH=", "X_AUTH+", 40_000, 5.0),
    ("keys before long values (secret=)", "secret=", "secret+", 30_000, 7.0),
]


def _cpu_seconds() -> Callable[..., float]:
    """tests/helpers.py's ``cpu_seconds``: the least CPU time of this thread over a few runs,
    the collector off (what the scan costs, not what else the machine runs)."""
    spec = importlib.util.spec_from_file_location("helpers", ROOT / "tests" / "helpers.py")
    assert spec and spec.loader
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    return helpers.cpu_seconds  # type: ignore[no-any-return]


def measure(rounds: int, repeat: int) -> list[dict[str, object]]:
    cpu_seconds = _cpu_seconds()
    suffixes = itertools.count()
    rows: list[dict[str, object]] = []
    for name, unit, control, times, before in CASES:
        bad, plain = unit * times, control * times

        def scan(line: str) -> float:
            return cpu_seconds(lambda: find_secrets(f"{line} {next(suffixes)}"), repeat)

        factors, seconds = [], []
        for _ in range(rounds):
            cost = scan(bad)
            factors.append(cost / scan(plain))
            seconds.append(cost)
        rows.append(
            {
                "case": name,
                "characters": len(bad),
                "seconds": statistics.median(seconds),
                "factor_median": statistics.median(factors),
                "factor_max": max(factors),
                "factor_before": before,
            }
        )
    return rows


def _commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or "unknown"


def render(rows: list[dict[str, object]], meta: dict[str, object]) -> str:
    lines = [
        "# Pathological lines for the secret rules: cost against a control line",
        "",
        f"ctxpack {meta['commit']}; Python {meta['python']}, {meta['cpus']} CPUs, load average "
        f"{meta['load']} at the end. {meta['rounds']} rounds, each scan the least CPU time of "
        f"{meta['repeat']}.",
        "",
        "| line | characters | s per scan (median) | factor, median | factor, highest "
        "| factor before values were read once |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['case']} | {row['characters']:,} | {row['seconds']:.3f} "
            f"| {row['factor_median']:.2f} | {row['factor_max']:.2f} | {row['factor_before']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10, help="default: %(default)s")
    parser.add_argument("--repeat", type=int, default=3, help="default: %(default)s")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="default: %(default)s")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.repeat < 1:
        parser.error("--rounds and --repeat must be at least 1")
    rows = measure(args.rounds, args.repeat)
    meta = {
        "commit": _commit(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "rounds": args.rounds,
        "repeat": args.repeat,
    }
    table = render(rows, meta)
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "pathological_lines.md").write_text(table, encoding="utf-8")
    payload = {"meta": meta, "rows": rows}
    (args.out / "pathological_lines.json").write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
