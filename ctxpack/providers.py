"""Providers: whose API a model, a client, a payload or a message belongs to, and their shapes.

ctxpack speaks two wire formats, OpenAI's (Chat Completions, with the Responses API items it also
reads) and Anthropic's (Messages). Everything that tells them apart lives here: the
:data:`Provider` type, detection from a model name, an SDK client, a LangChain chat model, a
request body or messages, the shape of a tool definition and of a tool call in each format, and
what a provider's response says (its answer, its usage, its kind). The adapters
(:mod:`ctxpack.adapters`) convert the messages themselves.

Example:
    >>> provider_from_model("claude-sonnet-4-5")
    'anthropic'
    >>> tool_definition("grep", "Search.", {"type": "object"}, "anthropic")
    {'name': 'grep', 'description': 'Search.', 'input_schema': {'type': 'object'}}
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ._internal.arguments import check_tool, instances, optional_text
from ._internal.columns import ANTHROPIC, flags
from ._internal.encodings import model_key
from ._internal.provider_arg import check_provider as check_provider
from .adapters import has_anthropic_blocks
from .adapters import provider_from_message as provider_from_message
from .errors import ConfigError
from .messages import Message

# The names a user needs; the readers of tool calls and responses below serve ctxpack's own
# modules (the adapters, the retrieve tool, tools on demand, the selectors).
__all__ = [
    "Provider",
    "detect_provider",
    "provider_from_request",
    "tool_definition",
]

Provider = Literal["openai", "anthropic"]


def provider_from_model(model: str | None) -> Provider | None:
    """``"anthropic"`` for a Claude model's name, ``None`` for any other (or no) name: only
    Claude names are recognised, since OpenAI-compatible servers serve every other family."""
    if model is not None and model_key(model).startswith(("claude", "anthropic")):
        return "anthropic"
    return None


# The models that check each thinking block sent back against its prefix (Anthropic's "Prefix
# checks on thinking blocks" lists them): an edit before a block makes it and every later one
# invalid.
PRESERVED_THINKING_MODELS = (
    "claude-fable-5-2",
    "claude-mythos-5-2",
    "claude-fable-5-1",
    "claude-mythos-5-1",
    "claude-opus-5-5",
    "claude-sonnet-5-5",
    "claude-haiku-5-5",
)


def preserves_thinking(model: str | None) -> bool:
    """Whether ``model`` has preserved thinking: it accepts a thinking block sent back only if
    nothing before it (system prompt, tools, earlier messages) changed since it was produced.
    A dated or platform name (``claude-sonnet-5-5-20261001``, Vertex's ``@`` form, Bedrock's
    ids) counts as its family."""
    if model is None:
        return False
    key = model_key(model)
    return any(
        key == name or key.startswith((f"{name}-", f"{name}@"))
        for name in PRESERVED_THINKING_MODELS
    )


# Claude's newer tokenizer: "Claude Opus 4.7 and later Opus models, Claude Fable 5, Claude Mythos
# 5, Claude Mythos Preview, and Claude Sonnet 5" (Anthropic's token-counting page). A name holds
# a family, a major version and a minor one (never a date's digits); the first version of each
# family with it (Haiku 5 assumed alike: erring high).
_CLAUDE_VERSION = re.compile(r"claude-(opus|sonnet|haiku)-(\d+)(?:[-.](\d{1,2})(?!\d))?")
_NEWER_TOKENIZER = {"opus": (4, 7), "sonnet": (5, 0), "haiku": (5, 0)}


def newer_claude_tokenizer(model: str | None) -> bool:
    """Whether ``model`` is a Claude model with Anthropic's newer tokenizer, which makes about 30%
    more tokens of the same text than earlier models' (a dated or platform name counts as its
    family)."""
    if model is None:
        return False
    key = model_key(model)
    if key.startswith(("claude-fable", "claude-mythos")):
        return True
    found = _CLAUDE_VERSION.match(key)
    if found is None:
        return False
    return (int(found[2]), int(found[3] or 0)) >= _NEWER_TOKENIZER[found[1]]


def provider_from_client(client: Any) -> Provider:
    """The provider of an SDK client: OpenAI's (or a compatible one's) has
    ``client.chat.completions.create``, Anthropic's ``client.messages.create``.

    Raises:
        ConfigError: the client has neither.
    """
    chat = getattr(client, "chat", None)
    if chat is not None and hasattr(getattr(chat, "completions", None), "create"):
        return "openai"
    if hasattr(getattr(client, "messages", None), "create"):
        return "anthropic"
    raise ConfigError(
        f"cannot tell the provider of {type(client).__name__}: expected client.chat.completions"
        ".create (OpenAI-compatible) or client.messages.create (Anthropic); pass provider=..."
    )


def provider_from_chat_model(model: Any) -> Provider:
    """The provider of a LangChain chat model (``ChatAnthropic``, ``ChatOpenAI``...), by its
    class, since LangChain's own models carry no provider field."""
    return "anthropic" if "anthropic" in type(model).__name__.lower() else "openai"


