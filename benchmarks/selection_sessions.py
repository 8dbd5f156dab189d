"""Selection on real coding-agent sessions: the large model's bill plus the selector's.

Replays the sessions of ``benchmarks/agent_sessions.py`` with its selection strategies
(``select-lexical-16k``: ``ctxpack.selection.LexicalSelector`` before every step, 16k tokens of
messages; ``select-lexical-when-over-32k`` and ``-16k``: only when the request would exceed 32k
or 16k tokens, down to 16k or 8k, the request growing append-only in between), with ``raw`` and
``pack-16k`` for reference. The harness bills the large model's requests; this script adds what
a ``ctxpack.selection.ModelSelector`` call would have cost at each selecting step, at a small
model's price: its prompt (the system prompt and the numbered listing of the workspace, exactly what
``ModelSelector`` sends) and an answer as long as the selection the lexical selector made, billed
with ``ctxpack.cost.simulate`` (the selector's own prompt cache: the listing grows append-only).
The selection itself is the lexical selector's: no model runs, so this measures the economics
and the evidence a lexical selection keeps, not a small model's judgement.

Usage (from the repository root)::

    python benchmarks/selection_sessions.py --data ../shared/data/agent-sessions
    python benchmarks/selection_sessions.py --data DIR --out DIR --limit 5
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxpack import get_counter
from ctxpack.cost import Price, Request, price, simulate

HERE = Path(__file__).resolve().parent
STRATEGIES = (
    "raw",
    "pack-16k",
    "select-lexical-16k",
    "select-lexical-when-over-32k",
    "select-lexical-when-over-16k",
)
# Small models the selector may run on: two of the shipped table, and a cheaper one
# (Gemini 3.1 Flash-Lite at $0.25 in and $1.50 out per million; cache prices assumed at the
# usual ratios, reads 0.1x, no write premium).
FLASH_LITE = Price(
    input=0.25, output=1.5, cache_write_5m=0.25, cache_write_1h=0.25, cache_read=0.025
)


def _harness() -> Any:
    # The harness is the sibling script; benchmarks/ is no package.
    sys.path.insert(0, str(HERE))
    import agent_sessions

    return agent_sessions


def run(data: Path, limit: int | None) -> dict[str, Any]:
    """Replay; per strategy: the harness summary, plus the selector's tokens and bills."""
    harness = _harness()
    counter = get_counter(counter=harness.ENCODING)
    billings = [harness.Billing.parse(b) for b in harness.DEFAULT_BILLINGS]
    small = {"claude-haiku-4-5": price("claude-haiku-4-5"), "gpt-5-mini": price("gpt-5-mini")}
    small["flash-lite"] = FLASH_LITE
    sessions = harness.load_sessions(data, limit)
    runs = []
    selector: dict[str, dict[str, Any]] = {}
    for name in STRATEGIES:
        made: list[Any] = []

        def factory(info: Any, name: str = name, made: list[Any] = made) -> Any:
            made.append(harness.STRATEGIES[name](info))
            return made[-1]

        t0 = time.perf_counter()
        for session in sessions:
            runs.append(harness.replay(session, name, factory, counter, billings))
        print(f"  {name}: {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        calls = [r for s in made for r in getattr(s, "selector_requests", ())]
        if not calls:
            continue
        per_session = [
            [
                Request(messages=r["messages"], output_tokens=r["output_tokens"])
                for r in s.selector_requests
            ]
            for s in made
        ]
        # Each small model's own minimum cacheable prompt (Haiku 4.5's is 4,096).
        bills = {
            label: [simulate(reqs, price=p, counter=counter) for reqs in per_session if reqs]
            for label, p in small.items()
        }
        first = next(iter(bills.values()))
        selector[name] = {
            "calls": len(calls),
            "input_tokens": sum(b.input_tokens for b in first),
            "output_tokens": sum(b.output_tokens for b in first),
            "cache_read_tokens": sum(b.cache_read_tokens for b in first),
            "cost_usd": {label: sum(b.cost for b in group) for label, group in bills.items()},
        }
    summary = harness.summarize(runs, billings)
    for name, extra in selector.items():
        summary[name]["selector"] = extra
    return {
        "sessions": [s.id for s in sessions],
        "billings": [b.label for b in billings],
        "results": summary,
    }


def render(payload: dict[str, Any]) -> str:
    results = payload["results"]
    billings = payload["billings"]
    raw = results["raw"]
    lines = [
        "# Selection on agent sessions: the large model's bill plus the selector's",
        "",
        f"{len(payload['sessions'])} sessions. Large-model dollars are the harness's "
        f"({', '.join(billings)}); the selector's are what a ModelSelector call would cost at "
        "each selecting step (its prompt: the workspace listing; its answer: the selection as "
        "JSON), billed through the prompt-cache model at a small model's price.",
        "",
        "| strategy | large model $ (" + billings[0] + ") | % of raw | selector calls | "
        "selector tokens in / out | selector $ haiku-4-5 | selector $ gpt-5-mini | "
        "selector $ flash-lite | total $ with flash-lite | % of raw | evidence present | "
        "peak request | ms/step |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in results.items():
        sel = row.get("selector")
        large = row["cost_usd"]
        if sel:
            costs = sel["cost_usd"]
            total = large + costs["flash-lite"]
            selector_cells = (
                f"{sel['calls']} | {sel['input_tokens'] / 1e6:.2f}M"
                f" / {sel['output_tokens'] / 1e3:.0f}k"
                f" | {costs['claude-haiku-4-5']:.2f} | {costs['gpt-5-mini']:.2f}"
                f" | {costs['flash-lite']:.2f}"
            )
        else:
            total = large
            selector_cells = "0 | - | - | - | -"
        lines.append(
            f"| {name} | {large:.2f} | {100 * large / raw['cost_usd']:.1f}% | {selector_cells} "
            f"| {total:.2f} | {100 * total / raw['cost_usd']:.1f}% "
            f"| {100 * row['evidence_survival']:.1f}% | {row['peak_request_tokens']:,} "
            f"| {row['ms_per_step']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder of session JSON")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="where results go")
    parser.add_argument("--limit", type=int, default=None, help="only the first N sessions")
    args = parser.parse_args(argv)
    payload = run(args.data, args.limit)
    markdown = render(payload)
    print(markdown)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "selection_sessions.md").write_text(markdown + "\n", encoding="utf-8")
    for row in payload["results"].values():
        row.pop("lost_evidence", None)  # agent_sessions.json lists them
    (args.out / "selection_sessions.json").write_text(json.dumps(payload, indent=1) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
