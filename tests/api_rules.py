"""What the providers' APIs refuse in a request, written from their documentation rather than
from ctxpack's own validators, so that a test can ask of any output: would the API take it?

Each ``*_problems`` function returns the problems found (empty: the request would be taken),
each naming where (``messages[3].content[0]``) and the rule broken. The rules:

Anthropic Messages: ``system`` is a top-level string or a list of non-empty text blocks; the
first message is the user's (unless it opens with a ``compaction`` block); no content is empty
and no text block is empty or only whitespace (but a last assistant message, which the model
continues, may be empty; its text may not end with whitespace); ``tool_result`` blocks come
first in a user message and answer, once, a ``tool_use`` of the assistant message right before;
every ``tool_use`` but the last message's is answered in the next message; tool ids and names
match ``^[a-zA-Z0-9_-]+$``; a ``tool_use`` input is an object; thinking blocks (with their
signatures) are in assistant messages only; no block is an OpenAI part (``image_url``,
``input_audio``...); images and documents have a source the API reads; at most 4 blocks carry
``cache_control`` (tools, system and messages together). With manual extended thinking on
(``thinking``'s ``type`` is ``"enabled"``), the assistant message whose tool calls the request's
last message answers must start with a ``thinking`` or ``redacted_thinking`` block: during a
tool loop its thinking comes back with the results ("Expected `thinking` or `redacted_thinking`,
but found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a
thinking block"; Anthropic's "Thinking in tool and multi-turn workflows": pass thinking blocks
back complete and unmodified). Adaptive thinking is not held to it: there the model may answer
without thinking (a forced tool call skips it), and the turn is sent back as it came.

OpenAI Chat Completions: each assistant ``tool_calls`` id is answered by a tool message before
the next other message; each tool message answers a call of the assistant message before its
run of tool messages; no message holds both ``tool_calls`` and a legacy ``function_call``;
content is ``null`` (or absent) only beside ``tool_calls``; function names match
``^[a-zA-Z0-9_-]{1,64}$``; a tool message holds text.

OpenAI tools: no two tools share a name. A request to ``chat.completions.parse`` (structured
outputs) takes function tools in strict mode only (the SDK refuses any other: "`X` is not strict.
Only `strict` function tools can be auto-parsed"), and a strict tool's schema follows
"Structured Outputs: Supported schemas": every object sets ``additionalProperties: false`` and
lists every property in ``required`` (an optional one is typed as nullable instead).

OpenAI Responses: each ``function_call`` has its ``function_call_output`` (by ``call_id``) after
it and each output a call before it; a ``reasoning`` item is followed by another item (not the
end of the input), and an item that has an id the response gave (``fc_``) needs the reasoning
item before it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_ID = re.compile(r"[a-zA-Z0-9_-]+")
_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_IMAGE_MEDIA = ("image/jpeg", "image/png", "image/gif", "image/webp")
_ASSISTANT_ONLY = {"tool_use", "thinking", "redacted_thinking", "server_tool_use"}
_USER_ONLY = {"tool_result", "image", "document", "search_result"}
_RESULT_BLOCKS = {"text", "image", "document", "search_result", "tool_reference"}
# OpenAI's part types (Chat Completions' and the Responses API's): no Anthropic block has them.
_OPENAI_PARTS = {
    *("image_url", "input_audio", "file", "refusal", "reasoning"),
    *("input_text", "input_image", "input_file", "output_text"),
}


_NOT_PDF = (".docx", ".doc", ".txt", ".md", ".csv", ".html", ".json", ".zip", ".png")


def _blank(text: Any) -> bool:
    return not isinstance(text, str) or not text.strip()


def _source_problems(block: Mapping[str, Any], where: str) -> list[str]:
    source = block.get("source")
    if not isinstance(source, Mapping):
        return [f"{where}.source: missing"]
    kind = source.get("type")
    if kind == "base64":
        media = source.get("media_type")
        wanted = _IMAGE_MEDIA if block["type"] == "image" else ("application/pdf",)
        ok = media in wanted and isinstance(source.get("data"), str) and source["data"]
        return [] if ok else [f"{where}.source: base64 {media!r} not taken"]
    if kind == "url":
        url = source.get("url")
        ok = isinstance(url, str) and url.startswith(("https://", "http://"))
        path = url.split("?", 1)[0].split("#", 1)[0].lower() if ok else ""
        svg = path.endswith(".svg")
        # A document by URL is a PDF's (the API's URL source is a PDF source).
        not_pdf = block["type"] == "document" and path.endswith(_NOT_PDF)
        return (
            []
            if ok and not svg and not not_pdf
            else [f"{where}: url {url!r} not a {block['type']} the API reads"]
        )
    if kind == "file":
        return [] if isinstance(source.get("file_id"), str) else [f"{where}: file_id"]
    if block["type"] == "document" and kind == "text":
        return [] if isinstance(source.get("data"), str) else [f"{where}: text data"]
    if block["type"] == "document" and kind == "content":
        return []
    return [f"{where}.source.type: {kind!r} not taken for {block['type']}"]


def _block_problems(block: Any, where: str, role: str, *, last: bool) -> list[str]:
    if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
        return [f"{where}: not a typed block"]
    kind = block["type"]
    if kind in _OPENAI_PARTS:
        return [f"{where}.type: {kind!r} is an OpenAI part, not an Anthropic block"]
    problems: list[str] = []
    if kind in _ASSISTANT_ONLY and role != "assistant":
        problems.append(f"{where}: {kind} in a {role} message")
    if kind in _USER_ONLY and role != "user":
        problems.append(f"{where}: {kind} in a {role} message")
    if kind == "text" and _blank(block.get("text")) and not last:
        problems.append(f"{where}.text: text content blocks must be non-empty")
    if kind in ("image", "document"):
        problems += _source_problems(block, where)
    if kind == "tool_use":
        if not _ID.fullmatch(str(block.get("id", ""))):
            problems.append(f"{where}.id: {block.get('id')!r} does not match ^[a-zA-Z0-9_-]+$")
        if not _NAME.fullmatch(str(block.get("name", ""))):
            problems.append(f"{where}.name: {block.get('name')!r} is not a tool name")
        if not isinstance(block.get("input"), Mapping):
            problems.append(f"{where}.input: not an object")
    if kind == "thinking" and not (
        isinstance(block.get("thinking"), str) and isinstance(block.get("signature"), str)
    ):
        problems.append(f"{where}: a thinking block needs its thinking and signature")
    if kind == "tool_result":
        if not _ID.fullmatch(str(block.get("tool_use_id", ""))):
            problems.append(f"{where}.tool_use_id: {block.get('tool_use_id')!r} not an id")
        inner = block.get("content")
        empty = not inner or (isinstance(inner, str) and _blank(inner))
        if block.get("is_error") is True and "content" in block and empty:
            problems.append(f"{where}: content cannot be empty if `is_error` is true")
        for k, sub in enumerate(inner if isinstance(inner, list) else ()):
            sub_where = f"{where}.content[{k}]"
            if not isinstance(sub, Mapping) or sub.get("type") not in _RESULT_BLOCKS:
                problems.append(f"{sub_where}: not a block a tool_result holds")
            else:
                problems += _block_problems(sub, sub_where, "user", last=False)
    return problems


def _cache_marks(value: Any) -> int:
    # A tool's schema and a call's input are the caller's data: a key there is no breakpoint.
    if isinstance(value, Mapping):
        data = ("input", "input_schema", "cache_control")
        return ("cache_control" in value) + sum(
            _cache_marks(v) for k, v in value.items() if k not in data
        )
    if isinstance(value, list):
        return sum(_cache_marks(v) for v in value)
    return 0


def anthropic_problems(payload: Mapping[str, Any]) -> list[str]:
    """What the Anthropic Messages API would refuse in ``payload`` (``system`` and
    ``messages``; a ``None`` system is one left out of the request)."""
    problems: list[str] = []
    system = payload.get("system")
    if isinstance(system, list):
        for j, block in enumerate(system):
            if not isinstance(block, Mapping) or block.get("type") != "text":
                problems.append(f"system[{j}]: the system prompt takes text blocks only")
            elif _blank(block.get("text")):
                problems.append(f"system[{j}].text: text content blocks must be non-empty")
    elif system is not None and not isinstance(system, str):
        problems.append("system: not a string or a list of text blocks")
    messages = payload["messages"]
    if not messages:
        return [*problems, "messages: at least one message is required"]
    problems += _cache_limit(payload)
    first = messages[0]
    opens = (
        isinstance(first["content"], list)
        and first["content"][:1] != []
        and (first["content"][0].get("type") == "compaction")
    )
    if first["role"] != "user" and not opens:
        problems.append("messages[0].role: the first message must be the user's")
    for i in range(len(messages)):
        problems += _message_problems(messages, i)
    return problems + _tool_loop_thinking(payload)


def _tool_loop_thinking(payload: Mapping[str, Any]) -> list[str]:
    thinking = payload.get("thinking")
    messages = payload["messages"]
    if not isinstance(thinking, Mapping) or thinking.get("type") != "enabled":
        return []
    if len(messages) < 2 or not _ids(messages[-1], "tool_result", "tool_use_id"):
        return []
    i = len(messages) - 2
    content = messages[i].get("content")
    first = content[0] if isinstance(content, list) and content else None
    if messages[i].get("role") != "assistant" or not isinstance(first, Mapping):
        return []
    if first.get("type") in ("thinking", "redacted_thinking"):
        return []
    return [
        f"messages[{i}].content[0].type: Expected `thinking` or `redacted_thinking`, but found "
        f"`{first.get('type')}`: with thinking enabled, the assistant message the tool results "
        "answer must start with its thinking block"
    ]


def _cache_limit(payload: Mapping[str, Any]) -> list[str]:
    # Counted over the tools too ("A maximum of 4 blocks with cache_control may be provided").
    marks = sum(_cache_marks(payload.get(key)) for key in ("tools", "system", "messages"))
    return [f"cache_control: {marks} blocks, at most 4 may be"] if marks > 4 else []


def _message_problems(messages: Sequence[Any], i: int) -> list[str]:
    msg = messages[i]
    where = f"messages[{i}]"
    role = msg.get("role")
    if role not in ("user", "assistant"):
        return [f"{where}.role: {role!r} is not user or assistant"]
    if set(msg) - {"role", "content"}:
        return [f"{where}: fields {sorted(set(msg) - {'role', 'content'})} are not taken"]
    last = i == len(messages) - 1 and role == "assistant"
    content = msg["content"]
    if isinstance(content, str):
        blocks = [{"type": "text", "text": content}]
    elif isinstance(content, list) and content:
        blocks = content
    else:
        return [f"{where}.content: must be a non-empty string or list of blocks"]
    problems: list[str] = []
    for j, block in enumerate(blocks):
        problems += _block_problems(block, f"{where}.content[{j}]", role, last=last)
    if (
        last
        and blocks[-1].get("type") == "text"
        and blocks[-1]["text"] != blocks[-1]["text"].rstrip()
    ):
        problems.append(f"{where}: final assistant content cannot end with trailing whitespace")
    kinds = [b.get("type") for b in blocks if isinstance(b, Mapping)]
    if "tool_result" in kinds and kinds.index("tool_result") > 0 and kinds[0] != "tool_result":
        problems.append(f"{where}: tool_result blocks must come first")
    if "tool_result" in kinds and any(
        kinds[j] != "tool_result" and kinds[j + 1] == "tool_result" for j in range(len(kinds) - 1)
    ):
        problems.append(f"{where}: tool_result blocks must come first")
    calls = _ids(messages[i - 1], "tool_use", "id") if i > 0 else []
    answers = _ids(msg, "tool_result", "tool_use_id")
    if len(answers) != len(set(answers)):
        problems.append(f"{where}: a tool_use is answered twice")
    for answer in set(answers) - set(calls):
        problems.append(f"{where}: tool_result {answer!r} answers no tool_use right before it")
    if role == "assistant" and i + 1 < len(messages):
        unanswered = set(_ids(msg, "tool_use", "id")) - set(
            _ids(messages[i + 1], "tool_result", "tool_use_id")
        )
        for call in sorted(unanswered):
            problems.append(f"{where}: tool_use {call!r} has no tool_result in the next message")
    return problems


def _ids(msg: Mapping[str, Any], kind: str, key: str) -> list[Any]:
    content = msg.get("content")
    blocks = content if isinstance(content, list) else []
    return [b.get(key) for b in blocks if isinstance(b, Mapping) and b.get("type") == kind]


# ------------------------------------------------------------------------------------- OpenAI


def openai_problems(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """What Chat Completions would refuse in ``messages``."""
    problems: list[str] = []
    waiting: dict[str, int] = {}  # the calls of the last assistant message, unanswered
    answerable: set[str] = set()
    for i, msg in enumerate(messages):
        where = f"messages[{i}]"
        role = msg.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool"):
            problems.append(f"{where}.role: {role!r}")
            continue
        if role != "tool":
            problems += [f"{where}: tool call {c!r} unanswered" for c in waiting]
            waiting, answerable = {}, set()
        content = msg.get("content")
        calls = msg.get("tool_calls") or []
        if content is None and not (role == "assistant" and (calls or msg.get("refusal"))):
            problems.append(f"{where}.content: null without tool_calls")
        if isinstance(content, list) and not content:
            problems.append(f"{where}.content: an empty list")
        if role == "tool":
            call_id = str(msg.get("tool_call_id"))
            if call_id not in answerable:
                problems.append(f"{where}: tool message {call_id!r} follows no call of it")
            waiting.pop(call_id, None)
            answerable.discard(call_id)
            if isinstance(content, list) and any(p.get("type") != "text" for p in content):
                problems.append(f"{where}.content: a tool message holds text parts only")
        allowed = {"system": ("text",), "developer": ("text",), "assistant": ("text", "refusal")}
        parts = content if isinstance(content, list) and role in allowed else []
        if any(p.get("type") not in allowed[role] for p in parts):
            problems.append(f"{where}.content: {role} takes {allowed[role]} parts only")
        for k, call in enumerate(calls):
            function = call.get(call.get("type", "function")) or {}
            if not _NAME.fullmatch(str(function.get("name", ""))):
                problems.append(f"{where}.tool_calls[{k}]: name {function.get('name')!r}")
            if call.get("type", "function") == "function" and not isinstance(
                function.get("arguments"), str
            ):
                problems.append(f"{where}.tool_calls[{k}].arguments: not a string")
            if len(str(call["id"])) > 40:
                problems.append(f"{where}.tool_calls[{k}].id: over 40 characters")
            waiting[call["id"]] = i
            answerable.add(call["id"])
        if "name" in msg and not _NAME.fullmatch(str(msg["name"])):
            problems.append(f"{where}.name: {msg['name']!r}")
        if calls and msg.get("function_call") is not None:
            problems.append(f"{where}: both tool_calls and a legacy function_call")
    # The calls of a last assistant message may be waiting for their results.
    last = messages[-1]["role"] if messages else None
    if last == "tool":
        problems += [f"tool call {c!r} unanswered" for c in waiting]
    return problems


def responses_problems(items: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the Responses API would refuse in ``input``."""
    problems: list[str] = []
    calls: dict[str, int] = {}
    outputs: set[str] = set()
    for i, item in enumerate(items):
        kind = item.get("type", "message")
        where = f"input[{i}]"
        if len(str(item.get("call_id", ""))) > 64:
            problems.append(f"{where}.call_id: over 64 characters")
        if kind == "message":
            if item.get("role") not in ("system", "developer", "user", "assistant"):
                problems.append(f"{where}.role: {item.get('role')!r}")
            content = item.get("content")
            if not isinstance(content, (str, list)) or content == []:
                problems.append(f"{where}.content: {content!r}")
        elif kind in ("function_call", "custom_tool_call"):
            if not _NAME.fullmatch(str(item.get("name", ""))):
                problems.append(f"{where}.name: {item.get('name')!r}")
            if item["call_id"] in calls:
                problems.append(f"{where}.call_id: {item['call_id']!r} repeated")
            calls[item["call_id"]] = i
            has_id = str(item.get("id", "")).startswith("fc_")
            before = items[i - 1].get("type") if i else None
            if has_id and before not in ("reasoning", "function_call", "custom_tool_call"):
                problems.append(f"{where}: an item with its id needs its reasoning item")
        elif kind in ("function_call_output", "custom_tool_call_output"):
            if item["call_id"] not in calls:
                problems.append(f"{where}: output {item['call_id']!r} of no call before it")
            outputs.add(item["call_id"])
        elif kind == "reasoning" and i + 1 == len(items):
            problems.append(f"{where}: a reasoning item without its following item")
    # The calls of the last items may be waiting for their outputs, as in a chat history.
    later = [i for i, item in enumerate(items) if item.get("type", "message") == "message"]
    for call_id in calls.keys() - outputs:
        if later and later[-1] > calls[call_id]:
            problems.append(f"input[{calls[call_id]}]: no tool output for call {call_id!r}")
    return problems


