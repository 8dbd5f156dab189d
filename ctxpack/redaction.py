"""Secrets found in text and replaced by a placeholder naming their kind.

The rules are gitleaks' (https://github.com/gitleaks/gitleaks, MIT licence), vendored in
``ctxpack/data/secret_rules.json`` by ``scripts/vendor_gitleaks_rules.py``: provider keys and
tokens by their published formats (AWS, GitHub, GitLab, OpenAI, Anthropic, Slack, Stripe,
Google, Azure, npm, PyPI...), private-key blocks, JWTs, and high-entropy values assigned to a
key that names a secret. They run as gitleaks runs them: a rule is tried only when one of its
keywords appears (in the text, then on the lines of the match), the secret is the rule's capture
group, it must reach the rule's entropy, and the rule's and the global allowlists spare
placeholders such as ``${TOKEN}``.

Rules of ctxpack's own cover what gitleaks leaves to other tools: credentials in a URL
(``https://user:pass@host``, as detect-secrets' basic-auth detector) and in its query (a
signed URL's signature, ``?token=``), ``KEY=value`` lines
whose key names a password or secret, whatever the value's entropy (as detect-secrets' keyword
detector), their XML form (``<password>...</password>``), the token after ``Bearer``, the
value of a command-line option such as ``--password``, and an AWS secret access key next to
its name (as trufflehog's AWS detector pairs it). A value found once is replaced wherever else
it appears in the text; a :class:`~ctxpack.Session` and one ``pack()`` call also replace it in
the other tool outputs, where it may stand alone (``echo $DB_PASSWORD``), through the ``hunt``
of :func:`redact_for_roles` (``ctxpack._internal.secret_values``).

Example:
    >>> out = redact("export AWS_ACCESS_KEY_ID=AKIAZ5GMHYJKLMNOPQR7")
    >>> out.text
    'export AWS_ACCESS_KEY_ID=[REDACTED aws-access-token]'
    >>> out.kinds
    ('aws-access-token',)
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, partial
from importlib import resources
from itertools import compress, count
from operator import attrgetter
from typing import Any

from ._internal.escapes import View, escaped_views, through_views
from ._internal.part_texts import (
    as_read_edited,
    is_provider_tool_result,
    joined_where_split,
    quotes,
    with_quotes,
    with_texts,
)
from ._internal.secret_allowlists import Allowlist, AsciiTwin, allowlist, compile_rule
from ._internal.secret_rules import OWN_RULES
from ._internal.secret_starts import anchored, every, match_start, start_words, without_name_run
from ._internal.secret_values import Hunt, KnownValues, entropy
from ._internal.spans import Spans
from ._internal.text_lines import TextLines
from ._internal.word_trie import WordCounts
from .adapters.langchain import META as LANGCHAIN_META
from .caches import ENTRY_OVERHEAD, LRUCache, Memo, approx_bytes
from .errors import ArgumentsError, ConfigError
from .messages import Message, ensure_messages
from .sdk import RESPONSES_META

__all__ = [
    "find_secrets",
    "redact",
    "redact_message",
]


@dataclass(frozen=True)
class SecretFinding:
    """One secret in a text: its kind (a rule id such as ``github-pat``) and where it is.

    The value itself is not kept: read it from the text with ``text[start:end]`` if you must.
    """

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Redaction:
    """A text with its secrets replaced, and what was replaced.

    Attributes:
        text: The text, each secret replaced by :func:`placeholder` of its kind.
        findings: The secrets found, by position in the original text.
    """

    text: str
    findings: tuple[SecretFinding, ...]

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds of secret replaced, each once, in order of first appearance."""
        return tuple(dict.fromkeys(f.kind for f in self.findings))


