"""The same repository and task give the same result: parse, ranking and loop are deterministic."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxpack.code import CodeIndex, iterative_retrieve, parse_source, tree_sitter_available

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "coderepo"

# Several calls on each line, nested and chained: tree-sitter hands their captures back in an
# order that changes from one parse to the next.
_SOURCE = "\n".join(
    [
        "def handler(request):",
        *(
            f"    out{i} = first{i}(second{i}(third{i}()), obj.fourth{i}().fifth{i}(sixth{i}()))"
            for i in range(20)
        ),
        "    return finish(out0)",
        "",
    ]
)


@pytest.mark.skipif(not tree_sitter_available("python"), reason="tree-sitter is not installed")
def test_references_are_in_source_order_on_every_parse() -> None:
    names = ("first", "second", "third", "fourth", "fifth", "sixth")
    expected = (*(f"{name}{i}" for i in range(20) for name in names), "finish")
    for _ in range(30):
        parsed = parse_source("handler.py", "python", _SOURCE)
        (handler,) = [s for s in parsed.symbols if s.name == "handler"]
        assert handler.references == expected


_RUN = """
import json, sys
from ctxpack.code import CodeIndex, iterative_retrieve
index = CodeIndex(sys.argv[1], db=":memory:")
result = iterative_retrieve(sys.argv[2], index, budget=400)
print(json.dumps({
    "files": result.files,
    "relevance": result.relevance,
    "context": result.context,
    "cycles": [c.model_dump(mode="json") for c in result.cycles],
    "ranking": [h.model_dump(mode="json") for h in index.rank_files(sys.argv[2], k=20)],
}, sort_keys=True))
"""


def _retrieve(seed: str, task: str) -> object:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _RUN, str(FIXTURE), task],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(done.stdout)


def test_loop_and_ranking_do_not_depend_on_the_hash_seed() -> None:
    task = "the rate limit throttle drops requests; the session token bucket refill is wrong"
    first = _retrieve("1", task)
    assert first == _retrieve("2", task)
    assert first == _retrieve("3", task)


def test_loop_gives_the_same_cycles_on_every_fresh_index(tmp_path: Path) -> None:
    # The handler uses more names defined elsewhere than a file's gaps list (3), all on one
    # line: which gaps the loop targets depends on the order of the handler's references.
    helpers = ["refill", "drain", "measure", "settle", "record", "report"]
    calls = "refill(drain(measure(settle(record(report(request))))))"
    (tmp_path / "throttle.py").write_text(
        f'def throttle_request(request):\n    """Rate limit a request."""\n    return {calls}\n'
    )
    for name in helpers:
        (tmp_path / f"{name}.py").write_text(f"def {name}(value):\n    return value\n")
    task = "throttle_request does not rate limit: the request is never throttled"

    def cycles() -> list[object]:
        index = CodeIndex(tmp_path, db=":memory:")
        result = iterative_retrieve(task, index, candidates=1, budget=400)
        return [c.model_dump(mode="json") for c in result.cycles]

    first = cycles()
    for _ in range(10):
        assert cycles() == first
