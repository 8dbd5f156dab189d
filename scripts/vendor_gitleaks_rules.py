"""Write ``ctxpack/data/secret_rules.json``, the secret rules ctxpack redacts with, from gitleaks.

gitleaks (https://github.com/gitleaks/gitleaks, MIT licence) keeps a maintained set of rules for
provider keys and tokens in ``config/gitleaks.toml``. This script vendors them, with their
licence and the commit they come from, so that ctxpack needs neither gitleaks nor a network at
run time:

- rules that match on file paths only are left out (ctxpack sees text, not files);
- the path parts of allowlists are left out, for the same reason;
- gitleaks' regexes are Go (RE2) syntax. Most mean the same to Python's ``re``, the fastest
  engine at hand; each rule records the engine that reads it as Go does: ``"re"`` when ``re``
  compiles it without a warning, else ``"regex"``, the ``regex`` package in its version-1 mode,
  which reads a flag such as ``(?i)`` in the middle of a pattern as Go does (to the end of the
  group) and knows POSIX classes such as ``[[:alnum:]]``. The one spelling neither has, ``\\z``,
  becomes ``\\Z``. The script fails if a rule compiles with neither;
- a pattern known to read otherwise than meant is corrected (``CORRECTED``);
- a part of a pattern that a backtracking engine reads in quadratic time, where Go's RE2 is
  linear, is written so that it is linear and finds the same texts (``LINEAR``).

Usage::

    git clone https://github.com/gitleaks/gitleaks /tmp/gitleaks   # or any copy of the file
    python scripts/vendor_gitleaks_rules.py /tmp/gitleaks/config/gitleaks.toml \\
        --license /tmp/gitleaks/LICENSE --commit "$(git -C /tmp/gitleaks rev-parse HEAD)"
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import regex
import tomllib

OUT = Path(__file__).resolve().parent.parent / "ctxpack" / "data" / "secret_rules.json"


# Patterns whose alternation is not anchored as meant, and what they were meant to say.
# gitleaks' global allowlist's "^true|false|null$" reads "starts with true, holds false, or
# ends with null": it spared any secret holding "false" (a private key cut before a line
# FALSE, a password with the word in it), not the placeholder words alone.
CORRECTED = {r"(?i)^true|false|null$": r"(?i)^(?:true|false|null)$"}

# Parts of patterns that re and regex (backtracking engines) read in quadratic time, and a
# linear form that a search finds in the same texts. generic-api-key's match allowlist runs on
# the whole match, whose value has no upper length ("[a-z0-9+/]{11,}"): a base64 blob after
# "api_key = " took 10 s at 100 kB, minutes at 1 MB. A search needs neither a leading run that
# may be empty nor more than one character of a run before a literal; ":jar:" is found first
# and the run before it read back once; a run that a character outside it must end is taken
# whole (possessive). So is generic-api-key's value, up to 150 characters that none of the
# characters allowed after it continues: tried at each shorter length after each "key=" of
# "key=key=...", it cost a second a megabyte. It stays in ``re`` (possessive only from Python
# 3.11) as a look-ahead, read whole, and the text it read.
LINEAR = (
    (
        r"""([\w.=-]{10,150}|[a-z0-9][a-z0-9+/]{11,}={0,3})(?:[\x60'"\s;]|\\[nr]|$)""",
        r"((?=(?P<value>[\w.=-]{10,150}))(?P=value)|[a-z0-9][a-z0-9+/]{11,}={0,3})"
        r"""(?:[\x60'"\s;]|\\[nr]|$)""",
    ),
    (r"[a-z0-9-]*?api[a-z0-9-]*?:jar:", r":jar:(?<=api[a-z0-9-]*:jar:)"),
    (
        r"(?-i:(?:[A-Z_]+=\n[A-Z_]+=|[a-z_]+=\n[a-z_]+=)(?:\n|\Z))",
        r"(?-i:(?:[A-Z_]=\n[A-Z_]++=|[a-z_]=\n[a-z_]++=)(?:\n|\Z))",
    ),
    (
        r"(?-i:(?:[A-Z.]+=\n[A-Z.]+=|[a-z.]+=\n[a-z.]+=)(?:\n|\Z))",
        r"(?-i:(?:[A-Z.]=\n[A-Z.]++=|[a-z.]=\n[a-z.]++=)(?:\n|\Z))",
    ),
)


