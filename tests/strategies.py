"""Hypothesis strategies for random conversations, budgets and in-place edits.

A conversation starts with a system message, then mixes user, assistant and developer turns, tool
exchanges (an assistant turn with 1-3 tool calls followed by their results), orphan tool results (no
call answers them), retried results (a second result for a call already answered, as an agent that
re-runs a tool may append), late results (a call's result arriving after other turns, which answers
nothing: providers want a call's results right after it), exact repetitions of earlier turns,
pinned, prioritised, sourced, named and tagged (``metadata``) messages, and content given as parts
(text and images). Most are short, some run to a few hundred messages. Words come from a vocabulary
of several hundred, so queries hit some messages and miss others. Each message is a plain dict or a
``Message``, with or without an explicit id. A case may also carry an explicit query, tool
definitions (a fixed one, or random schemas with nested objects, unions, defaults and ``$ref``), or
be converted to an Anthropic payload and back (``from_anthropic``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from itertools import product
from typing import Any

from hypothesis import strategies as st

import ctxpack

# Words that matter to the stages: headings and list items for the compressor, names for the
# speaker focus, digits, a file name, stop words.
SPECIAL = (
    "budget",
    "token",
    "refresh",
    "login",
    "Paris",
    "Marie",
    "report",
    "deadline",
    "42",
    "2025",
    "cache",
    "tests",
    "auth.py",
    "the",
    "and",
    "migration",
    "# Heading",
    "- item",
)
# Several hundred made-up words (two consonant-vowel syllables): most pairs of messages share
# none, as in a real conversation.
_SYLLABLES = ["".join(p) for p in product("bdgklmnprst", "aeiou")]
VOCABULARY = SPECIAL + tuple(a + b for a, b in product(_SYLLABLES, _SYLLABLES))[::7]

SOURCES = ("https://fr.wikipedia.org/wiki/PIB", "doc:handbook", "acme/login/config/auth.yaml")
NAMES = ("ana", "bob", "Caroline")

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a word up.",
            "parameters": {
                "type": "object",
                "properties": {"q": {"type": "string", "description": "The word."}},
            },
        },
    }
]


# ----------------------------------------------------------------------------- tool schemas

_WORDS = st.sampled_from(VOCABULARY)
_NAMES = st.from_regex(r"[a-z][a-z_]{0,11}", fullmatch=True)
_SCALARS = ("string", "number", "integer", "boolean")


def _descriptions() -> st.SearchStrategy[str]:
    return st.lists(_WORDS, min_size=1, max_size=8).map(" ".join)


def _leaf_schemas(ref_names: tuple[str, ...]) -> st.SearchStrategy[dict[str, Any]]:
    scalar = st.builds(lambda t: {"type": t}, st.sampled_from(_SCALARS))
    enum = st.lists(_WORDS, min_size=1, max_size=4, unique=True).map(
        lambda items: {"type": "string", "enum": items}
    )
    with_default = st.builds(lambda d: {"type": "integer", "default": d}, st.integers(0, 99))
    options = [scalar, enum, with_default]
    if ref_names:
        options.append(st.sampled_from(ref_names).map(lambda n: {"$ref": f"#/$defs/{n}"}))
    return st.one_of(options)


def _describe(schema: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """Sometimes a description on the schema."""
    return st.tuples(schema, st.none() | _descriptions()).map(
        lambda pair: pair[0] if pair[1] is None else {**pair[0], "description": pair[1]}
    )


def json_schemas(ref_names: tuple[str, ...] = ()) -> st.SearchStrategy[dict[str, Any]]:
    """JSON schemas as tools declare them: scalars, enums, defaults, nested objects, arrays,
    ``anyOf`` unions and ``$ref`` to ``$defs`` (named by ``ref_names``), with descriptions."""
    return st.recursive(
        _describe(_leaf_schemas(ref_names)),
        lambda inner: _describe(
            st.one_of(
                st.builds(lambda i: {"type": "array", "items": i}, inner),
                st.dictionaries(_NAMES, inner, min_size=1, max_size=3).map(
                    lambda props: {"type": "object", "properties": props}
                ),
                st.lists(inner, min_size=2, max_size=3).map(lambda opts: {"anyOf": opts}),
            )
        ),
        max_leaves=6,
    )


@st.composite
def tool_definitions(draw: st.DrawFn, *, anthropic: bool | None = None) -> dict[str, Any]:
    """One tool (OpenAI or Anthropic form) with random parameters, ``$defs`` included."""
    def_names = tuple(draw(st.lists(_NAMES, max_size=2, unique=True)))
    defs = {name: draw(json_schemas()) for name in def_names}
    properties = draw(st.dictionaries(_NAMES, json_schemas(def_names), max_size=4))
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if properties:
        parameters["required"] = draw(st.lists(st.sampled_from(sorted(properties)), unique=True))
    if defs:
        parameters["$defs"] = defs
    name = draw(_NAMES)
    description = draw(_descriptions())
    if anthropic is None:
        anthropic = draw(st.booleans())
    if anthropic:
        return {"name": name, "description": description, "input_schema": parameters}
    function = {"name": name, "description": description, "parameters": parameters}
    return {"type": "function", "function": function}


@st.composite
def texts(draw: st.DrawFn, *, max_lines: int = 3) -> str:
    """Short texts of a few lines: the special words often, the rest of the vocabulary too."""
    word = st.one_of(st.sampled_from(SPECIAL), st.sampled_from(VOCABULARY))
    lines = draw(
        st.lists(
            st.lists(word, min_size=1, max_size=8).map(" ".join), min_size=1, max_size=max_lines
        )
    )
    return "\n".join(lines)


@st.composite
def long_texts(draw: st.DrawFn) -> str:
    """Tool outputs long enough (many lines, > 200 tokens) for the compressor to act on."""
    n = draw(st.integers(min_value=14, max_value=40))
    # Few distinct lines: the compressor's per-line spaCy cache keeps the suite fast.
    seed = draw(st.integers(min_value=0, max_value=10))
    return "\n".join(
        f"{'- ' if (i + seed) % 5 == 0 else ''}line {i} of the log: status ok for module "
        f"{(i * 7 + seed) % 11} with Marie and the refresh token cache"
        for i in range(n)
    )


@st.composite
def contents(draw: st.DrawFn, *, images: bool = True) -> str | list[dict[str, Any]]:
    """A text, or (one time in five) a list of parts: texts and, if allowed, an image (OpenAI
    takes images in user messages only)."""
    if draw(st.integers(min_value=0, max_value=4)):
        return draw(texts())
    parts: list[dict[str, Any]] = [{"type": "text", "text": draw(texts())}]
    if images and draw(st.booleans()):
        detail = draw(st.sampled_from(["low", "high", "auto"]))
        parts.append(
            {"type": "image_url", "image_url": {"url": "https://x.test/a.png", "detail": detail}}
        )
    if draw(st.booleans()):
        parts.append({"type": "text", "text": draw(texts(max_lines=1))})
    return parts


@dataclass
class Conversation:
    """A generated conversation and how to pack it."""

    items: list[Any]  # dicts and Message objects, as passed to pack()
    query: str | None = None
    tools: list[dict[str, Any]] | None = None
    provider: str | None = None  # set for a conversation converted from an Anthropic payload
    notes: list[str] = field(default_factory=list)

    def pack_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of pack() besides budget and reserve."""
        return {"model": "gpt-4", "query": self.query, "tools": self.tools}


