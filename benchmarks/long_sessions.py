"""Long sessions at a window smaller than the session: what each strategy costs, keeps and breaks.

Replays real coding-agent sessions (``--data``, e.g. ``../shared/data/agent-sessions-long``) with
the harness of ``benchmarks/agent_sessions.py`` (one request before each assistant message; the
prompt cache simulated by :func:`ctxpack.cost.simulate`; evidence = identifiers, paths and
numbers the agent uses that first appeared in a tool result), alone and chained into multi-task
sessions (one agent working through several tasks in turn), at several windows. Strategies:

- ``raw``: everything, every time; a request over the window is an API error (counted);
- ``clear``: Anthropic-style ``clear_tool_uses`` (every result but the last 3 cleared once the
  prompt passes half the window; decided again at every request, as the API does);
- ``masking``: observation masking, the last 3 tool outputs kept, the older ones replaced;
- ``autocompact``: Claude-Code-style auto-compaction at 95% of the window (a summary request,
  billed, replaces the history; the summary is the harness's stand-in);
- ``filters``: ``ctxpack.Session()`` with no window: the filters at arrival alone (requests over
  the window counted), so that the managed mode's evidence loss splits into the filters' share
  and the window's;
- ``managed``: ``ctxpack.Session(window=W)``;
- ``managed-gpt-5``: the same, its edits timed by OpenAI's cache (``WindowPolicy(model=
  "gpt-5")``, as a session naming that model); not run by default;
- ``bound``: every tool output replaced by a short note as it arrives, the prefix never
  rewritten (the issue's bound: where tool outputs fill the prompt, no strategy that keeps the
  conversation costs less). Not run by default.

Reported per strategy and window: dollars at two price points (Sonnet-class with one cache
breakpoint per request, and OpenAI-class automatic prefix caching), the share of ``raw``, the
peak request, requests over the window (the window less the reply room), evidence present in
the request and present or recoverable (through the artifacts the request names, and the
artifacts those name: a compaction's index), and requests that kept the system prompt and every
user message verbatim.

The sessions are split in two by a hash of their id: ``tune`` (what the defaults were chosen
on) and ``report`` (never looked at while choosing); both are printed.

Usage (from the repository root)::

    python benchmarks/long_sessions.py --data ../shared/data/agent-sessions-long
    python benchmarks/long_sessions.py --data DIR --windows 64000 --sets single --limit 4
    python benchmarks/long_sessions.py --data DIR --windows 64000 --rooms 12000,20000,none
    python benchmarks/long_sessions.py --data DIR --min-tokens 43000 --sets single

``--min-tokens`` keeps only the sessions of that many tokens or more (43,000: as long as the
dev long sessions). ``--rooms`` also measures the managed mode at other ``managed_room``
values, and plots cost against evidence (``NAME_frontier.png``): where a cheaper bill starts
to cost evidence.
``--memory FILE`` and ``--skill FILE`` (repeatable) pin content in every session after its task
and count the requests that keep it (``pins kept``).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import ctxpack
from ctxpack import get_counter
from ctxpack.managed import PinnedText, WindowPolicy

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results"
DEFAULT_WINDOWS = (32_000, 64_000, 128_000)
BILLINGS = ("claude-sonnet-4-5@request", "gpt-5@message")
CHAIN_LENGTH = 4  # sessions per chained multi-task session
MASK = "[Old tool output omitted.]"


def _harness() -> Any:
    # The harness is the sibling script; benchmarks/ is no package.
    sys.path.insert(0, str(HERE))
    import agent_sessions

    return agent_sessions


A = _harness()


def split_of(session_id: str) -> str:
    """``"tune"`` or ``"report"``, by a hash of the id (stable, independent of the data order)."""
    return "tune" if hashlib.sha256(session_id.encode()).digest()[0] % 2 == 0 else "report"


def reply_room(window: int) -> int:
    return WindowPolicy(window=window).reserve


# ------------------------------------------------------------------------------- strategies


class Masking:
    """Observation masking: every tool output but the last ``keep`` replaced by a short note."""

    def __init__(self, session: Any, *, keep: int = 3) -> None:
        self.keep = keep

    def __call__(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        tools = [i for i, m in enumerate(history) if m.get("role") == "tool"]
        masked = set(tools[: max(0, len(tools) - self.keep)])
        return [{**m, "content": MASK} if i in masked else m for i, m in enumerate(history)]


class Managed(A.SessionStrategy):  # type: ignore[misc, name-defined]
    """``ctxpack.Session(window=W)``: appended once, rendered once per request; the pinned
    content of the scenario (``--memory``, ``--skill``) pinned (``Session.pin``) where it
    arrives."""

    def __init__(self, session: Any, *, pins: Sequence[PinnedText] = (), **options: Any) -> None:
        super().__init__(session, **options)
        self.pins = {p.text: p for p in pins}

    def add(self, message: Mapping[str, Any]) -> None:
        pin = self.pins.get(message.get("content")) if message.get("role") == "user" else None
        if pin is None:
            super().add(message)
        else:
            self.session.pin(pin.text, name=pin.name, kind=pin.kind)

    def recoverable(self, request_messages: Sequence[Any]) -> list[str]:
        if not self.session.retrieve_tool:
            return []
        store = self.session.store
        seen: set[str] = set()
        texts: list[str] = []
        frontier = {a for m in request_messages for a in A._ARTIFACT.findall(A.message_text(m))}
        for _ in range(2):  # the artifacts named, then those a compaction's index names
            nxt: set[str] = set()
            for a in sorted(frontier - seen):
                seen.add(a)
                if a in store:
                    text = store.get(a)
                    texts.append(text)
                    if store.metadata(a).get("kind") == "compaction_index":
                        nxt |= set(A._ARTIFACT.findall(text))
            frontier = nxt
        return texts


def room_name(room: int | None) -> str:
    """The strategy name of the managed mode at another ``managed_room`` (``None``: the whole
    room)."""
    return "managed, whole room" if room is None else f"managed, room {room:,}"


def parse_rooms(text: str) -> list[int | None]:
    """``"20000,none"`` -> ``[20000, None]``."""
    return [None if r.strip().lower() == "none" else int(r) for r in text.split(",") if r.strip()]


def strategies(
    window: int,
    rooms: Sequence[int | None] = (),
    pins: Sequence[PinnedText] = (),
    dedupe: bool = True,
) -> dict[str, Any]:
    room = window - reply_room(window)
    frontier = {
        room_name(r): A._with(
            Managed,
            window=WindowPolicy(window=window, managed_room=r),
            pins=pins,
            dedupe_outputs=dedupe,
        )
        for r in rooms
    }
    return {
        "raw": A.Raw,
        "clear": A._with(A.ClearToolResults, trigger=room // 2, keep=3),
        "masking": A._with(Masking, keep=3),
        "autocompact": A._with(A.ThresholdCompaction, trigger=int(0.95 * room)),
        # The baseline: the filters at arrival alone, no window. Its evidence loss is
        # the filters' share of the managed mode's.
        "filters": A._with(A.SessionStrategy, dedupe_outputs=dedupe),
        "managed": A._with(Managed, window=window, pins=pins, dedupe_outputs=dedupe),
        # Edits timed by OpenAI's cache (every message boundary, writes at the input price), as
        # a session naming a gpt-5 model times them; "managed" names none: Claude's cache.
        "managed-gpt-5": A._with(
            Managed,
            window=WindowPolicy(window=window, model="gpt-5"),
            pins=pins,
            dedupe_outputs=dedupe,
        ),
        "bound": A._with(Masking, keep=0),
        **frontier,
    }


# ----------------------------------------------------------------------- tools on demand


def _tool(name: str, description: str, params: dict[str, str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {p: {"type": "string", "description": d} for p, d in params.items()},
                "required": list(params)[:1],
            },
        },
    }


# The agent's own tool, as mini-swe-agent's harness offers it: the sessions call it every turn,
# so every strategy's every request carries its definition (a provider requires the tools of a
# request that holds tool calls and results).
BASH_TOOL = _tool(
    "bash",
    "Run a shell command in the repository and return its output.",
    {"command": "The command to run."},
)


def agent_tools(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The tool definitions the agent of ``messages`` sends with each request: one per tool
    name its calls use, in order of first use; ``bash`` as :data:`BASH_TOOL`, any other a
    generic definition with the argument names its calls pass."""
    params: dict[str, dict[str, str]] = {}
    for m in messages:
        for call in m.get("tool_calls") or ():
            function = call.get("function") or {}
            seen = params.setdefault(str(function.get("name")), {})
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except json.JSONDecodeError:
                arguments = {}
            for key in arguments if isinstance(arguments, dict) else ():
                seen.setdefault(str(key), f"The {key} argument.")
    return [
        BASH_TOOL if name == "bash" else _tool(name, f"The harness's {name} tool.", p)
        for name, p in params.items()
    ]


