"""Tool definitions as the texts a provider puts in the prompt, for counting.

OpenAI's models read function definitions rendered as a TypeScript namespace (``type f = (_: {
... }) => any;``), with descriptions as ``//`` comments; :func:`render_function` writes that
form with every ``$ref`` resolved in place, unions for ``anyOf``/``oneOf``, intersections for
``allOf``, literals for enums, an object's own description as a comment in its type (as
OpenAI's harmony renderer writes it: the parameters' and an array item's too) and the remaining
keywords (defaults, formats, bounds...) as comments. :func:`is_recipe_schema` says whether a
schema stays within what OpenAI's published counting recipe covers (flat properties with a
type, a description and an enum), :func:`is_rendering_schema` whether it stays within what the
published rendering covers (nested objects and arrays too); :func:`compact_json` is the
definition as sent, without whitespace; :func:`tool_tokens` counts one definition with a token
counter, and :func:`tool_list_tokens` a request's list of them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ..caches import LRUCache
    from ..tokens import TokenCounter

    # A counter's counts of definitions, by their JSON, and of a request's functions together.
    ToolSizes = LRUCache[str | tuple[str, ...], int]

# Keywords the rendering expresses itself; any other keyword becomes a comment, so it is counted.
_RENDERED = frozenset(
    {
        "type",
        "properties",
        "required",
        "items",
        "enum",
        "const",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "description",
        "additionalProperties",
        "$defs",
        "definitions",
    }
)
# Past this many schema nodes, references are no longer expanded in place (a schema whose
# definitions refer to each other many times over would otherwise grow without bound).
MAX_NODES = 20_000
# What OpenAI's recipe covers: per property a type, a description and an enum of strings.
_RECIPE_PROPERTY_KEYS = frozenset({"type", "description", "enum"})
_RECIPE_PARAMETER_KEYS = frozenset({"type", "properties", "required", "additionalProperties"})


def compact_json(value: Any) -> str:
    """``value`` as JSON without whitespace, in its own key order (as a client sends it)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def is_recipe_schema(parameters: Any) -> bool:
    """Whether OpenAI's counting recipe covers ``parameters`` exactly: an object of flat
    properties, each with a scalar type, a description and an enum of strings at most."""
    if parameters is None:
        return True
    if not isinstance(parameters, Mapping) or not set(parameters) <= _RECIPE_PARAMETER_KEYS:
        return False
    if parameters.get("additionalProperties", False) is not False:
        return False
    properties = parameters.get("properties", {})
    if not isinstance(properties, Mapping):
        return False
    for spec in properties.values():
        if not isinstance(spec, Mapping) or not set(spec) <= _RECIPE_PROPERTY_KEYS:
            return False
        if spec.get("type") not in ("string", "number", "integer", "boolean"):
            return False
        if not isinstance(spec.get("description", ""), str):
            return False
        enum = spec.get("enum")
        if enum is not None and not (
            isinstance(enum, list) and all(isinstance(item, str) for item in enum)
        ):
            return False
    return True


_RENDERING_KEYS = frozenset(
    {"type", "description", "enum", "properties", "required", "items", "additionalProperties"}
)


def is_rendering_schema(schema: Any) -> bool:
    """Whether ``schema`` uses only what the published TypeScript rendering of functions covers
    (checked against the API's counts): scalar, object and array types, enums, descriptions
    and required properties; no references, unions, defaults or other keywords."""
    if not isinstance(schema, Mapping) or not set(schema) <= _RENDERING_KEYS:
        return False
    if schema.get("additionalProperties", False) is not False:
        return False
    kind = schema.get("type", "object")
    if kind not in ("string", "number", "integer", "boolean", "null", "object", "array"):
        return False
    enum = schema.get("enum")
    if enum is not None and not (
        isinstance(enum, list) and all(isinstance(i, (str, int, float)) for i in enum)
    ):
        return False
    if not isinstance(schema.get("description", ""), str):
        return False
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping) or not all(
        map(is_rendering_schema, properties.values())
    ):
        return False
    return "items" not in schema or is_rendering_schema(schema["items"])


