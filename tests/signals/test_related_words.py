"""RelatedWords: query expansion from the static word table."""

from __future__ import annotations

import pytest

import ctxpack
from ctxpack.signals import RelatedWords

from .helpers import query_of

HISTORY = ["I bought a new bike last week.", "The tax return is due in May."]


def test_related_words_of_the_conversation_weighted_by_cosine() -> None:
    query = query_of(HISTORY, "Did Ann get a bicycle?")
    related = RelatedWords().terms_for(query)
    assert set(related) == {"bike"}, "only words the conversation holds"
    assert 0.3 * 0.5 <= related["bike"] <= 0.3
    heavier = RelatedWords(weight=0.6).terms_for(query)
    assert heavier["bike"] == pytest.approx(2 * related["bike"])


def test_switched_off_by_weight_top_or_threshold() -> None:
    query = query_of(HISTORY, "Did Ann get a bicycle?")
    assert RelatedWords(weight=0).terms_for(query) == {}
    assert RelatedWords(top=0).terms_for(query) == {}
    assert RelatedWords(min_cosine=1.0).terms_for(query) == {}


def test_names_and_other_languages_are_not_expanded() -> None:
    # "Paris" inside the question is a name: other cities are not related words.
    cities = query_of(["We loved London and Rome."], "When did Marie visit Paris?")
    assert RelatedWords().terms_for(cities) == {}
    # The table is English: a French conversation finds look-alikes, not related words.
    french = query_of(["J'ai acheté un vélo."], "Et la bicyclette ?", language="fr")
    assert RelatedWords().terms_for(french) == {}


def test_options_are_validated() -> None:
    with pytest.raises(ctxpack.ConfigError, match=r"RelatedWords \(signal 'related'\): top=-1"):
        RelatedWords(top=-1)
    with pytest.raises(ctxpack.ConfigError, match="min_cosine=2"):
        RelatedWords(min_cosine=2)
    with pytest.raises(ctxpack.ConfigError, match="valid options are min_cosine, top, weight"):
        RelatedWords(related_top=3)
