"""Parsing a tree's files in worker processes, for the first build of a large index.

Parsing (tree-sitter, then the units' terms and runs of words) is CPU work in Python that one
interpreter runs on one core. Worker processes each parse a share of the files: they are
started with ``spawn``, the one start method safe on every platform and in a process that runs
threads (``fork`` copies locks another thread holds), and are handed a path and its bytes, and
give back plain picklable data. Token counts stay in the calling process, which counts them
while the workers parse (a counter may be any callable, which need not pickle).

A pool only pays when there are many files: starting a worker imports ctxpack, tree-sitter and
pydantic anew. When a pool cannot start or breaks (a platform without process semaphores, a
daemonic process, a worker killed), the files it did not parse are parsed in this process.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from ._files import language_of_path
from ._symbols import ParsedFile, parse_source
from .literals import file_grams
from .terms import CountedTerms, counted_terms

__all__: list[str] = []

# Below this many files to parse, a refresh parses them itself: starting the workers would
# cost more than they save.
MIN_PARALLEL_FILES = 64

# The most workers a default build starts: each holds its own interpreter and grammars.
_MOST_DEFAULT_WORKERS = 8

# Files handed to a worker at a time: fewer round trips than one by one, and still shares of
# a tree small enough that no worker is left with the last long ones alone.
_CHUNK = 8

# How a pool fails to start or dies: no process semaphores (some sandboxes, Android), no
# processes, a worker killed.
_POOL_FAILURES = (BrokenProcessPool, OSError, ImportError, NotImplementedError, EOFError)

# A parsed file: its parse, counted terms and runs of words, and the parse and terms as stored.
Parsed = tuple[ParsedFile, CountedTerms, str, str, str]


def default_workers() -> int:
    """The worker processes of a build when none are given: the CPUs this process may use
    (its affinity mask where the platform has one), at most 8; 1 parses in this process.

    1 as well when a spawned worker would run the caller's main script again (``spawn``
    imports it, as ``__mp_main__``): whether a script guards its work with
    ``if __name__ == "__main__":`` cannot be known, and one that does not would run again in
    every worker. An interactive session, a notebook, ``python -c`` and ``python -m
    package`` run nothing again.
    """
    if _main_run_again():
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, _MOST_DEFAULT_WORKERS))


def _main_run_again() -> bool:
    """Whether ``spawn`` runs the ``__main__`` module again in a worker (its own rule)."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name is not None:
        return name != "__main__" and not name.endswith(".__main__")
    return getattr(main, "__file__", None) is not None


def parse_file(rel: str, raw: bytes) -> Parsed:
    """What a file's content gives: its parse, counted terms, runs of words, and the first two
    as stored (run in a worker, or in this process)."""
    pf = parse_source(rel, language_of_path(rel) or "text", decoded(raw))
    terms, grams = counted_terms(pf), file_grams(pf)
    stored = json.dumps(terms, ensure_ascii=False, separators=(",", ":"))
    return pf, terms, grams, pf.model_dump_json(), stored


def _parse_chunk(chunk: Sequence[tuple[str, bytes]]) -> list[Parsed]:
    return [parse_file(rel, raw) for rel, raw in chunk]


def decoded(raw: bytes) -> str:
    """A file's text as Python and ``read()`` take it: universal newlines (a lone ``"\\r"``
    ends a line too), undecodable bytes replaced."""
    return raw.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def parse_files(
    files: Sequence[tuple[str, bytes]],
    workers: int | None,
    each: Callable[[int, Parsed], None],
) -> None:
    """Parse ``files`` (path, content), calling ``each(position, parsed)`` for each one in
    this process, in order."""
    count = default_workers() if workers is None else workers
    done = [False] * len(files)
    if count > 1 and len(files) > MIN_PARALLEL_FILES and _may_start_processes():
        results = _in_workers(files, min(count, len(files) // _CHUNK))
        try:
            while True:
                try:
                    position, parsed = next(results)
                except StopIteration:
                    break
                except _POOL_FAILURES:
                    break  # what the workers did not parse is parsed below
                done[position] = True
                each(position, parsed)  # its errors are the caller's, not the pool's
        finally:
            results.close()
    for position, (rel, raw) in enumerate(files):
        if not done[position]:
            each(position, parse_file(rel, raw))


def _may_start_processes() -> bool:
    """Whether this process may have children: a daemonic one (a ``multiprocessing.Pool``
    worker) may not."""
    return not multiprocessing.current_process().daemon


def _in_workers(
    files: Sequence[tuple[str, bytes]], count: int
) -> Generator[tuple[int, Parsed], None, None]:
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=count, mp_context=context)
    try:
        chunks: list[tuple[int, Future[list[Parsed]]]] = [
            (start, pool.submit(_parse_chunk, files[start : start + _CHUNK]))
            for start in range(0, len(files), _CHUNK)
        ]
        for start, future in chunks:
            for offset, parsed in enumerate(future.result()):
                yield start + offset, parsed
    finally:
        # On an error (or a caller that stops early) the chunks not begun are dropped.
        pool.shutdown(wait=True, cancel_futures=True)
