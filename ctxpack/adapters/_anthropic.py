"""Anthropic Messages payloads <-> ctxpack messages.

ctxpack's :class:`~ctxpack.messages.Message` is OpenAI-shaped, so an Anthropic payload is mapped
onto it: ``system`` becomes a system message; text, image, document and thinking blocks become
content parts kept verbatim; ``tool_use`` blocks become ``tool_calls`` (``arguments`` is the JSON
of ``input``); and each ``tool_result`` block of a user message becomes its own ``tool`` message,
so a tool exchange is an assistant message and the tool messages after it, exactly as for OpenAI.
A ``compaction`` block (the summary Anthropic's server-side compaction returns) is kept verbatim,
signature included, and the messages and blocks before the last one are left out, as the API
drops them (not before one whose null content says the compaction failed: a no-op). What the
mapping cannot hold (the place of each ``tool_use`` among the other blocks, a
``tool_result``'s ``is_error`` and ``cache_control``) rides in ``metadata["anthropic"]``, so
``to_anthropic(from_anthropic(m, system=s)) == {"system": s, "messages": m}``. A message's
fields beside ``role`` and ``content`` (OpenAI's, on a reply dumped whole) are kept there too,
but never sent: the API refuses them.

:func:`to_anthropic` merges consecutive messages with the same Anthropic role into one turn (tool
messages and user messages are both the user's turn), which is how the round trip puts the tool
results back into their user message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from .._internal.arguments import message_items
from .._internal.compaction import last_compaction, refuse_openai_compaction
from .._internal.jsontext import read_json
from .._internal.reasoning import REASONING
from .._internal.tool_errors import failed, unmarked
from .._internal.tool_items import SERVER_ITEMS
from ..errors import InvalidMessageError
from ..messages import (
    Message,
    copy_value,
    ensure_messages,
    provider_of,
    with_provider,
)
from ..sdk import SDKObject, coerce_messages, coerce_value
from ._converted import converted_messages
from ._fields import NO_ANTHROPIC_AUDIO, check_call_names, id_digest, refuse_audio_reply
from ._media import document_block, image_block, not_sent
from ._validate import check_openai_tool_calls, check_sent_blocks, validate_anthropic

__all__ = ["AnthropicPayload", "from_anthropic", "to_anthropic"]

# The key in Message.metadata where the Anthropic-only details live (for the round trip only:
# whether a message came from Anthropic is recorded apart, see ctxpack.messages.provider_of).
META = "anthropic"

_PART, _CALL = "p", "t"

# What a failed tool result without content says: the API refuses it empty.
_NO_OUTPUT = "[no output]"


class AnthropicPayload(TypedDict):
    """The part of an Anthropic Messages request ctxpack produces: pass it with ``**``.

    ``system`` is ``None`` when there is no system prompt; leave it out of the request then.
    """

    system: str | list[dict[str, Any]] | None
    messages: list[dict[str, Any]]


def _meta(**fields: Any) -> dict[str, Any]:
    return {META: {k: v for k, v in fields.items() if v is not None}}


def _without(block: Mapping[str, Any], *keys: str) -> dict[str, Any] | None:
    rest = {k: v for k, v in block.items() if k not in keys}
    return rest or None


def _user_messages(content: str | list[dict[str, Any]], turn: int) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"role": "user", "content": content, "metadata": _meta(turn=turn)}]
    out: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []
    for block in content:
        if block["type"] != "tool_result":
            run.append(block)
            continue
        if run:
            out.append({"role": "user", "content": run, "metadata": _meta(turn=turn)})
            run = []
        inner = block.get("content")
        out.append(
            {
                "role": "tool",
                "tool_call_id": block["tool_use_id"],
                # A result without content is legal; Message needs a value, and the flag below
                # restores the absence.
                "content": "" if inner is None else inner,
                "metadata": _meta(
                    turn=turn,
                    block=_without(block, "type", "tool_use_id", "content"),
                    no_content=True if "content" not in block else None,
                ),
            }
        )
    if run:
        out.append({"role": "user", "content": run, "metadata": _meta(turn=turn)})
    return out


def _assistant_message(
    content: str | list[dict[str, Any]], turn: int, openai_calls: list[Any]
) -> dict[str, Any]:
    if isinstance(content, str):
        plain = {"role": "assistant", "content": content, "metadata": _meta(turn=turn)}
        return {**plain, "tool_calls": openai_calls} if openai_calls else plain
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    layout = ""
    call_extras: dict[str, dict[str, Any]] = {}
    for block in content:
        if block["type"] != "tool_use":
            parts.append(block)
            layout += _PART
            continue
        layout += _CALL
        calls.append(
            {
                "id": block["id"],
                "type": "function",
                "function": {
                    "name": block["name"],
                    "arguments": json.dumps(block["input"], ensure_ascii=False, default=_plain),
                },
            }
        )
        extra = _without(block, "type", "id", "name", "input")
        if extra:
            call_extras[block["id"]] = extra
    if calls and openai_calls:
        raise InvalidMessageError(
            "holds OpenAI tool_calls beside Anthropic tool_use blocks; give each call once, "
            "in one format",
            index=turn,
            field="tool_calls",
        )
    # OpenAI's calls (as LiteLLM returns them beside thinking blocks) come after the blocks.
    if openai_calls:
        calls, layout = list(openai_calls), layout + _CALL * len(openai_calls)
    msg: dict[str, Any] = {"role": "assistant", "content": parts or None}
    if calls:
        msg["tool_calls"] = calls
    msg["metadata"] = _meta(
        turn=turn, layout=layout if calls else None, tool_use=call_extras or None
    )
    return msg


def _plain(value: Any) -> dict[str, Any]:
    """``json.dumps``'s fallback for a tool's input: a mapping that is not a dict (a frozen one,
    which the validator takes as an object) written as one; nothing else reaches here."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def from_anthropic(
    messages: Iterable[Mapping[str, Any] | SDKObject],
    *,
    system: str | list[dict[str, Any]] | None = None,
) -> list[Message]:
    """Anthropic Messages (and the ``system`` prompt) -> :class:`Message` objects.

    Args:
        messages: The payload's ``messages`` list. The Anthropic SDK's own objects are accepted
            too: ``{"role": "assistant", "content": response.content}``, or the response itself
            (see :mod:`ctxpack.sdk`).
        system: The payload's ``system``: a string or a list of text blocks.

    Returns:
        A system message (when ``system`` is given), then one message per Anthropic message,
        except that each ``tool_result`` block becomes a ``tool`` message of its own.

    Raises:
        InvalidMessageError: the payload is malformed (index and field named), or an
            assistant message gives calls both as ``tool_use`` blocks and as OpenAI
            ``tool_calls`` (which, alone, are read as its calls after its blocks). Tool pairing
            is not checked here: :func:`ctxpack.pack` repairs it.

    Example:
        >>> call = {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Oslo"}}
        >>> result = {"type": "tool_result", "tool_use_id": "t1", "content": "3 C"}
        >>> msgs = from_anthropic(
        ...     [{"role": "user", "content": "Weather?"},
        ...      {"role": "assistant", "content": [call]},
        ...      {"role": "user", "content": [result]}],
        ...     system="Be brief.")
        >>> [(m.role, m.text) for m in msgs]
        [('system', 'Be brief.'), ('user', 'Weather?'), ('assistant', ''), ('tool', '3 C')]
    """
    entries = list(coerce_messages(message_items(messages)))
    return read_anthropic(entries, coerce_value(system, None, "system"))


