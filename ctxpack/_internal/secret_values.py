"""Secret values found once, looked for again where no rule would find them alone.

A rule finds a secret by its shape or by what surrounds it (``DB_PASSWORD=...``). Printed alone
later (``echo $DB_PASSWORD``) a password has neither, and only the memory of the value found
earlier can tell it from any other string. Two such memories:

- :class:`KnownValues` holds the values themselves, for a call given them anyway: ``pack()``
  is handed the whole history, secrets and all, and its caches of that history hold no more
  than the history itself does.
- :class:`Fingerprints` is a session's. It outlives the call and is stored, and a store must
  hold no secret: it keeps a keyed fingerprint of each value (BLAKE2b in keyed mode, a MAC:
  several times faster than HMAC-SHA256 in Python, which counts when every candidate in a
  long output is fingerprinted), the value's kind, its length, the punctuation in it and
  whether it begins or ends with punctuation; never the value.

To find a value it cannot read, :class:`Fingerprints` cuts a later output into runs of the
characters a value found may hold (ASCII letters, digits, ``_`` and the punctuation of the
values found: whitespace, quotes, brackets, ``=``, ``:``... cut the runs unless a value holds
them), and fingerprints each run of a length found; inside a longer run holding punctuation,
each part of a length found between two places that are not inside a word. That is one scan
in C and, mostly, one fingerprint per long word: a few milliseconds per 100 kB, more when a
value holds punctuation common in code (``.``, ``-``), which makes more parts to try.

Limits: the key is stored beside the fingerprints (every replica of the session must compute
the same ones), so whoever reads the store can test guesses. A random value (a token, a
generated password) cannot be found that way; a value that can be guessed (a short password of
dictionary words and digits) can, by trying every guess. Values shorter than
:data:`MIN_HUNTED` characters or made of words alone are never hunted (``true``, ``1234``,
``postgres`` would be replaced everywhere), nor values holding whitespace. A value is found
where it stands alone, not inside a longer word or value.
"""

from __future__ import annotations

import collections
import hashlib
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import accumulate, compress
from typing import Any, Protocol

from .text_lines import overlaps_itself

__all__: list[str] = []

# A shorter value (a password such as "hunter2") may well be an ordinary word elsewhere.
MIN_HUNTED = 8
_WORDS = re.compile(r"[^\W\d_]+(?:[-_.: ][^\W\d_]+)*\Z")
# 128 bits: no two values a session finds share one.
_FINGERPRINT_BYTES = 16


def entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character, as gitleaks computes it."""
    n = len(text)
    if not n:
        return 0.0
    found: dict[str, int] = {}
    _count(found, text)
    counts = found.values()  # in the order first seen, as Counter's
    terms = _TERMS.get(n)
    if terms is None:
        if n > _TABULATED:
            return -sum(c / n * math.log2(c / n) for c in counts)
        terms = _TERMS[n] = [0.0, *(c / n * math.log2(c / n) for c in range(1, n + 1))]
    # The same floats summed in the same order as computing each term: every value a rule
    # finds is weighed, and the table halves what that costs.
    return -sum(map(terms.__getitem__, counts))


def _counted(found: dict[str, int], text: str) -> None:
    for ch in text:
        found[ch] = found.get(ch, 0) + 1


# What Counter(text) does once it has checked its argument (which costs as much again on a
# value's few dozen characters): collections' own counting loop, in C where it is.
_count: Callable[[dict[str, int], str], None] = getattr(collections, "_count_elements", _counted)


# For a text of n characters (up to _TABULATED: the tables take n * n / 2 floats, a megabyte
# in all), the entropy term of a character that occurs c times, by c.
_TABULATED = 256
_TERMS: dict[int, list[float]] = {}


def hunted(value: str) -> bool:
    """Whether ``value``, found once, is a secret wherever else it appears.

    A value of words alone with a word's entropy (``postgres``, ``development``, assigned to
    a password in a docker-compose file or a settings module) is as often the image, database
    or environment named on the next lines: replacing it there would break the edits an agent
    makes to that file. A value holding a digit or a symbol, or random letters, is not prose.
    """
    return len(value) >= MIN_HUNTED and (not _WORDS.match(value) or entropy(value) >= 3.5)


def _word(text: str, at: int) -> bool:
    return 0 <= at < len(text) and (text[at].isalnum() or text[at] == "_")


def standalone(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is not the inside of a longer word or value."""
    inside_start = _word(text, start - 1) and _word(text, start)
    return not inside_start and not (_word(text, end) and _word(text, end - 1))


def occurrences(text: str, value: str) -> Iterator[tuple[int, int]]:
    """Where ``value`` stands alone in ``text``, as spans."""
    at = text.find(value)
    while at != -1:
        end = at + len(value)
        if standalone(text, at, end):
            yield at, end
        at = text.find(value, end if end > at else at + 1)


