"""Terms, BM25 and the incremental index behind relevance scoring."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack.signals.bm25 import IndexPool, InvertedIndex, bm25_scores
from ctxpack.signals.lexical import (
    analyse,
    compounds,
    language_of,
    leaning,
    terms,
)

from .helpers import outputs_across_hash_seeds

WORDS = ["alpha", "beta", "gamma", "delta", "backup", "backups", "the", "Caroline's", "42"]
texts_st = st.lists(
    st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join), min_size=0, max_size=25
)


def reference_bm25(
    query: Sequence[str], documents: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75
) -> list[float]:
    """BM25 written out plainly, independent of ctxpack's index: the oracle for the tests."""
    n = len(documents)
    avg = (sum(len(d) for d in documents) / n if n else 0.0) or 1.0
    scores = []
    for doc in documents:
        score = 0.0
        for term in set(query):
            df = sum(1 for d in documents if term in d)
            tf = doc.count(term)
            if tf:
                idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
                score += idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len(doc) / avg))
        scores.append(score)
    return scores


def test_terms_lowercase_stem_and_drop_stop_words() -> None:
    assert terms("The Backups ran at 02:00") == ("backup", "ran", "02", "00")
    assert terms("Caroline's paintings") == ("carolin", "paint")
    # French function words, demonstratives included, are stop words too.
    assert terms("Et ça, cela marche avec celui-là ?") == ("march",)
    assert terms("Quel plat mangeait-on chez toi, aussi ?", "fr") == ("plat", "mang")


def test_french_terms_use_french_stems_and_drop_elided_articles() -> None:
    assert terms("Ils mangeaient, elle a mangé", "fr") == ("mang", "mang")
    assert terms("l'équipe d'Anne", "fr") == ("équip", "anne")
    # English analysis is unchanged by it: elision is French only.
    assert terms("l'équipe") == ("l'équip",)
    assert [word for _, word in analyse("L’Équipe gagne", "fr")] == ["l’équipe", "gagne"]


def test_compounds_join_adjacent_words() -> None:
    assert compounds("a road trip, then ice-cream") == ["roadtrip", "icecream"]
    assert compounds("Set up the back up") == ["setup", "backup"]
    # Punctuation between the words, a leading stop word or a one-letter word: no compound.
    assert compounds("road, trip") == []
    assert compounds("for getting") == []
    assert compounds("a b c") == []
    assert compounds("ice cream", "fr") == ["icecream"]


def test_a_text_s_lean_is_cached() -> None:
    # docs/performance.md promises it: the same history is analysed again on every turn.
    text = "A text seen twice, une fois de plus."
    leaning(text)
    hits = leaning.cache_info().hits
    assert leaning(text) == leaning(text)
    assert leaning.cache_info().hits == hits + 2


def test_language_of_counts_function_words() -> None:
    assert leaning("Je crois que c'est une bonne idée") > 0
    assert leaning("I think that is a good idea") < 0
    assert leaning("Paris 2024") == 0
    assert language_of(["Bonjour, je voudrais réserver une table.", "OK"]) == "fr"
    assert language_of(["Hello, I would like to book a table.", "OK"]) == "en"
    # A tie, or no function word at all, is English.
    assert language_of(["Paris", "Lyon"]) == "en"
    assert language_of([]) == "en"


def test_bm25_prefers_rarer_terms_and_handles_empty_inputs() -> None:
    docs = [terms("alpha beta"), terms("alpha"), terms("alpha gamma")]
    scores = bm25_scores(terms("alpha gamma"), docs)
    assert scores[2] == max(scores)
    assert bm25_scores(terms("alpha"), []) == []
    assert bm25_scores((), docs) == [0.0, 0.0, 0.0]


@settings(max_examples=150, deadline=None)
@given(first=texts_st, second=texts_st, keep=st.integers(0, 25), query=st.sampled_from(WORDS))
def test_incremental_index_equals_a_fresh_one(
    first: list[str], second: list[str], keep: int, query: str
) -> None:
    # Sync to one history, then to another sharing a prefix of it: the scores must be those of
    # an index built from scratch on the second.
    index = InvertedIndex()
    index.sync(first)
    target = first[:keep] + second
    index.sync(target)
    expected = reference_bm25(terms(query), [terms(t) for t in target])
    assert np.allclose(index.bm25(terms(query)), expected)
    assert np.allclose(bm25_scores(terms(query), [terms(t) for t in target]), expected)
    assert len(index) == len(target)


