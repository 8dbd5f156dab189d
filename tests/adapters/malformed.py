"""Malformed provider payloads, each with the index, field and words the error must name.

Every case is one mistake that a provider (or ctxpack) rejects; ``pairing`` marks the mistakes
that are only about tool pairing or turn order, which ``validate_*(..., tool_pairing=False)``
and ``pack()`` let through and repair.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Case:
    name: str
    payload: Any
    index: int | None
    field: str | None
    says: str
    pairing: bool = False


def _call(call_id: str = "c1", **function: Any) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "f", "arguments": "{}", **function},
    }


_USER = {"role": "user", "content": "hi"}
_PDF_URL = "data:application/pdf;base64,"
_PDF = {
    "type": "document",
    "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERg=="},
}
_FOUND = {
    "type": "search_result",
    "source": "https://x",
    "title": "X",
    "content": [{"type": "text", "text": "x"}],
}


def _image_url(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


_CALLING = {"role": "assistant", "content": None, "tool_calls": [_call()]}

OPENAI: list[Case] = [
    Case("not a list", {"role": "user", "content": "hi"}, None, None, "expected a list"),
    Case("entry is a string", ["hello"], 0, None, "must be an object, got str"),
    Case("entry is null", [_USER, None], 1, None, "must be an object, got null"),
    Case("role missing", [{"content": "hi"}], 0, "role", "is missing"),
    Case("unknown role", [{"role": "bot", "content": "hi"}], 0, "role", "'bot' is not one of"),
    Case(
        "legacy function role",
        [{"role": "function", "name": "f", "content": "1"}],
        0,
        "role",
        "legacy 'function' role",
    ),
    Case("user content missing", [{"role": "user"}], 0, "content", "is missing"),
    Case(
        "content is a number",
        [{"role": "user", "content": 42}],
        0,
        "content",
        "a string or a list of parts, got int",
    ),
    Case("empty parts", [{"role": "user", "content": []}], 0, "content", "empty list of parts"),
    Case(
        "part not an object",
        [{"role": "user", "content": ["hi"]}],
        0,
        "content[0]",
        "must be an object",
    ),
    Case(
        "part without type",
        [{"role": "user", "content": [{"text": "hi"}]}],
        0,
        "content[0].type",
        "needs a string type",
    ),
    Case(
        "unknown part type",
        [{"role": "user", "content": [{"type": "video"}]}],
        0,
        "content[0].type",
        "unknown part type 'video'",
    ),
    Case(
        "text part without text",
        [{"role": "user", "content": [{"type": "text"}]}],
        0,
        "content[0].text",
        "is missing",
    ),
    Case(
        "image_url as a string",
        [{"role": "user", "content": [{"type": "image_url", "image_url": "https://x/y.png"}]}],
        0,
        "content[0].image_url",
        "must be an object",
    ),
    Case(
        "image without url",
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"detail": "low"}}]}],
        0,
        "content[0].image_url.url",
        "is missing",
    ),
    Case(
        "image detail not a string",
        [
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": "u", "detail": 5}}],
            }
        ],
        0,
        "content[0].image_url.detail",
        "must be a string",
    ),
    Case(
        "data URL image not base64",
        [{"role": "user", "content": [_image_url("data:image/png;base64,iVBO%20w0K!")]}],
        0,
        "content[0].image_url.url",
        "is not valid base64",
    ),
    Case(
        "data URL image with a line break in its base64",
        [{"role": "user", "content": [_image_url("data:image/jpeg;base64,/9j/\n4AAQ")]}],
        0,
        "content[0].image_url.url",
        "is not valid base64",
    ),
    Case(
        "Responses image data URL not base64",
        [
            {
                "role": "user",
                "content": [{"type": "input_image", "image_url": "data:image/png;base64,é=="}],
            }
        ],
        0,
        "content[0].image_url",
        "is not valid base64",
    ),
    Case(
        "audio without its payload",
        [{"role": "user", "content": [{"type": "input_audio"}]}],
        0,
        "content[0].input_audio",
        "must be an object",
    ),
    Case(
        "audio without its format",
        [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "AAA"}}]}],
        0,
        "content[0].input_audio.format",
        "is missing",
    ),
    Case(
        "file without its payload",
        [{"role": "user", "content": [{"type": "file"}]}],
        0,
        "content[0].file",
        "must be an object",
    ),
    Case(
        "an Anthropic block in an OpenAI message",
        [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
            },
        ],
        1,
        "content[0].type",
        "from_anthropic",
    ),
    Case(
        "image in a system message",
        [{"role": "system", "content": [{"type": "image_url", "image_url": {"url": "https://x"}}]}],
        0,
        "content[0]",
        "only hold text parts",
    ),
    Case(
        "name not a string",
        [{"role": "user", "content": "hi", "name": 7}],
        0,
        "name",
        "must be a string",
    ),
    Case(
        "tool without tool_call_id",
        [_USER, _CALLING, {"role": "tool", "content": "1"}],
        2,
        "tool_call_id",
        "is missing",
    ),
    Case(
        "tool with empty tool_call_id",
        [{"role": "tool", "content": "1", "tool_call_id": ""}],
        0,
        "tool_call_id",
        "non-empty string",
    ),
    Case(
        "tool content missing",
        [_USER, _CALLING, {"role": "tool", "tool_call_id": "c1"}],
        2,
        "content",
        "is missing",
    ),
    Case(
        "assistant with nothing",
        [_USER, {"role": "assistant", "content": None}],
        1,
        "content",
        "only an assistant message that calls tools may omit it",
    ),
    Case(
        "tool_calls on a user",
        [{"role": "user", "content": "hi", "tool_calls": [_call()]}],
        0,
        "tool_calls",
        "only an assistant message may call tools",
    ),
    Case(
        "tool_calls not a list",
        [_USER, {"role": "assistant", "content": None, "tool_calls": _call()}],
        1,
        "tool_calls",
        "must be a list",
    ),
    Case(
        "tool call not an object",
        [_USER, {"role": "assistant", "content": None, "tool_calls": ["f()"]}],
        1,
        "tool_calls[0]",
        "must be an object",
    ),
    Case(
        "tool call without id",
        [
            _USER,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
        ],
        1,
        "tool_calls[0].id",
        "is missing",
    ),
    Case(
        "tool call with an empty id",
        [_USER, {"role": "assistant", "content": None, "tool_calls": [_call("")]}],
        1,
        "tool_calls[0].id",
        "non-empty",
    ),
    Case(
        "tool call with an empty name",
        [_USER, {"role": "assistant", "content": None, "tool_calls": [_call(name="")]}],
        1,
        "tool_calls[0].function.name",
        "non-empty",
    ),
    Case(
        "tool call of another type",
        [
            _USER,
            {"role": "assistant", "content": None, "tool_calls": [{**_call(), "type": "code"}]},
        ],
        1,
        "tool_calls[0].type",
        "is not 'function'",
    ),
    Case(
        "tool call without function",
        [
            _USER,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function"}],
            },
        ],
        1,
        "tool_calls[0].function",
        "is missing",
    ),
    Case(
        "tool call without arguments",
        [
            _USER,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f"}}],
            },
        ],
        1,
        "tool_calls[0].function.arguments",
        "needs its arguments",
    ),
    Case(
        "arguments as an object",
        [_USER, {"role": "assistant", "content": None, "tool_calls": [_call(arguments={"a": 1})]}],
        1,
        "tool_calls[0].function.arguments",
        "json.dumps",
    ),
    Case(
        "tool call without name",
        [
            _USER,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"arguments": "{}"}}],
            },
        ],
        1,
        "tool_calls[0].function.name",
        "is missing",
    ),
    Case(
        "function_call without arguments",
        [_USER, {"role": "assistant", "content": None, "function_call": {"name": "f"}}],
        1,
        "function_call.arguments",
        "needs its arguments",
    ),
    Case(
        "orphaned tool result",
        [_USER, {"role": "tool", "tool_call_id": "c9", "content": "1"}],
        1,
        "tool_call_id",
        "orphaned tool result",
        pairing=True,
    ),
    Case(
        "unanswered call before a user",
        [_USER, _CALLING, _USER],
        1,
        "tool_calls[0]",
        "has no tool message answering it",
        pairing=True,
    ),
    Case(
        "partly answered trailing call",
        [
            _USER,
            {"role": "assistant", "content": None, "tool_calls": [_call("a"), _call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
        ],
        1,
        "tool_calls[1]",
        "'b' has no tool message",
        pairing=True,
    ),
    Case(
        "answered twice",
        [
            _USER,
            _CALLING,
            {"role": "tool", "tool_call_id": "c1", "content": "1"},
            {"role": "tool", "tool_call_id": "c1", "content": "2"},
        ],
        3,
        "tool_call_id",
        "already answered",
        pairing=True,
    ),
    Case(
        "assistant audio reply without a string id",
        [_USER, {"role": "assistant", "content": None, "audio": {"id": 5}}],
        1,
        "audio.id",
        "must be a string",
    ),
    Case(
        "assistant audio reply not an object",
        [_USER, {"role": "assistant", "content": None, "audio": "audio_1"}],
        1,
        "audio",
        "must be an object",
    ),
    Case(
        "refusal not a string",
        [_USER, {"role": "assistant", "content": None, "refusal": 5}],
        1,
        "refusal",
        "must be a string",
    ),
    Case(
        "Responses image URL not a string",
        [{"role": "user", "content": [{"type": "input_image", "image_url": 5}]}],
        0,
        "content[0].image_url",
        "must be a string",
    ),
    Case(
        "Responses image detail not a string",
        [{"role": "user", "content": [{"type": "input_image", "file_id": "f", "detail": 1}]}],
        0,
        "content[0].detail",
        "must be a string",
    ),
    Case(
        "audio data not base64",
        [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "Ukl!"}}]}],
        0,
        "content[0].input_audio.data",
        "is not valid base64",
    ),
    Case(
        "file data URL not base64",
        [{"role": "user", "content": [{"type": "file", "file": {"file_data": _PDF_URL + "J%"}}]}],
        0,
        "content[0].file.file_data",
        "is not valid base64",
    ),
    Case(
        "Responses file data not base64",
        [{"role": "user", "content": [{"type": "input_file", "file_data": "JVBE\nRg=="}]}],
        0,
        "content[0].file_data",
        "is not valid base64",
    ),
]

_TOOL_USE = {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
_RESULT = {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}


# A tool the API runs itself, called and answered in the assistant's turn.
_SEARCH = {
    "type": "server_tool_use",
    "id": "srvtoolu_1",
    "name": "web_search",
    "input": {"query": "weather Oslo"},
}
_SEARCHED = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": [
        {
            "type": "web_search_result",
            "url": "https://example.com/oslo",
            "title": "Oslo",
            "encrypted_content": "EqQ...",
        }
    ],
}
_SAID = {"type": "text", "text": "Searching."}
_MCP_USE = {
    "type": "mcp_tool_use",
    "id": "mcptoolu_1",
    "name": "read_env",
    "server_name": "fs",
    "input": {},
}
_MCP_RESULT = {
    "type": "mcp_tool_result",
    "tool_use_id": "mcptoolu_1",
    "is_error": False,
    "content": [{"type": "text", "text": "REGION=eu"}],
}
# Programmatic tool calling: the code the API runs calls a client tool, so its result comes in a
# later assistant turn.
_CODE_RUN = {
    "type": "server_tool_use",
    "id": "srvtoolu_2",
    "name": "code_execution",
    "input": {"code": "print(await f())"},
}
_CALLED_BY_CODE = {
    "type": "tool_use",
    "id": "toolu_1",
    "name": "f",
    "input": {},
    "caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_2"},
}

_CODE_RAN = {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_2", "content": {}}


def _messages(*messages: Any, system: Any = None) -> dict[str, Any]:
    return {"system": system, "messages": list(messages)}


ANTHROPIC: list[Case] = [
    Case("payload is a string", "hello", None, None, "expected a list"),
    Case("messages missing", {"system": "s"}, None, "messages", "is missing"),
    Case("messages not a list", {"messages": {"role": "user"}}, None, None, "expected a list"),
    Case(
        "system is a number",
        _messages(_USER, system=3),
        None,
        "system",
        "a string or a list of text blocks",
    ),
    Case(
        "image in system",
        _messages(_USER, system=[{"type": "image", "source": {"type": "url", "url": "https://x"}}]),
        None,
        "system[0]",
        "text blocks only",
    ),
    Case("entry is a list", _messages(["user", "hi"]), 0, None, "must be an object, got list"),
    Case("role missing", _messages({"content": "hi"}), 0, "role", "is missing"),
    Case(
        "system role in messages",
        _messages({"role": "system", "content": "s"}),
        0,
        "role",
        "payload's 'system'",
    ),
    Case(
        "tool role",
        _messages(_USER, {"role": "tool", "content": "1"}),
        1,
        "role",
        "'tool' is not one of user, assistant",
    ),
    Case("content missing", _messages({"role": "user"}), 0, "content", "is missing"),
    Case("content null", _messages({"role": "user", "content": None}), 0, "content", "is missing"),
    Case(
        "content is an object",
        _messages({"role": "user", "content": {"type": "text"}}),
        0,
        "content",
        "a string or a list of blocks, got dict",
    ),
    Case(
        "empty block list",
        _messages({"role": "user", "content": []}),
        0,
        "content",
        "empty list of blocks",
    ),
    Case(
        "block not an object",
        _messages({"role": "user", "content": ["hi"]}),
        0,
        "content[0]",
        "must be an object",
    ),
    Case(
        "block without type",
        _messages({"role": "user", "content": [{"text": "hi"}]}),
        0,
        "content[0].type",
        "needs a string type",
    ),
    Case(
        "unknown block type",
        _messages({"role": "user", "content": [{"type": "video"}]}),
        0,
        "content[0].type",
        "unknown block type 'video'",
    ),
    Case(
        "OpenAI image part",
        _messages(
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x"}}]}
        ),
        0,
        "content[0].type",
        "unknown block type",
    ),
    Case(
        "text block without text",
        _messages({"role": "user", "content": [{"type": "text"}]}),
        0,
        "content[0].text",
        "is missing",
    ),
    Case(
        "image without source",
        _messages({"role": "user", "content": [{"type": "image"}]}),
        0,
        "content[0].source",
        "must be an object",
    ),
    Case(
        "base64 image without data",
        _messages(
            {
                "role": "user",
                "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png"}}
                ],
            }
        ),
        0,
        "content[0].source.data",
        "is missing",
    ),
    Case(
        "base64 image data not base64",
        _messages(
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "iV*BO"},
                    }
                ],
            }
        ),
        0,
        "content[0].source.data",
        "is not valid base64",
    ),
    Case(
        "base64 document data with excess padding",
        _messages(
            {
                "role": "user",
                "content": [
                    {
                        "type": "document",
                        "source": {
                            "type": "base64",
                            "media_type": "application/pdf",
                            "data": "JVBERg===",
                        },
                    }
                ],
            }
        ),
        0,
        "content[0].source.data",
        "is not valid base64",
    ),
    Case(
        "image source of unknown type",
        _messages({"role": "user", "content": [{"type": "image", "source": {"type": "ftp"}}]}),
        0,
        "content[0].source.type",
        "is not a source type",
    ),
    Case(
        "tool_use in a user message",
        _messages({"role": "user", "content": [_TOOL_USE]}),
        0,
        "content[0]",
        "belongs in an assistant message",
    ),
    Case(
        "tool_result in an assistant message",
        _messages(_USER, {"role": "assistant", "content": [_RESULT]}),
        1,
        "content[0]",
        "belongs in a user message",
    ),
    Case(
        "tool_use without input",
        _messages(
            _USER, {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f"}]}
        ),
        1,
        "content[0].input",
        "needs its input",
    ),
    Case(
        "tool_use input as a string",
        _messages(_USER, {"role": "assistant", "content": [{**_TOOL_USE, "input": "{}"}]}),
        1,
        "content[0].input",
        "must be an object, got str",
    ),
    Case(
        "tool_use input holding bytes",
        _messages(_USER, {"role": "assistant", "content": [{**_TOOL_USE, "input": {"q": b"x"}}]}),
        1,
        "content[0].input",
        "input.q: a bytes value",
    ),
    Case(
        "tool_use input holding NaN",
        _messages(
            _USER, {"role": "assistant", "content": [{**_TOOL_USE, "input": {"n": float("nan")}}]}
        ),
        1,
        "content[0].input",
        "input.n: nan",
    ),
    Case(
        "tool_use input holding a lone surrogate",
        _messages(
            _USER, {"role": "assistant", "content": [{**_TOOL_USE, "input": {"q": ["\ud800"]}}]}
        ),
        1,
        "content[0].input",
        "input.q[0]: a string holding a lone surrogate",
    ),
    Case(
        "tool_result content block with a list as its type",
        _messages(
            _USER,
            {"role": "assistant", "content": [_TOOL_USE]},
            {"role": "user", "content": [{**_RESULT, "content": [{"type": ["text"]}]}]},
        ),
        2,
        "content[0].content[0].type",
        "needs a string type",
    ),
    Case(
        "role an int too long to write",
        _messages({"role": 10**5000, "content": "hi"}),
        0,
        "role",
        "an int of 16610 bits is not one of",
    ),
    Case(
        "tool_use without id",
        _messages(
            _USER,
            {"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": {}}]},
        ),
        1,
        "content[0].id",
        "is missing",
    ),
    Case(
        "tool_result without tool_use_id",
        _messages(
            _USER,
            {"role": "assistant", "content": [_TOOL_USE]},
            {"role": "user", "content": [{"type": "tool_result", "content": "ok"}]},
        ),
        2,
        "content[0].tool_use_id",
        "is missing",
    ),
    Case(
        "tool_result is_error as a string",
        _messages(
            _USER,
            {"role": "assistant", "content": [_TOOL_USE]},
            {"role": "user", "content": [{**_RESULT, "is_error": "yes"}]},
        ),
        2,
        "content[0].is_error",
        "true or false",
    ),
    Case(
        "tool_result holding a tool_use",
        _messages(
            _USER,
            {"role": "assistant", "content": [_TOOL_USE]},
            {"role": "user", "content": [{**_RESULT, "content": [_TOOL_USE]}]},
        ),
        2,
        "content[0].content[0]",
        "belongs in an assistant",
    ),
    Case(
        "tool_result content a number",
        _messages(
            _USER,
            {"role": "assistant", "content": [_TOOL_USE]},
            {"role": "user", "content": [{**_RESULT, "content": 5}]},
        ),
        2,
        "content[0].content",
        "a string or a list of blocks",
    ),
    Case(
        "thinking without signature",
        _messages(
            _USER, {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]}
        ),
        1,
        "content[0].signature",
        "is missing",
    ),
    Case(
        "thinking in a user message",
        _messages(
            {"role": "user", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}]}
        ),
        0,
        "content[0]",
        "belongs in an assistant message",
    ),
    Case(
        "redacted_thinking without data",
        _messages(_USER, {"role": "assistant", "content": [{"type": "redacted_thinking"}]}),
        1,
        "content[0].data",
        "is missing",
    ),
    Case(
        "assistant first",
        _messages({"role": "assistant", "content": "hi"}),
        0,
        "role",
        "first message must be a user message",
        pairing=True,
    ),
    Case(
        "two user turns", _messages(_USER, _USER), 1, "role", "roles must alternate", pairing=True
    ),
    Case(
        "orphaned tool_result",
        _messages(
            _USER, {"role": "assistant", "content": "hi"}, {"role": "user", "content": [_RESULT]}
        ),
        2,
        "content[0].tool_use_id",
        "orphaned tool_result",
        pairing=True,
    ),
    Case(
        "tool_result given twice",
        _messages(
            _USER,
            {"role": "assistant", "content": [_TOOL_USE]},
            {"role": "user", "content": [_RESULT, _RESULT]},
        ),
        2,
        "content[1].tool_use_id",
        "already answered",
        pairing=True,
    ),
    Case(
        "unanswered tool_use",
        _messages(_USER, {"role": "assistant", "content": [_TOOL_USE]}, _USER),
        1,
        "content[0]",
        "has no tool_result in the next message",
        pairing=True,
    ),
    Case(
        "repeated tool_use id",
        _messages(
            _USER,
            {"role": "assistant", "content": [_TOOL_USE]},
            {"role": "user", "content": [_RESULT]},
            {"role": "assistant", "content": [_TOOL_USE]},
        ),
        3,
        "content[0].id",
        "repeats the id",
        pairing=True,
    ),
    Case(
        "search_result with a string content",
        _messages(
            {
                "role": "user",
                "content": [
                    {"type": "search_result", "source": "s", "title": "t", "content": "hello"}
                ],
            }
        ),
        0,
        "content[0].content",
        "must be a list of text blocks",
    ),
    Case(
        "search_result without a title",
        _messages(
            {
                "role": "user",
                "content": [{"type": "search_result", "source": "s", "content": []}],
            }
        ),
        0,
        "content[0].title",
        "is missing",
    ),
    Case(
        "base64 document that is not a PDF",
        _messages(
            {
                "role": "user",
                "content": [
                    {
                        "type": "document",
                        "source": {"type": "base64", "media_type": "text/plain", "data": "aGk="},
                    }
                ],
            }
        ),
        0,
        "content[0].source.media_type",
        "not a base64 document's media type",
    ),
    Case(
        "text before a tool_result",
        _messages(
            _USER,
            {"role": "assistant", "content": [_TOOL_USE]},
            {"role": "user", "content": [{"type": "text", "text": "hurry"}, _RESULT]},
        ),
        2,
        "content[1]",
        "tool_result blocks first",
        pairing=True,
    ),
    Case(
        "empty assistant turn",
        _messages(_USER, {"role": "assistant", "content": ""}, _USER),
        1,
        "content",
        "is empty",
        pairing=True,
    ),
    Case(
        "whitespace-only user turn",
        _messages(
            _USER, {"role": "assistant", "content": "ok"}, {"role": "user", "content": " \n"}
        ),
        2,
        "content",
        "is empty",
        pairing=True,
    ),
    Case(
        "blank text block",
        _messages(
            {
                "role": "user",
                "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": ""}],
            }
        ),
        0,
        "content[1].text",
        "non-whitespace text",
        pairing=True,
    ),
    Case(
        "server tool result without tool_use_id",
        _messages(
            _USER, {"role": "assistant", "content": [_SEARCH, {**_SEARCHED, "tool_use_id": 7}]}
        ),
        1,
        "content[1].tool_use_id",
        "must be a string, got int",
    ),
    Case(
        "mcp_tool_use without input",
        _messages(
            _USER,
            {"role": "assistant", "content": [{k: v for k, v in _MCP_USE.items() if k != "input"}]},
        ),
        1,
        "content[0].input",
        "mcp_tool_use block needs its input",
    ),
    Case(
        "server_tool_use without its result",
        _messages(_USER, {"role": "assistant", "content": [_SEARCH, _SAID]}, _USER),
        1,
        "content[0]",
        "server_tool_use 'srvtoolu_1' has no result after it in its message",
        pairing=True,
    ),
    Case(
        "server tool result without its server_tool_use",
        _messages(_USER, {"role": "assistant", "content": [_SAID, _SEARCHED]}),
        1,
        "content[1].tool_use_id",
        "'srvtoolu_1' answers no server_tool_use before it (an orphaned web_search_tool_result)",
        pairing=True,
    ),
    Case(
        "server tool result before its server_tool_use",
        _messages(_USER, {"role": "assistant", "content": [_SEARCHED, _SEARCH]}),
        1,
        "content[0].tool_use_id",
        "answers no server_tool_use before it",
        pairing=True,
    ),
    Case(
        "server tool result given twice",
        _messages(_USER, {"role": "assistant", "content": [_SEARCH, _SEARCHED, _SEARCHED]}),
        1,
        "content[2].tool_use_id",
        "'srvtoolu_1' is already answered",
        pairing=True,
    ),
    Case(
        "server tool result of an earlier turn's finished call",
        _messages(
            _USER,
            {"role": "assistant", "content": [_SEARCH, _SEARCHED]},
            _USER,
            {"role": "assistant", "content": [_SEARCHED]},
        ),
        3,
        "content[0].tool_use_id",
        "already answered",
        pairing=True,
    ),
    Case(
        "server_tool_use id given twice",
        _messages(
            _USER,
            {"role": "assistant", "content": [_SEARCH, _SEARCHED]},
            _USER,
            {"role": "assistant", "content": [_SEARCH, _SEARCHED]},
        ),
        3,
        "content[0].id",
        "repeats the id of an earlier server_tool_use",
        pairing=True,
    ),
    Case(
        "server tool result answering an mcp_tool_use",
        _messages(
            _USER,
            {
                "role": "assistant",
                "content": [_MCP_USE, {**_SEARCHED, "tool_use_id": "mcptoolu_1"}],
            },
        ),
        1,
        "content[1].tool_use_id",
        "'mcptoolu_1' answers no server_tool_use before it",
        pairing=True,
    ),
    Case(
        "mcp_tool_use without its mcp_tool_result",
        _messages(_USER, {"role": "assistant", "content": [_MCP_USE, _SAID]}, _USER),
        1,
        "content[0]",
        "mcp_tool_use 'mcptoolu_1' has no result",
        pairing=True,
    ),
    Case(
        "mcp_tool_result without its mcp_tool_use",
        _messages(_USER, {"role": "assistant", "content": [_MCP_RESULT]}),
        1,
        "content[0].tool_use_id",
        "answers no mcp_tool_use before it (an orphaned mcp_tool_result)",
        pairing=True,
    ),
    Case(
        "server tool left waiting past a turn that calls no tool for it",
        _messages(
            _USER,
            {"role": "assistant", "content": [_CODE_RUN, _CALLED_BY_CODE]},
            {"role": "user", "content": [{**_RESULT, "tool_use_id": "toolu_1"}]},
            {"role": "assistant", "content": [_SAID]},
            _USER,
        ),
        1,
        "content[0]",
        "nor in message 3, which calls no tool for it",
        pairing=True,
    ),
    Case(
        "client call made by code no server tool runs",
        _messages(_USER, {"role": "assistant", "content": [_CALLED_BY_CODE]}),
        1,
        "content[0].caller.tool_id",
        "'srvtoolu_2' is no server tool before it still waiting for its result",
        pairing=True,
    ),
    Case(
        "client call made by code that already finished",
        _messages(
            _USER,
            {
                "role": "assistant",
                "content": [_CODE_RUN, {**_SEARCHED, "tool_use_id": "srvtoolu_2"}],
            },
            _USER,
            {"role": "assistant", "content": [_CALLED_BY_CODE]},
        ),
        3,
        "content[0].caller.tool_id",
        "still waiting",
        pairing=True,
    ),
    Case(
        "document title not a string",
        _messages({"role": "user", "content": [{**_PDF, "title": 5}]}),
        0,
        "content[0].title",
        "a string or null, got int",
    ),
    Case(
        "document context a list",
        _messages({"role": "user", "content": [{**_PDF, "context": ["a"]}]}),
        0,
        "content[0].context",
        "a string or null, got list",
    ),
    Case(
        "document citations a flag",
        _messages({"role": "user", "content": [{**_PDF, "citations": True}]}),
        0,
        "content[0].citations",
        '{"enabled": true}',
    ),
    Case(
        "search result citations enabled not a flag",
        _messages({"role": "user", "content": [{**_FOUND, "citations": {"enabled": "yes"}}]}),
        0,
        "content[0].citations",
        '{"enabled": true}',
    ),
    Case(
        "text citations a string",
        _messages({"role": "user", "content": [{"type": "text", "text": "x", "citations": "a"}]}),
        0,
        "content[0].citations",
        "a list of citations",
    ),
]