def example_tools() -> list[dict[str, Any]]:
    """A tool set shaped like a file-system and an issue-tracker MCP server (written for this
    benchmark): 16 tools, a few parameters each, described as such servers describe theirs."""
    path = "Path of the file or directory, relative to an allowed root."
    specs = {
        "read_text_file": (
            "Read a file as text. Use head or tail for the first or last lines; "
            "fails on binary files.",
            {"path": path, "head": "First N lines only.", "tail": "Last N lines only."},
        ),
        "read_multiple_files": (
            "Read several files at once; a file that fails is reported and "
            "the others are still read.",
            {"paths": "Paths, as a JSON list."},
        ),
        "write_file": (
            "Create a file or overwrite it entirely. Use with care: the previous content is lost.",
            {"path": path, "content": "The new content."},
        ),
        "edit_file": (
            "Replace exact text spans in a file and return a git-style diff; dryRun previews.",
            {
                "path": path,
                "edits": "JSON list of {oldText, newText}.",
                "dryRun": "Preview only, 'true' or 'false'.",
            },
        ),
        "create_directory": (
            "Create a directory and its parents; succeeds if it exists.",
            {"path": path},
        ),
        "list_directory": (
            "List a directory, marking files [FILE] and directories [DIR].",
            {"path": path},
        ),
        "directory_tree": (
            "A recursive JSON tree of a directory, with names, types and children.",
            {"path": path, "exclude": "Glob patterns to skip."},
        ),
        "move_file": (
            "Move or rename a file or directory; fails if the target exists.",
            {"source": path, "destination": path},
        ),
        "search_files": (
            "Find files whose names match a pattern, recursively.",
            {"path": path, "pattern": "A glob pattern.", "exclude": "Patterns."},
        ),
        "get_file_info": (
            "Size, times, type and permissions of a file or directory.",
            {"path": path},
        ),
        "create_issue": (
            "Open an issue in the tracker, with a title, a body and labels.",
            {
                "repo": "owner/name.",
                "title": "One line.",
                "body": "Markdown.",
                "labels": "Comma-separated labels.",
            },
        ),
        "list_issues": (
            "List issues, filtered by state, label or assignee, newest first.",
            {
                "repo": "owner/name.",
                "state": "open, closed or all.",
                "labels": "Comma-separated.",
                "page": "Page number, from 1.",
            },
        ),
        "get_issue": (
            "One issue with its comments.",
            {"repo": "owner/name.", "number": "The issue number."},
        ),
        "add_comment": (
            "Comment on an issue or pull request.",
            {"repo": "owner/name.", "number": "The issue number.", "body": "Markdown."},
        ),
        "create_pull_request": (
            "Open a pull request from a branch.",
            {
                "repo": "owner/name.",
                "head": "The branch with the changes.",
                "base": "The target branch.",
                "title": "One line.",
                "body": "Markdown.",
            },
        ),
        "search_code": (
            "Search code across repositories with the tracker's query syntax.",
            {"query": "Search terms and qualifiers.", "page": "Page, from 1."},
        ),
    }
    return [_tool(n, d, p) for n, (d, p) in specs.items()]


