"""Each shortcut secret redaction takes finds what the plain way finds: an allowlist searched
in lower case, a pattern matched by ``re`` in an ASCII text, the entropy read from a table, the
rules tried only where the words their matches begin with stand, a scan's cache entry weighed
by its findings' kinds."""

from __future__ import annotations

import math
import string
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

import ctxpack.redaction as r
from ctxpack._internal.secret_allowlists import AsciiTwin, Folded, folded
from ctxpack._internal.secret_starts import NAME_CHARS, anchored, every, match_start
from ctxpack._internal.secret_values import _counted, entropy
from ctxpack._internal.text_lines import TextLines
from ctxpack._internal.word_trie import WordCounts
from ctxpack.caches import _weigh_entry

from .secret_corpus import dense


def _generic_allowlist() -> Folded:
    rule = next(rule for rule in r._rules()[0] if rule.kind == "generic-api-key")
    found = [p for a in rule.allowlists for p in a.patterns if isinstance(p, Folded)]
    assert len(found) == 1
    return found[0]


# Pieces of the names gitleaks' generic rule spares, in any case, and what lies around them
# (the long s and the Kelvin sign match "s" and "k" with case ignored, beyond ASCII).
_NAMES = """access ibility or id api name version rapid capital :jar: jar author random
X-MS-Exchange-Organization-Auth Authentication-Results credential withCredentials bucket pub
lic key turkey vault store tab file path keying issuerkeyhash Donkey donkey MONKEY Monkey
secret length UserSecretsId csrf token io.jsonwebtoken endpoint url uri public
keyVaultToStoreSecrets"""
_NAME_PIECES = st.sampled_from(
    [
        *_NAMES.split(),
        *["A=\nB=", "a=\nbc=", "_=\n__=", ".=\n..=", "\n", "=", "_", ".", "-", " : ", "\t"],
        *["ſ", "\u212a", "é", "x", "Q", "1"],
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_NAME_PIECES, st.booleans()), max_size=8))
def test_an_allowlist_searched_in_lower_case_spares_what_its_pattern_spares(
    pieces: list[tuple[str, bool]],
) -> None:
    spared = _generic_allowlist()
    text = "".join(piece.swapcase() if swap else piece for piece, swap in pieces)
    assert spared.search(text) == (spared.pattern.search(text) is not None)


def test_only_an_alternation_with_its_case_ignored_is_searched_in_lower_case() -> None:
    plain = folded("(?i)(?:key[_.-]?id|(?-i:[DM]ONKEY)|turkey)")
    assert plain is not None
    assert plain.search("THE_KEY-ID") and plain.search("MONKEY") and not plain.search("Monkey")
    assert plain.search("ſecret key_id")  # beyond ASCII: the pattern itself
    for pattern in [
        "(?:key|id)",  # its case read
        "(?i)(?:key)|id",  # an alternative outside the group
        "(?i)(?:[A-Z]key|id)",  # a class in upper case
        "(?i)(?:\\Wkey|id)",  # an escape in upper case
        "(?i)(?:(a)\\1|id)",  # a reference to a group
        "(?i)(?:schlüssel|id)",  # beyond ASCII
    ]:
        assert folded(pattern) is None, pattern


@settings(max_examples=400, deadline=None)
@given(st.text("$%{}()<>*xX.…nultrefasNoYOUrwdpsckREDACT[] _-é\nſK0", max_size=24))
def test_a_pattern_matched_by_re_in_ascii_text_matches_as_regex_does(text: str) -> None:
    twin = r._NOT_A_VALUE
    assert isinstance(twin, AsciiTwin)
    assert (twin.match(text) is None) == (twin.pattern.match(text) is None)
    assert AsciiTwin("(?i:ſ)")._ascii is None  # the long s matches "s" with case ignored


@settings(max_examples=300, deadline=None)
@given(st.text(string.ascii_letters + string.digits + "+/=é", max_size=300))
def test_the_entropy_read_from_a_table_is_the_entropy_computed(text: str) -> None:
    for value in (text, text * 3):  # some longer than the tables
        n = len(value)
        plain = -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0
        assert entropy(value) == plain
    counted: dict[str, int] = {}
    _counted(counted, text)  # where collections has no counting loop in C
    assert list(counted.items()) == list(Counter(text).items())


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["pass", "passwd", "asswd", "wd", "key", "apikey", "--", "-", "x"]))
)
def test_words_counted_in_one_reading_are_counted_as_found_one_by_one(pieces: list[str]) -> None:
    words = ["pass", "passwd", "wd", "key", "apikey", "--", "kee"]
    text = "".join(pieces)
    counts = WordCounts(words).counts(text)
    for word in words:
        places = [at for at in range(len(text)) if text.startswith(word, at)]
        assert counts.get(word, 0) == len(places), word
    lines = TextLines(text, text, counts)
    assert all(lines.count(word) == text.count(word) for word in counts)  # "--" overlaps


