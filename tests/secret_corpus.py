"""A generated corpus of secrets in many formats, each planted in a realistic tool output.

Every secret is random (a seeded generator), in its provider's published format, so the tests
check formats, not particular strings. :func:`planted` yields ``(name, text, secrets)``: the
text a tool might print, and the values that must never reach the model or the store.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Iterator

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _jwt(rng: random.Random) -> str:
    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    head = part({"alg": "HS256", "typ": "JWT"})
    body = part({"sub": _r(rng, LOWER_ALNUM, 12), "exp": rng.randrange(10**9, 2 * 10**9)})
    return f"{head}.{body}.{_r(rng, URLSAFE, 43)}"


def _pem(rng: random.Random, kind: str) -> tuple[str, list[str]]:
    lines = [_r(rng, B64, 64) for _ in range(6)] + [_r(rng, B64, 20) + "=="]
    block = f"-----BEGIN {kind}PRIVATE KEY-----\n" + "\n".join(lines)
    return block + f"\n-----END {kind}PRIVATE KEY-----", lines


def secrets(seed: int = 0) -> Iterator[tuple[str, str]]:
    """``(format, value)`` pairs: one random secret per format."""
    rng = random.Random(seed)
    yield "aws-access-key-id", "AKIA" + _r(rng, string.ascii_uppercase + "234567", 16)
    yield "aws-secret-access-key", _r(rng, B64, 40)
    yield "github-pat", "ghp_" + _r(rng, ALNUM, 36)
    yield "github-oauth", "gho_" + _r(rng, ALNUM, 36)
    yield "github-fine-grained-pat", "github_pat_" + _r(rng, ALNUM + "_", 82)
    yield "gitlab-pat", "glpat-" + _r(rng, URLSAFE, 20)
    yield (
        "openai-project-key",
        "sk-proj-" + _r(rng, URLSAFE, 74) + "T3BlbkFJ" + _r(rng, URLSAFE, 74),
    )
    yield "openai-legacy-key", "sk-" + _r(rng, ALNUM, 20) + "T3BlbkFJ" + _r(rng, ALNUM, 20)
    yield "anthropic-api-key", "sk-ant-api03-" + _r(rng, URLSAFE, 93) + "AA"
    yield (
        "slack-bot-token",
        f"xoxb-{_r(rng, string.digits, 12)}-{_r(rng, string.digits, 12)}-" + (_r(rng, ALNUM, 24)),
    )
    yield (
        "slack-user-token",
        "xoxp-" + "-".join(_r(rng, string.digits, 12) for _ in range(3)) + "-" + _r(rng, HEX, 32),
    )
    yield "stripe-live-key", "sk_live_" + _r(rng, ALNUM, 24)
    yield "google-api-key", "AIza" + _r(rng, URLSAFE, 35)
    yield "npm-token", "npm_" + _r(rng, ALNUM, 36)
    yield "pypi-token", "pypi-AgEIcHlwaS5vcmc" + _r(rng, URLSAFE, 70)
    yield "huggingface-token", "hf_" + _r(rng, string.ascii_letters, 34)
    yield "sendgrid-key", "SG." + _r(rng, URLSAFE, 22) + "." + _r(rng, URLSAFE, 43)
    yield "digitalocean-pat", "dop_v1_" + _r(rng, HEX, 64)
    yield "azure-client-secret", _r(rng, ALNUM, 3) + "8Q~" + _r(rng, ALNUM + "_~.-", 34)
    yield "jwt", _jwt(rng)
    yield "password", _r(rng, ALNUM, 6) + "!" + _r(rng, string.digits, 3)
    yield "url-password", _r(rng, ALNUM, 14)
    yield "xai-api-key", "xai-" + _r(rng, ALNUM, 80)
    yield "groq-api-key", "gsk_" + _r(rng, ALNUM, 52)
    yield "replicate-api-token", "r8_" + _r(rng, ALNUM, 37)
    bot_id = str(rng.randrange(10**17, 2 * 10**18)).encode()
    yield (
        "discord-bot-token",
        base64.urlsafe_b64encode(bot_id).decode().rstrip("=")
        + f".{_r(rng, URLSAFE, 6)}.{_r(rng, URLSAFE, 38)}",
    )
    yield "session-cookie", _r(rng, LOWER_ALNUM, 32)


def planted(seed: int = 0) -> Iterator[tuple[str, str, list[str]]]:
    """``(name, tool output, secret values)``: each secret in several realistic settings."""
    rng = random.Random(seed + 1)
    for fmt, value in secrets(seed):
        if fmt == "password":
            yield "env password", f"DEBUG=1\nDB_PASSWORD={value}\nDB_HOST=db\n", [value]
            yield "cli password", f"$ mysql -u app --password={value} prod\n", [value]
            yield "cli password after a space", f"docker login --password {value} reg.io", [value]
            yield "mysql password option", f"$ mysql -h db -u app -p{value} prod\n", [value]
            yield (
                "password for one command",
                f"+ PGPASSWORD={value} psql -h db -U app -c 'select 1'\n",
                [value],
            )
            yield (
                "container password",
                f"$ docker run -d -e POSTGRES_PASSWORD={value} postgres:16\n",
                [value],
            )
            yield "redis password option", f"$ redis-cli -h cache -a {value} ping\nPONG\n", [value]
            basic = base64.b64encode(f"app:{value}".encode()).decode()
            yield (
                "basic auth header",
                "> GET /v1/items HTTP/1.1\n> Host: api.example.com\n"
                f"> Authorization: Basic {basic}\n",
                [basic],
            )
            yield "yaml password", f"database:\n  user: app\n  password: '{value}'\n", [value]
            yield "json password", json.dumps({"user": "app", "password": value}, indent=2), [value]
            yield (
                "compact json password",
                json.dumps({"password": value, "user": "app"}, separators=(",", ":")),
                [value],
            )
            ini = f"[client]\nuser = app\npassword = {value}\nport = 3306\n"
            yield "ini password", ini, [value]
            yield (
                "compose password",
                f"    environment:\n      - POSTGRES_PASSWORD={value}\n      - POSTGRES_DB=app\n",
                [value],
            )
            yield (
                "netrc password",
                f"machine api.example.com\n  login app\n  password {value}\n",
                [value],
            )
            yield "docker login", f"$ docker login -u app -p {value} registry.io\n", [value]
            yield "sql password", f"ALTER ROLE app WITH LOGIN PASSWORD '{value}';\n", [value]
            yield "mysql identified by", f"CREATE USER 'app' IDENTIFIED BY '{value}';\n", [value]
            yield "redis url", f"REDIS_URL=redis://:{value}@cache:6379/0\n", [value]
            continue
        if fmt == "session-cookie":
            yield (
                "cookie header",
                f"> GET / HTTP/1.1\n> Cookie: theme=dark; sessionid={value}\n",
                [value],
            )
            yield (
                "set-cookie header",
                f"< HTTP/1.1 200 OK\n< Set-Cookie: sid={value}; Path=/; HttpOnly\n",
                [value],
            )
            continue
        if fmt == "url-password":
            yield (
                "url credentials",
                f"DATABASE_URL=postgres://app:{value}@db.internal:5432/prod",
                [value],
            )
            yield (
                "git remote",
                f"origin\thttps://deploy:{value}@github.com/acme/api.git (fetch)",
                [value],
            )
            continue
        if fmt == "aws-secret-access-key":
            key_id = "AKIA" + _r(rng, string.ascii_uppercase + "234567", 16)
            yield (
                "aws credentials file",
                (
                    f"[default]\naws_access_key_id = {key_id}\n"
                    f"aws_secret_access_key = {value}\nregion = eu-west-1\n"
                ),
                [value, key_id],
            )
            yield "aws env", f"export AWS_SECRET_ACCESS_KEY={value}\n", [value]
            continue
        yield (
            f"{fmt} in env",
            f"$ env | sort\nHOME=/root\nSERVICE_TOKEN={value}\nUSER=root\n",
            [value],
        )
        yield (
            f"{fmt} in log",
            f"2026-11-30 12:00:01 INFO auth using key {value} for upload\n",
            [value],
        )
        yield f"{fmt} in json", json.dumps({"ok": True, "credentials": {"token": value}}), [value]
    for kind in ("", "RSA ", "EC ", "OPENSSH "):
        block, lines = _pem(rng, kind)
        yield f"{kind or 'pkcs8 '}private key", f"$ cat ~/.ssh/id\n{block}\n", lines
        head = block.split("\n")[:5]
        yield f"{kind or 'pkcs8 '}private key cut", "$ head -5 id\n" + "\n".join(head), head[1:]
        tail = block.split("\n")[-4:]
        yield f"{kind or 'pkcs8 '}private key tail", "$ tail -4 id\n" + "\n".join(tail), tail[:-1]


def dense(seed: int = 0, size: int = 1_000_000) -> dict[str, str]:
    """Secret-dense outputs of about ``size`` characters each, by kind: the planted outputs
    one after another (a value echoed alone now and then), an environment dump, a log with a
    token on every line, compact JSON records, and a private key's body paged out with line
    numbers (``cat -n``), and configuration lines naming keys and tokens."""
    rng = random.Random(seed)
    outputs: list[str] = []
    env: list[str] = []
    n, count = 0, 0
    while n < size:
        count += 1
        for _, text, values in planted(seed + count):
            echoed = f"$ echo $X\n{values[0]}\n" if rng.random() < 0.2 else ""
            outputs.append(text + "\n" + echoed)
            n += len(outputs[-1])
    n, count = 0, 0
    while n < size:
        for fmt, value in secrets(seed + count):
            env.append(f"{fmt.upper().replace('-', '_')}_{count}={value}\n")
            n += len(env[-1])
        count += 1
    log = []
    for i in range(size // 137):
        log.append(
            f"2026-12-04T19:{i % 60:02d}:00Z INFO req {i:08x} Authorization: Bearer "
            f"{_r(rng, ALNUM, 32)} api_key={_r(rng, ALNUM, 24)}&user=u{i}\n"
        )
    records = [
        {
            "id": i,
            "password": _r(rng, ALNUM, 12) + "!",
            "token": "ghp_" + _r(rng, ALNUM, 36),
            "name": f"svc-{i}",
        }
        for i in range(size // 110)
    ]
    names = ["key", "Key", "api_key", "auth", "secret", "token", "Credential", "creds", "passwd"]
    config = []
    for _ in range(size // 40):
        key = rng.choice(names) + rng.choice(["", "_id", ".value", "Id"])
        quote = rng.choice(["", '"', "'"])
        value = _r(rng, rng.choice([ALNUM, HEX, "ab"]), rng.randrange(8, 40))
        operator, end = rng.choice(["=", ": ", " = ", ":=", "=>"]), rng.choice(["", '"', ";"])
        config.append(f"{key}{operator}{quote}{value}{end}\n")
    pages = []
    for i in range(size // 500):
        kind = rng.choice(["", "RSA ", "CERTIFICATE", ""])
        block, _ = _pem(rng, kind)
        lines = block.split("\n")[rng.randrange(0, 3) : rng.randrange(5, 9)]
        pages.append("".join(f"{i * 10 + j:6d}\t{line}\n" for j, line in enumerate(lines)))
    return {
        "planted outputs": "".join(outputs),
        "environment dump": "".join(env),
        "log of tokens": "".join(log),
        "json records": json.dumps(records, separators=(",", ":")),
        "numbered key pages": "\n".join(pages),
        "configuration lines": "".join(config),
    }
