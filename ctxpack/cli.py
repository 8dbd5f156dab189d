"""The ``ctxpack`` command line: ``ctxpack pack FILE --budget N``, ``ctxpack demo`` and
``ctxpack code search|retrieve ROOT "task"``."""

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
