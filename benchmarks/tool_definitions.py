"""What counting a request's tool definitions costs: the GitHub MCP server's tools (the fixture
of tests/test_tool_tokens.py) as OpenAI functions, 60 and 300 of them (renamed copies).

Three measurements, each the best of several runs in one process:

* **cold**: ``tool_definition_tokens`` with the counter's caches cleared (every definition
  rendered and counted, its text counts too);
* **warm**: the same list again (each definition found by its JSON);
* **pack**: ``pack()`` of a 40-message history with the list, warm.

Usage (from the repository root)::

    python benchmarks/tool_definitions.py
    python benchmarks/tool_definitions.py --out /tmp/results   # elsewhere than benchmarks/results

Writes ``tool_definitions.md`` and ``tool_definitions.json`` in the output folder.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ctxpack
from ctxpack.tokens import get_counter, tool_definition_tokens

HERE = Path(__file__).resolve().parent
FIXTURE = HERE.parent / "tests" / "fixtures" / "tool_schemas" / "github_mcp_server.json"


def _tools(copies: int) -> list[dict[str, Any]]:
    server = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return [
        {
            "type": "function",
            "function": {
                "name": f"{tool['name']}_{i}",
                "description": tool["description"],
                "parameters": tool["inputSchema"],
            },
        }
        for i in range(copies)
        for tool in server
    ]


def _best(run: Callable[[], object], repeat: int, number: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            run()
        times.append((time.perf_counter() - start) / number)
    return min(times)


def measure(copies: int) -> dict[str, Any]:
    tools = _tools(copies)
    counter = get_counter("gpt-4o")
    history = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " * 20}
        for i in range(40)
    ]

    def cold() -> None:
        ctxpack.caches.clear_caches()
        tool_definition_tokens(tools, counter)

    count = tool_definition_tokens(tools, counter)
    warm = _best(lambda: tool_definition_tokens(tools, counter), repeat=7, number=100)
    packed = _best(
        lambda: ctxpack.pack(history, budget=count + 2_000, model="gpt-4o", tools=tools),
        repeat=5,
        number=20,
    )
    return {
        "tools": len(tools),
        "tokens": count,
        "cold_ms": round(_best(cold, repeat=5, number=1) * 1e3, 2),
        "warm_us": round(warm * 1e6),
        "pack_warm_ms": round(packed * 1e3, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    rows = [measure(copies) for copies in (20, 100)]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tool_definitions.json").write_text(json.dumps(rows, indent=2) + "\n")
    lines = [
        "# Tool definitions: counting cost",
        "",
        "| tools | tokens | cold (ms) | warm (us) | pack, warm (ms) |",
        "|---|---|---|---|---|",
        *(
            f"| {r['tools']} | {r['tokens']:,} | {r['cold_ms']} | {r['warm_us']} | "
            f"{r['pack_warm_ms']} |"
            for r in rows
        ),
        "",
    ]
    (args.out / "tool_definitions.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
