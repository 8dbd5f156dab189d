"""ctxpack's caches: bounded, least-recently-used, safe under threads, and clearable.

A chatbot packs the same history again on every turn, so ctxpack keeps what it derived from a
conversation (converted messages, token counts, the BM25 index...) between calls. Every such
cache is keyed by content, or verified against it before use, so a result never depends on
object identity or on what was packed before. Each is bounded by a number of entries and by the
bytes its entries take, and evicts the least recently used first, so several conversations
packed in turn all stay warm while a process packing thousands stays within a fixed ceiling.
:func:`clear_caches` empties them all and :func:`cache_stats` says what each holds (the ceilings
are given on the page "Using ctxpack in a server").
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Iterable
from functools import lru_cache
from types import MethodType
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, ParamSpec, TypeVar

from ._internal import forks

if TYPE_CHECKING:
    from functools import _lru_cache_wrapper

__all__ = [
    "cache_stats",
    "clear_caches",
    "memoize",
]

K = TypeVar("K")
V = TypeVar("V")


# Weak: a cache owned by an object the user made (a counter, say) goes away with it.
_CLEARABLE: weakref.WeakSet[Any] = weakref.WeakSet()
_REGISTRY_LOCK = forks.freed_in_child(threading.Lock())

C = TypeVar("C")


def register(cache: C) -> C:
    """Have :func:`clear_caches` clear ``cache``: anything with a ``clear()`` method, or a
    ``functools.lru_cache`` wrapper. Returns ``cache``."""
    with _REGISTRY_LOCK:
        _CLEARABLE.add(cache)
    return cache


def clear_caches() -> None:
    """Empty every cache ctxpack keeps between calls.

    Results never depend on the caches (they are keyed by content), so this only frees memory:
    the next :func:`ctxpack.pack` of a conversation costs what a first one does. Safe to call
    while other threads pack.

    Example:
        >>> import ctxpack
        >>> ctxpack.caches.clear_caches()
    """
    with _REGISTRY_LOCK:
        caches = list(_CLEARABLE)
    for cache in caches:
        clear: Callable[[], None] = getattr(cache, "cache_clear", None) or cache.clear
        clear()


class CacheStats(NamedTuple):
    """What one cache holds now, and its bounds."""

    name: str
    entries: int
    max_entries: int
    nbytes: int  # estimated bytes of its keys and values (see approx_bytes)
    max_bytes: int


def cache_stats() -> list[CacheStats]:
    """What each of ctxpack's caches holds now, largest first.

    Example:
        >>> import ctxpack
        >>> stats = ctxpack.caches.cache_stats()
        >>> all(s.nbytes <= s.max_bytes and s.entries <= s.max_entries for s in stats)
        True
    """
    with _REGISTRY_LOCK:
        caches = list(_CLEARABLE)
    found = [cache.stats() for cache in caches if hasattr(cache, "stats")]
    return sorted(found, key=lambda s: (-s.nbytes, s.name))


# What a dict entry, its key tuple and the cache's bookkeeping add to the objects themselves.
ENTRY_OVERHEAD = 200


_FLAT = frozenset({str, bytes, int, float, bool, type(None)})
_SEQUENCES = frozenset({tuple, list, set, frozenset})


def approx_bytes(value: Any, limit: int | None = None) -> int:
    """Bytes ``value`` takes, roughly: strings and bytes exactly, containers with their items,
    numpy arrays by their buffer, pydantic models by their fields; shared objects counted each
    time they appear (an estimate that errs on the side of too much).

    With a ``limit``, a sequence's items are counted only until they pass it: the result is
    exact up to ``limit``, and over it for a value larger.
    """
    kind = type(value)
    # Exact types first: this runs on every entry a cache stores.
    if kind in _FLAT:
        return sys.getsizeof(value)
    if kind in _SEQUENCES:
        if limit is None:
            return sys.getsizeof(value) + sum(map(approx_bytes, value))
        return _bytes_up_to(value, limit)
    if isinstance(value, (str, bytes, int, float)):
        return sys.getsizeof(value)
    if isinstance(value, (tuple, list, set, frozenset)):
        return sys.getsizeof(value) + sum(map(approx_bytes, value))
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(
            approx_bytes(k) + approx_bytes(v) for k, v in value.items()
        )
    if hasattr(type(value), "nbytes"):  # a numpy array
        return int(value.nbytes) + 112
    fields = getattr(value, "__dict__", None)
    if isinstance(fields, dict):
        return sys.getsizeof(value) + approx_bytes(fields)
    return sys.getsizeof(value)


def _bytes_up_to(items: Collection[Any], limit: int) -> int:
    total = sys.getsizeof(items)
    for item in items:
        if total > limit:
            break
        total += approx_bytes(item, limit - total)
    return total


def _weigh_entry(key: Any, value: Any, limit: int | None = None) -> int:
    # A result too heavy to keep (a finding at every other character of a megabyte) is weighed
    # only until it is: walking its every item cost more than finding them.
    weight = ENTRY_OVERHEAD + approx_bytes(key)
    return weight + approx_bytes(value, None if limit is None else limit - weight)


class _LruCacheStats:
    """:func:`cache_stats` for a ``functools.lru_cache`` whose entries have a known ceiling."""

    def __init__(self, fn: Any, name: str, entry_bytes: int) -> None:
        self._fn = fn
        self.name = name
        self.entry_bytes = entry_bytes

    def clear(self) -> None:
        self._fn.cache_clear()

    def stats(self) -> CacheStats:
        info = self._fn.cache_info()
        return CacheStats(
            self.name,
            info.currsize,
            info.maxsize,
            info.currsize * self.entry_bytes,
            info.maxsize * self.entry_bytes,
        )


def register_lru(fn: C, *, name: str, entry_bytes: int) -> C:
    """Register a ``functools.lru_cache`` function whose every entry takes at most
    ``entry_bytes`` (its callers keep larger arguments out of it): :func:`clear_caches` clears
    it and :func:`cache_stats` counts each entry at that ceiling, for as long as ``fn`` lives.
    Returns ``fn``.

    For the hottest pure functions of short strings (word stems), where ``functools``' C
    implementation matters; everything else uses :func:`memoize`.
    """
    adapter = _LruCacheStats(fn, name, entry_bytes)
    # The function keeps its reporter alive (the registry holds it weakly), no longer.
    fn.cache_stats = adapter  # type: ignore[attr-defined]
    register(adapter)
    return fn


class LRUCache(Generic[K, V]):
    """A mapping of at most ``maxsize`` entries and ``maxbytes`` bytes that forgets the least
    recently used first.

    Every entry is weighed when it is stored (``weigh(key, value)``; by default
    :data:`ENTRY_OVERHEAD` plus :func:`approx_bytes` of both), and entries are evicted until
    both bounds hold; an entry heavier than ``maxbytes`` alone is not stored. Every operation
    holds a lock, so threads may share it. It is registered with :func:`clear_caches` and
    :func:`cache_stats`.

    Example:
        >>> cache = LRUCache(2)
        >>> cache.put("a", 1); cache.put("b", 2); cache.get("a"); cache.put("c", 3)
        1
        >>> cache.get("b") is None, len(cache)
        (True, 2)
        >>> small = LRUCache(100, maxbytes=1000)
        >>> small.put("big", "x" * 2000); small.get("big") is None
        True
    """

    def __init__(
        self,
        maxsize: int,
        *,
        maxbytes: int | None = None,
        weigh: Callable[[K, V], int] | None = None,
        name: str = "",
    ) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be >= 1, got {maxsize}")
        if maxbytes is not None and maxbytes < 1:
            raise ValueError(f"maxbytes must be >= 1, got {maxbytes}")
        self.maxsize = maxsize
        self.maxbytes = maxbytes if maxbytes is not None else sys.maxsize
        self.name = name or f"LRUCache({maxsize})"
        self._weigh: Callable[[K, V], int] = weigh or _weigh_entry
        self._data: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._nbytes = 0
        self._lock = threading.Lock()
        register(self)
        forks.track(self)

    def after_fork(self) -> None:
        """In a forked child: a lock that a parent's thread held at the fork (never to be
        released here) is replaced, and what that thread was changing forgotten."""
        if self._lock.locked():
            self._lock = threading.Lock()
            self._data = OrderedDict()
            self._nbytes = 0

    def get(self, key: K) -> V | None:
        """The value for ``key`` (now the most recently used), or ``None``."""
        with self._lock:
            entry = self._data.get(key)
            if entry is None:
                return None
            self._data.move_to_end(key)
            return entry[0]

    def get_many(self, keys: Iterable[K]) -> dict[K, V]:
        """The cached values among ``keys`` (now the most recently used); the others left out."""
        found: dict[K, V] = {}
        with self._lock:
            for key in keys:
                entry = self._data.get(key)
                if entry is not None:
                    self._data.move_to_end(key)
                    found[key] = entry[0]
        return found

    def put(self, key: K, value: V) -> None:
        """Store ``value`` under ``key``, evicting the least recently used entries while the
        cache holds more than ``maxsize`` entries or ``maxbytes`` bytes."""
        weigh = self._weigh
        if weigh is _weigh_entry:
            weight = _weigh_entry(key, value, self.maxbytes)
        else:
            weight = weigh(key, value)
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._nbytes -= old[1]
            if weight > self.maxbytes:
                return
            self._data[key] = (value, weight)
            self._nbytes += weight
            while len(self._data) > self.maxsize or self._nbytes > self.maxbytes:
                self._nbytes -= self._data.popitem(last=False)[1][1]

    def pop(self, key: K) -> V | None:
        """Remove ``key`` and return its value, or ``None``."""
        with self._lock:
            entry = self._data.pop(key, None)
            if entry is None:
                return None
            self._nbytes -= entry[1]
            return entry[0]

    def values(self) -> list[V]:
        """The values, least recently used first (a copy)."""
        with self._lock:
            return [value for value, _ in self._data.values()]

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._data.clear()
            self._nbytes = 0

    @property
    def nbytes(self) -> int:
        """The estimated bytes of the entries held now."""
        return self._nbytes

    def stats(self) -> CacheStats:
        """What the cache holds now, and its bounds."""
        with self._lock:
            return CacheStats(self.name, len(self._data), self.maxsize, self._nbytes, self.maxbytes)

    def __len__(self) -> int:
        return len(self._data)

    def __reduce__(self) -> tuple[Any, ...]:
        # What a cache holds is its process's: pickled (for a worker process), it is a new,
        # empty cache of the same bounds, as functools.lru_cache's functions are.
        return _new_lru, (self.maxsize, self.maxbytes, self._weigh, self.name)


def _new_lru(maxsize: int, maxbytes: int, weigh: Any, name: str) -> LRUCache[Any, Any]:
    return LRUCache(maxsize, maxbytes=maxbytes, weigh=weigh, name=name)


P = ParamSpec("P")
R = TypeVar("R")


class _CacheInfo(NamedTuple):
    hits: int
    misses: int
    maxsize: int
    currsize: int


# Separates the positional arguments from the keyword ones in a Memo's keys.
_KWARGS = object()


class Memo(Generic[P, R]):
    """``fn`` with its results kept in an :class:`LRUCache` bounded by entries and bytes, keyed
    by its (hashable) arguments; made by :func:`memoize`. Like ``functools.lru_cache``, with
    ``cache_info()`` and ``cache_clear()``, plus a byte bound."""

    def __init__(
        self, fn: Callable[P, R], cache: LRUCache[Hashable, R], skip: Callable[..., bool] | None
    ) -> None:
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", "memo")
        self.__doc__ = fn.__doc__
        self._cache = cache
        self._skip = skip
        self._hits = self._misses = 0

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        # The marker keeps f(x=1) apart from f(("x", 1)), as functools.lru_cache does.
        key: Hashable = (*args, _KWARGS, *kwargs.items()) if kwargs else args
        value = self._cache.get(key)
        if value is not None:
            self._hits += 1
            return value
        self._misses += 1
        value = self.__wrapped__(*args, **kwargs)
        if value is not None and (self._skip is None or not self._skip(*args, **kwargs)):
            self._cache.put(key, value)
        return value

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        # A method: bound as a function would be, with the instance in the key (which keeps it
        # alive while cached, as functools.lru_cache does).
        return self if instance is None else MethodType(self, instance)

    def cache_info(self) -> _CacheInfo:
        return _CacheInfo(self._hits, self._misses, self._cache.maxsize, len(self._cache))

    def cache_clear(self) -> None:
        self._cache.clear()
        self._hits = self._misses = 0

    def clear(self) -> None:
        self.cache_clear()

    def stats(self) -> CacheStats:
        return self._cache.stats()


def memoize(
    *,
    maxsize: int,
    maxbytes: int,
    name: str = "",
    skip: Callable[..., bool] | None = None,
) -> Callable[[Callable[P, R]], Memo[P, R]]:
    """A decorator keeping ``fn``'s results by its arguments, at most ``maxsize`` of them and
    ``maxbytes`` bytes (arguments and results weighed with :func:`approx_bytes`); the least
    recently used forgotten first, thread-safe, cleared by :func:`clear_caches`. Calls for
    which ``skip(*args)`` is true are computed and not kept. On a method, the instance is part
    of the key and is kept alive while its results are cached, as with ``functools.lru_cache``.

    Example:
        >>> @memoize(maxsize=100, maxbytes=10_000)
        ... def shout(text: str) -> str:
        ...     return text.upper()
        >>> shout("hi"), shout("hi"), shout.cache_info().hits
        ('HI', 'HI', 1)

    Raises:
        ConfigError: a bound that is not a positive int, a name that is not a string, or a
            ``skip`` that is not callable.
    """
    # Here, not at the top: the caches module stays free of pydantic, which the checks import.
    from ._internal.arguments import optional_text
    from ._internal.arguments import tokens as check_tokens
    from .errors import ConfigError

    check_tokens(maxsize, "maxsize", unit="entries")
    check_tokens(maxbytes, "maxbytes", unit="bytes")
    optional_text(name, "name")
    if skip is not None and not callable(skip):
        raise ConfigError(f"skip must be a function (*args) -> bool, got {type(skip).__name__}")

    def decorate(fn: Callable[P, R]) -> Memo[P, R]:
        label = name or f"{fn.__module__}.{fn.__qualname__}"
        # The cache registers itself: clear_caches() and cache_stats() reach it.
        return Memo(fn, LRUCache(maxsize, maxbytes=maxbytes, name=label), skip)

    return decorate


# Texts up to this length go through functools' C cache (the hot path of repacking a chat);
# its entries then have a ceiling because their texts do.
SHORT_TEXT = 256


def text_memo(
    *,
    name: str,
    maxsize: int,
    maxbytes: int,
    short_size: int,
    short_entry_bytes: int,
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """A decorator keeping ``fn(text, *rest)`` by its arguments: texts of at most
    :data:`SHORT_TEXT` characters in a ``functools.lru_cache`` of ``short_size`` entries, each
    at most ``short_entry_bytes`` (see :func:`register_lru`), longer ones with :func:`memoize`
    (``maxsize`` entries, ``maxbytes`` bytes). Both are cleared by :func:`clear_caches`.

    Example:
        >>> @text_memo(name="lengths", maxsize=10, maxbytes=10_000, short_size=10,
        ...            short_entry_bytes=2_000)
        ... def length(text: str) -> int:
        ...     return len(text)
        >>> length("hi"), length("x" * 1000), length.cache_info().currsize
        (2, 1000, 2)
    """

    bounds = {
        "name": name,
        "maxsize": maxsize,
        "maxbytes": maxbytes,
        "short_size": short_size,
        "short_entry_bytes": short_entry_bytes,
    }
    return lambda fn: TextMemo(fn, bounds)


class TextMemo(Generic[R]):
    """``fn(text, *rest)`` kept by its arguments, as :func:`text_memo` says."""

    def __init__(self, fn: Callable[..., R], bounds: dict[str, Any]) -> None:
        self.__wrapped__ = fn
        self.__doc__ = fn.__doc__
        self.__name__ = getattr(fn, "__name__", "memo")
        self.__module__ = fn.__module__
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self._bounds = bounds
        cache = LRUCache[Hashable, R](
            bounds["maxsize"], maxbytes=bounds["maxbytes"], name=bounds["name"]
        )
        self._long = Memo(fn, cache, None)
        self._short: _lru_cache_wrapper[R] = register_lru(
            lru_cache(maxsize=bounds["short_size"])(fn),
            name=f"{bounds['name']} (short texts)",
            entry_bytes=bounds["short_entry_bytes"],
        )

    def __call__(self, text: str, *rest: Any) -> R:
        if len(text) <= SHORT_TEXT:
            return self._short(text, *rest)
        return self._long(text, *rest)

    def cache_info(self) -> _CacheInfo:
        a, b = self._short.cache_info(), self._long.cache_info()
        size = self._bounds["short_size"] + self._bounds["maxsize"]
        return _CacheInfo(a.hits + b.hits, a.misses + b.misses, size, a.currsize + b.currsize)

    def cache_clear(self) -> None:
        self._short.cache_clear()
        self._long.cache_clear()

    def __reduce__(self) -> str | tuple[Any, ...]:
        # Pickled, a new, empty memo of the same function (a counter's, sent to a worker
        # process with it); a module's function is found by its name, as any function is.
        if not isinstance(self.__wrapped__, MethodType):
            return self.__qualname__
        return TextMemo, (self.__wrapped__, self._bounds)
