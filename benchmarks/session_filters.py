"""What ctxpack.Session's tool-output filters keep and lose, per kind of output, on real sessions.

Replays each session of ``--data`` through ``benchmarks/agent_sessions.py`` with the Session
strategies (filtering on arrival, and after the agent's answer), and reports:

- the bill and evidence survival against raw (the harness's own figures);
- per kind of tool output (test runs, file views, listings...): how many outputs, tokens in
  and out, the evidence the agent later used from outputs of that kind, how much of it was still
  in the request, and every lost-evidence case;
- the time ``Session.append()`` takes per appended message (median, 95th percentile).

Usage (from the repository root)::

    python benchmarks/session_filters.py --data ../shared/data/agent-sessions [--limit N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _harness() -> Any:
    # The harness is the sibling script; benchmarks/ is no package.
    sys.path.insert(0, str(HERE))
    import agent_sessions

    return agent_sessions


MODES = {
    "session": {},
    "session-answered": {"filter_when": "answered"},
    # Repeated tool-output lines sent as they are: what sending them once saves, and costs.
    "session-send-repeats": {"dedupe_outputs": False},
}


def run(data: Path, out: Path, limit: int | None) -> dict[str, Any]:
    A = _harness()
    sessions = A.load_sessions(data, limit)
    counter = A.get_counter(counter=A.ENCODING)
    billings = [A.Billing.parse(spec) for spec in A.DEFAULT_BILLINGS]
    report: dict[str, Any] = {"sessions": len(sessions), "modes": {}}
    runs = [A.replay(s, "raw", A.STRATEGIES["raw"], counter, billings) for s in sessions]
    raw = A.summarize(runs, billings)["raw"]
    report["raw"] = {k: raw[k] for k in ("cost_usd", "cost_usd_by_billing", "input_tokens")}
    for name, options in MODES.items():
        instances: list[Any] = []

        def factory(
            info: Any, options: dict[str, Any] = options, instances: list[Any] = instances
        ) -> Any:
            strategy = A.SessionStrategy(info, **options)
            instances.append(strategy)
            return strategy

        mode_runs = [A.replay(s, name, factory, counter, billings) for s in sessions]
        summary = A.summarize(mode_runs, billings)[name]
        kinds: dict[str, Counter[str]] = defaultdict(Counter)
        kind_of: dict[tuple[str, int], str] = {}
        appends: list[float] = []
        renders: list[float] = []
        for session, strategy in zip(sessions, instances, strict=True):
            appends.extend(strategy.append_seconds)
            renders.extend(strategy.render_seconds)
            ids = {m.id: i for i, m in enumerate(strategy.session.transcript())}
            for record in strategy.session.records:
                kind = record.kind if record.shortened else f"{record.kind} (kept whole)"
                kinds[kind]["outputs"] += 1
                kinds[kind]["tokens_in"] += record.tokens_before
                kinds[kind]["tokens_out"] += record.tokens_after
                kind_of[(session.id, ids[record.message_id])] = kind
            for items in A.session_evidence(session.messages).values():
                for item in items:
                    kinds[kind_of.get((session.id, item.source), "other")]["evidence"] += 1
        lost_cases = []
        for case in summary["lost_evidence"]:
            kind = kind_of.get((case["session"], case["first_seen"]), "other")
            kinds[kind]["lost"] += 1
            kinds[kind]["lost_unrecoverable"] += not case["recoverable"]
            lost_cases.append({**case, "kind": kind})
        appends.sort()
        renders.sort()
        report["modes"][name] = {
            "cost_usd": summary["cost_usd"],
            "cost_usd_by_billing": summary["cost_usd_by_billing"],
            "share_of_raw": summary["cost_usd"] / raw["cost_usd"],
            "input_cost_share_of_raw": summary["input_cost_usd"] / raw["input_cost_usd"],
            "input_tokens": summary["input_tokens"],
            "evidence_total": summary["evidence_total"],
            "evidence_survival": summary["evidence_survival"],
            "evidence_recoverable": summary["evidence_recoverable"],
            "ms_per_step": summary["ms_per_step"],
            "append_ms_median": 1000 * statistics.median(appends),
            "append_ms_p95": 1000 * appends[int(0.95 * (len(appends) - 1))],
            "appended_messages": len(appends),
            "render_ms_median": 1000 * statistics.median(renders),
            "render_ms_p95": 1000 * renders[int(0.95 * (len(renders) - 1))],
            "kinds": {k: dict(v) for k, v in sorted(kinds.items())},
            "lost_cases": lost_cases,
        }
        report["raw"]["input_cost_usd"] = raw["input_cost_usd"]
    out.mkdir(parents=True, exist_ok=True)
    (out / "session_filters.json").write_text(json.dumps(report, indent=1))
    (out / "session_filters.md").write_text(markdown(report))
    return report


def markdown(report: dict[str, Any]) -> str:
    raw = report["raw"]
    lines = [
        "# Session tool-output filters on real agent sessions",
        "",
        f"{report['sessions']} sessions. Raw: ${raw['cost_usd']:.2f} "
        f"(input ${raw['input_cost_usd']:.2f}, the rest is the agent's output, the same for "
        "every strategy), Sonnet-class prices, one cache breakpoint per request.",
        "",
        "| mode | $ | % of raw | input $ % of raw | evidence present | present or recoverable "
        "| append ms (median / p95) | render ms (median / p95) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, m in report["modes"].items():
        lines.append(
            f"| {name} | {m['cost_usd']:.2f} | {100 * m['share_of_raw']:.1f}% | "
            f"{100 * m['input_cost_share_of_raw']:.1f}% | {100 * m['evidence_survival']:.2f}% | "
            f"{100 * m['evidence_recoverable']:.2f}% | {m['append_ms_median']:.2f} / "
            f"{m['append_ms_p95']:.2f} | {m['render_ms_median']:.2f} / {m['render_ms_p95']:.2f} |"
        )
    for name, m in report["modes"].items():
        lines += [
            "",
            f"## {name}: per kind of output",
            "",
            "| kind | outputs | tokens in | tokens out | out/in | evidence used later | lost "
            "(in request) | lost and unrecoverable |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for kind, k in m["kinds"].items():
            tin, tout = k.get("tokens_in", 0), k.get("tokens_out", 0)
            lines.append(
                f"| {kind} | {k.get('outputs', 0)} | {tin:,} | {tout:,} | "
                f"{100 * tout / tin if tin else 0:.0f}% | {k.get('evidence', 0)} | "
                f"{k.get('lost', 0)} | {k.get('lost_unrecoverable', 0)} |"
            )
        lines += ["", f"### {name}: every lost-evidence case", ""]
        for case in m["lost_cases"]:
            lines.append(
                f"- {case['session']} step {case['step']}: `{case['term']}` from message "
                f"{case['first_seen']} ({case['kind']})"
                + ("" if case["recoverable"] else " **not recoverable**")
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder of session JSON")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="where results go")
    parser.add_argument("--limit", type=int, default=None, help="only the first N sessions")
    args = parser.parse_args(argv)
    report = run(args.data, args.out, args.limit)
    for name, m in report["modes"].items():
        print(
            f"{name}: {100 * m['share_of_raw']:.1f}% of raw, evidence "
            f"{100 * m['evidence_survival']:.2f}% present, "
            f"{100 * m['evidence_recoverable']:.2f}% present or recoverable, append "
            f"{m['append_ms_median']:.2f} ms median"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
