"""What a long managed session writes to its store, as it grows: per write, and in total.

Replays one long agent conversation into ``Session(model=..., window=W, store="sqlite:///...")``
message by message, rendering before each assistant message as an agent loop does (a managed
render is stored like an append: what it cleared or compacted). A wrapper around the SQLite
store records every write. At messages N, 2N, 4N and 8N it reports:

- the state written by the last write (bytes), and the bytes of each write on average since
  the last checkpoint (entry + state + originals);
- the totals written so far: entries, states, compaction indexes, other originals;
- the time one ``append`` and one ``render`` take (median since the last checkpoint), and a
  render's mean, which the few renders that compact weigh on (each reads the history it
  summarises).

State written per append that grows with the session makes the total grow with its square.

The conversation is synthetic (a coding agent: a user task every 20 turns, each turn an
assistant tool call and its output, outputs of several kinds), or, with ``--data``, the agent
sessions of that folder (OpenAI-format JSON, e.g. ``../shared/data/agent-sessions-long``)
chained into one: each after the first system prompt, tool call ids kept unique.

Usage (from the repository root)::

    python benchmarks/session_growth.py --every 250
    python benchmarks/session_growth.py --every 250 --data ../shared/data/agent-sessions-long
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from ctxpack import Session  # noqa: E402
from ctxpack.store import open_store  # noqa: E402

# How a compaction's index of originals begins (ctxpack.managed's header line), whole or as
# the lines it adds to the one before (ctxpack.persistence.EDIT_MARK, from format 2 on).
INDEX_HEADERS = ("message\ttool\tcommand\tartifact", "ctxpack-edit:")


class RecordingStore:
    """A session store that counts the bytes of every write before passing it on."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.url = store.url
        self.writes: list[dict[str, int]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def append(
        self,
        session_id: str,
        entry: str,
        *,
        version: int,
        state: str,
        artifacts: Mapping[str, str] | None = None,
    ) -> None:
        self.store.append(session_id, entry, version=version, state=state, artifacts=artifacts)
        self._record(entry, state, artifacts or {})

    def put_artifact(self, session_id: str, artifact: str, text: str) -> None:
        self.store.put_artifact(session_id, artifact, text)
        self._record("", "", {artifact: text})

    def _record(self, entry: str, state: str, artifacts: Mapping[str, str]) -> None:
        index = sum(utf8(t) for t in artifacts.values() if t.startswith(INDEX_HEADERS))
        self.writes.append(
            {
                "entry": utf8(entry),
                "state": utf8(state),
                "index": index,
                "originals": sum(utf8(t) for t in artifacts.values()) - index,
            }
        )


def utf8(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def synthetic(messages: int) -> Iterator[dict[str, Any]]:
    """A coding agent's conversation of ``messages`` messages: a system prompt, a user task
    every 20 turns, each turn a tool call and its output (listings, test runs, file reads)."""
    yield {"role": "system", "content": "You are a coding agent. Use the tools to fix the bug."}
    n = 1
    turn = 0
    while n < messages:
        if turn % 20 == 0:
            yield {"role": "user", "content": f"Task {turn // 20}: make test_case_{turn} pass."}
            n += 1
        call_id = f"call_{turn}"
        kind = turn % 3
        command = ("cat", "pytest -q", "ls -la")[kind] + f" src/module_{turn % 37}.py"
        yield {
            "role": "assistant",
            "content": f"Step {turn}: looking at module {turn % 37}.",
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": command})},
                }
            ],
        }
        yield {"role": "tool", "tool_call_id": call_id, "content": _output(turn, kind)}
        n += 2
        turn += 1


def _output(turn: int, kind: int) -> str:
    if kind == 0:
        return "\n".join(
            f"def function_{turn}_{i}(value):\n    return value * {i} + {turn}" for i in range(40)
        )
    if kind == 1:
        return "\n".join(
            [
                f"FAILED tests/test_m{turn}.py::test_{i} - AssertionError: {i} != {turn}"
                for i in (1, 2)
            ]
            + [f"tests/test_m{turn}_{i}.py ....F.. [{i}%]" for i in range(30)]
            + [f"=== 2 failed, {turn} passed in 0.{turn % 10}s ==="]
        )
    return "\n".join(
        f"-rw-r--r-- 1 dev dev {turn * 13 + i:6d} Jan  1 12:{i:02d} file_{turn}_{i}.py"
        for i in range(25)
    )


