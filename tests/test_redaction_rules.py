"""The rules added after reading misses on trufflehog's detector tests (the tune half of
benchmarks/redaction_external.py): each catches its secret and leaves its lookalikes alone."""

from __future__ import annotations

import itertools
import json
import random
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack.caches import clear_caches
from ctxpack.redaction import find_secrets, redact

from .helpers import cpu_seconds

TOKEN = "Rk7Vq2Lx9Zm4Wt8Np3Hc6Yb1Fd5Gs0Ja"  # random-looking, no provider's format
SHA = "3f786850e387550fdab836ed7e6dc881de23001b"
UUID = "123e4567-e89b-42d3-a456-426614174000"
SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
BASE64_PATH = "assets/SGVsbG8sIFdvcmxkISBUaGlzIGlzIHRlc3Q/logo.png"


def _kinds(text: str) -> list[str]:
    return [f.kind for f in find_secrets(text)]


@pytest.mark.parametrize(
    "text",
    [
        f"<password>{TOKEN}</password>",
        "<server>\n  <id>nexus</id>\n  <password>hunter2-prod</password>\n</server>",
        f'<apiKey encrypted="false">{TOKEN}</apiKey>',
        f"<secret>{{AQAAABAAA {TOKEN}}}</secret>",
        f"<client_secret> {TOKEN} </client_secret>",
    ],
)
def test_an_xml_element_naming_a_secret_is_redacted(text: str) -> None:
    out = redact(text)
    assert "secret-element" in out.kinds
    assert TOKEN not in out.text and "hunter2-prod" not in out.text


@pytest.mark.parametrize(
    "text",
    [
        "<key>CFBundleIdentifier</key>",
        "<password>${env.NEXUS_PASSWORD}</password>",
        "<password>${NEXUS_PASSWORD}</password>",
        "<secretName>db-credentials</secretName>",
        "<passwordPolicy>strict</passwordPolicy>",
        f"<sha>{SHA}</sha>\n<uuid>{UUID}</uuid>\n<digest>{SHA256}</digest>",
        f"<icon>{BASE64_PATH}</icon>",
        "<password></password>",
    ],
)
def test_other_xml_elements_and_references_survive(text: str) -> None:
    assert _kinds(text) == []


@pytest.mark.parametrize(
    "text",
    [
        f'curl -H "Authorization: Bearer {TOKEN}" https://api.example.com/v1/items',
        f"Authorization: bearer {TOKEN}",
        f'req.Header.Set("Authorization", "Bearer {UUID}")',
        f'headers = {{"Authorization": f"Bearer {TOKEN}"}}',
    ],
)
def test_a_bearer_token_is_redacted(text: str) -> None:
    out = redact(text)
    assert TOKEN not in out.text and UUID not in out.text
    assert set(out.kinds) & {"bearer-token", "curl-auth-header"}


@pytest.mark.parametrize(
    "text",
    [
        "The API uses Bearer authentication over HTTPS.",
        'curl -H "Authorization: Bearer $API_TOKEN" https://api.example.com',
        "Authorization: Bearer <token>",
        "Authorization: Bearer YOUR_ACCESS_TOKEN_HERE",
        "Authorization: Bearer ${{ secrets.GITHUB_TOKEN }}",
        f"commit {SHA}\nBearer tokens rotate daily; request {UUID}, digest {SHA256}",
        f"see {BASE64_PATH} (bearer)",
    ],
)
def test_bearer_in_prose_placeholders_and_nearby_ids_survive(text: str) -> None:
    assert _kinds(text) == []


def test_a_secret_found_once_is_redacted_everywhere_it_appears() -> None:
    text = (
        f"mapquest token = '{TOKEN}' | '{TOKEN}'\n"
        f"$ echo $MAPQUEST\n{TOKEN}\n"
        f"GET https://api.example.com/?k={TOKEN}&q=1"
    )
    out = redact(text)
    assert TOKEN not in out.text
    assert out.text.count("[REDACTED generic-api-key]") == 4


def test_a_short_secret_is_not_hunted_elsewhere() -> None:
    # A password under 8 characters may be an ordinary word elsewhere in the output.
    out = redact("postgres://app:tiger7@db:5432/main\nthe tiger7 build passed")
    assert (
        out.text
        == "postgres://app:[REDACTED url-credentials]@db:5432/main\nthe tiger7 build passed"
    )


