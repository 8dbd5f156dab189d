"""The ``ctxpack`` command line: ``ctxpack pack FILE --budget N``, ``ctxpack context FILE``,
``ctxpack code search|retrieve ROOT "task"`` and ``ctxpack demo``.

Every user error (bad arguments, an unreadable or malformed file, a budget too small) ends with
exit status 2 and one line on stderr, ``ctxpack: error: ...``; an output that cannot be written
(a full disk) with status 1 and one line; a reader that closes the pipe early
(``ctxpack pack ... | head``) or Ctrl-C ends it quietly, as Unix tools do.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from ._internal.arguments import TooDeep, check_nesting
from ._internal.cliargs import UsageError, non_negative_int, positive_int
from ._internal.named import named
from ._internal.paths import shown_path
from .adapters import from_anthropic, from_openai
from .code.cli import add_code_parser, run_code_command
from .errors import BudgetExceededError, CtxpackError, TokenizerUnavailableError
from .messages import Message
from .packing import pack
from .providers import Provider, provider_from_model, provider_from_request
from .result import PackResult
from .tokens import ApproximateTokenCountWarning, TokenCounter, encoding_for_model, get_counter
from .usage import ContextUsage, context_usage

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

__all__: list[str] = []

EXAMPLE = "support_chat.json"
# Deeper JSON is no request (tool schemas and metadata nest a few levels), and the recursive
# code that reads messages would hit Python's recursion limit long before the data ends.
MAX_DEPTH = 200
# What a process killed by SIGPIPE reports (128 + 13), as `yes | head` does.
EXIT_BROKEN_PIPE = 141
# What a shell reports for a command ended by Ctrl-C (128 + 2, SIGINT).
EXIT_INTERRUPTED = 130
# The output could not be written (a full disk): no fault of the input, so not status 2.
EXIT_OUTPUT_FAILED = 1


class _OutputError(Exception):
    """stdout refused what the command wrote."""


@contextmanager
def _writing() -> Iterator[None]:
    """Write to stdout, a failure of it (not a closed pipe) becoming an :class:`_OutputError`."""
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise _OutputError(f"cannot write the output: {exc.strerror or exc}") from exc


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        # argparse drops a failed write without a word: a full disk would print no help, exit 0.
        if message:
            (file or sys.stderr).write(message)


def _version() -> str:
    from . import __version__

    return __version__


# --- reading the input ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Request:
    """A request read from a file: its messages, tools and provider, and the object it came in
    (``None`` for a bare list), whose other fields are written back unchanged."""

    messages: list[Message]
    tools: list[dict[str, Any]] | None
    provider: Provider
    payload: dict[str, Any] | None
    entries: list[Any] | None = None  # the file's OpenAI messages, one per message

    def name(self, at: int) -> str:
        """How the command line names the message at ``at``: where it is in the file, and its
        own id."""
        if self.entries is None:  # an Anthropic payload: its blocks may make several messages
            return named(self.messages[at])
        given = self.entries[at].get("id") if isinstance(self.entries[at], dict) else None
        return f"messages[{at}]" + (f" ({given!r})" if given is not None else "")

    def names(self, message_ids: list[str], shown: int = 5) -> str:
        """The first ``shown`` of these messages by :meth:`name`, and how many more."""
        at = {m.id: i for i, m in enumerate(self.messages)}
        first = ", ".join(self.name(at[i]) for i in message_ids[:shown])
        return first + (f" and {len(message_ids) - shown} more" if len(message_ids) > shown else "")

    @property
    def model(self) -> str | None:
        """The request's ``model``, which counts when ``--model`` does not say."""
        model = self.payload.get("model") if self.payload is not None else None
        return model if isinstance(model, str) and model else None


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON value")


def _finite(literal: str) -> float:
    # 1e999 is valid JSON but reads as inf, which the output would write as Infinity.
    value = float(literal)
    if math.isinf(value):
        raise ValueError(f"{literal} is past the range of a number (about 1.8e308)")
    return value