def from_data(folder: Path) -> list[dict[str, Any]]:
    """The sessions of ``folder`` chained into one (see benchmarks/long_sessions.py)."""
    sys.path.insert(0, str(HERE))
    import agent_sessions
    import long_sessions

    sessions = agent_sessions.load_sessions(folder)
    return list(long_sessions.chain(sessions, len(sessions))[0].messages)


def checkpoints(every: int, total: int) -> list[int]:
    return [n for n in (every, 2 * every, 4 * every, 8 * every) if n <= total]


def run(
    messages: list[dict[str, Any]], every: int, model: str, window: int, folder: str
) -> dict[str, Any]:
    store = RecordingStore(open_store(f"sqlite:///{folder}/sessions.db"))
    session = Session.open("growth", store=store, model=model, window=window)
    marks = set(checkpoints(every, len(messages)))
    appends: list[float] = []
    renders: list[float] = []
    rows = []
    seen = 0  # writes before the last checkpoint
    for n, message in enumerate(messages, 1):
        if message.get("role") == "assistant" and n > 1:
            start = time.perf_counter()
            session.render()
            renders.append(time.perf_counter() - start)
        start = time.perf_counter()
        session.append(message)
        appends.append(time.perf_counter() - start)
        if n not in marks:
            continue
        writes = store.writes
        recent = writes[seen:]
        rows.append(
            {
                "messages": n,
                "writes": len(writes),
                "state_last_write": writes[-1]["state"],
                "bytes_per_write": round(
                    sum(sum(w.values()) for w in recent) / max(1, len(recent))
                ),
                "total_entries": sum(w["entry"] for w in writes),
                "total_state": sum(w["state"] for w in writes),
                "total_index": sum(w["index"] for w in writes),
                "total_originals": sum(w["originals"] for w in writes),
                "total": sum(sum(w.values()) for w in writes),
                "append_p50_ms": round(statistics.median(appends) * 1000, 3),
                "render_p50_ms": round(statistics.median(renders) * 1000, 3) if renders else None,
                "render_mean_ms": round(statistics.fmean(renders) * 1000, 3) if renders else None,
                "compactions": sum(e.action == "compacted" for e in session.window_state.events),
            }
        )
        seen = len(writes)
        appends, renders = [], []
    store.close()
    return {"model": model, "window": window, "messages": len(messages), "rows": rows}


COLUMNS = (
    ("messages", "messages"),
    ("state_last_write", "state per write (B)"),
    ("bytes_per_write", "bytes per write (B)"),
    ("total_entries", "entries (B)"),
    ("total_state", "states (B)"),
    ("total_index", "indexes (B)"),
    ("total_originals", "originals (B)"),
    ("total", "total (B)"),
    ("append_p50_ms", "append p50 (ms)"),
    ("render_p50_ms", "render p50 (ms)"),
    ("render_mean_ms", "render mean (ms)"),
    ("compactions", "compactions"),
)


def table(report: dict[str, Any]) -> str:
    lines = [
        f"{report['source']}: {report['messages']} messages, model {report['model']}, "
        f"window {report['window']}, SQLite",
        "",
        "| " + " | ".join(title for _, title in COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for row in report["rows"]:
        lines.append("| " + " | ".join(f"{row[key]:,}" for key, _ in COLUMNS) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, default=250, help="N: report at N, 2N, 4N, 8N")
    parser.add_argument("--data", type=Path, help="a folder of agent sessions to chain")
    parser.add_argument("--model", default="claude-sonnet-4-5")
    parser.add_argument("--window", type=int, default=64_000)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--name", default="session_growth", help="the results' file name")
    args = parser.parse_args()
    if args.data is not None:
        messages = from_data(args.data)
        source = f"{args.data.name} chained"
    else:
        messages = list(synthetic(8 * args.every))
        source = "synthetic agent conversation"
    with tempfile.TemporaryDirectory() as folder:
        report = {"source": source, **run(messages, args.every, args.model, args.window, folder)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(report, indent=2) + "\n")
    text = table(report)
    command = " ".join(["python", "benchmarks/session_growth.py", *sys.argv[1:]])
    (args.out / f"{args.name}.md").write_text(
        f"# What a long managed session writes to its store\n\nCommand: `{command}`\n\n{text}\n"
    )
    print(text)


if __name__ == "__main__":
    main()