def test_ids_beside_a_secret_survive_its_other_occurrences() -> None:
    text = f"API_KEY={TOKEN}\ncommit {SHA}\nrequest {UUID}\nsha256 {SHA256}\n{BASE64_PATH}\n{TOKEN}"
    out = redact(text)
    assert TOKEN not in out.text
    assert all(v in out.text for v in (SHA, UUID, SHA256, BASE64_PATH))


@pytest.mark.parametrize(
    "text",
    [
        "dbPassword: s3cr3t-value-42",
        "clientSecret=Zx9Qw2Er7Ty4Ui1Op",
        'apiSecret: "Lk8Mn3Bv6Cx1Za"',
    ],
)
def test_a_camel_case_key_naming_a_secret_is_redacted(text: str) -> None:
    out = redact(text)
    assert out.kinds and "[REDACTED" in out.text


@pytest.mark.parametrize(
    "text",
    ["showPassword: false", "bypass=12345678", "passwordLength: 16", "isSecret: true"],
)
def test_camel_case_lookalikes_survive(text: str) -> None:
    assert _kinds(text) == []


def test_a_token_on_every_line_is_redacted_in_about_linear_time() -> None:
    # Every occurrence used to be checked against every span kept, for every finding of the
    # same value: 800 log lines with one bearer token took 15 s, 400 lines 1.5 s.
    runs = itertools.count()

    def cost(lines: int) -> float:
        text = f"GET /v1/items Authorization: Bearer {TOKEN} 200\n" * lines

        def once() -> None:
            out = redact(text + str(next(runs)))  # a new text each time: scans are cached
            assert TOKEN not in out.text and out.text.count("[REDACTED") == lines

        return cpu_seconds(once)

    cost(50)
    small, large = cost(200), cost(1_600)
    assert large < 40 * max(small, 0.005)


def test_one_long_line_of_keys_costs_what_the_same_keys_on_their_own_lines_cost() -> None:
    # Minified JSON is one line: each match used to read that whole line again (for its
    # keywords and the line allowlists), 10 s for 8,000 keys in 400 kB against 2 s on lines.
    draw = random.Random(0)
    alphabet = string.ascii_letters + string.digits
    # gitleaks' generic rule wants a digit in a value.
    values = ["".join(draw.choices(alphabet, k=27)) + str(n % 10) for n in range(3_000)]
    keys = [f'"api_key_{i}": "{v}"' for i, v in enumerate(values)]

    def cost(separator: str) -> float:
        text = "{" + separator.join(keys) + "}"

        def once() -> None:
            clear_caches()  # the scan is cached by content
            out = redact(text)
            # gitleaks' stopwords spare a value holding a word ("ruby"): a few may stay.
            assert sum(v in out.text for v in values) <= len(values) // 50

        return cpu_seconds(once)

    redact(keys[0])  # the rules compiled
    assert cost(",") < 1.8 * cost(",\n")


def test_many_values_found_are_looked_for_again_in_about_linear_time() -> None:
    # A value found once is looked for again in the whole text (echoed, logged twice): one
    # search a value read a CSV of a token a row once per row, seconds for 1 MB.
    from ctxpack._internal.secret_values import KnownValues

    draw = random.Random(0)
    alphabet = string.ascii_letters + string.digits
    rows = [f"{i},user{i},ghp_{''.join(draw.choices(alphabet, k=36))}\n" for i in range(8_000)]

    def cost(n: int) -> float:
        text = "".join(rows[:n])
        values = KnownValues({row.split(",")[2].strip(): "github-pat" for row in rows[:n]})
        assert len(list(values.find(text))) == n
        return cpu_seconds(lambda: list(values.find(text)))

    # Sixteen times the rows cost about 23 times as much (a bigger automaton); one search a
    # value made it 256 times.
    small, large = cost(500), cost(8_000)
    assert large < 64 * max(small, 0.001)


