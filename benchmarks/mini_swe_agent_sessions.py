"""Sessions in the OpenAI format the session benchmarks read, from mini-swe-agent trajectories.

mini-swe-agent writes one ``<instance>.traj.json`` per task: ``{"messages": [...], "info": ...}``
with plain chat messages. The agent answers with one bash block per turn and the harness replies
as a user message (``<returncode>..</returncode><output>..</output>``). As in the shared data
(``agent-sessions/SOURCE.md``), each assistant message holding exactly one bash block becomes an
assistant message with one ``bash`` tool call (``{"command": ...}``, the block taken out of its
text) and the harness's reply the matching ``tool`` message; other turns stay plain messages,
as the harness saw them. Nothing else changes; ``extra`` payloads are dropped.

This is how sessions the project has never seen are made: the trajectories of a run, less the
sessions already in given folders (``--exclude``), measured once with ``long_sessions.py``
(chained: these sessions are shorter than the window).

Usage (from the repository root)::

    python benchmarks/mini_swe_agent_sessions.py \
        --trajs mini-swe-agent/swebench_results/20251118_gemini-3-pro-74pct/trajs \
        --exclude ../shared/data/agent-sessions ../shared/data/agent-sessions-long \
        --out sessions-fresh
    python benchmarks/long_sessions.py --data sessions-fresh --sets chained --windows 64000

Nothing runs on import.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
SUFFIX = ".traj.json"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text", "")) for p in content or () if isinstance(p, Mapping))


def convert(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A trajectory's messages as OpenAI chat messages with bash tool calls (module doc)."""
    out: list[dict[str, Any]] = []
    pending: str | None = None  # the call the next user message answers
    for index, message in enumerate(messages):
        role, text = str(message["role"]), _text(message.get("content"))
        blocks = _BLOCK.findall(text) if role == "assistant" else []
        if len(blocks) == 1:
            pending = f"call_{index}"
            function = {"name": "bash", "arguments": json.dumps({"command": blocks[0]})}
            call = {"id": pending, "type": "function", "function": function}
            content = _BLOCK.sub("", text).strip()
            out.append({"role": "assistant", "content": content, "tool_calls": [call]})
            continue
        if role == "user" and pending is not None:
            out.append({"role": "tool", "tool_call_id": pending, "content": text})
        else:
            out.append({"role": role, "content": text})
        pending = None
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--trajs", type=Path, required=True, help="folder of *.traj.json")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--exclude", type=Path, nargs="*", default=[], help="folders of sessions to leave out"
    )
    parser.add_argument("--source", default="", help="where the trajectories come from")
    args = parser.parse_args(argv)
    seen = {f.stem for folder in args.exclude for f in folder.glob("*.json")}
    files = sorted(args.trajs.rglob(f"*{SUFFIX}"))
    if not files:
        parser.error(f"no *{SUFFIX} under {args.trajs}")
    args.out.mkdir(parents=True, exist_ok=True)
    written = 0
    for file in files:
        session_id = file.name[: -len(SUFFIX)]
        if session_id in seen:
            continue
        raw = json.loads(file.read_text("utf-8"))
        session = {
            "id": session_id,
            "source": args.source or str(args.trajs),
            "messages": convert(raw["messages"]),
        }
        (args.out / f"{session_id}.json").write_text(json.dumps(session), encoding="utf-8")
        written += 1
    print(f"{written} sessions written, {len(files) - written} left out", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