def provider_from_request(data: Any) -> Provider:
    """The provider of a request body: Anthropic's for a body with ``system``, tools with an
    ``input_schema`` or a message holding a block only Anthropic has; else OpenAI's."""
    if not isinstance(data, Mapping):
        return "openai"
    if "system" in data:
        return "anthropic"
    tools = data.get("tools")
    if isinstance(tools, list) and any(
        isinstance(t, Mapping) and "input_schema" in t for t in tools
    ):
        return "anthropic"
    messages = data.get("messages")
    if isinstance(messages, list) and any(
        isinstance(m, Mapping) and has_anthropic_blocks(m) for m in messages
    ):
        return "anthropic"
    return "openai"


def detect_provider(
    provider: str | None, model: str | None, messages: Sequence[Message]
) -> Provider:
    """The provider whose rules a request follows: ``provider`` if given, else a Claude
    ``model``, else the one :func:`ctxpack.from_anthropic` records on the messages it makes
    (never the user's metadata).

    Raises:
        ConfigError: ``provider`` is neither ``"openai"`` nor ``"anthropic"``, ``model`` is
            not a string or ``None``, or ``messages`` is not a list of messages.
    """
    if provider is not None:
        return check_provider(provider)
    # Checked here, not where they are used: a bare AttributeError or TypeError came from there.
    optional_text(model, "model")
    messages = instances(
        messages, "messages", Message, hint=": build them with ctxpack.messages.ensure_messages()"
    )
    if provider_from_model(model) == "anthropic":
        return "anthropic"
    return "anthropic" if (flags(messages) & ANTHROPIC).any() else "openai"


def tool_definition(name: str, description: str, schema: Any, provider: Provider) -> dict[str, Any]:
    """A tool definition in ``provider``'s shape: an OpenAI function tool, or an Anthropic
    tool with its ``input_schema``.

    Raises:
        ConfigError: the provider would refuse the definition (a name not of
            ``^[a-zA-Z0-9_-]{1,64}$``, a schema that is not a JSON Schema object, a value JSON
            cannot carry); the message names its field.
    """
    for argument, value in (("name", name), ("description", description)):
        if not isinstance(value, str):
            raise ConfigError(f"{argument} must be a string, got {type(value).__name__}")
    tool: dict[str, Any]
    if check_provider(provider) == "openai":
        tool = {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": schema},
        }
    else:
        tool = {"name": name, "description": description, "input_schema": schema}
    check_tool(tool, "tool_definition()")  # as pack(tools=...) would check it
    return tool


def anthropic_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI function definition (Chat Completions' or the Responses API's flat one) in
    Anthropic's form; any other tool as it is."""
    function = tool.get("function", tool) if tool.get("type") == "function" else None
    if not isinstance(function, Mapping):
        return dict(tool)
    out = {"name": function.get("name", ""), "input_schema": function.get("parameters")}
    if function.get("description"):
        out["description"] = function["description"]
    out["input_schema"] = out["input_schema"] or {"type": "object", "properties": {}}
    return out


