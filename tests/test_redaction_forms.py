"""Secrets in the forms configuration files, HTTP logs, shells and SQL write them, and the
lines beside them that must survive: a value found once is replaced elsewhere only where it
cannot be an ordinary word."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
from collections.abc import Callable
from typing import Any

import pytest

import ctxpack
from ctxpack.redaction import find_secrets, redact, redact_message

TOKEN = "Rk7Vq2Lx9Zm4Wt8Np3Hc6Yb1Fd5Gs0Ja"  # random-looking, no provider's format
PASSWORD = "Zq8#vLp;2x,R(y)9"  # the symbols a config line's value may hold


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        (f"DB_PASSWORD={PASSWORD}\n", PASSWORD, "secret-assignment"),
        (f"password: {PASSWORD} # prod\n", PASSWORD, "secret-assignment"),
        ("[client]\nuser = app\npassword = hunter2!x\n", "hunter2!x", "secret-assignment"),
        ("[client]\npassword = Zq8vLp2xRy9\n", "Zq8vLp2xRy9", "secret-assignment"),
        ("    environment:\n      - POSTGRES_PASSWORD=pg-4xQ7\n", "pg-4xQ7", "secret-assignment"),
        ('{\n  "password": "pg-4xQ7w",\n  "user": "app"\n}\n', "pg-4xQ7w", "secret-field"),
        ('{"user":"app","client_secret":"pg-4xQ7w","ttl":3}', "pg-4xQ7w", "secret-field"),
        ("log: {'api_key': 'pg-4xQ7w', 'retries': 3}", "pg-4xQ7w", "secret-field"),
        ('"{\\"password\\": \\"pg-4xQ7w\\"}"', "pg-4xQ7w", "secret-field"),
        ("REDIS_URL=redis://:pg-4xQ7w@cache:6379/0", "pg-4xQ7w", "url-credentials"),
        # A password written into a URL unescaped, as a .env or a compose file often holds it.
        (
            "DATABASE_URL=postgres://app:Vq8#nT2!zLp4@db:5432/prod",
            "Vq8#nT2!zLp4",
            "url-credentials",
        ),
        (f"> Cookie: theme=dark; sessionid={TOKEN}\n", TOKEN, "cookie"),
        (f"< Set-Cookie: sid={TOKEN}; Path=/; HttpOnly\n", TOKEN, "cookie"),
        (f"curl --cookie 'sid={TOKEN}' https://example.com", TOKEN, "cookie"),
        (f"> x-api-key: {TOKEN}\n", TOKEN, "api-key-header"),
        (f"Private-Token: {TOKEN}\n", TOKEN, "api-key-header"),
        ("machine api.example.com\n  login app\n  password pg-4xQ7w", "pg-4xQ7w", "netrc-password"),
        ("machine github.com login bot password pg-4xQ7w", "pg-4xQ7w", "netrc-password"),
        ("$ docker login -u bot -p pg-4xQ7w registry.io", "pg-4xQ7w", "password-short-option"),
        ("CREATE ROLE app WITH LOGIN PASSWORD 'pg-4x''Q7w';", "pg-4x''Q7w", "sql-password"),
        ("ALTER USER postgres PASSWORD 'pg-4xQ7w';", "pg-4xQ7w", "sql-password"),
        ("CREATE USER 'app'@'%' IDENTIFIED BY 'pg-4xQ7w';", "pg-4xQ7w", "sql-password"),
        (
            "ALTER USER 'app'@'%' IDENTIFIED WITH caching_sha2_password BY 'pg-4xQ7w';",
            "pg-4xQ7w",
            "sql-password",
        ),
        ("SET PASSWORD FOR 'app'@'%' = 'pg-4xQ7w';", "pg-4xQ7w", "sql-password"),
        # Upper case with underscores, as an environment variable's name is, yet no such name.
        ("CREATE USER ops IDENTIFIED BY 'ADMIN_PASS_2024';", "ADMIN_PASS_2024", "sql-password"),
        # The line as grep -n, grep -rn and cat -n print it, and as the retrieve tool quotes it.
        ("3:DB_PASSWORD=pg-4xQ7w!\n", "pg-4xQ7w!", "secret-assignment"),
        ("./.env:3:DB_PASSWORD=pg-4xQ7w!\n", "pg-4xQ7w!", "secret-assignment"),
        ("     2\tDB_PASSWORD=pg-4xQ7w!\n", "pg-4xQ7w!", "secret-assignment"),
        ("config.yaml:12:  password: pg-4xQ7w!\n", "pg-4xQ7w!", "secret-assignment"),
        # An environment variable anywhere on a line: docker inspect, a log, escaped stdout.
        (
            '    "Env": ["DB_PASSWORD=pg-4xQ7w!", "PATH=/usr/bin"],',
            "pg-4xQ7w!",
            "secret-env-prefix",
        ),
        ("12:00:01 env DB_PASSWORD=pg-4xQ7w! USER=app\n", "pg-4xQ7w!", "secret-env-prefix"),
        ('{"stdout": "DB_PASSWORD=pg-4xQ7w!\\n", "code": 0}', "pg-4xQ7w!", "secret-env-prefix"),
        ('{"env": "A=1\\nDB_PASSWORD=pg-4xQ7w!\\nB=2"}', "pg-4xQ7w!", "secret-env-prefix"),
        # key=value inside a line, in any case: a log, a URL's query.
        ("retrying with password=pg-4xQ7w! in 5s", "pg-4xQ7w!", "secret-assignment"),
        ("GET /v1/items?user=app&api_key=pg4xQ7w2026&page=2", "pg4xQ7w2026", "secret-assignment"),
        # A table's row: Vault's "Key  Value" (vault kv get, vault read), a drawn table.
        (
            "Key                Value\n---                -----\nlease_duration     768h\n"
            "password           A1a-8GAmZZDm8sGaGdbD\nusername           v-root-ro-x\n",
            "A1a-8GAmZZDm8sGaGdbD",
            "secret-assignment",
        ),
        ("====== Data ======\napi_key     pg4xQ7w2026\n", "pg4xQ7w2026", "secret-assignment"),
        ("| password | pg-4xQ7w! |\n", "pg-4xQ7w!", "secret-assignment"),
        ("│ DB_PASSWORD      │ pg-4xQ7w!    │\n", "pg-4xQ7w!", "secret-assignment"),
        ("user\tpassword\napp\tx\npassword\tpg-4xQ7w!\n", "pg-4xQ7w!", "secret-assignment"),
    ],
)
def test_a_secret_in_a_config_line_header_or_command_is_redacted(
    text: str, secret: str, kind: str
) -> None:
    out = redact(text)
    assert secret not in out.text
    assert kind in out.kinds


@pytest.mark.parametrize(
    "password",
    ["Vq8#nT2!zLp4", "p@ss:w0rd-9", "pg@4xQ7w", "a:b#c@d-9x"],
)
def test_a_password_written_into_a_url_unescaped_is_redacted_whole(password: str) -> None:
    # Written into a URL unescaped, a password's "#", ":" or "@" once ended the match: the
    # rest of the password reached the model.
    out = redact(f"DATABASE_URL=postgres://app:{password}@db.internal:5432/prod\n")
    assert (
        out.text == "DATABASE_URL=postgres://app:[REDACTED url-credentials]@db.internal:5432/prod\n"
    )


@pytest.mark.parametrize(
    "text",
    [
        "see https://example.com/#section:intro@top for details",
        "git@github.com:acme/api.git",
        "ssh://git@github.com:22/acme/api.git",
        "http://localhost:8080/#/login@v2",
        "email me at app@example.com or http://host:80/",
    ],
)
def test_urls_without_credentials_stay(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    "text",
    [
        # Code: a name, a call, an attribute, an index, a keyword argument.
        "conn = psycopg.connect(host=host, password=password)\n",
        "        password=password,\n",
        "password = None\n",
        "password = args.password\n",
        "password = getpass.getpass()\n",
        "api_key = os.environ['OPENAI_API_KEY']\n",
        "    token = self._token\n",
        "api_key = api_keys[0]\n",
        "password = hash_password(raw)\n",
        "secret = secrets.token_hex(32)\n",
        "        'PASSWORD': os.environ.get('DB_PASSWORD', ''),\n",
        "{'password': password}\n",
        "os.environ.update(OPENAI_API_KEY=api_key)\n",
        'DB_PASSWORD=os.environ["DB_PASSWORD"]\n',
        "headers = dict(API_TOKEN=get_token())\n",
        "login(user=user, password=password_2)\n",
        "PWD=/srv/app OLDPWD=/tmp make\n",
        'Add `OPENAI_API_KEY="My API Key"` to your `.env` file.\n',
        '    api_key="lm-studio",  # any string\n',
        '        auth_password="open sesame",\n',
        '    private_key: "_RSAPrivateKey",\n',
        "def sign(base: str, resource_owner_secret: str):\n",
        'ENV_API_KEY = "ANTHROPIC_API_KEY"\n',
        'HEADER = {"x-api-key": "X-API-Key"}\n',
        '    "pwd": "IPython.core.magics.osm:OSMagics",\n',
        "    PWD: '/Users/maciej',\n",
        'return f"machine {host} login {self.user} password {self.password}"\n',
        "# the default password callback if you pass an encrypted key\n",
        "Set the string for the name record identified by 'nameID'.\n",
        'password = ":****"\n',
        '# Input:  {"secret": "value", "plain": "x"}\n',
        # References and templates.
        "password: ${{ secrets.DB_PASSWORD }}\n",
        "  - POSTGRES_PASSWORD=${POSTGRES_PASSWORD}\n",
        "x-api-key: <your-key>\n",
        # Keys that only contain a secret's name, and prose.
        '"password_hash": "pbkdf2:sha256"\n',
        "PASSWORD_MIN_LENGTH = 12\n",
        "  secretKeyRef:\n    name: db\n",
        "The default login page asks for the password twice.\n",
        "machine learning models default to password-free login\n",
        "GRANT ALL ON db TO app WITH GRANT OPTION;\n",
        # Cookies that identify nothing: attributes, flags, a locale.
        "Set-Cookie: lang=en-US; Path=/; Max-Age=3600\n",
        "Cookie: theme=dark; sidebar=collapsed\n",
        # Tables whose secret-named rows hold a state, a size, a mask or a description.
        "password           required\n",
        "secret_key         12 bytes\n",
        "| password | ******** |\n",
        "  --password         Password to log in with\n",
        "api_key            <none>\n",
        "passlib            1.7.4\n",
    ],
)
def test_code_references_and_prose_beside_secret_names_survive(text: str) -> None:
    assert [f.kind for f in find_secrets(text)] == []


def test_a_word_assigned_to_a_password_is_replaced_only_there() -> None:
    # The docker-compose file an agent edits: "postgres" is also the image and the user.
    text = (
        "services:\n  db:\n    image: postgres:15\n    environment:\n"
        "      POSTGRES_PASSWORD: postgres\n      POSTGRES_USER: postgres\n"
    )
    out = redact(text)
    assert out.text == text.replace(
        "POSTGRES_PASSWORD: postgres", "POSTGRES_PASSWORD: [REDACTED secret-assignment]"
    )


def test_a_random_value_is_replaced_everywhere_but_inside_a_longer_word() -> None:
    text = "DB_PASSWORD=pg-4xQ7w-2026\necho pg-4xQ7w-2026\nbuild pg-4xQ7w-20260\n"
    out = redact(text)
    assert out.text == (
        "DB_PASSWORD=[REDACTED secret-assignment]\necho [REDACTED secret-assignment]\n"
        "build pg-4xQ7w-20260\n"
    )


@pytest.mark.parametrize(
    "text",
    [
        "-----BEGIN RSA PRIVATE KEY-----\n{a}\n{b}\n",
        "$ tail -3 id_rsa\n{a}\n{b}\n-----END RSA PRIVATE KEY-----\n",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{a}\n{b}",
    ],
    ids=["cut before END", "tail without BEGIN", "cut, no final newline"],
)
def test_a_private_key_cut_by_the_output_is_redacted(text: str) -> None:
    a, b = TOKEN * 2, TOKEN[::-1] + "=="
    out = redact(text.format(a=a, b=b))
    assert a not in out.text and b not in out.text
    assert out.kinds == ("private-key",)


@pytest.mark.parametrize(
    "number",
    [
        lambda i: f"{i:6d}\t",  # cat -n
        lambda i: f"{i}:",  # grep -n
        lambda i: f"{i:6d}\u2192",  # a read tool's numbered lines
        lambda i: f"{i} | ",  # a selection's file lines
    ],
    ids=["cat -n", "grep -n", "read tool", "selection"],
)
@pytest.mark.parametrize("cut", ["head", "tail"])
def test_a_private_key_cut_by_a_numbered_output_is_redacted(
    number: Callable[[int], str], cut: str
) -> None:
    # The cut-key rules read bare base64 lines: a line number before each let 3 of 4 through.
    lines = [
        "-----BEGIN RSA PRIVATE KEY-----",
        TOKEN * 2,
        TOKEN[::-1] + "==",
        TOKEN + "Qw",
        "-----END RSA PRIVATE KEY-----",
    ]
    shown = list(enumerate(lines, 10))[:4] if cut == "head" else list(enumerate(lines, 10))[1:]
    out = redact("\n".join(number(i) + line for i, line in shown))
    assert not any(line in out.text for line in lines[1:4]), out.text
    assert out.kinds == ("private-key",)


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        (
            '{"SecretAccessKey": "Xq7\\/ZbT2k9LmW4pR8sVt2Lq9ZxW4mKp7YcN3bHd6", "AccessKeyId": '
            '"ASIAXAMPLE7KQ2M4N6P8"}',
            "ZbT2k9LmW4pR8sVt2Lq9ZxW4mKp7YcN3bHd6",
        ),
        ('{"DATABASE_URL": "postgres:\\/\\/app:s3cr3t-pw-9921@db:5432\\/prod"}', "s3cr3t-pw-9921"),
        ('{"cache": "redis:\\/\\/:rd-8Qw2-pass@cache:6379"}', "rd-8Qw2-pass"),
    ],
    ids=["sts credentials", "database url", "redis url"],
)
def test_json_that_escapes_its_slashes_is_read_through(text: str, gone: str) -> None:
    # PHP's json_encode writes every "/" as "\/": the URL and key rules did not match.
    out = redact(text)
    assert gone not in out.text, out.text
    assert out.text.count('"') == text.count('"')  # the JSON around the secret stays


def _pem_body(seed: int, width: int = 64, lines: int = 12) -> list[str]:
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + "+/"
    return ["".join(rng.choice(alphabet) for _ in range(width)) for _ in range(lines)]


@pytest.mark.parametrize(
    "shown",
    [
        lambda body: "page 2 of id_rsa:\n" + "\n".join(body[3:9]) + "\n(more)",
        lambda body: "\n".join(f"{i:6d}\t{line}" for i, line in enumerate(body[3:9], 8)),
        lambda body: "\n".join(f"{i}\u2192{line}" for i, line in enumerate(body[3:9], 8)),
        lambda body: "\n".join([*body[4:], "tK9w=="]),  # its middle and short last line
    ],
    ids=["paged read", "cat -n", "read tool", "up to the last line"],
)
def test_a_private_keys_middle_lines_alone_are_redacted(shown: Callable[[list[str]], str]) -> None:
    # A paged read of a key file (offset and limit, sed -n 5,20p) shows neither BEGIN nor END:
    # the middle of an RSA key holds most of its primes, and it went through whole.
    for width in (64, 70):  # PEM's width, OpenSSH's
        body = _pem_body(width, width)
        out = redact(shown(body))
        assert not any(line in out.text for line in body), out.text
        assert out.kinds == ("private-key",)


@pytest.mark.parametrize(
    "text",
    [
        "-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n",
        "-----BEGIN CERTIFICATE-----\n{body}\n",  # cut before END
        "{body}\n-----END CERTIFICATE-----\n",  # its tail
        "-----BEGIN PUBLIC KEY-----\n{body}\n-----END PUBLIC KEY-----\n",
        "three lines are not a key's body:\n{three}\n",
        "sha256 digests:\n{hexes}\n",
    ],
    ids=["certificate", "certificate head", "certificate tail", "public key", "3 lines", "hex"],
)
def test_base64_lines_that_are_no_private_key_stay(text: str) -> None:
    body = _pem_body(7)
    hexes = "\n".join(hashlib.sha256(line.encode()).hexdigest() for line in body)
    filled = text.format(body="\n".join(body), three="\n".join(body[:3]), hexes=hexes)
    assert find_secrets(filled) == ()


def test_a_certificate_is_no_private_key() -> None:
    cert = f"-----BEGIN CERTIFICATE-----\n{TOKEN * 2}\n-----END CERTIFICATE-----\n"
    assert find_secrets(cert) == ()


TEXT_SECRET = "DB_PASSWORD=pg-4xQ7w!\nGITHUB_TOKEN=ghp_R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"


@pytest.mark.parametrize(
    "block",
    [
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "{}"}},
        {"type": "document", "source": {"type": "content", "content": "{}"}},
        {
            "type": "document",
            "source": {"type": "content", "content": [{"type": "text", "text": "{}"}]},
        },
        {
            "type": "search_result",
            "source": "s",
            "title": "t",
            "content": [{"type": "text", "text": "{}"}],
        },
        {"type": "document", "title": "{}", "source": {"type": "url", "url": "https://x/a.pdf"}},
    ],
    ids=["text document", "content string", "content blocks", "search result", "title"],
)
def test_every_text_of_an_anthropic_tool_result_is_redacted(block: dict[str, Any]) -> None:
    # A tool_result may hold documents and search results: their texts reach the model as
    # a text block's do.
    filled = json.loads(json.dumps(block).replace("{}", json.dumps(TEXT_SECRET)[1:-1]))
    use = {"type": "tool_use", "id": "t1", "name": "read", "input": {}}
    history = [
        {"role": "user", "content": "read the config"},
        {"role": "assistant", "content": [use]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [filled]}],
        },
    ]
    result = ctxpack.pack(ctxpack.from_anthropic(history), budget=4000)
    for sent in (json.dumps(result.to_anthropic()), json.dumps(result.to_openai())):
        assert "pg-4xQ7w" not in sent and "ghp_R8sV" not in sent
    assert "secrets replaced" in result.decisions_for(result.messages[-1].id)[0].reason


def test_a_text_file_sent_as_data_is_redacted_and_stays_base64() -> None:
    data = "data:text/plain;base64," + base64.b64encode(TEXT_SECRET.encode()).decode()
    message = ctxpack.Message(
        role="tool",
        tool_call_id="c1",
        content=[{"type": "file", "file": {"filename": "prod.env", "file_data": data}}],
    )
    redacted, found = redact_message(message)
    sent = redacted.content[0]["file"]["file_data"]  # type: ignore[index]
    head, _, payload = sent.partition(",")
    text = base64.b64decode(payload).decode()
    assert head == "data:text/plain;base64" and len(found) == 2
    assert "pg-4xQ7w" not in text and "[REDACTED github-pat]" in text


@pytest.mark.parametrize("cut", [4, 11, 30])
def test_a_secret_cut_between_two_text_parts_is_redacted(cut: int) -> None:
    # A tool output sent in chunks: each part holds half of the token, which no scan of a
    # part alone finds, and the model reads the parts as one text.
    text = "token: ghp_R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO\nnext line"
    start = text.index("ghp_")
    parts = [
        {"type": "text", "text": text[: start + cut]},
        {"type": "text", "text": text[start + cut :]},
    ]
    message = ctxpack.Message(role="tool", tool_call_id="c1", content=parts)
    redacted, found = redact_message(message)
    assert [f.kind for f in found] == ["github-pat"]
    assert redacted.content == [{"type": "text", "text": "token: [REDACTED github-pat]\nnext line"}]
    # Parts a secret does not cross stay apart.
    apart = [{"type": "text", "text": "token: "}, {"type": "text", "text": text[start:]}]
    redacted, _ = redact_message(message.model_copy(update={"content": apart}))
    assert len(redacted.content) == 2  # type: ignore[arg-type]


SIG = "3f1c8e0b6a2d4f9e7c5b3a1d0e9f8c7b6a5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f"
SAS = "Hq3%2BkLmN8pQ2rStUvWxYz1A2b3C4d5E6f7G8h9I0jK%3D"


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        # A signed URL grants what its signature signs to whoever holds it, until it expires:
        # S3 (SigV4, and its temporary credentials' session token), Cloud Storage, Azure's
        # shared access signature, CloudFront, a web framework's signed route.
        (
            f"https://b.s3.amazonaws.com/f.csv?X-Amz-Date=20240101T000000Z&X-Amz-Signature={SIG}",
            SIG,
        ),
        (
            f"https://b.s3.amazonaws.com/f.csv?X-Amz-Security-Token=IQoJb3JpZ2luX2VjEJr%2F%2F{TOKEN}"
            "&X-Amz-Expires=3600",
            TOKEN,
        ),
        (f"https://storage.googleapis.com/b/o?X-Goog-Expires=900&X-Goog-Signature={SIG}", SIG),
        (f"https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&sp=r&sig={SAS}", SAS),
        (
            f"https://d1.cloudfront.net/v.mp4?Expires=1700000000&Signature={TOKEN}~&Key-Pair-Id=K2",
            TOKEN,
        ),
        (f"https://app.example.com/unsubscribe/7?expires=1700000000&signature={SIG}", SIG),
        # A token in a query: a websocket's, a download link's, an OAuth redirect's.
        (f"wss://rt.example.com/socket?token={TOKEN}&v=2", TOKEN),
        (f"https://app.example.com/cb#state=x&id_token={TOKEN}&expires_in=3600", TOKEN),
        (f"curl 'https://files.example.com/dl?refreshToken={TOKEN}'", TOKEN),
    ],
)
def test_a_credential_in_a_urls_query_is_redacted(url: str, secret: str) -> None:
    out = redact(f"GET {url} 200\n")
    assert secret not in out.text
    assert out.kinds == ("url-query-credential",)


@pytest.mark.parametrize(
    "text",
    [
        # Pagination cursors and names: no credential.
        "GET https://www.googleapis.com/youtube/v3/videos?pageToken=CAUQAA&part=id\n",
        "GET /api/items?next_token=eyJvZmZzZXQiOjEwMH0&limit=100\n",
        "GET /search?q=signature&sig=on\n",
        "https://example.com/docs?token=YOUR_TOKEN\n",
        "https://example.com/?signature=${SIGNATURE}\n",
        "inspect.signature(fn)&token=\n",
    ],
)
def test_a_query_without_a_credential_stays(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        (
            "GET /login?next=https%3A%2F%2Fdeploy%3AVq8nT2zLp4Rw%40git.example.com%2Frepo 302",
            "Vq8nT2zLp4Rw",
        ),
        (
            "redirect_uri=https%3A%2F%2Fapp.example.com%2Fcb%3Fstate%3D1%26token%3D" + TOKEN,
            TOKEN,
        ),
        ("DATABASE_URL=postgres%3A%2F%2Fapp%3Apg-4xQ7w%2521%40db%3A5432%2Fprod", "pg-4xQ7w"),
    ],
    ids=["login redirect", "oauth redirect", "encoded twice"],
)
def test_a_percent_encoded_url_is_read_through(text: str, gone: str) -> None:
    # A URL passed as a query's value (a redirect, a callback) is percent-encoded: "://"
    # became "%3A%2F%2F" and the URL rules did not match.
    out = redact(text)
    assert gone not in out.text, out.text
    assert "%3A%2F%2F" in out.text  # the encoding around the secret stays


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        # Go's encoding/json writes "&" as "\u0026": a signed URL in kubectl's or a Go tool's
        # JSON.
        (
            '{"url":"https://b.s3.amazonaws.com/f?X-Amz-Date=20240101T000000Z'
            f'\\u0026X-Amz-Signature={SIG}\\u0026x=1"}}',
            SIG,
        ),
        ('{"out": "token \\u0067hp_R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"}', "R8sVt2Lq9ZxW4mKp7"),
        ('{"dsn": "postgres://app:pg-4xQ7w\\u0021@db:5432/prod"}', "pg-4xQ7w"),
    ],
    ids=["go's ampersand", "escaped letter", "escaped symbol"],
)
def test_json_that_escapes_ascii_is_read_through(text: str, gone: str) -> None:
    out = redact(text)
    assert gone not in out.text, out.text
    assert out.text.count('"') == text.count('"')
