"""JSON payloads (APIs, MCP tools): the fields the goal needs, arrays collapsed to their first
items, their errors and their outliers with a count; ids, timestamps and pagination metadata
dropped unless the goal names them. The result is still valid JSON."""

from __future__ import annotations

import json
import re
from typing import Any

from .._internal.arguments import MAX_NESTING, tokens
from .._internal.jsontext import read_json
from ._base import MAX_LINE_CHARS, Extract, ToolOutput, cut_middle

__all__ = ["JSONPayloadFilter"]

_NOISE_KEY = re.compile(
    r"^(id|_id|uuid|guid|node_id|etag|e_tag|cursor|next|prev|previous|next_cursor|next_page|"
    r"prev_page|page|per_page|page_size|total_pages|offset|limit|links|_links|href|self|"
    r"created_at|updated_at|created|updated|modified|modified_at|timestamp|ts|date|"
    r"last_modified|etag|request_id|trace_id|span_id|avatar_url|gravatar_id|\w+_url|"
    r"\w+_at|\w+_id|\w+_ids|url|uri)$",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
# The pieces of a map's key, and of the goal, matched against each other.
_PIECE = re.compile(r"[a-z0-9]+")
_ERRORISH = re.compile(r"error|fail|invalid|denied|exception|warning|critical", re.IGNORECASE)
# A key a json_path names as .key; any other is named ['key'], unless it holds what ends that.
_PATH_KEY = re.compile(r"[A-Za-z_][\w-]*")


def _named(key: str, output: ToolOutput) -> bool:
    """Whether the goal names ``key`` (ids and short keys too)."""
    goal = output.goal or ""
    return bool(goal) and re.search(rf"\b{re.escape(key)}\b", goal, re.IGNORECASE) is not None


class JSONPayloadFilter:
    """A JSON payload: noise keys dropped (ids, timestamps, URLs, pagination) unless the goal
    names them; each array longer than ``max_items`` keeps its first items, the items that
    look like errors and numeric outliers, then a string saying how many were left out. An
    object with more than ``max_keys`` keys is a map (package names, ids or paths to values)
    rather than a record, and is shortened as an array is, its last key saying how many were
    left out. A list or object nested deeper than 100 levels is replaced by a string naming
    its ``json_path`` in the original. The values kept are the original values; the result is
    re-serialised compactly.

    Args:
        max_items: Items an array keeps, and entries a map keeps (the goal's and errors may
            add a few).
        max_keys: Keys an object may have (noise fields left out) and be kept whole as a
            record. A record of an API rarely has more than a few dozen once its noise fields
            are dropped (GitHub's repository object keeps 35 of its 80); a lockfile's
            ``packages`` or a map of ids has thousands.
        max_string_chars: A string longer than this (base64 data, a whole file) keeps its
            start and end around a note of the characters hidden.

    Example:
        >>> from ctxpack.filters import ToolOutput
        >>> doc = {"items": [{"id": i, "name": f"n{i}", "status": "ok"} for i in range(50)],
        ...        "next_cursor": "abc"}
        >>> doc["items"][40]["status"] = "error: quota"
        >>> slim = JSONPayloadFilter(max_items=2).extract(ToolOutput(json.dumps(doc))).text
        >>> json.loads(slim)["items"][1:]
        [{'name': 'n1', 'status': 'ok'}, {'name': 'n40', 'status': 'error: quota'},
         '[… 47 more items hidden]']
    """

    kind = "json"

    def __init__(
        self, *, max_items: int = 5, max_keys: int = 50, max_string_chars: int = MAX_LINE_CHARS
    ) -> None:
        self.max_items = tokens(max_items, "max_items", unit="items")
        self.max_keys = tokens(max_keys, "max_keys", unit="keys")
        self.max_string_chars = tokens(
            max_string_chars, "max_string_chars", minimum=100, unit="characters"
        )

    def __repr__(self) -> str:
        return (
            f"JSONPayloadFilter(max_items={self.max_items}, max_keys={self.max_keys}, "
            f"max_string_chars={self.max_string_chars})"
        )

    def _document(self, output: ToolOutput) -> tuple[Any, list[int]] | None:
        body, lines = output.body, output.lines
        text = "\n".join(lines if len(body) == len(lines) else [lines[i] for i in body]).strip()
        if not text or text[0] not in "[{":
            return None
        try:
            return read_json(text), body
        except ValueError:  # not JSON, or JSON too deep or with numbers too long to read
            return None

    def detect(self, output: ToolOutput, /) -> float:
        return 0.8 if self._document(output) is not None else 0.0

    def extract(self, output: ToolOutput, /) -> Extract | None:
        found = self._document(output)
        if found is None:
            return None
        document, body = found
        counts = {"keys": 0, "items": 0, "entries": 0, "strings": 0, "deep": 0}
        # The walk stops at MAX_NESTING levels; this guards a caller already deep in its stack.
        try:
            slim = self._slim(document, output, counts)
        except RecursionError:
            return None
        if not any(counts.values()):
            return None
        try:
            dumped = json.dumps(slim, ensure_ascii=False, separators=(",", ":"))
        except RecursionError:
            return None
        head = [output.lines[i] for i in sorted(output.envelope) if not body or i < body[0]]
        tail = [output.lines[i] for i in sorted(output.envelope) if body and i > body[-1]]
        summary = f"{counts['keys']} noise fields and {counts['items']} array items hidden"
        if counts["entries"]:
            summary += f"; {counts['entries']} entries of objects over {self.max_keys} keys hidden"
        if counts["strings"]:
            summary += (
                f"; {counts['strings']} strings over {self.max_string_chars:,} characters cut"
            )
        if counts["deep"]:
            summary += f"; {counts['deep']} values nested deeper than {MAX_NESTING} levels hidden"
        return Extract("\n".join([*head, dumped, *tail]), summary)

    def _slim(
        self, value: Any, output: ToolOutput, counts: dict[str, int], at: tuple[str | int, ...] = ()
    ) -> Any:
        if len(at) >= MAX_NESTING and isinstance(value, dict | list) and value:
            # Past this the walk would exhaust the stack (about 480 levels) and the payload
            # went whole: what lies deeper is left to the original, by its path.
            counts["deep"] += 1
            return _deep_note(value, at)
        if isinstance(value, dict):
            fields = {
                key: child
                for key, child in value.items()
                if not (_NOISE_KEY.match(key) and len(value) > 1 and not _named(key, output))
            }
            counts["keys"] += len(value) - len(fields)
            if len(fields) <= self.max_keys:
                return {
                    key: self._slim(child, output, counts, (*at, key))
                    for key, child in fields.items()
                }
            keys = list(fields)
            dumped = [json.dumps({key: fields[key]}, ensure_ascii=False) for key in keys]
            # A key is what the goal names a map's entry by (an id, a package, a path), in
            # pieces of any length or kind ("7781", "pkg-1203"): each piece the goal holds
            # counts more than a word the entry shares with it.
            said = set(_PIECE.findall((output.goal or "").lower()))
            named = [3 * len(set(_PIECE.findall(key.lower())) & said) for key in keys]
            chosen = sorted(set(self._chosen(dumped, output, named)))
            hidden = len(keys) - len(chosen)
            counts["entries"] += hidden
            out = {
                keys[i]: self._slim(fields[keys[i]], output, counts, (*at, keys[i])) for i in chosen
            }
            if hidden:
                out[f"[… {hidden} more keys hidden]"] = None
            return out
        if isinstance(value, list):
            if len(value) <= self.max_items + 1:
                return [self._slim(v, output, counts, (*at, i)) for i, v in enumerate(value)]
            chosen = self._chosen([json.dumps(v, ensure_ascii=False) for v in value], output)
            numbers = [
                (v, i)
                for i, v in enumerate(value)
                if isinstance(v, int | float) and not isinstance(v, bool)
            ]
            if numbers:
                chosen.extend(i for _, i in (min(numbers), max(numbers)))
            chosen = sorted(set(chosen))
            hidden = len(value) - len(chosen)
            counts["items"] += hidden
            kept = [self._slim(value[i], output, counts, (*at, i)) for i in chosen]
            return [*kept, f"[… {hidden} more items hidden]"]
        if isinstance(value, str) and len(value) > self.max_string_chars:
            counts["strings"] += 1
            return cut_middle(value, self.max_string_chars)
        return value

    def _chosen(
        self, dumped: list[str], output: ToolOutput, named: list[int] | None = None
    ) -> list[int]:
        """Positions an array or a map keeps, from its items or entries as JSON: the first
        ``max_items``, then up to as many again, those the goal names (``named``, a score per
        position) or shares the most words with, then those that look like errors."""
        chosen = list(range(self.max_items))
        scored = []
        for i in range(self.max_items, len(dumped)):
            words = {w.lower() for w in _WORD.findall(dumped[i])} & output.goal_words
            score = 2 * len(words) + bool(_ERRORISH.search(dumped[i]))
            if named is not None:
                score += named[i]
            if score:
                scored.append((-score, i))
        chosen.extend(i for _, i in sorted(scored)[: self.max_items])
        return chosen


def _deep_note(value: dict[str, Any] | list[Any], at: tuple[str | int, ...]) -> str:
    """The string that stands for a value nested past the walk's depth: what it is, and the
    json_path that reads it from the original when every key can be written in one."""
    n = len(value)
    what = (
        f"an object of {n} key{'s' * (n > 1)}"
        if isinstance(value, dict)
        else f"an array of {n} item{'s' * (n > 1)}"
    )
    steps = []
    for step in at:
        if isinstance(step, int):
            steps.append(f"[{step}]")
        elif _PATH_KEY.fullmatch(step):
            steps.append(f".{step}")
        elif not any(c in step for c in "'\"]"):
            steps.append(f"['{step}']")
        else:
            return f"[… {what} nested deeper than {MAX_NESTING} levels hidden]"
    return f"[… {what} nested deeper than {MAX_NESTING} levels hidden: json_path ${''.join(steps)}]"
