"""Lexical analysis shared by the stages: terms (lower-cased, stemmed, no stop words) and BM25.

Term lists are cached per text, so a history that is packed again is not analysed again.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from functools import lru_cache

__all__ = ["STOP_WORDS", "bm25_scores", "terms"]

_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)

# English and French function words: they match everything and so rank nothing.
STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "yeah",
        "yes",
        "oh",
        "hey",
        "hi",
        "wow",
        "really",
        "also",
        "got",
        "get",
        "gonna",
        "lot",
        "lots",
        "thing",
        "things",
        "much",
        "many",
        "one",
        "ever",
        "even",
        "still",
        "well",
        "i'm",
        "it's",
        "that's",
        "you're",
        "i've",
        "i'll",
        "don't",
        "didn't",
        "can't",
        "what's",
        "le",
        "la",
        "les",
        "un",
        "une",
        "des",
        "du",
        "de",
        "et",
        "ou",
        "mais",
        "donc",
        "or",
        "ni",
        "car",
        "ce",
        "cet",
        "cette",
        "ces",
        "il",
        "elle",
        "ils",
        "elles",
        "je",
        "tu",
        "nous",
        "vous",
        "on",
        "que",
        "qui",
        "quoi",
        "dont",
        "où",
        "au",
        "aux",
        "en",
        "dans",
        "par",
        "pour",
        "sur",
        "avec",
        "sans",
        "sous",
        "est",
        "sont",
        "été",
        "être",
        "avoir",
        "a",
        "ai",
        "as",
        "ont",
        "pas",
        "ne",
        "plus",
        "se",
        "sa",
        "son",
        "ses",
        "leur",
        "leurs",
        "mon",
        "ma",
        "mes",
        "ton",
        "ta",
        "tes",
        "y",
    ]
)


@lru_cache(maxsize=1)
def _stemmer() -> object:
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    stemmer = _stemmer()
    return str(stemmer.stemWord(word))  # type: ignore[attr-defined]


@lru_cache(maxsize=100_000)
def _terms_cached(text: str) -> tuple[str, ...]:
    out = []
    for match in _TOKEN.finditer(text.lower()):
        word = match.group().replace("’", "'")
        if word in STOP_WORDS or (len(word) < 2 and not word.isdigit()):
            continue
        if word.endswith("'s"):
            word = word[:-2]
        out.append(_stem(word))
    return tuple(out)


def terms(text: str) -> tuple[str, ...]:
    """The index terms of ``text``: lower-cased words, stop words removed, Snowball-stemmed.

    Example:
        >>> terms("Caroline painted two sunrises")
        ('carolin', 'paint', 'two', 'sunris')
    """
    return _terms_cached(text)


def bm25_scores(
    query: Sequence[str],
    documents: Sequence[Sequence[str]],
    *,
    k1: float = 1.2,
    b: float = 0.75,
) -> list[float]:
    """Okapi BM25 score of every document for ``query`` (both given as term sequences).

    Repeated query terms count once. Uses the non-negative IDF ``log(1 + (N - df + 0.5) /
    (df + 0.5))`` so that a term present everywhere scores ~0 rather than negative.
    """
    n = len(documents)
    if n == 0:
        return []
    query_set = set(query)
    if not query_set:
        return [0.0] * n
    lengths = [len(d) for d in documents]
    avg = sum(lengths) / n or 1.0
    df: dict[str, int] = dict.fromkeys(query_set, 0)
    tfs: list[dict[str, int]] = []
    for doc in documents:
        tf: dict[str, int] = {}
        for term in doc:
            if term in query_set:
                tf[term] = tf.get(term, 0) + 1
        for term in tf:
            df[term] += 1
        tfs.append(tf)
    idf = {t: math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
    scores = []
    for tf, length in zip(tfs, lengths, strict=True):
        s = 0.0
        norm = k1 * (1.0 - b + b * length / avg)
        for term, f in tf.items():
            s += idf[term] * f * (k1 + 1.0) / (f + norm)
        scores.append(s)
    return scores
