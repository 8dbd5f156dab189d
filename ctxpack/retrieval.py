"""Reading originals back: :func:`read_artifact` and the retrieve tool the main model calls.

A filtered tool output ends with a marker naming its artifact. When the retrieve tool is offered
to the model, the marker says how to call it; the handler answers the call from the artifact
store, a page at a time. What the tool returns is an original: a session never filters it again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pydantic import ConfigDict

from ._internal.arguments import flag, optional_text, shown, string, type_name
from ._internal.options import FieldErrorModel
from ._internal.regex_search import grep
from .errors import ArtifactNotFoundError, ConfigError
from .filters import RETRIEVE_TOOL_NAME
from .providers import Provider, check_provider, strict_schema, tool_call_parts, tool_definition
from .redaction import redact
from .sdk import SDKObject, coerce_tool_call, is_sdk_object
from .store import ArtifactStore, check_artifact_store, get_original

__all__ = [
    "RETRIEVE_TOOL_NAME",
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


def retrieve_tool(provider: Provider = "openai", *, strict: bool = False) -> dict[str, Any]:
    """The retrieve tool's definition, to put in the request's ``tools``.

    Args:
        provider: ``"openai"`` (Chat Completions function tool) or ``"anthropic"``.
        strict: OpenAI's strict variant (every argument required, ``null`` for one left out),
            for a request that takes strict function tools only (``chat.completions.parse``).

    Example:
        >>> retrieve_tool()["function"]["name"]
        'retrieve_original'
        >>> sorted(retrieve_tool("anthropic"))
        ['description', 'input_schema', 'name']
    """
    provider = check_provider(provider)
    strict = flag(strict, "strict") and provider == "openai"  # Anthropic's is the same either way
    parameters = json.loads(json.dumps(_PARAMETERS))  # a copy the caller may change
    schema = strict_schema(parameters) if strict else parameters
    tool = tool_definition(RETRIEVE_TOOL_NAME, _DESCRIPTION, schema, provider)
    if strict:
        tool["function"]["strict"] = True
    return tool


def _arguments(call: Mapping[str, Any] | str) -> dict[str, Any]:
    """The arguments of an OpenAI tool call, an Anthropic ``tool_use`` block, a Responses API
    ``function_call`` item, or a JSON string."""
    if isinstance(call, str):
        raw: Any = call
    elif (parts := tool_call_parts(call)) is not None:
        name, raw = parts
        if name != RETRIEVE_TOOL_NAME:
            raise ConfigError(f"this call is to {shown(name)}, not to {RETRIEVE_TOOL_NAME!r}")
    else:
        raw = dict(call)
    if isinstance(raw, str):
        try:
            raw = json.loads(raw or "{}")
        except json.JSONDecodeError as exc:
            raise ValueError(f"the arguments are not valid JSON ({exc.msg})") from exc
        except (ValueError, RecursionError) as exc:
            # Numbers of thousands of digits, arrays nested thousands deep.
            raise ValueError(f"the arguments cannot be read ({_clipped(str(exc), 120)})") from exc
    if not isinstance(raw, Mapping):
        raise ValueError("the arguments must be a JSON object")
    # The strict tool's model sends every argument, null for the ones it leaves out.
    return {key: value for key, value in raw.items() if value is not None}


def coerce_call(call: object) -> Mapping[str, Any] | str:
    """``call`` as a dict (an SDK's object turned into its dict) or a JSON string.

    Raises:
        ConfigError: ``call`` is neither a tool call, an SDK's object for one, nor its
            arguments, or it is an OpenAI tool call without its ``function``: a bug in the
            caller, not the model's mistake.
    """
    if not isinstance(call, (Mapping, str)) and not is_sdk_object(call):
        raise ConfigError(
            "call must be the model's tool call (an OpenAI tool call, an Anthropic tool_use "
            f"block, or the SDK's object for either) or its arguments, got "
            f"{type(call).__name__}"
        )
    coerced: Mapping[str, Any] | str = coerce_tool_call(call)
    if isinstance(coerced, Mapping) and coerced.get("type") == "function":
        function = coerced.get("function")
        if not isinstance(function, Mapping):
            # An OpenAI tool call without its function: the model never writes that envelope,
            # so the caller built it wrong, and an answer to the model could not fix it.
            raise ConfigError(
                "call.function must be an object with the name and arguments of the tool "
                f"called, got {type_name(function)}"
            )
    return coerced


def handle_retrieve_call(
    store: ArtifactStore,
    call: Mapping[str, Any] | SDKObject | str,
    *,
    redact_secrets: bool = True,
) -> str:
    """Answer the model's call to the retrieve tool from ``store``.

    A ``null`` argument is read as absent (the strict tool's model sends ``null`` for those it
    leaves out). The model is the caller here, and it may be steered by what it read: every bad
    argument (an unknown id, a malformed or out-of-range line range, a regex that is invalid,
    too long or too slow, too much context, a JSON path into JSON too deep, a page past the end) is
    answered in words starting with ``error:``, so that the model can correct its call; none
    raises, and none takes much over :data:`REGEX_TIME_LIMIT` seconds per megabyte read.

    Args:
        store: Where the originals are.
        call: An OpenAI tool call (``{"id", "type": "function", "function": {"name",
            "arguments"}}``), an Anthropic ``tool_use`` block, a Responses API
            ``function_call`` item, the SDKs' own objects for them
            (``message.tool_calls[0]``, a ``ToolUseBlock``), the arguments as a dict, or
            their JSON.
        redact_secrets: Replace the secrets in the answer by ``[REDACTED kind]`` (see
            :mod:`ctxpack.redaction`), whatever the store holds.

    Returns:
        The text to send back as the tool result: a header line, then the page.

    Raises:
        ConfigError: the call is to another tool (a bug in the caller's dispatch), ``call`` is
            not a call at all, or ``store`` is not an :class:`~ctxpack.store.ArtifactStore`.

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
    redacting = flag(redact_secrets, "redact_secrets")  # None would have shown the secrets
    return _answer_retrieve_call(store, call, _by_rules if redacting else None)


def _by_rules(text: str) -> str:
    return redact(text).text


def _answer_retrieve_call(
    store: ArtifactStore,
    call: Mapping[str, Any] | SDKObject | str,
    redactor: Callable[[str], str] | None,
) -> str:
    """:func:`handle_retrieve_call`, the answer redacted by ``redactor`` (none if ``None``):
    a session's redacts the values it found too."""
    check_artifact_store(store)
    coerced = coerce_call(call)
    try:
        args = _arguments(coerced)
    except ValueError as exc:
        if isinstance(exc, ConfigError) and "this call is to" in str(exc):
            raise
        return f"error: {exc}; call {RETRIEVE_TOOL_NAME} with a JSON object of arguments"
    artifact = args.pop("artifact", None)
    if artifact is None or artifact == "":
        return "error: the artifact argument is required (the art_... id a marker names)"
    if not isinstance(artifact, str):
        return f"error: artifact must be a string, an art_... id, got {type_name(artifact)}"
    unknown = sorted(map(repr, set(args) - set(_PARAMETERS["properties"])))
    if unknown:
        named = _clipped(", ".join(unknown), 200)
        return f"error: unknown argument(s) {named}; valid: {', '.join(_PARAMETERS['properties'])}"
    try:
        answer = _read_artifact_with(store, artifact, redactor, max_chars=8_000, **args).render()
    except (ArtifactNotFoundError, ConfigError) as exc:
        return f"error: {_clipped(str(exc))}"
    except (ValueError, TypeError, RecursionError) as exc:
        # What the checks did not foresee (say, a number too long to print) is still the
        # arguments' fault: answered, never raised.
        return f"error: the arguments cannot be used ({_clipped(str(exc), 200)})"
    # The header echoes the model's own arguments: redacted too.
    return answer if redactor is None else redactor(answer)


def _clipped(text: str, limit: int = 500) -> str:
    # An error echoes the model's arguments: a megabyte of them is not worth sending back.
    return text if len(text) <= limit else text[:limit] + f"... ({len(text) - limit} more chars)"


# ---------------------------------------------------------------------------- reading

MAX_PAGE_CHARS = 50_000
"""The largest page :func:`read_artifact` returns, whatever ``max_chars`` asks for."""

MAX_CONTEXT = 200
"""The most context lines :func:`read_artifact` shows around a regex match."""

MAX_REGEX_CHARS = 1_000
"""The longest regex :func:`read_artifact` accepts."""

REGEX_TIME_LIMIT = 0.25
"""Seconds of CPU time a regex search may take per megabyte of the artifact it reads, and at
least this on a smaller one, before it is abandoned: a pattern that backtracks without end stops
soon, and a plain search through a large artifact still finishes on a busy machine (the time
the search waits for a core is not counted)."""

_MAX_LINE_DIGITS = 9  # line numbers beyond a billion are a mistake, not a file
_MAX_JSON_STEPS = 100


class Retrieval(FieldErrorModel):
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
        if len(lines) != 2 or not all(
            isinstance(n, int) and not isinstance(n, bool) for n in lines
        ):
            raise ConfigError(f"lines={lines!r}: a tuple of lines is (start, end), two ints")
        start, end = lines
    else:
        if isinstance(lines, bool) or not isinstance(lines, str | int):
            raise ConfigError(
                f"lines must be a string such as '120-180', got {type(lines).__name__}"
            )
        digits = f"(\\d{{1,{_MAX_LINE_DIGITS}}})"
        text = lines if isinstance(lines, str) else shown(lines)
        match = re.fullmatch(rf"\s*{digits}\s*(?:[-:,]\s*{digits}?\s*)?", text[:100])
        if match is None:
            raise ConfigError(
                f"lines={_clipped(shown(lines), 80)}: expected 'START-END' (1-based, inclusive, "
                "e.g. '120-180'), 'START-' for the rest, or a single line number (at most "
                f"{_MAX_LINE_DIGITS} digits each)"
            )
        start = int(match[1])
        end = (
            int(match[2])
            if match[2]
            else (total if match[0].strip().endswith(("-", ":", ",")) else start)
        )
    if start < 1 or end < start:
        raise ConfigError(f"lines={lines!r}: need 1 <= start <= end (lines count from 1)")
    if start > total:
        raise ConfigError(
            f"lines={lines!r} starts past the end: the artifact has {total} "
            f"line{'s' if total != 1 else ''} "
            f"(ask for lines up to {total})"
        )
    return start, min(end, total)


_PATH_TOKEN = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+|\*)\]|\[\s*['\"](.*?)['\"]\s*\]|\.\*")


def _json_steps(path: str) -> list[str | int | None]:
    """``$.a.b[0]['c d'][*]`` -> ``["a", "b", 0, "c d", None]`` (``None`` is a wildcard)."""
    if not isinstance(path, str):
        raise ConfigError(f"json_path must be a string such as '$.items[0]', got {shown(path)}")
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
        if len(steps) > _MAX_JSON_STEPS:
            raise ConfigError(f"json_path has more than {_MAX_JSON_STEPS} steps")
    return steps


def _walk(value: Any, steps: list[str | int | None]) -> Iterator[Any]:
    """The values ``steps`` lead to from ``value``, in document order (iteratively: a path runs
    as deep as the document, and the document may be deeper than Python's stack)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if depth == len(steps):
            yield node
            continue
        step = steps[depth]
        if step is None:
            children = (
                list(node.values())
                if isinstance(node, dict)
                else node
                if isinstance(node, list)
                else []
            )
            stack.extend((child, depth + 1) for child in reversed(children))
        elif isinstance(step, int):
            if isinstance(node, list) and -len(node) <= step < len(node):
                stack.append((node[step], depth + 1))
        elif isinstance(node, dict) and step in node:
            stack.append((node[step], depth + 1))


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
    redact_secrets: bool = False,
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
        redact_secrets: Replace the artifact's secrets (see :mod:`ctxpack.redaction`) before
            anything is selected: a part (a private key's middle lines, half a token at a
            page's end) hides no secret from the redaction of the whole, and a regex matches
            the placeholders, not the secrets.

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
    return _read_artifact_with(
        store,
        artifact,
        _by_rules if flag(redact_secrets, "redact_secrets") else None,
        lines=lines,
        regex=regex,
        context=context,
        json_path=json_path,
        page=page,
        max_chars=max_chars,
    )


def _read_artifact_with(
    store: ArtifactStore,
    artifact: str,
    redactor: Callable[[str], str] | None,
    *,
    lines: str | tuple[int, int] | None = None,
    regex: str | None = None,
    context: int = 2,
    json_path: str | None = None,
    page: int = 1,
    max_chars: int = 8_000,
) -> Retrieval:
    """:func:`read_artifact`, the whole artifact redacted by ``redactor`` (if any) before
    anything is selected."""
    _check_read(store, artifact, lines, regex, json_path, page, max_chars, context)
    max_chars = min(max_chars, MAX_PAGE_CHARS)
    text = get_original(store, artifact)
    if redactor is not None:
        text = redactor(text)
    all_lines = text.split("\n")
    total = len(all_lines)
    selected, selector, matches = _selection(
        text, all_lines, artifact, lines, regex, context, json_path
    )
    pages = _pages(selected, max_chars)
    if page > len(pages):
        raise ConfigError(
            f"page={shown(page)} is past the end: the selection has {len(pages)} pages"
        )
    return Retrieval(
        artifact=artifact,
        selector=selector,
        text="\n".join(pages[page - 1]),
        page=page,
        pages=len(pages),
        total_lines=total,
        matches=matches,
    )


def _selection(
    text: str,
    all_lines: list[str],
    artifact: str,
    lines: str | tuple[int, int] | None,
    regex: str | None,
    context: int,
    json_path: str | None,
) -> tuple[list[str], str, int | None]:
    """The lines a read selects, how the header names the selector, and the matches found."""
    if lines is not None:
        start, end = _line_range(lines, len(all_lines))
        return all_lines[start - 1 : end], f"lines {start}-{end}", None
    if regex is not None:
        selected, matches = grep(all_lines, regex, context, _regex_seconds(len(text)))
        return selected, f"regex {regex!r} ({context} lines of context)", matches
    if json_path is not None:
        selected, matches = _json_select(text, json_path, artifact)
        return selected, f"json path {json_path}", matches
    return all_lines, "whole", None


def _regex_seconds(chars: int) -> float:
    # Grows with the artifact: a plain search through a large log outlasts a fixed budget (the
    # timeout of each line's search costs a system call).
    return REGEX_TIME_LIMIT * max(1.0, chars / 1_000_000)


def _check_read(
    store: object,
    artifact: object,
    lines: object,
    regex: object,
    json_path: object,
    page: int,
    max_chars: int,
    context: int,
) -> None:
    """Refuse :func:`read_artifact`'s arguments that are out of range or conflict."""
    check_artifact_store(store)
    string(artifact, "artifact")
    chosen = [
        name
        for name, v in (("lines", lines), ("regex", regex), ("json_path", json_path))
        if v is not None
    ]
    if len(chosen) > 1:
        raise ConfigError(f"give at most one of lines, regex and json_path, not {chosen}")
    if isinstance(page, bool) or not isinstance(page, int) or page < 1:
        raise ConfigError(f"page must be an int >= 1, got {_clipped(shown(page), 80)}")
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise ConfigError(f"max_chars must be a positive int, got {_clipped(shown(max_chars), 80)}")
    if isinstance(context, bool) or not isinstance(context, int) or context < 0:
        raise ConfigError(f"context must be an int >= 0, got {_clipped(shown(context), 80)}")
    if context > MAX_CONTEXT:
        raise ConfigError(
            f"context={shown(context)} is more than {MAX_CONTEXT} lines; ask for less context, "
            "or read a line range with lines='START-END'"
        )
    optional_text(regex, "regex")
    optional_text(json_path, "json_path")
    if isinstance(regex, str) and len(regex) > MAX_REGEX_CHARS:
        raise ConfigError(f"regex is {len(regex)} characters long; the limit is {MAX_REGEX_CHARS}")


def _json_select(text: str, json_path: str, artifact: str) -> tuple[list[str], int]:
    """What ``json_path`` finds in the JSON ``text``, indented, as lines; and how many values."""
    steps = _json_steps(json_path)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"json_path needs an artifact that is JSON; {artifact} is not ({exc.msg} at line "
            f"{exc.lineno}); use lines= or regex= instead"
        ) from exc
    except RecursionError as exc:
        raise ConfigError(_TOO_DEEP.format(artifact=artifact)) from exc
    except ValueError as exc:  # a number longer than Python reads
        raise ConfigError(
            f"json_path needs an artifact whose JSON can be read; {artifact} cannot be ({exc}); "
            "use lines= or regex= instead"
        ) from exc
    found = list(_walk(document, steps))
    dumped = found[0] if len(found) == 1 else found
    try:
        shown = json.dumps(dumped, indent=1, ensure_ascii=False)
    except RecursionError as exc:
        raise ConfigError(_TOO_DEEP.format(artifact=artifact)) from exc
    return shown.split("\n"), len(found)


_TOO_DEEP = (
    "{artifact} is JSON nested too deep to read or show whole; give a json_path that goes "
    "deeper (such as $.a.b), or use lines= or regex= instead"
)
