"""Converting what callers pass into owned messages, and remembering the conversions: a chatbot
packs the same history again every turn."""

from __future__ import annotations

import operator
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from .._internal import forks
from .._internal.arguments import check_text, message_items
from .._internal.copies import copied_fields
from .._internal.prefix import common_prefix, likely_prefix
from .._internal.trusted import trusted_frozen_instance
from ..caches import ENTRY_OVERHEAD, LRUCache, approx_bytes, register
from ..errors import ConfigError, InvalidMessageError
from ..sdk import (
    JOINED_ITEMS,
    LEADING_ITEMS,
    SDKObject,
    coerce_message,
    item_error,
    joined_messages,
    not_a_message,
)
from ._model import Message, content_digest, copy_value, detached, from_mapping
from ._revalidation import checked_copy

__all__ = ["check_shared_empties", "ensure_messages", "message_bytes", "owned_messages"]


# Converting dicts: a chatbot packs the same history again every turn, and validating thousands
# of dicts with pydantic each time would dominate the cost. A conversion is found by the input
# object's identity but used only while the object still equals a copy taken at conversion (in
# C for dicts), so a dict or Message edited in place, or a new object at a recycled address, is
# converted again. The Message kept is ctxpack's own: built from that copy, it shares nothing
# with the caller, and it is never handed out (see detached()).
_Check = Callable[[Mapping[str, Any], int], None]
_CONVERSIONS_LIMIT = 200_000
# A Message's fields and pydantic's bookkeeping, its content and extra fields aside.
_MESSAGE_BYTES = 1_600


def message_bytes(msg: Message) -> int:
    """Roughly the bytes ``msg`` holds (for the caches' byte bounds); cheap for plain text."""
    content = msg.content
    size = _MESSAGE_BYTES + (
        sys.getsizeof(content) if type(content) is str else approx_bytes(content)
    )
    if msg.tool_calls or msg.metadata or msg.extras:
        size += approx_bytes([msg.tool_calls, msg.metadata, msg.extras])
    return size


def _conversion_bytes(key: int, entry: tuple[Any, Message, _Check | None]) -> int:
    snapshot, msg, _ = entry
    # A Message snapshot is the owned message itself (see _convert): counted once.
    return ENTRY_OVERHEAD + message_bytes(msg) + (0 if snapshot is msg else approx_bytes(snapshot))


# id(item) -> (snapshot, owned message, check passed). The snapshot is a deep copy of a dict
# input, or the owned copy of a Message input (compared through its __dict__).
_CONVERTED: LRUCache[int, tuple[Any, Message, _Check | None]] = LRUCache(
    _CONVERSIONS_LIMIT, maxbytes=12 * 2**20, weigh=_conversion_bytes, name="converted messages"
)


_PLAIN_ROLES = frozenset({"system", "developer", "user", "assistant"})
# What a plain message shares with every other: its fields set (by whether it has an id (+1)
# and a name (+2)), its empty metadata and extras, its empty private attributes. Every
# container allocated counts towards the garbage collector's next pass, and on a cold pack of
# a long history those passes cost more than the conversion itself. Sharing is safe because
# converted messages are ctxpack's own, frozen and never changed in place (see owned_messages;
# a test checks these stay empty), and what ctxpack hands out is detached with dicts of its own.
_SHARED_EMPTY_METADATA: dict[str, Any] = {}
_SHARED_EMPTY_EXTRAS: dict[str, Any] = {}
_SHARED_EMPTY_PRIVATE: dict[str, Any] = {}
_PLAIN_FIELDS = tuple(
    {"role", "content", *(["id"] if i & 1 else []), *(["name"] if i & 2 else [])} for i in range(4)
)


def check_shared_empties() -> None:
    """Raise if a stage filled the empty dicts plain messages share (see above), after emptying
    them again: a stage must return new messages (``model_copy``), never edit one in place, and
    an edit there would otherwise reach every message converted in this process."""
    for label, shared in (
        ("metadata", _SHARED_EMPTY_METADATA),
        ("extras", _SHARED_EMPTY_EXTRAS),
        ("private attributes", _SHARED_EMPTY_PRIVATE),
    ):
        if shared:
            keys = sorted(map(str, shared))
            shared.clear()
            raise ConfigError(
                f"a stage changed a message's {label} in place (keys {keys}); stages must return "
                "new messages (message.model_copy(update=...)), never edit the ones they are given"
            )


