"""Managed sessions as a user makes them, ``Session(model=M, window=W)``, over every session of
some folders: requests over the window, and the renders that raise.

``benchmarks/long_sessions.py`` measures the managed mode's bill and evidence with one shared
token counter; this replays each session (OpenAI-format JSON: ``{"id", "messages": [...]}``)
with the counter the model gives (``o200k_base`` for ``gpt-4o``, the approximation with a margin
for Claude models), at several windows including small ones, a render before each assistant
message, and checks each request twice: the session's own count against the window less the
reply room, and the request counted again from its messages. A render that raises is counted
with its error (a window too small for the system prompt and the task, say), and the session
goes on to the next window.

Usage (from the repository root)::

    python benchmarks/window_stress.py --model gpt-4o --windows 8000,16000,64000 \\
        ../shared/data/agent-sessions-long SESSIONS_DIR ...

The table is printed and written to ``benchmarks/results/window_stress_MODEL.md`` (and ``.json``),
or ``NAME.md`` with ``--name NAME``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ctxpack
from ctxpack.tokens import ApproximateTokenCountWarning

ROOT = Path(__file__).resolve().parent.parent


def _messages(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text("utf-8"))
    messages = data["messages"] if isinstance(data, dict) else data
    return [m for m in messages if isinstance(m, dict)]


def replay(messages: Sequence[dict[str, Any]], model: str, window: int) -> dict[str, Any]:
    """One session at one window: requests, those over the room, and the error if one raised."""
    session = ctxpack.Session(model=model, window=window)
    assert session.window is not None
    room = session.window.window - session.window.reserve
    out: dict[str, Any] = {"requests": 0, "over": 0, "peak": 0, "error": None}
    seen = 0
    for step, message in enumerate(messages):
        if message.get("role") != "assistant" or step == 0:
            continue
        try:
            session.extend(messages[seen:step])
            seen = step
            result = session.render()
        except ctxpack.CtxpackError as exc:
            out["error"] = f"{type(exc).__name__} at message {step}: {exc}"
            break
        again = session.counter.count_messages(result.messages) + result.tool_tokens
        out["requests"] += 1
        out["peak"] = max(out["peak"], result.tokens, again)
        out["over"] += max(result.tokens, again) > room
    return out


def measure(folders: Sequence[Path], model: str, windows: Sequence[int]) -> list[dict[str, Any]]:
    rows = []
    for folder in folders:
        paths = sorted(folder.glob("*.json"))
        for window in windows:
            row: dict[str, Any] = {"set": folder.name, "window": window, "sessions": len(paths)}
            row |= {"requests": 0, "over": 0, "peak": 0, "errors": [], "seconds": 0.0}
            start = time.perf_counter()
            for path in paths:
                run = replay(_messages(path), model, window)
                row["requests"] += run["requests"]
                row["over"] += run["over"]
                row["peak"] = max(row["peak"], run["peak"])
                if run["error"]:
                    row["errors"].append(f"{path.stem}: {run['error']}")
            row["seconds"] = round(time.perf_counter() - start, 1)
            rows.append(row)
    return rows


def render(rows: Sequence[dict[str, Any]], model: str) -> str:
    lines = [
        f"# Managed sessions with `Session(model={model!r}, window=W)`",
        "",
        "A render before each assistant message of every session. Over: requests above the "
        "window less the reply room, by the session's count or by the messages counted again. "
        "Errors: sessions whose render raised (the session stops there).",
        "",
        "| set | window | sessions | requests | over the window | peak request | errors | s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['set']} | {r['window']:,} | {r['sessions']} | {r['requests']:,} | {r['over']} "
            f"| {r['peak']:,} | {len(r['errors'])} | {r['seconds']} |"
        )
    kinds = Counter(e.split(": ", 1)[1].split(" at ")[0] for r in rows for e in r["errors"])
    if kinds:
        lines += ["", "Errors by kind: " + ", ".join(f"{k} {n}" for k, n in kinds.items()), ""]
        for r in rows:
            for error in r["errors"][:3]:
                lines.append(f"- {r['set']} at {r['window']:,}: {error[:400]}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folders", type=Path, nargs="+", help="folders of session JSON")
    parser.add_argument("--model", default="gpt-4o")
    parser.add_argument("--windows", default="8000,16000,64000")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--name", help="file name, without suffix (window_stress_MODEL)")
    args = parser.parse_args(argv)
    windows = [int(w) for w in args.windows.split(",")]
    with warnings.catch_warnings():
        # A Claude model's approximate count warns at every session; the title names the model.
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        rows = measure(args.folders, args.model, windows)
    text = render(rows, args.model)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    name = args.name or f"window_stress_{args.model}"
    (args.out / f"{name}.md").write_text(text, "utf-8")
    (args.out / f"{name}.json").write_text(json.dumps(rows, indent=1) + "\n", "utf-8")
    return 1 if any(r["over"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