def _read_json(path: str) -> Any:
    name = "stdin" if path == "-" else path
    try:
        if path == "-":
            if sys.stdin is None:  # the process was started with its stdin closed
                raise UsageError("there is no stdin to read (it is closed); give a file, not -")
            raw = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
        else:
            with open(path, "rb") as fh:
                raw = fh.read()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise UsageError(
                f"{name} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
                f"{exc.start}); save it as UTF-8"
            ) from exc
    try:
        # Python's parser takes NaN and Infinity, which JSON does not have.
        data = json.loads(raw, parse_constant=_not_json, parse_float=_finite)
    except json.JSONDecodeError as exc:
        # A second value after the first: most often one message per line, JSON Lines.
        hint = "; JSON Lines is not read: put the messages in one list"
        hint = hint if exc.msg == "Extra data" else ""
        raise UsageError(f"{name} is not valid JSON: {exc.msg} at line {exc.lineno}{hint}") from exc
    except ValueError as exc:
        raise UsageError(f"{name} is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise UsageError(_too_deep(name)) from exc
    try:
        check_nesting(data, limit=MAX_DEPTH)
    except TooDeep:
        raise UsageError(_too_deep(name)) from None
    _check_text(data, name)
    return data


def _too_deep(path: str) -> str:
    return f"{path} is nested more than {MAX_DEPTH} levels deep, more than any request is"


def _check_text(data: Any, path: str) -> None:
    """JSON's \\u escapes can spell lone surrogates, which are not text: no tokenizer or
    output stream takes them."""
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError(
            f"{path} holds a lone surrogate ({exc.object[exc.start]!r}), which is not Unicode text"
        ) from exc


def _tools(data: Any, path: str) -> list[dict[str, Any]] | None:
    tools = data.get("tools") if isinstance(data, dict) else None
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise UsageError(f"{path}: 'tools' must be a list of tool definitions")
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise UsageError(
                f"{path}: tools[{i}] must be an object (a tool definition), got {json.dumps(tool)}"
            )
    return tools


def _read_request(path: str, provider: Provider | None) -> _Request:
    data = _read_json(path)
    provider = provider or provider_from_request(data)
    tools = _tools(data, path)
    payload = data if isinstance(data, dict) else None
    if provider == "anthropic":
        if payload is None or not isinstance(payload.get("messages"), list):
            raise UsageError(
                f"{path} must hold an Anthropic payload: an object with a 'messages' list "
                "(and optionally 'system' and 'tools')"
            )
        messages = from_anthropic(payload["messages"], system=payload.get("system"))
        return _Request(messages, tools, provider, payload)
    entries = payload.get("messages") if payload is not None else data
    if not isinstance(entries, list):
        raise UsageError(
            f"{path} must hold a JSON list of messages (or an object with a 'messages' list)"
        )
    return _Request(from_openai(entries), tools, provider, payload, entries)


def _counter(args: argparse.Namespace, request: _Request) -> tuple[TokenCounter, str | None]:
    """The counter ``--counter``, ``--model`` or else the request's ``model`` names, and the
    model counted for; errors and warnings in the command line's words."""
    if args.counter is not None:
        import tiktoken

        known = ["approx", *tiktoken.list_encoding_names()]
        if args.counter not in known:
            raise UsageError(f"--counter {args.counter!r} is not one of {', '.join(known)}")
        return get_counter(counter=args.counter), args.model
    model = args.model if args.model is not None else request.model
    if model is not None and provider_from_model(model) is None:
        try:
            encoding_for_model(model)
        except TokenizerUnavailableError as exc:
            if args.model is not None:
                raise UsageError(
                    f"no public tokenizer is known for model {model!r}; name an encoding with "
                    "--counter cl100k_base or --counter o200k_base, or estimate with --counter "
                    "approx"
                ) from exc
            # A file's own model field may name any model: counting goes on, and says how.
            _warn(
                f"no public tokenizer is known for the file's model {model!r}; counting with "
                "cl100k_base (--model or --counter names another)"
            )
            model = None
    with warnings.catch_warnings():
        # Said below in the command line's words, without a Python source line.
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        resolved = get_counter(model)
    if not resolved.exact:
        _warn(
            f"{model!r} has no public tokenizer; counting with {resolved.name}, an "
            "approximation with a safety margin (--counter names another)"
        )
    return resolved, model


def _warn(message: str) -> None:
    print(f"ctxpack: warning: {message}", file=sys.stderr)


# --- ctxpack pack ---------------------------------------------------------------------------


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


def _add_pack_parser(sub: Any) -> None:
    p = sub.add_parser(
        "pack", help="pack a conversation under a token budget and print the packed request"
    )
    p.add_argument(
        "file",
        help="JSON file: a list of messages, or a request object with 'messages' (and 'tools', "
        "and for Anthropic 'system'); - for stdin",
    )
    p.add_argument("--budget", type=positive_int, required=True, help="token budget")
    _add_counting_arguments(p)
    p.add_argument("--query", default=None, help="what the next answer is about")
    p.add_argument(
        "--reserve", type=non_negative_int, default=0, help="tokens to keep free for the reply"
    )
    p.add_argument("--explain", action="store_true", help="print the decisions as a table")


def _add_counting_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model",
        default=None,
        help="model name (picks the tokenizer), e.g. gpt-4; by default the request's 'model'",
    )
    p.add_argument(
        "--counter",
        default=None,
        help="token counter instead of the model's: an encoding (cl100k_base, o200k_base) or "
        "approx",
    )
    p.add_argument(
        "--provider",
        choices=("openai", "anthropic"),
        default=None,
        help="input and output format: OpenAI messages or an Anthropic payload; detected by "
        "default ('system', Anthropic tools or content blocks mean Anthropic)",
    )


