"""The retrieve tool: lets the main model read the originals that filters shortened.

A filtered tool output ends with a marker naming its artifact. When the retrieve tool is offered
to the model, the marker says how to call it; the handler answers the call from the artifact
store, a page at a time. What the tool returns is an original: a session never filters it again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from .errors import ArtifactNotFoundError, ConfigError
from .filters import RETRIEVE_TOOL_NAME
from .store import ArtifactStore, read_artifact

__all__ = ["RETRIEVE_TOOL_NAME", "handle_retrieve_call", "retrieve_tool"]

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
    """The arguments of an OpenAI tool call, an Anthropic ``tool_use`` block, or a JSON string."""
    if isinstance(call, str):
        raw: Any = call
    elif "function" in call and isinstance(call["function"], Mapping):
        name = call["function"].get("name")
        if name != RETRIEVE_TOOL_NAME:
            raise ConfigError(f"this call is to {name!r}, not to {RETRIEVE_TOOL_NAME!r}")
        raw = call["function"].get("arguments", "{}")
    elif call.get("type") == "tool_use":
        if call.get("name") != RETRIEVE_TOOL_NAME:
            raise ConfigError(
                f"this call is to {call.get('name')!r}, not to {RETRIEVE_TOOL_NAME!r}"
            )
        raw = call.get("input", {})
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


def handle_retrieve_call(store: ArtifactStore, call: Mapping[str, Any] | str) -> str:
    """Answer the model's call to the retrieve tool from ``store``.

    The model's mistakes (an unknown id, a bad range or regex, a page past the end) are
    answered in words, so that the model can correct its call; they do not raise.

    Args:
        store: Where the originals are.
        call: An OpenAI tool call (``{"id", "type": "function", "function": {"name",
            "arguments"}}``), an Anthropic ``tool_use`` block, its arguments as a dict, or
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
        args = _arguments(call)
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
