"""A fleet of chatbot replicas on one session store, one of them killed mid-run.

For each backend (PostgreSQL, Redis, SQLite), ``--replicas`` replicas of the example backend
(examples/chatbot_backend.py, Starlette on uvicorn, a mock model) are started on localhost, all
on the same store. ``--users`` simulated users then talk to them at once, ``--turns`` turns each,
one after the other, each turn sent to the next replica in turn (a load balancer without sticky
sessions). When ``--kill-at`` of all turns have been answered, one replica is killed with
SIGKILL (whatever it was doing) and started again. A user whose request fails (connection
refused or reset, a 5xx) sends the same turn again to the next replica, at most
``MAX_ATTEMPTS`` times: the turn id makes the retry safe.

At the end every user's conversation is read back from the store and checked:

- acknowledged: turns answered with a 200;
- lost: acknowledged turns whose question or reply is not in the store (must be 0);
- duplicated: messages held more than once, or a stored reply other than the one the user got
  (must be 0); out of order: a conversation not in turn order (must be 0);
- over budget: requests whose prompt did not fit the model's window, as the mock model counts
  with tiktoken (it refuses them, as a real API would) (must be 0);
- ctxpack's latency per request (``ctxpack_ms``: the backend's time in ctxpack calls, store
  round trips included, the model excluded), p50 and p99; the end-to-end latency too;
- RSS of each replica at the end (the restarted one is a new process).

Then every conversation is erased through the backend and the store checked empty for them.

Everything runs on localhost; every wait and retry is bounded. The servers are the caller's:

    . .ci/services   # starts PostgreSQL and Redis, exports their URLs
    python benchmarks/fleet.py
    python benchmarks/fleet.py --backends sqlite --users 10 --turns 5

Writes benchmarks/results/fleet.md and fleet.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = REPO_ROOT / "examples" / "chatbot_backend.py"
DEFAULT_OUT = Path(__file__).resolve().parent / "results"
POSTGRES_URL = "postgresql://ctxpack:ctxpack-ci@localhost:5432/ctxpack_test"
REDIS_URL = "redis://localhost:6379/15"
MAX_ATTEMPTS = 10  # per turn
START_TIMEOUT = 60.0  # seconds for a replica to answer /health
REQUEST_TIMEOUT = 30.0

sys.path.insert(0, str(REPO_ROOT))  # the working tree's ctxpack, for the final check


def rss_mb(pid: int) -> tuple[float, float]:
    """(RSS now, peak RSS) of process ``pid``, in MB."""
    now = peak = 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            now = int(line.split()[1]) / 1024
        elif line.startswith("VmHWM:"):
            peak = int(line.split()[1]) / 1024
    return now, peak


def question(user: int, turn: int) -> str:
    # Long enough that a conversation outgrows the window after a few turns: packing matters.
    return (
        f"User {user}, turn {turn}: I am planning a trip to Lisbon with my family and need "
        f"advice on hotels near the river, day trips to Sintra and where to eat fresh fish. "
        f"Remember that my budget is {100 + user * 7 + turn} euros per night."
    )


@dataclass
class Replica:
    index: int
    port: int
    store_url: str
    model_delay: float
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "REPLICA": f"r{self.index}"}
        # The child holds its own copy of the file descriptor: ours can close at once.
        with self.log.open("ab") as log:
            self.process = self._spawn(env, log)

    def _spawn(self, env: dict[str, str], log: Any) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [
                sys.executable,
                str(EXAMPLE),
                "--store",
                self.store_url,
                "--port",
                str(self.port),
                "--model-delay",
                str(self.model_delay),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def wait_ready(self, client: httpx.AsyncClient) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"replica {self.index} exited: {self.output()}")
            try:
                if (await client.get(f"{self.url}/health", timeout=2)).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.2)
        raise RuntimeError(f"replica {self.index} did not start in {START_TIMEOUT} s")

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


@dataclass
class Run:
    backend: str
    acknowledged: dict[tuple[int, int], str] = field(default_factory=dict)  # -> reply
    ctxpack_ms: list[float] = field(default_factory=list)
    total_ms: list[float] = field(default_factory=list)
    over_budget: int = 0
    retries: int = 0
    failed_turns: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    killed_at: int | None = None
    restart_seconds: float | None = None


async def drive(
    run: Run, replicas: list[Replica], users: int, turns: int, kill_at: int, prefix: str
) -> None:
    """All users at once, each turn to the next replica, one replica killed at ``kill_at``."""
    limits = httpx.Limits(max_connections=users * 2, max_keepalive_connections=users)
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT, limits=limits) as client:
        finished: list[int] = []

        async def killer() -> None:
            # Bounded: it stops waiting when every user is done (the kill then never happens).
            while len(run.acknowledged) < kill_at:
                if len(finished) == users:
                    return
                await asyncio.sleep(0.05)
            victim = replicas[1 % len(replicas)]
            run.killed_at = len(run.acknowledged)
            victim.kill()
            start = time.monotonic()
            await asyncio.sleep(0.5)
            victim.start()
            await victim.wait_ready(client)
            run.restart_seconds = round(time.monotonic() - start, 2)

        async def user(k: int) -> None:
            for turn in range(turns):
                body = {"turn": str(turn), "message": question(k, turn)}
                for attempt in range(MAX_ATTEMPTS):
                    replica = replicas[(k + turn + attempt) % len(replicas)]
                    start = time.perf_counter()
                    try:
                        answer = await client.post(f"{replica.url}/chat/{prefix}{k}", json=body)
                    except httpx.TransportError as error:
                        kind = type(error).__name__
                        run.errors[kind] = run.errors.get(kind, 0) + 1
                        run.retries += 1
                        await asyncio.sleep(0.1 * (attempt + 1))
                        continue
                    if answer.status_code == 502:  # the model refused: prompt over its window
                        run.over_budget += 1
                    if answer.status_code != 200:
                        key = f"HTTP {answer.status_code}"
                        run.errors[key] = run.errors.get(key, 0) + 1
                        run.retries += 1
                        await asyncio.sleep(0.1 * (attempt + 1))
                        continue
                    payload = answer.json()
                    run.total_ms.append((time.perf_counter() - start) * 1000)
                    if "ctxpack_ms" in payload:
                        run.ctxpack_ms.append(float(payload["ctxpack_ms"]))
                        budget = int(payload["budget"])
                        if int(payload["prompt_tokens"]) > budget:
                            run.over_budget += 1
                    run.acknowledged[(k, turn)] = str(payload["reply"])
                    break
                else:
                    run.failed_turns += 1
                    break  # the next turns would not be this conversation any more
            finished.append(k)

        await asyncio.gather(killer(), *(user(k) for k in range(users)))


def verify(run: Run, store_url: str, users: int, prefix: str) -> dict[str, int]:
    """Read every conversation back from the store: lost, duplicated, out of order."""
    import ctxpack
    from ctxpack.store import open_store

    store = open_store(store_url)
    lost = duplicated = out_of_order = 0
    try:
        for k in range(users):
            session = ctxpack.Session.open(f"{prefix}{k}", store=store, model="gpt-4")
            messages = session.transcript()
            ids = [m.id for m in messages]
            texts = [(m.role, m.text) for m in messages]
            duplicated += len(ids) - len(set(ids)) + len(texts) - len(set(texts))
            by_id = {m.id: m.text for m in messages}
            turns = sorted(t for (u, t) in run.acknowledged if u == k)
            for t in turns:
                reply = by_id.get(f"a-{t}")
                if by_id.get(f"u-{t}") != question(k, t) or reply is None:
                    lost += 1
                elif reply != run.acknowledged[(k, t)]:
                    duplicated += 1  # two replies to one turn, the user given the other
            expected = [f"{r}-{t}" for t in range(len(ids) // 2 + 1) for r in "ua"]
            if ids != expected[: len(ids)]:
                out_of_order += 1
    finally:
        store.close()
    return {"lost": lost, "duplicated": duplicated, "out_of_order": out_of_order}


async def erase(replicas: list[Replica], users: int, prefix: str) -> int:
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as client:
        for k in range(users):
            answer = await client.delete(f"{replicas[k % len(replicas)].url}/chat/{prefix}{k}")
            answer.raise_for_status()
    import ctxpack
    from ctxpack.store import open_store

    store = open_store(replicas[0].store_url)
    try:
        return sum(
            len(ctxpack.Session.open(f"{prefix}{k}", store=store, model="gpt-4")) > 0
            for k in range(users)
        )
    finally:
        store.close()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def run_backend(
    backend: str, url: str, args: argparse.Namespace, port: int, folder: Path
) -> dict[str, Any]:
    prefix = f"fleet-{backend}-{os.getpid()}-{int(time.time())}-u"
    replicas = [
        Replica(i, port + i, url, args.model_delay, folder / f"{backend}-r{i}.log")
        for i in range(args.replicas)
    ]
    run = Run(backend)
    start = time.monotonic()
    try:
        for replica in replicas:
            replica.start()

        async def ready() -> None:
            async with httpx.AsyncClient() as client:
                await asyncio.gather(*(r.wait_ready(client) for r in replicas))

        asyncio.run(ready())
        kill_at = int(args.kill_at * args.users * args.turns)
        asyncio.run(drive(run, replicas, args.users, args.turns, kill_at, prefix))
        seconds = time.monotonic() - start
        rss = [rss_mb(r.process.pid) for r in replicas if r.process is not None]
        checked = verify(run, url, args.users, prefix)
        left = asyncio.run(erase(replicas, args.users, prefix))
    finally:
        for replica in replicas:
            replica.stop()
    return {
        "backend": backend,
        "users": args.users,
        "turns": args.turns,
        "replicas": args.replicas,
        "acknowledged": len(run.acknowledged),
        **checked,
        "over_budget": run.over_budget,
        "failed_turns": run.failed_turns,
        "retries": run.retries,
        "errors": run.errors,
        "killed_after_turns": run.killed_at,
        "restart_seconds": run.restart_seconds,
        "ctxpack_ms_p50": round(percentile(run.ctxpack_ms, 50), 2),
        "ctxpack_ms_p99": round(percentile(run.ctxpack_ms, 99), 2),
        "total_ms_p50": round(percentile(run.total_ms, 50), 2),
        "total_ms_p99": round(percentile(run.total_ms, 99), 2),
        "rss_mb": [round(now, 1) for now, _ in rss],
        "peak_rss_mb": [round(peak, 1) for _, peak in rss],
        "sessions_left_after_erasure": left,
        "seconds": round(seconds, 1),
    }


def write(rows: list[dict[str, Any]], args: argparse.Namespace, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "fleet.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# A fleet of replicas on one session store",
        "",
        f"{args.replicas} replicas of examples/chatbot_backend.py (Starlette on uvicorn, one "
        f"process each, mock model answering after {args.model_delay * 1000:.0f} ms) on "
        f"localhost, one store; {args.users} users at once x {args.turns} turns, each turn to "
        "the next replica; replica r1 killed with SIGKILL once "
        f"{args.kill_at:.0%} of the turns were answered, then restarted. Window 1,000 tokens "
        "(150 for the reply). ctxpack ms: the backend's time in ctxpack calls per request "
        "(opening or re-reading the session, appending the question and the reply, rendering; "
        "store round trips included, the model excluded). See the docstring of "
        "benchmarks/fleet.py.",
        "",
        "| backend | acknowledged | lost | duplicated | out of order | over budget | failed "
        "turns | retries | ctxpack ms p50 / p99 | request ms p50 / p99 | RSS MB per replica "
        "(peak) | left after erasure | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        rss = ", ".join(
            f"{now:.0f} ({peak:.0f})"
            for now, peak in zip(r["rss_mb"], r["peak_rss_mb"], strict=True)
        )
        lines.append(
            f"| {r['backend']} | {r['acknowledged']} / {r['users'] * r['turns']} | {r['lost']} | "
            f"{r['duplicated']} | {r['out_of_order']} | {r['over_budget']} | "
            f"{r['failed_turns']} | {r['retries']} | {r['ctxpack_ms_p50']} / "
            f"{r['ctxpack_ms_p99']} | {r['total_ms_p50']} / {r['total_ms_p99']} | {rss} | "
            f"{r['sessions_left_after_erasure']} | {r['seconds']} |"
        )
    lines += ["", "Errors seen by the clients (then retried on the next replica):", ""]
    for r in rows:
        seen = ", ".join(f"{k}: {v}" for k, v in sorted(r["errors"].items())) or "none"
        lines.append(
            f"- {r['backend']}: {seen}; r1 killed after {r['killed_after_turns']} turns, "
            f"answering again {r['restart_seconds']} s later"
        )
    ok = all(
        r["lost"] == r["duplicated"] == r["over_budget"] == r["out_of_order"] == 0
        and r["failed_turns"] == 0
        and r["acknowledged"] == r["users"] * r["turns"]
        for r in rows
    )
    lines += [
        "",
        f"**{'PASS' if ok else 'FAIL'}**: every turn acknowledged, 0 lost, 0 duplicated, "
        "0 over budget, on every backend.",
        "",
        f"Python {platform.python_version()}, {platform.platform()}, {os.cpu_count()} CPUs, "
        f"load average at the end {' '.join(f'{x:.1f}' for x in os.getloadavg())}.",
        "",
    ]
    (out / "fleet.md").write_text("\n".join(lines), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="postgresql,redis,sqlite")
    parser.add_argument(
        "--postgres-url", default=os.environ.get("CTXPACK_TEST_POSTGRES_URL", POSTGRES_URL)
    )
    parser.add_argument("--redis-url", default=os.environ.get("CTXPACK_TEST_REDIS_URL", REDIS_URL))
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--kill-at", type=float, default=0.4, help="share of turns answered")
    parser.add_argument("--model-delay", type=float, default=0.02, help="mock model seconds")
    parser.add_argument("--port", type=int, default=18400, help="first replica's port")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    if args.replicas < 2 or args.users < 1 or args.turns < 1 or not 0 < args.kill_at < 1:
        parser.error("need >= 2 replicas, >= 1 user and turn, and 0 < --kill-at < 1")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        urls = {
            "postgresql": args.postgres_url,
            "redis": args.redis_url,
            "sqlite": f"sqlite:///{Path(folder) / 'fleet.db'}",
        }
        for i, backend in enumerate(b.strip() for b in args.backends.split(",")):
            if backend not in urls:
                parser.error(f"unknown backend {backend!r}: postgresql, redis or sqlite")
            print(f"{backend}: {args.replicas} replicas, {args.users} users x {args.turns} turns")
            row = run_backend(backend, urls[backend], args, args.port + 10 * i, Path(folder))
            print(json.dumps(row), flush=True)
            rows.append(row)
    if not args.no_write:
        write(rows, args, args.out)


if __name__ == "__main__":
    main()