class Hunt(Protocol):
    """What redaction learns values into, and asks for the places of values learnt."""

    def learn(self, value: str, kind: str) -> None: ...

    def find(self, text: str) -> Iterable[tuple[int, int, str]]: ...


# Word characters as :func:`standalone` reads them (``str.isalnum`` or ``_``), as ``\w`` is.
_RUN = re.compile(r"\w+")
_RUNS_APART = re.compile(r"(\w+)")
# From this many values, the text is read once for all of them (see KnownValues.find): the
# index costs a step of Python a word of the text, about what a few hundred searches cost.
_INDEXED = 256


class KnownValues:
    """Secret values and their kinds, in clear: for one call that is given them anyway."""

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self.values: dict[str, str] = dict(values or {})

    def learn(self, value: str, kind: str) -> None:
        if hunted(value):
            self.values.setdefault(value, kind)

    def find(self, text: str) -> Iterator[tuple[int, int, str]]:
        places = self._places(text) if len(self.values) >= _INDEXED else {}
        for value, kind in self.values.items():
            starts = places.get(value)
            if starts is None:
                for start, end in occurrences(text, value):
                    yield start, end, kind
                continue
            for start in starts:
                yield start, start + len(value), kind

    def _places(self, text: str) -> dict[str, list[int]]:
        """Where each value that can be indexed stands alone in ``text``, in order.

        Searched for one by one, thousands of values found in a long output (a .env dump, a
        log of api_key=...) read it once each: by the runs of word characters in them, it is
        read once for all. Where a value stands alone in the text, each run of word
        characters in it is a run of the text (the value holds what ends the run, or ends
        there and stands alone only if the run does): the value is looked for only around
        the text's runs that are its key, its first run (the longest, for a value that begins
        with punctuation or can overlap itself: a PEM line's, not its line number). Many
        values share a key (every JWT's header, ``xoxb``): at such a run the text is read at
        each of their lengths, not compared with each of them.
        """
        keys: dict[str, set[tuple[int, int]]] = {}
        ahead: dict[str, int] = {}  # where its key starts in each value
        rare: set[str] = set()  # values keyed by their longest run
        # A value that is one run (a token) stands alone where a run of the text is it, and
        # nothing hides that place: an occurrence overlapping it would hold what ends the run.
        whole = {value for value in self.values if _RUN.fullmatch(value)}
        for value in self.values:
            if value in whole:
                continue
            first = _RUN.match(value)
            if first is not None and not overlaps_itself(value):
                key, at = first.group(), 0
            else:
                key = max(_RUN.findall(value), key=len, default="")
                at = value.find(key)  # the first run so long: no run holds a longer one
                rare.add(value)
            if key:
                keys.setdefault(key, set()).add((at, len(value)))
                ahead[value] = at
        places: dict[str, list[int]] = {value: [] for value in [*whole, *ahead]}
        # The text cut into its runs and what lies between them, each part's start summed up,
        # the parts that are a value or a key picked out: each a step of C, not of Python.
        parts = _RUNS_APART.split(text)
        offsets = list(accumulate(map(len, parts), initial=0))
        for i in compress(range(len(parts)), map(whole.__contains__, parts)):
            places[parts[i]].append(offsets[i])
        overlapped: set[str] = set()
        for i in compress(range(len(parts)), map(keys.__contains__, parts)):
            for at, size in keys[parts[i]]:
                start = offsets[i] - at
                # Cut by the text's ends, a slice could be a shorter value, found at its length;
                # a value is read at its key only (another run of it may be the same).
                value = text[start : start + size] if start >= 0 else ""
                if len(value) != size or ahead.get(value) != at:
                    continue
                if standalone(text, start, start + size):
                    places[value].append(start)
                    earlier = max(0, start - size + 1)
                    if value in rare and text.find(value, earlier, start + size - 1) >= 0:
                        overlapped.add(value)
        # Read in order, an occurrence that overlaps an earlier one is not taken
        # (occurrences()): a value found so is looked for that way.
        for value in overlapped:
            del places[value]
        return places


_NOT_WORD = re.compile("[^A-Za-z0-9_]")


def _symbols(value: str) -> str:
    """The characters of ``value`` outside ASCII's word characters."""
    return "".join(sorted(set(_NOT_WORD.findall(value))))


