"""ctxpack's own secret rules, beside gitleaks' vendored ones (``data/secret_rules.json``):
the formats and settings gitleaks' rules miss, each in gitleaks' shape (``id``, ``regex``,
``entropy``, ``keywords``, and its secret group). :mod:`ctxpack.redaction` runs them.

A rule may also give ``starts``: words (lower case) one of which begins each of its matches,
case ignored, where its pattern does not say so in a form ``secret_starts.start_words`` reads
(a look-behind first, groups of alternatives): in an ASCII text it is then tried only where the
lowered text holds one, not at every position (tests/test_redaction_fast_paths.py checks that
it finds what a search finds). A rule whose matches are whole lines may give ``line_gate``: a
pattern (no line break in its matches) found on each of them, the rule then tried only from the
start of the lines holding it; one whose matches each begin at a line's start and end in that
line may give ``keyword_lines``, to be tried only from the start of the lines holding one of its
keywords.
"""

from __future__ import annotations

import base64
from typing import Any

__all__ = ["OWN_RULES"]

# A line number a tool printed before a line (cat -n "     3\t", grep -n "3:", a read tool's
# "3→", a selection's "3 | "): a key cut by the output is often numbered.
_NUMBERED = r"(?:[ \t]*\d{1,7}(?:\t|:|\u2192| ?\| ?))?"

# A line of a PEM body: 64 base64 characters (70 in an OpenSSH private key's).
_PEM_LINE = r"[A-Za-z0-9+/]{64}(?:[A-Za-z0-9+/]{6})?"

# The key's last word names the secret: after a separator (DB_PASSWORD, db.password) or a
# camelCase hump (dbPassword, clientSecret), never inside a word (bypass).
_SECRET_NAME = (
    r"(?:[A-Za-z0-9_.-]*(?:[_.-]|[a-z0-9](?=[A-Z])))?(?i:pass(?:word|wd|phrase)?|pwd|"
    r"secret(?:[_.-]?key)?|client[_.-]?secret|private[_.-]?key|api[_.-]?key|auth[_.-]?token|"
    r"access[_.-]?token)"
)


# The commands password-short-option reads a password after, by the word each begins with; a
# registry login's commands are found by their "login" keyword.
_PASSWORD_COMMANDS = ["mysql", "mariadb", "sshpass", "redis-cli", "ldap", "smbclient", "rpcclient"]
_LOGIN_COMMANDS = ["docker", "podman", "buildah", "nerdctl", "helm"]