def placeholder(kind: str) -> str:
    """What a secret of ``kind`` is replaced by.

    Example:
        >>> placeholder("github-pat")
        '[REDACTED github-pat]'
    """
    return f"[REDACTED {kind}]"


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: Any  # a compiled ``re`` or ``regex`` pattern
    back: int  # how far back a match extends before where ``pattern`` matched (_SEMI_GENERIC)
    entropy: float
    keywords: tuple[str, ...]
    group: int
    allowlists: tuple[Allowlist, ...]
    # For a rule without keywords: an ``re`` pattern found where each of its matches begins.
    gate: Any = None
    starts: tuple[str, ...] = ()  # words one of which begins each match (secret_starts)
    # For a rule whose matches are whole lines: an ``re`` pattern found on each of them.
    line_gate: Any = None
    # Whether each match begins at a line's start and ends in that line (secret_rules).
    keyword_lines: bool = False


# A value that names or refers to a secret instead of being one: a variable, a template, a
# mask, a word, an elided example ("sk-..."), the secret's own name (`user:password@host` in a
# documentation example: taken for a secret, the word would be replaced everywhere in the
# output).
_NOT_A_VALUE = AsciiTwin(
    r"^(?:\$\{?\w+\}?|\$\{[\w.]+\}|%\w+%|\{\{.*\}\}|<[^>]*>|\*+|x+|X+|\.+|null|none|true|false|"
    r"(?i:your[\w-]*)|(?i:pass(?:word|wd)?|pwd|secret|token)|"
    r"\[REDACTED\b.*|[a-z_]+\.[a-z_.]+|[A-Za-z_]+\(.*|.*(?:\.\.\.|…))$"
)


@cache
def _rules() -> tuple[tuple[_Rule, ...], Allowlist]:
    data = json.loads(
        resources.files("ctxpack").joinpath("data/secret_rules.json").read_text("utf-8")
    )
    rules = []
    for entry in [*data["rules"], *OWN_RULES]:
        pattern, back = without_name_run(entry["regex"])
        engine = entry.get("engine", "re")
        rules.append(
            _Rule(
                entry["id"],
                compile_rule(pattern, engine),
                back,
                float(entry.get("entropy", 0.0)),
                tuple(entry.get("keywords", ())),
                int(entry.get("secret_group", 0)),
                tuple(allowlist(a) for a in entry.get("allowlists", ())),
                compile_rule(entry["gate"], "re") if "gate" in entry else None,
                tuple(entry.get("starts", ())) or (start_words(pattern) if engine == "re" else ()),
                compile_rule(entry["line_gate"], "re") if "line_gate" in entry else None,
                bool(entry.get("keyword_lines", False)),
            )
        )
    # The generic rule last: it finds again most values the others find, and loses to them.
    rules.sort(key=lambda rule: rule.kind == "generic-api-key")
    return tuple(rules), allowlist(data["global_allowlist"])


def _secret_span(match: Any, group: int) -> tuple[int, int]:
    if not group:
        # gitleaks: the first capture group that matched, else the whole match.
        group = next(compress(count(1), match.groups()), 0)
    start, end = match.span(group)
    return int(start), int(end)


@cache
def _keyword_finder() -> WordCounts:
    return WordCounts(k for rule in _rules()[0] for k in rule.keywords)


# In a text longer than this, a rule with keywords is run only near them: the matches it keeps
# hold a keyword on their line, and in one long line (a base64 blob, minified code) a keyword
# is in every stretch by chance; beyond _NEAR characters of the match it says nothing of it.
_LONG_TEXT = 64 * 1024
_NEAR = 512
_SPAN = 4096  # how far a match found near a keyword may run before it is read again whole


