"""What a limit of the filters changes in real tool outputs, and what it hides that the agent
used: the long-line cut (``--compare long-lines``, the default), the diff filter's budget
(``--compare diff-budget``), the generic filter's odd lines (``--compare odd-lines``) or the
build-log filter's budget of warnings (``--compare warning-budget``).

Every tool output of every session (OpenAI-format JSON: ``{"id", "messages": [...]}``) is
filtered twice with :class:`ctxpack.filters.ToolOutputFilter`: with its defaults, and without
the limit (``max_line_chars=None``, every line whole; ``DiffFilter(max_total_lines=10**9)``,
every file's changes; ``GenericFilter(odd_lines=False)``, no odd lines kept first;
``BuildLogFilter(max_warnings=10**9)``, every distinct warning). For each
output the two differ on, the words of four characters or more that the default hides are
looked for in the agent's later messages (content and tool calls): a word used there that
nothing before it showed (the messages before the output, and the output as filtered) is a
term the default lost; a word the default shows and the other hides, used so, is a term
gained. For the long-line cut, outputs are filtered without a goal or a command (the session's
filters know both, so the kinds chosen here may differ a little from a session's); for the
others, with the call's command and its message as the goal, as a session filters them.

Usage (from the repository root)::

    python benchmarks/long_lines.py ../shared/data/agent-sessions ../shared/data/agent-sessions-long
    python benchmarks/long_lines.py --compare diff-budget ../shared/data/agent-sessions ...
    python benchmarks/long_lines.py --compare odd-lines ../shared/data/agent-sessions ...

The table is printed and written to ``benchmarks/results/long_lines.md`` (``diff_budget.md``,
``odd_lines.md``, ``warning_budget.md``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from ctxpack.filters import (
    BuildLogFilter,
    DiffFilter,
    GenericFilter,
    ToolOutputFilter,
    default_filters,
)
from ctxpack.tokens import count_tokens

ROOT = Path(__file__).resolve().parent.parent
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")


def _messages(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text("utf-8"))
    messages = data["messages"] if isinstance(data, dict) else data
    return [m for m in messages if isinstance(m, dict)]


def _said(message: dict[str, Any]) -> str:
    return str(message.get("content") or "") + json.dumps(message.get("tool_calls") or "")


# What each comparison filters without: the limit lifted.
UNLIMITED = {
    "long-lines": lambda: ToolOutputFilter(max_line_chars=None),
    "diff-budget": lambda: ToolOutputFilter(
        [
            DiffFilter(max_total_lines=10**9) if isinstance(f, DiffFilter) else f
            for f in default_filters()
        ]
    ),
    "warning-budget": lambda: ToolOutputFilter(
        [
            BuildLogFilter(max_warnings=10**9) if isinstance(f, BuildLogFilter) else f
            for f in default_filters()
        ]
    ),
    "odd-lines": lambda: ToolOutputFilter(
        [
            GenericFilter(odd_lines=False) if isinstance(f, GenericFilter) else f
            for f in default_filters()
        ]
    ),
}


def _calls(messages: list[dict[str, Any]]) -> dict[str, tuple[str | None, str]]:
    """Call id -> (its command, its message's text): what a session filters an output with."""
    out: dict[str, tuple[str | None, str]] = {}
    for message in messages:
        for call in message.get("tool_calls") or ():
            try:
                command = json.loads(call["function"]["arguments"]).get("command")
            except (ValueError, AttributeError, KeyError, TypeError):
                command = None
            text = message.get("content")
            out[call.get("id")] = (
                command if isinstance(command, str) else None,
                text if isinstance(text, str) else "",
            )
    return out


def measure(folder: Path, compare: str = "long-lines") -> dict[str, Any]:
    whole, cut = UNLIMITED[compare](), ToolOutputFilter()
    row: dict[str, Any] = {"set": folder.name, "outputs": 0, "changed": 0, "kinds": Counter()}
    row |= {"tokens whole": 0, "tokens cut": 0, "lost": [], "gained": []}
    for path in sorted(folder.glob("*.json")):
        messages = _messages(path)
        calls = _calls(messages) if compare != "long-lines" else {}
        for k, message in enumerate(messages):
            content = message.get("content")
            if message.get("role") != "tool" or not isinstance(content, str):
                continue
            row["outputs"] += 1
            command, goal = calls.get(message.get("tool_call_id") or "", (None, ""))
            before = whole(content, command=command, goal=goal or None)
            after = cut(content, command=command, goal=goal or None)
            if before.text == after.text:
                continue
            row["changed"] += 1
            row["kinds"][after.kind] += 1
            row["tokens whole"] += count_tokens(before.text, model="gpt-4o")
            row["tokens cut"] += count_tokens(after.text, model="gpt-4o")
            words_before, words_after = (
                set(_WORD.findall(before.text)),
                set(_WORD.findall(after.text)),
            )
            later = " ".join(_said(m) for m in messages[k + 1 :] if m.get("role") == "assistant")
            earlier = " ".join(_said(m) for m in messages[:k])
            for key, words, shown in (
                ("lost", words_before - words_after, earlier + after.text),
                ("gained", words_after - words_before, earlier + before.text),
            ):
                for word in sorted(words):
                    used = re.search(rf"\b{re.escape(word)}\b", later)
                    if used and not re.search(rf"\b{re.escape(word)}\b", shown):
                        row[key].append(f"{path.stem}: {word}")
    row["kinds"] = dict(row["kinds"])
    return row


TITLES = {
    "long-lines": (
        "# Long lines cut in tool outputs",
        "`ToolOutputFilter()` against `ToolOutputFilter(max_line_chars=None)` on every tool output",
    ),
    "diff-budget": (
        "# The diff filter's budget in all files",
        "`ToolOutputFilter()` against the same with `DiffFilter(max_total_lines=10**9)` on every"
        " tool output, with its call's command and message",
    ),
    "warning-budget": (
        "# The build-log filter's budget of warnings",
        "`ToolOutputFilter()` against the same with `BuildLogFilter(max_warnings=10**9)` on every"
        " tool output, with its call's command and message",
    ),
    "odd-lines": (
        "# The generic filter's odd lines",
        "`ToolOutputFilter()` against the same with `GenericFilter(odd_lines=False)` on every tool"
        " output, with its call's command and message",
    ),
}


def table(rows: list[dict[str, Any]], compare: str = "long-lines") -> str:
    title, what = TITLES[compare]
    lines = [
        title,
        "",
        f"{what} (see `benchmarks/long_lines.py`). Tokens: gpt-4o (o200k_base), of the outputs"
        " that differ.",
        "",
        "| set | tool outputs | outputs changed | kinds | tokens without | tokens with |"
        " terms the agent used later, hidden by the default | shown by it, hidden without |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(r["kinds"].items())) or "-"
        lines.append(
            f"| {r['set']} | {r['outputs']:,} | {r['changed']} | {kinds} "
            f"| {r['tokens whole']:,} | {r['tokens cut']:,} | {len(r['lost'])} "
            f"| {len(r['gained'])} |"
        )
    for key in ("lost", "gained"):
        terms = [term for r in rows for term in r[key]]
        if terms:
            lines += ["", f"Terms {key}:", "", *(f"- {t}" for t in terms)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("data", type=Path, nargs="+", help="folders of session JSON")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--compare", choices=sorted(UNLIMITED), default="long-lines")
    args = parser.parse_args(argv)
    rows = [measure(folder, args.compare) for folder in args.data]
    text = table(rows, args.compare)
    name = args.compare.replace("-", "_")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.md").write_text(text, encoding="utf-8")
    (args.out / f"{name}.json").write_text(json.dumps(rows, indent=1) + "\n", "utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
