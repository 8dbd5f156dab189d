"""Small builders shared by the tests."""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import ctxpack

ROOT = Path(__file__).resolve().parents[1]

# The note that ends or replaces a shortened output, as the retrieve tool's description tells the
# model to look for it: "[ctxpack: ... artifact art_...]"; the group is the artifact id.
ORIGINAL_NOTE = re.compile(
    r"\[ctxpack: [^\n]*?; original: (?:\d+ lines, )?artifact (art_[0-9a-f]{16})(?:; [^\n]*)?\]"
)


def load_script(path: Path, name: str) -> ModuleType:
    """The Python file at ``path`` (a benchmark, a docs hook: no package) loaded as module
    ``name``. Registered before it runs: dataclasses look their module up by name."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def api_reference_generator() -> ModuleType:
    """The generator of the API reference page (a MkDocs hook, not part of the package)."""
    return load_script(ROOT / "docs" / "_ext" / "api_reference.py", "api_reference")


def ctx_of(
    messages: Sequence[ctxpack.Message | Mapping[str, Any]],
    *,
    budget: int = 10_000,
    reserve: int = 0,
    query: str | None = None,
    protected: Sequence[str] = (),
) -> ctxpack.pipeline.PackContext:
    """A PackContext over ``messages`` counted with exact cl100k_base."""
    return ctxpack.pipeline.PackContext(
        messages=tuple(ctxpack.messages.ensure_messages(messages)),
        budget=budget,
        counter=ctxpack.get_counter(model="gpt-4"),
        reserve=reserve,
        query=query,
        protected=frozenset(protected),
    )


def counter_name(model: str) -> str:
    """The name of the counter ``get_counter(model)`` resolves, without the warning that
    announces an approximation."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ctxpack.tokens.ApproximateTokenCountWarning)
        return ctxpack.get_counter(model=model).name


def ids(ctx: ctxpack.pipeline.PackContext) -> list[str]:
    return [m.id for m in ctx.messages]


def call(call_id: str, name: str = "lookup", arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def run_guarded(code: str, timeout: float = 60.0) -> str:
    """What ``code`` prints, run in a fresh interpreter that imports ctxpack from this tree.

    For a hang fixed where no other assertion tells the old code from the new: the input is
    chosen so that the old code needs many minutes and the new a second, and ``timeout`` is
    only a guard against hanging the suite, not a measure.
    """
    import subprocess

    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=timeout,
            env={"PYTHONPATH": str(ROOT), "PATH": ""},
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still running after {timeout:.0f} s") from None
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def cpu_seconds(work: Callable[[], object], repeat: int = 3) -> float:
    """The least CPU time ``work`` took on this thread over ``repeat`` runs, the collector off.

    For the tests that a cost grows about linearly: wall time counts whatever else the machine
    runs (CI shares it with the database servers; one run of 0.09 s took 0.89 s there), and a
    collection can land in either of the two runs compared. This thread's CPU time counts
    neither; the least of a few runs drops what is left (a cold cache line, a page fault).
    """
    import gc
    import time

    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.thread_time()
            work()
            best = min(best, time.thread_time() - start)
        finally:
            gc.enable()
    return best


def outputs_across_hash_seeds(code: str, seeds: Sequence[str] = ("0", "1", "2", "3")) -> set[str]:
    """The distinct outputs of ``code`` run in a fresh interpreter under each string-hashing
    seed: one output when nothing depends on a set's or a dict of strings' order."""
    import os
    import subprocess

    return {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in seeds
    }