def go_to_python(pattern: str) -> str:
    """A Go RE2 pattern as the ``regex`` package reads it in version-1 mode (corrected, for
    one of ``CORRECTED``; linear, for one holding a part of ``LINEAR``)."""
    translated = CORRECTED.get(pattern, pattern).replace(r"\z", r"\Z")
    for quadratic, linear in LINEAR:
        translated = translated.replace(quadratic, linear)
    return translated


def _check(pattern: str, where: str) -> str:
    translated = go_to_python(pattern)
    try:
        regex.compile(translated, regex.V1)
    except regex.error as exc:
        sys.exit(f"{where}: {pattern!r} does not compile ({exc})")
    return translated


def engine(pattern: str) -> str:
    """``"re"`` when Python's ``re`` reads ``pattern`` without a warning (say, of a nested set
    such as ``[[:alnum:]]``, which ``re`` reads differently), else ``"regex"``."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            re.compile(pattern)
        except (re.error, FutureWarning, DeprecationWarning):
            return "regex"
    return "regex" if "(?i)" in pattern[1:] else "re"


def _allowlist(entry: dict[str, Any], where: str) -> dict[str, Any] | None:
    regexes = [_check(r, where) for r in entry.get("regexes", [])]
    stopwords = [str(w).lower() for w in entry.get("stopwords", [])]
    if not regexes and not stopwords:
        return None  # a path-only allowlist
    condition = entry.get("condition", "OR")
    if condition == "AND" and entry.get("paths"):
        return None  # needs a path to hold, and ctxpack has none
    return {
        "target": entry.get("regexTarget", "secret"),
        "regexes": regexes,
        "stopwords": stopwords,
    }


def convert(config: dict[str, Any]) -> dict[str, Any]:
    rules = []
    for rule in config["rules"]:
        if "regex" not in rule:
            continue  # a rule on file names only
        where = f"rule {rule['id']}"
        allowlists = [
            a
            for i, entry in enumerate(rule.get("allowlists", []))
            if (a := _allowlist(entry, f"{where} allowlist {i}")) is not None
        ]
        rules.append(
            {
                "id": rule["id"],
                "description": rule.get("description", ""),
                "regex": (pattern := _check(rule["regex"], where)),
                "engine": engine(pattern),
                "entropy": float(rule.get("entropy", 0.0)),
                "keywords": [k.lower() for k in rule.get("keywords", [])],
                "secret_group": int(rule.get("secretGroup", 0)),
                "allowlists": allowlists,
            }
        )
    glob = config.get("allowlist", {})
    return {
        "global_allowlist": {
            "regexes": [_check(r, "global allowlist") for r in glob.get("regexes", [])],
            "stopwords": [str(w).lower() for w in glob.get("stopwords", [])],
        },
        "rules": rules,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config", type=Path, help="gitleaks' config/gitleaks.toml")
    parser.add_argument("--license", type=Path, required=True, help="gitleaks' LICENSE file")
    parser.add_argument("--commit", required=True, help="the gitleaks commit the file is from")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    config = tomllib.loads(args.config.read_text(encoding="utf-8"))
    data = {
        "source": "https://github.com/gitleaks/gitleaks/blob/master/config/gitleaks.toml",
        "commit": args.commit,
        "license": args.license.read_text(encoding="utf-8"),
        "generated_by": "scripts/vendor_gitleaks_rules.py",
        **convert(config),
    }
    args.out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(data['rules'])} rules -> {args.out}")


if __name__ == "__main__":
    main()