def _plain_message(item: Mapping[str, Any]) -> Message | None:
    """The Message for the most common dict, ``{"role", "content": str, "id"?, "name"?}`` with
    string values, built without pydantic validation; ``None`` for any other dict.

    Such a dict passes every rule (the OpenAI checks and the Message validators alike), so
    validating it would only cost time, a large share of a cold pack of a long history (see
    docs/performance.md).
    """
    has_id = "id" in item
    has_name = "name" in item
    role = item.get("role")
    content = item.get("content")
    mid = item["id"] if has_id else ""
    name = item["name"] if has_name else None
    if (
        # With role and content strings, the length rules out any other key.
        len(item) != 2 + has_id + has_name
        or type(role) is not str
        or role not in _PLAIN_ROLES
        or type(content) is not str
        or type(mid) is not str
        or (has_name and type(name) is not str)
        # Text that may not be valid Unicode goes through validation, which names the problem.
        or not (content.isascii() or _valid_text(content))
        or not (name is None or name.isascii() or _valid_text(name))
        or not (mid.isascii() or _valid_text(mid))
    ):
        return None
    # Every field, in declaration order (a test checks this equals the validated Message).
    values: dict[str, Any] = {
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
        "metadata": _SHARED_EMPTY_METADATA,
        "extras": _SHARED_EMPTY_EXTRAS,
    }
    fields_set = _PLAIN_FIELDS[has_id + 2 * has_name]
    return trusted_frozen_instance(Message, values, fields_set, _SHARED_EMPTY_PRIVATE)


def _valid_text(text: str) -> bool:
    try:
        check_text(text, "")
    except ValueError:
        return False
    return True


def _same_message(item: Message, owned: Message) -> bool:
    return (
        item.__dict__ == owned.__dict__
        and (item.__pydantic_private__ or {}) == (owned.__pydantic_private__ or {})
        and type(item) is type(owned)
    )


def _checks_parts(check: _Check | None) -> bool:
    """Whether ``check`` checks the fields of OpenAI's content parts as Message's validation
    does (a true ``checks_parts`` attribute), so that a dict it passed is not checked twice."""
    return check is not None and getattr(check, "checks_parts", False) is True


def _unchanged(item: Any, snapshot: Any) -> bool:
    if isinstance(item, Message):
        return isinstance(snapshot, Message) and _same_message(item, snapshot)
    return not isinstance(snapshot, Message) and bool(item == snapshot)


def _convert(index: int, item: Any, check: _Check | None) -> tuple[Any, Message]:
    """``(snapshot, owned message)`` for one input item, from the cache when still valid."""
    if type(item) is dict and (check is None or getattr(check, "passes_plain_dicts", False)):
        plain = _plain_message(item)
        if plain is not None:
            # Passes every rule by construction (the check says so of itself), and converting
            # it costs less than a cache lookup: neither checked nor cached.
            return dict(item), plain
    key = id(item)
    hit = _CONVERTED.get(key)
    snapshot: Any
    if isinstance(item, Message):
        # A Message pydantic validated is valid already (the OpenAI rules, check, apply to
        # dicts); one it did not is validated once, here.
        if hit is not None and _unchanged(item, hit[0]):
            return hit[0], hit[1]
        snapshot = msg = checked_copy(item, index)
    elif isinstance(item, Mapping):
        # A conversion is reused by a call with the same check, or with none.
        if hit is not None and (check is None or hit[2] is check) and _unchanged(item, hit[0]):
            return hit[0], hit[1]
        converted = coerce_message(item, index)  # the same dict unless it holds SDK objects
        if check is not None:
            check(converted, index)
        plain = _plain_message(converted)
        if plain is not None:
            snapshot, msg = dict(item), plain
        else:
            # Validated from a private deep copy: pydantic keeps values typed Any (nested
            # parts, metadata) as they are, and they must not be the caller's.
            snapshot = copied_fields(item, index)
            msg = from_mapping(
                index,
                snapshot if converted is item else copied_fields(converted, index),
                parts_checked=_checks_parts(check),
            )
    elif (converted := coerce_message(item, index)) is not item:
        # An SDK object (an OpenAI ChatCompletionMessage...): reused while it equals its copy.
        if hit is not None and (check is None or hit[2] is check) and _unchanged(item, hit[0]):
            return hit[0], hit[1]
        if check is not None:
            check(converted, index)
        msg = from_mapping(index, converted, parts_checked=_checks_parts(check))
        try:
            snapshot = copy_value(item)
        except InvalidMessageError as exc:
            raise InvalidMessageError(exc.detail, index=index) from exc
    else:
        raise InvalidMessageError(not_a_message(item), index=index)
    _CONVERTED.put(key, (snapshot, msg, check))
    return snapshot, msg


