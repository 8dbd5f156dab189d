"""The checks of the arguments public functions take, in one place.

Each check raises ctxpack's own error naming the argument (and, for a message, its index and
field) before the value reaches code that would fail on it with a bare ``TypeError``,
``AttributeError`` or ``RecursionError``, or, worse, accept it and return a wrong result.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import re
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from difflib import get_close_matches
from typing import Any, Literal, ParamSpec, TypeVar, cast

from pydantic import BaseModel

from ..errors import ArgumentsError, ConfigError, InvalidMessageError

__all__ = [
    "MAX_NESTING",
    "TooDeep",
    "TooLongInt",
    "callable_name",
    "callback",
    "check_nesting",
    "check_text",
    "file_path",
    "finite",
    "flag",
    "guesses",
    "instances",
    "item_list",
    "json_problem",
    "keyed",
    "keyword_checked",
    "message_items",
    "misfit",
    "nonblank",
    "number",
    "optional_text",
    "os_path",
    "shown",
    "string",
    "strings",
    "tokens",
    "too_deep_error",
    "too_long_int_text",
    "tool_definitions",
    "tool_list",
    "type_name",
    "weights",
    "writable_int",
]

_T = TypeVar("_T")
_P = ParamSpec("_P")

# How deep lists and objects may nest inside a message or a tool definition. JSON parsers stop
# far below what would exhaust Python's stack (the json module fails near 1,000 levels), and no
# provider payload comes near this.
MAX_NESTING = 100

# A lone surrogate is valid in a Python str and in JSON ("\ud800"), but not in UTF-8: no provider
# accepts it, and hashing or storing the text would fail on it.
_SURROGATE = re.compile("[\ud800-\udfff]")
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")  # what OpenAI and Anthropic take


def type_name(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def shown(value: Any, limit: int = 200) -> str:
    """``repr(value)`` for an error message, cut at ``limit`` characters (it need not carry a
    megabyte); what the value is where ``repr()`` fails (an int with more digits than Python
    writes as text, lists nested past the recursion limit, a list holding either)."""
    if isinstance(value, int) and not writable_int(value):
        return f"an int of {value.bit_length()} bits"
    try:
        text = repr(value)
    except ValueError:
        return f"a {type_name(value)} holding an int too long to write as text"
    except RecursionError:
        return f"a {type_name(value)} nested too deep to write as text"
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def json_type_name(value: Any) -> str:
    """:func:`type_name` for a payload's value, whose ``None`` was JSON's ``null``."""
    return "null" if value is None else type(value).__name__


def message_items(messages: Any, *, argument: str = "messages") -> tuple[Any, ...]:
    """``messages`` as a tuple of its entries, or the error saying a list was expected."""
    if (
        messages is None
        or isinstance(messages, (str, bytes, Mapping, BaseModel))
        or not isinstance(messages, Iterable)
    ):
        hint = ""
        if isinstance(messages, Mapping) and "messages" in messages:
            hint = "; that is a request payload: pass its 'messages' list"
        elif isinstance(messages, (Mapping, BaseModel)):
            hint = "; wrap a single message in a list"
        raise InvalidMessageError(
            f"{argument}: expected a list of messages, got {type_name(messages)}{hint}"
        )
    return tuple(messages)


def string(value: Any, argument: str) -> str:
    """``value`` if it is a string."""
    if not isinstance(value, str):
        raise ConfigError(f"{argument} must be a string, got {type_name(value)}")
    return value


def nonblank(value: Any, argument: str) -> str:
    """``value`` if it is a string with more than whitespace in it: a task or a query of none
    matches nothing, and an empty result would read as "nothing in the repository is
    relevant"."""
    if not isinstance(value, str) or not value.strip():
        shown = repr(value) if isinstance(value, str) else type_name(value)
        raise ConfigError(f"{argument} must be a non-empty string, got {shown}")
    return value


def misfit(func: Any, args: tuple[Any, ...]) -> bool:
    """Whether ``func`` cannot take ``args`` at all (too many, too few): what a ``TypeError``
    from calling a user's callback means when it is not raised inside the callback. Only the
    arity is read (``args`` may be placeholders); a callable without a readable signature is
    given the benefit of the doubt."""
    try:
        inspect.signature(func).bind(*args)
    except TypeError:
        return True
    except ValueError:
        return False
    return False