def test_index_pool_reuses_an_index_for_a_growing_conversation() -> None:
    pool = IndexPool()
    history = ["system prompt xyz", "first turn", "second turn"]
    with pool.borrow(history) as index:
        assert len(index) == 3
    with pool.borrow([*history, "a new question"]) as again:
        assert again is index
        assert len(index) == 4
    # The same texts analysed in French are another index: its terms are other stems.
    with pool.borrow(["Ils mangeaient", "Elle a mangé"], "fr") as french:
        with pool.borrow(["Ils mangeaient", "Elle a mangé"]) as english:
            assert french is not english
        assert french.language == "fr" and "mang" in french


def test_index_pool_lends_an_index_to_one_caller_at_a_time() -> None:
    pool = IndexPool()
    history = ["system prompt xyz", "first turn", "second turn"]
    with pool.borrow(history) as first, pool.borrow(history) as second:
        # The second caller (another thread, say) must not sync the index the first is using.
        assert first is not second


def test_index_pool_keeps_conversations_that_begin_alike_apart() -> None:
    pool = IndexPool()
    head = ["the same system prompt", "the same greeting", "the same answer"]
    a, b = [*head, "about apples"], [*head, "about boats", "and sails"]
    with pool.borrow(a) as index_a:
        pass
    with pool.borrow(b) as index_b:
        pass
    # Each conversation finds its own index again, already synced: no re-analysis (thrash).
    with pool.borrow(a) as again_a:
        assert again_a is index_a and again_a.texts == a
    with pool.borrow(b) as again_b:
        assert again_b is index_b and again_b.texts == b


def test_index_pool_forgets_the_least_recently_used() -> None:
    pool = IndexPool(size=2)
    convs = [[f"conversation {k}", "x", "y"] for k in range(3)]
    indexes = []
    for conv in convs:
        with pool.borrow(conv) as index:
            indexes.append(index)
    with pool.borrow(convs[0]) as index:
        assert index is not indexes[0]
    with pool.borrow(convs[2]) as index:
        assert index is indexes[2]


def reference_expanded_bm25(
    query: dict[str, float],
    documents: Sequence[Sequence[str]],
    spread: Sequence[float],
    silent: set[int],
    k1: float = 1.2,
    b: float = 0.75,
) -> list[float]:
    """Document expansion written out: each document's term counts and length plus ``spread[d-1]``
    times those of the documents ``d`` away (the silent ones lend nothing); IDF from the plain
    documents."""
    n = len(documents)
    counts = [{t: float(d.count(t)) for t in set(d)} for d in documents]
    lengths = [float(len(d)) for d in documents]
    expanded, expanded_lengths = [], []
    for i in range(n):
        tf = dict(counts[i])
        length = lengths[i]
        for d, w in enumerate(spread, start=1):
            for j in (i - d, i + d):
                if 0 <= j < n and j not in silent:
                    for t, c in counts[j].items():
                        tf[t] = tf.get(t, 0.0) + w * c
                    length += w * lengths[j]
        expanded.append(tf)
        expanded_lengths.append(length)
    avg = (sum(expanded_lengths) / n if n else 0.0) or 1.0
    scores = []
    for i in range(n):
        score = 0.0
        for term, weight in query.items():
            df = sum(1 for d in documents if term in d)
            tf = expanded[i].get(term, 0.0)
            if tf and df:
                idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
                norm = k1 * (1.0 - b + b * expanded_lengths[i] / avg)
                score += weight * idf * tf * (k1 + 1.0) / (tf + norm)
        scores.append(score)
    return scores


