"""Recall of secret redaction on secrets someone else wrote: trufflehog's detector tests.

trufflehog (https://github.com/trufflesecurity/trufflehog) tests each of its ~900 detectors
with example inputs (log lines, config files, Jenkins XML, JSON) and the secrets the detector
must find in them (``pkg/detectors/<name>/<name>_test.go``: ``input`` and ``want`` of each
case of the ``_Pattern`` test table). Neither ctxpack's own corpus nor gitleaks' examples are
used, so the rules were not written against these inputs.

Each example input goes through :func:`ctxpack.redaction.redact` as a tool output would. A
secret is caught when it no longer appears in the redacted text; a secret of several parts
(``key:secret``, a key and an id concatenated, a JSON object of fields) is caught when every
part of 8 characters or more is gone, and its longest part is reported apart (an id or a
host name is often a part, and is no secret). Cases whose ``want`` is empty (inputs the
detector must reject) are not counted, nor wants whose text is not in the input (a decoded
or rebuilt value); what the Go reader cannot evaluate is skipped and counted.

Detectors (top-level folders of ``pkg/detectors``) are split by the first byte of the SHA-256
of their name: even is the tune half, read to improve the rules; odd is the report half,
never read for that. The split was fixed before any result was seen.

Usage (from the repository root; trufflehog's tree exported from a checkout)::

    python benchmarks/redaction_external.py --trufflehog /tmp/trufflehog
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxpack.redaction import find_secrets, redact

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "results"
MIN_PART = 8


class Unparsable(Exception):
    """A Go expression this reader does not evaluate."""


# --- a small reader of Go test files ------------------------------------------------------

_TOKEN = re.compile(
    r"""(?P<space>\s+)|(?P<comment>//[^\n]*|/\*.*?\*/)|(?P<raw>`[^`]*`)|"""
    r"""(?P<str>"(?:[^"\\\n]|\\.)*")|(?P<rune>'(?:[^'\\\n]|\\.)+')|"""
    r"""(?P<num>\d[\w.]*)|(?P<ident>[A-Za-z_]\w*)|(?P<op>:=|==|!=|<=|>=|\+=|\.\.\.|&&|\|\||[-+*/%(){}\[\],.:;=<>!&|^])""",
    re.S,
)


@dataclass
class Tok:
    kind: str
    text: str
    pos: int


def tokenize(source: str) -> list[Tok]:
    toks, pos = [], 0
    while pos < len(source):
        m = _TOKEN.match(source, pos)
        if m is None:
            pos += 1  # a character Go allows that no test table needs
            continue
        kind = m.lastgroup or ""
        if kind not in ("space", "comment"):
            toks.append(Tok(kind, m.group(), pos))
        pos = m.end()
    return toks