def _finish(
    draw: st.DrawFn, index: int, data: dict[str, Any], *, explicit_ids: bool
) -> dict[str, Any] | ctxpack.Message:
    if explicit_ids or draw(st.booleans()):
        data["id"] = f"msg{index}"
    if draw(st.booleans()):
        return data
    # A Message owns nothing of the dict it was made from, as a caller's would.
    return ctxpack.Message.model_validate(copy.deepcopy(data))


@st.composite
def conversations(draw: st.DrawFn, *, max_turns: int = 14) -> Conversation:
    """Random conversations: system first, then a mix of turn kinds (see the module doc)."""
    # All explicit ids, all generated ids, or a mix.
    explicit_ids = draw(st.booleans())
    # Most conversations are short; one in sixteen runs to a few hundred messages.
    turns = max_turns if draw(st.integers(min_value=0, max_value=15)) else 200
    items: list[Any] = []
    said: list[tuple[str, Any]] = []
    answered: list[str] = []  # the call ids of the last tool exchange
    late: list[str] = []  # calls whose result comes after other turns, if a "late" turn comes

    def add(data: dict[str, Any]) -> None:
        items.append(_finish(draw, len(items), data, explicit_ids=explicit_ids))

    system: dict[str, Any] = {"role": "system", "content": draw(texts(max_lines=2))}
    add(system)
    kinds = draw(
        st.lists(
            st.sampled_from(
                [
                    "user",
                    "user",
                    "assistant",
                    "developer",
                    "tools",
                    "repeat",
                    "long",
                    "orphan",
                    "retry",
                    "late",
                    "late",
                ]
            ),
            max_size=turns,
        )
    )
    for kind in kinds:
        data: dict[str, Any]
        if kind == "tools":
            n_calls = draw(st.integers(min_value=1, max_value=3))
            calls = [
                {
                    "id": f"call_{len(items)}_{k}",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": f'{{"q": "{k}"}}'},
                }
                for k in range(n_calls)
            ]
            content = draw(st.one_of(st.none(), texts(max_lines=1)))
            add({"role": "assistant", "content": content, "tool_calls": calls})
            # Sometimes the last call's result comes later, after other turns (see "late").
            deferred = draw(st.booleans())
            if deferred:
                late.append(calls[-1]["id"])
            for call in calls[:-1] if deferred else calls:
                result = draw(st.one_of(texts(), long_texts()))
                add({"role": "tool", "tool_call_id": call["id"], "content": result})
            answered = [call["id"] for call in calls]
            continue
        if kind == "retry" and answered:
            call_id = draw(st.sampled_from(answered))
            add({"role": "tool", "tool_call_id": call_id, "content": draw(texts())})
            continue
        if kind == "late" and late:
            # A result that comes after other turns: its call's turn had closed.
            add({"role": "tool", "tool_call_id": late.pop(0), "content": draw(texts())})
            continue
        if kind == "orphan":
            # A result whose call is not in the conversation (trimmed earlier, say).
            add({"role": "tool", "tool_call_id": f"gone_{len(items)}", "content": draw(texts())})
            continue
        if kind == "repeat" and said:
            role, content = draw(st.sampled_from(said))
            data = {"role": role, "content": copy.deepcopy(content)}
        elif kind == "long":
            data = {"role": "assistant", "content": draw(long_texts())}
        else:
            role = kind if kind in ("user", "assistant", "developer") else "user"
            data = {"role": role, "content": draw(contents(images=role == "user"))}
        if draw(st.integers(min_value=0, max_value=7)) == 0:
            data["pinned"] = True
        if draw(st.integers(min_value=0, max_value=4)) == 0:
            data["priority"] = draw(st.sampled_from([-2.0, 0.5, 1.0, 3.0]))
        if draw(st.integers(min_value=0, max_value=4)) == 0:
            data["source"] = draw(st.sampled_from(SOURCES))
        if data["role"] in ("user", "assistant") and draw(st.integers(0, 5)) == 0:
            data["name"] = draw(st.sampled_from(NAMES))
        if draw(st.integers(min_value=0, max_value=5)) == 0:
            # The user's own tags; "anthropic" among them must not change the provider rules.
            data["metadata"] = {
                "important": draw(st.booleans()),
                draw(st.sampled_from(["tag", "anthropic"])): {"turn": 1, "note": [1, 2]},
            }
        said.append((data["role"], data["content"]))
        add(data)
    conv = Conversation(items=items)
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        conv.query = draw(texts(max_lines=1))
    tools_kind = draw(st.integers(min_value=0, max_value=5))
    if tools_kind == 0:
        conv.tools = copy.deepcopy(TOOLS)
    elif tools_kind == 1:
        conv.tools = draw(st.lists(tool_definitions(anthropic=False), min_size=1, max_size=3))
    if draw(st.integers(min_value=0, max_value=5)) == 0:
        _to_anthropic_input(conv)
    return conv