class Fingerprints:
    """Keyed fingerprints of the secret values a session found, in the order found.

    Each entry is JSON (``[fingerprint, kind, length, symbols, edges]``: the fingerprint in
    hex, the value's length, its punctuation, ``<`` if it begins with punctuation and ``>``
    if it ends with it), so that a stored session writes what an append found with the
    append, and a replica applies it; the key is the session's, given to :meth:`learn` and
    :meth:`find`.
    """

    def __init__(self) -> None:
        self.entries: list[list[Any]] = []
        self._kinds: dict[bytes, str] = {}
        self._lengths: frozenset[int] = frozenset()
        self._runs: re.Pattern[str] | None = None
        self._punctuated = False
        self._open = (False, False)

    def __len__(self) -> int:
        return len(self.entries)

    def since(self, n: int) -> list[list[Any]]:
        """The entries found after the first ``n``."""
        return self.entries[n:]

    def truncate(self, n: int) -> None:
        """Forget every entry after the first ``n`` (an append that failed found them)."""
        if n < len(self.entries):
            self.entries = self.entries[:n]
            self._index()

    def grow(self, entries: Sequence[Sequence[Any]]) -> None:
        """Add entries another writer found."""
        new = [list(e) for e in entries if bytes.fromhex(e[0]) not in self._kinds]
        if new:
            self.entries.extend(new)
            self._index()

    def _index(self) -> None:
        self._kinds = {bytes.fromhex(e[0]): e[1] for e in self.entries}
        self._lengths = frozenset(int(e[2]) for e in self.entries)
        symbols = re.escape("".join(sorted({c for e in self.entries for c in e[3]})))
        # ASCII classes: Unicode ones make the scan of a long output about twice as slow.
        self._runs = (
            re.compile(f"[A-Za-z0-9_{symbols}]{{{min(self._lengths)},}}") if self.entries else None
        )
        self._punctuated = bool(symbols)
        # Whether a value begins (ends) with punctuation: else a candidate never does.
        self._open = (
            any("<" in e[4] for e in self.entries),
            any(">" in e[4] for e in self.entries),
        )

    def learn(self, key: bytes, value: str, kind: str) -> None:
        if not hunted(value) or any(c.isspace() for c in value):
            return
        fingerprint = _fingerprint(key, value)
        if fingerprint not in self._kinds:
            edges = "<" * bool(_NOT_WORD.match(value)) + ">" * bool(_NOT_WORD.match(value[-1]))
            self.entries.append([fingerprint.hex(), kind, len(value), _symbols(value), edges])
            self._index()

    def find(self, key: bytes, text: str) -> list[tuple[int, int, str]]:
        """Where the values fingerprinted stand alone in ``text``, with their kinds."""
        if self._runs is None:
            return []
        kinds, lengths, shortest = self._kinds, self._lengths, min(self._lengths)
        found: list[tuple[int, int, str]] = []
        for run in self._runs.finditer(text):
            start, end = run.span()
            if end - start in lengths:
                kind = kinds.get(_fingerprint(key, run.group()))
                if kind is not None:
                    found.append((start, end, kind))
            if self._punctuated and end - start > shortest and _NOT_WORD.search(text, start, end):
                # A value among other punctuated parts (``abc.def.ghi123.``): tried between
                # every two places that are not inside a word.
                starts, ends = {start}, {end}
                for m in _NOT_WORD.finditer(text, start, end):
                    a, b = m.span()
                    starts.add(b)
                    ends.add(a)
                    if self._open[0]:
                        starts.add(a)
                    if self._open[1]:
                        ends.add(b)
                for a in starts:
                    for n in lengths:
                        if a + n in ends and not (a == start and a + n == end):
                            kind = kinds.get(_fingerprint(key, text[a : a + n]))
                            if kind is not None:
                                found.append((a, a + n, kind))
        return _unoverlapped(found)

    def bound(self, key: bytes) -> BoundFingerprints:
        """These fingerprints as a :class:`Hunt`, under ``key``."""
        return BoundFingerprints(self, key)


class BoundFingerprints:
    """:class:`Fingerprints` and a session's key, as a :class:`Hunt`."""

    def __init__(self, fingerprints: Fingerprints, key: bytes) -> None:
        self.fingerprints = fingerprints
        self.key = key

    def learn(self, value: str, kind: str) -> None:
        self.fingerprints.learn(self.key, value, kind)

    def find(self, text: str) -> list[tuple[int, int, str]]:
        return self.fingerprints.find(self.key, text)


def _fingerprint(key: bytes, value: str) -> bytes:
    """``value``'s keyed BLAKE2b (a MAC, and several times faster than HMAC-SHA256 here)."""
    data = value.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, key=key, digest_size=_FINGERPRINT_BYTES).digest()


def _unoverlapped(found: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """The longest of overlapping places first, then in order."""
    kept: list[tuple[int, int, str]] = []
    for start, end, kind in sorted(found, key=lambda f: (f[0], f[0] - f[1])):
        if not kept or start >= kept[-1][1]:
            kept.append((start, end, kind))
    return kept
