"""Tool definitions on demand: names and one-line descriptions first, the full schema when asked.

Every tool definition is sent with every request, whether the model calls the tool or not. With
tools on demand, the request carries, for each tool, a stub (its name, the first line of its
description and an open parameter schema) and one more tool, ``describe_tool``, that answers with
the full definitions the model asks for. The full definition then sits in the conversation, as
a tool result, and the tools sent never change: loading a definition appends to the prompt and
keeps the prompt cache (tools come first in the cached prefix; changing them would make the cache
write everything again).

:func:`on_demand_tools` builds what to send; :func:`describe_tools` answers a ``describe_tool``
call; :func:`on_demand_saving` says how many tokens each request saves.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ._internal.arguments import shown, tool_definitions
from ._internal.jsontext import read_json
from ._internal.tool_choice import check_tool_choice, forced_tool
from .errors import ConfigError
from .providers import (
    Provider,
    anthropic_tool,
    flat_tools,
    tool_call_parts,
    tool_definition,
    tool_definition_parts,
    tools_as_sent,
)
from .retrieval import coerce_call
from .sdk import SDKObject
from .tokens import TokenCounter, check_counter, checked_tool_tokens

__all__ = [
    "on_demand_saving",
]

DESCRIBE_TOOL_NAME = "describe_tool"
_DESCRIPTION = (
    "Get the full definitions (parameters and their meaning) of the tools named. Tools whose "
    "description ends with '(parameters: describe_tool)' need this before a first call."
)
_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "names": {"type": "array", "items": {"type": "string"}, "description": "Tool names."}
    },
    "required": ["names"],
}
_STUB_NOTE = " (parameters: describe_tool)"


def _parts(tool: Mapping[str, Any], index: int) -> tuple[str, str, Any, bool]:
    """(name, description, schema, whether it is in OpenAI's shape) of a definition."""
    name, description, schema, shape = tool_definition_parts(tool)
    if not isinstance(name, str) or not name:
        raise ConfigError(
            f"tools[{index}] has no name: expected an OpenAI function tool "
            '({"type": "function", "function": {"name": ...}}) or an Anthropic tool ({"name": ...})'
        )
    return name, description if isinstance(description, str) else "", schema, shape == "openai"


def _deferred(tool: Mapping[str, Any]) -> bool:
    """Whether ``tool`` is sent as a stub: a function with a schema (OpenAI's function tool,
    Anthropic's custom tool). A provider's own tool (web search, Anthropic's dated
    ``bash_20250124``...) has no schema to defer, and as a stub would become a function the
    caller must run: the provider would no longer run it."""
    return "input_schema" in tool or tool.get("type", "function") == "function"


def _claim(seen: set[str], name: str, index: int) -> None:
    if name in seen:
        raise ConfigError(f"tools[{index}]: the name {name!r} is used twice")
    seen.add(name)


def _first_line(text: str, limit: int = 160) -> str:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _sent_whole(choice: Any) -> tuple[str, ...]:
    """The tools a request's ``tool_choice`` has the model call with no turn to ask
    ``describe_tool`` first, by name: the one it forces (see
    :func:`~ctxpack._internal.tool_choice.forced_tool`), or those of OpenAI's
    ``allowed_tools`` (see :func:`_allowed_only`); none for any other choice."""
    forced = forced_tool(choice)
    return (forced,) if forced is not None else _allowed_only(choice)


def _allowed_only(choice: Any) -> tuple[str, ...]:
    """The function tools OpenAI's ``allowed_tools`` choice limits the model to (Chat
    Completions' ``{"type": "allowed_tools", "allowed_tools": {"mode": ..., "tools": [...]}}``,
    the Responses API's ``{"type": "allowed_tools", "mode": ..., "tools": [...]}``), by name,
    unless it allows ``describe_tool``: the model can call no other, so it cannot load their
    definitions first, in either mode. Empty for any other choice."""
    if not isinstance(choice, Mapping) or choice.get("type") != "allowed_tools":
        return ()
    inner = choice.get("allowed_tools")
    listed = (inner if isinstance(inner, Mapping) else choice).get("tools")
    names = [forced_tool(t) for t in listed] if isinstance(listed, list) else []
    if DESCRIBE_TOOL_NAME in names:
        return ()
    return tuple(n for n in names if n is not None)


def on_demand_tools(
    tools: Sequence[Mapping[str, Any]], provider: Provider = "openai", *, tool_choice: Any = None
) -> list[dict[str, Any]]:
    """What to send instead of ``tools``: a stub per tool, and the ``describe_tool`` tool.

    Args:
        tools: The full definitions (OpenAI function tools or Anthropic tools). A provider's
            own tool (``{"type": "web_search"}``, Anthropic's ``web_search_20250305``) is sent
            as it is, for the provider to run.
        provider: The shape of the stubs and of ``describe_tool`` (OpenAI's in the Responses
            API's flat shape, ``strict`` off, when ``tools`` hold functions in that shape).
        tool_choice: The request's ``tool_choice``: a tool it forces, or the tools OpenAI's
            ``allowed_tools`` limits the model to (unless it allows ``describe_tool``), go
            with their full definitions, as ``Session.render(tool_choice=...)`` counts them:
            the model calls them with no turn to load a definition first.

    Raises:
        ConfigError: a definition without a name, a name used twice, a tool of yours
            named ``describe_tool``, or a ``tool_choice`` forcing a tool not in ``tools``.

    Example:
        >>> weather = {"type": "function", "function": {"name": "get_weather",
        ...     "description": "Current weather in a city.\\nUse metric units.",
        ...     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
        >>> sent = on_demand_tools([weather])
        >>> sent[0]["function"]["description"]
        'Current weather in a city. (parameters: describe_tool)'
        >>> sent[1]["function"]["name"]
        'describe_tool'
    """
    sent = _on_demand(tools, provider, _sent_whole(tool_choice))
    check_tool_choice(tool_choice, sent)
    return sent


def _on_demand(
    tools: Sequence[Mapping[str, Any]], provider: Provider, whole: Collection[str] = ()
) -> list[dict[str, Any]]:
    """:func:`on_demand_tools`, but the tools named in ``whole`` go with their full definitions:
    a request that forces a tool (``tool_choice``) has the model call it at once, with no turn
    to load its definition, so a stub's open schema would leave its arguments to guesses."""
    if provider not in ("openai", "anthropic"):
        raise ConfigError(f"provider must be 'openai' or 'anthropic', got {shown(provider)}")
    tools = tool_definitions(tools)  # a ConfigError naming the bad definition
    # The Responses API refuses a Chat Completions function: given its flat shape, the stubs
    # and describe_tool take it too.
    flat = provider == "openai" and any(
        t.get("type") == "function" and "function" not in t for t in tools
    )

    def definition(name: str, description: str, schema: Any) -> dict[str, Any]:
        sent = tool_definition(name, description, schema, provider)
        return dict(flat_tools([sent])[0]) if flat else sent

    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        if not _deferred(tool):
            built_in = tool.get("name")
            if isinstance(built_in, str):
                _claim(seen, built_in, index)  # the provider refuses two tools of one name
            out.append(dict(tool))
            continue
        name, description, _, _ = _parts(tool, index)
        _claim(seen, name, index)
        if name == DESCRIBE_TOOL_NAME:
            # Sent beside the one added below, it would make a request the provider refuses.
            raise ConfigError(
                f"tools[{index}]: the name {DESCRIBE_TOOL_NAME!r} is the tool that tools on "
                "demand adds to give the full definitions; rename yours"
            )
        if name in whole:
            # In the shape of the stubs beside it, as the provider takes it.
            if provider == "anthropic":
                out.append(anthropic_tool(tool))
            elif "function" in tool or tool.get("type") == "function":
                out.append(dict(flat_tools([tool])[0]) if flat else dict(tool))
            else:
                out.append(definition(name, description, tool.get("input_schema")))
            continue
        stub = definition(name, _first_line(description) + _STUB_NOTE, {"type": "object"})
        if provider == "anthropic" and "cache_control" in tool:
            # The caller's cache breakpoint stays where it was put: the stub stands in its place.
            stub["cache_control"] = tool["cache_control"]
        out.append(stub)
    out.append(definition(DESCRIBE_TOOL_NAME, _DESCRIPTION, json.loads(json.dumps(_PARAMETERS))))
    return out


def describe_tools(
    tools: Sequence[Mapping[str, Any]], call: Mapping[str, Any] | SDKObject | str
) -> str:
    """Answer a ``describe_tool`` call: the full definitions of the tools it names, as JSON.

    Unknown names are answered in words, with the names that exist, so that the model can
    correct its call; with known names beside them, the answer is the known definitions'
    JSON, then that line.

    Args:
        tools: The full definitions.
        call: An OpenAI tool call, an Anthropic ``tool_use`` block (either as the SDK's
            object too), its arguments, or their JSON.

    Raises:
        ConfigError: ``call`` is none of these, or a call to another tool.

    Example:
        >>> tool = {"name": "grep", "description": "Search.", "input_schema": {"type": "object"}}
        >>> describe_tools([tool], {"names": ["grep"]})
        '[{"name": "grep", "description": "Search.", "input_schema": {"type": "object"}}]'
    """
    tools = tool_definitions(tools)
    # An SDK's object read as its dict: else its arguments went unseen, and the model was told
    # it called wrongly.
    args = _arguments(coerce_call(call))
    names = args.get("names")
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return 'error: call describe_tool with {"names": ["tool_name", ...]}'
    by_name = {_parts(tool, i)[0]: tool for i, tool in enumerate(tools) if _deferred(tool)}
    known = [by_name[n] for n in names if n in by_name]
    unknown = [n for n in names if n not in by_name]
    if not unknown:
        return json.dumps(known, ensure_ascii=False)
    missing = f"no tools named {unknown}; the tools are {sorted(by_name)}"
    # The names the model got right are answered too: it need not ask for them again.
    return f"{json.dumps(known, ensure_ascii=False)}\n{missing}" if known else f"error: {missing}"


def _arguments(call: Mapping[str, Any] | str) -> dict[str, Any]:
    raw: Any = call
    parts = tool_call_parts(call) if isinstance(call, Mapping) else None
    if parts is not None:
        name, raw = parts
        if name != DESCRIBE_TOOL_NAME:
            raise ConfigError(f"this call is to {shown(name)}, not to {DESCRIBE_TOOL_NAME!r}")
    if isinstance(raw, str):
        try:
            raw = read_json(raw or "{}")
        except ValueError:
            return {}
    return dict(raw) if isinstance(raw, Mapping) else {}


def on_demand_saving(
    tools: Sequence[Mapping[str, Any]],
    counter: TokenCounter,
    provider: Provider = "openai",
) -> int:
    """Tokens each request saves by sending ``tools`` on demand (negative when it costs more:
    a few small tools are cheaper sent whole). Each definition the model then loads costs its
    tokens once, in the conversation.

    Example:
        >>> from ctxpack import get_counter
        >>> big = {"type": "function", "function": {"name": "query", "description": "Run SQL.",
        ...     "parameters": {"type": "object", "properties": {
        ...         f"option_{i}": {"type": "string", "description": "An option " * 20}
        ...         for i in range(20)}}}}
        >>> on_demand_saving([big], get_counter(counter="cl100k_base")) > 500
        True
    """
    tools = tool_definitions(tools)
    if not tools:
        return 0
    counter = check_counter(counter)
    # Both as the provider receives them (Claude takes an OpenAI function as an Anthropic
    # tool), as a session counts them.
    full = checked_tool_tokens(tools_as_sent(tools, provider), counter)
    stubs = tools_as_sent(on_demand_tools(tools, provider), provider)
    return full - checked_tool_tokens(stubs, counter)