class _Renderer:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.nodes = 0

    def resolve(self, ref: str) -> Mapping[str, Any] | None:
        if not ref.startswith("#/"):
            return None
        node: Any = self.root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                return None
            node = node[part]
        return node if isinstance(node, Mapping) else None

    def comments(self, schema: Mapping[str, Any], indent: str) -> list[str]:
        lines = []
        description = schema.get("description")
        if isinstance(description, str) and description:
            lines += [f"{indent}// {line}" for line in description.splitlines()]
        for key, value in schema.items():
            if key not in _RENDERED:
                lines.append(f"{indent}// {key}: {compact_json(value)}")
        return lines

    def object_body(self, schema: Mapping[str, Any], indent: str, stack: tuple[str, ...]) -> str:
        required = schema.get("required")
        required = set(required) if isinstance(required, list) else set()
        lines = []
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            for key, spec in properties.items():
                spec = spec if isinstance(spec, Mapping) else {}
                lines += self.comments(spec, indent)
                mark = "" if key in required else "?"
                lines.append(f"{indent}{key}{mark}: {self.type(spec, indent, stack)},")
        return "\n".join(lines)

    def type(self, schema: Any, indent: str, stack: tuple[str, ...]) -> str:
        self.nodes += 1
        if not isinstance(schema, Mapping):
            return "any" if schema is True or schema is None else "never"
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = self.resolve(ref)
            name = ref.rsplit("/", 1)[-1]
            if target is None or ref in stack or self.nodes > MAX_NODES:
                return name
            inner = self.type(target, indent, (*stack, ref))
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            return f"{inner} & {self.type(rest, indent, stack)}" if rest else inner
        if "const" in schema:
            return compact_json(schema["const"])
        if isinstance(schema.get("enum"), list):
            return " | ".join(compact_json(item) for item in schema["enum"]) or "never"
        for key, joiner in (("anyOf", " | "), ("oneOf", " | "), ("allOf", " & ")):
            options = schema.get(key)
            if isinstance(options, list) and options:
                parts = []
                for option in options:
                    comment = self.comments(option, "") if isinstance(option, Mapping) else []
                    parts.append(" ".join([*comment, self.type(option, indent, stack)]))
                return joiner.join(parts)
        kind = schema.get("type")
        if isinstance(kind, list):
            return " | ".join(self.type({**schema, "type": k}, indent, stack) for k in kind)
        if kind in ("number", "integer"):
            return "number"
        if kind in ("string", "boolean", "null"):
            return str(kind)
        if kind == "array" or "items" in schema:
            items = schema.get("items")
            if items is None:
                return "any[]"
            inner = self.type(items, indent, stack)
            union = (" | " in inner or " & " in inner) and not inner.startswith(("{", "//"))
            if isinstance(items, Mapping) and not inner.startswith("//"):
                # An item's description has no property to lead: it leads the item's type.
                inner = "\n".join([*self.described(items, indent), inner])
            return f"({inner})[]" if union else f"{inner}[]"
        if kind == "object" or "properties" in schema:
            body = self.object_body(schema, indent + "  ", stack)
            extra = schema.get("additionalProperties")
            if isinstance(extra, Mapping):
                body += f"\n{indent}  [key: string]: {self.type(extra, indent + '  ', stack)},"
            if not body.strip():
                return "\n".join([*self.described(schema, indent), "object"])
            # OpenAI's rendering (harmony's) writes an object's own description in its type,
            # after the comment that leads its property.
            return "\n".join([*self.described(schema, indent), f"{{\n{body}\n{indent}}}"])
        return "any"

    def described(self, schema: Mapping[str, Any], indent: str) -> list[str]:
        """The comment lines of ``schema``'s own description."""
        return self.comments({"description": schema.get("description")}, indent)


