"""The ``ctxpack`` command line: ``ctxpack pack FILE --budget N``, ``ctxpack context FILE``,
``ctxpack code search|retrieve ROOT "task"`` and ``ctxpack demo``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from importlib import resources
from typing import Any

from .adapters import from_anthropic, from_openai
from .code.cli import add_code_parser, run_code_command
from .errors import CtxpackError
from .messages import Message
from .packing import pack
from .result import PackResult
from .usage import ContextUsage, context_usage

__all__ = ["main"]

EXAMPLE = "support_chat.json"


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(message)


def _read_json(path: str) -> Any:
    try:
        if path == "-":
            raw = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as fh:
                raw = fh.read()
    except OSError as exc:
        raise _UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise _UsageError(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}") from exc


def _read_messages(path: str, provider: str) -> list[Message]:
    data = _read_json(path)
    if provider == "anthropic":
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            raise _UsageError(
                f"{path} must hold an Anthropic payload: an object with a 'messages' list "
                "(and optionally 'system')"
            )
        return from_anthropic(data["messages"], system=data.get("system"))
    if isinstance(data, dict) and "messages" in data:
        data = data["messages"]
    if not isinstance(data, list):
        raise _UsageError(
            f"{path} must hold a JSON list of messages (or an object with a 'messages' list)"
        )
    return from_openai(data)


def explain_table(result: PackResult) -> str:
    """The decisions as a table, one row per decision."""
    rows = [f"{'stage':<10} {'action':<10} {'message':<16} {'tokens':>11}  reason"]
    for d in result.decisions:
        tokens = ""
        if d.tokens_before is not None:
            tokens = f"{d.tokens_before}->{d.tokens_after}"
        rows.append(
            f"{d.stage:<10} {d.action:<10} {d.message_id[:16]:<16} {tokens:>11}  {d.reason}"
        )
    rows.append(result.summary())
    return "\n".join(rows)


def _demo(budget: int) -> str:
    text = (
        resources.files("ctxpack")
        .joinpath("examples")
        .joinpath(EXAMPLE)
        .read_text(encoding="utf-8")
    )
    messages = json.loads(text)
    result = pack(messages, budget=budget, model="gpt-4")
    lines = [
        f"ctxpack demo: packing the bundled conversation ({EXAMPLE}) into {budget} tokens",
        "",
        f"before: {len(messages)} messages, {result.input_tokens} tokens",
        f"after:  {len(result.messages)} messages, {result.tokens} tokens",
        "",
        result.report(),
    ]
    return "\n".join(lines)


# --- ctxpack context ------------------------------------------------------------------------


def _add_context_parser(sub: Any) -> None:
    c = sub.add_parser("context", help="show what fills the context window of a request (/context)")
    c.add_argument(
        "file",
        help="JSON file: a list of messages, or an object with 'messages' (and optionally "
        "'tools'); - for stdin",
    )
    c.add_argument("--model", default=None, help="model name: tokenizer and known window")
    c.add_argument("--window", type=int, default=None, help="context window in tokens")
    c.add_argument(
        "--compaction-window", type=int, default=None, help="where compaction starts, in tokens"
    )
    c.add_argument(
        "--memory",
        action="append",
        default=[],
        metavar="PATH",
        help="a memory file the request loaded (CLAUDE.md...); repeat for several",
    )
    c.add_argument(
        "--provider",
        choices=("openai", "anthropic"),
        default="openai",
        help="input format: OpenAI messages (default) or an Anthropic payload",
    )
    c.add_argument("--json", action="store_true", help="print the usage as JSON")


def _context(args: argparse.Namespace) -> ContextUsage:
    data = _read_json(args.file)
    tools = data.get("tools") if isinstance(data, dict) else None
    if tools is not None and not isinstance(tools, list):
        raise _UsageError(f"{args.file}: 'tools' must be a list of tool definitions")
    messages = _messages_from(data, args.file, args.provider)
    memory = {}
    for path in args.memory:
        try:
            with open(path, encoding="utf-8") as fh:
                memory[path] = fh.read()
        except OSError as exc:
            raise _UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return context_usage(
        messages,
        model=args.model,
        tools=tools,
        memory_files=memory,
        window=args.window,
        compaction_window=args.compaction_window,
    )


def _messages_from(data: Any, path: str, provider: str) -> list[Message]:
    if provider == "anthropic":
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            raise _UsageError(f"{path} must hold an Anthropic payload with a 'messages' list")
        return from_anthropic(data["messages"], system=data.get("system"))
    if isinstance(data, dict) and "messages" in data:
        data = data["messages"]
    if not isinstance(data, list):
        raise _UsageError(f"{path} must hold a JSON list of messages")
    return from_openai(data)


def _print_context(usage: ContextUsage) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        # The plain table says the same; rich only colours it (pip install 'ctxpack[cli]').
        print(usage.report())
        return
    table = Table(title=f"Context usage: {usage.total:,} tokens ({usage.counter})")
    table.add_column("bucket")
    table.add_column("tokens", justify="right")
    table.add_column("share", justify="right")
    table.add_column("kind")
    table.add_column("largest items")
    for bucket in usage.buckets:
        share = f"{bucket.tokens / usage.total:.1%}" if usage.total else "-"
        items = ", ".join(f"{i.name} ({i.tokens:,})" for i in bucket.items[:3])
        kind = "fixed" if bucket.fixed else "growing"
        table.add_row(bucket.name, f"{bucket.tokens:,}", share, kind, items)
    if usage.window is not None and usage.free is not None:
        table.add_row("free", f"{max(usage.free, 0):,}", "", "", f"of a {usage.window:,} window")
    console = Console()
    console.print(table)
    for warning in usage.warnings:
        console.print(f"[bold red]warning:[/] {warning}")
    for suggestion in usage.suggestions:
        console.print(f"[yellow]suggestion:[/] {suggestion}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (2 for bad input)."""
    parser = _Parser(prog="ctxpack", description="Pack a conversation under a token budget.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="pack a JSON list of messages and print the packed JSON")
    p.add_argument("file", help="JSON file with a list of messages, or - for stdin")
    p.add_argument("--budget", type=int, required=True, help="token budget")
    p.add_argument("--model", default=None, help="model name (picks the tokenizer), e.g. gpt-4")
    p.add_argument("--query", default=None, help="what the next answer is about")
    p.add_argument("--reserve", type=int, default=0, help="tokens to keep free for the reply")
    p.add_argument(
        "--provider",
        choices=("openai", "anthropic"),
        default="openai",
        help="input and output format: an OpenAI message list (default) or an Anthropic "
        "payload {'system': ..., 'messages': [...]}",
    )
    p.add_argument("--explain", action="store_true", help="print the decisions as a table")
    _add_context_parser(sub)
    d = sub.add_parser("demo", help="pack the bundled example conversation and explain it")
    d.add_argument("--budget", type=int, default=600, help="token budget (default 600)")
    add_code_parser(sub)
    try:
        args = parser.parse_args(argv)
        if args.command == "code":
            print(run_code_command(args))
            return 0
        if args.command == "demo":
            print(_demo(args.budget))
            return 0
        if args.command == "context":
            usage = _context(args)
            if args.json:
                print(usage.to_json())
            else:
                _print_context(usage)
            return 0
        messages = _read_messages(args.file, args.provider)
        result = pack(
            messages,
            budget=args.budget,
            model=args.model,
            query=args.query,
            reserve=args.reserve,
            provider=args.provider,
        )
    except (_UsageError, CtxpackError) as exc:
        print(f"ctxpack: error: {exc}", file=sys.stderr)
        return 2
    if args.explain:
        print(explain_table(result))
    else:
        payload = result.to_anthropic() if args.provider == "anthropic" else result.to_openai()
        print(json.dumps(payload, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
