"""Building pydantic instances from values already known to be valid, without validation.

``model_construct`` still walks the fields in Python; setting the four slots pydantic itself
fills skips that walk, which matters for the objects made once per message (decisions, messages
converted from plain dicts) on histories of tens of thousands of messages (figures in
docs/performance.md).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["trusted_frozen_instance"]

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def trusted_frozen_instance(
    cls: type[M],
    values: dict[str, Any],
    fields_set: set[str],
    private: dict[str, Any] | None = None,
) -> M:
    """An instance of the frozen model ``cls`` holding ``values`` (every field, in declaration
    order), as if validated with only ``fields_set`` given, sharing ``fields_set`` between
    instances. The caller guarantees the values are valid; use this only for models without
    extra fields.

    A set of eight names takes 728 bytes, more than the instance and its values together; the
    packer makes hundreds of decisions per call. Sharing is safe only for frozen models: nothing
    can set a field in place, and ``model_copy()`` copies the set before it adds to it. The
    caller never mutates ``fields_set``. ``private`` is the private attributes' dict (``{}``
    for a model that declares some, as pydantic gives it, ``None`` for one that has none).
    """
    instance = _new(cls)
    _set_dict(instance, values)
    _set_fields(instance, fields_set)
    _set_extra(instance, None)
    _set_private(instance, private)
    return instance