def _pack(args: argparse.Namespace) -> str:
    request = _read_request(args.file, args.provider)
    if args.reserve >= args.budget:
        raise UsageError(
            f"--reserve ({args.reserve}) must be smaller than --budget ({args.budget})"
        )
    if args.model is not None and args.counter is not None:
        # pack counts with one tokenizer; the other option would be ignored without a word.
        raise UsageError("--model and --counter both choose the tokenizer; give one of them")
    counter, _ = _counter(args, request)
    try:
        result = pack(
            request.messages,
            budget=args.budget,
            counter=counter,
            query=args.query,
            reserve=args.reserve,
            tools=request.tools,
            provider=request.provider,
        )
    except BudgetExceededError as exc:
        raise UsageError(_no_room(exc, request, args.reserve)) from exc
    if args.explain:
        return explain_table(result)
    packed: Any
    if request.provider == "anthropic":
        anthropic = result.to_anthropic()
        if not anthropic["messages"]:
            # Written all the same (the decisions say why), but no API takes it as it is.
            _warn(
                "the packed request holds no message (Anthropic takes a user message first, "
                "and a tool result only after its call): the API refuses it; see --explain"
            )
        packed = {**(request.payload or {}), "messages": anthropic["messages"]}
        packed.pop("system", None)
        if anthropic["system"] is not None:
            packed["system"] = anthropic["system"]
    elif request.payload is not None:
        packed = {**request.payload, "messages": result.to_openai()}
    else:
        packed = result.to_openai()
    return json.dumps(packed, ensure_ascii=False, indent=2)


def _no_room(exc: BudgetExceededError, request: _Request, reserve: int) -> str:
    """The error of a budget too small for what is always kept, in the command line's words:
    its options, and the messages by their place in the file (their ids are ctxpack's own
    unless the file gave them)."""
    kept = request.names(exc.pinned_ids)
    tools = f" and the tool definitions ({exc.tool_tokens} tokens)" if exc.tool_tokens else ""
    with_reserve = f", --reserve {reserve} included," if reserve else ""
    fixes = "raise --budget" + (", lower --reserve" if reserve else "")
    fixes += ", send fewer tools" if exc.tool_tokens else ""
    return (
        f"the messages always kept (instructions, pinned ones, the last user turn: {kept})"
        f"{tools} need {exc.required} tokens{with_reserve} but --budget is {exc.budget}; "
        f"{fixes}, or shorten them"
    )


# --- ctxpack demo ---------------------------------------------------------------------------


def _demo(budget: int) -> str:
    text = (
        resources.files("ctxpack")
        .joinpath("examples")
        .joinpath(EXAMPLE)
        .read_text(encoding="utf-8")
    )
    messages = json.loads(text)
    try:
        result = pack(messages, budget=budget, model="gpt-4")
    except BudgetExceededError as exc:
        # The demo has no --reserve and no pinning to change: only its budget.
        raise UsageError(
            f"--budget {budget} is too small for the demo: the messages it always keeps need "
            f"{exc.required} tokens; raise --budget"
        ) from exc
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
    _add_counting_arguments(c)
    c.add_argument("--window", type=positive_int, default=None, help="context window in tokens")
    c.add_argument(
        "--compaction-window",
        type=positive_int,
        default=None,
        help="where compaction starts, in tokens",
    )
    c.add_argument(
        "--memory",
        action="append",
        default=[],
        metavar="PATH",
        help="a memory file the request loaded (CLAUDE.md...); repeat for several",
    )
    c.add_argument("--json", action="store_true", help="print the usage as JSON")


