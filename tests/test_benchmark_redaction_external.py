"""benchmarks/redaction_external.py reads trufflehog's detector tests (Go) and scores redaction
on them: a made-up test file in the same shape, under tests/fixtures/trufflehog."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .helpers import load_script

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "trufflehog"
SECRET = "Zq4LmT8vRw2Nk6Hp3Xs9Cd1Fb7Gj5Ye0"


def _bench() -> Any:
    return load_script(ROOT / "benchmarks" / "redaction_external.py", "redaction_external_tests")


def test_the_go_reader_evaluates_constants_sprintf_and_concatenation() -> None:
    bench = _bench()
    path = FIXTURE / "pkg" / "detectors" / "examplevendor" / "examplevendor_test.go"
    cases = list(bench.Reader(path.read_text()).cases())
    assert [c[0] for c in cases] == [
        "valid pattern",
        "valid pattern - env",
        "not a secret in prose",
        "invalid pattern",
        "built at run time",
    ]
    assert cases[0][1:] == (f"examplevendor token = '{SECRET}' | '{SECRET}'", [SECRET])
    assert f"EXAMPLEVENDOR_API_KEY={SECRET}\n" in cases[1][1]
    assert cases[1][2] == [f"{SECRET}:acct4242"]
    assert cases[3][2] == []
    assert isinstance(cases[4][1], bench.Unparsable)


def test_parts_are_read_back_from_the_input() -> None:
    bench = _bench()
    given = f"KEY={SECRET}\nID=acct4242\nHOST=db.example.com"
    assert bench.parts_of(f"{SECRET}:acct4242", given) == [SECRET, "acct4242"]
    assert bench.parts_of(f"{SECRET}acct4242", given) == [SECRET, "acct4242"]
    assert bench.parts_of(json.dumps({"key": SECRET, "host": "db.example.com"}), given) == [
        SECRET,
        "db.example.com",
    ]
    # A part shorter than 8 characters is not counted; a value not in the input has no parts.
    assert bench.parts_of(f"{SECRET}:ab", given + "\nab") == [SECRET]
    assert bench.parts_of("decoded-elsewhere-value", given) == []


def test_scores_count_caught_secrets_skip_rejects_and_unreadable_cases() -> None:
    bench = _bench()
    detectors, skipped = bench.score(FIXTURE)
    det = detectors["examplevendor"]
    # The rejected input and the run-time one are not counted; the prose one is a miss, and
    # so is the key whose account id (8 characters, no secret) is left: only its longest part
    # counts as caught.
    assert (det.examples, det.secrets, det.caught, det.main_caught) == (3, 3, 1, 2)
    assert [m["case"] for m in det.misses] == ["valid pattern - env", "not a secret in prose"]
    assert skipped == {"case not evaluated": 1}


def test_the_split_is_a_stable_hash_of_the_name() -> None:
    bench = _bench()
    halves = [bench.split_half(n) for n in ("aws", "github", "stripe", "slack", "openai")]
    assert halves == [bench.split_half(n) for n in ("aws", "github", "stripe", "slack", "openai")]
    assert set(halves) <= {"tune", "report"}
    assert bench.split_half("aws") == "report"