def _go_string(tok: Tok) -> str:
    if tok.kind == "raw":
        return tok.text[1:-1].replace("\r", "")
    try:
        value = json.loads(tok.text)
    except json.JSONDecodeError:
        # Go escapes JSON lacks (\x41, \a, \'); Python's reading of them is Go's.
        value = tok.text[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    return str(value)


def _sprintf(fmt: str, args: list[Any]) -> str:
    out, i, n = [], 0, 0
    while i < len(fmt):
        if fmt[i] != "%":
            out.append(fmt[i])
            i += 1
            continue
        m = re.compile(r"%([-+# 0]*\d*(?:\.\d+)?)([a-zA-Z%])").match(fmt, i)
        if m is None:
            raise Unparsable("format")
        verb = m.group(2)
        i = m.end()
        if verb == "%":
            out.append("%")
            continue
        if n >= len(args):
            raise Unparsable("format arguments")
        arg = args[n]
        n += 1
        if verb in "svd":
            out.append(str(arg))
        elif verb == "q":
            out.append(json.dumps(str(arg)))
        else:
            raise Unparsable(f"verb %{verb}")
    return "".join(out)


class Reader:
    """Evaluates the string expressions of one Go file: literals, constants, ``+``,
    ``fmt.Sprintf``, ``strings.Repeat``, ``[]string{...}``, ``[]byte(...)``."""

    def __init__(self, source: str) -> None:
        self.toks = tokenize(source)
        self.defs: dict[str, list[int]] = {}  # name -> token index of each definition's value
        for i in range(1, len(self.toks) - 1):
            t = self.toks[i]
            if (
                t.kind == "ident"
                and self.toks[i + 1].text in ("=", ":=")
                and self.toks[i - 1].text != "."
            ):
                self.defs.setdefault(t.text, []).append(i + 2)
        self._evaluating: set[int] = set()

    def lookup(self, name: str, at: int) -> Any:
        starts = self.defs.get(name)
        if not starts:
            raise Unparsable(f"name {name}")
        before = [s for s in starts if s < at]
        start = before[-1] if before else starts[0]
        if start in self._evaluating:
            raise Unparsable(f"recursive {name}")
        self._evaluating.add(start)
        try:
            value, _ = self.expr(start)
        finally:
            self._evaluating.discard(start)
        return value

    def expr(self, i: int) -> tuple[Any, int]:
        value, i = self.primary(i)
        while i < len(self.toks) and self.toks[i].text == "+":
            right, i = self.primary(i + 1)
            if not isinstance(value, str) or not isinstance(right, str):
                raise Unparsable("+ of non-strings")
            value += right
        return value, i

    def args(self, i: int) -> tuple[list[Any], int]:
        """The comma-separated expressions from ``i`` (after an opening bracket) to its close."""
        values: list[Any] = []
        while self.toks[i].text not in (")", "}"):
            value, i = self.expr(i)
            values.append(value)
            if self.toks[i].text == ",":
                i += 1
        return values, i + 1

    def primary(self, i: int) -> tuple[Any, int]:
        t = self.toks[i]
        text = t.text
        if t.kind in ("raw", "str"):
            return _go_string(t), i + 1
        if t.kind == "num":
            return text, i + 1
        if text == "nil":
            return [], i + 1
        if text == "(":
            value, i = self.expr(i + 1)
            if self.toks[i].text != ")":
                raise Unparsable("parenthesis")
            return value, i + 1
        if text == "[" and self.toks[i + 1].text == "]":
            elem = self.toks[i + 2].text
            if elem == "string" and self.toks[i + 3].text == "{":
                values, j = self.args(i + 4)
                if not all(isinstance(v, str) for v in values):
                    raise Unparsable("[]string of non-strings")
                return values, j
            if elem == "byte" and self.toks[i + 3].text == "(":
                value, j = self.expr(i + 4)
                return value, j + 1
            raise Unparsable(f"[]{elem}")
        if text == "string" and self.toks[i + 1].text == "(":
            value, j = self.expr(i + 2)
            return value, j + 1
        if t.kind == "ident":
            if self.toks[i + 1].text == "." and i + 3 < len(self.toks):
                call = f"{text}.{self.toks[i + 2].text}"
                if self.toks[i + 3].text == "(":
                    values, j = self.args(i + 4)
                    if call == "fmt.Sprintf" and values and isinstance(values[0], str):
                        return _sprintf(values[0], values[1:]), j
                    if call == "strings.Repeat" and len(values) == 2:
                        return str(values[0]) * int(values[1]), j
                    if call == "strings.Join" and len(values) == 2:
                        return str(values[1]).join(values[0]), j
                    raise Unparsable(call)
                raise Unparsable(call)
            if self.toks[i + 1].text in ("(", "{", "["):
                raise Unparsable(f"call {text}")
            return self.lookup(text, i), i + 1
        raise Unparsable(f"token {text!r}")

    def cases(self) -> Iterator[tuple[str, Any, Any]]:
        """(name, input, want) of each element of a test table: a ``{...}`` whose keys include
        ``input`` and ``want``; a value this reader cannot evaluate is the exception."""
        stack: list[dict[str, int]] = []
        for i, t in enumerate(self.toks):
            if t.text == "{":
                stack.append({})
            elif t.text == "}":
                keys = stack.pop() if stack else {}
                if "input" in keys and "want" in keys:
                    yield self._case(keys)
            elif (
                t.kind == "ident"
                and stack
                and i + 1 < len(self.toks)
                and self.toks[i + 1].text == ":"
                and self.toks[i - 1].text in ("{", ",")
            ):
                stack[-1].setdefault(t.text, i + 2)

    def _case(self, keys: dict[str, int]) -> tuple[str, Any, Any]:
        name: Any = ""
        try:
            if "name" in keys:
                name, _ = self.expr(keys["name"])
        except Unparsable:
            name = "?"
        try:
            given, _ = self.expr(keys["input"])
            want, _ = self.expr(keys["want"])
        except (Unparsable, IndexError, ValueError) as exc:
            return str(name), Unparsable(str(exc)), None
        return str(name), given, want


# --- scoring ------------------------------------------------------------------------------


def parts_of(want: str, given: str) -> list[str]:
    """The parts of ``want`` that appear in ``given``, each as long as possible.

    A detector's result is often its parts rebuilt: ``key:secret``, a key and an id
    concatenated, a JSON object of fields. The parts are read back from the input: from each
    position of ``want`` the longest run that occurs in the input, or one character (a
    separator the detector added) skipped.
    """
    values = [want]
    if want.startswith("{"):
        try:
            obj = json.loads(want)
        except json.JSONDecodeError:
            pass
        else:
            if isinstance(obj, dict):
                values = [str(v) for v in obj.values() if isinstance(v, str | int)]
    parts: list[str] = []
    for value in values:
        if value in given:
            parts.append(value)
            continue
        i = 0
        while i < len(value):
            lo, hi = i, len(value)  # value[i:lo] occurs; find the longest that does
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if value[i:mid] in given:
                    lo = mid
                else:
                    hi = mid - 1
            if lo > i:
                parts.append(value[i:lo])
                i = lo
            else:
                i += 1
    return [p for p in parts if len(p) >= MIN_PART]


def split_half(detector: str) -> str:
    return "tune" if hashlib.sha256(detector.encode()).digest()[0] % 2 == 0 else "report"


@dataclass
class Detector:
    name: str
    files: int = 0
    examples: int = 0
    secrets: int = 0
    caught: int = 0
    main_caught: int = 0
    misses: list[dict[str, Any]] = field(default_factory=list)


def test_files(root: Path) -> Iterator[tuple[str, Path]]:
    base = root / "pkg" / "detectors"
    for path in sorted(base.rglob("*_test.go")):
        rel = path.relative_to(base)
        if len(rel.parts) < 2 or "integ" in path.name:
            continue  # the package's own tests; live-API tests
        yield rel.parts[0], path


def score(root: Path) -> tuple[dict[str, Detector], Counter[str]]:
    detectors: dict[str, Detector] = {}
    skipped: Counter[str] = Counter()
    for name, path in test_files(root):
        det = detectors.setdefault(name, Detector(name))
        det.files += 1
        reader = Reader(path.read_text("utf-8", errors="replace"))
        seen: set[tuple[str, str]] = set()
        for case, given, want in reader.cases():
            if isinstance(given, Unparsable):
                skipped["case not evaluated"] += 1
                continue
            if isinstance(want, str):
                want = [want]
            if not isinstance(given, str) or not isinstance(want, list):
                skipped["input or want not strings"] += 1
                continue
            want = [w for w in want if isinstance(w, str) and w]
            if not want:
                continue  # an input the detector must reject
            if (given, "\0".join(want)) in seen:
                continue
            seen.add((given, "\0".join(want)))
            redacted = redact(given).text
            counted = False
            for w in dict.fromkeys(want):
                parts = parts_of(w, given)
                if not parts:
                    skipped["want not in input"] += 1
                    continue
                counted = True
                det.secrets += 1
                left = [p for p in parts if p in redacted]
                main = max(parts, key=len)
                det.caught += not left
                det.main_caught += main not in redacted
                if left:
                    det.misses.append(
                        {
                            "file": str(path.relative_to(root)),
                            "case": case,
                            "left": left,
                            "kinds": sorted({f.kind for f in find_secrets(given)}),
                            "input": given,
                        }
                    )
            det.examples += counted
    return {k: v for k, v in detectors.items() if v.secrets}, skipped


def summary(dets: list[Detector]) -> dict[str, Any]:
    secrets = sum(d.secrets for d in dets)
    caught = sum(d.caught for d in dets)
    main = sum(d.main_caught for d in dets)
    return {
        "detectors": len(dets),
        "detectors_all_caught": sum(d.caught == d.secrets for d in dets),
        "examples": sum(d.examples for d in dets),
        "secrets": secrets,
        "caught": caught,
        "recall_pct": 100 * caught / max(secrets, 1),
        "longest_part_caught": main,
        "longest_part_recall_pct": 100 * main / max(secrets, 1),
    }


def _commit(root: Path, given: str | None) -> str:
    if given:
        return given
    if not (root / ".git").exists():
        return "unknown"  # an exported tree; git would answer for a repository around it
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True
        )
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def table(halves: dict[str, dict[str, Any]], missed: dict[str, list[tuple[str, int, int]]]) -> str:
    rows = [
        "| half | detectors | examples | secrets | caught | recall | longest part caught "
        "| detectors with every secret caught |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for half, s in halves.items():
        rows.append(
            f"| {half} | {s['detectors']} | {s['examples']} | {s['secrets']} | {s['caught']} "
            f"| {s['recall_pct']:.1f}% | {s['longest_part_caught']} "
            f"({s['longest_part_recall_pct']:.1f}%) | {s['detectors_all_caught']} |"
        )
    rows.append("")
    for half, worst in missed.items():
        rows.append(
            f"Largest families missed, {half} half (secrets missed / secrets): "
            + ", ".join(f"{n} {m}/{s}" for n, m, s in worst)
            + "."
        )
        rows.append("")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trufflehog", type=Path, required=True, help="trufflehog's tree")
    parser.add_argument("--commit", default=None, help="its commit, when PATH is no checkout")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--name", default="redaction_external", help="results file name, without extension"
    )
    parser.add_argument("--label", default="", help="a note for the title (which rules ran)")
    parser.add_argument(
        "--show-misses",
        choices=["tune"],
        default=None,
        help="print the tune half's misses (the report half's are never shown)",
    )
    args = parser.parse_args()
    if not (args.trufflehog / "pkg" / "detectors").is_dir():
        parser.error(f"{args.trufflehog} has no pkg/detectors: give trufflehog's tree")
    find_secrets("warm up: key=value token ghp_ AKIA sk- xoxb- -----BEGIN")
    start = time.perf_counter()
    detectors, skipped = score(args.trufflehog)
    seconds = time.perf_counter() - start
    by_half: dict[str, list[Detector]] = {"tune": [], "report": []}
    for det in detectors.values():
        by_half[split_half(det.name)].append(det)
    halves = {half: summary(dets) for half, dets in by_half.items()}
    missed = {
        half: [
            (d.name, d.secrets - d.caught, d.secrets)
            for d in sorted(dets, key=lambda d: (d.caught - d.secrets, d.name))[:15]
            if d.caught < d.secrets
        ]
        for half, dets in by_half.items()
    }
    commit = _commit(args.trufflehog, args.commit)
    if args.show_misses:
        for det in sorted(by_half[args.show_misses], key=lambda d: d.name):
            for miss in det.misses:
                print(f"## {det.name} {miss['case']!r} kinds={miss['kinds']} left={miss['left']}")
                print(miss["input"].strip()[:600])
                print()
    text = "\n".join(
        [
            "# Secret redaction: recall on trufflehog's detector tests"
            + (f" ({args.label})" if args.label else ""),
            "",
            "Independent recall: the example inputs of trufflehog's detector tests "
            f"(commit `{commit}`, `pkg/detectors/*/*_test.go`, live-API tests left out), each "
            "redacted as a tool output; a secret is caught when it is gone from the redacted "
            "text (every part of 8 characters or more, for a secret of several parts such as "
            "a key and its id; the longest part alone in its own column). Detectors are split "
            "by a hash of their name, fixed before any result was seen: the tune half was "
            "read to improve the rules, the report half never was.",
            "",
            table(halves, missed),
            "Not counted: "
            + ", ".join(f"{n} {k}" for k, n in sorted(skipped.items()))
            + f". {seconds:.1f} s for every example.",
            "",
            "Reproduce: export trufflehog's tree (`git archive <commit> pkg/detectors`) and run "
            "`python benchmarks/redaction_external.py --trufflehog PATH --commit <commit>`.",
            "",
        ]
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.md").write_text(text, encoding="utf-8")
    (args.out / f"{args.name}.json").write_text(
        json.dumps(
            {
                "trufflehog_commit": commit,
                "label": args.label,
                "halves": halves,
                "skipped": dict(skipped),
                "detectors": {
                    d.name: {
                        "half": split_half(d.name),
                        "examples": d.examples,
                        "secrets": d.secrets,
                        "caught": d.caught,
                        "longest_part_caught": d.main_caught,
                    }
                    for d in sorted(detectors.values(), key=lambda d: d.name)
                },
            },
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    print(text)


if __name__ == "__main__":
    sys.exit(main())
