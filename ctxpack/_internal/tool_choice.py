"""A request's ``tool_choice``: the values each provider takes, the tool it forces, and the
tokens it adds to an OpenAI prompt. Shared by the client wrappers, which read it from a request,
and a session's render, which is told it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import ConfigError
from ..providers import Provider, tool_name
from .arguments import shown

__all__ = [
    "FORCED_FUNCTION_TOKENS",
    "NO_FUNCTION_TOKENS",
    "check_choice",
    "check_forced",
    "check_tool_choice",
    "forced_tool",
    "tool_choice_tokens",
]

# The tool_choice each provider takes. OpenAI: "none", "auto", "required", or an object (a
# function, a custom or built-in tool, allowed_tools); Anthropic: an object whose type is one
# of these (https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use).
_OPENAI_CHOICES = ("none", "auto", "required")
_ANTHROPIC_CHOICES = ("auto", "any", "tool", "none")


def check_choice(choice: Any, provider: Provider) -> None:
    """``tool_choice`` of a type or value the provider refuses, refused naming what it takes."""
    if provider == "openai":
        if isinstance(choice, Mapping) or (isinstance(choice, str) and choice in _OPENAI_CHOICES):
            return
        raise ConfigError(
            f"tool_choice: OpenAI takes 'none', 'auto', 'required' or an object naming a tool "
            f"({{'type': 'function', ...}}), got {shown(choice)}"
        )
    if not isinstance(choice, Mapping):
        raise ConfigError(
            f"tool_choice: Anthropic takes an object such as {{'type': 'auto'}}, {{'type': "
            f"'any'}} or {{'type': 'tool', 'name': ...}}, got {shown(choice)}"
        )
    if choice.get("type") not in _ANTHROPIC_CHOICES:
        raise ConfigError(
            f"tool_choice.type: Anthropic takes 'auto', 'any', 'tool', 'none', got "
            f"{shown(choice.get('type'))}"
        )


def forced_tool(choice: Any) -> str | None:
    """The tool a request's ``tool_choice`` forces, by name: Chat Completions'
    ``{"type": "function", "function": {"name": ...}}``, the Responses API's
    ``{"type": "function", "name": ...}`` or Anthropic's ``{"type": "tool", "name": ...}``;
    ``None`` for any other choice (``"auto"``, ``"required"``, Anthropic's ``{"type": "any"}``:
    the model may then call ``describe_tool`` first)."""
    if not isinstance(choice, Mapping) or choice.get("type") not in ("function", "tool"):
        return None
    function = choice.get("function")
    name = function.get("name") if isinstance(function, Mapping) else choice.get("name")
    return name if isinstance(name, str) and name else None


# What OpenAI adds to the prompt for a request that forces a function: the name plus 4, and 1
# for one that allows none (openai-chat-tokens' prompt counts, checked against the API for
# function_call=, which tool_choice replaced; counted alike, so that a request is never short).
FORCED_FUNCTION_TOKENS = 4
NO_FUNCTION_TOKENS = 1


def tool_choice_tokens(choice: Any, count: Callable[[str], int]) -> int:
    """The tokens an OpenAI request's ``tool_choice`` adds to its prompt, ``count`` counting a
    text: a forced function's name and 4, 1 for ``"none"``, else 0."""
    if choice == "none":
        return NO_FUNCTION_TOKENS
    name = forced_tool(choice)
    return 0 if name is None else count(name) + FORCED_FUNCTION_TOKENS


def check_tool_choice(choice: Any, tools: Iterable[Any]) -> str | None:
    """The tool ``choice`` forces (see :func:`forced_tool`), which must be one of ``tools``
    (the request's and the session's, as sent): both providers refuse a request forcing a
    tool it does not define, or making the model call some tool (OpenAI's ``"required"``,
    Anthropic's ``{"type": "any"}``) with none sent."""
    tools = list(tools)
    some = choice == "required" or (isinstance(choice, Mapping) and choice.get("type") == "any")
    if some and not tools:
        raise ConfigError(
            f"tool_choice: {shown(choice)} makes the model call a tool, and the request sends "
            "no tools (the provider refuses it); give tools, or leave tool_choice out"
        )
    return check_forced(forced_tool(choice), tools)


def check_forced(forced: str | None, tools: Iterable[Any]) -> str | None:
    """``forced``, the name of the tool a request's ``tool_choice`` forces (``None``: none),
    if it is one of ``tools``; a ``ConfigError`` naming the tools sent if not."""
    if forced is None:
        return None
    names = [name for name in map(tool_name, tools) if isinstance(name, str)]
    if forced not in names:
        sent = ", ".join(map(repr, names)) if names else "no tools"
        raise ConfigError(
            f"tool_choice: forces the tool {forced!r}, which the request does not send (it "
            f"sends {sent}); name one of them, or add its definition to tools"
        )
    return forced
