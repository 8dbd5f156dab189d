"""``ctxpack code search|retrieve ROOT "task"``: the code retrieval commands.

``search`` prints the best symbol units (path, lines, name, score); ``retrieve`` runs the
retrieval loop and prints the context to send, or with ``--report`` every cycle, or with
``--json`` the files, tokens and cycles.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
from typing import Any

from .._internal.cliargs import positive_int
from .._internal.paths import shown_path
from ..errors import ConfigError
from ._index import CodeIndex
from ._loop import iterative_retrieve

__all__: list[str] = []


def add_code_parser(sub: Any) -> None:
    """Add the ``code`` command and its ``search`` and ``retrieve`` subcommands."""
    code = sub.add_parser("code", help="retrieve what a task needs from a codebase")
    actions = code.add_subparsers(dest="code_command", required=True)
    search = actions.add_parser("search", help="the symbol units that best match a query")
    retrieve = actions.add_parser("retrieve", help="run the retrieval loop for a task")
    for p in (search, retrieve):
        p.add_argument("root", help="the repository's root folder")
        p.add_argument("task", help="what to look for: a task, an issue, identifiers")
        p.add_argument(
            "--db", default=None, help="the index's SQLite file (default: in the user cache)"
        )
    search.add_argument("-k", type=positive_int, default=10, help="how many units (default 10)")
    retrieve.add_argument("--budget", type=positive_int, default=8000, help="context tokens (8000)")
    retrieve.add_argument("--max-cycles", type=positive_int, default=3, help="at most N cycles (3)")
    shown = retrieve.add_mutually_exclusive_group()
    shown.add_argument("--report", action="store_true", help="print every cycle")
    shown.add_argument("--json", action="store_true", help="print files, tokens and cycles")


def run_code_command(args: argparse.Namespace) -> str:
    """Run a parsed ``code`` command and return what to print.

    Raises:
        CtxpackError: bad root, bad numbers (the caller prints it and exits with 2).
    """
    if not args.task.strip():
        raise ConfigError("the task is empty: say what to look for (a task, an issue, names)")
    if args.db is not None and os.path.isdir(args.db):
        raise ConfigError(f"--db {args.db} is a directory; name the index's SQLite file")
    try:
        return _run(args)
    except sqlite3.Error as exc:
        raise ConfigError(f"the index {args.db or '(user cache)'} cannot be used: {exc}") from exc


def _run(args: argparse.Namespace) -> str:
    index = CodeIndex(args.root, db=args.db)
    if args.code_command == "search":
        hits = index.search(args.task, k=args.k)
        rows = [
            f"{shown_path(h.path)}:{h.start_line}-{h.end_line}  {h.kind} {h.name}  {h.score:.3f}"
            for h in hits
        ]
        return "\n".join(rows) if rows else "no match"
    result = iterative_retrieve(args.task, index, budget=args.budget, max_cycles=args.max_cycles)
    if result.files and not result.tokens:
        # An empty context would be read downstream as "nothing relevant", which is not so.
        raise ConfigError(
            f"--budget {args.budget} holds nothing of the {len(result.files)} file(s) found "
            f"({', '.join(map(shown_path, result.files[:3]))}); raise --budget"
        )
    if args.report:
        return result.report()
    if args.json:
        payload = {
            "files": list(result.files),
            "relevance": result.relevance,
            "tokens": result.tokens,
            "repository_tokens": result.repository_tokens,
            "artifacts": result.artifacts,
            "cycles": [c.model_dump(mode="json") for c in result.cycles],
        }
        return json.dumps(payload, indent=2)
    return result.context