class _Seen(NamedTuple):
    """One input sequence converted before, so the next call can reuse its shared prefix."""

    items: tuple[Any, ...]  # the caller's dicts and Messages
    snapshots: tuple[Any, ...]  # per item: a copy of the dict as converted, or the owned Message
    messages: tuple[Message, ...]  # owned, with their ids
    check: _Check | None  # the check the dicts passed
    positions: dict[str, int]  # message id -> index
    kind: str  # "dicts", "messages" or "mixed": how the prefix check must compare


# The histories converted last, most recent first: several conversations packed in turn each
# find their own (8 of them; least recently used forgotten).
_RECENT_SLOTS = 8


class _Recent:
    def __init__(self) -> None:
        self.entries: list[_Seen] = []
        self.lock = threading.Lock()
        register(self)
        forks.track(self)

    def after_fork(self) -> None:
        """In a forked child: the lock, if a parent's thread held it at the fork (never to be
        released here), is replaced, and the histories it was changing forgotten."""
        if self.lock.locked():
            self.lock = threading.Lock()
            self.entries = []

    def clear(self) -> None:
        """Forget every history."""
        with self.lock:
            self.entries = []


_RECENT = _Recent()


def _kind(item: Any) -> str:
    return "dicts" if type(item) is dict else "messages" if isinstance(item, Message) else "mixed"


def _reusable(items: tuple[Any, ...], check: _Check | None) -> tuple[_Seen | None, int]:
    """The remembered sequence sharing the longest prefix with ``items``, and its length.

    Shared means the same objects, each still equal to what was converted: an item edited in
    place since ends the prefix.
    """
    with _RECENT.lock:
        recent = [seen for seen in _RECENT.entries if check is None or seen.check is check]
    guesses = [likely_prefix(items, seen.items) for seen in recent]
    if not guesses or max(guesses) == 0:
        return None, 0
    best = recent[guesses.index(max(guesses))]
    shared = common_prefix(items, best.items)
    # Both scans run in C for dicts, so checking a long history stays cheap.
    if best.kind == "dicts":
        same = list(map(operator.eq, items[:shared], best.snapshots))
    else:
        same = list(map(_unchanged, items[:shared], best.snapshots))
    if False in same:
        shared = same.index(False)
    return best, shared


def _remember(seen: _Seen, superseded: _Seen | None) -> None:
    with _RECENT.lock:
        others = [s for s in _RECENT.entries if s is not superseded]
        _RECENT.entries = [seen, *others][:_RECENT_SLOTS]


def owned_messages(
    messages: Iterable[Message | Mapping[str, Any] | SDKObject], *, check: _Check | None = None
) -> tuple[Message, ...]:
    """:func:`ensure_messages` for ctxpack's own use: the messages it returns are cached and
    shared between calls, so they must never be handed to a caller nor changed in place.

    Because they are ctxpack's own (built from copies, never handed out), what is derived from
    one of them (its token count, its flags) may be cached by its identity.
    """
    items, origin = _joined(message_items(messages))
    try:
        return _owned(items, check)
    except InvalidMessageError as exc:
        if origin is None:
            raise
        raise item_error(exc, origin) from None


def _responses_kind(item: Any) -> Any:
    if type(item) is dict:  # the common case first: a look-up, no isinstance against an ABC
        kind = item.get("type")
    elif isinstance(item, Message):
        return None
    else:
        kind = item.get("type") if isinstance(item, Mapping) else getattr(item, "type", None)
    return kind if isinstance(kind, str) and kind in JOINED_ITEMS else None


def _joined(items: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[int] | None]:
    """``items`` with each run of Responses API call items (parallel calls), and each
    ``reasoning`` item or call of a tool OpenAI ran with what it led to, joined into one
    message as
    :func:`~ctxpack.sdk.coerce_messages` joins them (Chat Completions wants one assistant
    message for parallel calls, its results after it); and where each entry came from (None
    when nothing was joined, the common case, at the cost of one look at each item)."""
    if not any(
        (type(kind := item.get("type")) is str and kind in JOINED_ITEMS)
        if type(item) is dict
        else _responses_kind(item)
        for item in items
    ):
        return items, None
    kinds = [_responses_kind(item) for item in items]
    out: list[Any] = []
    origin: list[int] = []
    start = 0
    while start < len(items):
        end = start
        while end < len(items) and (kinds[end] or _says_before_calls(items, kinds, end)):
            end += 1
        if end > start and kinds[end - 1] in LEADING_ITEMS and end < len(items):
            end += 1  # the message or calls the reasoning led to
        if end - start < 2:
            out.append(items[start])
            origin.append(start)
            start += 1
            continue
        run, where = joined_messages(items[start:end], start=start)
        out.extend(run)
        origin.extend(where)
        start = end
    return tuple(out), origin