def openai_tools_problems(tools: Sequence[Any], *, strict_only: bool = False) -> list[str]:
    """What OpenAI would refuse in a request's ``tools`` (Chat Completions' shape); with
    ``strict_only`` (``chat.completions.parse``), any function tool that is not strict."""
    problems: list[str] = []
    names = [t.get("function", {}).get("name") for t in tools if isinstance(t, Mapping)]
    problems += [f"tools: {n!r} given twice" for n in sorted(set(names)) if names.count(n) > 1]
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(function, Mapping):
            continue
        if function.get("strict") is not True:
            if strict_only:
                problems.append(f"tools[{i}]: `{function.get('name')}` is not strict")
            continue
        problems += _strict_schema_problems(function.get("parameters"), f"tools[{i}].parameters")
    return problems


def _strict_schema_problems(schema: Any, where: str) -> list[str]:
    if not isinstance(schema, Mapping):
        return []
    problems: list[str] = []
    kinds = schema.get("type")
    if kinds == "object" or (isinstance(kinds, list) and "object" in kinds):
        if schema.get("additionalProperties") is not False:
            problems.append(f"{where}: additionalProperties must be false in strict mode")
        properties = schema.get("properties", {})
        missing = sorted(set(properties) - set(schema.get("required", [])))
        if missing:
            problems.append(f"{where}.required: strict mode requires every property: {missing}")
        for name, sub in properties.items():
            problems += _strict_schema_problems(sub, f"{where}.properties.{name}")
    if isinstance(schema.get("items"), Mapping):
        problems += _strict_schema_problems(schema["items"], f"{where}.items")
    return problems