# What the rules given their start words read, and what surrounds it.
_WORDS = """mysql mysqldump mariadb-dump sshpass redis-cli ldapsearch smbclient rpcclient
docker podman buildah nerdctl helm registry login -u -p -a -w -U --user= app --password --token
--cookie cookie Cookie: Set-Cookie: ; sid= password= pass= secret= api_key= access_token=
auth-token= client_secret= pwd= Pass= PWD= WITH LOGIN PASSWORD ROLE app USER grant IDENTIFIED
BY SET FOR encrypted"""
_COMMANDS = st.sampled_from(
    [
        *_WORDS.split(),
        *["'s3cr3t-Pw!42'", '"Vq8nT2zLp4Rw"', "Vq8nT2zLp4Rw-9x", "%", "=", " ", "\t", "\n"],
        *["(", "'", '"', "é", "ſet", "x", "-", "/", "a"],
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_COMMANDS, max_size=40))
def test_rules_given_their_start_words_find_what_a_search_finds(pieces: list[str]) -> None:
    text = "".join(pieces)
    lines = TextLines(text, text.lower())
    given_words = [rule for rule in r._rules()[0] if rule.kind in _GIVEN and rule.starts]
    assert {rule.kind for rule in given_words} == _GIVEN
    for rule in given_words:
        search = anchored(rule.pattern, rule.starts, lines)
        found = rule.pattern.finditer(text) if search is None else every(search, len(text))
        assert [m.span() for m in found] == [m.span() for m in rule.pattern.finditer(text)]


_GIVEN = {
    "password-short-option",
    "secret-assignment",
    "password-option",
    "cookie",
    "sql-password",
}


@settings(max_examples=200, deadline=None)
@given(st.text("abc_.-/:=é ", max_size=80), st.integers(0, 120))
def test_a_match_is_extended_back_over_the_name_characters_before_it(text: str, back: int) -> None:
    for start in range(len(text) + 1):
        plain, limit = start, max(0, start - back)
        while plain > limit and text[plain - 1] in NAME_CHARS:
            plain -= 1
        assert match_start(text, start, back) == plain


def test_a_scan_is_weighed_about_as_its_findings_are() -> None:
    # A finding weighed once for its kind: its positions, and what the interpreter's instance
    # dicts hold (their keys shared, or not yet), make each weigh a few bytes more or less.
    for text in dense(seed=3, size=20_000).values():
        found = r.find_secrets(text)
        plain = _weigh_entry((text,), found)
        assert abs(r._weight((text,), found) - plain) < 0.1 * plain


# Lines of password files (host:port:database:user:password) and of what only looks like
# them: each field drawn from good and bad ones, a line maybe numbered, ended in several ways.
_PGPASS_LINES = st.tuples(
    st.sampled_from(["", "     3\t", "3:", "x "]),
    st.sampled_from(["db.internal", "*", "[::1]", "/tmp", "10.0.0.7", "app.py", "12", "", "é"]),
    st.sampled_from(["5432", "*", "x", "", "123456", "5432:5432"]),
    st.sampled_from(["app", "*", "my\\:db", "", "a b", "\\\\"]),
    st.sampled_from(["alice", "*", ""]),
    st.sampled_from(["S3cr3t-pa55", "pw\\:9", "", "a b", "x:y", "mypassword", "pw\\"]),
    st.sampled_from(["\n", "\r\n", " \n", "", ":\n", "\r"]),
).map(lambda parts: parts[0] + ":".join(parts[1:6]) + parts[6])


@settings(max_examples=400, deadline=None)
@given(st.lists(_PGPASS_LINES, max_size=6))
def test_rules_tried_only_on_lines_their_gate_finds_find_what_a_search_finds(
    pieces: list[str],
) -> None:
    text = "".join(pieces)
    gated = [rule for rule in r._rules()[0] if rule.line_gate is not None]
    assert {rule.kind for rule in gated} == {"pgpass-password"}
    for rule in gated:
        found = [m.span() for m in r._on_lines(rule, text, r._gated_lines(rule, text))]
        assert found == [m.span() for m in rule.pattern.finditer(text)]


# Lines a rule tried only on the lines holding its keywords reads: assignments, headers, code,
# indentation, grep's prefixes, keywords in other cases and beyond ASCII.
_KEYWORD_LINE_PIECES = st.sampled_from(
    [
        *["DB_PASSWORD=", "password: ", "api_key = ", "x-api-key: ", "X-Auth-Token:", "Key"],
        *["s3cr3t-Value9", "'hunter2-prod'", "Vq8nT2zLp4Rw", "None", "token", "ſecret=", "İ"],
        *["\n", "\n", "  ", "\t", "- ", "export ", "app.py:3:", "12\t", "# x", "def f(a):"],
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_KEYWORD_LINE_PIECES, max_size=30))
def test_rules_tried_only_on_lines_holding_their_keywords_find_what_a_search_keeps(
    pieces: list[str],
) -> None:
    text = "".join(pieces)
    lowered = text.lower()
    counts = r._keyword_finder().counts(lowered)
    lines = TextLines(text, lowered, counts)
    if lines.lowered is None:
        return  # such a text is searched whole
    ruled = [rule for rule in r._rules()[0] if rule.keyword_lines]
    assert {rule.kind for rule in ruled} == {"secret-assignment", "api-key-header"}
    for rule in ruled:
        assert rule.pattern.pattern.startswith(("(?m)^", "(?im)^"))
        kept = [
            m.span()
            for m in rule.pattern.finditer(text)
            if lines.holds(rule.keywords, lines.around(*m.span()))
        ]
        found = r._on_lines(rule, text, lines.starts_holding(rule.keywords, counts.keys()))
        assert [m.span() for m in found] == kept