def _near_keywords(
    rule: _Rule, text: str, lines: TextLines, present: Collection[str]
) -> Iterator[Any]:
    """``rule``'s matches in ``text`` that start within :data:`_NEAR` characters of one of its
    keywords, before or after it (all of them in a short text, or where keywords are
    everywhere)."""
    lowered = lines.lowered
    search = anchored(rule.pattern, rule.starts, lines)
    if not rule.keywords or len(text) <= _LONG_TEXT or lowered is None:
        yield from rule.pattern.finditer(text) if search is None else every(search, len(text))
        return
    found = [k for k in rule.keywords if k in present]
    if sum(map(lines.count, found)) * _NEAR > len(text):
        # Keywords everywhere (minified code): their stretches would cover the text anyway.
        yield from rule.pattern.finditer(text) if search is None else every(search, len(text))
        return
    search = search or partial(rule.pattern.search, text)
    near = sorted(
        (max(0, at - _NEAR), at + len(k) + _NEAR) for k in found for at in lines.occurrences(k)
    )
    spans: list[list[int]] = []
    for start, end in near:
        # Stretches closer than a search reads past its end are one: read once, not twice.
        if spans and start <= spans[-1][1] + _SPAN:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    done = 0  # where the last match ended: a match is given once
    for start, end in spans:
        at = max(start, done)
        # A search that finds nothing near must not read on to the end of the text.
        limit = min(len(text), end + _SPAN)
        while at < end:
            match = search(at, limit)
            if match is None or match.start() >= end:
                break
            if limit < len(text) and match.end() >= limit:
                # Cut by the limit: read it whole, as a search of the text would.
                whole = rule.pattern.match(text, match.start())
                if whole is None:  # it held only where the limit ended the text
                    at = match.start() + 1
                    continue
                match = whole
            yield match
            done = at = max(match.end(), match.start() + 1)


def _at_gate(rule: _Rule, text: str) -> Iterator[Any]:
    """``rule``'s matches in ``text``, as a search finds them, each tried only where its gate
    is found (its pattern, tried at every position, is slow: look-behinds in ``regex``)."""
    at = 0
    while (gate := rule.gate.search(text, at)) is not None:
        match = rule.pattern.match(text, gate.start())
        if match is None:
            at = gate.start() + 1
        else:
            yield match
            at = max(match.end(), match.start() + 1)


def _on_lines(rule: _Rule, text: str, starts: Iterable[int]) -> Iterator[Any]:
    """``rule``'s matches in ``text`` (each begins at a line's start and ends in that line), as
    a search finds them, tried only at ``starts``, in order: the lines where they may be."""
    for start in starts:
        if (match := rule.pattern.match(text, start)) is not None:
            yield match


def _gated_lines(rule: _Rule, text: str) -> Iterator[int]:
    """Where the lines holding ``rule``'s line gate start (the gate sought once a line): its
    pattern, anchored at each line's start, would be tried at every position of the text."""
    at = 0
    while (gate := rule.line_gate.search(text, at)) is not None:
        yield text.rfind("\n", 0, gate.start()) + 1
        if not (at := text.find("\n", gate.end()) + 1):
            return


def _findings(text: str) -> Iterator[SecretFinding]:
    rules, everywhere = _rules()
    lowered = text.lower()
    counts = _keyword_finder().counts(lowered)
    present = counts.keys()
    lines = TextLines(text, lowered, counts)
    # The spans found, each with the best rank (_precedence) of a finding there: a finding
    # ranked no better at a span found already would lose to it, so its checks are skipped
    # (gitleaks' generic rule, run last, finds again most values the others find).
    found: dict[tuple[int, int], tuple[bool, bool]] = {}
    for rule in rules:
        if rule.keywords and present.isdisjoint(rule.keywords):
            continue
        rank = _rank(rule.kind)
        if rule.gate is not None:
            matches = _at_gate(rule, text)
        elif rule.line_gate is not None:
            matches = _on_lines(rule, text, _gated_lines(rule, text))
        elif rule.keyword_lines and lines.lowered is not None:
            # A match on a line holding none of its keywords is dropped below: none is tried
            # there (most lines of code hold none; the rule reads each line's first word).
            matches = _on_lines(rule, text, lines.starts_holding(rule.keywords, present))
        else:
            matches = _near_keywords(rule, text, lines, present)
        for match in matches:
            start, end = _secret_span(match, rule.group)
            prior = found.get((start, end))
            if prior is not None and prior <= rank:
                continue
            secret = text[start:end]
            if not secret.strip() or (rule.entropy > 0 and entropy(secret) < rule.entropy):
                continue
            begin = match_start(text, match.start(), rule.back) if rule.back else match.start()
            whole = text[begin : match.end()]
            line = lines.around(begin, match.end())
            # A keyword far from the match says nothing about it: gitleaks looks at a whole
            # file, a tool output is often many files.
            if rule.keywords and not lines.holds(rule.keywords, line, whole):
                continue
            if everywhere.allows(secret, whole, lines, line) or _NOT_A_VALUE.match(secret):
                continue
            if any(a.allows(secret, whole, lines, line) for a in rule.allowlists):
                continue
            found[start, end] = min(rank, prior) if prior is not None else rank
            yield SecretFinding(rule.kind, start, end)


