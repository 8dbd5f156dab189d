"""The iterative retrieval loop: dispatch, evaluate, refine, repeat (at most three cycles).

A sub-agent does not know beforehand which files, patterns and words of a codebase its task
needs. :func:`iterative_retrieve` finds out in cycles:

1. **dispatch**: rank the repository's files for the task and the words learnt so far;
2. **evaluate**: a judge scores each candidate 0-1 with a reason and what is still missing;
3. **refine**: add the codebase's own terms found in the highly relevant files (it says
   "throttle" where the task says "rate limit"), exclude the files judged below 0.2 (unless they
   hold one of the words just learnt), and target the gaps (names the relevant files use that
   are defined in files not retrieved yet);
4. **repeat**, until 3 or more files are highly relevant (>= 0.7) with no critical gap, or
   ``max_cycles`` cycles have run.

It returns the files judged >= 0.7 in any cycle, most relevant first (those found in an earlier
cycle first, then by relevance: the order they were found in), and every cycle recorded.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from ..errors import ConfigError
from ..store import ArtifactStore, SQLiteArtifactStore
from .context import build_context
from .index import CodeIndex, FileHit
from .judge import Candidate, Judge, Judgement, RankingJudge
from .terms import code_terms

__all__ = ["CycleRecord", "RetrievalResult", "iterative_retrieve"]

HIGH = 0.7
"""Relevance from which a file is kept (and counts toward stopping)."""
NONE = 0.2
"""Relevance under which a file is excluded from later cycles."""
ENOUGH = 3
"""Highly relevant files that, with no critical gap, end the loop."""

# Refinement: how many of the codebase's own terms a cycle adds, and how much they weigh
# against a term of the task (1.0).
_NEW_TERMS = 3
_NEW_TERM_WEIGHT = 1.0
_GAP_WEIGHT = 1.0
_GAPS_PER_FILE = 3


class CycleRecord(BaseModel):
    """What one cycle did.

    Attributes:
        cycle: 1-based.
        terms: The terms added to the task's own for this cycle's dispatch, with weights.
        excluded: Paths left out of this cycle's dispatch: judged irrelevant, or already in
            hand (judged highly relevant) in an earlier cycle.
        candidates: The files dispatched, best first, with their ranking.
        judgements: The judge's verdict on each candidate.
        high: Candidates judged >= 0.7.
        gaps: Critical gaps: what the highly relevant files still miss.
        added_terms: Terms this cycle's refinement learnt from the relevant files.
        newly_excluded: Paths this cycle's refinement excluded (judged < 0.2 and holding none of
            the terms it learnt).
        focus: Gaps the next cycle targets.
        stop: Why the loop stopped after this cycle (``""`` when it went on).
    """

    model_config = ConfigDict(frozen=True)

    cycle: int
    terms: dict[str, float]
    excluded: tuple[str, ...]
    candidates: tuple[FileHit, ...]
    judgements: tuple[Judgement, ...]
    high: tuple[str, ...]
    gaps: tuple[str, ...]
    added_terms: tuple[str, ...] = ()
    newly_excluded: tuple[str, ...] = ()
    focus: tuple[str, ...] = ()
    stop: str = ""


class RetrievalResult(BaseModel):
    """What :func:`iterative_retrieve` found.

    Attributes:
        task: The task it was given.
        files: Repository-relative paths judged >= 0.7, most relevant first: by the cycle that
            found them (a later cycle's judgement is relative to what the earlier ones left),
            then by relevance.
        relevance: Each returned file's best relevance over the cycles.
        context: The text to send: the files' best passages, labelled with path and lines.
        tokens: Tokens of ``context``.
        repository_tokens: Tokens of every indexed file, for comparison.
        artifacts: The artifact id of each file with a passage in ``context`` (the whole file is
            in ``store``).
        cycles: Every cycle, in order.
        store: Where the originals are.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    task: str
    files: tuple[str, ...]
    relevance: dict[str, float]
    context: str
    tokens: int
    repository_tokens: int
    artifacts: dict[str, str]
    cycles: tuple[CycleRecord, ...]
    store: ArtifactStore

    def report(self) -> str:
        """The cycles as text: candidates with relevance and reason, what each cycle learnt."""
        lines = []
        for c in self.cycles:
            learnt = ", ".join(c.added_terms) or "-"
            lines.append(f"cycle {c.cycle}: {len(c.candidates)} candidates, learnt: {learnt}")
            for j in c.judgements:
                lines.append(f"  {j.relevance:.2f} {j.path}: {j.reason}")
            if c.gaps:
                lines.append("  gaps: " + "; ".join(c.gaps))
            if c.newly_excluded:
                lines.append("  excluded: " + ", ".join(c.newly_excluded))
            if c.stop:
                lines.append(f"  stop: {c.stop}")
        lines.append(
            f"{len(self.files)} files, context {self.tokens} tokens of "
            f"{self.repository_tokens} in the repository"
        )
        return "\n".join(lines)


def iterative_retrieve(
    task: str,
    root: str | os.PathLike[str] | CodeIndex,
    *,
    judge: Judge | None = None,
    max_cycles: int = 3,
    candidates: int = 10,
    budget: int = 8000,
    store: ArtifactStore | None = None,
) -> RetrievalResult:
    """Retrieve the files of a codebase a task needs, in cycles of dispatch, evaluate, refine.

    Stops after the first cycle that has 3 or more files judged >= 0.7 and no critical gap, or
    after ``max_cycles`` cycles; returns the files judged >= 0.7 in any cycle.

    Args:
        task: What the files are needed for (an issue, a feature request).
        root: The repository's root folder, or a :class:`CodeIndex` over it.
        judge: Scores candidates (default: :class:`RankingJudge`, no model).
        max_cycles: At most this many cycles.
        candidates: Files dispatched per cycle.
        budget: Tokens the returned ``context`` may take.
        store: Where the whole files are kept (default: an in-memory SQLite store).

    Returns:
        The files, the context to send and its token count, and every cycle.

    Raises:
        ConfigError: ``max_cycles``, ``candidates`` or ``budget`` is not positive, or ``root``
            is not a folder.

    Example:
        >>> import pathlib, tempfile
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (root / "limits.py").write_text("def throttle(request):\\n    return True\\n")
        >>> result = iterative_retrieve("throttle requests", CodeIndex(root, db=":memory:"))
        >>> result.files, result.tokens > 0, len(result.cycles)
        (('limits.py',), True, 3)
    """
    for name, value in (("max_cycles", max_cycles), ("candidates", candidates), ("budget", budget)):
        if value < 1:
            raise ConfigError(f"{name} must be at least 1, got {value}")
    index = root if isinstance(root, CodeIndex) else CodeIndex(root)
    judge = judge if judge is not None else RankingJudge()
    store = store if store is not None else SQLiteArtifactStore(":memory:")
    search = _Search(index, task)
    cycles: list[CycleRecord] = []
    for cycle in range(1, max_cycles + 1):
        record = search.evaluate(cycle, judge, candidates)
        if len(search.best) >= ENOUGH and not record.gaps:
            cycles.append(record.model_copy(update={"stop": "enough: 3+ highly relevant files"}))
            break
        refined = search.refine(record)
        refined["stop"] = "" if cycle < max_cycles else f"max_cycles ({max_cycles}) reached"
        cycles.append(record.model_copy(update=refined))
    files = search.files()
    context, tokens, artifacts = build_context(
        index, files, task, budget=budget, store=store, boost=search.boost
    )
    return RetrievalResult(
        task=task,
        files=tuple(files),
        relevance={p: search.best[p] for p in files},
        context=context,
        tokens=tokens,
        repository_tokens=index.tokens(),
        artifacts=artifacts,
        cycles=tuple(cycles),
        store=store,
    )


class _Search:
    """What the cycles of :func:`iterative_retrieve` have learnt: the terms that steer the
    ranking, the files excluded, and the files judged highly relevant (best relevance, and the
    cycle each was first found in)."""

    def __init__(self, index: CodeIndex, task: str) -> None:
        self.index = index
        self.task = task
        self.task_terms = set(code_terms(task))
        self.boost: dict[str, float] = {}
        self.excluded: list[str] = []
        self.best: dict[str, float] = {}
        self.first_seen: dict[str, int] = {}

    def evaluate(self, cycle: int, judge: Judge, candidates: int) -> CycleRecord:
        """Dispatch and evaluate: rank, judge the candidates, keep the highly relevant ones."""
        # Files already judged highly relevant are kept, and left out of later dispatches so that
        # each cycle looks for what is still missing.
        best = self.best
        ranked = self.index.rank_files(
            self.task, k=candidates + len(best), exclude=self.excluded, boost=self.boost
        )
        top = ranked[0].score if ranked else 0.0
        hits = [h for h in ranked if h.path not in best][:candidates]
        shown = _candidates(self.index, hits, self.boost, self.task_terms, known=set(best), top=top)
        judged = judge(self.task, shown)
        by_path = {j.path: j for j in judged}
        high = [j.path for j in judged if j.relevance >= HIGH]
        for j in sorted(judged, key=lambda j: -j.relevance):
            if j.relevance >= HIGH:
                best[j.path] = max(best.get(j.path, 0.0), j.relevance)
                self.first_seen.setdefault(j.path, cycle)
        return CycleRecord(
            cycle=cycle,
            terms=dict(self.boost),
            excluded=tuple([*self.excluded, *(p for p in best if p not in high)]),
            candidates=tuple(hits),
            judgements=tuple(judged),
            high=tuple(high),
            gaps=tuple(f"{path}: {m}" for path in high for m in by_path[path].missing),
        )

    def refine(self, record: CycleRecord) -> dict[str, object]:
        """Learn from a cycle's judgements for the next; returns what it learnt, as fields of
        the cycle's record."""
        high = list(record.high)
        by_path = {j.path: j for j in record.judgements}
        learnt = _new_terms(self.index, self.task, high, self.boost, self.task_terms)
        # Judged irrelevant, unless it holds a word just learnt: then the judgement was made
        # without the codebase's vocabulary for the task, and the file gets another chance.
        dropped = [
            j.path
            for j in record.judgements
            if j.relevance < NONE
            and j.path not in self.excluded
            and not set(learnt) & self.index.file_terms(j.path)
        ]
        focus = [m for path in high for m in by_path[path].missing]
        for term in learnt:
            self.boost[term] = self.boost.get(term, 0.0) + _NEW_TERM_WEIGHT
        for gap in focus:
            # In the gap's own order, not a set's: the order of the boosted terms is the order
            # of a floating-point sum in the ranking, and a set's order changes with the hash seed.
            for term in dict.fromkeys(code_terms(gap.split(" (", 1)[0])):
                self.boost[term] = max(self.boost.get(term, 0.0), _GAP_WEIGHT)
        self.excluded.extend(dropped)
        return {
            "added_terms": tuple(learnt),
            "newly_excluded": tuple(dropped),
            "focus": tuple(focus),
        }

    def files(self) -> list[str]:
        """The highly relevant files, most relevant first."""
        # A file found in an earlier cycle was judged against the best file of the whole
        # repository, a later one against what the earlier cycles left; so by cycle, then by
        # relevance (the order the files were found in).
        return sorted(self.best, key=lambda p: (self.first_seen[p], -self.best[p]))


def _candidates(
    index: CodeIndex,
    hits: Sequence[FileHit],
    boost: dict[str, float],
    task_terms: set[str],
    *,
    known: set[str],
    top: float,
) -> list[Candidate]:
    retrieved = {h.path for h in hits} | known
    graph = index.graph
    out = []
    for rank, hit in enumerate(hits, start=1):
        terms = index.file_terms(hit.path)
        wanted = task_terms | set(boost)
        matched = tuple(sorted(t for t in wanted if t in terms))
        # Summed in sorted order: a set's order (and so the sum's last bits) follows the hash seed.
        total = sum(index.idf(t) for t in sorted(wanted)) or 1.0
        coverage = sum(index.idf(t) for t in matched) / total
        unresolved: list[str] = []
        for unit in hit.units[:2]:
            symbol = next(
                (
                    s
                    for s in index.symbols_of(hit.path)
                    if s.start_line == unit.start_line and s.name == unit.name
                ),
                None,
            )
            if symbol is None:
                continue
            for name in symbol.references:
                definers = graph.definers.get(name, set())
                # A name defined in one or two files says where to look; more says nothing.
                if not definers or len(definers) > 2 or definers & retrieved:
                    continue
                gap = f"{name} ({', '.join(sorted(definers))})"
                if gap not in unresolved:
                    unresolved.append(gap)
        excerpt = "\n".join(
            f"# lines {u.start_line}-{u.end_line} ({u.kind} {u.name})\n{u.text}"
            for u in hit.units[:2]
        )
        out.append(
            Candidate(
                path=hit.path,
                rank=rank,
                hit=hit,
                excerpt=excerpt,
                matched=matched,
                coverage=coverage,
                top_score=top,
                unresolved=tuple(unresolved[:_GAPS_PER_FILE]),
            )
        )
    return out


def _new_terms(
    index: CodeIndex,
    task: str,
    high: Sequence[str],
    boost: dict[str, float],
    task_terms: set[str],
) -> list[str]:
    """The codebase's own words for the task: terms of the best units of the highly relevant
    files (their docstrings when they have one) that the task does not use, by frequency there
    times rarity in the repository."""
    if not high:
        return []
    counts: Counter[str] = Counter()
    scored = index.unit_scores(task, high, boost=boost)
    for path in high:
        for unit, _ in scored.get(path, [])[:2]:
            name = unit.name if unit.kind != "module" else ""
            text = unit.docstring + "\n" + name if unit.docstring else unit.text
            counts.update(code_terms(text))
    ranked = sorted(
        (t for t in counts if t not in task_terms and t not in boost and len(t) > 2),
        key=lambda t: (-counts[t] * index.idf(t), t),
    )
    return ranked[:_NEW_TERMS]