def read_anthropic(
    entries: list[Mapping[str, Any]], system: str | list[dict[str, Any]] | None = None
) -> list[Message]:
    """:func:`from_anthropic` for messages that are plain dicts already (no SDK object)."""
    validate_anthropic({"system": system, "messages": entries}, tool_pairing=False)
    start, block = last_compaction([entry["content"] for entry in entries]) or (0, None)
    dicts: list[dict[str, Any]] = []
    if system is not None:
        dicts.append({"role": "system", "content": system, "metadata": _meta(system=True)})
    for turn, entry in enumerate(entries):
        if turn < start:
            continue
        if turn == start and block is not None:
            entry = {**entry, "content": entry["content"][block:]}
        content = entry["content"]
        # A message may carry OpenAI's tool_calls beside Anthropic's blocks (LiteLLM's and
        # OpenRouter's replies, a history pasted into another format): they are its calls too.
        check_openai_tool_calls(entry, entry["role"], turn)
        if entry["role"] == "user":
            produced = _user_messages(content, turn)
        else:
            produced = [_assistant_message(content, turn, entry.get("tool_calls") or [])]
        if turn == start and block is not None:
            # The summary stands for the whole earlier history: never drop it.
            produced[0]["pinned"] = True
        # ``id`` is ctxpack's, as in an OpenAI dict (the message's id, never sent): Anthropic
        # refuses a message field it does not know.
        if "id" in entry:
            produced[0]["id"] = entry["id"]
        extra = _without(entry, "role", "content", "id", "tool_calls")
        if extra:
            # Fields beside role and content (OpenAI's, when a reply was dumped whole) are kept
            # for the caller, never sent: the API refuses a message field it does not know.
            produced[0]["metadata"][META]["message"] = extra
        dicts.extend(produced)
    # Marked outside metadata: pack() then follows Anthropic's turn rules.
    return [with_provider(m, "anthropic") for m in ensure_messages(dicts)]


