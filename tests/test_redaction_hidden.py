"""Secrets whose shape a tool's output hides from the rules: terminal colour codes inside or
around them (jq -C, grep --color, git diff --color), text read as UTF-16 with a NUL between
its characters, JSON escaped twice, a private key encoded in base64 (a kubeconfig's
client-key-data). The filters remove colour codes, so a secret they cut went to the model
whole."""

from __future__ import annotations

import base64
import json
import random
import string
from typing import Any

import pytest

from ctxpack import Session
from ctxpack.redaction import redact

GITHUB_TOKEN = "ghp_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"
PASSWORD = "Vq8nT2zLp4Rw"

# What jq -C prints for {"password": PASSWORD}, and grep --color=always marking a token's
# prefix or a password's key: each colour code a terminal reads and a filter removes.
JQ_COLOURED = (
    '\x1b[1;39m{\n  \x1b[0m\x1b[34;1m"password"\x1b[0m\x1b[1;39m: \x1b[0m'
    f'\x1b[0;32m"{PASSWORD}"\x1b[0m\x1b[1;39m\n\x1b[1;39m}}\x1b[0m\n'
)
GREP_TOKEN = (
    "\x1b[35m\x1b[Kconfig.yml\x1b[m\x1b[K\x1b[36m\x1b[K:\x1b[m\x1b[K  token: "
    f"\x1b[01;31m\x1b[K{GITHUB_TOKEN[:4]}\x1b[m\x1b[K{GITHUB_TOKEN[4:]}\n"
)
GREP_KEY = "\x1b[32m\x1b[K2\x1b[m\x1b[K:DB_\x1b[01;31m\x1b[KPASSWORD\x1b[m\x1b[K=" + PASSWORD
DIFF = f"\x1b[1m--- a/.env\x1b[m\n\x1b[31m-DB_PASSWORD={PASSWORD}\x1b[m\n"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (JQ_COLOURED, PASSWORD),
        (GREP_TOKEN, GITHUB_TOKEN[4:]),
        (GREP_KEY, PASSWORD),
        (DIFF, PASSWORD),
        # A link a terminal shows (OSC 8) around the line.
        (f"\x1b]8;;file:///app/.env\x07DB_PASSWORD={PASSWORD}\x1b]8;;\x07", PASSWORD),
    ],
    ids=["jq -C", "grep --color token", "grep --color key", "git diff --color", "osc link"],
)
def test_a_secret_among_terminal_colour_codes_is_replaced(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out.text.replace("\x1b[m\x1b[K", ""), out.text
    assert "[REDACTED " in out.text


def test_the_codes_around_a_secret_stay_where_they_were() -> None:
    # The span found without the codes is mapped back: the codes inside the secret go with
    # it, those around it stay.
    token = redact(GREP_TOKEN).text
    assert token.endswith("  token: \x1b[01;31m\x1b[K[REDACTED github-pat]\n")
    assert token.startswith("\x1b[35m\x1b[Kconfig.yml\x1b[m\x1b[K\x1b[36m\x1b[K:\x1b[m\x1b[K")
    diff = "\x1b[1m--- a/.env\x1b[m\n\x1b[31m-DB_PASSWORD=[REDACTED secret-assignment]\x1b[m\n"
    assert redact(DIFF).text == diff


def _exchange(call_id: str, text: str, command: str = "cat config") -> list[dict[str, Any]]:
    args = json.dumps({"command": command})
    call = {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": args}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": text},
    ]


def _tool_turn(text: str, command: str = "cat config") -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Why does the deploy fail?"},
        *_exchange("c1", text, command),
    ]


def test_a_filter_removing_colour_codes_never_joins_a_secret_for_the_model() -> None:
    # grep --color=always marks the match "ghp_" inside the token; the listing filter removes
    # the codes from the lines it keeps, and sent the token whole.
    lines = [f"src/module_{i}.py:{i}: ordinary line" for i in range(300)]
    text = "\n".join([*lines[:150], GREP_TOKEN.rstrip("\n"), *lines[150:]])
    session = Session(model="gpt-4o")
    session.extend(_tool_turn(text, "grep -rn --color=always ghp_ ."))
    assert any(r.shortened for r in session.records)
    sent = json.dumps(session.render().to_openai()) + json.dumps(session.render().to_anthropic())
    assert GITHUB_TOKEN[4:] not in sent
    assert GITHUB_TOKEN[4:] not in "".join(m.text for m in session.compact())


def test_a_value_found_is_hunted_after_a_colour_code() -> None:
    # A later output colours the bare value: the letter ending the code ("m") touches it.
    session = Session(model="gpt-4o", filters=False)
    session.extend(_tool_turn(f"DB_PASSWORD={PASSWORD}\n"))
    session.extend(_exchange("c2", f"\x1b[32m{PASSWORD}\x1b[0m\n", "echo $DB_PASSWORD"))
    sent = json.dumps(session.render().to_openai())
    assert PASSWORD not in sent
    assert "[REDACTED secret-assignment]" in session.compact()[-1].text


def test_text_read_as_utf16_is_read_without_its_nuls() -> None:
    # A file PowerShell wrote (UTF-16LE) decoded as UTF-8: a NUL after every ASCII character.
    text = f"DB_PASSWORD={PASSWORD}\r\nTOKEN={GITHUB_TOKEN}\r\n".encode("utf-16-le").decode()
    out = redact(text)
    assert len(out.kinds) == 2 and out.kinds[1] == "github-pat"
    for secret in (PASSWORD, GITHUB_TOKEN):
        assert "\x00".join(secret[2:]) not in out.text, out.text


