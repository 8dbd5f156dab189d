"""RelevanceScorer: BM25 ranking, ties, neighbours, protected messages, effect on packing."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import pytest

import ctxpack
from ctxpack import ConfigError, GreedyPacker, Pipeline, PromptComposer, RelevanceScorer
from ctxpack.pipeline import PackContext
from ctxpack.signals import (
    Adjustment,
    FollowUp,
    Neighbors,
    Query,
    RelatedWords,
    ScoreSignal,
    TermSignal,
)

from ..helpers import call, ctx_of, ids, outputs_across_hash_seeds

HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Our Postgres backups run nightly at 02:00 UTC.", "id": "u1"},
    {"role": "assistant", "content": "Noted, nightly backups at 02:00.", "id": "a1"},
    {"role": "user", "content": "The frontend uses React 18 and Vite.", "id": "u2"},
    {"role": "assistant", "content": "Good choice for fast builds.", "id": "a2"},
    {"role": "user", "content": "Lunch is at noon on Fridays.", "id": "u3"},
    {"role": "assistant", "content": "Enjoy the pizza.", "id": "a3"},
    {"role": "user", "content": "When do the backups run?", "id": "q"},
]


def plain(**options: Any) -> RelevanceScorer:
    """BM25 without document expansion, related words or neighbours."""
    return RelevanceScorer(**{"expansion": (), **options}).without("related", "neighbors")


def relevance(scorer: RelevanceScorer | None = None) -> dict[str, float]:
    # Plain BM25 and the neighbours' share unless a test asks for more.
    scorer = scorer or RelevanceScorer(expansion=()).without("related")
    ctx = ctx_of(HISTORY, query="When do the backups run?", protected=["q"])
    return dict(scorer(ctx).signal("relevance"))


def test_best_match_scores_one_and_ranks_first() -> None:
    scores = relevance(plain())
    assert scores["u1"] == 1.0
    assert 0 < scores["a1"] < 1.0, "a1 matches 'backups' once, in a shorter text"
    assert set(scores) == {"u1", "a1"}, "texts sharing no term get no relevance"


def test_neighbours_get_a_decaying_share() -> None:
    scores = relevance(RelevanceScorer(expansion=()).without("related"))
    assert RelevanceScorer()["neighbors"] == Neighbors(distance=2, share=0.5)
    assert scores["u2"] == pytest.approx(max(0.5 * scores["a1"], 0.25 * scores["u1"]))
    assert "a3" not in scores


def test_protected_messages_get_no_relevance() -> None:
    assert "q" not in relevance()


def test_no_query_is_a_no_op() -> None:
    ctx = ctx_of(HISTORY)
    assert RelevanceScorer()(ctx) is ctx


def test_stemming_matches_word_forms() -> None:
    ctx = ctx_of(
        [
            {"role": "user", "content": "I painted two sunrises last year.", "id": "p"},
            {"role": "user", "content": "Something else entirely.", "id": "x"},
        ],
        query="When did she paint a sunrise?",
    )
    scores = plain()(ctx).signal("relevance")
    assert dict(scores) == {"p": 1.0}


def test_decisions_say_why() -> None:
    ctx = ctx_of(HISTORY, query="When do the backups run?", protected=["q"])
    out = RelevanceScorer()(ctx)
    reasons = {d.message_id: d.reason for d in out.decisions}
    assert reasons["u1"] == "relevance 1.00 to the query (matched: backups, run)"
    assert "neighbour of a relevant message" in reasons["u2"]


def test_words_written_apart_find_the_word_written_together() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "The roadtrip to Lyon was long.", "id": "u1"},
        {"role": "user", "content": "The road to the station is closed.", "id": "u2"},
        {"role": "user", "content": "How did the road trip go?", "id": "q"},
    ]
    out = scored(history[:-1], "How did the road trip go?")
    scores = out.signal("relevance")
    assert scores["u1"] > scores["u2"] > 0
    reasons = {d.message_id: d.reason for d in out.decisions}
    assert reasons["u1"].endswith("(matched: roadtrip)")


def test_relevance_decides_what_the_packer_keeps() -> None:
    # Room for the question and one more message: the relevant old one beats the recent ones.
    ctx = ctx_of(HISTORY, query="When do the backups run?")
    room = 3 + ctx.tokens(ctx.messages[0]) + ctx.tokens(ctx.messages[-1])
    pipeline = Pipeline(
        [PromptComposer(), RelevanceScorer(), GreedyPacker(signal_weights={"relevance": 40.0})]
    )
    assert ids(pipeline(ctx_of(HISTORY, budget=room, query="When do the backups run?"))) == [
        "u1",
        "q",
    ]


def test_ties_go_to_the_more_recent_message() -> None:
    same = "The deploy key rotates monthly."
    history = [
        {"role": "user", "content": same, "id": "old"},
        {"role": "user", "content": same + " ", "id": "new"},
        {"role": "user", "content": "How often does the deploy key rotate?", "id": "q"},
    ]
    ctx = ctx_of(history, query="How often does the deploy key rotate?")
    room = 3 + ctx.tokens(ctx.messages[1]) + ctx.tokens(ctx.messages[2])
    packer = GreedyPacker(recency_weight=0.0, signal_weights={"relevance": 40.0})
    pipeline = Pipeline([PromptComposer(), RelevanceScorer().without("neighbors"), packer])
    assert ids(pipeline(ctx_of(history, budget=room, query=ctx.query))) == ["new", "q"]


def test_budget_edges_one_token_short_drops_the_message() -> None:
    history = HISTORY[:1] + HISTORY[-1:]
    ctx = ctx_of(history, query="When do the backups run?")
    exact = 3 + sum(ctx.tokens(m) for m in ctx.messages)
    pipeline = Pipeline(
        [PromptComposer(), RelevanceScorer(), GreedyPacker(signal_weights={"relevance": 40.0})]
    )
    assert ids(pipeline(ctx_of(history, budget=exact, query=ctx.query))) == ["u1", "q"]
    assert ids(pipeline(ctx_of(history, budget=exact - 1, query=ctx.query))) == ["q"]


def test_repacking_a_grown_history_matches_a_fresh_index() -> None:
    # The index behind the scorer is cached and grows with the conversation; a history that
    # changes in the middle must still be scored as if indexed from scratch.
    query = "When do the backups run?"
    first = RelevanceScorer()(ctx_of(HISTORY, query=query)).signal("relevance")
    edited = [dict(m) for m in HISTORY]
    edited[2] = {"role": "user", "content": "Backups also run at noon.", "id": "u2"}
    after_edit = RelevanceScorer()(ctx_of(edited, query=query)).signal("relevance")
    assert after_edit["u2"] > first["u2"]
    again = RelevanceScorer()(ctx_of(HISTORY, query=query)).signal("relevance")
    assert dict(again) == dict(first)


def test_config_is_validated() -> None:
    with pytest.raises(ValueError, match="expansion"):
        RelevanceScorer(expansion=(0.3, -0.1))
    with pytest.raises(ctxpack.ConfigError, match="RelevanceScorer: k1=0"):
        RelevanceScorer(k1=0)
    with pytest.raises(ctxpack.ConfigError, match=r"RelevanceScorer: b=1\.5"):
        RelevanceScorer(b=1.5)
    with pytest.raises(ctxpack.ConfigError, match="unique; repeated: neighbors"):
        RelevanceScorer(signals=(Neighbors(), Neighbors(distance=1)))
    with pytest.raises(ctxpack.ConfigError, match="signals"):
        RelevanceScorer(signals=(lambda ctx: ctx,))


def test_default_pipeline_keeps_the_relevant_old_turn() -> None:
    result = ctxpack.pack(HISTORY, budget=45, model="gpt-4")
    assert "u1" in result.kept_ids
    assert "u3" not in result.kept_ids


def test_expansion_scores_the_answer_next_to_the_question() -> None:
    scores = relevance(plain(expansion=(0.3,)))
    # u2 shares no term with the query but sits next to a1, which does.
    assert 0 < scores["u2"] < scores["a1"]
    assert "a3" not in scores, "the question lends its terms to nobody"


DIALOGUE: list[dict[str, Any]] = [
    {"role": "user", "content": "Ann: I started painting landscapes.", "id": "a1"},
    {"role": "assistant", "content": "Bob: Painting? I took up painting too.", "id": "b1"},
    {"role": "user", "content": "Ann: We should go hiking.", "id": "a2"},
    {"role": "assistant", "content": "Bob: Sure, next weekend.", "id": "b2"},
    {"role": "user", "content": "Ann: Great.", "id": "a3"},
    {"role": "assistant", "content": "Bob: See you.", "id": "b3"},
]


def _dialogue_scores(question: str, focus: bool = True) -> tuple[dict[str, float], Any]:
    history = [*DIALOGUE, {"role": "user", "content": question, "id": "q"}]
    ctx = ctx_of(history, query=question, protected=["q"])
    out = (plain() if focus else plain().without("speaker"))(ctx)
    return dict(out.signal("relevance")), out


def test_speaker_focus_favours_the_named_speaker() -> None:
    focused, out = _dialogue_scores("What does Bob paint?")
    unfocused, _ = _dialogue_scores("What does Bob paint?", focus=False)
    assert focused["b1"] == unfocused["b1"] == 1.0
    assert focused["a1"] == pytest.approx(0.3 * unfocused["a1"])
    reasons = {d.message_id: d.reason for d in out.decisions}
    assert "x0.3: the query is about Bob" in reasons["a1"]
    # Nobody named, or both named: no focus.
    assert _dialogue_scores("Who paints?")[0] == _dialogue_scores("Who paints?", focus=False)[0]
    both = "Do Ann and Bob paint?"
    assert _dialogue_scores(both)[0] == _dialogue_scores(both, focus=False)[0]


def test_speaker_focus_uses_the_name_field_too() -> None:
    history = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": text, "name": name}
        for i, (name, text) in enumerate(
            [("ann", "I paint."), ("bob", "I paint too."), ("ann", "ok"), ("bob", "ok")] * 2
        )
    ]
    question = {"role": "user", "content": "What does bob paint?", "name": "carl", "id": "q"}
    ctx = ctx_of([*history, question], query=question["content"], protected=["q"])
    scores = plain()(ctx).signal("relevance")
    ids_ = [m.id for m in ctx.messages]
    assert scores[ids_[1]] == 1.0
    assert scores[ids_[0]] == pytest.approx(0.3 * scores[ids_[1]], rel=0.2)


def test_query_words_are_expanded_with_related_words_of_the_conversation() -> None:
    history = [
        {"role": "user", "content": "I bought a new bike last week.", "id": "bike"},
        {"role": "assistant", "content": "The tax return is due in May.", "id": "tax"},
        {"role": "user", "content": "Where is Bicycle Street?", "id": "street"},
        {"role": "user", "content": "Did Ann get a bicycle?", "id": "q"},
    ]
    ctx = ctx_of(history, query="Did Ann get a bicycle?", protected=["q"])
    assert "bike" not in plain()(ctx).signal("relevance")
    out = RelevanceScorer(expansion=()).without("neighbors")(ctx)
    scores = out.signal("relevance")
    # "bike" is related to "bicycle": a share of a match (0.3 x cosine 0.93), below the
    # exact match, and nothing for the unrelated message.
    assert 0 < scores["bike"] < scores["street"] == 1.0
    assert "tax" not in scores
    reasons = {d.message_id: d.reason for d in out.decisions}
    assert reasons["bike"].endswith("(through related words: bike)")


def test_names_are_not_expanded() -> None:
    # "Paris" is capitalised inside the question: a name, whose neighbours in the word table
    # (other cities) must not count as matches.
    history = [
        {"role": "user", "content": "We loved London and Rome.", "id": "cities"},
        {"role": "user", "content": "When did Marie visit Paris?", "id": "q"},
    ]
    ctx = ctx_of(history, query="When did Marie visit Paris?", protected=["q"])
    expanded = RelevanceScorer(expansion=()).without("neighbors")(ctx).signal("relevance")
    assert "cities" not in expanded


def test_tool_results_are_not_speakers() -> None:
    # Tool results starting with "Error:" and "Warning:" would pass every speaker guard (three
    # each, most of the messages), yet they are not participants.
    history: list[dict[str, Any]] = []
    for turn in range(2):
        ids_ = [f"c{turn}{k}" for k in range(3)]
        history.append(
            {"role": "assistant", "content": None, "tool_calls": [call(i) for i in ids_]}
        )
        for k, call_id in enumerate(ids_):
            text = f"{'Error' if turn else 'Warning'}: disk {k}"
            history.append({"role": "tool", "tool_call_id": call_id, "content": text})
    history.append({"role": "user", "content": "Why the Error on disk 1?", "id": "q"})
    ctx = ctx_of(history, query="Why the Error on disk 1?", protected=["q"])
    focused = plain()(ctx).signal("relevance")
    unfocused = plain().without("speaker")(ctx).signal("relevance")
    assert dict(focused) == dict(unfocused)


FOLLOW_UP: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a helpful assistant.", "id": "sys"},
    {"role": "user", "content": "How does compound interest work? It would help.", "id": "u1"},
    {"role": "assistant", "content": "You earn interest on the interest.", "id": "a1"},
    {"role": "user", "content": "My sourdough starter smells like acetone.", "id": "u2"},
    {"role": "assistant", "content": "It is hungry: feed it twice a day.", "id": "a2"},
    {"role": "user", "content": "Why would that help?", "id": "q"},
]


def scored(
    history: list[dict[str, Any]], query: str, scorer: RelevanceScorer | None = None
) -> PackContext:
    """The relevance stage (:func:`plain` unless given) on ``history`` then ``query`` (id
    ``q``; ``sys`` and ``q`` protected)."""
    messages = [*history, {"role": "user", "content": query, "id": "q"}]
    stage = scorer or plain()
    return stage(ctx_of(messages, query=query, protected=["sys", "q"]))


def follow_up_scores(
    query: str = "Why would that help?", scorer: RelevanceScorer | None = None
) -> PackContext:
    return scored(FOLLOW_UP[:-1], query, scorer)


def test_a_follow_up_question_borrows_the_previous_exchange() -> None:
    # One content word ("help"): the question is about the exchange it follows, so that
    # exchange's words join the query at half weight and outrank the old "help" message.
    out = follow_up_scores()
    scores = out.signal("relevance")
    assert sorted(scores, key=scores.__getitem__)[-2:] == ["a2", "u2"]
    assert scores["a2"] > scores["u1"] > 0
    assert "sys" not in scores, "the system prompt lends no words and gets no relevance"
    reasons = {d.message_id: d.reason for d in out.decisions}
    assert reasons["a2"].endswith(
        "(the query follows up on the previous exchange: hungry, feed, twice)"
    )
    # Turned off, "help" alone decides: the unrelated old message wins.
    off = follow_up_scores(scorer=plain().without("follow_up")).signal("relevance")
    assert set(off) == {"u1"}
    unweighted = follow_up_scores(scorer=plain().replace("follow_up", FollowUp(weight=0)))
    assert dict(unweighted.signal("relevance")) == dict(off)


def test_a_specific_question_borrows_nothing() -> None:
    # Two content words are enough to say what the question is about.
    out = follow_up_scores("How does compound interest grow?").signal("relevance")
    assert set(out) == {"u1", "a1"}
    wider = follow_up_scores(
        "How does compound interest grow?", plain().replace("follow_up", FollowUp(words=3))
    )
    assert "a2" in wider.signal("relevance")


POINTING: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a helpful assistant.", "id": "sys"},
    {"role": "user", "content": "What cleans the windows of my house best?", "id": "u1"},
    {"role": "assistant", "content": "Vinegar and water: wipe the windows dry.", "id": "a1"},
    {"role": "user", "content": "I need a backup tool for my Postgres database.", "id": "u2"},
    {"role": "assistant", "content": "pgBackRest does full and incremental backups.", "id": "a2"},
]


def pointing_scores(query: str, scorer: RelevanceScorer | None = None) -> PackContext:
    return scored(POINTING, query, scorer)


def test_a_short_question_pointing_back_borrows_the_previous_exchange() -> None:
    # "install" and "windows" are two content words, but "it" points back: the question is
    # about the backup tool, not about window cleaning.
    out = pointing_scores("How do I install it on Windows?")
    scores = out.signal("relevance")
    assert max(scores, key=scores.__getitem__) in {"u2", "a2"}
    assert scores["a2"] > scores["a1"] > 0
    reasons = {d.message_id: d.reason for d in out.decisions}
    assert "(the query follows up on the previous exchange: " in reasons["a2"]
    # Without the pointing rule, only the windows turns match.
    strict = plain().replace("follow_up", FollowUp(pointing_words=0))
    no_pointing = pointing_scores("How do I install it on Windows?", strict)
    assert set(no_pointing.signal("relevance")) == {"u1", "a1"}
    # French points back too.
    french = pointing_scores("Et ça marche sous Windows ?").signal("relevance")
    assert french["a2"] > french["a1"] > 0


def test_a_pointing_word_in_a_longer_question_borrows_nothing() -> None:
    # Four content words say what the question is about, "it" or not.
    scores = pointing_scores("How do I install it on Windows laptops quickly?").signal("relevance")
    assert set(scores) == {"u1", "a1"}
    # Nor does a short question without a pointing word.
    assert set(pointing_scores("How do I install Windows?").signal("relevance")) == {"u1", "a1"}


def test_the_default_pack_keeps_what_a_pointing_question_refers_to() -> None:
    question = {"role": "user", "content": "How do I install it on Windows?", "id": "q"}
    chat = [*POINTING, question]
    tokens = ctxpack.count_tokens([chat[0], chat[3], chat[4], question], model="gpt-4")
    assert ctxpack.pack(chat, budget=tokens, model="gpt-4").kept_ids == ["sys", "u2", "a2", "q"]


def test_a_question_with_no_content_word_is_about_the_previous_exchange() -> None:
    scores = follow_up_scores("Why?").signal("relevance")
    assert max(scores, key=scores.__getitem__) in {"u2", "a2"}
    assert "u1" not in scores and "a1" not in scores


def test_a_query_given_apart_follows_up_on_the_last_exchange() -> None:
    # pack(query=...) with a query that is not in the conversation: the last user message and
    # what follows it are the exchange.
    history = FOLLOW_UP[:-1]
    ctx = ctx_of(history, query="Why?", protected=["sys"])
    scores = plain()(ctx).signal("relevance")
    assert set(scores) == {"u2", "a2"}


def test_the_default_pack_keeps_what_a_follow_up_refers_to() -> None:
    tokens = ctxpack.count_tokens(
        [FOLLOW_UP[0], FOLLOW_UP[3], FOLLOW_UP[4], FOLLOW_UP[5]], model="gpt-4"
    )
    result = ctxpack.pack(FOLLOW_UP, budget=tokens, model="gpt-4")
    assert result.kept_ids == ["sys", "u2", "a2", "q"]


def test_reasons_name_words_as_written() -> None:
    from ctxpack.stages._relevance import _words

    assert _words("Caroline painted two Sunrises, then sunrises again.", {"sunris", "paint"}) == (
        "painted, sunrises"
    )
    # A stem the text does not spell out (it never happens with the text's own terms) is
    # still named rather than silently left out.
    assert _words("Nothing here.", {"zzz"}) == "zzz"


def test_a_follow_up_borrows_only_the_most_distinctive_terms() -> None:
    # After a long reply, "Why?" borrows its 32 most distinctive terms, not all of them: here
    # "zebra" (three times, and nowhere else), "list" (once, nowhere else) and 30 of the 60
    # words each said once before (the first ones, on equal weight).
    words = [f"word{k:02d}" for k in range(60)]
    history: list[dict[str, Any]] = [
        {"role": "user", "content": word, "id": f"old{k:02d}"} for k, word in enumerate(words)
    ]
    history += [
        {"role": "user", "content": "List them all.", "id": "u"},
        {"role": "assistant", "content": " ".join(words) + " zebra zebra zebra", "id": "a"},
        {"role": "user", "content": "Why?", "id": "q"},
    ]
    ctx = ctx_of(history, query="Why?", protected=["q"])
    scores = plain()(ctx).signal("relevance")
    assert scores["a"] == 1.0
    assert sorted(mid for mid in scores if mid.startswith("old")) == [
        f"old{k:02d}" for k in range(30)
    ]


_SCORES_IN_A_NEW_PROCESS = """
import ctxpack
chat = [
    {"role": "system", "content": "You help with the deployment."},
    {"role": "user", "content": "The refresh token cache fails after the migration of auth.py "
     "in 2025."},
    {"role": "assistant", "content": "Rotate the refresh token, flush the cache, rerun the "
     "migration tests and check the login report budget."},
    {"role": "user", "content": "Marie says the login report and the budget tests pass in Paris."},
    {"role": "assistant", "content": "Then the cache and token rotation in auth.py explain the "
     "failing migration."},
    {"role": "user", "content": "Why?"},
]
result = ctxpack.pack(chat, budget=10_000, model="gpt-4")
print([(d.message_id, repr(d.score)) for d in result.decisions if d.stage == "relevance"])
"""


def test_follow_up_scores_are_the_same_in_every_process() -> None:
    # Borrowed terms used to be summed in a set's order, which string hashing changes from
    # one process to the next: the scores then differed in their last digits, enough to flip
    # a tie. Seeds 0 and 1 gave different scores before the fix.
    outputs = outputs_across_hash_seeds(_SCORES_IN_A_NEW_PROCESS, ("0", "1", "2"))
    assert len(outputs) == 1, outputs
    assert outputs.pop().count("(") >= 3, "the follow-up should select several messages"


FRENCH: list[dict[str, Any]] = [
    # A long English system prompt: instructions do not set the conversation's language.
    {
        "role": "system",
        "content": "You are a helpful assistant. Answer in the language of the user, keep it "
        "short and cite the sources you use for every claim that is not common knowledge.",
        "id": "sys",
    },
    {"role": "user", "content": "Hier, j'ai regardé un film avec Paul.", "id": "u1"},
    {"role": "assistant", "content": "Quel film avez-vous vu ?", "id": "a1"},
    {"role": "user", "content": "Ce soir-là, ils mangeaient des crêpes.", "id": "u2"},
    {"role": "assistant", "content": "Avec du sucre ou de la confiture ?", "id": "a2"},
]


def french_scores(query: str, language: Any = "auto") -> dict[str, float]:
    return dict(scored(FRENCH, query, plain(language=language)).signal("relevance"))


def test_a_french_conversation_is_stemmed_in_french() -> None:
    # "mangé" and "mangeaient" share the French stem "mang"; English stemming keeps them apart.
    assert set(french_scores("Qu'avons-nous mangé hier ?")) == {"u1", "u2"}
    assert set(french_scores("Qu'avons-nous mangé hier ?", language="en")) == {"u1"}
    assert set(french_scores("Qu'avons-nous mangé hier ?", language="fr")) == {"u1", "u2"}
    # Elided articles go: "l'équipe" is "équipe".
    assert set(french_scores("Et l'équipe de Paul ?")) == {"u1"}


def test_an_english_conversation_stays_english() -> None:
    history = [
        {"role": "user", "content": "We were eating pancakes at Marie's place.", "id": "u1"},
        {"role": "assistant", "content": "Did you like the film?", "id": "a1"},
        {"role": "user", "content": "What did we eat at lunch?", "id": "q"},
    ]
    ctx = ctx_of(history, query="What did we eat at lunch?", protected=["q"])
    scorer = plain()
    assert scorer._language(ctx.messages) == "en"
    assert set(scorer(ctx).signal("relevance")) == {"u1"}


def test_signals_are_listed_replaced_and_switched_off() -> None:
    scorer = RelevanceScorer()
    assert scorer.signal_names == (
        "related",
        "query",
        "follow_up",
        "compounds",
        "neighbors",
        "speaker",
    )
    wider = scorer.replace("neighbors", Neighbors(distance=3))
    assert wider["neighbors"] == Neighbors(distance=3)
    assert wider.signal_names == scorer.signal_names
    assert scorer["neighbors"] == Neighbors(), "replace returns a new scorer"
    assert scorer.without("speaker", "related").signal_names == (
        "query",
        "follow_up",
        "compounds",
        "neighbors",
    )
    with pytest.raises(KeyError, match="no signal named 'speakers'; signals are"):
        scorer.without("speakers")
    with pytest.raises(KeyError, match="no signal named 'x'"):
        scorer.replace("x", Neighbors())
    with pytest.raises(ConfigError, match="no signal named 'x'"):
        scorer.replace("x", Neighbors())
    # Frozen, and a list of signals is held as a tuple.
    with pytest.raises(ValueError):
        scorer.signals = ()  # type: ignore[misc]
    assert RelevanceScorer(signals=[Neighbors()]).signals == (Neighbors(),)  # type: ignore[arg-type]
    assert "RelatedWords(weight=0.3, top=5, min_cosine=0.5)" in repr(scorer)


def test_switching_a_signal_off_equals_weighing_it_zero() -> None:
    ctx = ctx_of(HISTORY, query="When do the backups run?", protected=["q"])
    off = RelevanceScorer().without("related", "neighbors")(ctx)
    zero = RelevanceScorer().replace("related", RelatedWords(weight=0))
    zero = zero.replace("neighbors", Neighbors(distance=0))
    assert dict(zero(ctx).signal("relevance")) == dict(off.signal("relevance"))
    assert list(zero(ctx).decisions) == list(off.decisions)


def test_explanations_follow_the_signals_rank_not_their_order() -> None:
    # The follow-up's borrowed words explain before related words, the query's own words
    # before both, whatever order the term signals run in.
    history = [*FOLLOW_UP[:-1], {"role": "user", "content": "Why would that help?", "id": "q"}]
    ctx = ctx_of(history, query="Why would that help?", protected=["sys", "q"])
    scorer = RelevanceScorer()
    terms_first = [s for s in scorer.signals if isinstance(s, TermSignal)]
    others = [s for s in scorer.signals if not isinstance(s, TermSignal)]
    turned = RelevanceScorer(signals=(*reversed(terms_first), *others))
    reasons = {d.message_id: d.reason for d in scorer(ctx).decisions}
    assert {d.message_id: d.reason for d in turned(ctx).decisions} == reasons
    assert reasons["u1"].endswith("(matched: help)")
    assert reasons["a2"].endswith(
        "(the query follows up on the previous exchange: hungry, feed, twice)"
    )


class Synonyms(TermSignal):
    """A signal of one's own: fixed synonyms of the query's words."""

    name: ClassVar[str] = "synonyms"
    note: ClassVar[str] = "through synonyms: {words}"

    table: tuple[tuple[str, str], ...] = (("backup", "dump"),)
    weight: float = 0.5

    def terms_for(self, query: Query) -> dict[str, float]:
        return {other: self.weight for term, other in self.table if term in query.terms}


class AssistantDamping(ScoreSignal):
    """A score signal of one's own: assistant messages count half."""

    name: ClassVar[str] = "assistant"

    def adjust(self, scores: npt.NDArray[np.float64], query: Query) -> Adjustment | None:
        damped = scores.copy()
        damped[[m.role == "assistant" for m in query.messages]] *= 0.5
        return Adjustment(damped, "assistant: x0.5")


