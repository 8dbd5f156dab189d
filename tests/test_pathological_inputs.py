"""Huge and strange tool outputs: runs of one character, one line of megabytes, keys without
values. Each goes through in about linear time and gives the result a short one gives."""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack import ConfigError, count_tokens
from ctxpack._internal import encodings
from ctxpack.redaction import redact
from ctxpack.signals.evidence import labelled_evidence_terms
from ctxpack.tokens import TiktokenCounter

from .helpers import ROOT, call, cpu_seconds, load_script, run_guarded

TOKEN = "Rk7Vq2Lx9Zm4Wt8Np3Hc6Yb1Fd5Gs0Ja"


@cache
def _encoding(name: str) -> Any:
    return encodings.load_encoding(name)


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


_SPACES = [
    " " * 1_000_000 + "x",
    "ls\n" + " " * 1_000_000 + "x",
    "x\n" + " " * 1_000_000,
    "done.\r\n" + "\u3000" * 1_000_000 + "\tok",
]


@pytest.mark.parametrize("model", ["gpt-4", "gpt-4o"])
@pytest.mark.parametrize("text", _SPACES, ids=range(len(_SPACES)))
def test_a_megabyte_of_spaces_is_counted(model: str, text: str) -> None:
    # tiktoken's split pattern raised "Max stack size exceeded for backtracking", a bare
    # ValueError from count_tokens, on a run of spaces this long before a non-space (o200k's
    # at the end of a text too).
    assert count_tokens(text, model=model) > 7_000


def test_a_megabyte_of_spaces_costs_what_tiktoken_counts_for_its_pieces() -> None:
    # The run is one piece but for its last space, which starts the next piece: cl100k's
    # tiktoken reads the run alone at the end of a text.
    enc = _encoding("cl100k_base")
    run = len(enc.encode(" " * 999_999))
    assert count_tokens(" " * 1_000_000 + "x", model="gpt-4") == run + len(enc.encode(" x"))


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
@pytest.mark.parametrize("text", [" " * 200_000 + "x", "a.\n" + "\t" * 200_000 + "b"])
def test_long_runs_that_tiktoken_reads_count_as_before(encoding: str, text: str) -> None:
    enc = _encoding(encoding)
    assert TiktokenCounter(encoding).count(text) == len(enc.encode(text))


_TEXT_PIECES = [" ", "   ", "\t\t\t", "\n", "\r\n", "x", "Ab", "12", ".", "'s", "\xa0\xa0\xa0"]
_TEXT_PIECES += ["\u3000", "\x1c", "é", "/", "<|endoftext|>"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_TEXT_PIECES), min_size=1, max_size=12).map("".join))
def test_texts_cut_around_runs_of_spaces_count_as_whole(text: str) -> None:
    # With runs of 3 spaces taken as long, every cut is tried on short texts that tiktoken
    # reads whole: the parts' counts add up to the text's.
    for encoding in ("cl100k_base", "o200k_base"):
        enc = _encoding(encoding)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(encodings, "LONG_SPACE_RUN", 2)
            patch.setattr(
                encodings,
                "_SPACE_RUN",
                re.compile(encodings._SPACE_RUN.pattern.replace("{10000,}", "{3,}")),
            )
            parts = encodings.split_space_runs(text, enc._pat_str)
        counted = sum(
            len(enc._encode_single_piece(p)) if whole else len(enc.encode(p, disallowed_special=()))
            for p, whole in parts
        )
        assert counted == len(enc.encode(text, disallowed_special=())), (encoding, parts)


def test_a_tool_output_holding_a_lone_surrogate_is_refused_naming_the_text() -> None:
    # A UnicodeEncodeError escaped from hashing the original for its artifact id.
    from ctxpack.filters import ToolOutputFilter

    text = "collected 80 items\n" * 100 + "bad byte \ud800 here\n"
    with pytest.raises(
        ConfigError, match=r"text: holds a lone surrogate U\+D800 at character 1909"
    ):
        ToolOutputFilter()(text, command="pytest")


def test_a_long_run_without_a_path_is_read_for_evidence_in_linear_time() -> None:
    # The path pattern was tried from each character of a run of name characters and read to
    # its end each time: quadratic, an extractive digest of 10 kB of one letter took over 30 s
    # and 100 kB of dashes 46 s. These (400 kB of tool output in all) took many minutes.
    code = (
        "from ctxpack import FunctionCall, Message, ToolCall\n"
        "from ctxpack.editing import extractive_digest, evidence_terms\n"
        'args = \'{"command": "pytest tests/test_auth.py"}\'\n'
        "call = ToolCall(id='c1', function=FunctionCall(name='bash', arguments=args))\n"
        "out = 'a' * 100_000 + '! ' + 'a-' * 50_000 + '! ' + '/' * 100_000 + ' ' + '-' * 100_000\n"
        "out = '<returncode>1</returncode>\\n' + out\n"
        "digest = extractive_digest([Message(role='user', content='Fix it.'),\n"
        "    Message(role='assistant', content='Reading auth/token.py.', tool_calls=[call]),\n"
        "    Message(role='tool', tool_call_id='c1', content=out)])\n"
        "print(digest.endswith('## Identifiers, paths and numbers named\\nauth/token.py'))\n"
        "print(evidence_terms('postgres://dbhost' + 'u:' * 50_000 + '/' * 100_000 + ' x/y.py'))\n"
    )
    assert run_guarded(code).split() == ["True", "['dbhostu',", "'x/y.py']"]


