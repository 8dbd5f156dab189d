"""The fields beside the history of a wrapped request, checked before it is packed: those the
provider refuses whatever the history holds (``stream`` not a bool, a ``model`` that is no
name, Anthropic's ``max_tokens`` below 1 or ``betas`` not a list, a function tool in another
API's shape or a tool name given twice, a ``tool_choice`` of a type the provider does not take,
naming a tool the request does not send or asking for a tool call with none sent, more than
Anthropic's 4 ``cache_control`` breakpoints), and an ``extra_body``
that would replace what the wrapper packed. Said here, naming the argument, before a session
is given the request's messages: after, the request would fail at the provider with the
session already holding them."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from .._internal.arguments import flag, json_type_name, shown, string, strings, tokens
from .._internal.tool_choice import (
    check_choice,
    check_forced,
    check_tool_choice,
    forced_tool,
    tool_choice_tokens,
)
from ..errors import ConfigError
from ..providers import Provider, tool_name
from ..tools_on_demand import _sent_whole
from ._cache_marks import cache_marks, check_cache_marks
from ._responses_request import given

__all__ = [
    "check_fields",
    "check_forced",
    "choice_tokens",
    "forced_tool",
    "langchain_choice",
    "langchain_forced",
    "langchain_tool_definitions",
    "reply_room",
    "request_choice",
    "tools_sent_whole",
]


def check_fields(kwargs: Mapping[str, Any], provider: Provider, *, responses: bool) -> None:
    """``stream`` and ``model``, if given, are what every provider takes: a bool (the SDKs
    stream on any truthy value, and the provider refuses a string), a model's name; the
    function tools are in the shape of the API the request goes to; ``extra_body`` holds no
    field the wrapper packs or counts; Anthropic's ``betas`` are a list of names."""
    if given(kwargs.get("stream")):
        flag(kwargs["stream"], "stream")
    model = kwargs.get("model")
    # An explicit None too: the SDKs only check that model= is there, and send it as null.
    named = given(model) or ("model" in kwargs and model is None)
    if named and not string(model, "model").strip():
        raise ConfigError(f"model must be a non-empty string, got {shown(model)}")
    api = "responses" if responses else "chat" if provider == "openai" else "anthropic"
    tools = kwargs.get("tools")
    if isinstance(tools, (list, tuple)):
        for index, tool in enumerate(tools):
            _check_shape(tool, index, api)
    extra = kwargs.get("extra_body")
    extra = extra if isinstance(extra, Mapping) else {}
    for key in _PACKED[api]:
        if key in extra:
            # The SDK writes extra_body over the request it built: this one would go in place
            # of what the wrapper packed or counted, unseen by it.
            raise ConfigError(
                f"extra_body: {key!r} is a field the wrapper packs or counts, and the SDK would "
                f"send this one in its place; give it as {key}= instead"
            )
    if provider == "anthropic" and given(kwargs.get("betas")):
        strings(kwargs["betas"], "betas", what="beta names")
    if isinstance(tools, (list, tuple)):
        _check_names(tools)
    if provider == "anthropic":
        marks = sum(cache_marks(kwargs.get(key)) for key in ("system", "messages", "tools"))
        check_cache_marks(marks, "the request marks")
    if given(kwargs.get("tool_choice")):
        check_choice(kwargs["tool_choice"], provider)


def _check_names(tools: list[Any] | tuple[Any, ...]) -> None:
    """Both providers refuse a request defining one tool name twice (Anthropic's tool-use
    docs: tool names are unique within a request; OpenAI answers a duplicate with a 400)."""
    seen: dict[str, int] = {}
    for index, tool in enumerate(tools):
        name = tool_name(tool) if isinstance(tool, Mapping) else None
        if isinstance(name, str) and name in seen:
            raise ConfigError(
                f"tools[{index}]: the tool name {name!r} is given twice (tools[{seen[name]}] "
                "too), and the provider refuses a request defining a name twice; give each once"
            )
        if isinstance(name, str):
            seen[name] = index


# The fields of a request the wrapper packs, counts or refuses, by API.
_PACKED = {
    "chat": ("messages", "tools", "functions", "max_completion_tokens", "max_tokens"),
    "responses": (
        *("input", "instructions", "tools", "max_output_tokens"),
        *("previous_response_id", "conversation"),
    ),
    "anthropic": ("messages", "system", "tools", "max_tokens"),
}


# Each API's function tool, and how it reads in the others' shapes. A tool of any other type
# (a built-in, a custom tool, Anthropic's server tools) is left for the SDK and the provider.
_SHAPES = {
    "chat": ("Chat Completions", "{'type': 'function', 'function': {'name': ...}}"),
    "responses": ("the Responses API", "{'type': 'function', 'name': ..., 'parameters': ...}"),
    "anthropic": ("Anthropic", "{'name': ..., 'input_schema': ...}"),
}
_SHAPE_NAMES = {
    "chat": "the Chat Completions shape",
    "responses": "the Responses API's flat shape",
    "anthropic": "Anthropic's shape",
}