def test_json_escaped_twice_is_read_through() -> None:
    # A tool's JSON holding kubectl's JSON, which holds the applied manifest as JSON again.
    applied = {"kind": "Secret", "stringData": {"DB_PASSWORD": PASSWORD}}
    annotations = {"kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied)}
    stdout = json.dumps({"metadata": {"annotations": annotations}}, indent=2)
    text = json.dumps({"stdout": stdout, "exit_code": 0})
    out = redact(text)
    assert PASSWORD not in out.text, out.text
    assert json.loads(json.loads(out.text)["stdout"])["metadata"]  # still JSON
    assert out.kinds == ("secret-field",)


def _private_key(kind: str = "RSA ") -> str:
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits + "+/"
    body = ["".join(rng.choice(alphabet) for _ in range(64)) for _ in range(8)]
    return "\n".join(
        [f"-----BEGIN {kind}PRIVATE KEY-----", *body, f"-----END {kind}PRIVATE KEY-----\n"]
    )


@pytest.mark.parametrize("kind", ["RSA ", "EC ", "", "OPENSSH ", "ENCRYPTED "])
def test_a_private_key_in_base64_is_replaced(kind: str) -> None:
    # kubectl config view --raw, a kubeconfig: the client's key as base64 of its PEM block.
    encoded = base64.b64encode(_private_key(kind).encode()).decode()
    cert = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB" + b"x" * 300).decode()
    text = (
        "users:\n- name: admin\n  user:\n"
        f"    client-certificate-data: {cert}\n    client-key-data: {encoded}\n"
    )
    out = redact(text)
    assert encoded not in out.text and encoded[40:80] not in out.text
    assert out.text.endswith("client-key-data: [REDACTED private-key]\n")
    assert cert in out.text  # a certificate is no secret


@pytest.mark.parametrize("offset", [0, 1, 2])
def test_a_private_key_anywhere_in_base64_is_replaced(offset: int) -> None:
    # A whole file encoded (a Secret's tls.key after comments), wrapped as base64(1) wraps.
    data = ("#" * (offset + 3) + "\n" + _private_key()).encode()
    encoded = base64.encodebytes(data).decode()
    out = redact(f"$ base64 key.pem\n{encoded}$ echo done\n")
    lines = encoded.splitlines()
    assert not any(line in out.text for line in lines[1:]), out.text
    assert out.text.endswith("$ echo done\n")


def test_base64_that_holds_no_private_key_is_left() -> None:
    image = base64.b64encode(bytes(random.Random(3).randrange(256) for _ in range(3000))).decode()
    public = base64.b64encode(b"-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOC").decode()
    text = f"data:image/png;base64,{image}\nkey: {public}\n"
    assert redact(text).text == text


# Where mini-swe-agent cuts a long output: its head, how much it left out, its tail.
ELIDED = (
    "\n</output_head>\n<elided_chars>\n5210 characters elided\n</elided_chars>\n<output_tail>\n"
)
ANTHROPIC_KEY = (
    "sk-ant-api03-" + "Zq8Kw3LmNsRtYuVb7Mc9Kd1Pf4Gh6Jw0Ye3Ua5Si8Ro2Qt7Np1Mv4Lz6Kx9Cy3Bw5Ds7Fe0"
)


@pytest.mark.parametrize("at", [6, 20, 30])
def test_a_token_cut_by_the_harness_is_replaced_on_both_sides(at: int) -> None:
    # The head ends inside the token, the tail resumes inside it: each part is too short for
    # the format's rule, and a GitHub token's last six characters are a checksum.
    text = (
        f"<output_head>\nHOME=/root\nremote: {GITHUB_TOKEN[:at]}{ELIDED}{GITHUB_TOKEN[-8:]}\nX=1\n"
    )
    out = redact(text)
    assert GITHUB_TOKEN[-8:] not in out.text, out.text
    assert GITHUB_TOKEN[4:at] not in out.text or at < 8  # a part too short to tell
    assert "5210 characters elided" in out.text and out.text.endswith("\nX=1\n")


@pytest.mark.parametrize(
    "text",
    [
        f'client = Anthropic(api_key="{ANTHROPIC_KEY[:50]}',
        f"sent {ANTHROPIC_KEY[:50]}\n[output truncated: 40 kB]\n",
        f"key {ANTHROPIC_KEY[:50]}... [2000 characters truncated]",
        f"{GITHUB_TOKEN[:24]}\n",
    ],
    ids=["end", "truncation line", "inline", "bare"],
)
def test_a_token_cut_at_the_end_of_what_is_shown_is_replaced(text: str) -> None:
    out = redact(text)
    assert "Zq8Kw3LmNs" not in out.text and GITHUB_TOKEN[8:24] not in out.text, out.text


@pytest.mark.parametrize(
    "text",
    [
        "npm run build\n> npm_lifecycle_event\n",
        "GitHub tokens start with ghp_\n",
        "$ cat ghp_import-2.1.0.dist-info/top_level.txt\nghp_import\n",
        "EXPORT TO ASIA\n",
        f"{GITHUB_TOKEN[:24]} is not ended by a cut, and leads nowhere\n",
    ],
)
def test_prefixes_not_cut_by_the_output_are_left(text: str) -> None:
    assert redact(text).text == text