def render_function(function: Mapping[str, Any]) -> str:
    """One function definition in OpenAI's TypeScript form, references resolved in place.

    Example:
        >>> print(render_function({"name": "f", "description": "Do it.", "parameters": {
        ...     "type": "object", "properties": {"n": {"type": "integer"}},
        ...     "required": ["n"]}}))
        // Do it.
        type f = (_: {
        n: number,
        }) => any;
    """
    parameters = function.get("parameters")
    parameters = parameters if isinstance(parameters, Mapping) else {}
    renderer = _Renderer(parameters)
    lines = renderer.comments({"description": function.get("description")}, "")
    # The parameters' own description is rendered too (harmony: a comment before its "{").
    lines += renderer.described(parameters, "")
    body = renderer.object_body(parameters, "", ())
    name = function.get("name", "")
    if body:
        lines += [f"type {name} = (_: {{", body, "}) => any;"]
    else:
        lines.append(f"type {name} = () => any;")
    lines += [f"// {k}: {compact_json(v)}" for k, v in parameters.items() if k not in _RENDERED]
    return "\n".join(lines)


def inline_refs(schema: Any) -> Any:
    """``schema`` with every local ``$ref`` replaced by its target (a recursive reference is
    left as it is), for counting a definition the way a provider that inlines would."""
    root = schema if isinstance(schema, Mapping) else {}
    renderer = _Renderer(root)

    def walk(node: Any, stack: tuple[str, ...]) -> Any:
        renderer.nodes += 1
        if isinstance(node, list):
            return [walk(item, stack) for item in node]
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref not in stack and renderer.nodes <= MAX_NODES:
            target = renderer.resolve(ref)
            if target is not None:
                merged = dict(walk(target, (*stack, ref)))
                for key, value in node.items():
                    if key != "$ref":
                        # Both when both say something (two descriptions): nothing is lost.
                        value = walk(value, stack)
                        merged[key] = [merged[key], value] if key in merged else value
                return merged
        return {k: walk(v, stack) for k, v in node.items() if k not in ("$defs", "definitions")}

    return walk(schema, ())


# Tool definitions, by the recipe of OpenAI's cookbook ("How to count tokens with tiktoken",
# tools section), which matches the API's figures for gpt-4o, gpt-4o-mini, gpt-4 and
# gpt-3.5-turbo: each function costs 7 tokens (10 with cl100k_base models) plus
# "name:description"; its properties 3 plus, per property, 3 and "name:type:description"; an
# enum -3 plus 3 per item and its text; the tool block 12 at the end. A trailing period of a
# description is not counted.
TOOLS_FUNC_INIT = 7
TOOLS_FUNC_INIT_CL100K = 10
TOOLS_PROP_INIT = 3
TOOLS_PROP_KEY = 3
TOOLS_ENUM_INIT = -3
TOOLS_ENUM_ITEM = 3
TOOLS_FUNC_END = 12
# A function in OpenAI's TypeScript rendering (openai-chat-tokens' format, checked against the
# API's counts): its rendered text plus 4, the namespace around the functions (7 tokens) and the
# 9 that library measured per request, less the 12 the tool block already counts.
TOOLS_RENDER_INIT = 4
# A request's functions as openai-chat-tokens counts them (checked against the API's counts):
# their namespace's text plus 9 when the prompt has no system message. With one, OpenAI writes
# the namespace into it: 4 fewer, and its text ends with a line break (what the cookbook's recipe
# was fitted on); without, the recipe comes up to 4 tokens short.
TOOLS_NAMESPACE_EXTRA = 9
TOOLS_IN_SYSTEM = -4
# Anthropic adds its own tool-use system prompt when a request has tools: 346 tokens for Claude 4
# and 3.7 models with tool_choice auto (published on Anthropic's pricing page), more than for any
# older model, so it is the safe figure.
ANTHROPIC_TOOL_PROMPT_TOKENS = 346