def callback(value: _T, argument: str, expected: str, arity: int) -> _T:
    """``value`` if it is a callable that takes ``arity`` positional arguments (``expected``
    shows its signature in the message): checked once when it is given, rather than failing
    with a bare ``TypeError`` at its first call, deep inside."""
    if not callable(value) or misfit(value, (None,) * arity):
        raise ConfigError(f"{argument} must be a callable {expected}, got {callable_name(value)}")
    # An async one returns a coroutine nobody awaits: refused now, not at its first call, deep
    # inside a render hours later. An object's own async __call__ counts too.
    if inspect.iscoroutinefunction(value) or inspect.iscoroutinefunction(type(value).__call__):
        raise ConfigError(
            f"{argument} must be a plain callable {expected}, got a coroutine function "
            f"({callable_name(value)}): ctxpack calls it and uses what it returns; run an async "
            "call inside it (asyncio.run, or a thread's event loop)"
        )
    return value


def keyword_checked(func: Callable[_P, _T]) -> Callable[_P, _T]:
    """``func``, whose calls with arguments it does not take raise :class:`ArgumentsError`
    naming them, the keyword likely meant and the ones it takes, instead of Python's bare
    ``TypeError``.

    For the entry points with many options (a misspelt ``windw=`` in ``Session(...)``). The
    arguments are bound against the signature only once the call has failed with a
    ``TypeError``, so a good call costs nothing more; a ``TypeError`` raised inside ``func``
    binds and is re-raised as it was.
    """
    signature = inspect.signature(func)
    name = func.__qualname__.removesuffix(".__init__") + "()"
    params = [p for p in signature.parameters.values() if p.name not in ("self", "cls")]
    taken = [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    method = len(params) < len(signature.parameters)

    def problem(args: tuple[Any, ...], given: Mapping[str, Any], exc: TypeError) -> str:
        unknown = [key for key in given if key not in taken]
        if unknown:
            noun = "argument" if len(unknown) == 1 else "arguments"
            return f"{name} takes no {noun} {guesses(unknown, taken)}; it takes {', '.join(taken)}"
        if len(args) - method > len(positional):
            keywords = ", ".join(f"{key}=" for key in taken if key not in positional)
            if not positional:
                return f"{name} takes keyword arguments only: {keywords}"
            return (
                f"{name} takes {', '.join(positional)} by position, the others by keyword: "
                f"{keywords}"
            )
        return f"{name}: {exc}; it takes {', '.join(taken)}"

    @functools.wraps(func)
    def checked(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return func(*args, **kwargs)
        except TypeError:
            try:
                signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise ArgumentsError(problem(args, kwargs, exc)) from None
            raise

    if not inspect.iscoroutinefunction(func):
        return checked

    # A coroutine function stays one (callers tell an async session by it); a bad call fails
    # when it is made, before there is a coroutine to await.
    @functools.wraps(func)
    async def checked_async(*args: _P.args, **kwargs: _P.kwargs) -> Any:
        return await cast(Awaitable[Any], checked(*args, **kwargs))

    return cast(Callable[_P, _T], checked_async)


def guesses(unknown: Iterable[str], known: Sequence[str]) -> str:
    """The names in ``unknown``, each with the name of ``known`` likely meant, if one is close:
    ``'windw' (did you mean 'window'?), 'zzz'``."""
    named = []
    for key in unknown:
        near = get_close_matches(key, known, n=1)
        named.append(f"{key!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
    return ", ".join(named)


def callable_name(value: Any) -> str:
    """``value`` in an error about a callback: a function with its parameters (what is wrong
    with it), else its type."""
    if not callable(value):
        return type_name(value)
    try:
        signature = inspect.signature(value).replace(return_annotation=inspect.Signature.empty)
    except (TypeError, ValueError):
        return type(value).__name__
    return f"{getattr(value, '__name__', type(value).__name__)}{signature}"


def file_path(value: Any, argument: str) -> str:
    """``value`` as a path string if it is a str or an ``os.PathLike``; anything else is
    refused, since ``str()`` of it (``5``, ``None``) would name a file of that name."""
    name = os.fspath(value) if isinstance(value, os.PathLike) else value
    if not isinstance(name, str):
        raise ConfigError(
            f"{argument} must be a file path (str or os.PathLike), got {type(value).__name__}"
        )
    if not os_path(name):
        raise ConfigError(
            f"{argument} {name!r} is not a usable file path: it holds a NUL byte or a lone "
            "surrogate"
        )
    return name


def os_path(name: str) -> bool:
    """Whether the operating system can take ``name`` as a path: a NUL byte or a lone surrogate
    would stop the first call that opens it with a ValueError or a UnicodeEncodeError."""
    try:
        return b"\0" not in os.fsencode(name)
    except UnicodeEncodeError:
        return False


def item_list(value: Any, argument: str, *, what: str) -> list[Any]:
    """``value`` as a list of its items (``what`` names them in the message): a lone string or
    mapping is refused, since it would be read as its characters or its keys."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise ConfigError(f"{argument} must be a list of {what}, got {type_name(value)}")
    return list(value)


def instances(value: Any, argument: str, kind: type, *, hint: str = "") -> list[Any]:
    """``value`` as a list if each of its items is a ``kind`` (``hint``, after the message,
    says how to build one)."""
    items = item_list(value, argument, what=f"{kind.__name__} objects")
    odd = next((i for i, item in enumerate(items) if not isinstance(item, kind)), None)
    if odd is not None:
        raise ConfigError(
            f"{argument}[{odd}] is a {type(items[odd]).__name__}, not a {kind.__name__}{hint}"
        )
    return items


def keyed(value: Any, argument: str, *, values: type, what: str) -> Mapping[str, Any]:
    """``value`` if it is a mapping of strings to instances of ``values`` (``what`` says what
    it maps, in the message: ``"message ids to their original Message"``)."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{argument} must be a mapping of {what}, got {type_name(value)}")
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, values):
            raise ConfigError(
                f"{argument}[{key!r}]: must map {what}, got "
                f"{type(key).__name__} -> {type_name(item)}"
            )
    return value


def strings(value: Any, argument: str, *, what: str = "strings") -> list[str]:
    """``value`` as a list of strings (``what`` names them in the message): a lone string is
    refused, since it would be read as its characters."""
    out = item_list(value, argument, what=what)
    # The common case in one pass in C: a stage's message ids, thousands per request.
    if set(map(type, out)) <= {str}:
        return out
    for i, item in enumerate(out):
        if not isinstance(item, str):
            raise ConfigError(f"{argument}[{i}] must be a string, got {type_name(item)}")
    return out


def optional_text(value: Any, argument: str) -> str | None:
    """``value`` if it is a string or ``None``."""
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{argument} must be a string or None, got {type_name(value)}")
    return value


def openai_api(value: Any) -> Literal["chat", "responses"]:
    """``value`` as the OpenAI API a caller writes for: Chat Completions or Responses."""
    if value == "chat":
        return "chat"
    if value == "responses":
        return "responses"
    raise ConfigError(f'api must be "chat" or "responses", got {shown(value)}')


def flag(value: Any, argument: str) -> bool:
    """``value`` if it is ``True`` or ``False`` (a truthy string is not a yes)."""
    if not isinstance(value, bool):
        raise ConfigError(f"{argument} must be True or False, got {shown(value)}")
    return value


# The largest count taken: a float (a share, a price) holds every int up to it exactly, and no
# window or budget comes near it.
MOST = 2**53


def tokens(value: Any, argument: str, *, minimum: int = 1, unit: str = "tokens") -> int:
    """``value`` if it is an int (not a bool) of at least ``minimum`` (``unit``, for the
    message)."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MOST:
        got = shown(value) if isinstance(value, (int, float, str)) else type_name(value)
        if isinstance(value, int) and value > MOST:
            got = f"an int of {value.bit_length()} bits"
        wanted = "a positive int" if minimum == 1 else f"an int >= {minimum}"
        raise ConfigError(f"{argument} must be {wanted} up to 2**53 ({unit}), got {got}")
    return value


def tool_list(tools: Any, *, argument: str = "tools") -> list[Any]:
    """``tools`` as a list, or the error saying a list of tool definitions was expected (the
    definitions themselves are not looked at: see :func:`tool_definitions`)."""
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Iterable):
        raise ConfigError(
            f"{argument} must be a list of tool definitions, got {type_name(tools)}"
            + ("; wrap a single tool in a list" if isinstance(tools, Mapping) else "")
        )
    return list(tools)


def tool_definitions(tools: Any, *, argument: str = "tools") -> list[Mapping[str, Any]]:
    """``tools`` as a list of tool definitions, each an object with a name or a type.

    The shapes read are OpenAI's (``{"type": "function", "function": {"name": ...}}``, or the
    bare function), Anthropic's (``{"name", "input_schema"}``) and the providers' built-in tools
    (``{"type": "web_search"...}``). A definition is refused, not counted, when the provider
    would refuse it: a name not of ``^[a-zA-Z0-9_-]{1,64}$``, a description that is not a
    string, a schema that is not an object, a value JSON (or UTF-8) cannot carry.
    """
    out = tool_list(tools, argument=argument)
    for i, tool in enumerate(out):
        check_tool(tool, f"{argument}[{i}]")
    return out


def check_tool(tool: Any, where: str) -> None:
    if not isinstance(tool, Mapping):
        raise ConfigError(f"{where}: a tool definition must be an object, got {type_name(tool)}")
    nested = "function" in tool
    function = tool["function"] if nested else tool
    path = f"{where}.function" if nested else where
    if nested and not isinstance(function, Mapping):
        raise ConfigError(f"{path}: must be an object with a name, got {type_name(function)}")
    name = function.get("name")
    if "name" in function and not (isinstance(name, str) and TOOL_NAME.fullmatch(name)):
        shown = repr(name) if isinstance(name, str) else type_name(name)
        raise ConfigError(f"{path}.name: must be non-empty, ^{TOOL_NAME.pattern}$, got {shown}")
    if nested and name is None:
        raise ConfigError(f"{path}.name: a function tool needs a string name")
    built_in = isinstance(tool.get("type"), str) and tool["type"] != "function"
    if name is None and not built_in:
        raise ConfigError(
            f"{where}: a tool definition needs a name (or a type for a built-in tool); "
            'expected {"type": "function", "function": {"name": ...}} or '
            '{"name": ..., "input_schema": ...}'
        )
    description = function.get("description")
    if description is not None and not isinstance(description, str):
        raise ConfigError(f"{path}.description: must be a string, got {type_name(description)}")
    # OpenAI's parameters are optional (an SDK model dumps a missing one as None); Anthropic's
    # input_schema is required.
    for key, optional in (("parameters", True), ("input_schema", False)):
        if key in function and not (
            isinstance(function[key], Mapping) or (optional and function[key] is None)
        ):
            raise ConfigError(
                f"{path}.{key}: must be a JSON Schema object, got {type_name(function[key])}"
            )
    problem = json_problem(tool, where, exact=False, limit=MAX_NESTING, utf8=True)
    if problem is not None:
        raise ConfigError(
            f"{problem}: a tool definition is sent as JSON, so it holds only strings of valid "
            "Unicode, finite numbers, booleans, None, lists and objects with string keys"
        )


def json_problem(
    value: Any, path: str, *, exact: bool = True, limit: int | None = None, utf8: bool = False
) -> str | None:
    """Where in ``value`` (found at ``path``) a value lies that JSON cannot carry (a set, an
    object, NaN, a key that is not a string), or ``None``. With ``exact`` a tuple or a mapping
    that is not a dict is refused too, since JSON would give it back changed; with ``limit``,
    lists and objects nested deeper than that; with ``utf8``, a string holding a lone
    surrogate, which a request sent as UTF-8 cannot. Iterative, so that no depth exhausts the
    stack.
    """
    arrays: tuple[type, ...] = (list,) if exact else (list, tuple)
    stack = [(value, path, 0)]
    while stack:
        item, where, level = stack.pop()
        kind = type(item)
        if isinstance(item, int) and not writable_int(item):
            return too_long_int_text(where, item.bit_length())
        if utf8 and isinstance(item, str) and not _valid_utf8(item):
            return f"{where}: a string holding a lone surrogate"
        if item is None or kind in (str, int, bool) or (kind is float and math.isfinite(item)):
            continue
        # A str or int subclass (an enum's value) is written as its base type.
        if not exact and isinstance(item, (str, int)):
            continue
        array = kind in arrays
        if not array and kind is not dict and (exact or not isinstance(item, Mapping)):
            return f"{where}: {item!r}" if kind is float else f"{where}: a {kind.__name__} value"
        if limit is not None and level >= limit:
            return f"{where}: lists and objects nested deeper than {limit} levels"
        if array:
            stack.extend((v, f"{where}[{i}]", level + 1) for i, v in enumerate(item))
            continue
        for key, v in item.items():
            if type(key) is not str:
                return f"{where}: the key {key!r} is not a string"
            if utf8 and not _valid_utf8(key):
                return f"{where}: the key {key!r} holds a lone surrogate"
            stack.append((v, f"{where}.{key}", level + 1))
    return None


def _valid_utf8(text: str) -> bool:
    return text.isascii() or _SURROGATE.search(text) is None


class TooDeep(Exception):
    """Lists and objects nested deeper than :data:`MAX_NESTING`: turned into the caller's error,
    which knows which message or argument it was."""


class TooLongInt(Exception):
    """An int with more digits than Python writes as text: turned into the caller's error, which
    knows which message or argument it was."""

    def __init__(self, bits: int) -> None:
        super().__init__(bits)
        self.bits = bits


# Python writes an int as text only up to sys.get_int_max_str_digits() digits (640 at the least,
# when limited): an int of up to 2,000 bits (603 digits) is always written.
_ALWAYS_WRITTEN_BITS = 2000


def writable_int(number: int) -> bool:
    """Whether Python can write ``number`` as text, so that ``json.dumps()`` and ``repr()`` of
    what holds it work: not past ``sys.get_int_max_str_digits()`` digits (4,300 by default)."""
    if number.bit_length() <= _ALWAYS_WRITTEN_BITS or not sys.get_int_max_str_digits():
        return True
    try:
        str(number)  # refused at once past the limit, before any digit is written
    except ValueError:
        return False
    return True


def too_long_int_text(field: str, bits: int) -> str:
    """What is wrong with a ``field`` holding an int of ``bits`` bits that Python cannot write."""
    return (
        f"{field}: holds an int of {bits} bits, more digits than Python writes as text "
        "(sys.get_int_max_str_digits()), so no JSON encoder can send it"
    )


def check_nesting(value: Any, depth: int = 0, *, limit: int = MAX_NESTING) -> None:
    """Raise :class:`TooDeep` when lists and objects nest deeper than ``limit`` levels inside
    ``value`` (starting at ``depth``), and :class:`TooLongInt` for an int inside it that Python
    cannot write as text. Iterative, so that no depth exhausts the stack."""
    stack: list[tuple[Any, int]] = [(value, depth)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, Mapping):
            inner: Iterable[Any] = item.values()
        elif isinstance(item, (list, tuple)):
            inner = item
        else:
            if type(item) is int and not writable_int(item):
                raise TooLongInt(item.bit_length())
            continue
        if level >= limit:
            raise TooDeep
        stack.extend((x, level + 1) for x in inner)


def too_deep_error(index: int | None, field: str) -> InvalidMessageError:
    """The error for a message whose ``field`` nests deeper than :data:`MAX_NESTING`."""
    return InvalidMessageError(
        f"{field}: lists and objects nested deeper than {MAX_NESTING} levels",
        index=index,
        field=field,
    )


def check_text(text: str, field: str) -> None:
    """Raise ``ValueError`` naming ``field`` when ``text`` holds a lone surrogate (not valid
    Unicode, so not sendable as UTF-8); pydantic validators turn it into the message's error."""
    if text.isascii():
        return
    found = _SURROGATE.search(text)
    if found is not None:
        raise ValueError(
            f"{field}: holds a lone surrogate U+{ord(found.group()):04X} at character "
            f"{found.start()}, which is not valid Unicode; decode the text with "
            "errors='replace' (or fix its source) first"
        )