def tools_as_sent(
    tools: Sequence[Mapping[str, Any]], provider: Provider | None
) -> list[Mapping[str, Any]]:
    """Tool definitions as ``provider`` receives them, which is what they cost: Anthropic
    takes no OpenAI function, so a request for Claude carries each one as an Anthropic tool
    (its JSON, and Anthropic's tool-use prompt once per request)."""
    return [anthropic_tool(t) for t in tools] if provider == "anthropic" else list(tools)


def flat_tools(tools: Sequence[Any]) -> list[Any]:
    """Tool definitions in the Responses API's shape: a Chat Completions function tool
    (``{"type": "function", "function": {...}}``) with its function's fields at the top, and
    ``strict`` as Chat Completions meant it (off unless the function says so): the Responses
    API makes an unmarked function strict, and would refuse a schema written for Chat
    Completions (optional properties, no ``additionalProperties: false``)."""
    out: list[Any] = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping) and tool.get("type") == "function":
            tool = {"type": "function", "strict": False, **function}
        out.append(tool)
    return out


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An object's flat JSON schema as OpenAI's strict mode takes it ("Structured Outputs:
    Supported schemas": ``additionalProperties: false``, every property required): an
    optional property is typed as nullable instead, the model sending ``null`` to leave it out.
    Nested objects are left as they are."""
    required = set(schema.get("required", ()))
    properties = {
        name: sub
        if name in required or "type" not in sub
        else {**sub, "type": [sub["type"], "null"]}
        for name, sub in schema.get("properties", {}).items()
    }
    return {
        **schema,
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def all_strict(tools: Sequence[Any] | None) -> bool:
    """Whether ``tools`` are function tools in OpenAI's strict mode, every one of them (at
    least one; see :func:`is_strict`). A request sending them is given the strict variant of a
    session's own tools, so that it goes out with strict tools only, as
    ``chat.completions.parse`` requires."""
    return bool(tools) and all(map(is_strict, tools or ()))


def is_strict(tool: Any) -> bool:
    """Whether ``tool`` is a function tool in OpenAI's strict mode: Chat Completions'
    (``function.strict``) or the Responses API's flat one (``strict``)."""
    if not isinstance(tool, Mapping) or tool.get("type") != "function":
        return False
    function = tool.get("function", tool)
    return isinstance(function, Mapping) and function.get("strict") is True


def tool_definition_parts(tool: Mapping[str, Any]) -> tuple[Any, Any, Any, Provider]:
    """A tool definition's name, description and schema (each as given, unchecked), and the
    shape it is in: an OpenAI function tool (``{"type": "function", "function": {...}}``) or
    an Anthropic tool (``{"name", "description", "input_schema"}``)."""
    function = tool.get("function")
    if isinstance(function, Mapping):
        return (
            function.get("name"),
            function.get("description"),
            function.get("parameters"),
            "openai",
        )
    return tool.get("name"), tool.get("description"), tool.get("input_schema"), "anthropic"


def tool_name(tool: Any) -> Any:
    """The name a tool definition gives (either shape, unchecked), or a tool object's
    ``name`` (a LangChain tool); ``None`` without one."""
    if isinstance(tool, Mapping):
        return tool_definition_parts(tool)[0]
    return getattr(tool, "name", None)


def tool_call_parts(call: Mapping[str, Any]) -> tuple[Any, Any] | None:
    """The tool a call names and its arguments (a JSON string or an object, as sent), for an
    OpenAI tool call, an Anthropic ``tool_use`` block or a Responses API ``function_call``
    item; ``None`` for anything else."""
    function = call.get("function")
    if isinstance(function, Mapping):
        return function.get("name"), function.get("arguments", "{}")
    kind = call.get("type")
    if kind == "tool_use":
        return call.get("name"), call.get("input", {})
    if kind == "function_call":
        return call.get("name"), call.get("arguments")
    return None