# Anthropic's own tools are named by a dated type (``{"type": "bash_20250124", "name":
# "bash"}``; OpenAI dates its built-ins with underscores, web_search_preview_2025_03_11). The
# model reads their full definitions, not the few words the request holds: Anthropic publishes
# what each adds (its tool pages, as quoted by third-party guides; the computer tool's for
# Claude 4 and 3.7 models).
_ANTHROPIC_DEFINED = re.compile(r"([a-z_]+?)_20\d{6}")
_ANTHROPIC_DEFINED_TOKENS = {"bash": 245, "text_editor": 700, "computer": 735}


def _anthropic_family(tool: Mapping[str, Any]) -> str | None:
    """The family of one of Anthropic's own tools (``bash`` for ``bash_20250124``), or None."""
    kind = tool.get("type")
    if "input_schema" in tool or not isinstance(kind, str):
        return None
    defined = _ANTHROPIC_DEFINED.fullmatch(kind)
    return defined[1] if defined is not None else None


def anthropic_tool(tool: Mapping[str, Any]) -> bool:
    """Whether Anthropic takes ``tool``: a custom tool (``input_schema``) or one of its own."""
    return "input_schema" in tool or _anthropic_family(tool) is not None


def tool_tokens(tool: Mapping[str, Any], counter: TokenCounter) -> int:
    """One tool definition, without the per-request constants."""
    family = _anthropic_family(tool)
    if family is not None:
        published = _ANTHROPIC_DEFINED_TOKENS.get(family, 0)
        return max(published, counter.count(compact_json(tool)))
    if "input_schema" in tool:
        return max(counter.count(compact_json(tool)), counter.count(_inlined_json(tool)))
    function = _function_of(tool)
    if function is None:
        # A provider's built-in tool (web search, code interpreter...): its JSON.
        return counter.count(compact_json(tool))
    return _function_tokens(function, counter)


