"""ctxpack's own secret rules, beside gitleaks' vendored ones (``data/secret_rules.json``):
the formats and settings gitleaks' rules miss, each in gitleaks' shape (``id``, ``regex``,
``entropy``, ``keywords``, and its secret group). :mod:`ctxpack.redaction` runs them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["OWN_RULES"]

# The key's last word names the secret: after a separator (DB_PASSWORD, db.password) or a
# camelCase hump (dbPassword, clientSecret), never inside a word (bypass).
_SECRET_NAME = (
    r"(?:[A-Za-z0-9_.-]*(?:[_.-]|[a-z0-9](?=[A-Z])))?(?i:pass(?:word|wd|phrase)?|pwd|"
    r"secret(?:[_.-]?key)?|client[_.-]?secret|private[_.-]?key|api[_.-]?key|auth[_.-]?token|"
    r"access[_.-]?token)"
)


def _near_aws_key_id(kind: str, value: str) -> tuple[dict[str, Any], ...]:
    """Rules for ``value`` (one group) before or after an AWS access key id.

    trufflehog's AWS detectors: a 40-character key, or a session token of 100 characters or
    more, in the text of an access key id (AKIA..., ASIA... for temporary credentials), above
    their entropy floor (4.25; a hexadecimal hash stays under it). They pair across a whole
    chunk; here the two must lie within a few lines of each other, as in the credentials JSON
    `aws sts` prints or `aws configure export-credentials`. AWS's documented example pair
    (...EXAMPLE, ...EXAMPLEKEY) is spared, as gitleaks spares the example id.
    """
    key_id, near = r"\b(?:AKIA|ABIA|ACCA|ASIA)[A-Z0-9]{16}\b", r"[\s\S]{1,300}?"
    return tuple(
        {
            "id": kind,
            "regex": pattern,
            "entropy": 4.25,
            "keywords": ["akia", "abia", "acca", "asia"],
            "allowlists": [{"target": "secret", "regexes": ["EXAMPLE"]}],
        }
        for pattern in (key_id + near + value, value + near + key_id)
    )


OWN_RULES: tuple[dict[str, Any], ...] = (
    {
        "id": "aws-secret-access-key",
        # trufflehog pairs a 40-character key with the word "aws" near it.
        "regex": r"(?i)aws[\w.-]{0,20}?secret[\w.-]{0,20}?[\s'\"]{0,3}(?:=|:|=>)[\s'\"]{0,3}"
        r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        "entropy": 3.0,
        "keywords": ["aws"],
    },
    *_near_aws_key_id(
        "aws-secret-access-key", r"(?<![A-Za-z0-9+/])([A-Za-z0-9+/]{40})(?![A-Za-z0-9+/=])"
    ),
    *_near_aws_key_id(
        "aws-session-token", r"(?<![A-Za-z0-9+/])([A-Za-z0-9+/]{100,}={0,3})(?![A-Za-z0-9+/=])"
    ),
    {
        "id": "url-credentials",
        "regex": r"(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s:/?#@'\"<>]{1,100}:"
        r"([^\s:/?#@'\"<>]{1,200})@[\w.-]+",
        "entropy": 0.0,
        "keywords": ["://"],
    },
    {
        "id": "secret-assignment",
        # A configuration line (.env, shell, YAML, JSON) whose key's last word names a secret:
        # KEY=value (no spaces around "=", as .env and shells write it) or "key": value (YAML,
        # JSON). Code writes a value with spaces around "=" or a comma after it, and there the
        # value is more often a name or a test fixture than a credential: code gets only the
        # high-entropy rule (gitleaks' generic-api-key). PWD and OLDPWD are the shell's working
        # directories (POSIX), which `env` prints: not passwords.
        "regex": r"(?m)^[ \t]*(?:export[ \t]+)?(?!(?:OLD)?PWD=)[\"']?" + _SECRET_NAME + r"[\"']?"
        r"(?:=|:[ \t]+)(?:\"([^\"\n]{4,200})\"|'([^'\n]{4,200})'|([^\s'\"#;,()]{4,200}))[ \t]*$",
        "entropy": 0.0,
        "keywords": ["pass", "pwd", "secret", "key", "token"],
    },
    {
        "id": "secret-element",
        # The XML form of a secret assignment: <password>...</password> (Maven's settings.xml,
        # Jenkins' credentials.xml, .NET and Java configuration), whatever the value.
        "regex": r"<(" + _SECRET_NAME + r")(?:[ \t][^<>\n]*)?>[ \t]*([^<>\n]{4,200}?)[ \t]*</\1>",
        "entropy": 0.0,
        "keywords": ["pass", "pwd", "secret", "key", "token"],
        "secret_group": 2,
    },
    {
        "id": "bearer-token",
        # RFC 6750: what follows "Bearer" in an Authorization header is the credential itself
        # (curl -H, HTTP logs, code building the header). A word of prose or a placeholder
        # has no digit, or too little entropy.
        "regex": r"(?i)\bbearer[ \t]+((?=[A-Za-z0-9._~+/-]*[0-9])(?=[A-Za-z0-9._~+/-]*[A-Za-z])"
        r"[A-Za-z0-9._~+/-]{16,}=*)(?![A-Za-z0-9._~+/=-])",
        "entropy": 3.0,
        "keywords": ["bearer"],
    },
    {
        "id": "basic-auth-header",
        # RFC 7617: what follows "Basic" in an Authorization header is base64("user:password")
        # (curl -v, HTTP logs, code building the header).
        "regex": r"(?i)\b(?:proxy-)?authorization[\"']?\]?[ \t]*[:=,][ \t]*[\"']?basic[ \t]+"
        r"([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])",
        "entropy": 2.5,
        "keywords": ["basic"],
    },
    {
        "id": "password-short-option",
        # Command-line tools whose one-letter option takes the password itself: mysql's
        # -pVALUE (attached: "-p VALUE" prompts, VALUE being the database), sshpass -p,
        # redis-cli -a, the OpenLDAP clients' -w, smbclient's -U user%VALUE. Each command is
        # a word of its own (not a path's end: a compiler line holds -I/usr/include/mysql
        # then -pthread).
        "regex": r"(?<![\w/.-])(?:(?:mysql(?:dump|admin|import|check|show|slap|binlog)?|"
        r"mariadb(?:-dump|-admin|-import|-check)?)[ \t][^\n]{0,300}?[ \t]-p(?=[^\s-])|"
        r"sshpass[ \t][^\n]{0,300}?(?<=[ \t])-p[ \t]*|"
        r"redis-cli[ \t][^\n]{0,300}?(?<=[ \t])-a[ \t]+|"
        r"ldap(?:search|add|modify|delete|passwd|whoami|compare|modrdn)[ \t][^\n]{0,300}?"
        r"(?<=[ \t])-w[ \t]*|"
        r"(?:smbclient|rpcclient)[ \t][^\n]{0,300}?(?<=[ \t])(?:-U|--user=)[ \t]*[^\s%'\"]+%)"
        r"(?:\"([^\"\n]{3,200})\"|'([^'\n]{3,200})'|([^\s'\"-][^\s'\";|&]{2,199}))",
        "entropy": 0.0,
        "keywords": ["mysql", "mariadb", "sshpass", "redis-cli", "ldap", "smbclient", "rpcclient"],
    },
    {
        "id": "secret-env-prefix",
        # An environment variable naming a secret, set for one command or container
        # (PGPASSWORD=... psql, docker run -e POSTGRES_PASSWORD=...): upper case, with no
        # spaces around "=", as shells and .env files write it, where code puts spaces.
        # The pattern starts with a letter, not a lookbehind, so that the regex engine skips
        # to the capitals: most outputs hold the keywords ("token") and few such names.
        "regex": r"[A-Z](?<![\w$.-][A-Z])(?!(?<=O)LDPWD=|(?<=P)WD=)(?:[A-Z0-9_]*(?:PASSWORD|"
        r"PASSWD|PWD|SECRET|SECRET_KEY|TOKEN|API_KEY|APIKEY|PRIVATE_KEY|AUTH)|(?<=P)ASSW(?:OR)?D|"
        r"(?<=S)ECRET(?:_KEY)?|(?<=T)OKEN|(?<=A)PI_?KEY|(?<=P)RIVATE_KEY)="
        r"(?:\"([^\"\n]{4,200})\"|'([^'\n]{4,200})'|([^\s'\"();,`]{4,200}))(?=[ \t]+\S)",
        "entropy": 0.0,
        "keywords": [
            "password",
            "passwd",
            "_pwd",
            "secret",
            "token",
            "api_key",
            "apikey",
            "private_key",
            "_auth",
        ],
    },
    {
        "id": "password-option",
        # A command-line option that takes a password or token: --password=VALUE, or
        # --password VALUE where VALUE is not a word of prose (it holds a digit or a symbol).
        # An upper-case value is a help text's placeholder (--token TOKEN).
        "regex": r"(?i)(?<![\w-])--(?:db-|admin-|api-)?(?:password|passwd|passphrase|token|"
        r"api-key|secret)(?:=(?:\"([^\"\n]{4,200})\"|'([^'\n]{4,200})'|([^\s'\"]{4,200}))|"
        r"[ \t]+(?-i:(?![A-Z0-9_]+(?:[\s'\"]|$)))(?=[^\s'\"]*[^A-Za-z\s'\"])"
        r"([^\s'\"\-][^\s'\"]{3,199}))",
        "entropy": 0.0,
        "keywords": ["--"],
    },
)
