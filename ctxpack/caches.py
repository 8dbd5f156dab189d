"""ctxpack's caches: bounded, least-recently-used, safe under threads, and clearable.

A chatbot packs the same history again on every turn, so ctxpack keeps what it derived from a
conversation (converted messages, token counts, the BM25 index...) between calls. Every such
cache is keyed by content, or verified against it before use, so a result never depends on
object identity or on what was packed before. Each is bounded by a number of entries and evicts
the least recently used first, so several conversations packed in turn all stay warm.
:func:`clear_caches` empties them all (the memory they hold is given on the page "Using ctxpack
in a server").
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

__all__ = ["LRUCache", "clear_caches", "register"]

K = TypeVar("K")
V = TypeVar("V")


# Weak: a cache owned by an object the user made (a counter, say) goes away with it.
_CLEARABLE: weakref.WeakSet[Any] = weakref.WeakSet()
_REGISTRY_LOCK = threading.Lock()

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


_MISSING: Any = object()


class LRUCache(Generic[K, V]):
    """A mapping of at most ``maxsize`` entries that forgets the least recently used first.

    Every operation holds a lock, so threads may share it. It is registered with
    :func:`clear_caches`.

    Example:
        >>> cache = LRUCache(2)
        >>> cache.put("a", 1); cache.put("b", 2); cache.get("a"); cache.put("c", 3)
        1
        >>> cache.get("b") is None, len(cache)
        (True, 2)
    """

    def __init__(self, maxsize: int) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be >= 1, got {maxsize}")
        self.maxsize = maxsize
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        register(self)

    def get(self, key: K) -> V | None:
        """The value for ``key`` (now the most recently used), or ``None``."""
        with self._lock:
            value = self._data.get(key, _MISSING)
            if value is _MISSING:
                return None
            self._data.move_to_end(key)
            return value  # type: ignore[no-any-return]

    def get_many(self, keys: Iterable[K]) -> dict[K, V]:
        """The cached values among ``keys`` (now the most recently used); the others left out."""
        found: dict[K, V] = {}
        with self._lock:
            for key in keys:
                value = self._data.get(key, _MISSING)
                if value is not _MISSING:
                    self._data.move_to_end(key)
                    found[key] = value
        return found

    def put(self, key: K, value: V) -> None:
        """Store ``value`` under ``key``, evicting the least recently used entry if full."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            if len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def pop(self, key: K) -> V | None:
        """Remove ``key`` and return its value, or ``None``."""
        with self._lock:
            return self._data.pop(key, None)

    def values(self) -> list[V]:
        """The values, least recently used first (a copy)."""
        with self._lock:
            return list(self._data.values())

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)