_PATH_PIECES = ["a", "B", "_", "-", ".", "/", "py", "txt", "c", " ", ":", "é", "1", "//", "x.py"]
_QUADRATIC_PATH = re.compile(
    r"(?:[\w.-]*/)+[\w.-]+|\b[\w-]+\.(?:py|pyx|c|h|cfg|toml|ini|txt|rst|md|json|yml|yaml|js|ts"
    r"|html)\b"
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PATH_PIECES), max_size=14).map("".join))
def test_the_linear_path_pattern_finds_the_paths_the_quadratic_one_did(text: str) -> None:
    paths = [(match.start(), match.group().strip("./")) for match in _QUADRATIC_PATH.finditer(text)]
    expected = [path for path in dict.fromkeys(path for _, path in paths) if len(path) >= 4]
    expected = [path for path in expected if not path.replace("/", "").isdigit()]
    found = [term for kind, term in labelled_evidence_terms(text) if kind == "path"]
    assert found == expected


# The rules that read a value after a key (key=value, generic-api-key, an environment variable
# naming a secret) tried it again at each shorter length when no end followed it: a line of
# "secret=" cost seven times the same line without "=", a line of "X_AUTH=" five times. They now
# read it once, in a lookahead matched by back-reference. The test below holds them to that
# form and to what the old form found; what a line costs (a constant factor, as a value is at
# most 200 characters, so too close to noise for a timed test) is benchmarks/pathological_lines.py.
_OLD_KEY_VALUE = (
    r"((?=[^\s'\"&;,()\[\]{}<>\\]{0,199}[\d!#$%*+/:=?@^~-])[^\s'\"&;,()\[\]{}<>\\]{4,200})"
)
_VALUE_PIECES = ["secret", "api_key", "=", "a", "1", " ", "(", "\n", '"', ";", "\\", "-", ":"]
_VALUE_PIECES += ["x" * 9, "y" * 50, "z" * 97, ".", "API_KEY", "X_AUTH", ")", "`", "'"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_VALUE_PIECES), max_size=16).map("".join))
def test_a_value_read_once_is_the_value_read_at_each_length(text: str) -> None:
    from ctxpack._internal.secret_rules import OWN_RULES

    rules = json.loads((ROOT / "ctxpack" / "data" / "secret_rules.json").read_text("utf-8"))
    generic = next(r["regex"] for r in rules["rules"] if r["id"] == "generic-api-key")
    key_value = [r["regex"] for r in OWN_RULES if r["id"] == "secret-assignment"][1]
    quadratic, linear = _vendoring().LINEAR[0]  # type: ignore[attr-defined]
    old_key_value = key_value.replace(
        r"(?=[^\s'\"&;,()\[\]{}<>\\]{0,199}?[\d!#$%*+/:=?@^~-])"
        r"(?=([^\s'\"&;,()\[\]{}<>\\]{4,200}))\1",
        _OLD_KEY_VALUE,
    )
    for new, old in ((generic, generic.replace(linear, quadratic)), (key_value, old_key_value)):
        assert new != old
        found = [(m.span(), m.span(1)) for m in re.finditer(new, text)]
        assert found == [(m.span(), m.span(1)) for m in re.finditer(old, text)], (new, text)
    env = next(r["regex"] for r in OWN_RULES if r["id"] == "secret-env-prefix")
    old_env = env.replace(r"(?=([^\s'\"();,`\[\\]{4,200}))\3", r"([^\s'\"();,`\[\\]{4,200})")
    assert old_env != env
    found = [(m.span(), m.span(3)) for m in re.finditer(env, text)]
    assert found == [(m.span(), m.span(3)) for m in re.finditer(old_env, text)], text


def test_a_megabyte_of_short_lines_is_filtered_at_the_cost_of_its_bytes() -> None:
    # A test run's lines were each searched for some 30 patterns, one at a time: an output of
    # 200,000 empty lines cost 40 times as much as one of the same size in lines of 50
    # characters (a megabyte of them took 5 s); one search a line, it costs under 20 times.
    from ctxpack.filters import ToolOutputFilter

    keep = ToolOutputFilter()
    texts = iter(range(100))

    def cost(line: str) -> float:
        text = line * (200_000 // len(line))
        return cpu_seconds(lambda: keep(f"{text}{next(texts)} passed in 1s\n", command="pytest"))

    assert cost("\n") < 28 * cost("collected 2 items, as the log of a test run says\n")


def test_a_tool_output_of_empty_lines_arrives_at_the_cost_of_its_bytes() -> None:
    # Each filter's detect and the file view's extract did Python work on every line, empty or
    # not: 300,000 newlines read back by read_file cost 27 times as much as the same size in
    # lines of 50 characters (4 s a megabyte); lines that cannot match are skipped early.
    from ctxpack import Session

    def cost(line: str) -> float:
        text = line * (300_000 // len(line))

        def session() -> Session:
            s = Session(model="gpt-4o")
            s.append({"role": "user", "content": "please fix the expires_at handling"})
            s.append({"role": "assistant", "content": None, "tool_calls": [call("c1", "read")]})
            return s

        sessions = iter([session() for _ in range(3)])
        return cpu_seconds(
            lambda: next(sessions).append({"role": "tool", "tool_call_id": "c1", "content": text})
        )

    assert cost("\n") < 10 * cost("    return self.session.refresh(token, expires)\n")
