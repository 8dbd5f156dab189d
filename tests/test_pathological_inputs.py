"""Huge and strange tool outputs: runs of one character, one line of megabytes, keys without
values. Each goes through in about linear time and gives the result a short one gives."""

from __future__ import annotations

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack.redaction import redact

from .helpers import ROOT, load_script, run_guarded

TOKEN = "Rk7Vq2Lx9Zm4Wt8Np3Hc6Yb1Fd5Gs0Ja"


def _vendoring() -> object:
    return load_script(ROOT / "scripts" / "vendor_gitleaks_rules.py", "vendor_gitleaks_rules")


def test_a_long_value_after_a_key_naming_a_secret_is_read_in_linear_time() -> None:
    # gitleaks' generic-api-key match allowlist ran on the whole match, whose value has no
    # upper length: a lazy run before "api" was tried from each of its characters. A base64
    # blob after "api_key = " took 10 s at 100 kB; this one (1 MB) took about 17 minutes.
    code = (
        "import random, string\n"
        "from ctxpack.redaction import redact\n"
        "draw = random.Random(0)\n"
        "blob = ''.join(draw.choices(string.ascii_letters + string.digits + '+/', k=1_000_000))\n"
        f"out = redact('export API_TOKEN={TOKEN}\\napi_key = ' + blob)\n"
        f"print({TOKEN!r} in out.text, out.kinds)\n"
    )
    assert run_guarded(code).strip() == "False ('secret-env-prefix',)"


_PIECES = ["api", ":jar:", "API", "=", "\n", "_", ".", "a", "B", "K", "-", "0", "x:", " "]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12).map("".join))
def test_the_linear_forms_of_gitleaks_patterns_find_the_same_texts(text: str) -> None:
    vendoring = _vendoring()
    for quadratic, linear in vendoring.LINEAR:  # type: ignore[attr-defined]
        old = regex.compile("(?i)" + quadratic, regex.V1)
        new = regex.compile("(?i)" + linear, regex.V1)
        assert bool(old.search(text)) == bool(new.search(text)), (quadratic, text)


def test_a_line_of_keys_without_a_value_end_is_read_in_linear_time() -> None:
    # The key=value rule looked for a digit or a symbol to the end of the run after each
    # "password=", though the value is 200 characters at most: quadratic, 5 s at 100 kB; this
    # line (1 MB) took minutes.
    code = (
        "from ctxpack.redaction import redact\n"
        f"out = redact('login password={TOKEN}1 ok\\n' + 'password=' * 111_112)\n"
        f"print({TOKEN!r} in out.text, out.text.startswith('login password=[REDACTED'))\n"
    )
    assert run_guarded(code).strip() == "False True"


def test_a_value_after_key_equals_is_found_up_to_its_length_limit() -> None:
    # The look for a digit or a symbol now stops where the value's 200 characters do.
    value = "a" * 199 + "1"
    assert redact(f"log password={value} done").text == (
        "log password=[REDACTED secret-assignment] done"
    )
    assert redact(f"log password={value}x done").text == f"log password={value}x done"