# Provider tokens by their prefixes, each with what its body is made of: cut by an output's
# truncation, the part shown is too short for the format's rule, yet what is left is little to
# guess (a GitHub token's last six characters are a checksum of the others).
_TOKEN_PREFIXES = {
    "gh[pousr]_|npm_|[rs]k_live_": "[A-Za-z0-9]",
    "github_pat_": "[A-Za-z0-9_]",
    "glpat-|sk-ant-(?:api|admin)\\d\\d-|sk-(?:proj|svcacct|admin)-|xox[abeprs]-": "[\\w-]",
    "AKIA|ASIA": "[A-Z0-9]",
}
# A random body holds a digit or a capital: a word after a prefix is a name (ghp_import).
_CUT_TOKEN, _CUT_HEAD = (
    "|".join(f"(?:{prefix}){random}{body}{{{least},}}" for prefix, body in _TOKEN_PREFIXES.items())
    for least, random in ((4, "(?=[a-z_-]*[A-Z0-9])"), (0, ""))
)
_PREFIXES = "|".join(f"(?:{prefix})" for prefix in _TOKEN_PREFIXES)
_CUT_KEYWORDS = [
    *(f"gh{c}_" for c in "pousr"),
    *("npm_", "rk_live_", "sk_live_", "github_pat_", "glpat-", "sk-ant-", "sk-proj-"),
    *("sk-svcacct-", "sk-admin-", *(f"xox{c}-" for c in "abeprs"), "akia", "asia"),
]
# A note a harness writes where it cut an output, naming the cut: in brackets, or between
# ellipses. Read by its words rather than listed, as each agent words its own:
# SWE-agent's "<response clipped><NOTE>...</NOTE>" (tools/edit_anthropic/bin/str_replace_editor,
# and TemplateConfig.next_step_truncated_observation_template in sweagent/agent/agents.py),
# also the OpenHands SDK's (openhands/sdk/utils/truncate.py, between the head and the tail);
# OpenHands' "[... Observation truncated due to length ...]" (truncate_content,
# openhands/events/serialization/event.py); Codex's "…N tokens truncated…",
# "[... omitted N of M lines ...]" and "[... output truncated to fit N bytes ...]"
# (codex-rs/core/src/truncate.rs); "... [N lines truncated] ..." as Claude Code's transcripts
# show a long output's end; "[truncated]", "(truncated)", "[N chars omitted]".
_CUT_WORDS = ["truncat", "clipped", "omitted", "elided", "trimmed", "snipped", "shortened"]
_CUT_WORD = f"(?i:{'|'.join(_CUT_WORDS)})"
_NOTE = (
    rf"[\[(<][^\[\]()<>\n]{{0,80}}?{_CUT_WORD}[^\[\]()<>\n]{{0,80}}[\])>]"
    rf"|…[^…\n]{{0,40}}?{_CUT_WORD}[^…\n]{{0,40}}…"
)
# From the end of what was shown to such a note: on its line, or one or two lines below.
_TO_NOTE = rf"[ \t]*(?:\r?\n[ \t]*){{0,2}}(?:(?:\.\.\.|…)[ \t]*)?(?:{_NOTE})"
# Where an output was cut: its end, an elision written inline, a harness's note, or a line
# mini-swe-agent writes where it cut ("</output_head>", "<elided...>").
_CUT = (
    rf"(?=\s*$|\.\.\.|…|{_TO_NOTE}|"
    r"[ \t]*\r?\n[ \t]*(?:</output_head>|<elided|\[(?:…|\.\.\.|output)))"
)
_ELIDED = (
    r"\r?\n</output_head>\r?\n<elided_chars>\r?\n\d+ characters elided\r?\n"
    r"</elided_chars>\r?\n<output_tail>\r?\n"
)
# From a harness's note to where the output resumes: SWE-agent's and OpenHands' NOTE after it,
# an ellipsis, a line break or two.
_RESUMED = (
    rf"{_TO_NOTE}(?:<NOTE>[^<\n]{{0,1000}}</NOTE>)?(?:[ \t]*(?:\.\.\.|…))?"
    r"[ \t]*(?:\r?\n[ \t]*){0,2}"
)


# The extensions of the files grep -rn names before a line: a "host" so named is a path.
_FILE_TYPES = (
    r"py|pyi|ipynb|md|rst|txt|json|jsonl|ya?ml|toml|ini|cfg|conf|lock|[cm]?js|jsx|tsx?|go|rs|"
    r"rb|java|kt|scala|c|h|cc|cpp|hpp|cs|php|swift|sh|bash|sql|html?|css|scss|xml|csv|tsv|"
    r"log|env|tf|hcl|proto|gradle|properties"
)


# A digit or an ASCII symbol (quotes aside): what a word of prose ("sésame") lacks.
_NOT_PROSE = r"[\d!#-&(-/:-@\[-`{-~]"

# What the rules reading any value assigned to a secret's name spare: a short value that
# names what it stands for ("somepassword", "my-secret", "example-key"; a long one is a key,
# whatever letters it holds), as tests' fixtures and documentation's samples do, and a value
# that refers to one: a dotted name (settings.SECRET_KEY, module.path:Class), the name of the
# environment variable holding it (OPENAI_API_KEY; not ADMIN_PASS_2024), a header's name
# (X-API-Key), a variable's (api_key), a field of a template ({self.password}), a mask, a
# type's name. Agent sessions read many in code, and replacing them breaks the edits made to
# those files.
_NOT_SECRET = [
    {
        "target": "secret",
        "regexes": [
            r"(?i)^(?=.{0,24}$|[a-z_.:-]+$).*(?:pass(?:word|wd)|secret|example|dummy|fake|"
            r"sample|placeholder|changeme)",
            r"^(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::\w+)?|"
            r"[A-Z][A-Z0-9_]*_(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD|AUTH|CREDENTIALS?|DSN|URL)|"
            r"[A-Z][A-Za-z]*(?:-[A-Z][A-Za-z]*)+|[a-z][a-z0-9]*(?:_[a-z0-9]+)+|\{[\w.]+\}|:?\*{3,}|"
            r"(?i:value|string|str|bytes|empty|undefined|(?:my|your)[ _-][\w -]*))$",
        ],
    }
]


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