# Rules that read any value assigned to a key naming a secret: where a rule for a known format
# finds the same value, its kind names the secret better.
_GENERIC = frozenset(
    {
        "generic-api-key",
        "secret-assignment",
        "secret-field",
        "secret-env-prefix",
        "url-query-credential",
    }
)


def _rank(kind: str) -> tuple[bool, bool]:
    # Of generic findings of one span, gitleaks' (an entropy guess) names it least well.
    return kind in _GENERIC, kind == "generic-api-key"


def _precedence(f: SecretFinding) -> tuple[bool, int, int, bool]:
    generic, guess = _rank(f.kind)
    return generic, f.start, f.start - f.end, guess


def _scan_text(text: str) -> tuple[SecretFinding, ...]:
    views = escaped_views(text)
    found = sorted([*_findings(text), *_through_escapes(views)], key=_precedence)
    spans = Spans()
    # Specific rules first, then generic ones; the first, longest finding of a place wins.
    kept = [finding for finding in found if spans.take(finding.start, finding.end)]
    # A value found once is a secret wherever else it appears in the text (echoed, logged
    # twice, in a URL beside its assignment), whether or not a rule matches there.
    values = KnownValues()
    for finding in kept:
        values.learn(text[finding.start : finding.end], finding.kind)
    alone = [*values.find(text), *through_views(views, values.find)]
    kept += [SecretFinding(k, a, b) for a, b, k in alone if spans.take(a, b)]
    return tuple(sorted(kept, key=lambda f: f.start))


def _weight(key: Hashable, found: tuple[SecretFinding, ...]) -> int:
    """About what ``approx_bytes`` makes of a cached scan, one finding of each kind weighed
    for all: walked through, the thousands of findings of a dense output cost 5% of the scan."""
    kinds = list(map(attrgetter("kind"), found))
    each = dict(zip(kinds, found, strict=True))  # a finding of each kind
    counts = Counter(kinds)
    weights = sum(n * approx_bytes(each[kind]) for kind, n in counts.items())
    return ENTRY_OVERHEAD + approx_bytes(key) + sys.getsizeof(found) + weights


# Cached by content: a history packed again every turn holds the same tool outputs.
_scan = Memo(
    _scan_text,
    LRUCache(100_000, maxbytes=16 * 2**20, weigh=_weight, name="secrets of a text"),
    None,
)


def _through_escapes(views: Iterable[View]) -> list[SecretFinding]:
    """What the rules find once escapes that hide a secret's shape are read (a URL's ``://``
    written ``:\\/\\/`` or ``%3A%2F%2F``), in ``views`` of a text, as spans of the text."""
    return [
        SecretFinding(f.kind, starts[f.start], ends[f.end - 1])
        for view, starts, ends in views
        for f in _findings(view)
    ]


def find_secrets(text: str) -> tuple[SecretFinding, ...]:
    """The secrets in ``text``, in order, none overlapping.

    Example:
        >>> [f.kind for f in find_secrets("token ghp_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO")]
        ['github-pat']
    """
    if not isinstance(text, str):
        raise ArgumentsError(f"find_secrets(): text must be a str, got {type(text).__name__}")
    return _scan(text)


