"""Sessions in the OpenAI format the session benchmarks read, from agent trajectories.

Two harnesses are read. mini-swe-agent writes one ``<instance>.traj.json`` per task:
``{"messages": [...], "info": ...}`` with plain chat messages. The agent answers with one bash
block per turn and the harness replies as a user message
(``<returncode>..</returncode><output>..</output>``). As in the shared data
(``agent-sessions/SOURCE.md``), each assistant message holding exactly one bash block becomes an
assistant message with one ``bash`` tool call (``{"command": ...}``, the block taken out of its
text) and the harness's reply the matching ``tool`` message; other turns stay plain messages,
as the harness saw them. Nothing else changes; ``extra`` payloads are dropped.

SWE-agent (0.x, as in Multi-SWE-bench's published runs) writes one ``<instance>.traj`` per task:
``{"history": [...], "trajectory": [...], "info": ...}``. Its history holds the messages as
sent, each assistant turn with the command the harness parsed from it (``action``) and the text
before it (``thought``); the next user message is the command's output, followed by the
harness's status lines (``(Open file: ..)``, ``(Current directory: ..)``, ``bash-$``). An
assistant turn with an action becomes an assistant message with one ``bash`` tool call (the
action) whose content is the thought, and the next user message its ``tool`` result; the
harness's own exits (``exit_cost``, ``exit_format``...) and turns without an action stay plain
messages. The demonstration SWE-agent sends as a user message stays one.

This is how sessions the project has never seen are made: the trajectories of a run, less the
sessions already in given folders (``--exclude``), measured once with ``long_sessions.py``
(chained: these sessions are shorter than the window).

Usage (from the repository root)::

    python benchmarks/trajectory_sessions.py \
        --trajs mini-swe-agent/swebench_results/20251118_gemini-3-pro-74pct/trajs \
        --exclude ../shared/data/agent-sessions ../shared/data/agent-sessions-long \
        --out sessions-fresh
    python benchmarks/long_sessions.py --data sessions-fresh --sets chained --windows 64000
    python benchmarks/trajectory_sessions.py \
        --trajs experiments/evaluation/java/verified/20240825_SWE-agent_gpt-4o-2024-05-13/trajs \
        --out sessions-swe-agent-gpt-4o

Nothing runs on import.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
SUFFIX = ".traj.json"
SWE_AGENT_SUFFIX = ".traj"
_HARNESS_EXIT = re.compile(r"exit_\w+$")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text", "")) for p in content or () if isinstance(p, Mapping))


# What an assistant turn ran, as (command, the text left around it), or None.
Command = Callable[[Mapping[str, Any], str], "tuple[str, str] | None"]


def _as_calls(messages: Sequence[Mapping[str, Any]], command: Command) -> list[dict[str, Any]]:
    """Each turn that ran a command as a ``bash`` call, and the next user message its result."""
    out: list[dict[str, Any]] = []
    pending: str | None = None  # the call the next user message answers
    for index, message in enumerate(messages):
        role, text = str(message["role"]), _text(message.get("content"))
        ran = command(message, text) if role == "assistant" else None
        if ran is not None:
            pending = f"call_{index}"
            function = {"name": "bash", "arguments": json.dumps({"command": ran[0]})}
            call = {"id": pending, "type": "function", "function": function}
            out.append({"role": "assistant", "content": ran[1], "tool_calls": [call]})
            continue
        if role == "user" and pending is not None:
            out.append({"role": "tool", "tool_call_id": pending, "content": text})
        else:
            out.append({"role": role, "content": text})
        pending = None
    return out


def _bash_block(message: Mapping[str, Any], text: str) -> tuple[str, str] | None:
    blocks = _BLOCK.findall(text)
    return (blocks[0], _BLOCK.sub("", text).strip()) if len(blocks) == 1 else None


def _swe_agent_action(message: Mapping[str, Any], text: str) -> tuple[str, str] | None:
    action = str(message.get("action") or "").strip()
    if not action or _HARNESS_EXIT.match(action):  # exit_cost, exit_format...: not commands
        return None
    return action, str(message.get("thought") or "").strip()


def convert(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A mini-swe-agent trajectory's messages as OpenAI chat messages (module doc)."""
    return _as_calls(messages, _bash_block)


def convert_swe_agent(history: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A SWE-agent history as OpenAI chat messages with bash tool calls (module doc)."""
    return _as_calls(history, _swe_agent_action)


def _read(file: Path) -> tuple[str, list[dict[str, Any]]]:
    """A trajectory file's session id and messages, whichever harness wrote it."""
    raw = json.loads(file.read_text("utf-8"))
    if file.name.endswith(SUFFIX):
        return file.name[: -len(SUFFIX)], convert(raw["messages"])
    return file.name[: -len(SWE_AGENT_SUFFIX)], convert_swe_agent(raw["history"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--trajs", type=Path, required=True, help="folder of *.traj.json or *.traj files"
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--exclude", type=Path, nargs="*", default=[], help="folders of sessions to leave out"
    )
    parser.add_argument("--source", default="", help="where the trajectories come from")
    parser.add_argument(
        "--tag",
        default="",
        help="appended to each session id (ID@TAG): several runs of one benchmark in one folder",
    )
    args = parser.parse_args(argv)
    seen = {f.stem for folder in args.exclude for f in folder.glob("*.json")}
    files = sorted(args.trajs.rglob(f"*{SUFFIX}")) or sorted(
        args.trajs.rglob(f"*{SWE_AGENT_SUFFIX}")
    )
    if not files:
        parser.error(f"no *{SUFFIX} or *{SWE_AGENT_SUFFIX} under {args.trajs}")
    args.out.mkdir(parents=True, exist_ok=True)
    written = 0
    for file in files:
        session_id, messages = _read(file)
        if session_id in seen:
            continue
        if args.tag:
            session_id = f"{session_id}@{args.tag}"
        session = {
            "id": session_id,
            "source": args.source or str(args.trajs),
            "messages": messages,
        }
        (args.out / f"{session_id}.json").write_text(json.dumps(session), encoding="utf-8")
        written += 1
    print(f"{written} sessions written, {len(files) - written} left out", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
