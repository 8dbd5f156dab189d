"""Credential files a tool prints whole: a PostgreSQL password file's lines and a Google Cloud
service account's key file. Each secret is redacted; the colon-separated text that only looks
like a password file's line (times, addresses, paths, code) is left alone."""

from __future__ import annotations

import json

import pytest

from ctxpack.redaction import find_secrets, redact

PASSWORD = "S3cr3t-pa55"
KEY_ID = "8f14e45fceea167a5a36dedd4bea2543c3f4b2a1"  # 40 hex characters, as GCP writes it


def _kinds(text: str) -> list[str]:
    return [f.kind for f in find_secrets(text)]


@pytest.mark.parametrize(
    ("text", "password"),
    [
        (f"db.internal:5432:app:alice:{PASSWORD}", PASSWORD),
        # Every field but the password may be "*", which matches anything.
        (f"*:*:*:postgres:{PASSWORD}", PASSWORD),
        (f"localhost:*:*:replicator:{PASSWORD}", PASSWORD),
        (f"10.0.0.7:6432:billing:svc_billing:{PASSWORD}", PASSWORD),
        # A Unix socket's directory is a host; IPv6 is written in brackets.
        (f"/var/run/postgresql:5432:app:alice:{PASSWORD}", PASSWORD),
        (f"[::1]:5432:app:alice:{PASSWORD}", PASSWORD),
        # ":" and "\" are escaped with "\" in any field, the password's too.
        ("db.internal:5432:app:alice:pa\\:ss\\\\w0rd!", "pa\\:ss\\\\w0rd!"),
        (f"db.internal:5432:my\\:db:alice:{PASSWORD}", PASSWORD),
        # Numbered, as `cat -n` and `grep -n` print it.
        (f"     3\tdb.internal:5432:app:alice:{PASSWORD}", PASSWORD),
        (f"3:db.internal:5432:app:alice:{PASSWORD}", PASSWORD),
        (f"db.internal:5432:app:alice:{PASSWORD}\r\n", PASSWORD),
        # libpq reads the password to the end of the line: spaces in it are its own.
        ("db.internal:5432:app:alice:correct horse battery staple", "correct horse battery staple"),
        ("*:*:*:bob:pa ss\tw0rd \\:x", "pa ss\tw0rd \\:x"),
        ("     3\tlocalhost:*:*:replicator:two  spaces \r\n", "two  spaces"),
    ],
)
def test_a_password_file_line_has_its_password_redacted(text: str, password: str) -> None:
    out = redact(text)
    assert out.kinds == ("pgpass-password",)
    # Only the password: the host, port, database and user stay readable.
    assert out.text == text.replace(password, "[REDACTED pgpass-password]")


def test_each_line_of_a_password_file_is_redacted() -> None:
    # As `cat ~/.pgpass` prints it: the format's own comment, then the lines.
    comment = "# hostname:port:database:username:password\n"
    text = f"{comment}db.internal:5432:app:alice:{PASSWORD}\n*:*:*:bob:Xy9-other-pw\n"
    out = redact(text)
    assert out.text == (
        f"{comment}db.internal:5432:app:alice:[REDACTED pgpass-password]\n"
        "*:*:*:bob:[REDACTED pgpass-password]\n"
    )


