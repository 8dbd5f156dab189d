"""How the extractive digest and its fit grow with a long agent history.

A synthetic history of N bash calls and their results (three in four fail with a few varied
error lines, a fifth of the calls edit a file) is digested with ``extractive_digest`` and the
digest fitted to 4,000 tokens with ``fit_digest`` (approximate counter), for N from 500 to
8,000. Each is timed warm (best of three after one call), as at a managed session's second
compaction, which reads the whole summarised history again. Time that grows faster than N
shows a section that rereads what it has collected.

Usage (from the repository root)::

    python benchmarks/digest_scaling.py
    python benchmarks/digest_scaling.py 1000 8000

The table is printed and written to ``benchmarks/results/digest_scaling.md``.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from ctxpack import FunctionCall, Message, ToolCall, get_counter
from ctxpack.editing import extractive_digest
from ctxpack.managed import fit_digest

ERRORS = (
    "Traceback (most recent call last):",
    '  File "/repo/src/mod{m}.py", line {line}, in func_{f}',
    "KeyError: 'key_{k}'",
    "AssertionError: expected {a} got {b}",
    "FAILED tests/test_mod{m}.py::test_case_{f} - ValueError: bad value {k}",
    "bash: tool{k}: command not found",
    "error: could not compile crate_{m} ({line} errors)",
    "ls: cannot access 'dir{k}': No such file or directory",
)


def history(n: int, seed: int = 0) -> list[Message]:
    """A task, then ``n`` bash calls with their results."""
    draw = random.Random(seed)
    messages = [Message(role="user", content="Fix the failing tests. Never touch setup.cfg.")]
    for i in range(n):
        kind, m = draw.random(), draw.randrange(n // 4 + 5)
        if kind < 0.15:
            command = f"sed -i 's/old_{i}/new_{i}/' src/mod{m}.py"
        elif kind < 0.2:
            command = f"cat > src/new{i}.py << 'EOF'\nprint({i})\nEOF"
        elif kind < 0.6:
            command = f"python -m pytest tests/test_mod{m}.py -x -q"
        else:
            command = f"python scripts/run{m}.py --case {draw.randrange(1000)}"
        text = f"I'll run step {i} because the test for mod{m} failed. Plan:\n1. check mod{m}"
        arguments = json.dumps({"command": command})
        call = ToolCall(id=f"c{i}", function=FunctionCall(name="bash", arguments=arguments))
        messages.append(Message(role="assistant", content=text, tool_calls=[call]))
        if draw.random() < 0.75:
            lines = [
                draw.choice(ERRORS).format(
                    m=m,
                    line=draw.randrange(900),
                    f=draw.randrange(50),
                    k=draw.randrange(10**6),
                    a=i,
                    b=draw.randrange(99),
                )
                for _ in range(draw.randrange(1, 6))
            ]
            output = "<returncode>1</returncode>\n<output>\n" + "\n".join(lines) + "\n</output>"
        else:
            output = f"<returncode>0</returncode>\n<output>\nok {i} passed\n</output>"
        messages.append(Message(role="tool", tool_call_id=f"c{i}", content=output))
    return messages


def best_of(repeats: int, run: Callable[[], object]) -> float:
    run()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    counter = get_counter(counter="approx")
    sizes = [int(arg) for arg in sys.argv[1:]] or [500, 1000, 2000, 4000, 8000]
    rows = [
        "| N | extractive_digest | fit_digest (4,000 tokens) | digest characters |",
        "|---|---|---|---|",
    ]
    print("\n".join(rows), flush=True)
    for n in sizes:
        messages = history(n)
        digest = extractive_digest(messages)
        took = best_of(3, partial(extractive_digest, messages))
        fit = best_of(3, partial(fit_digest, digest, 4000, counter))
        rows.append(f"| {n:,} | {took * 1000:,.0f} ms | {fit * 1000:,.1f} ms | {len(digest):,} |")
        print(rows[-1], flush=True)
    out = Path(__file__).parent / "results" / "digest_scaling.md"
    out.write_text(
        "# The extractive digest over a long failing history\n\n"
        "Warm, best of 3 (`python benchmarks/digest_scaling.py`); see the script's docstring.\n\n"
        + "\n".join(rows)
        + "\n"
    )


if __name__ == "__main__":
    main()
