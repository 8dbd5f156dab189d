"""Lexical analysis shared by the stages: terms (case-folded, stemmed, no stop words), the
language a text leans to, and compound words.

The stop words are :data:`ctxpack.signals.stop_words.STOP_WORDS`; the BM25 index over terms is
:mod:`ctxpack.signals.bm25`. Term lists are cached per text, so a history that is packed again is
not analysed again.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Literal

from ..caches import SHORT_TEXT, memoize, register_lru, text_memo
from .stop_words import STOP_WORDS as STOP_WORDS

__all__: list[str] = []

Language = Literal["en", "fr"]
"""The languages terms are stemmed for: English and French Snowball."""


def _marks() -> str:
    """A character class of the combining marks of the Basic Multilingual Plane (Thai and Indic
    vowel signs, Arabic vowel points, accents written apart): Python's re has no ``\\p{M}``,
    and ``\\w`` leaves them out, which would end a word at each of them."""
    # Every character's two-letter category, end to end: a run of "Mn", "Mc" or "Me" can only
    # start at an even offset, a category's second letter being lower-case.
    categories = "".join(map(unicodedata.category, map(chr, range(0x10000))))
    return "".join(
        f"\\u{found.start() // 2:04x}-\\u{found.end() // 2 - 1:04x}"
        for found in re.finditer("(?:M[nce])+", categories)
    )


_MARK = _marks()
# A word: letters and digits with their marks, with one inner apostrophe ("Caroline's",
# "l'équipe").
_LETTERS = rf"[^\W_]+(?:[{_MARK}]+[^\W_]*)*"
WORD = re.compile(rf"{_LETTERS}(?:['’]{_LETTERS})?")
# WORD in a lower-cased ASCII text, the common case, found faster.
_ASCII_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)?")

# Scripts written without spaces between words: Han, kana, Hangul (whose words carry their
# particles: "학교에", "학교는"), Thai, Lao, Myanmar, Khmer. With no dictionary to cut words, a run
# of them is indexed as its overlapping pairs of characters (each with its marks), and a
# character standing alone as itself, as Lucene's CJKAnalyzer does: "我的猫" is "我的", "的猫".
_SPACELESS = (
    "\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u2e80-\u2fdf\u3005-\u3007"
    "\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31a0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f"
)
SPACELESS_START = re.compile(f"[{_SPACELESS}]")
# A word's runs: characters of a spaceless script (each with its marks), or anything else.
_RUN = re.compile(f"((?:[{_SPACELESS}][{_MARK}]*)+)")
_CHARACTER = re.compile(f"[{_SPACELESS}][{_MARK}]*")
# Vowel points Arabic and Hebrew usually leave unwritten ("مرحبا" is "مَرْحَبًا"), and the
# Arabic stretching stroke: the same word with or without them is one term.
_UNWRITTEN = dict.fromkeys(
    [
        code
        for first, last in ((0x0591, 0x05C7), (0x064B, 0x065F), (0x0670, 0x0670))
        for code in range(first, last + 1)
        if unicodedata.category(chr(code)) == "Mn"
    ]
    + [0x0640]
)

_HAS_UNWRITTEN = re.compile("[" + "".join(f"\\u{code:04x}" for code in _UNWRITTEN) + "]")


def fold(text: str) -> str:
    """``text`` as its words are compared: compatibility forms and case folded (NFKC, then
    Unicode case folding: "Straße" is "strasse", "１２３" is "123", "ﬁle" is "file"), the dot of a
    capital "İ" dropped ("İstanbul" is "istanbul"), and Arabic and Hebrew vowel points dropped.

    Example:
        >>> fold("Straße İstanbul ＡＢＣ")
        'strasse istanbul abc'
    """
    if text.isascii():
        return text.lower()
    folded = unicodedata.normalize("NFKC", text).casefold().replace("i\u0307", "i")
    # str.translate maps character by character: only for the texts that need it.
    return folded.translate(_UNWRITTEN) if _HAS_UNWRITTEN.search(folded) else folded


def word_pieces(word: str) -> list[str]:
    """A word as it is indexed: itself, or for a run of a spaceless script its pairs of
    characters (the other runs of the word whole: "我的iphone" is "我的", "iphone")."""
    if word.isascii() or not SPACELESS_START.search(word):
        return [word]
    pieces: list[str] = []
    for at, run in enumerate(_RUN.split(word)):
        if at % 2 == 0:
            if run:
                pieces.append(run)  # between two spaceless runs: another script
            continue
        characters = _CHARACTER.findall(run)
        if len(characters) == 1:
            pieces.append(run)
        else:
            pieces.extend(map(str.__add__, characters, characters[1:]))
    return pieces


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
    """Each index term of ``text`` with the word it comes from (folded, as written).

    Example:
        >>> list(analyse("Caroline's paintings"))
        [('carolin', "caroline's"), ('paint', 'paintings')]
        >>> list(analyse("L'équipe a mangé", "fr"))
        [('équip', "l'équipe"), ('mang', 'mangé')]
    """
    for written in _written_words(text):
        term = _term_of(written, language)
        if term is not None:
            yield term, written


def _term_of(written: str, language: Language) -> str | None:
    """The index term of one folded word as written; None for a stop word."""
    if not written.isascii() and SPACELESS_START.match(written):
        return written  # a pair of characters of a spaceless script, or one alone
    word = written.replace("’", "'")
    if language == "fr":
        word = _ELISION.sub("", word, count=1)
    if word in STOP_WORDS or (len(word) < 2 and not word.isdigit()):
        return None
    if word.endswith("'s"):
        word = word[:-2]
    return stem(word, language)


def _written_words(text: str) -> list[str]:
    """The words of ``text`` as they are indexed, folded (runs of a spaceless script as pairs)."""
    folded = fold(text)
    if folded.isascii():
        return _ASCII_WORD.findall(folded)
    words: list[str] = WORD.findall(folded)
    if not SPACELESS_START.search(folded):
        return words
    return [piece for word in words for piece in word_pieces(word)]


@memoize(maxsize=100_000, maxbytes=8 * 2**20, name="text terms")
def _terms_cached(text: str, language: Language) -> tuple[str, ...]:
    # A long text (a tool's log) repeats its words: each distinct one is analysed once.
    known: dict[str, str | None] = {}
    found: list[str] = []
    for written in _written_words(text):
        if written in known:
            term = known[written]
        else:
            term = known[written] = _term_of(written, language)
        if term is not None:
            found.append(term)
    return tuple(found)


def terms(text: str, language: Language = "en") -> tuple[str, ...]:
    """The index terms of ``text``: its words folded (:func:`fold`), stop words removed,
    Snowball-stemmed in ``language`` (French also drops elided articles: "l'eau" is "eau"); a
    run of Chinese, Japanese, Korean, Thai, Lao, Khmer or Myanmar as its overlapping pairs of
    characters, these scripts writing no space between words.

    Example:
        >>> terms("Caroline painted two sunrises")
        ('carolin', 'paint', 'two', 'sunris')
        >>> terms("Elle a mangé, ils mangeront", "fr")
        ('mang', 'mang')
        >>> terms("我的猫喜欢吃鱼")
        ('我的', '的猫', '猫喜', '喜欢', '欢吃', '吃鱼')
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
    lowered = fold(text)
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