def as_provider_tools(raw: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """Tool definitions as a provider takes them, and which provider: OpenAI function tools as
    they are; MCP tools (``inputSchema``) and Anthropic tools as Anthropic tools."""
    if all(isinstance(t.get("function"), Mapping) for t in raw):
        return [dict(t) for t in raw], "openai"
    tools = [
        {
            "name": t["name"],
            "description": t.get("description", ""),
            "input_schema": t.get("input_schema", t.get("inputSchema", {"type": "object"})),
        }
        for t in raw
    ]
    return tools, "anthropic"


def tools_on_demand_table(
    counter: Any, requests: int, tool_sets: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[str]:
    from ctxpack.tokens import tool_definition_tokens
    from ctxpack.tools_on_demand import on_demand_saving, on_demand_tools

    lines = [
        "| tool set | tools | full definitions, tokens per request | on demand | saved per request "
        f"| saved over {requests:,} requests |",
        "|---|---|---|---|---|---|",
    ]
    for label, raw in tool_sets.items():
        tools, provider = as_provider_tools(raw)
        full = tool_definition_tokens(tools, counter)
        lean = tool_definition_tokens(on_demand_tools(tools, provider), counter)
        saved = on_demand_saving(tools, counter, provider)
        lines.append(
            f"| {label} | {len(tools)} | {full:,} | {lean:,} | {saved:,} "
            f"({100 * saved / full:.0f}%) | {saved * requests:,} |"
        )
    return lines


# ------------------------------------------------------------------------------------ data


def session_tokens(session: Any, counter: Any) -> int:
    """A session's tokens, framing included: the request its last message would close."""
    return int(counter.count_messages(ctxpack.messages.ensure_messages(session.messages)))


def chain(sessions: Sequence[Any], length: int = CHAIN_LENGTH) -> list[Any]:
    """Consecutive sessions joined as one agent working through their tasks in turn: the first
    system prompt, then each session's messages after its own system prompt (tool call ids
    prefixed so that they stay unique), and where each task starts: its evidence comes from its
    own tool outputs only (see ``session_evidence``)."""
    out = []
    for start in range(0, len(sessions) - length + 1, length):
        group = sessions[start : start + length]
        messages: list[dict[str, Any]] = [group[0].messages[0]]
        starts = []
        for k, s in enumerate(group):
            starts.append(len(messages))
            for m in s.messages[1:]:
                m = dict(m)
                if m.get("tool_call_id"):
                    m["tool_call_id"] = f"t{k}_{m['tool_call_id']}"
                if m.get("tool_calls"):
                    m["tool_calls"] = [{**c, "id": f"t{k}_{c['id']}"} for c in m["tool_calls"]]
                messages.append(m)
        ids = "+".join(s.id for s in group)
        out.append(A.AgentSession(id=f"chain:{ids}", messages=messages, task_starts=tuple(starts)))
    return out


# --------------------------------------------------------------------------------- measures


def instructions_kept(session: Any, run: Any, pins: Sequence[PinnedText] = ()) -> tuple[int, int]:
    """(requests that held the system prompt and every user message so far verbatim, requests);
    pinned content is not an instruction (see :func:`pins_kept`)."""
    pinned = {p.text for p in pins}
    return _requests_holding(
        session,
        run,
        lambda history: [
            m["content"]
            for m in history
            if m["role"] in ("system", "user") and m["content"] not in pinned
        ],
    )


def pins_kept(session: Any, run: Any, pins: Sequence[PinnedText]) -> tuple[int, int]:
    """(requests that held every pin that had arrived: a memory file whole, a skill's first
    line at least, as its re-injection keeps the head; requests)."""
    shown = {p.text: p.text if p.kind == "memory" else p.text.split("\n")[0] for p in pins}
    return _requests_holding(
        session,
        run,
        lambda history: [shown[m["content"]] for m in history if m["content"] in shown],
    )


def _requests_holding(
    session: Any, run: Any, texts_at: Callable[[Sequence[Mapping[str, Any]]], Sequence[str]]
) -> tuple[int, int]:
    """(requests that held every text ``texts_at`` names for the history before them, as one of
    their messages or inside one; requests)."""
    steps = [i for i, m in enumerate(session.messages) if m["role"] == "assistant" and i]
    kept = 0
    for step, index in zip(steps, run.main, strict=True):
        sent = {A.message_text(m).strip() for m in run.requests[index].messages}
        joined = "\n".join(sent)
        texts = (t.strip() for t in texts_at(session.messages[:step]))
        kept += all(t in sent or t in joined for t in texts)
    return kept, len(steps)


def agent_tools_note(sent: bool, counter: Any) -> str:
    """What the requests carry besides the messages."""
    if not sent:
        return (
            "Tools: the requests carry no agent tool definitions (--no-agent-tools), only the "
            "managed mode's retrieve tool: the modelling before issue 28's fix."
        )
    size = ctxpack.tokens.tool_definition_tokens([BASH_TOOL], counter)
    return (
        "Tools: every request of every strategy (summary requests too) carries the agent's "
        f"`bash` tool ({size} tokens with the per-request constants, as OpenAI frames it; "
        "Anthropic adds its tool-use system prompt), as the harness must; the managed mode "
        "adds its retrieve tool and counts both in its window."
    )


def pins_note(pins: Sequence[PinnedText], counter: Any) -> str:
    """What the scenario pins, and how ``pins kept`` counts."""
    listed = ", ".join(f"{p.kind} {p.name} ({counter.count(p.text):,} tokens)" for p in pins)
    return (
        f"Pinned content, in every session right after its task: {listed}. The managed mode "
        "pins it (`Session.pin`: re-injected after each compaction, memory files whole, skills "
        "cut to their head within skill_budget and pinned_budget); the other strategies get it "
        "as user messages. Pinned content is no instruction here; `pins kept` counts the "
        "requests that hold every pin that had arrived (a memory file whole, a skill's first "
        "line at least)."
    )


def with_pins(sessions: Sequence[Any], pins: Sequence[PinnedText]) -> list[Any]:
    """Each session with the pins as user messages right after its first user message (the
    task): every strategy gets them; the managed one pins them."""
    if not pins:
        return list(sessions)
    out = []
    for s in sessions:
        first = next(i for i, m in enumerate(s.messages) if m["role"] == "user")
        added = [{"role": "user", "content": p.text} for p in pins]
        messages = [*s.messages[: first + 1], *added, *s.messages[first + 1 :]]
        out.append(dataclasses.replace(s, messages=messages))
    return out


def measure(
    sessions: Sequence[Any],
    window: int,
    names: Sequence[str],
    counter: Any,
    rooms: Sequence[int | None] = (),
    pins: Sequence[PinnedText] = (),
    dedupe: bool = True,
    send_agent_tools: bool = True,
) -> dict[str, Any]:
    billings = [A.Billing.parse(b) for b in BILLINGS]
    limit = window
    out: dict[str, Any] = {}
    factories = strategies(window, rooms, pins, dedupe)
    names = [*names, *(room_name(r) for r in rooms)]
    for name in names:
        t0 = time.perf_counter()
        runs = []
        over = kept = total = pinned = 0
        errors: list[str] = []
        per_session: dict[str, dict[str, float]] = {}
        for s in sessions:
            try:
                tools = agent_tools(s.messages) if send_agent_tools else ()
                run = A.replay(s, name, factories[name], counter, billings, tools)
            except ctxpack.BudgetExceededError as exc:
                errors.append(f"{s.id}: {exc}")
                continue
            runs.append(run)
            room = limit - reply_room(window)
            bill = run.bills[BILLINGS[0]]
            over += sum(1 for i in run.main if bill.requests[i].input_tokens > room)
            k, t = instructions_kept(s, run, pins)
            kept += k
            total += t
            pinned += pins_kept(s, run, pins)[0]
            per_session[s.id] = {
                "cost_usd": bill.cost,
                "peak_request_tokens": max(bill.requests[i].input_tokens for i in run.main),
                "evidence_present": run.evidence_present,
                "evidence_total": run.evidence_total,
            }
        summary = A.summarize(runs, billings)[name] if runs else {}
        summary.pop("lost_evidence", None)
        summary["requests_over_window"] = over
        summary["instructions_kept"] = kept / total if total else 1.0
        if pins:
            summary["pins_kept"] = pinned / total if total else 1.0
        summary["errors"] = errors
        summary["seconds"] = time.perf_counter() - t0
        summary["sessions"] = [s.id for s in sessions]
        summary["per_session"] = per_session
        out[name] = summary
        print(f"    {name} @ {window}: {summary['seconds']:.0f}s", file=sys.stderr)
    return out


def table(results: Mapping[str, Any], window: int) -> list[str]:
    raw = results.get("raw")
    header = [
        "strategy",
        *(f"$ {b}" for b in BILLINGS),
        *(f"% of raw ({b})" for b in BILLINGS),
        f"input only, % of raw ({BILLINGS[0]})",
        "peak request",
        "over the window",
        "evidence present",
        "present or recoverable",
        "instructions kept",
    ]
    pinned = any("pins_kept" in s for s in results.values())
    if pinned:
        header.append("pins kept")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, s in results.items():
        if not s.get("cost_usd_by_billing"):
            lines.append(f"| {name} | failed: {'; '.join(s['errors'])[:200]} |")
            continue
        costs = s["cost_usd_by_billing"]
        shares = [
            f"{100 * costs[b] / raw['cost_usd_by_billing'][b]:.1f}%" if raw else "n/a"
            for b in BILLINGS
        ]
        inputs = s["input_cost_usd_by_billing"][BILLINGS[0]]
        base = raw["input_cost_usd_by_billing"][BILLINGS[0]] if raw else 0.0
        shares.append(f"{100 * inputs / base:.1f}%" if base else "n/a")
        lines.append(
            "| "
            + " | ".join(
                [
                    name,
                    *(f"{costs[b]:.2f}" for b in BILLINGS),
                    *shares,
                    f"{s['peak_request_tokens']:,}",
                    f"{s['requests_over_window']} / {s['requests'] - s['side_requests']}",
                    f"{100 * s['evidence_survival']:.2f}%",
                    f"{100 * s['evidence_recoverable']:.2f}%",
                    f"{100 * s['instructions_kept']:.1f}%",
                    *([f"{100 * s['pins_kept']:.1f}%"] if pinned else []),
                ]
            )
            + " |"
        )
    return lines


# How far a session outgrows the room (its raw peak request over the window less the reply
# room): the bounds of each group of the table by length.
OUTGROWN = ((0.0, 1.0, "fits"), (1.0, 2.0, "1-2x"), (2.0, 4.0, "2-4x"), (4.0, math.inf, "4x+"))


def by_length_table(results: Mapping[str, Any], window: int) -> list[str]:
    """Each strategy's bill (% of raw's, first billing) and evidence present, by how far the
    sessions outgrow the room: the saving a window buys grows with the session."""
    raw = results.get("raw", {}).get("per_session")
    if not raw:
        return []
    room = window - reply_room(window)
    names = [n for n, s in results.items() if n != "raw" and s.get("per_session")]
    header = ["raw peak / room", "sessions", "raw $", *names]
    lines = [
        "By length (% of raw / evidence present, per group of sessions):",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for low, high, label in OUTGROWN:
        ids = [i for i, r in raw.items() if low < r["peak_request_tokens"] / room <= high]
        if not ids:
            continue
        base = sum(raw[i]["cost_usd"] for i in ids)
        cells = [label, str(len(ids)), f"{base:.2f}"]
        for name in names:
            runs = [results[name]["per_session"].get(i) for i in ids]
            if any(r is None for r in runs):
                cells.append("n/a")
                continue
            cost = sum(r["cost_usd"] for r in runs if r)
            present = sum(r["evidence_present"] for r in runs if r)
            used = sum(r["evidence_total"] for r in runs if r)
            share = f"{100 * present / used:.2f}%" if used else "n/a"
            cells.append(f"{100 * cost / base:.1f}% / {share}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def dollars_table(results: Mapping[str, Any]) -> list[str]:
    """Where each strategy's dollars go at the first billing: cache writes (new content and
    every rewrite of an edited prefix), cache reads, uncached input, replies."""
    p = ctxpack.cost.price(BILLINGS[0].partition("@")[0])
    lines = [
        f"Where the dollars go ({BILLINGS[0]}; tokens in brackets):",
        "",
        "| strategy | cache writes | cache reads | uncached input | replies | mean request |",
        "|---|---|---|---|---|---|",
    ]
    for name, s in results.items():
        if not s.get("cost_usd_by_billing"):
            continue
        parts = [
            (s["cache_write_tokens"], p.cache_write_5m),
            (s["cache_read_tokens"], p.cache_read),
            (s["uncached_input_tokens"], p.input),
            (s["output_tokens"], p.output),
        ]
        cells = [f"${n * rate / 1e6:.2f} ({n:,})" for n, rate in parts]
        lines.append(f"| {name} | {' | '.join(cells)} | {s['mean_request_tokens']:,.0f} |")
    return lines


def frontier_plot(results: Mapping[str, Any], path: Path) -> bool:
    """The managed mode's bill (% of raw, first billing) against the evidence present, one
    line per set and window through its ``managed_room`` values, single sessions and chains
    side by side, with the issue's bounds (97% present, 65% of raw)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("note: matplotlib is not installed; no plot", file=sys.stderr)
        return False
    lines: dict[bool, list[tuple[str, list[tuple[float, float, str]]]]] = {False: [], True: []}
    for label, by_window in results.items():
        for window, res in by_window.items():
            raw = res.get("raw")
            points = sorted(
                (
                    100 * s["cost_usd"] / raw["cost_usd"],
                    100 * s["evidence_survival"],
                    "default" if name == "managed" else name.removeprefix("managed, "),
                )
                for name, s in res.items()
                if name.startswith("managed") and raw and s.get("cost_usd")
            )
            if len(points) >= 2:
                lines[label.startswith("chained")].append(
                    (f"{label}, {int(window) // 1000}k", points)
                )
    if not any(lines.values()):
        return False
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8), sharey=True)
    for ax, chained in zip(axes, (False, True), strict=True):
        for name, points in lines[chained]:
            drawn = ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=name)
            for x, y, text in points:
                ax.annotate(
                    text,
                    (x, y),
                    textcoords="offset points",
                    xytext=(4, -9 if text == "default" else 3),
                    fontsize=7,
                    color=drawn[0].get_color(),
                )
        ax.axhline(97, color="grey", linestyle="--", linewidth=0.8)
        ax.axvline(65, color="grey", linestyle="--", linewidth=0.8)
        ax.set_title("chained sessions" if chained else "single sessions")
        ax.set_xlabel(f"bill, % of raw ({BILLINGS[0]})")
        ax.grid(alpha=0.3)
        if lines[chained]:
            ax.legend(fontsize=8, loc="lower right")
    axes[0].set_ylabel("evidence present in the request, %")
    fig.suptitle("Managed mode: cost against evidence, by managed_room")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def output_floor(raw: Mapping[str, Any]) -> str:
    """The share of ``raw``'s bill that pays for the replies: the same for every strategy, so no
    context strategy goes under it."""
    shares = [
        1 - raw["input_cost_usd_by_billing"][b] / raw["cost_usd_by_billing"][b] for b in BILLINGS
    ]
    return (
        "The replies (output tokens, the same for every strategy) make "
        + " and ".join(f"{100 * s:.1f}% ({b})" for s, b in zip(shares, BILLINGS, strict=True))
        + " of raw's bill: no strategy costs less than that share."
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder of session JSON")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--windows", default=",".join(map(str, DEFAULT_WINDOWS)), help="comma-separated tokens"
    )
    parser.add_argument("--strategies", default="raw,clear,masking,autocompact,filters,managed")
    parser.add_argument("--limit", type=int, default=None, help="only the first N sessions")
    parser.add_argument(
        "--min-tokens",
        type=int,
        default=0,
        help="only the sessions of at least this many tokens (the long dev sessions: 43,000)",
    )
    parser.add_argument(
        "--sets",
        default="single,chained",
        help="comma-separated: single (the sessions alone), chained (multi-task sessions)",
    )
    parser.add_argument("--name", default="long_sessions", help="results file name")
    parser.add_argument(
        "--memory",
        type=Path,
        action="append",
        default=[],
        help="a memory file pinned in every session, after its task (repeatable)",
    )
    parser.add_argument(
        "--skill",
        type=Path,
        action="append",
        default=[],
        help="a skill pinned in every session, after its task (repeatable)",
    )
    parser.add_argument(
        "--rooms",
        default="",
        help="comma-separated managed_room values (or none) to measure the managed mode at "
        "besides its default, with a plot of cost against evidence",
    )
    parser.add_argument(
        "--tools", type=Path, default=None, help="JSON list of tool definitions (tools on demand)"
    )
    parser.add_argument(
        "--chain-length",
        type=int,
        default=CHAIN_LENGTH,
        help=f"sessions per chained multi-task session (default {CHAIN_LENGTH})",
    )
    parser.add_argument(
        "--render",
        type=Path,
        default=None,
        help="write the report again from a results JSON of an earlier run (no replay)",
    )
    parser.add_argument(
        "--no-agent-tools",
        action="store_true",
        help="requests carry no agent tool definitions (the modelling before issue 28's fix: "
        "only the managed mode's retrieve tool was counted)",
    )
    parser.add_argument(
        "--send-repeats",
        action="store_true",
        help="sessions send repeated tool-output lines as they are (dedupe_outputs=False)",
    )
    args = parser.parse_args(argv)
    if args.chain_length < 2:
        parser.error(f"--chain-length takes 2 or more sessions, got {args.chain_length}")
    windows = [int(w) for w in args.windows.split(",") if w.strip()]
    names = [n.strip() for n in args.strategies.split(",") if n.strip()]
    sessions = A.load_sessions(args.data, args.limit)
    counter = get_counter(counter=A.ENCODING)
    if args.min_tokens:
        sessions = [s for s in sessions if session_tokens(s, counter) >= args.min_tokens]
        if not sessions:
            parser.error(f"no session of {args.min_tokens} tokens or more in {args.data}")
    kinds = {k.strip() for k in args.sets.split(",") if k.strip()}
    if not kinds or kinds - {"single", "chained"}:
        parser.error(f"--sets takes single and/or chained, got {args.sets!r}")
    pins = [
        PinnedText(name=f.name, text=f.read_text("utf-8"), kind=kind)
        for kind, files in (("memory", args.memory), ("skill", args.skill))
        for f in files
    ]
    tune = [s for s in sessions if split_of(s.id) == "tune"]
    report = [s for s in sessions if split_of(s.id) == "report"]
    sets: dict[str, list[Any]] = {}
    if "single" in kinds:
        sets["tune"], sets["report"] = with_pins(tune, pins), with_pins(report, pins)
    if "chained" in kinds:
        sets["chained (tune)"] = with_pins(chain(tune, args.chain_length), pins)
        sets["chained (report)"] = with_pins(chain(report, args.chain_length), pins)
    results: dict[str, Any] = {}
    if args.render is not None:
        results = json.loads(args.render.read_text("utf-8"))["results"]
    md = ["# Long sessions: a window smaller than the session", ""]
    longer = f" of {args.min_tokens:,} tokens or more" if args.min_tokens else ""
    md.append(
        f"Data: {args.data.name} ({len(sessions)} sessions{longer}; split by a hash of the id: "
        f"{len(tune)} tune, {len(report)} report; chains of {args.chain_length} "
        "sessions as one multi-task session). Tokens: cl100k_base. Billings: "
        + ", ".join(BILLINGS)
        + ". A request is over the window when its prompt passes the window less the reply room "
        "(an eighth of the window, at most 8,192 tokens)."
    )
    md.extend(["", agent_tools_note(not args.no_agent_tools, counter)])
    if pins:
        md.extend(["", pins_note(pins, counter)])
    if args.send_repeats:
        md.extend(["", "Sessions send repeated tool-output lines as they are (--send-repeats)."])
    for label, group in sets.items():
        if not group:
            continue
        sizes = [session_tokens(s, counter) for s in group]
        md.extend(
            [
                "",
                f"## {label}: {len(group)} sessions, {min(sizes):,} to {max(sizes):,} tokens",
            ]
        )
        print(f"{label}:", file=sys.stderr)
        for window in windows:
            if args.render is None:
                results.setdefault(label, {})[str(window)] = measure(
                    group,
                    window,
                    names,
                    counter,
                    parse_rooms(args.rooms),
                    pins,
                    not args.send_repeats,
                    not args.no_agent_tools,
                )
            res = results[label][str(window)]
            if window == windows[0] and "raw" in res:
                md.extend(["", output_floor(res["raw"])])
            md.extend(["", f"### window {window:,}", "", *table(res, window)])
            md.extend(["", *dollars_table(res)])
            if by_length := by_length_table(res, window):
                md.extend(["", *by_length])
    tool_sets: dict[str, Sequence[Mapping[str, Any]]] = {
        "example (16 tools shaped like a file-system and an issue-tracker MCP server)": (
            example_tools()
        )
    }
    if args.tools:
        tool_sets[args.tools.name] = json.loads(args.tools.read_text("utf-8"))
    requests = sum(
        1 for s in sessions for i, m in enumerate(s.messages) if i and m["role"] == "assistant"
    )
    md.extend(
        [
            "",
            "## Tool definitions on demand",
            "",
            "Tokens of the tool definitions sent with each request, whole and on demand (stubs "
            "and describe_tool), saved over every request of the sessions above, less nothing "
            "loaded (these sessions call bash only; each definition the model loads costs its "
            "tokens once, in the conversation).",
            "",
            *tools_on_demand_table(counter, requests, tool_sets),
        ]
    )
    text = "\n".join(md)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.md").write_text(text + "\n", encoding="utf-8")
    frontier_plot(results, args.out / f"{args.name}_frontier.png")
    (args.out / f"{args.name}.json").write_text(
        json.dumps({"data": str(args.data), "windows": windows, "results": results}, indent=1)
        + "\n",
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