def test_many_values_found_sharing_a_first_run_are_looked_for_in_about_linear_time() -> None:
    # Every JWT begins with the same header, every Slack bot token with "xoxb": looked for by
    # the run of word characters that starts them, each value was compared at each place of
    # that run, the values of a log of JWTs times their places (seconds for 1 MB).
    from ctxpack._internal.secret_values import KnownValues

    draw = random.Random(0)
    alphabet = string.ascii_letters + string.digits
    header = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    rows = [f"{i} token {header}.{''.join(draw.choices(alphabet, k=40))}\n" for i in range(6_000)]

    def cost(n: int) -> float:
        text = "".join(rows[:n])
        values = KnownValues({row.split()[2]: "jwt" for row in rows[:n]})
        assert len(list(values.find(text))) == n
        return cpu_seconds(lambda: list(values.find(text)))

    small, large = cost(500), cost(6_000)
    assert large < 40 * max(small, 0.001)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.text("ab1_-.:é", min_size=1, max_size=12), min_size=300, max_size=300, unique=True),
    st.lists(st.tuples(st.integers(0, 299), st.sampled_from(["", " ", "-", "a", "\n"]))),
    st.integers(0, 3_000),
)
def test_values_found_are_found_where_each_stands_alone_however_many(
    values: list[str], pieces: list[tuple[int, str]], cut: int
) -> None:
    # From a few hundred values, all are looked for in one reading of the text: the places
    # found are each value's own, in order, values in the order learnt.
    from ctxpack._internal.secret_values import KnownValues, occurrences

    text = "".join(values[i] + sep for i, sep in pieces)[:cut]
    known = KnownValues({v: f"kind{i}" for i, v in enumerate(values)})
    expected = [
        (start, end, kind)
        for value, kind in known.values.items()
        for start, end in occurrences(text, value)
    ]
    assert list(known.find(text)) == expected


def test_a_dump_of_keys_costs_a_bounded_multiple_of_lines_without_keys() -> None:
    # Each value found went through each allowlist: gitleaks' generic rule's 1,446 stopwords
    # one by one, and the value found again by it after another rule found it; a .env dump
    # cost a hundred times log lines of its size.
    draw = random.Random(0)
    alphabet = string.ascii_letters + string.digits
    names = ["DB_PASSWORD", "API_KEY", "STRIPE_SECRET", "AUTH_TOKEN", "APP_SECRET_KEY"]
    dump = "".join(
        f"{draw.choice(names)}={''.join(draw.choices(alphabet, k=draw.randint(12, 40)))}\n"
        for _ in range(3_000)
    )
    log = "".join(
        f"2026-12-04T19:00:00Z INFO worker handled request {i:08x}\n" for i in range(2_000)
    )

    def cost(text: str) -> float:
        def once() -> None:
            clear_caches()  # the scan is cached by content
            find_secrets(text)

        return cpu_seconds(once)

    find_secrets(dump[:100])  # the rules compiled
    assert len(find_secrets(dump)) == 3_000
    assert cost(dump) < 40 * cost(log[: len(dump)])


# An AWS key pair as the AWS CLI prints it: the secret's key names no "aws" (SecretAccessKey),
# so only its distance to the access key id gives it away (trufflehog's AWS detectors).
KEY_ID, TEMP_ID = "AKIA" + "ZQ3MHYJKLMNOPQR7", "ASIA" + "ZQ3MHYJKLMNOPQR7"
SECRET_KEY = "wJalrXUtnFEMIK7MDENGbPxRfiCYzq8Lp3Vn+/Xa"
SESSION_TOKEN = "FwoGZXIvYXdzEJr//////////wEaDHqa0AP1F8+Ak2xZhyKsAQ6iW9wB3l1bqkZh0nG7p2Sx4mT+QfY9k"


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(
            {
                "Credentials": {
                    "AccessKeyId": TEMP_ID,
                    "SecretAccessKey": SECRET_KEY,
                    "SessionToken": SESSION_TOKEN + "L3dR8vN6cJ0hW2uE5yB7aD1zX4oI9rK2sM6pV8tQ3nF0",
                    "Expiration": "2026-12-04T20:00:00Z",
                }
            },
            indent=4,
        ),
        f"aws {KEY_ID} {SECRET_KEY}",
        f"the key {SECRET_KEY} goes with {KEY_ID}",
        f"[default]\nkey = {KEY_ID}\nsigning key = {SECRET_KEY}",
    ],
)
def test_an_aws_secret_key_beside_its_key_id_is_redacted(text: str) -> None:
    out = redact(text)
    assert SECRET_KEY not in out.text and SESSION_TOKEN not in out.text
    assert KEY_ID not in out.text and TEMP_ID not in out.text
    assert "aws-secret-access-key" in out.kinds


