"""How far ctxpack's Claude approximation is from what Anthropic billed, on your own requests.

Reads a JSON-lines file, one request a line: ``{"request": <the Messages API payload you sent>,
"usage": <the usage Anthropic returned>}``, and prints :func:`ctxpack.anthropic_tokens.calibrate`'s
report: the ratio billed / counted (10th, 50th, 90th percentile), the share of requests
under-counted, the worst shortfall and the factor that covers ``--coverage`` of them.

Usage (from the repository root)::

    python scripts/calibrate_claude.py requests.jsonl [--factor 1.41] [--coverage 0.9]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ctxpack.anthropic_tokens import calibrate
from ctxpack.tokens import ANTHROPIC_FACTOR, anthropic_approx_counter


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path, help="JSON lines of {request, usage}")
    parser.add_argument("--factor", type=float, default=ANTHROPIC_FACTOR)
    parser.add_argument("--coverage", type=float, default=0.9)
    args = parser.parse_args(argv)
    lines = [json.loads(line) for line in args.file.read_text("utf-8").splitlines() if line]
    report = calibrate(
        [line["request"] for line in lines],
        [line["usage"] for line in lines],
        counter=anthropic_approx_counter(args.factor),
        coverage=args.coverage,
    )
    print(f"counter: {report.counter}, {report.requests} requests")
    print(
        f"billed / counted: p10 {report.p10:.3f}, median {report.median:.3f}, p90 {report.p90:.3f}"
    )
    under, worst = report.under_counted, report.worst_under_count
    print(f"under-counted: {under:.1%} of requests, worst by {worst:.1%}")
    print(
        f"factor covering {report.coverage:.0%}: {args.factor * report.factor_for_coverage:.3f} "
        f"(anthropic_approx_counter(factor))"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
