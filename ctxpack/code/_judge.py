"""Judges: how relevant each retrieved file is to a task, why, and what is still missing.

A judge is any callable ``judge(task, candidates) -> list[Judgement]``. Relevance follows one
scale: high 0.8-1.0 (implements what the task is about), medium 0.5-0.7 (related patterns or
types), low 0.2-0.4 (tangential), none below 0.2 (irrelevant: excluded from later cycles).

:class:`RankingJudge` (the default) decides from the ranking signals alone, without a model;
:class:`ModelJudge` asks a model through any completion function.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import ClassVar, Protocol

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError

from .._internal.arguments import finite, instances, number
from .._internal.arguments import tokens as check_tokens
from .._internal.jsontext import read_json
from .._internal.options import CheckedModel, FieldErrorModel
from .._internal.paths import shown_path
from ..errors import ConfigError, CtxpackError
from ._index import FileHit

__all__ = [
    "Candidate",
    "Judge",
    "JudgeError",
    "Judgement",
    "ModelJudge",
    "RankingJudge",
    "band",
]


class JudgeError(CtxpackError, ValueError):
    """A model judge's answer could not be read as judgements.

    Attributes:
        answer: The model's raw answer.
    """

    def __init__(self, detail: str, *, answer: str) -> None:
        self.answer = answer
        shown = answer if len(answer) <= 300 else answer[:300] + "..."
        super().__init__(
            f"{detail}; the judge must answer a JSON list of objects with 'path', 'relevance' "
            f"(0-1), 'reason' and 'missing' (a list of strings). It answered: {shown!r}"
        )


class Candidate(FieldErrorModel):
    """A file put before the judge: its ranking, its best matching units, the names it uses
    that are defined in files not retrieved yet.

    Attributes:
        path: Repository-relative path.
        rank: 1-based rank in this cycle.
        hit: Its ranking (score, signals, matched units).
        excerpt: The text shown to a model judge (its best units, labelled with lines).
        matched: The task's terms (and the terms learnt for it) the file contains.
        coverage: The share of those terms it contains, each weighed by its rarity (IDF).
        top_score: The best score of this dispatch, files already in hand included.
        unresolved: Names its matched units call or use that are defined in files outside the
            candidates, with where (``"TokenBucket (api/bucket.py)"``).
    """

    model_config = ConfigDict(frozen=True)

    path: str
    rank: int
    hit: FileHit
    excerpt: str
    matched: tuple[str, ...] = ()
    coverage: float = 0.0
    top_score: float = 0.0
    unresolved: tuple[str, ...] = ()


class Judgement(CheckedModel):
    """A judge's verdict on one file.

    Attributes:
        path: Repository-relative path.
        relevance: 0 (irrelevant) to 1 (implements what the task is about).
        reason: Why, in a sentence.
        missing: What is still missing to do the task from this file (names, files, topics).
    """

    model_config = ConfigDict(frozen=True)

    path: str
    relevance: float = Field(ge=0.0, le=1.0)
    reason: str = ""
    missing: tuple[str, ...] = ()


class Judge(Protocol):
    """Anything that judges candidates: ``judge(task, candidates) -> judgements``.

    A judge whose relevance is relative to each dispatch (the best candidate of a dispatch
    scores high whatever it is) says so with a true ``relative_to_dispatch`` attribute: the
    loop then never lets a later cycle's find pass a file of the first ranking, since the two
    scores are not on one scale. Without the attribute, scores are taken as absolute.
    """

    def __call__(self, task: str, candidates: Sequence[Candidate], /) -> list[Judgement]: ...


def band(relevance: float) -> str:
    """The name of a relevance's band: ``high``, ``medium``, ``low`` or ``none``.

    Example:
        >>> band(0.9), band(0.6), band(0.3), band(0.1)
        ('high', 'medium', 'low', 'none')

    Raises:
        ConfigError: ``relevance`` is not a number from 0 to 1.
    """
    if not 0.0 <= finite(number(relevance, "relevance"), "relevance") <= 1.0:
        raise ConfigError(f"relevance must be from 0 to 1, got {relevance!r}")
    if relevance >= 0.8:
        return "high"
    if relevance >= 0.5:
        return "medium"
    if relevance >= 0.2:
        return "low"
    return "none"


class RankingJudge(CheckedModel):
    """The default judge: relevance from the ranking itself, no model.

    A file's relevance is ``score_share`` times the square root of its score relative to the
    best file's in the same dispatch (files already in hand included), plus the rest times its
    IDF-weighted coverage of the task's terms relative to the candidate covering most: the top
    file is 1.0, a file far behind on both falls to the low bands. What is missing from a highly
    relevant file is what its matched units call that is defined in a file not retrieved yet.

    Args:
        score_share: Weight of the relative ranking score (the rest goes to term coverage).

    Example:
        >>> RankingJudge()
        RankingJudge(score_share=0.6)
    """

    model_config = ConfigDict(frozen=True)

    score_share: float = Field(default=0.6, ge=0.0, le=1.0)
    relative_to_dispatch: ClassVar[bool] = True
    """Its relevance is relative to the dispatch's best file (see :class:`Judge`)."""

    def __repr__(self) -> str:
        return f"RankingJudge(score_share={self.score_share})"

    def __call__(self, task: str, candidates: Sequence[Candidate], /) -> list[Judgement]:
        candidates = instances(candidates, "candidates", Candidate)
        if not candidates:
            return []
        top = max(max(c.hit.score, c.top_score) for c in candidates) or 1.0
        most = max(c.coverage for c in candidates) or 1.0
        out = []
        for c in candidates:
            # The square root spreads the scores near the top: a file at half the best score
            # is still related (0.7 of the way), one at a tenth is tangential.
            ranking = math.sqrt(max(0.0, c.hit.score) / top)
            relevance = self.score_share * ranking + (1.0 - self.score_share) * c.coverage / most
            relevance = round(min(1.0, max(0.0, relevance)), 3)
            out.append(
                Judgement(
                    path=c.path,
                    relevance=relevance,
                    reason=_reason(c),
                    missing=c.unresolved if relevance >= 0.7 else (),
                )
            )
        return out


