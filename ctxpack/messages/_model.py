"""The message models: ``Message`` and its parts, the content-derived id, the copies that share
nothing, and the validation of one mapping (what :mod:`ctxpack.messages` converts with)."""

from __future__ import annotations

import hashlib
import json
import sys
import weakref
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, get_args

from pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    model_serializer,
    model_validator,
)

from .._internal.arguments import (
    MAX_NESTING,
    TooDeep,
    TooLongInt,
    check_nesting,
    check_text,
    json_problem,
    message_items,
    shown,
    too_long_int_text,
)
from .._internal.copies import copy_value as copy_value
from .._internal.options import FieldErrorModel
from .._internal.part_fields import CHECKED_PART_TYPES, check_part_fields, is_langchain_file
from .._internal.trusted import trusted_frozen_instance
from ..errors import InvalidMessageError

__all__ = [
    "ROLES",
    "FunctionCall",
    "Message",
    "Role",
    "ToolCall",
    "content_text",
    "copy_value",
    "detached",
    "from_mapping",
    "invalid",
    "is_unchecked",
    "message_objects",
    "provider_of",
    "stable_id",
    "with_provider",
]

Role = Literal["system", "developer", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = get_args(Role)

# Keys a Message understands; anything else in an input dict is kept verbatim in ``extras`` so
# that provider fields we do not model (``refusal``, ``audio``...) survive a round trip.
_KNOWN_KEYS = frozenset(
    {
        "role",
        "content",
        "id",
        "name",
        "tool_calls",
        "tool_call_id",
        "priority",
        "pinned",
        "source",
        "timestamp",
        "metadata",
        "extras",
    }
)

_NULL_CONTENT_KEYS = frozenset({"function_call", "refusal", "audio"})
_M = TypeVar("_M", bound="Message")


class _CallPart(FieldErrorModel):
    """A part of a tool call built on its own: an invalid field raises the message's error,
    naming the part and the field (inside a message, the message's own check reports it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def _error(cls, exc: ValidationError) -> InvalidMessageError:
        field, problem = _first_problem(exc)
        if not field:
            # Not an object at all: the part is what is wrong.
            return InvalidMessageError(f"{cls.__name__}: {problem}")
        return InvalidMessageError(f"{field}: {problem}", field=field)


class FunctionCall(_CallPart):
    """The function half of an OpenAI tool call: a name and its JSON-encoded arguments."""

    name: str
    arguments: str


class ToolCall(_CallPart):
    """A tool call made by an assistant message (OpenAI shape).

    A custom tool's call (``{"id", "type": "custom", "custom": {"name", "input"}}``, whose input
    is free text, not JSON) holds its name and input in ``function`` too, so that whatever
    reads a call's name and input reads both kinds; it is written back in its own shape.

    Example:
        >>> call = ToolCall.model_validate(
        ...     {"id": "c1", "type": "custom", "custom": {"name": "sh", "input": "ls"}})
        >>> call.function.arguments, call.model_dump()
        ('ls', {'id': 'c1', 'type': 'custom', 'custom': {'name': 'sh', 'input': 'ls'}})
    """

    # Fields a provider adds that ctxpack does not model (Gemini's ``extra_content``, which
    # holds the thought signature its next request must send back; a streamed call's
    # ``index``) are kept verbatim and written back.
    model_config = ConfigDict(frozen=True, extra="allow")

    id: str
    type: Literal["function", "custom"] = "function"
    function: FunctionCall

    @model_validator(mode="before")
    @classmethod
    def _read_custom(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("type") == "custom" and "custom" in data:
            custom = data["custom"]
            data = {k: v for k, v in data.items() if k != "custom"}
            if isinstance(custom, Mapping):
                data["function"] = {"name": custom.get("name"), "arguments": custom.get("input")}
            else:
                data["function"] = custom  # refused by FunctionCall, under this call's field
        return data

    @model_serializer(mode="wrap")
    def _write_custom(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        if self.type == "custom":
            function = dumped.pop("function", {})
            dumped["custom"] = {"name": function.get("name"), "input": function.get("arguments")}
        return dumped


class Message(FieldErrorModel):
    """One chat message.

    Args:
        role: One of ``system``, ``developer``, ``user``, ``assistant``, ``tool``.
        content: A string, a list of content parts (``{"type": "text", "text": ...}``,
            ``{"type": "image_url", ...}``...), or ``None`` for an assistant turn that only calls
            tools. OpenAI's parts are checked as a message dict's are (each field of its type,
            an image's data URL, an audio clip's or a file's data valid base64): a problem is an
            :class:`~ctxpack.InvalidMessageError` naming the field (``content[1].image_url.url``).
            A data URL's ``data:`` and ``;base64,`` are read in any case (``DATA:...;BASE64,``).
        id: Stable identifier used by every decision. Kept when given; otherwise
            :func:`ensure_messages` derives one from the content (see :func:`stable_id`).
        name: Optional participant name (OpenAI ``name``).
        tool_calls: Tool calls made by an assistant message.
        tool_call_id: For a ``tool`` message, the id of the call it answers.
        priority: Added to the message's packing score; higher survives longer. A number
            (an int or a float), not a string or a bool.
        pinned: A pinned message is never dropped, deduplicated or compressed. ``True`` or
            ``False``; any other value (``"yes"``, ``1``) is an :class:`InvalidMessageError`.
        source: Where the content comes from (a URL, a document id); a citation.
        timestamp: When the message was written.
        metadata: Free-form data for your own use; ctxpack reads ``metadata["important"]``.
        extras: Provider fields ctxpack does not model, kept verbatim for round trips.

    Example:
        >>> Message(role="user", content="Hello", id="u1").text
        'Hello'
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    content: str | list[dict[str, Any]] | None = None
    id: str = ""
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    # Strict: pydantic's lax mode would read "yes" or 1 as pinned and "3" as a priority.
    priority: Annotated[float, Field(allow_inf_nan=False, strict=True)] = 0.0
    pinned: Annotated[bool, Field(strict=True)] = False
    source: str | None = None
    timestamp: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    extras: dict[str, Any] = Field(default_factory=dict)
    # Whose payload the message was converted from, set by from_anthropic(): pack() follows
    # that provider's rules. Private, so that metadata stays the user's.
    _provider: str | None = PrivateAttr()

    @classmethod
    def _error(cls, exc: ValidationError) -> InvalidMessageError:
        return invalid(exc, None)

    # Hidden from type checkers, which keep pydantic's signatures (the mypy plugin's, with
    # each field): these only mark what they return.
    if not TYPE_CHECKING:

        @classmethod
        def model_construct(cls, _fields_set=None, **values):
            """A message built without validation (pydantic's ``model_construct``): ctxpack
            checks it, naming the field of the first problem, where it takes it in
            (``pack()``, the converters, ``Session.append``...)."""
            made = super().model_construct(_fields_set, **values)
            return made if _made_by_ctxpack() else _marked_unchecked(made)

        def model_copy(self, *, update=None, deep=False):
            """A copy (pydantic's ``model_copy``); with ``update``, its new values are not
            validated here but where ctxpack takes the copy in, as for
            :meth:`model_construct`."""
            copied = super().model_copy(update=update, deep=deep)
            return _marked_unchecked(copied) if update and not _made_by_ctxpack() else copied

        # A copy of a message not validated is not validated either.
        def __copy__(self):
            copied = super().__copy__()
            return _marked_unchecked(copied) if is_unchecked(self) else copied

        def __deepcopy__(self, memo=None):
            copied = super().__deepcopy__(memo)
            return _marked_unchecked(copied) if is_unchecked(self) else copied

    @model_validator(mode="after")
    def _check_consistency(self, info: ValidationInfo) -> Message:
        _check_values(self)
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("tool_call_id: a tool message needs the id of the call it answers")
        if self.tool_calls and self.role != "assistant":
            raise ValueError(
                f"tool_calls: only an assistant message may call tools, not {self.role}"
            )
        if self.tool_calls and len(self.tool_calls) > 1:
            # The provider pairs each result with its call by id: a repeated id is refused.
            first: dict[str, int] = {}
            for k, call in enumerate(self.tool_calls):
                j = first.setdefault(call.id, k)
                if j != k:
                    raise ValueError(
                        f"tool_calls[{k}].id: {call.id!r} repeats tool_calls[{j}].id; each call "
                        "of a message needs its own id"
                    )
        # OpenAI replies with content null beside a legacy function_call, a refusal or audio.
        if (
            self.content is None
            and not self.tool_calls
            and not _NULL_CONTENT_KEYS & self.extras.keys()
        ):
            raise ValueError(
                "content: missing (only an assistant message with tool_calls may omit it)"
            )
        # A dict that passed the OpenAI message check had these parts checked already.
        context = info.context
        parts_checked = isinstance(context, dict) and context.get(PARTS_CHECKED) is True
        if isinstance(self.content, list) and not parts_checked:
            for i, part in enumerate(self.content):
                kind = part.get("type")
                if not isinstance(kind, str):
                    raise ValueError(f"content[{i}].type: every content part needs a string type")
                # OpenAI's parts hold what a dict message's must (a text part a string in every
                # format: OpenAI's, Anthropic's, LangChain's; an image's data URL base64...);
                # any other part is refused when sent. LangChain's file block shares the type
                # of OpenAI's file part, not its shape (from_langchain checks it).
                if kind in CHECKED_PART_TYPES and not (kind == "file" and is_langchain_file(part)):
                    try:
                        check_part_fields(part, None, f"content[{i}]")
                    except InvalidMessageError as exc:
                        raise ValueError(exc.detail) from None
        return self

    @property
    def text(self) -> str:
        """The message's text: the content string, or its text parts joined by newlines."""
        content = self.content
        return content if isinstance(content, str) else content_text(content)

    @property
    def is_tool_exchange(self) -> bool:
        """Whether this message belongs to a tool exchange (it calls tools or answers a call)."""
        return bool(self.tool_calls) or self.role == "tool"


# The validation context's key saying the content parts were checked by the OpenAI message
# check (see from_mapping).
PARTS_CHECKED = "ctxpack_parts_checked"


# id -> a weak reference to each message pydantic did not validate (model_construct(),
# model_copy(update=...)), dropped with the message. Not a private attribute: pydantic's
# equality compares those, and such a message equals the validated one with its values.
_UNCHECKED: dict[int, weakref.ref[Message]] = {}


def _forget(key: int) -> Callable[[weakref.ref[Message]], None]:
    def forget(_: weakref.ref[Message]) -> None:
        _UNCHECKED.pop(key, None)

    return forget


def _made_by_ctxpack() -> bool:
    """Whether the caller of the Message method calling this is ctxpack's own code, whose
    copies hold values it checked (its stages, the ids it gives): marking them would have them
    validated again where they come back in, a render's messages at every new one."""
    caller = sys._getframe(2).f_globals.get("__name__", "")
    return isinstance(caller, str) and caller.startswith("ctxpack.")


def _marked_unchecked(message: _M) -> _M:
    key = id(message)
    _UNCHECKED[key] = weakref.ref(message, _forget(key))
    return message


def is_unchecked(message: Message) -> bool:
    """Whether pydantic did not validate ``message`` (see :meth:`Message.model_construct`)."""
    if not _UNCHECKED:  # the common case
        return False
    ref = _UNCHECKED.get(id(message))
    return ref is not None and ref() is message


def _check_values(message: Message) -> None:
    """Refuse what no provider accepts and nothing can process: text that is not valid Unicode
    (a lone surrogate), lists or objects nested too deep to copy or serialise, ints too long
    to write as text (no JSON encoder, nor ``repr()``, can), and in what is sent (the content
    parts, the extra fields) any other value JSON cannot carry."""
    content = message.content
    if isinstance(content, str):
        check_text(content, "content")
    elif content is not None:
        for i, part in enumerate(content):
            text = part.get("text")
            if isinstance(text, str):
                check_text(text, f"content[{i}].text")
    # An id and a source go into every record and request a message is part of.
    check_text(message.id, "id")
    if message.source is not None:
        check_text(message.source, "source")
    if message.name is not None:
        check_text(message.name, "name")
    if message.tool_call_id is not None:
        check_text(message.tool_call_id, "tool_call_id")
    for k, call in enumerate(message.tool_calls or ()):
        check_text(call.id, f"tool_calls[{k}].id")
        # Named as the caller wrote them: a custom tool's name and input are under "custom".
        where = f"tool_calls[{k}].custom" if call.type == "custom" else f"tool_calls[{k}].function"
        check_text(call.function.name, f"{where}.name")
        check_text(
            call.function.arguments, where + (".input" if call.type == "custom" else ".arguments")
        )
    for field in ("content", "metadata", "extras"):
        value = getattr(message, field)
        if value and not isinstance(value, str):
            try:
                check_nesting(value, 1)
            except TooDeep:
                raise ValueError(
                    f"{field}: lists and objects nested deeper than {MAX_NESTING} levels"
                ) from None
            except TooLongInt as exc:
                raise ValueError(too_long_int_text(_holder(field, value), exc.bits)) from None
    # The content parts and the extra fields are sent as they are: a value JSON cannot carry
    # would fail in the SDK's encoder (a set, bytes) or have the request refused (NaN), far from
    # the message, and so would a lone surrogate (an image's URL, a tool result's nested text,
    # a refusal), which the request's UTF-8 cannot hold. An extra field is named as the caller
    # wrote it, beside the message.
    problem = None
    if type(content) is list:
        problem = json_problem(content, "content", exact=False, utf8=True)
    for key, value in message.extras.items():
        problem = problem or json_problem(value, key, exact=False, utf8=True)
    if problem is not None:
        raise ValueError(
            f"{problem}: a message's content parts and extra fields are sent as JSON, which "
            "holds only strings of valid Unicode, finite numbers, booleans, None, lists and "
            "objects with string keys"
        )


def _holder(field: str, value: Any) -> str:
    """The field to name for a bad value inside ``value``: an extra field by its own key (the
    caller wrote ``audio``, not ``extras``), any other by ``field``."""
    if field == "extras":
        for key, inner in value.items():
            try:
                check_nesting(inner, 2)
            except (TooDeep, TooLongInt):
                return str(key)
    return field


def content_text(content: str | list[dict[str, Any]] | None) -> str:
    """Text of a content value: the string itself, or the text parts joined by newlines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(
        str(part.get("text", "")) for part in content if part.get("type") in ("text", "input_text")
    )


def stable_id(message: Message, occurrence: int = 1) -> str:
    """A deterministic id for a message that has none, from its content alone.

    The digest covers the role, the text, the name, the tool calls and the id of the call
    answered (and the non-text content parts), never the position, so a message keeps its id
    when older messages are trimmed or newer ones appended. Identical messages are told apart
    by their order of occurrence: the second gets ``-2``, the third ``-3``.

    Example:
        >>> msg = Message(role="user", content="Hello")
        >>> stable_id(msg), stable_id(msg, 2)
        ('m-320ce8b797a9', 'm-320ce8b797a9-2')
    """
    digest = content_digest(message)
    return f"m-{digest}" if occurrence == 1 else f"m-{digest}-{occurrence}"


def content_digest(message: Message) -> str:
    """The 12 hex digits of :func:`stable_id`: a hash of what the message says."""
    parts = [message.role, message.text, message.name or "", message.tool_call_id or ""]
    for call in message.tool_calls or ():
        parts += [call.id, call.function.name, call.function.arguments]
    if isinstance(message.content, list):
        # Images and other parts have no text: their JSON tells two such messages apart.
        others = [p for p in message.content if p.get("type") not in ("text", "input_text")]
        if others:
            parts.append(json.dumps(others, sort_keys=True, default=str))
    if sum(map(len, parts)) <= _DIGEST_CHUNK:
        return hashlib.blake2b("\x00".join(parts).encode(), digest_size=6).hexdigest()
    # A huge message is hashed in slices, the same bytes in the same order: joining and
    # encoding it whole would hold two more copies of it.
    digest = hashlib.blake2b(digest_size=6)
    for i, part in enumerate(parts):
        if i:
            digest.update(b"\x00")
        for start in range(0, len(part), _DIGEST_CHUNK):
            digest.update(part[start : start + _DIGEST_CHUNK].encode())
    return digest.hexdigest()


_DIGEST_CHUNK = 1 << 20


_MUTABLE_FIELDS = ("content", "tool_calls", "metadata", "extras")


def detached(message: Message, index: int | None = None) -> Message:
    """A copy of ``message`` sharing no mutable object (content parts, metadata, extras, tool
    call list) with it: what ctxpack hands out, so that editing it cannot reach a cache or the
    caller's input, and what it keeps, so that editing the input cannot reach it.

    Raises:
        InvalidMessageError: a field holds a value that cannot be copied (a lock, an open
            file), naming the field and ``index``, the message's position.
    """
    values = message.__dict__
    copied = dict(values)
    if type(values["content"]) is str and not (
        values["metadata"] or values["extras"] or values["tool_calls"]
    ):
        # The common chat message: only the two empty dicts are mutable.
        copied["metadata"], copied["extras"] = {}, {}
    else:
        # The other fields hold strings, numbers, booleans, datetimes or None: nothing to copy.
        for key in _MUTABLE_FIELDS:
            value = values[key]
            if value is not None and type(value) is not str:
                try:
                    copied[key] = copy_value(value) if value else type(value)()
                except InvalidMessageError as exc:
                    detail = f"{key}: {exc.detail}"
                    raise InvalidMessageError(detail, index=index, field=key) from exc
    private = message.__pydantic_private__
    # The fields set is shared: Message is frozen (see trusted_frozen_instance).
    return trusted_frozen_instance(
        type(message),
        copied,
        message.__pydantic_fields_set__,
        None if private is None else dict(private),
    )


def message_objects(messages: Any, *, argument: str = "messages") -> tuple[Message, ...]:
    """``messages`` as a tuple of :class:`Message` objects, for code that reads their fields
    without asking: a dict among them is refused, not converted (that is
    :func:`ensure_messages`'s work, with ids and checks of its own)."""
    items = message_items(messages, argument=argument)
    # Every stage's new context checks its messages: the common case is one pass in C.
    if set(map(type, items)) <= {Message}:
        return items
    index = next((i for i, m in enumerate(items) if not isinstance(m, Message)), None)
    if index is not None:
        raise InvalidMessageError(
            f"expected a Message in {argument} (ensure_messages() converts dicts), got "
            f"{type(items[index]).__name__}",
            index=index,
        )
    return items


def provider_of(message: Message) -> str | None:
    """The provider whose payload the message was converted from (``"anthropic"`` for
    :func:`ctxpack.from_anthropic`), or ``None``. Held in a private attribute, not in
    ``metadata``, which is the user's."""
    private = message.__pydantic_private__
    return private.get("_provider") if private else None


def with_provider(message: Message, provider: str) -> Message:
    """``message`` marked as converted from ``provider``'s payload (see :func:`provider_of`)."""
    marked = message.model_copy()
    marked.__pydantic_private__["_provider"] = provider  # type: ignore[index]
    return marked


def _format_loc(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _first_problem(exc: ValidationError) -> tuple[str, str]:
    """Where the first problem pydantic found is (``"tool_calls[0].function.name"``) and what
    it is; a tool call's part nested inside reports its own field, joined to the path."""
    err = exc.errors()[0]
    loc = _format_loc(err["loc"])
    inner = err.get("ctx", {}).get("error")
    if isinstance(inner, InvalidMessageError) and inner.field:
        problem = inner.detail.removeprefix(f"{inner.field}: ")
        return (f"{loc}.{inner.field}" if loc else inner.field), problem
    return loc, str(err["msg"]).removeprefix("Value error, ")


def invalid(exc: ValidationError, index: int | None) -> InvalidMessageError:
    """The message's error for the first problem pydantic found, naming the field."""
    loc, msg = _first_problem(exc)
    if loc:
        # pydantic reports union members as separate locs; the first segment is the field.
        field = loc.split(".")[0].split("[")[0]
        return InvalidMessageError(f"{loc}: {msg}", index=index, field=field)
    if ":" not in msg:
        # Not an object at all (a list, a number, JSON of another shape).
        return InvalidMessageError(f"not a message: {msg}", index=index)
    return InvalidMessageError(msg, index=index, field=msg.split(":", 1)[0])


def from_mapping(index: int, data: Mapping[str, Any], *, parts_checked: bool = False) -> Message:
    """The Message of the dict ``data``, message ``index`` of a list; ``parts_checked``: the
    OpenAI message check passed it (its content parts' fields need no second check)."""
    role = data.get("role")
    if role is None:
        raise InvalidMessageError("role is missing", index=index, field="role")
    if not isinstance(role, str) or role not in ROLES:
        raise InvalidMessageError(
            f"role {shown(role)} is not one of {', '.join(ROLES)}", index=index, field="role"
        )
    if "id" in data and data["id"] is not None and not isinstance(data["id"], str):
        raise InvalidMessageError(
            f"id must be a string, got {type(data['id']).__name__}", index=index, field="id"
        )
    odd = next((k for k in data if not isinstance(k, str)), None)
    if odd is not None:
        raise InvalidMessageError(
            f"key {odd!r}: the keys of a message are strings", index=index, field=str(odd)
        )
    fields = {k: v for k, v in data.items() if k in _KNOWN_KEYS}
    extra = {k: v for k, v in data.items() if k not in _KNOWN_KEYS}
    if extra:
        given = fields.get("extras") or {}
        if not isinstance(given, Mapping):
            raise InvalidMessageError(
                f"extras: must be an object, got {type(given).__name__}",
                index=index,
                field="extras",
            )
        fields["extras"] = {**given, **extra}
    if fields.get("id") is None:
        fields.pop("id", None)
    try:
        context = {PARTS_CHECKED: True} if parts_checked else None
        return Message.model_validate(fields, context=context)
    except InvalidMessageError as exc:
        raise InvalidMessageError(exc.detail, index=index, field=exc.field) from exc.__cause__