def _function_of(tool: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The function ``tool`` (not Anthropic's) defines, in the chat shape or the Responses
    API's, or None for a built-in tool."""
    function = tool.get("function", tool)
    if not isinstance(function, Mapping) or (
        "parameters" not in function and tool.get("type", "function") != "function"
    ):
        return None
    return function


class ToolCounts(NamedTuple):
    """A request's tool definitions counted, before the prompt's system message is known."""

    base: int  # every definition and the per-request constants
    functions: int  # the OpenAI functions' own counts, within base
    namespace: int  # openai-chat-tokens' count of their namespace (0: no function)

    def total(self, counter: TokenCounter, system: str | None = None) -> int:
        """What the definitions add to a prompt whose first system message is ``system``
        (``None``: one without, the larger count)."""
        if not self.namespace:
            return self.base
        namespace = self.namespace
        if system is not None:
            # The namespace is written into the system message, whose text gains a line break.
            namespace += TOOLS_IN_SYSTEM + counter.count(f"{system}\n") - counter.count(system)
        return self.base + max(0, namespace - self.functions - TOOLS_FUNC_END)


def tool_list_tokens(
    tools: Sequence[Mapping[str, Any]],
    counter: TokenCounter,
    sizes: ToolSizes | None,
    system: str | None = None,
) -> int:
    """A request's tool definitions with the per-request constants (see
    :func:`tool_list_counts`), beside a prompt whose first system message is ``system``:
    OpenAI's functions then cost less; without it they are counted for a prompt without one."""
    return tool_list_counts(tools, counter, sizes).total(counter, system)


def tool_list_counts(
    tools: Sequence[Mapping[str, Any]], counter: TokenCounter, sizes: ToolSizes | None
) -> ToolCounts:
    """A request's tool definitions counted, each once per counter where it has ``sizes`` (the
    counter's own cache of them)."""
    own = getattr(counter, "count_tools", None)
    if callable(own):
        # A counter that asks the provider (Anthropic's endpoint) counts them exactly itself.
        return ToolCounts(int(own(tools)), 0, 0)
    total = functions_total = 0
    anthropic = openai = False
    functions: list[Mapping[str, Any]] = []
    keys: list[str] = []
    for tool in tools:
        function = None
        if anthropic_tool(tool):
            anthropic = True
        else:
            openai = True
            function = _function_of(tool)
        if sizes is not None:
            # The same definitions ride with every request: count each once per counter, as
            # its JSON reads (a copy that another thread's edit in place cannot reach, which
            # would leave one definition's count under another's JSON).
            key = compact_json(tool)
            size = sizes.get(key)
            if size is None:
                tool = json.loads(key)
                function = None if function is None else _function_of(tool)
                size = tool_tokens(tool, counter)
                sizes.put(key, size)
        else:
            key, size = "", tool_tokens(tool, counter)
        total += size
        if function is not None:
            functions.append(function)
            functions_total += size
            keys.append(key)
    total += (TOOLS_FUNC_END if openai else 0) + (ANTHROPIC_TOOL_PROMPT_TOKENS if anthropic else 0)
    namespace = _namespace_tokens(functions, counter, sizes, keys) if functions else 0
    return ToolCounts(total, functions_total, namespace)


def system_text(messages: Sequence[Any]) -> str | None:
    """The text of the first system message of a prompt (ctxpack's messages) that has one,
    which OpenAI writes its functions into; None when it has none, or one whose content is not
    a text (counted as without one: more)."""
    for message in messages:
        if message.role == "system":
            return message.content if isinstance(message.content, str) else None
    return None


def _namespace_tokens(
    functions: Sequence[Mapping[str, Any]],
    counter: TokenCounter,
    sizes: ToolSizes | None,
    keys: Sequence[str],
) -> int:
    """What OpenAI functions add to a prompt without a system message: their namespace of
    TypeScript definitions plus 9 (openai-chat-tokens' model, which reproduces every prompt
    count of its API-checked tests, and the cookbook's with the system message's 4 off)."""
    # The definitions' own keys, whose hashes are computed already: no text to hash again.
    key = tuple(keys)
    size = None if sizes is None else sizes.get(key)
    if size is None:
        if sizes is not None:
            # From the JSON the key holds, as tool_list_tokens counts a definition.
            functions = [_function_of(json.loads(key)) or {} for key in keys]
        blocks = "".join(f"{render_function(function)}\n\n" for function in functions)
        text = f"namespace functions {{\n\n{blocks}}} // namespace functions"
        size = counter.count(text) + TOOLS_NAMESPACE_EXTRA
        if sizes is not None:
            sizes.put(key, size)
    return size


def _inlined_json(tool: Mapping[str, Any]) -> str:
    return compact_json({**tool, "input_schema": inline_refs(tool.get("input_schema"))})


def _function_tokens(function: Mapping[str, Any], counter: TokenCounter) -> int:
    """One OpenAI function: the recipe where it is exact, else never under the rendering."""
    parameters = function.get("parameters")
    init = TOOLS_FUNC_INIT_CL100K if counter.name == "cl100k_base" else TOOLS_FUNC_INIT
    recipe = init + _recipe_tokens(function, counter)
    if is_recipe_schema(parameters):
        return recipe
    rendered = max(recipe, TOOLS_RENDER_INIT + counter.count(render_function(function)))
    if parameters is None or is_rendering_schema(parameters):
        return rendered
    as_sent = {k: function[k] for k in ("name", "description", "parameters") if k in function}
    return max(rendered, init + counter.count(compact_json(as_sent)))


def _recipe_tokens(function: Mapping[str, Any], counter: TokenCounter) -> int:
    description = str(function.get("description") or "").removesuffix(".")
    total = counter.count(f"{function.get('name', '')}:{description}")
    parameters = function.get("parameters")
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    if not isinstance(properties, Mapping) or not properties:
        return total
    total += TOOLS_PROP_INIT
    for key, spec in properties.items():
        spec = spec if isinstance(spec, Mapping) else {}
        total += TOOLS_PROP_KEY
        enum = spec.get("enum")
        if isinstance(enum, list):
            total += TOOLS_ENUM_INIT
            for item in enum:
                total += TOOLS_ENUM_ITEM + counter.count(str(item))
        p_desc = str(spec.get("description") or "").removesuffix(".")
        total += counter.count(f"{key}:{spec.get('type', '')}:{p_desc}")
    return total