def _reason(c: Candidate) -> str:
    signals = c.hit.signals
    parts = [f"rank {c.rank}"]
    strongest = sorted(((v, k) for k, v in signals.items() if v > 0), reverse=True)[:2]
    if strongest:
        parts.append("strongest signals " + ", ".join(f"{k} {v:.2f}" for v, k in strongest))
    if c.matched:
        shown = ", ".join(c.matched[:6]) + (" ..." if len(c.matched) > 6 else "")
        parts.append(f"holds task terms {shown}")
    if c.hit.units:
        u = c.hit.units[0]
        parts.append(f"best unit {u.name} (lines {u.start_line}-{u.end_line})")
    return "; ".join(parts)


_RUBRIC = """You judge which files of a codebase a developer needs for a task.
Task:
{task}

For each file below, give its relevance to the task on this scale:
- 0.8-1.0: directly implements what the task is about
- 0.5-0.7: holds related patterns or types
- 0.2-0.4: tangentially related
- 0.0-0.2: irrelevant
Say why in one sentence, and list what is still missing to do the task (names, files, topics).
Answer with only a JSON list, one object per file:
[{{"path": "...", "relevance": 0.0, "reason": "...", "missing": ["..."]}}]

Files:
{files}"""

_JUDGEMENTS = TypeAdapter(list[Judgement])


class ModelJudge:
    """A judge that asks a model: the task, the rubric, each candidate's best passages.

    Args:
        complete: Any function from a prompt to the model's text answer (wrap your client:
            ``lambda prompt: client.chat(...).text``).
        excerpt_chars: Characters of each candidate's passages shown to the model.

    Raises:
        JudgeError: when called, if the answer is not a JSON list of judgements.

    Example:
        >>> judge = ModelJudge(lambda prompt: '[{"path": "a.py", "relevance": 0.9}]')
        >>> judge
        ModelJudge(excerpt_chars=2000)
    """

    def __init__(self, complete: Callable[[str], str], *, excerpt_chars: int = 2000) -> None:
        if not callable(complete):
            raise ConfigError(
                f"complete must be a callable prompt -> answer text, got {type(complete).__name__}"
            )
        self.complete = complete
        self.excerpt_chars = check_tokens(excerpt_chars, "excerpt_chars", unit="characters")

    def __repr__(self) -> str:
        return f"ModelJudge(excerpt_chars={self.excerpt_chars})"

    def prompt(self, task: str, candidates: Sequence[Candidate]) -> str:
        """The prompt sent to the model."""
        # A name is shown as text: a line end in it would forge a line of the prompt.
        files = "\n\n".join(
            f"--- {shown_path(c.path)}\n{c.excerpt[: self.excerpt_chars]}" for c in candidates
        )
        return _RUBRIC.format(task=task, files=files)

    def __call__(self, task: str, candidates: Sequence[Candidate], /) -> list[Judgement]:
        candidates = instances(candidates, "candidates", Candidate)
        if not candidates:
            return []  # no file to ask the model about
        answer = self.complete(self.prompt(task, candidates))
        if not isinstance(answer, str):
            raise JudgeError(
                f"the model's answer is a {type(answer).__name__}, not text", answer=repr(answer)
            )
        start, end = answer.find("["), answer.rfind("]")
        if start == -1 or end <= start:
            raise JudgeError("no JSON list in the answer", answer=answer)
        try:
            raw = read_json(answer[start : end + 1])
            judged = _JUDGEMENTS.validate_python(raw)
        except (ValueError, ValidationError) as exc:
            detail = re.sub(r"\s+", " ", str(exc))[:200]
            raise JudgeError(f"unreadable judgements ({detail})", answer=answer) from exc
        # The model names a file as it was shown (see prompt), or as it is.
        known = {shown_path(c.path): c.path for c in candidates} | {
            c.path: c.path for c in candidates
        }
        by_path = {
            known[j.path]: j.model_copy(update={"path": known[j.path]})
            for j in judged
            if j.path in known
        }
        # A candidate the model left out is recorded as judged irrelevant, with that reason.
        return [
            by_path.get(c.path)
            or Judgement(path=c.path, relevance=0.0, reason="not judged by the model")
            for c in candidates
        ]
