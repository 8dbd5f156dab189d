"""Reading originals back: :func:`read_artifact` and the retrieve tool the main model calls.

A filtered tool output ends with a marker naming its artifact. When the retrieve tool is offered
to the model, the marker says how to call it; the handler answers the call from the artifact
store, a page at a time. What the tool returns is an original: a session never filters it again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .errors import ArtifactNotFoundError, ConfigError
from .filters import RETRIEVE_TOOL_NAME
from .sdk import SDKObject, coerce_tool_call
from .store import ArtifactStore

__all__ = [
    "MAX_PAGE_CHARS",
    "RETRIEVE_TOOL_NAME",
    "Retrieval",
    "handle_retrieve_call",
    "read_artifact",
    "retrieve_tool",
]

_DESCRIPTION = (
    "Read the original of a tool output that was shortened. Shortened outputs end with "
    "'[ctxpack: ... artifact art_...]'. Give the artifact id and at most one of: lines "
    "('120-180', 1-based, as the '[… N lines hidden: A-B]' notes number them), regex (lines "
    "matching it, with context lines around), json_path ('$.items[0].name'). Long answers come "
    "in pages: ask for the next page with page=2, 3..."
)

_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "artifact": {"type": "string", "description": "The artifact id, art_ and 16 hex digits."},
        "lines": {"type": "string", "description": "A line range: '120-180', '120-' or '120'."},
        "regex": {"type": "string", "description": "A Python regular expression."},
        "context": {
            "type": "integer",
            "description": "Lines shown around each regex match (default 2).",
        },
        "json_path": {"type": "string", "description": "A path such as $.items[*].id."},
        "page": {"type": "integer", "description": "The page to read, from 1 (default 1)."},
    },
    "required": ["artifact"],
}


def retrieve_tool(provider: Literal["openai", "anthropic"] = "openai") -> dict[str, Any]:
    """The retrieve tool's definition, to put in the request's ``tools``.

    Args:
        provider: ``"openai"`` (Chat Completions function tool) or ``"anthropic"``.

    Example:
        >>> retrieve_tool()["function"]["name"]
        'retrieve_original'
        >>> sorted(retrieve_tool("anthropic"))
        ['description', 'input_schema', 'name']
    """
    parameters = json.loads(json.dumps(_PARAMETERS))  # a copy the caller may change
    if provider == "openai":
        return {
            "type": "function",
            "function": {
                "name": RETRIEVE_TOOL_NAME,
                "description": _DESCRIPTION,
                "parameters": parameters,
            },
        }
    if provider == "anthropic":
        return {"name": RETRIEVE_TOOL_NAME, "description": _DESCRIPTION, "input_schema": parameters}
    raise ConfigError(f"provider must be 'openai' or 'anthropic', got {provider!r}")


def _arguments(call: Mapping[str, Any] | str) -> dict[str, Any]:
    """The arguments of an OpenAI tool call, an Anthropic ``tool_use`` block, a Responses API
    ``function_call`` item, or a JSON string."""
    if isinstance(call, str):
        raw: Any = call
    elif "function" in call and isinstance(call["function"], Mapping):
        name = call["function"].get("name")
        if name != RETRIEVE_TOOL_NAME:
            raise ConfigError(f"this call is to {name!r}, not to {RETRIEVE_TOOL_NAME!r}")
        raw = call["function"].get("arguments", "{}")
    elif call.get("type") in ("tool_use", "function_call"):
        if call.get("name") != RETRIEVE_TOOL_NAME:
            raise ConfigError(
                f"this call is to {call.get('name')!r}, not to {RETRIEVE_TOOL_NAME!r}"
            )
        raw = call.get("input", {}) if call["type"] == "tool_use" else call.get("arguments")
    else:
        raw = dict(call)
    if isinstance(raw, str):
        try:
            raw = json.loads(raw or "{}")
        except json.JSONDecodeError as exc:
            raise ValueError(f"the arguments are not valid JSON ({exc.msg})") from exc
    if not isinstance(raw, Mapping):
        raise ValueError("the arguments must be a JSON object")
    return dict(raw)


def handle_retrieve_call(store: ArtifactStore, call: Mapping[str, Any] | SDKObject | str) -> str:
    """Answer the model's call to the retrieve tool from ``store``.

    The model's mistakes (an unknown id, a bad range or regex, a page past the end) are
    answered in words, so that the model can correct its call; they do not raise.

    Args:
        store: Where the originals are.
        call: An OpenAI tool call (``{"id", "type": "function", "function": {"name",
            "arguments"}}``), an Anthropic ``tool_use`` block, a Responses API
            ``function_call`` item, the SDKs' own objects for them
            (``message.tool_calls[0]``, a ``ToolUseBlock``), the arguments as a dict, or
            their JSON.

    Returns:
        The text to send back as the tool result: a header line, then the page.

    Raises:
        ConfigError: the call is to another tool (a bug in the caller's dispatch).

    Example:
        >>> from ctxpack.store import SQLiteArtifactStore
        >>> store = SQLiteArtifactStore()
        >>> ref = store.put("a\\nb\\nc")
        >>> print(handle_retrieve_call(store, {"artifact": ref, "lines": "2-3"}))
        [art_...: lines 2-3, 3 lines in all]
        b
        c
        >>> handle_retrieve_call(store, {"artifact": "art_0"})
        "error: no artifact 'art_0' ...
    """
    try:
        args = _arguments(coerce_tool_call(call))
    except ValueError as exc:
        if isinstance(exc, ConfigError) and "this call is to" in str(exc):
            raise
        return f"error: {exc}; call {RETRIEVE_TOOL_NAME} with a JSON object of arguments"
    artifact = args.pop("artifact", None)
    if not isinstance(artifact, str) or not artifact:
        return "error: the artifact argument is required (the art_... id a marker names)"
    known = {"lines", "regex", "context", "json_path", "page"}
    unknown = sorted(set(args) - known)
    if unknown:
        return f"error: unknown arguments {unknown}; valid ones are artifact, {sorted(known)}"
    try:
        return read_artifact(store, artifact, max_chars=8_000, **args).render()
    except ArtifactNotFoundError as exc:
        return f"error: {exc}"
    except (ConfigError, TypeError) as exc:
        return f"error: {exc}"


# ---------------------------------------------------------------------------- reading

MAX_PAGE_CHARS = 50_000
"""The largest page :func:`read_artifact` returns, whatever ``max_chars`` asks for."""


class Retrieval(BaseModel):
    """One page of an artifact, as :func:`read_artifact` read it.

    Attributes:
        artifact: The artifact's id.
        selector: What was asked for, in words (``"lines 10-40"``, ``"regex 'Error' (3 lines of
            context)"``, ``"json path $.items[0]"``, ``"whole"``).
        text: The page: verbatim lines for a line range or the whole artifact; for a regex, the
            matching lines and their context as ``grep -n`` prints them (``12:match``,
            ``11-context``, ``--`` between groups); for a JSON path, the matches as JSON.
        page: This page's number, from 1.
        pages: How many pages the selection fills.
        total_lines: Lines in the whole artifact.
        matches: Matching lines (regex) or values (JSON path); ``None`` otherwise.
    """

    model_config = ConfigDict(frozen=True)

    artifact: str
    selector: str
    text: str
    page: int
    pages: int
    total_lines: int
    matches: int | None = None

    def render(self) -> str:
        """The page with a one-line header saying what it is and how to get the next page,
        as a retrieve tool answers the model."""
        head = f"[{self.artifact}: {self.selector}, {self.total_lines} lines in all"
        if self.matches is not None:
            head += f", {self.matches} matches"
        if self.pages > 1:
            head += f"; page {self.page} of {self.pages}"
            if self.page < self.pages:
                head += f", ask for page={self.page + 1} for more"
        return head + "]\n" + self.text


def _line_range(lines: str | tuple[int, int], total: int) -> tuple[int, int]:
    if isinstance(lines, tuple):
        start, end = lines
    else:
        match = re.fullmatch(r"\s*(\d+)\s*(?:[-:,]\s*(\d*)\s*)?", str(lines))
        if match is None:
            raise ConfigError(
                f"lines={lines!r}: expected 'START-END' (1-based, inclusive, e.g. '120-180'), "
                "'START-' for the rest, or a single line number"
            )
        start = int(match[1])
        end = (
            int(match[2])
            if match[2]
            else (total if match[0].strip().endswith(("-", ":", ",")) else start)
        )
    if start < 1 or end < start:
        raise ConfigError(f"lines={lines!r}: need 1 <= start <= end (lines count from 1)")
    return start, min(end, max(total, 1))


_PATH_TOKEN = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+|\*)\]|\[\s*['\"](.*?)['\"]\s*\]|\.\*")


def _json_steps(path: str) -> list[str | int | None]:
    """``$.a.b[0]['c d'][*]`` -> ``["a", "b", 0, "c d", None]`` (``None`` is a wildcard)."""
    rest = path.strip()
    if rest.startswith("$"):
        rest = rest[1:]
    steps: list[str | int | None] = []
    pos = 0
    while pos < len(rest):
        match = _PATH_TOKEN.match(rest, pos)
        if match is None:
            raise ConfigError(
                f"json_path={path!r}: cannot read {rest[pos:]!r}; use $.key, [index], ['key'] "
                "and [*] (for example $.items[0].name or $.items[*].id)"
            )
        if match[1] is not None:
            steps.append(match[1])
        elif match[2] is not None:
            steps.append(None if match[2] == "*" else int(match[2]))
        elif match[3] is not None:
            steps.append(match[3])
        else:
            steps.append(None)
        pos = match.end()
    return steps


def _walk(value: Any, steps: list[str | int | None]) -> Iterator[Any]:
    if not steps:
        yield value
        return
    step, rest = steps[0], steps[1:]
    if step is None:
        children = (
            value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        )
        for child in children:
            yield from _walk(child, rest)
    elif isinstance(step, int):
        if isinstance(value, list) and -len(value) <= step < len(value):
            yield from _walk(value[step], rest)
    elif isinstance(value, dict) and step in value:
        yield from _walk(value[step], rest)


def _pages(lines: list[str], max_chars: int) -> list[list[str]]:
    """Whole lines per page while they fit; a line longer than a page is cut into pieces."""
    pages: list[list[str]] = [[]]
    size = 0
    for line in lines:
        pieces = [line[i : i + max_chars] for i in range(0, len(line), max_chars)] or [""]
        for piece in pieces:
            if pages[-1] and size + len(piece) + 1 > max_chars:
                pages.append([])
                size = 0
            pages[-1].append(piece)
            size += len(piece) + 1
    return pages


def read_artifact(
    store: ArtifactStore,
    artifact: str,
    *,
    lines: str | tuple[int, int] | None = None,
    regex: str | None = None,
    context: int = 2,
    json_path: str | None = None,
    page: int = 1,
    max_chars: int = 8_000,
) -> Retrieval:
    r"""Read an artifact whole or in part, one page at a time, from any :class:`ArtifactStore`.

    At most one selector: ``lines`` (a 1-based inclusive range), ``regex`` (matching lines with
    ``context`` lines around them), or ``json_path`` (``$.key``, ``[index]``, ``['key']``,
    ``[*]``); none reads the whole artifact. The selection is cut into pages of at most
    ``max_chars`` characters (never more than :data:`MAX_PAGE_CHARS`), on line boundaries.

    Args:
        store: Where the artifact is.
        artifact: Its id.
        lines: ``"120-180"``, ``"120-"`` (to the end), ``"120"`` or ``(120, 180)``.
        regex: A Python regular expression, searched in each line.
        context: Lines shown before and after each regex match.
        json_path: A path into an artifact that is JSON.
        page: Which page, from 1.
        max_chars: Page size cap.

    Returns:
        A :class:`Retrieval`; ``.render()`` gives the text a retrieve tool sends back.

    Raises:
        ArtifactNotFoundError: no such id in ``store``.
        ConfigError: two selectors, a malformed range, regex or path, a page out of range, or an
            artifact that is not JSON for ``json_path``.

    Example:
        >>> from ctxpack.store import SQLiteArtifactStore
        >>> store = SQLiteArtifactStore(":memory:")
        >>> ref = store.put("\n".join(f"line {i}" for i in range(1, 101)))
        >>> read_artifact(store, ref, lines="42-43").text
        'line 42\nline 43'
        >>> print(read_artifact(store, ref, regex=r"line 7\d$", context=0, max_chars=33).render())
        [art_...: regex 'line 7\\d$' (0 lines of context), 100 lines in all, 10 matches;
        page 1 of 4, ask for page=2 for more]
        70:line 70
        71:line 71
        72:line 72
    """
    _check_read(lines, regex, json_path, page, max_chars, context)
    max_chars = min(max_chars, MAX_PAGE_CHARS)
    text = store.get(artifact)
    all_lines = text.split("\n")
    total = len(all_lines)
    matches: int | None = None
    if lines is not None:
        start, end = _line_range(lines, total)
        selected = all_lines[start - 1 : end]
        selector = f"lines {start}-{end}"
    elif regex is not None:
        selected, matches = _grep(all_lines, regex, context)
        selector = f"regex {regex!r} ({context} lines of context)"
    elif json_path is not None:
        selected, matches = _json_select(text, json_path, artifact)
        selector = f"json path {json_path}"
    else:
        selected = all_lines
        selector = "whole"
    pages = _pages(selected, max_chars)
    if page > len(pages):
        raise ConfigError(f"page={page} is past the end: the selection has {len(pages)} pages")
    return Retrieval(
        artifact=artifact,
        selector=selector,
        text="\n".join(pages[page - 1]),
        page=page,
        pages=len(pages),
        total_lines=total,
        matches=matches,
    )


def _check_read(
    lines: object, regex: object, json_path: object, page: int, max_chars: int, context: int
) -> None:
    """Refuse :func:`read_artifact`'s arguments that are out of range or conflict."""
    chosen = [
        name
        for name, v in (("lines", lines), ("regex", regex), ("json_path", json_path))
        if v is not None
    ]
    if len(chosen) > 1:
        raise ConfigError(f"give at most one of lines, regex and json_path, not {chosen}")
    if isinstance(page, bool) or not isinstance(page, int) or page < 1:
        raise ConfigError(f"page must be an int >= 1, got {page!r}")
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise ConfigError(f"max_chars must be a positive int, got {max_chars!r}")
    if isinstance(context, bool) or not isinstance(context, int) or context < 0:
        raise ConfigError(f"context must be an int >= 0, got {context!r}")


def _grep(all_lines: list[str], regex: str, context: int) -> tuple[list[str], int]:
    """The lines matching ``regex`` with ``context`` lines around them, numbered as grep does
    (``12:`` a match, ``13-`` context, ``--`` between runs), and how many lines matched."""
    try:
        pattern = re.compile(regex)
    except re.error as exc:
        raise ConfigError(f"regex={regex!r} is not a valid regular expression: {exc}") from exc
    total = len(all_lines)
    hits = [i for i, line in enumerate(all_lines) if pattern.search(line)]
    shown: set[int] = set()
    for i in hits:
        shown.update(range(max(0, i - context), min(total, i + context + 1)))
    hit_set = set(hits)
    selected: list[str] = []
    previous = None
    for i in sorted(shown):
        if previous is not None and i != previous + 1:
            selected.append("--")
        selected.append(f"{i + 1}{':' if i in hit_set else '-'}{all_lines[i]}")
        previous = i
    return selected, len(hits)


def _json_select(text: str, json_path: str, artifact: str) -> tuple[list[str], int]:
    """What ``json_path`` finds in the JSON ``text``, indented, as lines; and how many values."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"json_path needs an artifact that is JSON; {artifact} is not ({exc.msg} at line "
            f"{exc.lineno}); use lines= or regex= instead"
        ) from exc
    found = list(_walk(document, _json_steps(json_path)))
    dumped = found[0] if len(found) == 1 else found
    return json.dumps(dumped, indent=1, ensure_ascii=False).split("\n"), len(found)
