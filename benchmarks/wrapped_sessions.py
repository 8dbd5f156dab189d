"""What a session behind a client wrapper costs per request, on real agent sessions.

Replays the longest sessions of ``--data`` request by request through ``wrap_openai`` with a
``Session`` behind it, as an agent sends them: each request carries the whole history so far,
the wrapper gives the session what it lacks and sends what it renders. The API is an in-process
mock transport (no network), so the times are ctxpack's and the SDK's own. Three set-ups:

- ``plain``: a session in memory, packed under the wrapper's window (128,000 tokens);
- ``managed``: ``Session(window=64_000)`` in memory;
- ``managed, SQLite``: the same, stored in a SQLite file, as a replica of a backend keeps it;
- ``LangChain, SQLite``: the same session behind LangChain's ``SessionMiddleware`` (its
  ``pack_request``, the time it adds to each model call of an agent: the history arrives as
  LangChain messages, converted at each request).

Reported per set-up: the time of one request (median and 95th percentile, and the median over
the last tenth of each session, where the history is longest), and the median time of reading
the session's transcript, which the wrapper does at each request to learn what the session
holds (so that replicas and restarted processes give each message once).

Usage (from the repository root)::

    python benchmarks/wrapped_sessions.py --data ../shared/data/agent-sessions-long

Writes ``benchmarks/results/wrapped_sessions.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import httpx2  # noqa: E402
import openai  # noqa: E402
from agent_sessions import load_sessions  # noqa: E402

import ctxpack  # noqa: E402
from ctxpack.integrations.langchain_agent import SessionMiddleware  # noqa: E402

REPLY = {
    "id": "c",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-4o",
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}
    ],
}


def mock_client() -> openai.OpenAI:
    transport = httpx2.MockTransport(lambda request: httpx2.Response(200, json=REPLY))
    return openai.OpenAI(
        api_key="k",
        base_url="http://mock.invalid/v1",
        http_client=httpx2.Client(transport=transport),
    )


def replay(
    messages: list[dict[str, Any]], session: ctxpack.Session, window: int | None
) -> dict[str, Any]:
    """One session's requests through the wrapper: per-request and transcript-read times."""
    client = ctxpack.wrap_openai(mock_client(), window=window, session=session)
    requests: list[float] = []
    reads: list[float] = []
    for step, message in enumerate(messages):
        if message.get("role") != "assistant" or step == 0:
            continue
        t0 = time.perf_counter()
        client.chat.completions.create(model="gpt-4o", messages=messages[:step], max_tokens=4_000)
        requests.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        session.transcript()
        reads.append(time.perf_counter() - t0)
    return {"requests": requests, "reads": reads, "messages": len(messages)}


def replay_langchain(
    messages: list[dict[str, Any]], middleware: Any, thread_id: str
) -> dict[str, Any]:
    """:func:`replay` through ``SessionMiddleware.pack_request``, with the requests LangChain's
    agent would build (the history as LangChain messages, the system message beside them)."""
    from langchain.agents.middleware import ModelRequest
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    history = ctxpack.adapters.to_langchain(messages)
    model = GenericFakeChatModel(messages=iter(()))
    # What the middleware reads of LangGraph's runtime: the thread.
    runtime = SimpleNamespace(execution_info=SimpleNamespace(thread_id=thread_id))
    has_system = bool(messages) and messages[0].get("role") == "system"
    requests: list[float] = []
    reads: list[float] = []
    for step, message in enumerate(messages):
        if message.get("role") != "assistant" or step == 0:
            continue
        request = ModelRequest(
            model=model,
            messages=history[int(has_system) : step],
            system_message=history[0] if has_system else None,
            tools=[],
            runtime=runtime,  # type: ignore[arg-type]
            model_settings={"max_tokens": 4_000},
        )
        t0 = time.perf_counter()
        middleware.pack_request(request)
        requests.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        middleware.session(thread_id).transcript()
        reads.append(time.perf_counter() - t0)
    return {"requests": requests, "reads": reads, "messages": len(messages)}


def ms(values: list[float], q: float | None = None) -> float:
    if q is None:
        return round(1000 * statistics.median(values), 2)
    ordered = sorted(values)
    return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder of agent sessions")
    parser.add_argument("--sessions", type=int, default=5, help="the N longest sessions")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--name", default="wrapped_sessions")
    parser.add_argument("--setups", default="", help="only these set-ups (separated by semicolons)")
    args = parser.parse_args()

    sessions = sorted(load_sessions(args.data), key=lambda s: -len(s.messages))[: args.sessions]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        setups = [
            ("plain", lambda sid: ctxpack.Session(model="gpt-4o"), 128_000),
            ("managed", lambda sid: ctxpack.Session(model="gpt-4o", window=64_000), None),
            (
                "managed, SQLite",
                lambda sid: ctxpack.Session.open(
                    sid, store=f"sqlite:///{folder}/s.db", model="gpt-4o", window=64_000
                ),
                None,
            ),
            (
                "LangChain, SQLite",
                lambda sid: SessionMiddleware(
                    window=64_000, model="gpt-4o", store=f"sqlite:///{folder}/lc.db"
                ),
                None,
            ),
        ]
        chosen = {name.strip() for name in args.setups.split(";") if name.strip()}
        for label, make, window in setups:
            if chosen and label not in chosen:
                continue
            requests: list[float] = []
            reads: list[float] = []
            last: list[float] = []
            for s in sessions:
                made = make(s.id)
                if isinstance(made, ctxpack.Session):
                    run = replay(s.messages, made, window)
                else:
                    run = replay_langchain(s.messages, made, s.id)
                    made.close()
                requests += run["requests"]
                reads += run["reads"]
                last += run["requests"][-max(1, len(run["requests"]) // 10) :]
            rows.append(
                {
                    "setup": label,
                    "requests": len(requests),
                    "median_ms": ms(requests),
                    "p95_ms": ms(requests, 0.95),
                    "last_tenth_median_ms": ms(last),
                    "transcript_read_median_ms": ms(reads),
                }
            )
            print(rows[-1], flush=True)

    lengths = [len(s.messages) for s in sessions]
    lines = [
        "# A session behind a client wrapper: time per request",
        "",
        f"Data: {args.data.name}, the {len(sessions)} longest sessions ({min(lengths)} to "
        f"{max(lengths)} messages), replayed through `wrap_openai` with a mock transport; each "
        "request carries the whole history so far. Times in ms (a 2-core machine shared with "
        "other jobs).",
        "",
        "| set-up | requests | median | p95 | median, last tenth of each session | "
        "transcript read (median) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['setup']} | {r['requests']} | {r['median_ms']} | {r['p95_ms']} | "
            f"{r['last_tenth_median_ms']} | {r['transcript_read_median_ms']} |"
        )
    lines += [
        "",
        "The transcript read is what the wrapper adds to each request to learn what the session "
        "holds (its messages' ids), so that replicas and restarted processes give each message "
        "once; a stored session reads it from its store. The LangChain row times "
        "`SessionMiddleware.pack_request` alone (the history as LangChain messages, no SDK call), "
        "where the other rows include the SDK's request through the mock transport.",
        "",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.md").write_text("\n".join(lines))
    (args.out / f"{args.name}.json").write_text(json.dumps({"rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
