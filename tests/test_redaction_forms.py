"""Secrets in the forms configuration files, HTTP logs, shells and SQL write them, and the
lines beside them that must survive: a value found once is replaced elsewhere only where it
cannot be an ordinary word."""

from __future__ import annotations

import pytest

from ctxpack.redaction import find_secrets, redact

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
    ],
)
def test_a_secret_in_a_config_line_header_or_command_is_redacted(
    text: str, secret: str, kind: str
) -> None:
    out = redact(text)
    assert secret not in out.text
    assert kind in out.kinds


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


def test_a_certificate_is_no_private_key() -> None:
    cert = f"-----BEGIN CERTIFICATE-----\n{TOKEN * 2}\n-----END CERTIFICATE-----\n"
    assert find_secrets(cert) == ()
