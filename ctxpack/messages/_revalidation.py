"""Messages pydantic did not validate, checked where ctxpack takes them in or where a stage
returns them: ``model_construct()`` and ``model_copy(update=...)`` skip validation, so such a
message may hold a value of the wrong type or a media part the provider refuses."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pydantic import ValidationError

from ..errors import InvalidMessageError
from ._model import Message, detached, invalid, is_unchecked

__all__ = ["checked_copy", "new_messages_checked", "new_originals_checked"]

_BUILT = (
    "a Message made by model_construct() or model_copy(update=...), which do not validate: "
    "build it with Message(...) or give each field a value of its type"
)


def checked_copy(message: Message, index: int | None, argument: str | None = "messages") -> Message:
    """:func:`~ctxpack.messages.detached` for a message a caller hands over: one pydantic did
    not validate is validated first, so that a bad value fails here, named, rather than deep
    inside a stage or at the provider (the copy, a new object, is not marked unchecked).

    Raises:
        InvalidMessageError: naming ``index``, the field and ``argument`` (the caller's argument
            holding the message, if any).
    """
    if is_unchecked(message):
        _revalidated(message, index, _BUILT + (f", in the argument {argument}" if argument else ""))
    return detached(message, index)


def new_messages_checked(
    before: Sequence[Message], after: Sequence[Message], *, where: str
) -> None:
    """Raise :class:`~ctxpack.InvalidMessageError` for the first message of ``after`` that is
    not one of ``before`` (by identity) and fails Message's validation, naming its index and
    field and ``where`` it came from: ``model_copy(update=...)`` and ``model_construct()``
    skip validation, so a stage may return a message that was never checked."""
    if after is before:
        return
    known = set(map(id, before))
    # The common case, in C: every message is one of the input's (kept, dropped or reordered).
    if known.issuperset(map(id, after)):
        return
    for index, message in enumerate(after):
        if id(message) not in known:
            _revalidated(message, index, where)


def new_originals_checked(
    before: Iterable[Message], after: Mapping[str, Message], *, where: str
) -> None:
    """:func:`new_messages_checked` for a context's artifacts (message id -> original): raise
    :class:`~ctxpack.InvalidMessageError` for the first original of ``after`` that is not one
    of ``before`` (by identity) and fails Message's validation, naming its id and field."""
    known = set(map(id, before))
    for mid, message in after.items():
        if id(message) not in known:
            _revalidated(message, None, f"the artifact {mid!r} of {where}")


def _revalidated(message: Message, index: int | None, where: str) -> None:
    hint = where if where.startswith(_BUILT) else f"{where}; {_BUILT}"
    values = message.__dict__
    try:
        # Strict: a value pydantic would convert ("1" for a priority) is stored unconverted.
        valid = type(message).__pydantic_validator__.validate_python(values, strict=True)
    except ValidationError as exc:
        error = invalid(exc, index)
        raise InvalidMessageError(
            f"{error.detail} ({hint})", index=index, field=error.field
        ) from exc
    # What strict mode still converts (a dict for a ToolCall) differs from what it made of it.
    field = next((k for k, v in valid.__dict__.items() if values.get(k) != v), None)
    if field is not None:
        raise InvalidMessageError(
            f"{field}: holds {values.get(field)!r}, which a Message would hold as "
            f"{valid.__dict__[field]!r} ({hint})",
            index=index,
            field=field,
        )