@pytest.mark.parametrize(
    "text",
    [
        # A hash has too little entropy to be a key (trufflehog drops unverified hex keys).
        f"{KEY_ID} built from commit {SHA}",
        # AWS's documented example pair.
        "AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        # A 40-character run with no key id within a few lines.
        f"{KEY_ID}\n{'x' * 400}\n{SECRET_KEY}",
        f"{KEY_ID} src/components/widgets/ButtonGroupHelper.tsx",
    ],
)
def test_what_lies_near_a_key_id_but_is_no_key_survives(text: str) -> None:
    kept = {
        "x" * 400,
        SHA,
        SECRET_KEY,
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "src/components/widgets/ButtonGroupHelper",
    }
    out = redact(text).text
    assert [value for value in kept if value in text and value not in out] == []


def test_the_shells_working_directories_are_no_passwords() -> None:
    # `env` in a tool output: a PWD taken for a password was hunted through the whole output,
    # and every path under the working directory lost its start.
    env = "HOME=/root\nPWD=/root/repo\nOLDPWD=/tmp\nexport PWD=/root/repo\nFILE=/root/repo/a.java"
    assert redact(env).text == env
    assert redact("DB_PWD=hunter2-prod\nPWD=/root").text == (
        "DB_PWD=[REDACTED secret-assignment]\nPWD=/root"
    )


@pytest.mark.parametrize(
    "text",
    [
        " * <li>http://username:password@10.20.130.230:8080/list?version=1.0.0",
        "DB_PASSWORD=password\nAPI_TOKEN=token",
        "<password>secret</password>",
    ],
)
def test_a_secret_named_by_its_own_name_is_a_placeholder(text: str) -> None:
    # Taken for a secret, "password" would then be replaced everywhere in the output.
    assert redact(text + "\nthe password is checked").text == text + "\nthe password is checked"


def test_no_rule_starts_with_a_lazy_run_of_name_characters() -> None:
    # Tried at every position of a long run of name characters (a lockfile's base64 hashes),
    # two nested runs made one rule cost 2,500 widths a position: a lockfile took seconds.
    from ctxpack.redaction import _rules

    for rule in _rules()[0]:
        assert not rule.pattern.pattern.lstrip("(?i:)").startswith("[\\w.-]{0,"), rule.kind


@pytest.mark.parametrize(
    "text",
    [
        f'prod.MERAKI_API_KEY = "{"3f786850e387550fdab836ed7e6dc881de23001b"}"',
        "export CO_API_KEY=Rk7Vq2Lx9Zm4Wt8Np3Hc6Yb1Fd5Gs0JaQw3Er5Tz",
        'my.okta_token: "00Rk7Vq2Lx9Zm4Wt8Np3Hc6Yb1Fd5Gs0JaQw3Er5Tz"',
        'private-ai-key = "rk7vq2lx9zm4wt8np3hc6yb1fd5gs0ja"',
        "svc.sumo_access_id=suRk7Vq2Lx9Zm4",
    ],
)
def test_rules_cut_of_their_lazy_start_find_what_gitleaks_finds(text: str) -> None:
    import json as json_
    from importlib import resources

    from ctxpack._internal.secret_allowlists import compile_rule as _compile

    data = json_.loads(
        resources.files("ctxpack").joinpath("data/secret_rules.json").read_text("utf-8")
    )
    whole = []
    for entry in data["rules"]:
        if entry["regex"].startswith("[\\w.-]{0,50}?(?i:"):
            for match in _compile(entry["regex"], entry["engine"]).finditer(text):
                whole.append((entry["id"], match.span(1)))
    assert whole, "no nested semi-generic rule matches the sample"
    found = [(f.kind, (f.start, f.end)) for f in find_secrets(text)]
    assert all(w in found for w in whole), (whole, found)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (f"$ mysqldump -uroot -p{TOKEN} shop > shop.sql", "password-short-option"),
        (f"mysql -h db -u app -p'{TOKEN}' -e 'show tables'", "password-short-option"),
        (f"sshpass -p {TOKEN} ssh deploy@10.0.0.7", "password-short-option"),
        (f"redis-cli -h cache -p 6379 -a {TOKEN} ping", "password-short-option"),
        (f"ldapsearch -x -D cn=admin,dc=acme -w {TOKEN} -b dc=acme", "password-short-option"),
        (f"smbclient //files/share -U bob%{TOKEN}", "password-short-option"),
        (f"MYSQL_PWD={TOKEN} mysql -u root", "secret-env-prefix"),
        (f"docker run -e APP_API_KEY={TOKEN} -e DEBUG=1 acme/api", "secret-env-prefix"),
        (f'TOKEN="{TOKEN}" ./deploy.sh', "secret-env-prefix"),
        (f"Proxy-Authorization: Basic {TOKEN}==", "basic-auth-header"),
        (f'headers["Authorization"] = "Basic {TOKEN}"', "basic-auth-header"),
    ],
)
def test_a_password_given_on_a_command_line_or_in_basic_auth_is_redacted(
    text: str, kind: str
) -> None:
    out = redact(text)
    assert TOKEN not in out.text
    assert kind in out.kinds