def _says_before_calls(items: tuple[Any, ...], kinds: list[Any], at: int) -> bool:
    """Whether ``items[at]`` is an assistant's ``message`` item between its reasoning and
    calls: one response's, joined as :func:`~ctxpack.sdk.coerce_messages` joins them."""
    if at == 0 or kinds[at - 1] not in LEADING_ITEMS:
        return False
    item = items[at]
    following = kinds[at + 1] if at + 1 < len(kinds) else None
    return (
        _field(item, "type") == "message"
        and _field(item, "role") == "assistant"
        and following is not None
        and following not in LEADING_ITEMS
    )


def _field(item: Any, key: str) -> Any:
    """A field of an item given as a dict or as an SDK object."""
    return item.get(key) if isinstance(item, Mapping) else getattr(item, key, None)


def _owned(items: tuple[Any, ...], check: _Check | None) -> tuple[Message, ...]:
    base, shared = _reusable(items, check)
    if base is None or shared == 0:
        base, shared = None, 0
        out: list[Message] = []
        snapshots: list[Any] = []
        positions: dict[str, int] = {}
    else:
        if shared == len(items) == len(base.items):
            return base.messages
        out = list(base.messages[:shared])
        snapshots = list(base.snapshots[:shared])
        positions = base.positions.copy()
        for gone in base.messages[shared:]:
            del positions[gone.id]
    for index in range(shared, len(items)):
        snapshot, msg = _convert(index, items[index], check)
        if not msg.id:
            msg = _named(msg, positions)
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
    result = tuple(out)
    if items:
        kinds = {_kind(x) for x in items[shared:]}
        if base is not None:
            kinds.add(base.kind)
        kind = kinds.pop() if len(kinds) == 1 else "mixed"
        _remember(
            _Seen(items, tuple(snapshots), result, check, positions, kind),
            base if base is not None and shared == len(base.items) else None,
        )
    return result


def ensure_messages(
    messages: Iterable[Message | Mapping[str, Any] | SDKObject],
    *,
    check: Callable[[Mapping[str, Any], int], None] | None = None,
) -> list[Message]:
    """Validate ``messages`` and return them as :class:`Message` objects with unique ids.

    Args:
        messages: ``Message`` objects or OpenAI-style dicts, in chronological order.
        check: An extra validation ``check(dict, index)`` run on each dict before conversion
            (``pack()`` passes the OpenAI payload rules); it raises ``InvalidMessageError``. A
            check with a true ``passes_plain_dicts`` attribute is skipped for the dicts that
            pass every rule by construction (``role`` other than ``tool``, string ``content``,
            optional string ``id`` and ``name``).

    Returns:
        A new list of new messages: the input is never mutated, and editing what is returned
        changes neither the input nor anything ctxpack keeps. Messages without an id get
        :func:`stable_id`, which depends on their content, not their position.

    Raises:
        InvalidMessageError: naming the index and the field of the first problem.

    Example:
        >>> [m.id for m in ensure_messages([{"role": "user", "content": "hi", "id": "q"}])]
        ['q']
    """
    if check is not None and not callable(check):
        raise ConfigError(
            f"check must be a function (dict, index) -> None, got {type(check).__name__}"
        )
    return [detached(msg) for msg in owned_messages(messages, check=check)]


# Owned message without an id -> (that message, its digest): the digest is computed once.
_DIGESTS: LRUCache[int, tuple[Message, str]] = LRUCache(
    _CONVERSIONS_LIMIT,
    maxbytes=8 * 2**20,
    weigh=lambda key, entry: ENTRY_OVERHEAD + message_bytes(entry[0]) + 61,
    name="generated ids",
)


def _named(msg: Message, taken: Mapping[str, int]) -> Message:
    """``msg`` with its generated id: the first free one of ``m-<digest>``, ``m-<digest>-2``...
    among the ids of the messages before it."""
    hit = _DIGESTS.get(id(msg))
    # The entry holds the message, so its identity cannot be recycled while cached.
    if hit is not None and hit[0] is msg:
        digest = hit[1]
    else:
        digest = content_digest(msg)
        _DIGESTS.put(id(msg), (msg, digest))
    new_id, occurrence = f"m-{digest}", 1
    while new_id in taken:
        occurrence += 1
        new_id = f"m-{digest}-{occurrence}"
    return msg.model_copy(update={"id": new_id})
