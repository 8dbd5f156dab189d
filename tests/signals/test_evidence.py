"""Evidence terms: the one extractor the digest keeps and the agent-sessions benchmark counts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxpack import ConfigError
from ctxpack.signals.evidence import evidence_terms, labelled_evidence_terms

from ..helpers import cpu_seconds


def test_paths_identifiers_and_numbers_are_found_in_order_without_repeats() -> None:
    text = (
        "Opened ./src/auth/token.py and setup.cfg; refresh_token and getValue fail at line 120 "
        "(was 3.5), then refresh_token again in HttpClient, see src/auth/token.py"
    )
    assert evidence_terms(text) == [
        "src/auth/token.py",
        "setup.cfg",
        "refresh_token",
        "getValue",
        "120",
        "3.5",
        "HttpClient",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "a short id x_y and line 88",  # under 4 characters, under 3 digits
        "MAX_SIZE and __init__ and plain words",  # constants and dunder names
        "the ratio 1/2 and the page 12/345",  # numbers with a slash are not paths
    ],
)
def test_what_is_not_evidence(text: str) -> None:
    assert evidence_terms(text) == (["345"] if "345" in text else [])


def test_each_term_has_its_kind_and_a_path_stays_a_path() -> None:
    labelled = labelled_evidence_terms("cd build_dir/.. then build_dir again, 404 and 2.1")
    assert labelled == [
        ("path", "build_dir"),
        ("identifier", "build_dir"),
        ("number", "404"),
        ("number", "2.1"),
    ]
    # The plain list names the word once.
    assert evidence_terms("cd build_dir/.. then build_dir again") == ["build_dir"]


@given(st.text(alphabet="ab_Z9./- \n():", max_size=60))
def test_the_plain_terms_are_the_labelled_ones_without_their_kinds(text: str) -> None:
    labelled = labelled_evidence_terms(text)
    assert len(set(labelled)) == len(labelled)
    assert evidence_terms(text) == list(dict.fromkeys(term for _, term in labelled))
    for _, term in labelled:
        assert term in text


def test_only_text_is_read() -> None:
    with pytest.raises(ConfigError, match="text must be a string"):
        evidence_terms(b"auth/token.py")  # type: ignore[arg-type]


def test_a_text_read_again_costs_a_lookup_and_hands_out_a_list_of_its_own() -> None:
    # A managed session's every compaction reads the terms of the whole summarised history again.
    from ctxpack.caches import cache_stats, clear_caches

    log = "\n".join(f"src/pkg/mod_{i}.py:{1000 + i}: token_{i} failed" for i in range(4_000))
    clear_caches()
    read: list[list[str]] = []
    cold = cpu_seconds(lambda: read.append(evidence_terms(log)), repeat=1)
    first = read[0]
    first.append("edited")
    again = cpu_seconds(lambda: read.append(evidence_terms(log)))
    terms = read[-1]
    assert terms == first[:-1] and len(terms) == 16_000
    assert labelled_evidence_terms(log)[:2] == [
        ("path", "src/pkg/mod_0.py"),
        ("identifier", "mod_0"),
    ]
    assert again < cold / 3
    assert [s.entries for s in cache_stats() if s.name == "evidence terms"] == [1]
    clear_caches()
    assert [s.entries for s in cache_stats() if s.name == "evidence terms"] == [0]


# Pieces of evidence and what sits around them: separators, dots, slashes, digits, capitals.
_PIECES = st.sampled_from(
    [
        "src/",
        "app.py",
        "./",
        "..",
        "refresh_token",
        "HttpClient",
        "123",
        "3.5",
        "x",
        "_",
        "-",
        ".",
        "/",
        "9",
        "getValue",
        "setup.cfg",
        "ABC_DEF",
        " ",
        "\n",
        "\t",
        ":",
        "(",
        "é",
        "a1",
    ]
)


@given(st.lists(_PIECES, max_size=40).map("".join), st.sampled_from(["\n", " "]))
def test_the_term_set_read_piece_by_piece_is_the_texts(text: str, sep: str) -> None:
    # The managed window reads its digest line by line (and its index term by term) so that
    # the lines it wrote before are not read again: no term may span a line break or a space.
    from ctxpack.signals.evidence import evidence_term_set

    assert evidence_term_set(text, sep) == set(evidence_terms(text))


def test_the_term_set_splits_only_where_no_term_can_span() -> None:
    from ctxpack.signals.evidence import evidence_term_set

    with pytest.raises(ConfigError, match="sep must be a line break or a space"):
        evidence_term_set("src/app.py", "/")