# ------------------------------------------------------------------------- ctxpack -> Anthropic


# What the API refuses in a tool id.
_NOT_ID = re.compile(r"[^a-zA-Z0-9_-]")


def tool_id(call_id: str) -> str:
    """``call_id`` as Anthropic takes a tool id (``^[a-zA-Z0-9_-]+$``): another provider's id
    (``functions.lookup:0``) gets its other characters replaced and a digest of the whole, so
    that two ids never become one; the same id always maps to the same one, which keeps each
    ``tool_use`` and its ``tool_result`` paired."""
    if call_id and not _NOT_ID.search(call_id):
        return call_id
    return f"{_NOT_ID.sub('_', call_id)}_{id_digest(call_id)}"


def _to_blocks(content: str | list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Content as Anthropic blocks: Anthropic blocks verbatim, OpenAI parts translated."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    out: list[dict[str, Any]] = []
    for part in content:
        kind = part.get("type")
        if kind == REASONING or kind in SERVER_ITEMS:
            continue  # an OpenAI model's reasoning, its tools' calls: only OpenAI reads them
        if kind == "image_url" or (kind == "input_image" and part.get("image_url")):
            out.append(image_block(part))
        elif kind in ("input_audio", "input_image"):
            # No audio input, nor an OpenAI file id: the model is told what it is not shown.
            out.append(not_sent(kind, False, to="Anthropic"))
        elif kind in ("file", "input_file"):
            out.append(document_block(part))
        elif kind == "input_text":
            out.append({"type": "text", "text": str(part.get("text", ""))})
        elif kind == "refusal":
            out.append({"type": "text", "text": str(part.get("refusal", ""))})
        else:
            out.append(dict(part))
    return out


def _tool_input(arguments: str) -> dict[str, Any]:
    try:
        value = read_json(arguments) if arguments.strip() else {}
    except ValueError:
        # A model can emit broken JSON (or JSON too deep, or a number too long, to read);
        # Anthropic needs an object, so keep the text inside one.
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"value": value}


def _mapping(value: Any) -> Mapping[str, Any]:
    # metadata["anthropic"] is the user's too: a value of another shape than the one
    # from_anthropic() writes is not ctxpack's, and is left out.
    return value if isinstance(value, Mapping) else {}