def redact(text: str, findings: Sequence[SecretFinding] | None = None) -> Redaction:
    """``text`` with each secret replaced by a placeholder naming its kind.

    Args:
        text: Any text.
        findings: The secrets to replace; by default :func:`find_secrets` of ``text``.

    Example:
        >>> redact("postgres://app:s3cr3t-pw@db:5432/prod").text
        'postgres://app:[REDACTED url-credentials]@db:5432/prod'
    """
    if not isinstance(text, str):
        raise ArgumentsError(f"redact(): text must be a str, got {type(text).__name__}")
    if findings is None:
        found = find_secrets(text)
    else:
        found = tuple(findings) if isinstance(findings, Iterable) else ()
        if not isinstance(findings, Iterable) or not all(
            isinstance(f, SecretFinding) for f in found
        ):
            raise ConfigError("findings must be a list of SecretFinding (see find_secrets)")
    if not found:
        return Redaction(text, ())
    parts, last = [], 0
    for f in found:
        parts += [text[last : f.start], placeholder(f.kind)]
        last = f.end
    parts.append(text[last:])
    return Redaction("".join(parts), found)


def redact_message(message: Message) -> tuple[Message, tuple[SecretFinding, ...]]:
    """``message`` with the secrets in its text parts and tool-call arguments replaced, and the
    secrets found (the same message when there are none).

    Example:
        >>> token = "ghp_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"
        >>> msg = Message(role="tool", tool_call_id="c1", content=f"GITHUB_TOKEN={token}")
        >>> redact_message(msg)[0].content
        'GITHUB_TOKEN=[REDACTED github-pat]'

    Raises:
        InvalidMessageError: ``message`` is not a valid message (an OpenAI-format dict is
            taken, and returned as a :class:`Message`).
    """
    if not isinstance(message, Message):
        message = ensure_messages([message])[0]
    return _redacted(message, whole=True)


def redact_for_roles(
    message: Message, roles: Collection[str], hunt: Hunt | None = None, *, rules: bool = True
) -> tuple[Message, tuple[SecretFinding, ...]]:
    """``message`` redacted as a guard of ``roles`` redacts it, and the secrets found: the
    whole message when its role is one of them; and while tool outputs are (``"tool"`` is one),
    the results of the tools a provider ran inside an assistant's turn (code execution, a web
    fetch, an MCP server's tool), the assistant's own words left as written.

    With ``hunt``, the values it learnt earlier are secrets wherever they stand alone in what
    is redacted, and the values found are learnt into it; without ``rules``, only those values
    are (a message redacted once already, hunted for values found since), and nothing is
    learnt."""
    redaction: Callable[[str], Redaction] = redact
    if hunt is not None:
        redaction = partial(_hunting, hunt=hunt) if rules else partial(_known_only, hunt=hunt)
    if message.role in roles:
        return _redacted(message, whole=True, redaction=redaction)
    if (
        "tool" in roles
        and message.role == "assistant"
        and isinstance(message.content, list)
        and any(is_provider_tool_result(part) or quotes(part) for part in message.content)
    ):
        return _redacted(message, whole=False, redaction=redaction)
    return message, ()


def redact_known(text: str, hunt: Hunt) -> Redaction:
    """``text`` redacted by the rules and where the values ``hunt`` learnt stand alone,
    learning nothing (a session's originals, read back)."""
    return _with_hunt(text, hunt, find_secrets(text))


def _known_only(text: str, *, hunt: Hunt) -> Redaction:
    return _with_hunt(text, hunt, ())


def _with_hunt(text: str, hunt: Hunt, found: Sequence[SecretFinding]) -> Redaction:
    """``text`` with the secrets ``found`` and the values ``hunt`` learnt replaced, a place
    both found counted once."""
    spans = Spans()
    for f in found:
        spans.take(f.start, f.end)
    alone = [*hunt.find(text), *through_views(escaped_views(text), hunt.find)]
    seen = [SecretFinding(k, a, b) for a, b, k in alone if spans.take(a, b)]
    if not seen:
        return redact(text, found)
    return redact(text, sorted([*found, *seen], key=lambda f: f.start))


def _hunting(text: str, *, hunt: Hunt) -> Redaction:
    """``text`` redacted, and the values ``hunt`` learnt earlier with it; what was found in
    ``text`` is learnt."""
    found = find_secrets(text)
    out = _with_hunt(text, hunt, found)
    for f in found:
        hunt.learn(text[f.start : f.end], f.kind)
    return out


