"""What checking the base64 of media parts costs: building messages, packing them, converting
them for Anthropic.

Three measurements, each the median of several runs in one process:

* **build**: ``Message(...)`` for 2,000 user messages, each a text part and a small PNG sent as
  a data URL (the check of each part's fields runs here);
* **pack**: ``pack()`` of those 2,000 messages given as dicts and as ``Message`` objects, cold
  (new objects, caches cleared) and warm (the same objects again, a new question each time),
  at a budget that keeps a fifth of them;
* **to_anthropic**: one user message holding a 20 MiB base64 image (a data URL in an
  ``image_url`` part, and Anthropic's own ``image`` block), its first conversion and the next
  ones (a render converts the history again every turn).

Usage (from the repository root)::

    python benchmarks/part_checks.py
    python benchmarks/part_checks.py --out /tmp/results   # elsewhere than benchmarks/results

Writes ``part_checks.md`` and ``part_checks.json`` in the output folder.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ctxpack
from ctxpack import Message
from ctxpack.adapters import from_anthropic, to_anthropic
from ctxpack.caches import clear_caches

OUT = Path(__file__).resolve().parent / "results"
MESSAGES = 2_000
BIG_MIB = 20
# A 1x1 PNG.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()


def _median_ms(
    run: Callable[[], Any], repeats: int, setup: Callable[[], Any] | None = None
) -> float:
    times = []
    for _ in range(repeats):
        if setup is not None:
            setup()
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _dicts(tag: str) -> list[dict[str, Any]]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": [
                {"type": "text", "text": f"message {i} {tag} with a picture"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
            ]
            if i % 2 == 0
            else f"reply {i} {tag}",
        }
        for i in range(MESSAGES)
    ]


def _messages(tag: str) -> list[Message]:
    return [Message(**d) for d in _dicts(tag)]


def measure() -> dict[str, float]:
    figures: dict[str, float] = {}
    figures["build 2,000 messages"] = _median_ms(lambda: _messages("b"), 7)

    def pack(history: list[Any], k: int) -> None:
        ctxpack.pack(
            [*history, {"role": "user", "content": f"question {k}"}], budget=8_000, model="gpt-4o"
        )

    for kind, make in (("dicts", _dicts), ("Messages", _messages)):
        histories = iter([make(f"{kind}{n}") for n in range(7)])
        holder: list[Any] = []

        def fresh(histories: Any = histories, holder: list[Any] = holder) -> None:
            clear_caches()
            holder[:] = [next(histories)]

        figures[f"pack {kind}, cold"] = _median_ms(lambda h=holder: pack(h[0], 0), 7, fresh)
        warm = make(f"{kind}-warm")
        pack(warm, 0)
        questions = iter(range(1, 1_000))
        figures[f"pack {kind}, warm"] = _median_ms(lambda w=warm, q=questions: pack(w, next(q)), 21)

    data = base64.b64encode(os.urandom(BIG_MIB * 2**20 * 3 // 4)).decode()
    url = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    cases = (
        ("image_url dict", [{"role": "user", "content": [url]}]),
        ("image block (from_anthropic)", from_anthropic([{"role": "user", "content": [block]}])),
    )
    for label, history in cases:
        clear_caches()
        start = time.perf_counter()
        to_anthropic(history)
        figures[f"to_anthropic {BIG_MIB} MiB {label}, first"] = (time.perf_counter() - start) * 1e3
        figures[f"to_anthropic {BIG_MIB} MiB {label}, again"] = _median_ms(
            lambda h=history: to_anthropic(h), 5
        )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    figures = measure()
    lines = [
        "# What checking media parts costs",
        "",
        "`python benchmarks/part_checks.py`; medians in one process, ms (see the script's "
        "docstring).",
        "",
        "| measurement | ms |",
        "|---|---|",
        *(f"| {name} | {value:.2f} |" for name, value in figures.items()),
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "part_checks.md").write_text("\n".join(lines) + "\n")
    (args.out / "part_checks.json").write_text(json.dumps(figures, indent=2) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
