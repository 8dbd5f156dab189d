"""False alarms of secret redaction and injection flags on real tool outputs, and their cost.

Every tool output of every session (OpenAI-format JSON: ``{"id", "messages": [...]}``) goes
through what a :class:`ctxpack.Session` does at arrival (:class:`ctxpack.guard.ArrivalGuard`):
secret redaction and injection flags. Real agent sessions hold no live credentials, so an
altered output is a false alarm (the table lists each, with its kind, for a reader to judge);
a flagged output is a false flag unless the reader finds an injection in it.

Also measured:

- what must survive does: git SHAs, UUIDs, hex digests (md5, sha1, sha256) and base64 runs
  found in the outputs, each checked to be still present after redaction;
- ms per tool output (the guard alone, warm rule set, each session's values found hunted in
  its later outputs as a Session does; median and 99th percentile);
- recall on a generated corpus (``tests/secret_corpus.py``: random secrets in each provider's
  published format, planted in realistic outputs): the share of planted values removed.

Sessions are split by sorted id: even positions are the tuning half, odd positions the report
half (``--data``); ``--held-out`` names a set not looked at while the rules were chosen.

Usage (from the repository root)::

    python benchmarks/redaction.py --data ../shared/data/agent-sessions \\
        --held-out ../shared/data/agent-sessions-long

``--dense-only`` times secret-dense generated outputs alone (seconds per megabyte).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import secrets
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ctxpack import Message
from ctxpack._internal.secret_values import Fingerprints
from ctxpack.caches import clear_caches
from ctxpack.guard import ArrivalGuard
from ctxpack.injection import find_injections
from ctxpack.redaction import find_secrets, redact
from ctxpack.store import SQLiteArtifactStore
from ctxpack.tokens import get_counter

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "results"

# What must survive: identifiers that look random but are not secrets.
SURVIVORS = {
    "git sha": re.compile(r"\b[0-9a-f]{40}\b"),
    "short git sha": re.compile(
        r"(?<=\bcommit )[0-9a-f]{7,12}\b|(?<=HEAD is now at )[0-9a-f]{7,12}"
    ),
    "uuid": re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I),
    "md5/sha256 digest": re.compile(r"\b(?:[0-9a-f]{32}|[0-9a-f]{64})\b"),
    "base64-like run (paths too)": re.compile(r"(?<![\w+/])[A-Za-z0-9+/]{24,}={0,2}(?![\w+/=])"),
}


def tool_outputs(folder: Path) -> dict[str, list[str]]:
    """The text of each tool output, per session id, sessions sorted by id."""
    sessions: dict[str, list[str]] = {}
    for file in sorted(folder.glob("*.json")):
        raw = json.loads(file.read_text("utf-8"))
        texts = []
        for m in raw["messages"]:
            if m.get("role") != "tool":
                continue
            content = m.get("content")
            if isinstance(content, list):
                content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
            texts.append(content or "")
        sessions[str(raw.get("id", file.stem))] = texts
    return dict(sorted(sessions.items()))


def measure(name: str, sessions: dict[str, list[str]]) -> dict[str, Any]:
    guard = ArrivalGuard()
    counter = get_counter(None, "approx")
    store = SQLiteArtifactStore(":memory:")
    altered: list[dict[str, Any]] = []
    flagged: list[dict[str, Any]] = []
    times: list[float] = []
    per_kchar: list[float] = []  # ms per 1,000 characters, outputs over 10,000 characters
    survivors: Counter[str] = Counter()
    lost: Counter[str] = Counter()
    outputs = 0
    for sid, texts in sessions.items():
        # A session's memory of the values it found, hunted in its later outputs (as Session).
        hunt = Fingerprints().bound(secrets.token_bytes(32))
        for i, text in enumerate(texts):
            outputs += 1
            msg = Message(role="tool", id=f"{sid}:{i}", tool_call_id="c", content=text)
            # Content-keyed caches would time a repeated output at nothing: clear them.
            clear_caches()
            start = time.perf_counter()
            arrival = guard(msg, counter, store, hunt)
            times.append((time.perf_counter() - start) * 1000)
            if len(text) > 10_000:
                per_kchar.append(times[-1] / (len(text) / 1000))
            out = arrival.message.text
            for d in arrival.decisions:
                row = {"session": sid, "output": i, "reason": d.reason}
                if d.action == "redacted":
                    found = find_secrets(text)
                    row["kinds"] = sorted({f.kind for f in found}) or ["a value found earlier"]
                    row["context"] = [_masked(text, f.start, f.end) for f in found[:3]]
                    altered.append(row)
                elif d.action == "flagged":
                    found_inj = find_injections(text)
                    row["context"] = [
                        text[max(0, f.start - 60) : f.end + 60] for f in found_inj[:3]
                    ]
                    flagged.append(row)
            for kind, pattern in SURVIVORS.items():
                for value in set(pattern.findall(text)):
                    survivors[kind] += 1
                    if value not in out:
                        lost[kind] += 1
    return {
        "set": name,
        "sessions": len(sessions),
        "tool_outputs": outputs,
        "altered": len(altered),
        "altered_pct": 100 * len(altered) / max(outputs, 1),
        "flagged": len(flagged),
        "flagged_pct": 100 * len(flagged) / max(outputs, 1),
        "ms_median": statistics.median(times) if times else 0.0,
        "ms_p99": _percentile(times, 99),
        "ms_mean": statistics.fmean(times) if times else 0.0,
        "ms_per_1k_chars_large": statistics.median(per_kchar) if per_kchar else 0.0,
        "large_outputs": len(per_kchar),
        "survivors": dict(survivors),
        "survivors_lost": dict(lost),
        "altered_outputs": altered,
        "flagged_outputs": flagged,
    }


def _masked(text: str, start: int, end: int) -> str:
    # The report shows where a finding is, never its value.
    return (
        text[max(0, start - 50) : start] + "<" + str(end - start) + " chars>" + text[end : end + 20]
    )


def _percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def _corpus() -> Any:
    """tests/secret_corpus.py, the generated corpus of secrets."""
    spec = importlib.util.spec_from_file_location(
        "secret_corpus", ROOT / "tests" / "secret_corpus.py"
    )
    assert spec and spec.loader
    corpus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpus)
    return corpus


def corpus_recall() -> dict[str, Any]:
    corpus = _corpus()
    planted = removed = 0
    missed: list[str] = []
    for seed in range(5):
        for name, text, values in corpus.planted(seed):
            out = redact(text).text
            for value in values:
                planted += 1
                if value in out:
                    missed.append(name)
                else:
                    removed += 1
    return {
        "planted": planted,
        "removed": removed,
        "recall_pct": 100 * removed / planted,
        "missed": missed,
    }


def table(results: list[dict[str, Any]], recall: dict[str, Any]) -> str:
    rows = [
        "# Secrets and injection flags: false alarms on real tool outputs",
        "",
        "What `Session` does at arrival (`ArrivalGuard`: redaction, then injection flags) on "
        "every tool output. The sessions hold no live credentials: an altered output is a false "
        "alarm, a flagged one a false flag unless an injection is in it. Targets: at most 0.5% "
        "altered, 1% flagged.",
        "",
        "| set | sessions | tool outputs | altered | flagged | ms/output median | p99 | mean "
        "| ms per 1k chars (outputs > 10k chars) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        rows.append(
            f"| {r['set']} | {r['sessions']} | {r['tool_outputs']} | {r['altered']} "
            f"({r['altered_pct']:.2f}%) | {r['flagged']} ({r['flagged_pct']:.2f}%) | "
            f"{r['ms_median']:.2f} | {r['ms_p99']:.2f} | {r['ms_mean']:.2f} | "
            f"{r['ms_per_1k_chars_large']:.2f} ({r['large_outputs']} outputs) |"
        )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows += [
        "",
        f"Times on a shared machine (load average {load:.1f} at the end of the run): compare "
        "them with each other, not with other pages' figures.",
    ]
    rows += ["", "What must survive (values found in the outputs / lost to redaction):", ""]
    rows.append("| set | " + " | ".join(SURVIVORS) + " |")
    rows.append("|---|" + "---|" * len(SURVIVORS))
    for r in results:
        cells = [f"{r['survivors'].get(k, 0)} / {r['survivors_lost'].get(k, 0)}" for k in SURVIVORS]
        rows.append(f"| {r['set']} | " + " | ".join(cells) + " |")
    rows += [
        "",
        f"Generated corpus (tests/secret_corpus.py, seeds 0-4): {recall['removed']} of "
        f"{recall['planted']} planted values removed ({recall['recall_pct']:.1f}%).",
    ]
    for r in results:
        for row in r["altered_outputs"] + r["flagged_outputs"]:
            rows.append(f"- {r['set']} {row['session']} output {row['output']}: {row['reason']}")
    return "\n".join(rows) + "\n"


def session_steps(folder: Path) -> dict[str, float]:
    """Median ms per appended message of ``Session(model="gpt-4")`` over every session, with
    the guard (the defaults) and without it, the two runs interleaved session by session."""
    from ctxpack import Session

    times: dict[str, list[float]] = {"with guard": [], "without guard": []}
    options = {
        "with guard": {},
        "without guard": {"redact_secrets": False, "flag_injections": False},
    }
    for file in sorted(folder.glob("*.json")):
        messages = json.loads(file.read_text("utf-8"))["messages"]
        for name, extra in options.items():
            clear_caches()
            session = Session(model="gpt-4", **extra)  # type: ignore[arg-type]
            for message in messages:
                start = time.perf_counter()
                session.append(message)
                times[name].append((time.perf_counter() - start) * 1000)
    return {name: statistics.median(values) for name, values in times.items()} | {
        f"{name} mean": statistics.fmean(values) for name, values in times.items()
    }


def shapes(size: int = 800_000) -> list[dict[str, Any]]:
    """Seconds to scan large outputs of shapes an agent meets (generated, seeded): the cost of
    a rule can hide in one shape (a run of name characters, say) that real samples lack."""
    import base64
    import random

    draw = random.Random(0)
    lock: dict[str, Any] = {"lockfileVersion": 3, "packages": {}}
    for i in range(size // 270):
        lock["packages"][f"node_modules/pkg-{i}"] = {
            "version": f"1.{i % 20}.{i % 7}",
            "resolved": f"https://registry.npmjs.org/pkg-{i}/-/pkg-{i}-1.0.0.tgz",
            "integrity": "sha512-" + base64.b64encode(draw.randbytes(64)).decode(),
        }
    words = ["function", "return", "var", "this", "token", "key", "api", "auth", "value", "a1"]
    texts = {
        "npm lockfile (sha512 hashes)": json.dumps(lock, indent=2),
        "base64 blob": base64.b64encode(draw.randbytes(size * 3 // 4)).decode(),
        "minified JavaScript (one line)": "".join(
            draw.choice(words) + draw.choice(".,;(){}=+ _-") for _ in range(size // 6)
        ),
        "log lines": "".join(
            f"2026-12-04T19:{i % 60:02d}:00Z INFO worker-{i % 8} handled request {i:08x} "
            f"in {i % 97} ms\n"
            for i in range(size // 70)
        ),
    }
    # A session that found three values (a password, a token, one with punctuation) looks for
    # them in every later output.
    hunt = Fingerprints().bound(secrets.token_bytes(32))
    for value in ("Vq8nT2zLp4Rw", "ghp_R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO", "s3cr3t-pw.42"):
        hunt.learn(value, "secret-assignment")
    rows = []
    for name, text in texts.items():
        row: dict[str, Any] = {"shape": name, "chars": len(text)}
        scans = (("secrets", find_secrets), ("injections", find_injections), ("hunt", hunt.find))
        for label, scan in scans:
            clear_caches()
            start = time.perf_counter()
            scan(text)
            row[f"{label} s"] = time.perf_counter() - start
        rows.append(row)
    return rows


def dense_shapes(size: int = 1_000_000) -> list[dict[str, Any]]:
    """Seconds per megabyte (UTF-8) to redact secret-dense outputs (``dense()`` of
    tests/secret_corpus.py, seeded: a secret on most lines), one cold scan each."""
    rows = []
    for name, text in _corpus().dense(seed=0, size=size).items():
        clear_caches()
        start, cpu = time.perf_counter(), time.process_time()
        found = redact(text).findings
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        mb = len(text.encode("utf-8")) / 1e6
        row = {"shape": name, "mb": mb, "secrets": len(found), "s per MB": seconds / mb}
        rows.append(row | {"cpu s per MB": cpu / mb})
    return rows


def dense_table(rows: list[dict[str, Any]]) -> str:
    text = (
        "\nSecret-dense generated outputs (`dense()` of tests/secret_corpus.py, one cold scan "
        "each, `redact()`; CPU time counts less of what else the machine runs):\n\n"
        "| output | MB | secrets | s per MB | CPU s per MB |\n|---|---|---|---|---|\n"
    )
    for row in rows:
        text += (
            f"| {row['shape']} | {row['mb']:.2f} | {row['secrets']:,} | {row['s per MB']:.2f} "
            f"| {row['cpu s per MB']:.2f} |\n"
        )
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=None, help="folder of session JSON")
    parser.add_argument("--held-out", type=Path, default=None, help="a second folder, held out")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--dense-only",
        action="store_true",
        help="only the secret-dense generated outputs (no sessions read), printed",
    )
    args = parser.parse_args()
    # Warm the rule set once: the first scan compiles the rules it needs.
    find_secrets("warm up: key=value token ghp_ AKIA sk- xoxb- -----BEGIN")
    if args.dense_only:
        print(dense_table(dense_shapes()))
        return
    if args.data is None:
        parser.error("--data is required (or --dense-only)")
    sessions = tool_outputs(args.data)
    ids = list(sessions)
    sets = [
        ("tuning half", {i: sessions[i] for i in ids[0::2]}),
        ("report half", {i: sessions[i] for i in ids[1::2]}),
    ]
    if args.held_out is not None:
        sets.append(("held out", tool_outputs(args.held_out)))
    results = [measure(name, data) for name, data in sets]
    recall = corpus_recall()
    steps = session_steps(args.data)
    shaped = shapes()
    dense = dense_shapes()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "redaction.json").write_text(
        json.dumps(
            {
                "sets": results,
                "corpus": recall,
                "session_steps": steps,
                "shapes": shaped,
                "dense": dense,
            },
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    text = table(results, recall)
    text += (
        f"\n`Session.append()` per message on {args.data.name} (every message, median / mean): "
        f"{steps['with guard']:.2f} / {steps['with guard mean']:.2f} ms with the guard, "
        f"{steps['without guard']:.2f} / {steps['without guard mean']:.2f} ms without "
        "(`redact_secrets=False, flag_injections=False`).\n"
    )
    text += (
        "\nLarge generated outputs (`shapes()`: seeded, one scan each, caches cleared):\n\n"
        "| shape | characters | secrets, s | injection flags, s | values found earlier, s |\n"
        "|---|---|---|---|---|\n"
    )
    for row in shaped:
        text += (
            f"| {row['shape']} | {row['chars']:,} | {row['secrets s']:.2f} "
            f"| {row['injections s']:.2f} | {row['hunt s']:.3f} |\n"
        )
    text += (
        "\nValues found earlier: a session that found three values (a password, a token, one "
        "with a dash and a dot) looks for them in the output by their fingerprints.\n"
    )
    text += dense_table(dense)
    (args.out / "redaction.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