def _assistant_blocks(msg: Message, meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    parts = _to_blocks(msg.content)
    extras = _mapping(meta.get("tool_use"))
    uses = [
        {
            "type": "tool_use",
            "id": tool_id(call.id),
            "name": call.function.name,
            "input": _tool_input(call.function.arguments),
            **_mapping(extras.get(call.id)),
        }
        for call in msg.tool_calls or ()
    ]
    layout = meta.get("layout")
    if (
        isinstance(layout, str)
        and layout.count(_PART) == len(parts)
        and layout.count(_CALL) == len(uses)
    ):
        it_parts, it_uses = iter(parts), iter(uses)
        return [next(it_uses) if slot == _CALL else next(it_parts) for slot in layout]
    return parts + uses


def _tool_result_block(msg: Message, meta: Mapping[str, Any]) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id(msg.tool_call_id or "")}
    # A failure read from OpenAI's formats, where its mark stands for is_error.
    content, error = (
        (msg.content, False) if provider_of(msg) == "anthropic" else unmarked(msg.content)
    )
    empty = False
    if isinstance(content, list):
        # The API refuses blank text here too; a result left with nothing goes without content.
        inner = _sendable(None, _to_blocks(content))[1]
        if inner or not content:
            block["content"] = inner
        empty = not inner
    elif not (meta.get("no_content") and content == ""):
        block["content"] = content
        empty = not str(content).strip()
    if error or failed(msg):
        block["is_error"] = True
    block.update(_mapping(meta.get("block")))
    if empty and block.get("is_error") is True:
        # The API refuses a failure with empty content ("content cannot be empty if `is_error`
        # is true"): a tool that failed silently, or whose text was only OpenAI's failure mark.
        block["content"] = _NO_OUTPUT
    return block