def _context(args: argparse.Namespace) -> ContextUsage:
    if (
        args.window is not None
        and args.compaction_window is not None
        and args.compaction_window > args.window
    ):
        raise UsageError(
            f"--compaction-window ({args.compaction_window}) must not exceed --window "
            f"({args.window}): compaction starts inside the window"
        )
    request = _read_request(args.file, args.provider)
    memory = {}
    for path in args.memory:
        try:
            with open(path, encoding="utf-8") as fh:
                memory[path] = fh.read()
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise UsageError(f"{path} is not UTF-8 text; save it as UTF-8") from exc
    counter, model = _counter(args, request)
    return context_usage(
        request.messages,
        model=model,
        counter=counter,
        tools=request.tools,
        memory_files=memory,
        window=args.window,
        compaction_window=args.compaction_window,
    )


def _print_context(usage: ContextUsage) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text
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
        # As Text, never markup: a name is a tool's or a command's ("grep '[/]'" would be a
        # closing tag with nothing to close, "[red]" would vanish).
        items = Text(", ".join(f"{shown_path(i.name)} ({i.tokens:,})" for i in bucket.items[:3]))
        kind = "fixed" if bucket.fixed else "growing"
        table.add_row(bucket.name, f"{bucket.tokens:,}", share, kind, items)
    if usage.window is not None and usage.free is not None:
        table.add_row("free", f"{max(usage.free, 0):,}", "", "", f"of a {usage.window:,} window")

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich would exit with status 1; the command line ends as for any closed pipe.
            raise BrokenPipeError

    console = _Console()
    console.print(table)
    for warning in usage.warnings:
        console.print(Text.assemble(("warning:", "bold red"), " ", shown_path(warning)))
    for suggestion in usage.suggestions:
        console.print(Text.assemble(("suggestion:", "yellow"), " ", shown_path(suggestion)))


# --- main -----------------------------------------------------------------------------------


def _parser() -> _Parser:
    parser = _Parser(prog="ctxpack", description="Decide what a large language model sees.")
    parser.add_argument("--version", action="version", version=f"ctxpack {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="{pack,context,code,demo}")
    _add_pack_parser(sub)
    _add_context_parser(sub)
    add_code_parser(sub)
    d = sub.add_parser("demo", help="pack the bundled example conversation and explain it")
    d.add_argument("--budget", type=positive_int, default=600, help="token budget (default 600)")
    return parser


def _run(args: argparse.Namespace) -> None:
    if args.command == "context" and not args.json:
        usage = _context(args)
        with _writing():
            _print_context(usage)
        return
    # Made whole before the first byte is written, so that a failure to write is told apart.
    if args.command == "code":
        text = run_code_command(args)
    elif args.command == "demo":
        text = _demo(args.budget)
    elif args.command == "context":
        text = _context(args).to_json()
    else:
        text = _pack(args)
    with _writing():
        print(text)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (2 for bad usage or bad input).

    Example:
        >>> main(["--version"])  # doctest: +ELLIPSIS
        ctxpack ...
        0
    """
    try:
        parser = _parser()
        try:
            with _writing():  # --help and --version write
                args = parser.parse_args(argv)
        except SystemExit as exc:  # --help and --version, printed
            with _writing():
                pass
            return exc.code if isinstance(exc.code, int) else 0
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        _run(args)
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:  # Ctrl-C: what the user asked for, not a fault to trace
        return EXIT_INTERRUPTED
    except _OutputError as exc:
        print(f"ctxpack: error: {exc}", file=sys.stderr)
        _silence_stdout()  # else Python fails again writing what is left, at exit
        return EXIT_OUTPUT_FAILED
    except (UsageError, CtxpackError) as exc:
        # One line, whatever the message: a multi-line cause would read as several errors.
        print(f"ctxpack: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    return 0


def _silence_stdout() -> None:
    """Point stdout at the null device: the reader has gone (or the disk is full), and Python
    would otherwise report the failure again when it flushes stdout at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (captured, replaced)
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