@pytest.mark.parametrize(
    "text",
    [
        # -p without a value prompts; what follows is the database. -P is the port.
        "mysql -u root -p shop",
        "mysql -h db -P3306 -u app --ssl-mode=REQUIRED",
        # A compiler line: mysql is the end of an include path, -pthread a compiler flag.
        "gcc -I/usr/include/mysql -pthread -O2 -o client client.c -lmysqlclient",
        "mysql -u root -p$MYSQL_PASSWORD shop",
        "sshpass -p $DEPLOY_PASSWORD ssh deploy@host",
        "redis-cli -a <password> ping",
        # The shell's working directories, references and elided examples.
        "PWD=/srv/app OLDPWD=/root ls",
        "GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }} gh pr list",
        "API_TOKEN=$(cat /run/secrets/token) ./run.sh",
        "hf spaces secrets add me/space -s OPENAI_API_KEY=sk-... -s DEBUG=1",
        # Code puts spaces around "=", and lower-case keyword arguments are no environment.
        "connect(host=HOST, password=password, user=user)",
        "DB_PASSWORD = os.environ['DB_PASSWORD']",
        "Basic usage: mysql --help",
        "Authorization: Basic YOUR_CREDENTIALS",
        f"commit {SHA}\nAuthorization header checked, request {UUID}",
    ],
)
def test_command_line_and_basic_auth_lookalikes_survive(text: str) -> None:
    assert _kinds(text) == []