def _check_shape(tool: Any, index: int, api: str) -> None:
    """A function tool in another API's shape, which the provider refuses, refused here."""
    if not isinstance(tool, Mapping):
        return  # the definitions' own check names it
    kind = tool.get("type")
    if kind == "function":
        shape = "chat" if isinstance(tool.get("function"), Mapping) else "responses"
    elif kind is None and "input_schema" in tool:
        shape = "anthropic"
    else:
        return
    if shape != api:
        name, wanted = _SHAPES[api]
        raise ConfigError(
            f"tools[{index}]: {name} takes a function tool as {wanted}, got one in "
            f"{_SHAPE_NAMES[shape]}; write it in the request's API's shape"
        )


def reply_room(kwargs: Mapping[str, Any], provider: Provider, *, responses: bool) -> int:
    """The tokens a request asks for its reply: ``max_output_tokens`` (the Responses API),
    ``max_completion_tokens`` or ``max_tokens``; 0 if none is given. Anthropic requires
    ``max_tokens``, at least 1: an explicit ``None`` or 0 would be sent and refused."""
    keys = ("max_output_tokens",) if responses else ("max_completion_tokens", "max_tokens")
    anthropic = provider == "anthropic"
    for key in keys:
        value = kwargs.get(key)
        if given(value) or (anthropic and key == "max_tokens" and key in kwargs and value is None):
            return tokens(value, key, minimum=1 if anthropic else 0)
    return 0


def choice_tokens(kwargs: Mapping[str, Any], count: Callable[[str], int]) -> int:
    """The tokens an OpenAI request's ``tool_choice`` (or legacy ``function_call``) adds to
    its prompt, ``count`` counting a text."""
    return tool_choice_tokens(request_choice(kwargs), count)


def request_choice(kwargs: Mapping[str, Any]) -> Any:
    """A request's ``tool_choice``, or its legacy ``function_call`` as one (``None``: none)."""
    choice = kwargs.get("tool_choice")
    if given(choice):
        return choice
    choice = kwargs.get("function_call")
    if isinstance(choice, Mapping) and "type" not in choice:
        return {"type": "function", "name": choice.get("name")}
    return choice if given(choice) else None


def tools_sent_whole(choice: Any, tools: Iterable[Any]) -> tuple[str, ...]:
    """The tools ``choice`` has the model call with no turn to ask ``describe_tool`` first, by
    name, checked against ``tools`` (the request's and the session's, as sent; see
    :func:`~ctxpack._internal.tool_choice.check_tool_choice`): the one it forces, or those of
    OpenAI's ``allowed_tools`` (as :func:`~ctxpack.tools_on_demand.on_demand_tools` sends
    them)."""
    check_tool_choice(choice, tools)
    return _sent_whole(choice)


def langchain_choice(choice: Any, provider: Provider) -> Any:
    """A LangChain ``tool_choice`` as OpenAI's chat models send it (a tool's name forces that
    function, ``"any"`` is ``"required"``), for counting what it adds to an OpenAI prompt;
    ``None`` for another provider, whose tool prompt is counted with the tools."""
    if provider != "openai" or choice is None:
        return None
    if isinstance(choice, str):
        if choice in ("auto", "none", "required"):
            return choice
        if choice == "any":
            return "required"
        return {"type": "function", "function": {"name": choice}}
    return choice if isinstance(choice, Mapping) else None


def langchain_forced(choice: Any) -> str | None:
    """The tool a request's ``tool_choice`` forces: LangChain's tool name, or a provider's
    form (see :func:`forced_tool`); ``None`` for a choice of any tool or none."""
    if isinstance(choice, str):
        return None if choice in ("auto", "any", "none", "required") else choice
    return forced_tool(choice)


def langchain_tool_definitions(
    tools: Any, *, leave_out: Collection[str] = ()
) -> list[Mapping[str, Any]] | None:
    """A LangChain request's ``tools`` (those not named in ``leave_out``) as OpenAI
    definitions, to count them: a provider's definition as it is, a LangChain tool, function or
    model converted as LangChain's chat models convert it; ``None`` without tools.

    Raises:
        ConfigError: ``tools`` is not a list, or LangChain cannot read one of them as a tool
            (named by its place: ``tools[1]``).
    """
    if not tools:
        return None
    if not isinstance(tools, (list, tuple)):
        raise ConfigError(f"tools must be a list of tools, got {json_type_name(tools)}")
    from langchain_core.utils.function_calling import convert_to_openai_tool

    out: list[Mapping[str, Any]] = []
    for index, tool in enumerate(tools):
        if isinstance(tool, Mapping) and ("input_schema" in tool or "function" in tool):
            out.append(tool)  # already a provider definition
        elif tool_name(tool) not in leave_out:
            try:
                out.append(convert_to_openai_tool(tool))
            except (ValueError, TypeError) as exc:
                raise ConfigError(
                    f"tools[{index}]: LangChain cannot read this {json_type_name(tool)} as a tool "
                    f"({' '.join(str(exc).split())[:160]}); give a tool, a function, a model or "
                    "a definition"
                ) from exc
    return [t for t in out if tool_name(t) not in leave_out] or None