def _redacted(
    message: Message, *, whole: bool, redaction: Callable[[str], Redaction] = redact
) -> tuple[Message, tuple[SecretFinding, ...]]:
    """``message`` with its secrets replaced (each text by ``redaction``): all of them
    (``whole``), or only those of its provider's tool results."""
    found: list[SecretFinding] = []

    def clean(text: str) -> str:
        out = redaction(text)
        found.extend(out.findings)
        return out.text

    if not whole:
        return _provider_results_redacted(message, clean, found)
    update: dict[str, Any] = {}
    content = message.content
    if isinstance(content, str):
        if (new := clean(content)) != content:
            update["content"] = new
    elif isinstance(content, list):
        # Every text of every part (a tool result's documents too), parts cut in a secret joined.
        joined = joined_where_split(content, _scan)
        parts = [with_texts(part, clean) for part in joined]
        if joined is not content or any(a is not b for a, b in zip(parts, content, strict=True)):
            update["content"] = parts
    if message.tool_calls:
        calls = [
            call.model_copy(
                update={"function": call.function.model_copy(update={"arguments": args})}
            )
            if (args := clean(call.function.arguments)) != call.function.arguments
            else call
            for call in message.tool_calls
        ]
        if any(new is not old for new, old in zip(calls, message.tool_calls, strict=True)):
            update["tool_calls"] = calls
    # What the message was read from rides along, to go back as it came: the Responses API
    # item (with its ids), a LangChain message's other fields (a ToolMessage's artifact: the
    # tool's raw output). The same secrets are in them, and a store would keep them.
    in_content = tuple(found)
    found.clear()
    meta = message.metadata
    kept = {key: as_read_edited(meta[key], clean, _scan) for key in _KEPT_AS_READ if key in meta}
    if any(new != meta[key] for key, new in kept.items()):
        update["metadata"] = {**meta, **kept}
    if not update:
        return message, ()
    # A secret in the content and its copy in what rides along count once.
    return message.model_copy(update=update), tuple(in_content or found)


def _provider_results_redacted(
    message: Message, clean: Callable[[str], str], found: list[SecretFinding]
) -> tuple[Message, tuple[SecretFinding, ...]]:
    """``message`` (an assistant's, in a list of parts) with ``clean`` applied to the results
    of the tools its provider ran and to what its citations quote of them, and the secrets
    found there."""
    assert isinstance(message.content, list)  # redact_for_roles sends no other
    parts = [
        with_texts(p, clean) if is_provider_tool_result(p) else with_quotes(p, clean)
        for p in message.content
    ]
    if not found:
        return message, ()
    in_parts = tuple(found)
    changed: dict[str, Any] = {"content": parts}
    # A Responses API item rides along in metadata too, which a store would keep; its copy of
    # the output counts once.
    items = message.metadata.get(RESPONSES_META)
    if isinstance(items, (list, Mapping)):
        scrubbed = [
            with_texts(i, clean) if is_provider_tool_result(i) else i
            for i in (items if isinstance(items, list) else [items])
        ]
        kept = scrubbed if isinstance(items, list) else scrubbed[0]
        changed["metadata"] = {**message.metadata, RESPONSES_META: kept}
    return message.model_copy(update=changed), in_parts


# The metadata keys holding what a message was read from.
_KEPT_AS_READ = (RESPONSES_META, LANGCHAIN_META)


def secrets_reason(findings: Sequence[SecretFinding]) -> str:
    """A decision's reason for ``findings``: how many secrets, and their kinds (never values).

    Example:
        >>> secrets_reason([SecretFinding("jwt", 0, 9), SecretFinding("jwt", 20, 29)])
        '2 secrets replaced: jwt'
    """
    kinds = ", ".join(dict.fromkeys(f.kind for f in findings))
    n = len(findings)
    return f"{n} secret{'s' if n != 1 else ''} replaced: {kinds}"
