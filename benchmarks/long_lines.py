"""What cutting long lines changes in real tool outputs, and what it hides that the agent used.

Every tool output of every session (OpenAI-format JSON: ``{"id", "messages": [...]}``) is
filtered twice with :class:`ctxpack.filters.ToolOutputFilter`: with its default
``max_line_chars`` and with ``max_line_chars=None`` (every line whole, as before the option).
For each output the two differ on, the words of four characters or more that the cut hides are
looked for in the agent's later messages (content and tool calls): a word used there that
nothing before it showed (the messages before the output, and the output as cut) is a term the
cut lost. Outputs are filtered without a goal or a command (the session's filters know both, so
the kinds chosen here may differ a little from a session's).

Usage (from the repository root)::

    python benchmarks/long_lines.py ../shared/data/agent-sessions ../shared/data/agent-sessions-long

The table is printed and written to ``benchmarks/results/long_lines.md``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from ctxpack.filters import ToolOutputFilter
from ctxpack.tokens import count_tokens

ROOT = Path(__file__).resolve().parent.parent
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")


def _messages(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text("utf-8"))
    messages = data["messages"] if isinstance(data, dict) else data
    return [m for m in messages if isinstance(m, dict)]


def _said(message: dict[str, Any]) -> str:
    return str(message.get("content") or "") + json.dumps(message.get("tool_calls") or "")


def measure(folder: Path) -> dict[str, Any]:
    whole, cut = ToolOutputFilter(max_line_chars=None), ToolOutputFilter()
    row: dict[str, Any] = {"set": folder.name, "outputs": 0, "changed": 0, "kinds": Counter()}
    row |= {"tokens whole": 0, "tokens cut": 0, "lost": []}
    for path in sorted(folder.glob("*.json")):
        messages = _messages(path)
        for k, message in enumerate(messages):
            content = message.get("content")
            if message.get("role") != "tool" or not isinstance(content, str):
                continue
            row["outputs"] += 1
            before, after = whole(content), cut(content)
            if before.text == after.text:
                continue
            row["changed"] += 1
            row["kinds"][after.kind] += 1
            row["tokens whole"] += count_tokens(before.text, model="gpt-4o")
            row["tokens cut"] += count_tokens(after.text, model="gpt-4o")
            hidden = set(_WORD.findall(before.text)) - set(_WORD.findall(after.text))
            later = " ".join(_said(m) for m in messages[k + 1 :] if m.get("role") == "assistant")
            shown = " ".join(_said(m) for m in messages[:k]) + after.text
            for word in sorted(hidden):
                used = re.search(rf"\b{re.escape(word)}\b", later)
                if used and not re.search(rf"\b{re.escape(word)}\b", shown):
                    row["lost"].append(f"{path.stem}: {word}")
    row["kinds"] = dict(row["kinds"])
    return row


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "# Long lines cut in tool outputs",
        "",
        "`ToolOutputFilter()` against `ToolOutputFilter(max_line_chars=None)` on every tool output"
        " (see `benchmarks/long_lines.py`). Tokens: gpt-4o (o200k_base), of the outputs that"
        " differ.",
        "",
        "| set | tool outputs | outputs changed | kinds | tokens whole | tokens cut |"
        " terms the agent used later, hidden by the cut |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(r["kinds"].items())) or "-"
        lines.append(
            f"| {r['set']} | {r['outputs']:,} | {r['changed']} | {kinds} "
            f"| {r['tokens whole']:,} | {r['tokens cut']:,} | {len(r['lost'])} |"
        )
    lost = [term for r in rows for term in r["lost"]]
    if lost:
        lines += ["", "Terms lost:", "", *(f"- {t}" for t in lost)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("data", type=Path, nargs="+", help="folders of session JSON")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    rows = [measure(folder) for folder in args.data]
    text = table(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "long_lines.md").write_text(text, encoding="utf-8")
    (args.out / "long_lines.json").write_text(json.dumps(rows, indent=1) + "\n", "utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
