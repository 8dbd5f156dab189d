"""Messages: the pydantic models at ctxpack's boundary.

Everything public accepts plain OpenAI-style dicts as well as :class:`Message` objects; both go
through :func:`ensure_messages`, which validates them and names the index and the field of the
first problem it finds.
"""

from __future__ import annotations

import copy
import hashlib
import operator
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, NamedTuple, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ._prefix import common_prefix, likely_prefix
from ._trusted import trusted_instance
from .errors import InvalidMessageError
from .sdk import SDKObject, coerce_message

__all__ = [
    "ROLES",
    "FunctionCall",
    "Message",
    "Role",
    "ToolCall",
    "ensure_messages",
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


class FunctionCall(BaseModel):
    """The function half of an OpenAI tool call: a name and its JSON-encoded arguments."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    arguments: str


class ToolCall(BaseModel):
    """A tool call made by an assistant message (OpenAI shape)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(BaseModel):
    """One chat message.

    Args:
        role: One of ``system``, ``developer``, ``user``, ``assistant``, ``tool``.
        content: A string, a list of content parts (``{"type": "text", "text": ...}``,
            ``{"type": "image_url", ...}``...), or ``None`` for an assistant turn that only calls
            tools.
        id: Stable identifier used by every decision. Kept when given; otherwise
            :func:`ensure_messages` derives one from the position and the content.
        name: Optional participant name (OpenAI ``name``).
        tool_calls: Tool calls made by an assistant message.
        tool_call_id: For a ``tool`` message, the id of the call it answers.
        priority: Added to the message's packing score; higher survives longer.
        pinned: A pinned message is never dropped, deduplicated or compressed.
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
    priority: float = 0.0
    pinned: bool = False
    source: str | None = None
    timestamp: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    extras: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_consistency(self) -> Message:
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("tool_call_id: a tool message needs the id of the call it answers")
        if self.tool_calls and self.role != "assistant":
            raise ValueError(
                f"tool_calls: only an assistant message may call tools, not {self.role}"
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
        if isinstance(self.content, list):
            for i, part in enumerate(self.content):
                if not isinstance(part.get("type"), str):
                    raise ValueError(f"content[{i}].type: every content part needs a string type")
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


def content_text(content: str | list[dict[str, Any]] | None) -> str:
    """Text of a content value: the string itself, or the text parts joined by newlines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(
        str(part.get("text", "")) for part in content if part.get("type") in ("text", "input_text")
    )


def stable_id(index: int, role: str, text: str) -> str:
    """A deterministic id for a message that has none: its position plus a content digest."""
    digest = hashlib.blake2b(f"{role}\x00{text}".encode(), digest_size=4).hexdigest()
    return f"m{index}-{digest}"


def _format_loc(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _from_mapping(index: int, data: Mapping[str, Any]) -> Message:
    role = data.get("role")
    if role is None:
        raise InvalidMessageError("role is missing", index=index, field="role")
    if role not in ROLES:
        raise InvalidMessageError(
            f"role {role!r} is not one of {', '.join(ROLES)}", index=index, field="role"
        )
    if "id" in data and data["id"] is not None and not isinstance(data["id"], str):
        raise InvalidMessageError(
            f"id must be a string, got {type(data['id']).__name__}", index=index, field="id"
        )
    fields = {k: v for k, v in data.items() if k in _KNOWN_KEYS}
    extra = {k: v for k, v in data.items() if k not in _KNOWN_KEYS}
    if extra:
        fields["extras"] = {**dict(fields.get("extras") or {}), **extra}
    if fields.get("id") is None:
        fields.pop("id", None)
    try:
        return Message.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = _format_loc(err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        if loc:
            # pydantic reports union members as separate locs; the first segment is the field.
            field = loc.split(".")[0].split("[")[0]
            raise InvalidMessageError(f"{loc}: {msg}", index=index, field=field) from exc
        head = msg.split(":", 1)[0] if ":" in msg else None
        raise InvalidMessageError(msg, index=index, field=head) from exc


# Conversion cache: a chatbot packs the same history again every turn, and validating thousands
# of dicts with pydantic each time would dominate the cost. Entries are keyed by the dict's
# identity and trusted only while the dict still equals the snapshot taken at conversion, so a
# dict mutated in place (or a new dict at a recycled address) is validated again.
_CACHE_LIMIT = 500_000
_Check = Callable[[Mapping[str, Any], int], None]
_CONVERTED: dict[int, tuple[dict[str, Any], Message, _Check | None]] = {}
_SCALARS = (str, int, float, bool, type(None))


def _snapshot(data: Mapping[str, Any]) -> dict[str, Any]:
    if all(isinstance(v, _SCALARS) for v in data.values()):
        return dict(data)
    return copy.deepcopy(dict(data))


_PLAIN_KEYS = frozenset({"role", "content", "id", "name"})
_PLAIN_ROLES = frozenset({"system", "developer", "user", "assistant"})


def _plain_message(item: Mapping[str, Any]) -> Message | None:
    """The Message for the most common dict, ``{"role", "content": str, "id"?, "name"?}`` with
    string values, built without pydantic validation; ``None`` for any other dict.

    Such a dict passes every rule (the OpenAI checks and the Message validators alike), so
    validating it would only cost time: a third of a cold pack of a long history.
    """
    if not item.keys() <= _PLAIN_KEYS:
        return None
    role = item.get("role")
    content = item.get("content")
    mid = item.get("id", "")
    name = item.get("name")
    if (
        role not in _PLAIN_ROLES
        or type(content) is not str
        or type(mid) is not str
        or not ((name is None and "name" not in item) or type(name) is str)
    ):
        return None
    # Every field, in declaration order (a test checks this equals the validated Message).
    values = {
        "role": role,
        "content": content,
        "id": mid,
        "name": name,
        "tool_calls": None,
        "tool_call_id": None,
        "priority": 0.0,
        "pinned": False,
        "source": None,
        "timestamp": None,
        "metadata": {},
        "extras": {},
    }
    return trusted_instance(Message, values, item.keys())


def _convert(
    index: int,
    item: Mapping[str, Any],
    check: Callable[[Mapping[str, Any], int], None] | None,
) -> tuple[dict[str, Any], Message]:
    key = id(item)
    hit = _CONVERTED.get(key)
    # A conversion is reused by a call with the same check, or with none.
    if hit is not None and hit[0] == item and (check is None or hit[2] is check):
        return hit[0], hit[1]
    msg = _plain_message(item)
    # A dict that is not plain may hold the SDKs' objects: converted to dicts (else the same).
    plain = item if msg is not None else coerce_message(item, index)
    if check is not None:
        check(plain, index)
    if msg is not None:
        snapshot = dict(item)
    else:
        msg = _from_mapping(index, plain)
        snapshot = _snapshot(item)
    if len(_CONVERTED) >= _CACHE_LIMIT:
        _CONVERTED.clear()
    _CONVERTED[key] = (snapshot, msg, check)
    return snapshot, msg


class _Seen(NamedTuple):
    """One input sequence converted before, so the next call can reuse its shared prefix."""

    items: tuple[Any, ...]  # the caller's dicts and Messages
    snapshots: tuple[Any, ...]  # per item: a copy of the dict as converted, or the Message
    messages: tuple[Message, ...]
    check: _Check | None  # the check the dicts passed
    positions: dict[str, int]  # message id -> index
    kind: str  # "dicts", "messages" or "mixed": how the prefix check must compare


_RECENT: list[_Seen] = []
_RECENT_SLOTS = 8
_RECENT_LOCK = threading.Lock()


def _kind(item: Any) -> str:
    return "dicts" if type(item) is dict else "messages" if isinstance(item, Message) else "mixed"


def _unchanged(item: Any, snapshot: Any) -> bool:
    return item is snapshot or (not isinstance(item, Message) and item == snapshot)


def _reusable(items: tuple[Any, ...], check: _Check | None) -> tuple[_Seen | None, int]:
    """The remembered sequence sharing the longest prefix with ``items``, and its length.

    Shared means the same objects, and, for dicts, still equal to what was converted: a dict
    edited in place since ends the prefix.
    """
    with _RECENT_LOCK:
        recent = [seen for seen in _RECENT if check is None or seen.check is check]
    guesses = [likely_prefix(items, seen.items) for seen in recent]
    if not guesses or max(guesses) == 0:
        return None, 0
    best = recent[guesses.index(max(guesses))]
    shared = common_prefix(items, best.items)
    # Both scans run in C: about 4 ms for 60,000 dicts.
    if best.kind == "dicts":
        same = list(map(operator.eq, items[:shared], best.snapshots))
    elif best.kind == "mixed":
        same = list(map(_unchanged, items[:shared], best.snapshots))
    else:
        same = []  # Messages are frozen: the same object is the same message.
    if False in same:
        shared = same.index(False)
    return best, shared


def _remember(seen: _Seen, superseded: _Seen | None) -> None:
    with _RECENT_LOCK:
        others = [s for s in _RECENT if s is not superseded]
        _RECENT[:] = [seen, *others][:_RECENT_SLOTS]


def ensure_messages(
    messages: Iterable[Message | Mapping[str, Any] | SDKObject],
    *,
    check: Callable[[Mapping[str, Any], int], None] | None = None,
) -> list[Message]:
    """Validate ``messages`` and return them as :class:`Message` objects with unique ids.

    Args:
        messages: ``Message`` objects or OpenAI-style dicts, in chronological order.
        check: An extra validation ``check(dict, index)`` run on each dict before conversion
            (``pack()`` passes the OpenAI payload rules); it raises ``InvalidMessageError``.

    Returns:
        A new list; the input is never mutated. Messages without an id get :func:`stable_id`.
        Converting the same dicts again is cached, and a history that extends one converted
        before costs only its new messages (plus a check, in C, that the others are unchanged).

    Raises:
        InvalidMessageError: naming the index and the field of the first problem.

    Example:
        >>> [m.id for m in ensure_messages([{"role": "user", "content": "hi", "id": "q"}])]
        ['q']
    """
    if isinstance(messages, (str, bytes, Mapping)):
        raise InvalidMessageError(
            f"expected a list of messages, got {type(messages).__name__}", field=None
        )
    items = tuple(messages)
    base, shared = _reusable(items, check)
    if base is None or shared == 0:
        base, shared = None, 0
        out: list[Message] = []
        snapshots: list[Any] = []
        positions: dict[str, int] = {}
    else:
        out = list(base.messages[:shared])
        snapshots = list(base.snapshots[:shared])
        positions = base.positions.copy()
        for gone in base.messages[shared:]:
            del positions[gone.id]
    for index in range(shared, len(items)):
        item = items[index]
        # ``type(...) is dict`` first: the abstract Mapping check is slow on long histories.
        snapshot: Any
        if type(item) is dict or (not isinstance(item, Message) and isinstance(item, Mapping)):
            snapshot, msg = _convert(index, item, check)
        elif isinstance(item, Message):
            snapshot = msg = item
        elif (plain := coerce_message(item, index)) is not item:
            # An SDK object (an OpenAI ChatCompletionMessage...); the next call reuses the
            # conversion only while the object still equals this copy of it.
            _, msg = _convert(index, plain, check)
            snapshot = copy.deepcopy(item)
        else:
            raise InvalidMessageError(
                f"expected a Message or a dict, got {type(item).__name__}", index=index
            )
        if not msg.id:
            msg = _with_stable_id(index, msg)
        earlier = positions.get(msg.id)
        if earlier is not None:
            raise InvalidMessageError(
                f"id {msg.id!r} repeats the id of message {earlier}; ids must be unique",
                index=index,
                field="id",
            )
        positions[msg.id] = index
        out.append(msg)
        snapshots.append(snapshot)
    if items and (base is None or shared < len(items) or shared < len(base.items)):
        kinds = {_kind(x) for x in items[shared:]}
        if base is not None:
            kinds.add(base.kind)
        kind = kinds.pop() if len(kinds) == 1 else "mixed"
        _remember(
            _Seen(items, tuple(snapshots), tuple(out), check, positions, kind),
            base if base is not None and shared == len(base.items) else None,
        )
    return out


_WITH_ID: dict[tuple[int, int], tuple[Message, Message]] = {}


def _with_stable_id(index: int, msg: Message) -> Message:
    # The generated id depends on the position too, so the cache key is (message, position).
    key = (id(msg), index)
    hit = _WITH_ID.get(key)
    if hit is not None and hit[0] is msg:
        return hit[1]
    named = msg.model_copy(update={"id": stable_id(index, msg.role, msg.text)})
    if len(_WITH_ID) >= _CACHE_LIMIT:
        _WITH_ID.clear()
    _WITH_ID[key] = (msg, named)
    return named
