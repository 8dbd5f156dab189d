"""Redaction of secret-dense outputs finds exactly what it found when the expectation was
frozen (tests/fixtures/redaction_dense.json): the work that makes such outputs cheaper to scan
(values found indexed, rules run only where they can match) must not change a finding.

The outputs are generated (tests/secret_corpus.py ``dense()``, seeded); each is checked whole
(long: rules run near their keywords, hundreds of values found looked for at once) and by its
first 20,000 characters (short: every rule reads the whole text). Each finding is its kind
and span; the fixture holds a digest of them, their number and kinds, and a digest of the text
(a generator that changed says so, not a redaction that did).

To freeze a new expectation (after a change meant to alter findings), run
``python tests/test_redaction_dense.py`` and review the difference.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ctxpack.caches import clear_caches
from ctxpack.redaction import find_secrets, redact

if __package__:
    from .secret_corpus import dense
else:  # run as a script, to freeze the expectation
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from secret_corpus import dense

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "redaction_dense.json"
SIZE = 150_000
SHORT = 20_000


def _inputs() -> dict[str, str]:
    texts = dense(seed=0, size=SIZE)
    return texts | {f"{name}, short": text[:SHORT] for name, text in texts.items()}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _observed(text: str) -> dict[str, Any]:
    clear_caches()  # scanned afresh, not read back from a cache
    findings = find_secrets(text)
    spans = json.dumps([[f.kind, f.start, f.end] for f in findings])
    return {
        "text": _digest(text),
        "findings": len(findings),
        "kinds": dict(sorted(Counter(f.kind for f in findings).items())),
        "spans": _digest(spans),
        "redacted": _digest(redact(text, findings).text),
    }


EXPECTED: dict[str, Any] = json.loads(FIXTURE.read_text("utf-8")) if FIXTURE.exists() else {}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_dense_output_redacted_as_frozen(name: str) -> None:
    text = _inputs()[name]
    expected = EXPECTED[name]
    assert _digest(text) == expected["text"], "the generator changed, not redaction"
    assert _observed(text) == expected


def test_fixture_covers_every_input() -> None:
    assert sorted(_inputs()) == sorted(EXPECTED)


if __name__ == "__main__":
    frozen = {name: _observed(text) for name, text in sorted(_inputs().items())}
    FIXTURE.write_text(json.dumps(frozen, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {FIXTURE}")