def sendable(
    text: str, argument: str, error: type[ConfigError | InvalidMessageError] = InvalidMessageError
) -> str:
    """``text`` if it holds no lone surrogate, else ``error`` naming ``argument``: an
    :class:`InvalidMessageError` for a text counted alone as a message's would be, a
    :class:`ConfigError` for a value a store or a parser must take as UTF-8."""
    try:
        check_text(text, argument)
    except ValueError as exc:
        raise error(str(exc)) from None
    return text


def number(value: Any, argument: str, *, minimum: float = 0.0) -> float:
    """``value`` if it is a finite int or float (not a bool) of at least ``minimum``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not _fits_float(value)
        or value < minimum
    ):
        got = shown(value) if isinstance(value, (int, float, str)) else type_name(value)
        raise ConfigError(f"{argument} must be a finite number >= {minimum:g}, got {got}")
    return value


def _fits_float(value: float) -> bool:
    """Whether ``value`` is finite, as a float (an int too large for one is not)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def weights(value: Any, argument: str) -> dict[str, float]:
    """``value`` (``None`` for none) as a mapping of names to finite weights >= 0."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{argument} must be a mapping of names to weights, got {type_name(value)}"
        )
    return {
        string(name, f"{argument} key {name!r}"): number(weight, f"{argument}[{name!r}]")
        for name, weight in value.items()
    }


def finite(value: float, argument: str) -> float:
    """``value`` if it is a finite number (an int too large for a float is not)."""
    if not _fits_float(value):
        shown = "an int too large for a float" if isinstance(value, int) else repr(value)
        raise ConfigError(f"{argument} must be a finite number, got {shown}")
    return value