@pytest.mark.parametrize(
    "text",
    [
        # Times and dates.
        "12:30:45",
        "2026-12-07 12:30:45,123 INFO started",
        "12:30:45:123:456",
        "Elapsed 01:02:03:04:05",
        # IPv6 addresses, with and without a port.
        "fe80::1ff:fe23:4567:890a",
        "2001:db8:85a3:0:0:8a2e:370:7334",
        "2001:db8::8a2e:370:7334",
        "[2001:db8::1]:5432",
        # host:port, URLs.
        "db.internal:5432",
        "http://example.com:8080/a:b:c",
        "redis://cache:6379/0",
        "listening on 0.0.0.0:8000",
        # /etc/passwd, /etc/group, /etc/shadow lines.
        "root:x:0:0:root:/root:/bin/bash",
        "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin",
        "docker:x:999:alice,bob",
        "root:*:19000:0:99999:7:::",
        # Python slices, C++ scopes, a dict, a ternary.
        "a[1:2:3]",
        "x = data[::2]",
        "std::vector<int>::iterator it;",
        "ns::a::b::c::d",
        '{"a":1,"b":2,"c":3,"d":4}',
        "cond ? a : b ? c : d",
        # A compiler's and a linter's messages, grep -rn output of code.
        "src/main.c:12:5: error: expected ';'",
        "ctxpack/redaction.py:120:1: E501 line too long",
        "src/app.py:12:a:b:c",
        "app.py:12:key:value:other",
        "README.md:3:see:the:docs",
        # A MAC address, a PATH, a Windows drive, a docker image with a digest.
        "00:1a:2b:3c:4d:5e",
        "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        "C:\\Users\\alice:5432:a:b:c",
        "python:3.12-slim",
        # A placeholder line (the file format itself, documented).
        "hostname:port:database:username:password",
        "localhost:5432:mydb:myuser:mypassword",
        # A log line's level or name before the time, and a message (with spaces) after it.
        "INFO:12:30:45:Server started on port 80",
        "app:09:15:02:job done in 3 s",
        "Makefile:12:3:4: error: expected one of x y",
    ],
)
def test_colon_separated_text_that_is_no_password_file_survives(text: str) -> None:
    assert "pgpass-password" not in _kinds(text)


@pytest.mark.parametrize(
    "text",
    [
        # Five fields, the second a number, that are no password file's line: a log's host,
        # port, method, status and message; grep -rn in a file without an extension, whose
        # line number is no port (PostgreSQL listens on a port of four or five digits).
        "node1:8080:GET:200:took 5 ms",
        "web-2:8443:POST:502:upstream timed out",
        "Makefile:12:build:test:lint",
        "Dockerfile:3:FROM:alpine:3.19",
        "LICENSE:7:a:b:c",
    ],
)
def test_five_colon_fields_that_are_no_password_file_line_survive(text: str) -> None:
    assert "pgpass-password" not in _kinds(text)
    assert redact(text).text == text


def _service_account(key_id: str = KEY_ID) -> dict[str, str]:
    body = "\n".join(["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" + "q" * 12] * 4)
    return {
        "type": "service_account",
        "project_id": "acme-prod",
        "private_key_id": key_id,
        "private_key": f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n",
        "client_email": "deployer@acme-prod.iam.gserviceaccount.com",
        "client_id": "112233445566778899001",
    }


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(_service_account(), indent=2),
        json.dumps(_service_account()),
        # JSON inside a JSON string (a tool's stdout captured in a log's record).
        json.dumps({"stdout": json.dumps(_service_account())}),
        f"private_key_id: {KEY_ID}",
        f'private_key_id = "{KEY_ID}"',
        f"GOOGLE_PRIVATE_KEY_ID={KEY_ID}",
        f'"privateKeyId": "{KEY_ID}"',
    ],
)
def test_a_service_account_key_id_is_redacted_with_its_private_key(text: str) -> None:
    out = redact(text)
    assert KEY_ID not in out.text
    assert "gcp-private-key-id" in out.kinds
    if "BEGIN PRIVATE KEY" in text:
        assert "private-key" in out.kinds
        assert "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" not in out.text
        # The account's names stay readable.
        assert "deployer@acme-prod.iam.gserviceaccount.com" in out.text


@pytest.mark.parametrize(
    "text",
    [
        # A git SHA, a digest, a key id that is not 40 hex characters, a name of the field.
        f"commit {KEY_ID}",
        f"sha1: {KEY_ID}",
        f"key_id: {KEY_ID}",
        "private_key_id: 8f14e45fceea167a",
        '"private_key_id": "${PRIVATE_KEY_ID}"',
        "private_key_id: " + "0" * 40,
        "the private_key_id field names the key",
    ],
)
def test_other_hex_ids_and_key_id_placeholders_survive(text: str) -> None:
    assert "gcp-private-key-id" not in _kinds(text)