def _to_anthropic_input(conv: Conversation) -> None:
    """Make ``conv`` an Anthropic conversation, through a payload and ``from_anthropic``."""
    payload = ctxpack.to_anthropic(conv.items)
    turns = payload["messages"]
    system = payload["system"]
    try:
        conv.items = list(ctxpack.from_anthropic(turns, system=system))
    except ctxpack.InvalidMessageError:
        # Not every generated conversation is a valid Anthropic payload (a tool result first,
        # say): that case stays OpenAI-shaped.
        return
    conv.provider = "anthropic"


@st.composite
def pack_cases(draw: st.DrawFn) -> tuple[Conversation, int, int]:
    """A conversation with a budget (from far too small to roomy) and a reserve below it."""
    conv = draw(conversations())
    total = ctxpack.count_tokens(conv.items, model="gpt-4", tools=conv.tools)
    budget = draw(st.integers(min_value=10, max_value=total + 40))
    reserve = draw(st.integers(min_value=0, max_value=min(budget - 1, 60)))
    return conv, budget, reserve


# ----------------------------------------------------------------------------- in-place edits


@dataclass
class Edit:
    """One in-place change: where, and the new value (applied with :func:`apply_edit`)."""

    target: str  # "content", "part", "metadata", "arguments", "pinned"
    index: int  # which input item (modulo the conversation's length)
    text: str


edits = st.builds(
    Edit,
    target=st.sampled_from(["content", "part", "metadata", "arguments", "pinned"]),
    index=st.integers(min_value=0, max_value=10_000),
    text=texts(),
)


def apply_edit(items: list[Any], edit: Edit) -> None:
    """Change ``items[edit.index % len(items)]`` in place, as an application would: a dict's
    values, or the mutable inside of a ``Message`` (its content parts, metadata, tool calls)."""
    item = items[edit.index % len(items)]
    is_message = isinstance(item, ctxpack.Message)
    content = item.content if is_message else item.get("content")
    if edit.target == "part" and isinstance(content, list) and content:
        content[0]["text"] = edit.text + " " + edit.text
    elif edit.target == "metadata":
        metadata = item.metadata if is_message else item.setdefault("metadata", {})
        metadata["important"] = not metadata.get("important")
        metadata["note"] = edit.text
    elif edit.target == "arguments":
        calls = item.tool_calls if is_message else item.get("tool_calls")
        if calls:
            if is_message:
                old = calls[0]
                function = ctxpack.FunctionCall(name=old.function.name, arguments=edit.text)
                calls[0] = ctxpack.ToolCall(id=old.id, function=function)
            else:
                calls[0]["function"]["arguments"] = edit.text
    elif edit.target == "pinned" and not is_message:
        item["pinned"] = not item.get("pinned", False)
    elif not is_message and isinstance(content, str):
        item["content"] = edit.text
    elif isinstance(content, list) and content:
        content.append({"type": "text", "text": edit.text})
