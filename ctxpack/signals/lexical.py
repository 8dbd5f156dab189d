"""Lexical analysis shared by the stages: terms (lower-cased, stemmed, no stop words), the
language a text leans to, and compound words.

The stop words are :data:`ctxpack.signals.stop_words.STOP_WORDS`; the BM25 index over terms is
:mod:`ctxpack.signals.bm25`. Term lists are cached per text, so a history that is packed again is
not analysed again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Literal

from ..caches import SHORT_TEXT, memoize, register_lru, text_memo
from .stop_words import STOP_WORDS as STOP_WORDS

__all__: list[str] = []

Language = Literal["en", "fr"]
"""The languages terms are stemmed for: English and French Snowball."""

# A word: letters and digits, with one inner apostrophe ("Caroline's", "l'équipe").
WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
# The words an identifier is made of: "parseHTTPResponse" -> parse, HTTP, Response.
_IDENTIFIER_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def split_identifier(identifier: str) -> list[str]:
    """The lower-cased words of an identifier, in any script.

    Example:
        >>> split_identifier("parseHTTPResponse"), split_identifier("__init_subclass__")
        (['parse', 'http', 'response'], ['init', 'subclass'])
        >>> split_identifier("berechneRückerstattung")
        ['berechne', 'rückerstattung']
    """
    if identifier.isascii():
        return [part.lower() for part in _IDENTIFIER_PART.findall(identifier)]
    # Python's re has no Unicode letter classes: the parts are found in the word's shape, each
    # character written as an ASCII one of its kind (upper, other letter, digit, other).
    shape = "".join(
        "A" if c.isupper() else "a" if c.isalpha() else "0" if c.isdigit() else "_"
        for c in identifier
    )
    return [identifier[m.start() : m.end()].lower() for m in _IDENTIFIER_PART.finditer(shape)]


# Function words frequent in one language and rare in the other: which of the two a text leans
# to decides how its words are stemmed.
_FRENCH_MARKERS = frozenset(
    [
        "le",
        "les",
        "des",
        "du",
        "et",
        "une",
        "je",
        "tu",
        "il",
        "elle",
        "nous",
        "vous",
        "ils",
        "elles",
        "pas",
        "que",
        "qui",
        "dans",
        "avec",
        "sur",
        "mais",
        "cette",
        "ces",
        "mon",
        "mes",
        "au",
        "aux",
        "ne",
        "sont",
        "ai",
        "été",
        "très",
        "est",
    ]
)
_ENGLISH_MARKERS = frozenset(
    [
        "the",
        "and",
        "is",
        "are",
        "was",
        "were",
        "of",
        "to",
        "you",
        "it",
        "that",
        "with",
        "for",
        "this",
        "have",
        "has",
        "not",
        "but",
        "what",
        "my",
        "i",
    ]
)
# French elision: "l'eau" is "eau", "j'ai" is "ai", "qu'il" is "il".
_ELISION = re.compile(r"^(?:[cdjlmnst]|qu|jusqu|lorsqu|puisqu)'(?=[^\W\d_])")

_SNOWBALL: dict[Language, str] = {"en": "english", "fr": "french"}


@lru_cache(maxsize=2)
def _stemmer(language: Language) -> object:
    import snowballstemmer

    return snowballstemmer.stemmer(_SNOWBALL[language])


def _stem_uncached(word: str, language: Language) -> str:
    return str(_stemmer(language).stemWord(word))  # type: ignore[attr-defined]


# Words longer than this (a hash, a base64 run) are stemmed each time, so that every entry of
# the C-speed cache below has a ceiling: key tuple, word, stem and the cache's own link.
_MAX_CACHED_WORD = 32
_STEM_ENTRY_BYTES = 2 * (49 + 4 * _MAX_CACHED_WORD) + 64 + 100
_cached_stem = register_lru(
    lru_cache(maxsize=40_000)(_stem_uncached), name="word stems", entry_bytes=_STEM_ENTRY_BYTES
)


def stem(word: str, language: Language) -> str:
    """The Snowball stem of a lower-cased word (cached): the code index stems as prose does."""
    if len(word) > _MAX_CACHED_WORD:
        return _stem_uncached(word, language)
    return _cached_stem(word, language)


def analyse(text: str, language: Language = "en") -> Iterator[tuple[str, str]]:
    """Each index term of ``text`` with the word it comes from (lower-cased, as written).

    Example:
        >>> list(analyse("Caroline's paintings"))
        [('carolin', "caroline's"), ('paint', 'paintings')]
        >>> list(analyse("L'équipe a mangé", "fr"))
        [('équip', "l'équipe"), ('mang', 'mangé')]
    """
    for match in WORD.finditer(text.lower()):
        written = match.group()
        term = _term_of(written, language)
        if term is not None:
            yield term, written


def _term_of(written: str, language: Language) -> str | None:
    """The index term of one lower-cased word as written; None for a stop word."""
    word = written.replace("’", "'")
    if language == "fr":
        word = _ELISION.sub("", word, count=1)
    if word in STOP_WORDS or (len(word) < 2 and not word.isdigit()):
        return None
    if word.endswith("'s"):
        word = word[:-2]
    return stem(word, language)


@memoize(maxsize=100_000, maxbytes=8 * 2**20, name="text terms")
def _terms_cached(text: str, language: Language) -> tuple[str, ...]:
    # A long text (a tool's log) repeats its words: each distinct one is analysed once.
    known: dict[str, str | None] = {}
    found: list[str] = []
    for written in WORD.findall(text.lower()):
        if written in known:
            term = known[written]
        else:
            term = known[written] = _term_of(written, language)
        if term is not None:
            found.append(term)
    return tuple(found)


def terms(text: str, language: Language = "en") -> tuple[str, ...]:
    """The index terms of ``text``: lower-cased words, stop words removed, Snowball-stemmed in
    ``language`` (French also drops elided articles: "l'eau" is "eau").

    Example:
        >>> terms("Caroline painted two sunrises")
        ('carolin', 'paint', 'two', 'sunris')
        >>> terms("Elle a mangé, ils mangeront", "fr")
        ('mang', 'mang')
    """
    return _terms_cached(text, language)


def compounds(text: str, language: Language = "en") -> list[str]:
    """The terms of adjacent word pairs written as one word: "road trip" and "ice-cream" give
    the terms of "roadtrip" and "icecream", "log in" that of "login". A pair whose first word is
    a stop word is left out: "for getting" is not "forgetting".

    Example:
        >>> compounds("After the road trip, we had ice-cream. How do I log in?")
        ['roadtrip', 'icecream', 'login']
    """
    lowered = text.lower()
    found: list[str] = []
    previous: re.Match[str] | None = None
    for match in WORD.finditer(lowered):
        if previous is not None and lowered[previous.end() : match.start()] in (" ", "-"):
            first = previous.group()
            if first not in STOP_WORDS and len(first) > 1 and len(match.group()) > 1:
                joined = terms(first + match.group(), language)
                if len(joined) == 1:
                    found.append(joined[0])
        previous = match
    return found


@text_memo(
    name="language leaning",
    maxsize=100_000,
    maxbytes=4 * 2**20,
    short_size=8_192,
    short_entry_bytes=56 + 49 + 4 * SHORT_TEXT + 32 + 100,
)
def leaning(text: str) -> int:
    """How many more French than English function words ``text`` has (negative: English).

    Example:
        >>> leaning("Je pense que c'est une bonne idée"), leaning("I think that is a good idea")
        (4, -3)
    """
    lean = 0
    for token in WORD.findall(text.lower()):
        word = token.replace("’", "'")
        if word in _FRENCH_MARKERS or _ELISION.match(word):
            lean += 1
        elif word in _ENGLISH_MARKERS:
            lean -= 1
    return lean


def language_of(texts: Iterable[str]) -> Language:
    """``"fr"`` when the texts hold more French function words than English ones, else ``"en"``.

    Example:
        >>> language_of(["Bonjour, je cherche un vol pour Lyon.", "Ok"]), language_of(["Hi"])
        ('fr', 'en')
    """
    return "fr" if sum(map(leaning, texts)) > 0 else "en"