def test_a_signal_of_ones_own() -> None:
    history = [
        {"role": "user", "content": "Our Postgres backups run nightly.", "id": "u1"},
        {"role": "assistant", "content": "The nightly dump ran fine.", "id": "a1"},
        {"role": "user", "content": "Lunch is at noon.", "id": "u2"},
        {"role": "user", "content": "When do the backups run?", "id": "q"},
    ]
    ctx = ctx_of(history, query="When do the backups run?", protected=["q"])
    base = plain()
    assert "a1" not in base(ctx).signal("relevance")
    mine = RelevanceScorer(signals=(*base.signals, Synonyms(), AssistantDamping()), expansion=())
    assert mine.signal_names[-2:] == ("synonyms", "assistant")
    out = mine(ctx)
    scores = out.signal("relevance")
    assert 0 < scores["a1"] < scores["u1"] == 1.0
    reasons = {d.message_id: d.reason for d in out.decisions}
    assert reasons["a1"].endswith("(through synonyms: dump) (assistant: x0.5)")
    assert reasons["u1"] == "relevance 1.00 to the query (matched: backups, run)"
    with pytest.raises(ctxpack.ConfigError, match=r"Synonyms \(signal 'synonyms'\): weight='x'"):
        Synonyms(weight="x")


def test_the_configuration_round_trips_through_a_dump() -> None:
    scorer = RelevanceScorer(language="en").without("speaker")
    scorer = scorer.replace("neighbors", Neighbors(distance=1))
    dumped = scorer.model_dump()
    assert dumped["signals"][-1] == {"name": "neighbors", "distance": 1, "share": 0.5}
    assert RelevanceScorer(**dumped) == scorer
    assert RelevanceScorer.model_validate_json(scorer.model_dump_json()) == scorer
    with pytest.raises(ctxpack.ConfigError, match="no signal is named 'nope'; signals are"):
        RelevanceScorer(signals=[{"name": "nope"}])


