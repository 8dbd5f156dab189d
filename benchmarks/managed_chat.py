"""A chat through the managed mode: conversations whose user turns alone outgrow the window.

Each LoCoMo conversation (``--data``, e.g. ``../shared/data/locomo``) is replayed as a chatbot
backend would: a system message, one message per turn (the first speaker as the user, the other
as the assistant), one request before each assistant turn. Strategies, at each window:

- ``raw``: every turn, every time; a request over the window (less the reply room) is an API
  error (counted);
- ``verbatim``: ``ctxpack.Session(window=W)`` with ``instructions_share=None``, every user
  message sent whole: the first request that cannot hold them raises ``BudgetExceededError``
  (what the managed mode did before it summarised crowding user messages);
- ``managed``: ``ctxpack.Session(window=W)``, the defaults;
- ``pack``: for comparison, ``ctxpack.pack`` of the whole chat and each question, within the same
  room (question-aware selection, one request per question; no bill).

Reported: requests, requests over the window or failed, the peak request, dollars with the
prompt cache (claude-sonnet-4-5, one breakpoint per request) as a share of raw's, compactions,
the user turns sent whole in the last request, and, for every question asked about the
conversation (adversarial ones left out), its evidence turns present in the request that would
answer it (these two on the conversations that did not fail): for ``raw`` and the managed
modes, the last request of the chat (a turn counts when it is sent whole, or its text is copied
whole into the summary); for ``pack``, the packed question (a turn counts when it keeps 80% of
its words, as ``benchmarks/locomo.py`` counts).

Usage (from the repository root)::

    python benchmarks/managed_chat.py --data ../shared/data/locomo
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ctxpack
from ctxpack import BudgetExceededError, get_counter
from ctxpack.cost import Request, price, simulate
from ctxpack.managed import WindowPolicy

HERE = Path(__file__).resolve().parent
MODEL = "claude-sonnet-4-5"
WINDOWS = (4_000, 8_000, 16_000)
STRATEGIES = ("raw", "verbatim", "managed")


def _locomo() -> Any:
    # The sibling script; benchmarks/ is no package.
    spec = importlib.util.spec_from_file_location("locomo_bench", HERE / "locomo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def replay(
    history: list[dict[str, Any]], strategy: str, window: int, counter: Any
) -> dict[str, Any]:
    """One strategy over one chat: its requests, where it failed, and its last request."""
    policy = WindowPolicy(window=window, instructions_share=None if strategy == "verbatim" else 0.5)
    room = policy.room(tool_tokens=0)
    session = ctxpack.Session(model=MODEL, counter=counter, window=policy)
    requests: list[Request] = []
    sizes: list[int] = []
    failed = None
    last: list[Any] = []
    for step, message in enumerate(history):
        if message["role"] == "assistant" and step > 0:
            tools = None
            if strategy == "raw":
                sent: list[Any] = history[:step]
                size = counter.count_messages(ctxpack.messages.ensure_messages(sent))
            else:
                try:
                    result = session.render()
                except BudgetExceededError:
                    failed = len(requests)
                    break
                # The session's retrieve tool goes with every request it renders: billed, and
                # counted against the window as the session counts it.
                sent, tools, size = result.messages, session.tools() or None, result.tokens
            output = counter.count_message(ctxpack.Message.model_validate(message))
            requests.append(Request(messages=list(sent), tools=tools, output_tokens=output))
            sizes.append(size)
            last = sent
        if strategy != "raw":
            session.append(message)
    events = session.window_state.events if strategy != "raw" else []
    return {
        "requests": requests,
        "sizes": sizes,
        "over": sum(s > room for s in sizes),
        "failed": failed,
        "last": last,
        "compactions": sum(e.action == "compacted" for e in events),
    }


def _text(message: Any) -> str:
    return message["content"] if isinstance(message, dict) else message.text


def present(turn: dict[str, Any], request: Sequence[Any]) -> bool:
    """Sent whole, or copied whole into the summary (its text without the speaker's name)."""
    body = turn["content"].split(": ", 1)[-1]
    return any(body in _text(m) for m in request)


def measure(conversations: Sequence[Any], windows: Sequence[int]) -> dict[str, Any]:
    L = _locomo()
    counter = get_counter(counter="cl100k_base")
    bill_price = price(MODEL)
    out: dict[str, Any] = {}
    for window in windows:
        room = WindowPolicy(window=window).room(tool_tokens=0)
        rows: dict[str, dict[str, float]] = {}
        for strategy in (*STRATEGIES, "pack"):
            rows[strategy] = {
                "requests": 0, "over": 0, "failed": 0, "peak": 0, "dollars": 0.0,
                "compactions": 0, "users": 0, "users_sent": 0, "evidence": 0, "evidence_present": 0,
            }  # fmt: skip
        for conv in conversations:
            history = L.build_history(conv)
            by_id = {m["id"]: m for m in history}
            questions = [q for q in conv.questions if q.evidence]
            for strategy in STRATEGIES:
                run = replay(history, strategy, window, counter)
                row = rows[strategy]
                row["requests"] += len(run["requests"])
                row["over"] += run["over"]
                row["failed"] += run["failed"] is not None
                row["peak"] = max(row["peak"], max(run["sizes"], default=0))
                bill = simulate(run["requests"], price=bill_price, counter=counter)
                row["dollars"] += bill.cost
                row["compactions"] += run["compactions"]
                if run["failed"] is not None:
                    continue  # its last request is not the end of the chat: not counted below
                users = [m for m in history if m["role"] == "user"]
                sent = {_text(m) for m in run["last"]}
                row["users"] += len(users)
                row["users_sent"] += sum(m["content"] in sent for m in users)
                for q in questions:
                    for eid in q.evidence:
                        if eid in by_id:
                            row["evidence"] += 1
                            row["evidence_present"] += present(by_id[eid], run["last"])
            row = rows["pack"]
            for q in questions:
                messages = [*history, L.question_message(q)]
                result = ctxpack.pack(messages, budget=room, counter=counter)
                hits, total = L.evidence_recall(result.messages, by_id, q.evidence)
                row["evidence"] += total
                row["evidence_present"] += hits
                row["requests"] += 1
                row["peak"] = max(row["peak"], result.tokens)
        raw = rows["raw"]["dollars"]
        for row in rows.values():
            row["share_of_raw"] = row["dollars"] / raw if raw else 0.0
        out[str(window)] = rows
    return out


def render(results: dict[str, Any], conversations: Sequence[Any]) -> str:
    lines = [
        "# A chat through the managed mode",
        "",
        f"Data: {len(conversations)} LoCoMo conversations "
        f"({', '.join(c.sample_id for c in conversations)}), replayed as a chatbot backend "
        "would (one request before each assistant turn). Tokens: cl100k_base. Bills: "
        f"{MODEL}, one cache breakpoint per request. Over: requests over the window less the "
        "reply room (an API error). Failed: conversations that stopped on BudgetExceededError. "
        "User turns and evidence are counted on the conversations that did not fail. Evidence: "
        "the evidence turns of every question, present in the last request of the chat (sent "
        "whole, or copied whole into the summary); for `pack`, in the packed question (80% of "
        "their words).",
        "",
    ]
    for window, rows in results.items():
        lines += [
            f"## window {int(window):,}",
            "",
            "| strategy | requests | over | failed | peak | $ | % of raw | compactions | "
            "user turns sent whole (last request) | evidence present |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name, r in rows.items():
            billed = name != "pack"
            dollars = f"{r['dollars']:.2f}" if billed else "-"
            share = f"{100 * r['share_of_raw']:.1f}%" if billed else "-"
            users = f"{int(r['users_sent'])} / {int(r['users'])}" if r["users"] else "-"
            evidence = (
                f"{100 * r['evidence_present'] / r['evidence']:.1f}% "
                f"({int(r['evidence_present'])} / {int(r['evidence'])})"
                if r["evidence"]
                else "-"
            )
            lines.append(
                f"| {name} | {int(r['requests'])} | {int(r['over'])} | {int(r['failed'])} | "
                f"{int(r['peak']):,} | {dollars} | {share} | {int(r['compactions'])} | "
                f"{users} | {evidence} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", required=True, help="LoCoMo conversations (files or folder)")
    parser.add_argument("--windows", default=",".join(map(str, WINDOWS)))
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--name", default="managed_chat")
    args = parser.parse_args(argv)
    conversations = _locomo().load_conversations([args.data])
    windows = [int(w) for w in args.windows.split(",")]
    results = measure(conversations, windows)
    text = render(results, conversations)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.md").write_text(text + "\n", encoding="utf-8")
    (args.out / f"{args.name}.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
