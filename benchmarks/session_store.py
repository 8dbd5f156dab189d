"""What keeping a Session in a session store costs, per backend, on real agent sessions.

Replays each session of ``--data`` message by message, as an agent appends them, into a
``Session`` in memory and into ``Session.open`` on each store given, then resumes every stored
session in a new object and compares its request with the writer's. Reports, per backend:

- the time one ``append`` takes (median and 99th percentile) and its overhead over the same
  append in memory (the store's round trips, the JSON, the originals written);
- the time one ``render()`` takes (the read that sees other replicas' appends, included);
- the time ``Session.open`` takes to resume a whole session;
- resumed requests that differ from the writer's, byte for byte (must be 0).

Usage (from the repository root; give the servers you have)::

    python benchmarks/session_store.py --data ../shared/data/agent-sessions \\
        --postgres postgresql://USER:PASSWORD@localhost/DB --redis redis://localhost:6379/15

SQLite (a file in a temporary folder) and memory always run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from ctxpack import Session, to_openai  # noqa: E402
from ctxpack.store import (  # noqa: E402
    open_store,
    redact_url,
)


def _harness() -> Any:
    sys.path.insert(0, str(HERE))
    import agent_sessions

    return agent_sessions


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def wire(session: Session) -> str:
    return json.dumps(to_openai(session.render().messages), sort_keys=True)


def replay(messages: list[dict[str, Any]], session: Session) -> tuple[list[float], list[float]]:
    """Append each message, rendering after each assistant turn as an agent loop would."""
    appends: list[float] = []
    renders: list[float] = []
    for message in messages:
        start = time.perf_counter()
        session.append(message)
        appends.append(time.perf_counter() - start)
        if message.get("role") == "assistant":
            start = time.perf_counter()
            session.render()
            renders.append(time.perf_counter() - start)
    return appends, renders


def run(data: Path, urls: dict[str, str], limit: int | None, model: str) -> dict[str, Any]:
    sessions = _harness().load_sessions(data, limit)
    report: dict[str, Any] = {
        "sessions": len(sessions),
        "messages": sum(len(s.messages) for s in sessions),
        "backends": {},
    }
    baseline: list[float] = []
    for backend, url in {"in memory (Session())": "", **urls}.items():
        store = open_store(url) if url else None
        appends: list[float] = []
        renders: list[float] = []
        resumes: list[float] = []
        mismatches = 0
        run_id = uuid.uuid4().hex[:8]
        for agent_session in sessions:
            session_id = f"bench-{run_id}-{agent_session.id}"
            if store is None:
                session = Session(model=model)
            else:
                session = Session.open(session_id, store=store, model=model)
            a, r = replay(agent_session.messages, session)
            appends += a
            renders += r
            if store is not None:
                start = time.perf_counter()
                resumed = Session.open(session_id, store=store, model=model)
                resumes.append(time.perf_counter() - start)
                mismatches += wire(resumed) != wire(session)
                store.delete_session(session_id)
        if store is None:
            baseline = appends
        report["backends"][backend] = {
            "url": redact_url(url) if url else "",
            "append_p50_ms": ms(statistics.median(appends)),
            "append_p99_ms": ms(percentile(appends, 0.99)),
            "append_overhead_p50_ms": ms(
                statistics.median([a - b for a, b in zip(appends, baseline, strict=True)])
            ),
            "render_p50_ms": ms(statistics.median(renders)),
            "render_p99_ms": ms(percentile(renders, 0.99)),
            "resume_p50_ms": ms(statistics.median(resumes)) if resumes else None,
            "resumed_requests_differing": mismatches if store is not None else None,
        }
        if store is not None:
            store.close()
    return report


def table(report: dict[str, Any]) -> str:
    lines = [
        f"{report['sessions']} agent sessions, {report['messages']} messages appended one by one",
        "",
        "| backend | append p50 (ms) | append p99 (ms) | overhead p50 (ms) | render p50 (ms) "
        "| render p99 (ms) | resume p50 (ms) | resumed requests differing |",
        "|---|---|---|---|---|---|---|---|",
    ]
    columns = (
        "append_p50_ms",
        "append_p99_ms",
        "append_overhead_p50_ms",
        "render_p50_ms",
        "render_p99_ms",
        "resume_p50_ms",
        "resumed_requests_differing",
    )
    for name, row in report["backends"].items():
        cells = ["-" if row[c] is None else str(row[c]) for c in columns]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a folder of agent sessions")
    parser.add_argument("--postgres", help="a PostgreSQL URL")
    parser.add_argument("--redis", help="a Redis URL")
    parser.add_argument("--limit", type=int, help="only the first N sessions")
    parser.add_argument("--model", default="gpt-4")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        urls = {"memory://": "memory://", "sqlite": f"sqlite:///{folder}/sessions.db"}
        if args.postgres:
            urls["postgresql"] = args.postgres
        if args.redis:
            urls["redis"] = args.redis
        report = run(args.data, urls, args.limit, args.model)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "session_store.json").write_text(json.dumps(report, indent=2) + "\n")
    text = table(report)
    (args.out / "session_store.md").write_text(
        "# Session stores: the cost of keeping a session in a store\n\n"
        "Command: `python benchmarks/session_store.py --data ../shared/data/agent-sessions "
        "--postgres $CTXPACK_TEST_POSTGRES_URL --redis $CTXPACK_TEST_REDIS_URL` (localhost "
        "servers, 2 shared cores).\n\n" + text + "\n"
    )
    print(text)


if __name__ == "__main__":
    main()