@pytest.mark.parametrize("where", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("lines", [False, True], ids=["one long line", "many lines"])
def test_secrets_in_a_large_output_are_found_wherever_they_sit(where: float, lines: bool) -> None:
    # Past 64 kB a rule with keywords runs only near them; a secret sits next to its own.
    import base64

    draw = random.Random(7)
    noise = base64.b64encode(draw.randbytes(300_000)).decode()
    if lines:
        noise = "\n".join(noise[i : i + 76] for i in range(0, len(noise), 76))
    pat = "ghp_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"
    planted = f' {{"api_key": "{TOKEN}", "gh": "{pat}"}} '
    at = int(len(noise) * where)
    out = redact(noise[:at] + planted + noise[at:])
    assert [s for s in (TOKEN, pat) if s in out.text] == []
    assert set(out.kinds) == {"secret-field", "github-pat"}
    assert (
        out.text.replace("[REDACTED secret-field]", TOKEN).replace("[REDACTED github-pat]", pat)
        == noise[:at] + planted + noise[at:]
    )


def test_a_secret_before_its_keyword_in_a_large_output_is_found() -> None:
    # The AWS rule finds a secret key near its key id, before it as well as after.
    log = "".join(
        f"2026-12-05T10:00:{i % 60:02d}Z INFO request {i:06d} served\n" for i in range(3_000)
    )
    out = redact(log + f"the key {SECRET_KEY} goes with {KEY_ID}\n" + log)
    assert SECRET_KEY not in out.text and KEY_ID not in out.text
    assert out.text.startswith(log) and out.text.endswith(log)


_KEY_LINES = [
    "y9jG0zbW+jZ2fT6ayMapMOK00N5Mq4ruGb2eV1ZKcllaXI7IV9RX6o9Ts1scwHVq",
    "K0HK1J3Q+B+Z2liqAtDdnGt9mZxal2gB2Sgn1pHJw9gBlXp5L/Yo9ntXzvG1K/BR",
]


@pytest.mark.parametrize(
    "text",
    [
        "DB_PASSWORD=Xk9falsePq27!z",
        "DB_PASSWORD=trueBlue-42x9Q",
        "DB_PASSWORD=q9Z2-xnull",
        # A private key cut by `head`, the next line of the output reading FALSE.
        "-----BEGIN EC PRIVATE KEY-----\n" + "\n".join(_KEY_LINES) + "\nFALSE",
    ],
)
def test_a_secret_holding_true_false_or_null_is_redacted(text: str) -> None:
    # gitleaks' global allowlist reads "^true|false|null$", which spares any secret holding
    # "false" (or starting with "true", ending with "null"), not the words alone.
    out = redact(text).text
    assert "Xk9false" not in out and "trueBlue" not in out and "xnull" not in out
    assert _KEY_LINES[0] not in out and _KEY_LINES[1] not in out


@pytest.mark.parametrize("text", ["DB_PASSWORD=false", 'api_key = "null"', "token: TRUE"])
def test_the_words_true_false_and_null_alone_are_no_secrets(text: str) -> None:
    assert redact(text).text == text


_NAMES = ["api", "API", "Api", "aPi", "key", "\u212aey", "secret", "\u017fecret", "token"]
_NAMES += ["passwd", "password", "creds", "auth", "access", "plaid", "twitter", "my_", "x-"]
_VALUES = [
    "AKIAZ5GMHYJKLMNOPQR7",
    "ghp_R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO",
    "glpat-Ab3dE6gH9jK2mN5pQ8s",
]
_ASSIGNMENTS = st.tuples(
    st.lists(st.sampled_from(_NAMES), min_size=1, max_size=3).map("".join),
    st.sampled_from(["=", ": ", ":=", "=>", ' = "', "'", " ", ""]),
    st.sampled_from(
        ["abcDEF0123456789xyzQ", "Vq8nT2zLp4Rw-9", "é", "x", "a.b=c_d-e1234", *_VALUES]
    ),
    st.sampled_from(['"', "'", " ", "\n", "\\n", ";", "", "é"]),
).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(_ASSIGNMENTS, max_size=30))
def test_rules_searched_only_where_their_words_begin_find_what_a_search_finds(
    pieces: list[str],
) -> None:
    # A rule whose every match begins with one of a few words (gitleaks' generic rule) is
    # tried only where the lowered text holds one, in an ASCII text; a text that is not (the
    # long s matches "s", case ignored, yet lowers to itself) is searched everywhere.
    import ctxpack.redaction as r
    from ctxpack._internal.text_lines import TextLines

    text = "".join(pieces)
    lines = TextLines(text, text.lower())
    present = r._keyword_finder().counts(text.lower()).keys()
    anchored = [rule for rule in r._rules()[0] if rule.starts]
    assert any(rule.kind == "generic-api-key" for rule in anchored)
    for rule in anchored:
        found = [m.span() for m in r._near_keywords(rule, text, lines, present)]
        assert found == [m.span() for m in rule.pattern.finditer(text)], rule.kind


def test_a_rule_with_an_alternative_at_its_top_level_is_searched_everywhere() -> None:
    from ctxpack._internal.secret_starts import start_words

    assert start_words("(?i)(?:plaid)(?:[ \\t\\w.-]{0,20})=([a-z]{8})") == ("plaid",)
    assert start_words("(?i)(?:plaid)(?:x)|y") == ()
    assert start_words("(?i)(?:plaid)(?:[|])(a|b)") == ("plaid",)
    assert start_words("(?i)(?:plaid)?(x)") == ()
    assert start_words("\\b(ghp_[0-9a-zA-Z]{36})") == ("ghp_",)
    assert start_words("\\b((?:A3T[A-Z0-9]|AKIA|ASIA)[A-Z2-7]{16})\\b") == ("a3t", "akia", "asia")
    assert start_words("abc[0-9]|de?f") == ("abc", "d")  # "e" may be left out
    assert start_words("(?:ab){0,1}c") == ()
    assert start_words("(?<![\\w-])--token") == ()
    assert start_words("[Aa]pi") == ()
    # Escaped punctuation is a letter of the word; an escaped class ends it.
    assert start_words("\\b((?:hvs\\.[\\w-]{90}|s\\.(?i:[a-z0-9]{24})))") == ("hvs.", "s.")
    assert start_words("v1\\.0-[a-f0-9]{146}") == ("v1.0-",)
    assert start_words("ab\\.?c") == ("ab",)
    assert start_words("ab\\d+") == ("ab",)