@settings(max_examples=150, deadline=None)
@given(
    texts=texts_st,
    spread=st.lists(st.sampled_from([0.0, 0.15, 0.3, 0.5]), max_size=3),
    silent=st.sets(st.integers(0, 24), max_size=3),
    weights=st.dictionaries(st.sampled_from(WORDS), st.sampled_from([0.2, 0.5, 1.0]), max_size=3),
    b=st.sampled_from([0.0, 0.75, 1.0]),
)
def test_expanded_and_weighted_bm25_equals_the_written_out_formula(
    texts: list[str], spread: list[float], silent: set[int], weights: dict[str, float], b: float
) -> None:
    index = InvertedIndex()
    index.sync(texts)
    query = {terms(w)[0]: v for w, v in weights.items() if terms(w)}
    silent_here = sorted(i for i in silent if i < len(texts))
    got = index.bm25(query, spread=spread, silent=silent_here, b=b)
    docs = [terms(t) for t in texts]
    expected = reference_expanded_bm25(query, docs, spread, set(silent_here), b=b)
    assert np.allclose(got, expected)


def test_expansion_reaches_a_turn_through_its_neighbour() -> None:
    texts = ["When is the backup?", "Every night at two.", "Lunch is at noon."]
    index = InvertedIndex()
    index.sync(texts)
    plain = index.bm25(terms("backup"))
    expanded = index.bm25(terms("backup"), spread=(0.3,))
    assert plain[1] == 0.0 < expanded[1] < expanded[0]
    assert expanded[2] == 0.0
    # A silent text lends nothing: the current question must not make its neighbour relevant.
    assert index.bm25(terms("backup"), spread=(0.3,), silent=[0])[1] == 0.0


def test_terms_at_gives_a_text_s_term_counts() -> None:
    index = InvertedIndex()
    index.sync(["red red fox", "the hen"])
    assert dict(index.terms_at(0)) == {"red": 2, "fox": 1}
    assert dict(index.terms_at(1)) == {"hen": 1}
    # After a sync that replaces the last text, positions follow the new texts.
    index.sync(["red red fox", "blue sky"])
    assert dict(index.terms_at(1)) == {"blue": 1, "sky": 1}


def test_idf_counts_texts_not_occurrences() -> None:
    index = InvertedIndex()
    index.sync(["red red fox", "red hen", "blue"])
    assert index.idf("red") == pytest.approx(math.log(1 + 1.5 / 2.5))
    assert index.idf("blue") == pytest.approx(math.log(1 + 2.5 / 1.5))
    assert index.idf("green") == pytest.approx(math.log(1 + 3.5 / 0.5))
    # The weight bm25() gives a lone term in a text of average length.
    assert index.bm25(["blue"], b=0.0)[2] == pytest.approx(index.idf("blue"))


def test_the_c_stemmer_gives_the_pure_python_stems() -> None:
    # Stemming runs in C through PyStemmer when installed; the word table (query expansion) was
    # built with Snowball stems, so both must stem alike.
    import snowballstemmer
    from snowballstemmer.english_stemmer import EnglishStemmer

    fast = snowballstemmer.stemmer("english")
    assert type(fast).__module__ == "Stemmer", "PyStemmer is a dependency: stemming runs in C"
    words = [
        "running", "ran", "sunrises", "painting", "painted", "generously", "happiness",
        "relational", "conditional", "agreed", "feed", "hungry", "caroline", "melanie's",
        "dinosaurs", "museum", "LGBTQ", "transgender", "sourdough", "acetone", "marathons",
        "organization", "organizational", "skies", "dying", "lying", "news", "innings",
        "proceed", "exceed", "succeed", "cañon", "naïve", "café", "2023", "o'clock",
    ]  # fmt: skip
    pure = EnglishStemmer()
    assert [fast.stemWord(w.lower()) for w in words] == [pure.stemWord(w.lower()) for w in words]