def read_field(value: Any, name: str) -> Any:
    """``value.name`` or ``value[name]``: the SDKs' response objects and their dicts alike;
    ``None`` when absent."""
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def response_usage(response: Any, provider: Provider) -> tuple[Any, Any]:
    """The input and output tokens a response reports (as found: ``None`` when absent):
    ``usage.prompt_tokens``/``completion_tokens`` from OpenAI's Chat Completions (its prompt
    includes the cached tokens), ``usage.input_tokens``/``output_tokens`` from Anthropic's
    Messages, with the cache's ``cache_creation_input_tokens`` and ``cache_read_input_tokens``
    added to the input: Anthropic's ``input_tokens`` are only the prompt's uncached part."""
    used = read_field(response, "usage")
    if provider == "openai":
        return read_field(used, "prompt_tokens"), read_field(used, "completion_tokens")
    prompt = read_field(used, "input_tokens")
    for field in ("cache_creation_input_tokens", "cache_read_input_tokens"):
        cached = read_field(used, field)
        # Absent or null without caching; anything else not an int is left for the caller to
        # refuse, as a malformed input_tokens is.
        if cached is not None and isinstance(prompt, int):
            prompt = prompt + cached if isinstance(cached, int) else cached
    return prompt, read_field(used, "output_tokens")


def response_cache_usage(response: Any, provider: Provider) -> tuple[int, int, int]:
    """The prompt tokens a response reports read from and written to the prompt cache (both
    part of :func:`response_usage`'s input), and of the writes those with a 1-hour lifetime:
    OpenAI's ``usage.prompt_tokens_details.cached_tokens`` (it bills no write), Anthropic's
    ``cache_read_input_tokens``, ``cache_creation_input_tokens`` and
    ``cache_creation.ephemeral_1h_input_tokens`` (billed at 2x the input price, where a 5-minute
    write is 1.25x). 0 for a field absent, null or not an int >= 0."""
    used = read_field(response, "usage")
    if provider == "openai":
        read = read_field(read_field(used, "prompt_tokens_details"), "cached_tokens")
        written = hour = None
    else:
        read = read_field(used, "cache_read_input_tokens")
        written = read_field(used, "cache_creation_input_tokens")
        hour = read_field(read_field(used, "cache_creation"), "ephemeral_1h_input_tokens")
    return _reported_count(read), _reported_count(written), _reported_count(hour)


def _reported_count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def response_answer(response: Any, provider: Provider, tool: str) -> str | dict[str, Any]:
    """What the model answered: from OpenAI's Chat Completions, the first choice's content (a
    refusal as ``{"refusal": ...}`` in JSON); from Anthropic's Messages, the input of its call
    to ``tool`` (a dict), else its first text. ``""`` when there is none."""
    if provider == "openai":
        choices = read_field(response, "choices") or []
        message = read_field(choices[0], "message") if choices else None
        content = read_field(message, "content") if message is not None else None
        refusal = read_field(message, "refusal") if message is not None else None
        if isinstance(content, str) and content:
            return content
        return json.dumps({"refusal": refusal}) if refusal else ""
    answer: str | dict[str, Any] = ""
    for block in read_field(response, "content") or []:
        kind = read_field(block, "type")
        if kind == "tool_use" and read_field(block, "name") == tool:
            given = read_field(block, "input")
            return given if isinstance(given, dict) else json.dumps(given)
        if kind == "text" and not answer:
            answer = str(read_field(block, "text") or "")
    return answer


def is_anthropic_response(body: Mapping[str, Any]) -> bool:
    """Whether a provider's response (as a dict) is an Anthropic Messages response, which has a
    role, rather than an OpenAI Responses API response, which has output items. A Chat
    Completions message has the role too, but a string (or no) content, or calls beside it: an
    Anthropic reply's content is always a list of blocks."""
    if body.get("role") != "assistant" or "tool_calls" in body:
        return False
    return not isinstance(body.get("content", ""), (str, type(None)))