def _in_base64(word: str) -> list[str]:
    """How ``word`` reads in base64, wherever it falls in the encoded bytes: one form for each
    of its three alignments, without the characters that mix in the bytes around it."""
    forms = []
    for before in range(3):
        data = b"\0" * before + word.encode()
        encoded = base64.b64encode(data + b"\0\0").decode()
        forms.append(encoded[-(-8 * before // 6) : 8 * len(data) // 6])
    return forms


_BEGIN_64, _PRIVATE_KEY_64 = _in_base64("-----BEGIN "), _in_base64("PRIVATE KEY")


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
        # The user may be empty: redis://:password@host (Redis before ACLs has no users).
        # The password runs to the last "@" before the host: one written in unescaped, as a
        # .env often holds it, may hold "#", ":" and "@" (cut at the first, its rest was
        # shown); a "/" or "?" ends the authority, so a path or a query never joins it.
        "regex": r"(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s:/?#@'\"<>]{0,100}:"
        r"([^\s/?'\"<>]{1,200})@[\w.-]+",
        "entropy": 0.0,
        "keywords": ["://"],
    },
    {
        "id": "url-query-credential",
        # A credential a URL's query (or fragment) carries: a signed URL's signature, which
        # grants whoever holds the URL what it signs until it expires (S3's X-Amz-Signature
        # and the session token of its temporary credentials, Cloud Storage's
        # X-Goog-Signature, Azure's shared access signature "sig", CloudFront's and a web
        # framework's signed route's "Signature"), and a token (a websocket's "?token=", an
        # OAuth redirect's "#access_token=", "id_token", "refresh_token", GitLab's
        # "private_token"). A cursor named a token ("pageToken", "next_token") names none.
        "regex": r"(?i)[?&#;](?:x-(?:amz|goog)-signature|signature|sig|x-amz-security-token|"
        r"(?:access|auth|id|refresh|session|security|oauth|api|client|bearer|private)?[_-]?"
        r"token)=([A-Za-z0-9%+/=_.~-]{12,2000})(?![A-Za-z0-9%+/=_.~-])",
        "entropy": 3.0,
        "keywords": ["token", "sig"],
        "allowlists": _NOT_SECRET,
    },
    {
        "id": "secret-assignment",
        # A configuration line (.env, shell, YAML, JSON, INI, TOML, docker-compose's
        # "- KEY=value"; as grep -n or cat -n print it too: "path:3:KEY=value") whose key's
        # last word names a secret, the value ending the line
        # (a comment after it aside). Written KEY=value or "key": value, any value is taken
        # but one ending as code's do ("password=pw," in a call, "=get(...)"). Written with
        # spaces around "=", as code assigns too, a quoted value must hold a digit or a
        # symbol (a test's password = 'sésame' is a word), an unquoted one must not be a name
        # ("password = None", "= args.password") or must look random (letters of both cases
        # and digits). PWD and OLDPWD are the shell's working directories (POSIX), which
        # `env` prints: not passwords.
        "regex": r"(?m)^[ \t]*(?:(?:[^\s:]+:(?:\d+[:-])?|\d+[:-]|\d+\t)[ \t]*)?(?:-[ \t]+)?"
        r"(?:export[ \t]+)?"
        r"[\"']?(?!(?:OLD)?PWD\b)"
        + _SECRET_NAME
        + r"[\"']?(?:(?:=|:[ \t]+|(?<=[\"']):)(?:\"([^\"\n]{4,200})\"|'([^'\n]{4,200})'|"
        r"([^\s'\"]{3,199}[^\s'\"#;,():]))|(?:[ \t]+=[ \t]*|=[ \t]+)(?:\"(?=[^\"\n]*"
        + _NOT_PROSE
        + r")([^\"\n]{4,200})\"|'(?=[^'\n]*"
        + _NOT_PROSE
        + r")([^'\n]{4,200})'|(?:(?=[\w.]*\d)(?=[\w.]*[A-Z])(?=[\w.]*[a-z])|"
        r"(?![A-Za-z_][\w.]*(?:\s|$)))([^\s'\"(\[{][^\s'\"]{2,198}[^\s'\"#;,()\[\]{}])))"
        r"(?:[ \t]+#[^\n]*)?[ \t]*$",
        "entropy": 0.0,
        "keywords": ["pass", "pwd", "secret", "key", "token"],
        "allowlists": _NOT_SECRET,
        "keyword_lines": True,
    },
    {
        "id": "secret-field",
        # A JSON object's or a Python dict's field naming a secret, anywhere on a line
        # (compact JSON, a log's payload, a dict in code): its key is quoted, so it is data.
        # An escaped quote (JSON inside a JSON string) ends the value.
        "regex": r"[\"']" + _SECRET_NAME + r"\\?[\"'][ \t]*:[ \t]*\\?(?:\"([^\"\n\\]{4,200})\\?\"|"
        r"'([^'\n\\]{4,200})\\?')",
        "entropy": 0.0,
        "keywords": ["pass", "pwd", "secret", "key", "token"],
        "allowlists": _NOT_SECRET,
    },
    {
        "id": "secret-element",
        # The XML form of a secret assignment: <password>...</password> (Maven's settings.xml,
        # Jenkins' credentials.xml, .NET and Java configuration), whatever the value.
        "regex": r"<(" + _SECRET_NAME + r")(?:[ \t][^<>\n]*)?>[ \t]*([^<>\n]{4,200}?)[ \t]*</\1>",
        "entropy": 0.0,
        "keywords": ["pass", "pwd", "secret", "key", "token"],
        "allowlists": _NOT_SECRET,
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
        r"(?:smbclient|rpcclient)[ \t][^\n]{0,300}?(?<=[ \t])(?:-U|--user=)[ \t]*[^\s%'\"]+%|"
        r"(?:docker|podman|buildah|nerdctl|helm[ \t]+registry)[ \t]+login[ \t][^\n]{0,300}?"
        r"(?<=[ \t])-p[ \t]+)"
        r"(?:\"([^\"\n]{3,200})\"|'([^'\n]{3,200})'|([^\s'\"-][^\s'\";|&]{2,199}))",
        "entropy": 0.0,
        "keywords": [*_PASSWORD_COMMANDS, "login"],
        "starts": [*_PASSWORD_COMMANDS, *_LOGIN_COMMANDS],
    },
    {
        "id": "secret-env-prefix",
        # An environment variable naming a secret, wherever a line holds it: set for one
        # command or container (PGPASSWORD=... psql, docker run -e POSTGRES_PASSWORD=...),
        # listed ("Env": ["DB_PASSWORD=..."] in docker inspect, a log line, JSON-escaped in a
        # tool's stdout, after an escaped line break). Upper case, with no spaces around "=",
        # as shells and .env files write it, where code puts spaces; a value that is a call
        # or an index is code's.
        # The pattern starts with a letter, not a lookbehind, so that the regex engine skips
        # to the capitals: most outputs hold the keywords ("token") and few such names. An
        # unquoted value is read once, in a look-ahead: none of the characters that may end
        # it can be in it, so no shorter value has an end after it (tried at each length, a
        # line of "X_AUTH=" cost five times the same line without "=").
        "regex": r"[A-Z](?<!(?<!\\)[\w$.-][A-Z])(?!(?<=O)LDPWD=|(?<=P)WD=)(?:[A-Z0-9_]*(?:PASSWORD|"
        r"PASSWD|PWD|SECRET|SECRET_KEY|TOKEN|API_KEY|APIKEY|PRIVATE_KEY|AUTH)|(?<=P)ASSW(?:OR)?D|"
        r"(?<=S)ECRET(?:_KEY)?|(?<=T)OKEN|(?<=A)PI_?KEY|(?<=P)RIVATE_KEY)="
        r"(?:\"([^\"\n]{4,200})\"|'([^'\n]{4,200})'|(?=([^\s'\"();,`\[\\]{4,200}))\3)"
        r"(?=[\s'\"`;,)]|\\|$)",
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
        "allowlists": _NOT_SECRET,
    },
    {
        "id": "secret-assignment",
        # key=value inside a line of any case: a log ("connecting with password=..."), a
        # URL's query ("?api_key=..."). Code passes a name there (password=pw): the value
        # must hold a digit or a symbol, and not be a call or an index. After the rule for
        # upper-case names: of one span, that one names it. The pattern starts with a letter,
        # not a lookbehind, so that the regex engine skips to those letters. The value is the
        # whole run up to its end, 200 characters at most: the look for a digit or a symbol
        # reads no further (unbounded, it read to the end of a run holding "password=" at
        # every 9th character from each of them: quadratic, minutes for one line of 1 MB), and
        # stops at the first (greedy, it read all 200 and came back to the last). It
        # is read once, in a look-ahead: no shorter value can be followed by an end (one of
        # the value's characters follows it), and each tried after each "password=" of a
        # line of them made the rule cost a second a megabyte.
        "regex": r"(?i)[psac](?<![a-z0-9][psac])(?!(?<![_.-].)(?<=p)wd=)(?:(?<=p)ass(?:word|wd|"
        r"phrase)?|(?<=p)wd|(?<=s)ecret|(?<=a)pi[_-]?key|(?<=a)ccess[_-]?token|"
        r"(?<=a)uth[_-]?token|(?<=c)lient[_-]?secret)="
        r"(?=[^\s'\"&;,()\[\]{}<>\\]{0,199}?[\d!#$%*+/:=?@^~-])"
        r"(?=([^\s'\"&;,()\[\]{}<>\\]{4,200}))\1"
        r"(?=[\s'\"&;,)\]}>]|\\|$)",
        "entropy": 0.0,
        "keywords": ["pass", "pwd", "secret", "key", "token"],
        "allowlists": _NOT_SECRET,
        "starts": ["pass", "pwd", "secret", "api", "access", "auth", "client"],
    },
    {
        "id": "secret-assignment",
        # A table's row whose first cell names a secret, the value the only other cell:
        # Vault's "Key  Value" table (vault kv get, vault read database/creds/...), a table
        # drawn with "|" or "│" (Markdown, doppler, infisical). Cells apart by two spaces or
        # more, or a bar; the value holds a digit or a symbol (a word there is a setting's
        # state: "password    required").
        "regex": r"(?m)^[ \t]*(?:[│|][ \t]*)?[\"']?"
        + _SECRET_NAME
        + r"[\"']?(?:[ \t]{2,}|\t|[ \t]*[│|][ \t]*)(?=[^\s│|]*"
        + _NOT_PROSE
        + r")([^\s│|'\"]{4,200})[ \t]*(?:[│|][ \t]*)?$",
        "entropy": 0.0,
        "keywords": ["pass", "pwd", "secret", "key", "token"],
        "allowlists": _NOT_SECRET,
        "keyword_lines": True,
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
        "starts": ["--"],
    },
    {
        "id": "cookie",
        # RFC 6265: a Cookie or Set-Cookie header's values are session identifiers, as good
        # as a password while the session lives (curl -v, HTTP logs, browser tools): each pair
        # after the header's name, or after a ";" on a line that says "cookie" (the keyword
        # must be on the match's line). Set-Cookie's attributes are not values; a short or
        # repetitive value (a flag, a locale) is spared.
        "regex": r"(?i)(?:\bcookie[ \t]*:[ \t]*|--cookie[ \t]+[\"']?|;[ \t]*)"
        r"(?!(?:path|domain|expires|max-age|samesite|secure|httponly|priority|partitioned)=)"
        r"[\w.$%!#&*+^|~-]+=([^;\s\"'\\]{8,})",
        "entropy": 3.0,
        "keywords": ["cookie"],
        "starts": ["cookie", "--cookie", ";"],
    },
    {
        "id": "api-key-header",
        # An HTTP header that carries an API key or token as its whole value (x-api-key for
        # Anthropic and AWS API Gateway, api-key for Azure OpenAI, GitLab's Private-Token,
        # Vault's X-Vault-Token), on a header line of an HTTP log ("> x-api-key: ...").
        "regex": r"(?im)^[ \t]*(?:[<>][ \t]*)?(?:x-api-key|api-key|x-apikey|x-auth-token|"
        r"private-token|x-goog-api-key|x-access-token|x-vault-token|"
        r"ocp-apim-subscription-key)[ \t]*:[ \t]*([^\s]{8,})[ \t]*$",
        "entropy": 3.0,
        "keywords": ["api-key", "apikey", "token", "subscription-key"],
        "keyword_lines": True,
    },
    {
        "id": "gcp-private-key-id",
        # The id of a Google Cloud service account's key (40 hexadecimal characters), in the
        # key file's JSON beside the private key (which gitleaks' private-key rule finds), in
        # a JSON string's escaped JSON, a YAML or TOML key, an environment variable. gitleaks'
        # gcp-service-account rule finds such a file by its '"type": "service_account"' and
        # no value; the id is named by its field here, as gitleaks' semi-generic rules name a
        # key, its entropy above a run of one digit's.
        "regex": r"(?i)private[_-]?key[_-]?id\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?([0-9a-f]{40})"
        r"(?![0-9a-z])",
        "entropy": 3.0,
        "keywords": ["private_key_id", "private-key-id", "privatekeyid"],
    },
    {
        "id": "netrc-password",
        # A .netrc entry (curl, git, ftp, pip read it): "machine HOST login USER password
        # VALUE", on one line or several.
        "regex": r"(?im)^[ \t]*(?:machine[ \t]+\S+|default)(?:\s+(?:login|account|port)[ \t]+\S+)*"
        r"\s+password[ \t]+(\S{3,200})",
        "entropy": 0.0,
        "keywords": ["machine", "default"],
        "allowlists": _NOT_SECRET,
    },
    {
        "id": "pgpass-password",
        # A line of PostgreSQL's password file (~/.pgpass, PGPASSFILE), as `cat` prints it:
        # hostname:port:database:username:password, the password last. As libpq reads it
        # (https://www.postgresql.org/docs/current/libpq-pgpass.html), any of the first four
        # fields may be "*", and a colon or a backslash in a field is escaped with a
        # backslash. Neither gitleaks nor detect-secrets has a rule for it (detect-secrets'
        # keyword detector needs a key naming the secret; this line has none), so the line's
        # whole shape is the rule: five fields, none empty, the second a port (four or five
        # digits: PostgreSQL listens on 5432, 6432...; a line number or a time's hour has
        # fewer), the first a host (a name holding a letter or a dot, an address in brackets,
        # a socket's directory), the database and the user names, not numbers (a log's
        # "node1:8080:GET:200:took 5 ms"): not a time (12:30:45), an IPv6 address, host:port,
        # an /etc/passwd line (its second field is "x"), a slice or a C++ scope (empty
        # fields), a name before a time (INFO:12:30:45:message), grep -n of a file without
        # an extension (Makefile:12:a:b:c). Only the password may hold a space (libpq reads it to
        # the end of the line): its words, apart by spaces, are matched so that no word can
        # be split two ways, which keeps the pattern linear on a line of many spaces.
        # grep -rn prints "path:line:" before a line, the shape of a host and a port: a host
        # named as a source or configuration file is no host.
        "regex": rf"(?m)^{_NUMBERED}(?:\*|\[[0-9A-Fa-f:.]+\]|/(?:[^\s:\\]|\\\S)*|"
        rf"(?=[\w.-]*[A-Za-z.])(?![\w.-]*\.(?i:{_FILE_TYPES}):)\w(?:[\w.-]|\\\S)*)"
        r":(?:\*|[1-9]\d{3,4})(?::(?:\*|(?!\d+:)(?:[^\s:\\]|\\\S)+)){2}:"
        r"((?:[^\s:\\]|\\\S)+(?:[ \t]+(?:[^\s:\\]|\\\S)+)*)[ \t]*\r?$",
        "entropy": 0.0,
        "keywords": [],
        "allowlists": _NOT_SECRET,
        # A port, then two more colons before a space (the first field after it is not
        # empty, nor is the password): anchored at every line's start, the pattern cost ten
        # times what this search does.
        "line_gate": r":(?:\*|\d{1,5}):[^\s:]+:[^\s:]*:\S",
    },
    {
        "id": "sql-password",
        # A password in SQL: PostgreSQL's CREATE/ALTER ROLE ... [WITH] [LOGIN] PASSWORD '...',
        # MySQL's IDENTIFIED [WITH plugin] BY '...' and SET PASSWORD [FOR user] = '...',
        # Oracle's IDENTIFIED BY "...".
        "regex": r"(?i)\b(?:(?:with|encrypted|unencrypted|login|role[ \t]+[\w\"]+|"
        r"user[ \t]+[\w\"'`@%.-]+)[ \t]+password|"
        r"\b(?:user|grant)\b[^\n;]{0,200}?\bidentified(?:[ \t]+with[ \t]+\w+)?[ \t]+by|"
        r"set[ \t]+password(?:[ \t]+for[ \t]+[\w\"'`@%.-]+)?[ \t]*=(?:[ \t]*password[ \t]*\()?)"
        r"[ \t]*(?:'((?:[^'\n]|''){3,200})'|\"([^\"\n]{3,200})\")",
        "entropy": 0.0,
        "keywords": ["password", "identified"],
        "allowlists": _NOT_SECRET,
        "starts": ["with", "encrypted", "unencrypted", "login", "role", "user", "grant", "set"],
    },
    {
        "id": "cut-token",
        # A provider's token cut by the output's truncation, its prefix and part of its body
        # shown: replaced as far as it goes.
        "regex": rf"(?<![\w-])({_CUT_TOKEN})(?![\w-]){_CUT}",
        "keywords": _CUT_KEYWORDS,
        "starts": _CUT_KEYWORDS,
    },
    {
        "id": "cut-token",
        # The rest of such a token, where mini-swe-agent's envelope resumes the output.
        "regex": rf"(?<![\w-])(?:{_CUT_HEAD}){_ELIDED}([\w-]{{4,}})",
        "keywords": _CUT_KEYWORDS,
        "starts": _CUT_KEYWORDS,
    },
    {
        "id": "cut-token",
        # The rest of such a token after another harness's note (the head and the tail of the
        # output kept). What was shown before the note must look random, or be the prefix
        # alone: a name such as ghp_import is no token's head. Tried only in a text holding a
        # note's word: every token of a text is a head to try.
        "regex": rf"(?<![\w-])(?:{_CUT_TOKEN}|{_PREFIXES})(?![\w-]){_RESUMED}([\w-]{{4,}})",
        "keywords": _CUT_WORDS,
        "starts": _CUT_KEYWORDS,
    },
    {
        "id": "discord-bot-token",
        # The bot's id in base64 (its digits encode to M, N or O first), a timestamp, an HMAC.
        # The pattern starts with the letter, not a lookbehind, so that the regex engine skips
        # to those letters: the rule has no keyword and reads every output.
        "regex": r"([MNO](?<![\w-][MNO])[A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\."
        r"[A-Za-z0-9_-]{27,38})(?![\w-])",
        "entropy": 3.5,
        "keywords": [],
    },
    {
        "id": "discord-webhook-url",
        "regex": r"(?i)https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/"
        r"([A-Za-z0-9_-]{60,80})",
        "entropy": 3.0,
        "keywords": ["discord"],
    },
    {
        "id": "xai-api-key",
        "regex": r"\b(xai-[0-9A-Za-z_]{80})\b",
        "entropy": 3.5,
        "keywords": ["xai-"],
    },
    {
        "id": "groq-api-key",
        "regex": r"\b(gsk_[A-Za-z0-9]{52})\b",
        "entropy": 3.5,
        "keywords": ["gsk_"],
    },
    {
        "id": "replicate-api-token",
        "regex": r"\b(r8_[0-9A-Za-z_-]{37})(?![\w-])",
        "entropy": 3.5,
        "keywords": ["r8_"],
    },
    {
        "id": "private-key",
        # A private key cut before its END line (an output truncated by the tool, `head`):
        # the base64 lines after BEGIN. A whole block is gitleaks' rule's.
        "regex": r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[ \t]*\r?\n"
        rf"(?:{_NUMBERED}[A-Za-z-]+:[^\n]*\r?\n)*(?:{_NUMBERED}\r?\n)?"
        rf"((?:{_NUMBERED}[A-Za-z0-9+/=]{{4,}}[ \t]*(?:\r?\n|$))+)",
        "entropy": 3.0,
        "keywords": ["-----begin"],
    },
    {
        "id": "private-key",
        # Its tail without BEGIN (an output cut before it): the base64 lines before END.
        "regex": rf"(?<=(?:^|\n)((?:{_NUMBERED}[A-Za-z0-9+/=]{{4,}}[ \t]*\r?\n)+))"
        rf"{_NUMBERED}-----END[ A-Z0-9_-]{{0,100}}PRIVATE KEY(?: BLOCK)?-----",
        "entropy": 3.0,
        "keywords": ["-----end"],
        "engine": "regex",
    },
    {
        "id": "private-key",
        # Its middle alone (a paged read, `sed -n 5,20p`): four or more lines of a PEM body's
        # width (64 characters; 70 in OpenSSH's), neither after a BEGIN line (the rules above
        # read a private key's; a certificate's or public key's is not a secret) nor before
        # the END of anything but a private key. A middle part of an RSA key gives its primes
        # away; a certificate's middle alone is read as one, a cost taken for safety.
        "regex": rf"(?:^|(?<=\n))(?={_NUMBERED}{_PEM_LINE}[ \t]*\r?\n)"
        rf"(?<!-----BEGIN[^\n]{{0,100}}-----[ \t]*\r?\n(?:{_NUMBERED}[A-Za-z-]+:[^\n]*\r?\n)*"
        rf"(?:{_NUMBERED}\r?\n)?)(?<!(?:^|\n){_NUMBERED}{_PEM_LINE}[ \t]*\r?\n)"
        rf"((?:{_NUMBERED}{_PEM_LINE}[ \t]*\r?\n){{3,}}{_NUMBERED}{_PEM_LINE}"
        rf"(?:[ \t]*\r?\n{_NUMBERED}[A-Za-z0-9+/]{{1,69}}={{0,2}})?)[ \t]*(?=\r?\n|$)"
        rf"(?!\r?\n{_NUMBERED}(?:[A-Za-z0-9+/]|-----END(?![ A-Z0-9_-]{{0,100}}PRIVATE KEY)))",
        "entropy": 4.5,
        "keywords": [],
        # Its slow look-behinds run only where a line is a PEM body's (base64, not hex): each
        # match begins where the gate is found.
        "gate": rf"(?m)^{_NUMBERED}{_PEM_LINE}[ \t]*\r?$",
        "engine": "regex",
    },
    {
        "id": "private-key",
        # A private key's PEM block in base64: a kubeconfig's client-key-data, a Kubernetes
        # Secret's tls.key, `base64 key.pem` (its lines wrapped). The BEGIN line's words are
        # read in base64 (a certificate's or a public key's BEGIN line is no secret); the
        # whole run goes, and the whole lines of base64 after it.
        "regex": rf"(?<![A-Za-z0-9+/])([A-Za-z0-9+/]*?(?:{'|'.join(_BEGIN_64)})"
        rf"[A-Za-z0-9+/]{{0,140}}?(?:{'|'.join(_PRIVATE_KEY_64)})[A-Za-z0-9+/]*={{0,2}}"
        r"(?:\r?\n[A-Za-z0-9+/]{16,}={0,2}(?![^\r\n]))*)",
        "keywords": [form.lower() for form in _BEGIN_64],
    },
)