def _turn_content(msg: Message, meta: Mapping[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
    """``(string, blocks)``: the string when the message alone may be sent as a plain string."""
    if msg.role == "tool":
        return None, [_tool_result_block(msg, meta)]
    thinking = _litellm_thinking(msg)
    if msg.role == "assistant" and (msg.tool_calls or isinstance(msg.content, list) or thinking):
        return None, thinking + _assistant_blocks(msg, meta)
    refusal = msg.extras.get("refusal")
    if msg.content is None and isinstance(refusal, str) and refusal:
        return None, [{"type": "text", "text": refusal}]
    if isinstance(msg.content, str):
        return msg.content, _to_blocks(msg.content)
    return None, _to_blocks(msg.content)


def _litellm_thinking(msg: Message) -> list[dict[str, Any]]:
    """The thinking blocks LiteLLM returns beside an OpenAI-shaped message (``thinking_blocks``),
    which lead its turn as Claude wrote it: Claude refuses a tool-use turn sent back without
    them while thinking is on."""
    blocks = msg.extras.get("thinking_blocks")
    if msg.role != "assistant" or not isinstance(blocks, list):
        return []
    return [
        dict(b)
        for b in blocks
        if isinstance(b, Mapping) and b.get("type") in ("thinking", "redacted_thinking")
    ]


def _sendable(
    text: str | None, blocks: list[dict[str, Any]]
) -> tuple[str | None, list[dict[str, Any]]]:
    """A turn's content without the whitespace-only text the API refuses."""
    kept = [b for b in blocks if b.get("type") != "text" or str(b.get("text", "")).strip()]
    return (text if kept else None), kept


def _system_value(messages: list[Message]) -> str | list[dict[str, Any]] | None:
    if not messages:
        return None
    if len(messages) == 1 and not isinstance(messages[0].content, list):
        return messages[0].content
    # The system prompt takes text blocks only, none of them blank (a Responses API system
    # message's input_text parts become text).
    blocks: list[dict[str, Any]] = []
    for msg in messages:
        blocks.extend(b for b in _to_blocks(msg.content) if b.get("type") == "text")
    return _sendable(None, blocks)[1]


def _trim_prefill(out: list[dict[str, Any]]) -> None:
    """A final assistant turn (a prefill) without its trailing whitespace, which the API refuses
    ("final assistant content cannot end with trailing whitespace"); left out when nothing else
    is left of it. The payload is ctxpack's own copy: the caller's message keeps its text."""
    if not out or out[-1]["role"] != "assistant":
        return
    content = out[-1]["content"]
    if isinstance(content, str):
        out[-1] = {**out[-1], "content": content.rstrip()}
        if not out[-1]["content"]:
            out.pop()
        return
    if content and content[-1].get("type") == "text":
        content[-1] = {**content[-1], "text": str(content[-1].get("text", "")).rstrip()}
        if not content[-1]["text"]:
            content.pop()
        if not content:
            out.pop()


def to_anthropic(messages: Iterable[Message | Mapping[str, Any]]) -> AnthropicPayload:
    """:class:`Message` objects (or OpenAI-style dicts) -> an Anthropic Messages payload.

    System and developer messages become ``system`` (one string, or text blocks when there are
    several or they hold parts; blank text left out). Consecutive messages of the same
    Anthropic role are merged into one turn, so tool results join the user turn they belong
    to. OpenAI parts are translated (``image_url`` to an ``image`` block, with a data URL's
    media type as the API spells it: ``image/jpg`` as ``image/jpeg``, without parameters; a
    ``file`` sent as data to a ``document`` block, the Responses API's ``input_image`` and an
    ``input_file`` by URL to an image and a document; audio, an OpenAI file id, a file
    that is neither a PDF nor text, and a file by URL that is not a PDF (its URL or file name
    ends in ``.docx``, ``.txt``...) or not http(s), which Anthropic has no form for, to a text
    part naming
    what was not sent, as is an image the API cannot read (not JPEG, PNG, GIF or WebP: an
    SVG, by data or by a URL ending in ``.svg``; no URL, or one not http(s); a data URL not
    in base64); a ``refusal`` to text; the ``thinking_blocks`` LiteLLM returns beside an
    OpenAI message lead its turn, as Claude wrote them; ``name`` and the legacy
    ``function_call`` have no Anthropic equivalent and are left out, and so is text of only
    whitespace, in a tool result too, and a message left with no content, which the API
    refuses; a failed tool result left with no content says ``[no output]``, as the API
    refuses it empty). A turn's tool results go before its other blocks, as the
    API requires. A tool id with characters the API refuses (another provider's
    ``functions.lookup:0``) is sent in its pattern, ``^[a-zA-Z0-9_-]+$``, the same in the call
    and its result. It does not repair tool pairing or turn order: :func:`ctxpack.pack` makes
    the conversation valid for Anthropic first, and records how. A final assistant turn (a
    prefill) is sent without its trailing whitespace, which the API refuses.

    Dicts are checked as :func:`ctxpack.pack` checks them; Anthropic blocks are sent as they
    are once checked: a block of a type the API defines holds the fields it requires, of their
    types (an ``image``'s ``source``); one of a type ctxpack does not know goes as it is.

    Returns:
        ``{"system": ..., "messages": [...]}``; ``system`` is ``None`` without a system prompt.

    Raises:
        InvalidMessageError: a message is malformed (a block the API would refuse, as above),
            or an assistant's ``audio`` reply, which Anthropic has no input for (write its
            transcript as content); index and field named.

    Example:
        >>> to_anthropic([{"role": "system", "content": "Be brief."},
        ...               {"role": "user", "content": "Hi"}])
        {'system': 'Be brief.', 'messages': [{'role': 'user', 'content': 'Hi'}]}
    """
    msgs = converted_messages(messages)
    system: list[Message] = []
    turns: list[tuple[str, list[tuple[str | None, list[dict[str, Any]]]]]] = []
    for index, msg in enumerate(msgs):
        if msg.role in ("system", "developer"):
            system.append(msg)
            continue
        check_call_names(msg, index, "Anthropic")
        refuse_openai_compaction(msg.content, index, "Anthropic")
        check_sent_blocks(msg.content, index)
        if msg.role == "assistant":
            refuse_audio_reply(msg.extras, index, "Anthropic input", why=NO_ANTHROPIC_AUDIO)
        meta = msg.metadata.get(META)
        meta = meta if isinstance(meta, Mapping) else {}
        role = "assistant" if msg.role == "assistant" else "user"
        piece = _sendable(*_turn_content(msg, meta))
        if not piece[1]:
            continue  # nothing Anthropic can take (say, only a legacy function_call)
        if turns and turns[-1][0] == role:
            turns[-1][1].append(piece)
        else:
            turns.append((role, [piece]))
    out: list[dict[str, Any]] = []
    for role, pieces in turns:
        content: str | list[dict[str, Any]]
        if len(pieces) == 1 and pieces[0][0] is not None:
            content = pieces[0][0]
        else:
            content = [block for _, blocks in pieces for block in blocks]
            # A turn's tool results come first: the API refuses any block before them.
            content.sort(key=lambda block: block.get("type") != "tool_result")
        out.append({"role": role, "content": content})
    _trim_prefill(out)
    # A payload of its own: adding cache_control to it must not reach the messages.
    return {"system": copy_value(_system_value(system)), "messages": copy_value(out)}


def anthropic_parts_to_openai(
    content: str | list[dict[str, Any]] | None, *, text_only: bool = False, by_url: bool = False
) -> str | list[dict[str, Any]] | None:
    """Anthropic blocks held as parts -> OpenAI parts; blocks OpenAI cannot take are left out.

    Thinking and server-tool blocks only mean something to Anthropic, so they are dropped; an
    image becomes an ``image_url`` part (a data URL for base64 sources), a base64 document (a
    PDF) a ``file`` part; a text document (its text, or its content's text blocks), a search
    result or a ``compaction`` block's summary becomes text; a document sent by URL an
    ``input_file`` part by ``file_url`` where the API fetches one (``by_url``: the Responses
    API's), named by its title when it has one. A document sent by URL elsewhere or by
    Anthropic file id has no OpenAI form, nor has an image sent by Anthropic file id, nor a
    ``browser_state`` block, nor an image or a file in a ``text_only`` message (Chat
    Completions' tool message): each is a text part saying what was not sent, so that the
    model knows it is missing; a ``tool_reference`` (a tool search's find) becomes a text part
    naming its tool.
    """
    if not isinstance(content, list):
        return content
    out: list[dict[str, Any]] = []
    for block in content:
        kind = block.get("type")
        source = block.get("source")
        src: Mapping[str, Any] = source if isinstance(source, Mapping) else {}
        if kind == "text":
            out.append({"type": "text", "text": str(block.get("text", ""))})
        elif kind == "image" and not text_only and src.get("type") in ("base64", "url"):
            if src.get("type") == "base64":
                url = f"data:{src.get('media_type')};base64,{src.get('data')}"
            else:
                url = str(src.get("url", ""))
            out.append({"type": "image_url", "image_url": {"url": url}})
        elif kind == "document" and src.get("type") == "text":
            out.append({"type": "text", "text": str(src.get("data", ""))})
        elif kind == "document" and src.get("type") == "content":
            out.append({"type": "text", "text": _content_text(src.get("content"))})
        elif kind == "document" and src.get("type") == "base64" and not text_only:
            # OpenAI's API asks a file sent as data for its name.
            data = f"data:{src.get('media_type')};base64,{src.get('data')}"
            file = {"filename": _file_name(block) or "document.pdf", "file_data": data}
            out.append({"type": "file", "file": file})
        elif kind == "document" and src.get("type") == "url" and by_url:
            # A file by URL needs no name: only a title given (an input_file's filename, as
            # to_anthropic writes it) goes, none made up from the URL.
            name = _file_name(block)
            named = {"filename": name} if name else {}
            out.append({"type": "input_file", "file_url": str(src.get("url", "")), **named})
        elif kind == "compaction" and isinstance(block.get("content"), str):
            # The summary of the history before it, which the API reads in its place.
            out.append({"type": "text", "text": block["content"]})
        elif kind == "search_result":
            texts = [str(b.get("text", "")) for b in block.get("content") or [] if b.get("text")]
            out.append({"type": "text", "text": "\n".join([str(block.get("title", "")), *texts])})
        elif kind in ("image_url", "input_audio", "file", "refusal") and not text_only:
            out.append(dict(block))
        elif kind in _MEDIA or kind == "browser_state":
            out.append(not_sent(kind, text_only))
        elif kind == "tool_reference":
            # What a tool search found: the model needs the names, though OpenAI cannot load
            # the tools from them.
            name = block.get("tool_name")
            out.append({"type": "text", "text": f"[tool_reference: {name}; not loaded on OpenAI]"})
    return out


def _file_name(block: Mapping[str, Any]) -> str | None:
    """The name a document goes to OpenAI under: its title (where to_anthropic writes an
    OpenAI file's name), or ``None``."""
    title = block.get("title")
    return title if isinstance(title, str) and title else None


# What a model is shown where it would have read them (the rest, thinking and server-tool
# blocks, mean nothing to it).
_MEDIA = frozenset({"image", "document", "image_url", "input_audio", "file"})


def _content_text(content: Any) -> str:
    """The text of a document's ``content`` source: a string, or its text blocks'."""
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    texts = (b.get("text") for b in blocks if isinstance(b, Mapping) and b.get("type") == "text")
    return "\n".join(str(text) for text in texts)