def test_an_index_extended_at_once_is_the_index_appended_one_by_one() -> None:
    documents = [["rate", "limit", "rate"], [], ["limit", "throttl"], ["rate"] * 5, ["x", "y"]]
    one_by_one, at_once = InvertedIndex(), InvertedIndex()
    for doc in documents:
        one_by_one.append_terms("", doc)
    at_once.extend_counted([(dict(Counter(doc)), len(doc)) for doc in documents[:2]])
    at_once.extend_counted([(dict(Counter(doc)), len(doc)) for doc in documents[2:]])
    assert len(at_once) == len(documents)
    for query in (["rate"], ["limit", "throttl"], {"rate": 2.0, "y": 0.5}, ["absent"]):
        assert at_once.bm25(query).tolist() == one_by_one.bm25(query).tolist()
    assert [dict(at_once.terms_at(i)) for i in range(5)] == [
        dict(one_by_one.terms_at(i)) for i in range(5)
    ]
    assert at_once.idf("limit") == one_by_one.idf("limit")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from([*WORDS, "l'équipe", "L’eau", "a", "7", "Backups,", "\n", "x_y"]),
        max_size=40,
    ).map(" ".join),
    st.sampled_from(["en", "fr"]),
)
def test_terms_of_a_text_are_the_terms_analyse_finds(text: str, language: str) -> None:
    # terms() analyses each distinct word of a text once; analyse() reads every word.
    assert terms(text, language) == tuple(term for term, _ in analyse(text, language))  # type: ignore[arg-type]


def test_chinese_and_japanese_are_indexed_as_character_pairs() -> None:
    # No spaces between words: a run of ideographs or kana would otherwise be one term per
    # sentence, matching nothing. Pairs of characters, as Lucene's CJKAnalyzer indexes them.
    assert terms("我的猫喜欢吃鱼") == ("我的", "的猫", "猫喜", "喜欢", "欢吃", "吃鱼")
    assert terms("東京タワー") == ("東京", "京タ", "タワ", "ワー")
    # A character standing alone is a word; other scripts inside the run are words of their own.
    assert terms("猫") == ("猫",)
    assert terms("我的iPhone15坏了") == ("我的", "iphone15", "坏了")
    # Korean writes particles onto the word: pairs find "학교" in both.
    assert {"학교"} <= set(terms("학교에 갔어요")) & set(terms("학교는 어디예요"))


def test_thai_words_keep_their_vowel_signs() -> None:
    # Thai vowel signs are combining marks: the word does not end at them, and a run of Thai
    # (written without spaces) is indexed as pairs of characters with their marks.
    assert terms("กิน") == ("กิน",)
    assert terms("ชอบกิน") == ("ชอ", "อบ", "บกิ", "กิน")
    assert set(terms("ชอบกิน")) <= set(terms("ผมชอบกินข้าวมาก"))
    # Hindi keeps its vowel signs too; it writes spaces, so its words stay whole.
    assert terms("नमस्ते दुनिया") == ("नमस्ते", "दुनिया")


def test_case_width_and_compatibility_forms_are_folded() -> None:
    assert terms("Straße") == terms("STRASSE") == terms("strasse")
    assert terms("İstanbul") == terms("istanbul") == terms("ISTANBUL")
    assert terms("１２３ ＡＢＣ") == terms("123 abc")
    assert terms("ﬁle") == terms("file")
    # Arabic vowel points are usually left unwritten: the word is the same with or without.
    assert terms("مَرْحَبًا") == terms("مرحبا") == ("مرحبا",)
    # A decomposed accent is the accent written as one character.
    assert terms("cafe\u0301", "fr") == terms("café", "fr")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["我的猫", "東京タワー", "学校", "กินข้าว", "İstanbul", "Straße", "x", "猫"]),
        max_size=12,
    ).map("".join),
    st.sampled_from(["en", "fr"]),
)
def test_terms_of_any_script_are_the_terms_analyse_finds(text: str, language: str) -> None:
    assert terms(text, language) == tuple(term for term, _ in analyse(text, language))  # type: ignore[arg-type]


_BM25_IN_A_NEW_PROCESS = """
import random
from ctxpack.signals.bm25 import bm25_scores
rng = random.Random(5)
words = "bike beer dump trip login help work kid great road".split()
documents = [[rng.choice(words) for _ in range(10)] for _ in range(300)]
print([repr(x) for x in bm25_scores(words[:7], documents)])
"""


def test_bm25_scores_are_the_same_in_every_process() -> None:
    # The query's terms were summed in the order of a set, which string hashing changes from
    # one process to the next: scores differed in their last digits, enough to flip a tie.
    outputs = outputs_across_hash_seeds(_BM25_IN_A_NEW_PROCESS)
    assert len(outputs) == 1, outputs