# A small made-up check, one conversation per language, the same facts in each: the question's
# answer must be the best match (top 1). English is the control.
_FACTS: dict[str, tuple[list[str], list[tuple[str, int]]]] = {
    "en": (
        [
            "Next month I am travelling to Beijing to see the Great Wall.",
            "My cat is called Snowball and she loves eating fish.",
            "The weather is lovely today, good for a walk.",
            "My sister works as a nurse in a hospital in Shanghai.",
        ],
        [
            ("What does my cat love eating?", 1),
            ("Where does my sister work?", 3),
            ("When am I travelling to Beijing?", 0),
        ],
    ),
    "zh": (
        [
            "我下个月要去北京旅行，想看长城。",
            "我的猫叫小白，它喜欢吃鱼。",
            "今天天气很好，适合散步。",
            "我姐姐在上海的一家医院当护士。",
        ],
        [("我的猫喜欢吃什么？", 1), ("我姐姐在哪里工作？", 3), ("我什么时候去北京？", 0)],
    ),
    "ja": (
        [
            "来月、万里の長城を見に北京へ旅行します。",
            "うちの猫はシロという名前で、魚が大好きです。",
            "今日は天気が良くて、散歩日和です。",
            "姉は上海の病院で看護師をしています。",
        ],
        [
            ("猫は何が好きですか？", 1),
            ("姉はどこで働いていますか？", 3),
            ("北京にはいつ行きますか？", 0),
        ],
    ),
    "ko": (
        [
            "다음 달에 만리장성을 보러 베이징에 여행 가요.",
            "우리 고양이 이름은 흰둥이고 생선을 좋아해요.",
            "오늘은 날씨가 좋아서 산책하기 좋아요.",
            "우리 언니는 상하이의 병원에서 간호사로 일해요.",
        ],
        [("고양이는 뭘 좋아해요?", 1), ("언니는 어디에서 일해요?", 3), ("베이징에 언제 가요?", 0)],
    ),
    "th": (
        [
            "เดือนหน้าฉันจะไปเที่ยวปักกิ่งเพื่อดูกำแพงเมืองจีน",
            "แมวของฉันชื่อสโนว์บอล มันชอบกินปลา",
            "วันนี้อากาศดี เหมาะกับการเดินเล่น",
            "พี่สาวของฉันเป็นพยาบาลที่โรงพยาบาลในเซี่ยงไฮ้",
        ],
        [("แมวของฉันชอบกินอะไร", 1), ("พี่สาวทำงานที่ไหน", 3), ("ฉันจะไปปักกิ่งเมื่อไหร่", 0)],
    ),
}


@pytest.mark.parametrize("language", sorted(_FACTS))
def test_the_answer_ranks_first_in_languages_written_without_spaces(language: str) -> None:
    said, questions = _FACTS[language]
    history = [{"role": "user", "content": text, "id": f"m{i}"} for i, text in enumerate(said)]
    for question, answer in questions:
        asked = [*history, {"role": "user", "content": question, "id": "q"}]
        ctx = ctx_of(asked, query=question, protected=["q"])
        scores = dict(plain()(ctx).signal("relevance"))
        best = max(scores, key=scores.__getitem__, default=None)
        assert best == f"m{answer}", (question, scores)
