"""The iterative retrieval loop: dispatch, evaluate, refine, repeat (at most three cycles).

A sub-agent does not know beforehand which files, patterns and words of a codebase its task
needs. :func:`iterative_retrieve` finds out in cycles:

1. **dispatch**: rank the repository's files for the task and the words learnt so far;
2. **evaluate**: a judge scores each candidate 0-1 with a reason and what is still missing;
3. **refine**: add the codebase's own words found in the code that best matches the task in
   the highly relevant files (it says ``throttle`` where the task says "rate limit"): the words
   of its docstrings and the names it defines, calls and uses, each weighed by how well that
   code matches the task and always below a word of the task itself; exclude the files judged
   below 0.2 (unless they hold one of the words just learnt), and target the gaps (names the
   relevant files use that are defined in files not retrieved yet);
4. **repeat**, until 3 or more files are highly relevant (>= 0.7) with no critical gap, a cycle
   does not raise the judge's confidence (the mean relevance of the 3 best files in hand), no
   candidate is left to dispatch (the judge is not asked about none), or ``max_cycles`` cycles
   have run.

It returns the first cycle's candidates that the judge did not rule out (>= 0.2), in rank
order, with the files later cycles judged highly relevant placed among them: after every file
of the first ranking except those they beat by a band of the judge's scale (high over medium,
medium over low). So the loop holds every file of the first ranking the judge kept, in the
same order, and never ranks a gold file lower than the first ranking does unless the judge
rates another file a band higher. A judge whose scores are relative to each dispatch (the
default :class:`RankingJudge`) rates no later find above the first ranking: later finds come
after it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from pydantic import ConfigDict

from .._internal.arguments import callback, instances, keyword_checked, nonblank
from .._internal.arguments import tokens as check_tokens
from .._internal.options import FieldErrorModel
from .._internal.paths import shown_path
from ..errors import ConfigError
from ..redaction import redact
from ..store import ArtifactStore, SQLiteArtifactStore, check_artifact_store
from ._context import build_context
from ._index import CodeIndex, FileHit
from ._judge import Candidate, Judge, Judgement, RankingJudge, band
from .terms import code_terms

__all__ = ["CycleRecord", "RetrievalResult", "iterative_retrieve"]

HIGH = 0.7
"""Relevance from which a file is kept (and counts toward stopping)."""
NONE = 0.2
"""Relevance under which a file is excluded from later cycles."""
ENOUGH = 3
"""Highly relevant files that, with no critical gap, end the loop."""

# Refinement: how many of the codebase's own terms a cycle adds, and how much the best of them
# weighs against a term of the task (1.0); the others weigh less, by how well their code
# matches the task.
_NEW_TERMS = 3
_NEW_TERM_WEIGHT = 1.0
# The units of a relevant file that lend their names: those matching the task best.
_UNITS_PER_FILE = 2
# The judge's bands, lowest first.
_BANDS = ("none", "low", "medium", "high")
_GAP_WEIGHT = 1.0
_GAPS_PER_FILE = 3


class CycleRecord(FieldErrorModel):
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


class RetrievalResult(FieldErrorModel):
    """What :func:`iterative_retrieve` found.

    Attributes:
        task: The task it was given.
        files: Repository-relative paths: the first cycle's candidates the judge did not rule
            out (>= 0.2), in rank order, with the files later cycles judged >= 0.7 placed after
            every one of them they do not beat by a band of the judge's scale (after all of
            them with a judge relative to each dispatch, such as the default one).
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
                lines.append(f"  {j.relevance:.2f} {shown_path(j.path)}: {j.reason}")
            if c.gaps:
                lines.append("  gaps: " + "; ".join(c.gaps))
            if c.newly_excluded:
                lines.append("  excluded: " + ", ".join(map(shown_path, c.newly_excluded)))
            if c.stop:
                lines.append(f"  stop: {c.stop}")
        lines.append(
            f"{len(self.files)} files, context {self.tokens} tokens of "
            f"{self.repository_tokens} in the repository"
        )
        return "\n".join(lines)


@keyword_checked
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
    that does not raise the judge's confidence, or after ``max_cycles`` cycles. Returns the
    first ranking less the files judged below 0.2, in its order, with the files later cycles
    judged >= 0.7 placed among them (ahead only of files they beat by a band, and never with
    the default judge, whose scores are relative to each dispatch).

    Args:
        task: What the files are needed for (an issue, a feature request).
        root: The repository's root folder, or a :class:`CodeIndex` over it (refreshed
            first, and held until the loop returns).
        judge: Scores candidates (default: :class:`RankingJudge`, no model).
        max_cycles: At most this many cycles.
        candidates: Files dispatched per cycle.
        budget: Tokens the returned ``context`` may take.
        store: Where the whole files are kept (default: an in-memory SQLite store).

    Returns:
        The files, the context to send and its token count, and every cycle.

    Raises:
        ConfigError: ``max_cycles``, ``candidates`` or ``budget`` is not positive, ``root``
            is not a folder, or the judge's answer is not a list of judgements, one at most
            per candidate (it is read in rank order, whatever order it comes in).

    Example:
        >>> import pathlib, tempfile
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (root / "limits.py").write_text("def throttle(request):\\n    return True\\n")
        >>> result = iterative_retrieve("throttle requests", CodeIndex(root, db=":memory:"))
        >>> result.files, result.tokens > 0, len(result.cycles)
        (('limits.py',), True, 2)
    """
    _check_arguments(task, judge, max_cycles, candidates, budget)
    if isinstance(root, CodeIndex):
        # Held for the whole loop, and brought up to date first: its files were read at its
        # first search, and the context quotes them as they are now.
        with root._lock:
            root.refresh()
            return _retrieve(task, root, judge, max_cycles, candidates, budget, store)
    index = CodeIndex(root)
    try:
        return _retrieve(task, index, judge, max_cycles, candidates, budget, store)
    finally:
        index.close()  # made for this call: its connection is not left for the collector


def _retrieve(
    task: str,
    index: CodeIndex,
    judge: Judge | None,
    max_cycles: int,
    candidates: int,
    budget: int,
    store: ArtifactStore | None,
) -> RetrievalResult:
    judge = judge if judge is not None else RankingJudge()
    store = check_artifact_store(store) if store is not None else SQLiteArtifactStore(":memory:")
    search = _Search(index, task, comparable=not getattr(judge, "relative_to_dispatch", False))
    cycles: list[CycleRecord] = []
    confidence = 0.0
    for cycle in range(1, max_cycles + 1):
        record = search.evaluate(cycle, judge, candidates)
        if not record.candidates:
            stop = "no file matches the task" if cycle == 1 else "no candidates left to judge"
            cycles.append(record.model_copy(update={"stop": stop}))
            break
        if len(search.best) >= ENOUGH and not record.gaps:
            cycles.append(record.model_copy(update={"stop": "enough: 3+ highly relevant files"}))
            break
        raised, confidence = search.confidence() > confidence, search.confidence()
        if cycle > 1 and not raised:
            stop = f"cycle {cycle} did not raise the confidence ({confidence:.2f})"
            cycles.append(record.model_copy(update={"stop": stop}))
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
        relevance={p: search.relevance[p] for p in files},
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

    def __init__(self, index: CodeIndex, task: str, *, comparable: bool) -> None:
        self.index = index
        self.task = task
        # Whether a later cycle's relevance is on the first cycle's scale.
        self.comparable = comparable
        self.task_terms = set(code_terms(task))
        self.boost: dict[str, float] = {}
        self.excluded: list[str] = []
        self.best: dict[str, float] = {}
        # Every file judged, with its best relevance, and the files returned, in order.
        self.relevance: dict[str, float] = {}
        self.order: list[str] = []

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
        # Nothing to judge: a model judge would be asked about no file at all.
        judged = _answer(judge(self.task, shown), shown) if shown else []
        by_path = {j.path: j for j in judged}
        high = [j.path for j in judged if j.relevance >= HIGH]
        for j in judged:
            self.relevance[j.path] = max(self.relevance.get(j.path, 0.0), j.relevance)
        if cycle == 1:
            # The first ranking, less what the judge ruled out, in rank order.
            self.order = [j.path for j in judged if j.relevance >= NONE]
        for j in judged:  # in rank order
            if j.relevance >= HIGH:
                if cycle > 1 and j.path not in self.order:
                    self._place(j.path, j.relevance)
                best[j.path] = max(best.get(j.path, 0.0), j.relevance)
        return CycleRecord(
            cycle=cycle,
            terms=dict(self.boost),
            excluded=tuple([*self.excluded, *(p for p in best if p not in high)]),
            candidates=tuple(c.hit for c in shown),  # as the judge saw them
            judgements=tuple(judged),
            high=tuple(high),
            gaps=tuple(f"{shown_path(path)}: {m}" for path in high for m in by_path[path].missing),
        )

    def _place(self, path: str, relevance: float) -> None:
        """Keep a file a later cycle judged highly relevant: after the first ranking's files,
        except those it beats by a band of the judge's scale (high over medium, medium over
        low...); a first ranking is not overturned by a near tie, nor by a judge whose scores are
        relative to each dispatch."""
        level = _BANDS.index(band(relevance))
        at = len(self.order)
        while (
            self.comparable
            and at > 0
            and _BANDS.index(band(self.relevance[self.order[at - 1]])) < level
        ):
            at -= 1
        self.order.insert(at, path)

    def confidence(self) -> float:
        """How sure the judge is of what is in hand: the mean relevance of the best files,
        missing ones counted as 0."""
        top = sorted(self.best.values(), reverse=True)[:ENOUGH]
        return sum(top) / ENOUGH

    def refine(self, record: CycleRecord) -> dict[str, object]:
        """Learn from a cycle's judgements for the next; returns what it learnt, as fields of
        the cycle's record."""
        high = list(record.high)
        by_path = {j.path: j for j in record.judgements}
        learnt = _new_terms(self.index, self.task, high, self.boost, self.task_terms)
        for term, weight in learnt.items():
            self.boost[term] = self.boost.get(term, 0.0) + weight
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
        """The first ranking's files the judge did not rule out, with the highly relevant
        files of later cycles placed among them."""
        return list(self.order)


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
    wanted = task_terms | set(boost)
    # Summed in sorted order: a set's order (and so the sum's last bits) follows the hash seed.
    total = sum(index.idf(t) for t in sorted(wanted)) or 1.0

    def coverage_of(path: str) -> tuple[tuple[str, ...], float]:
        terms = index.file_terms(path)
        matched = tuple(sorted(t for t in wanted if t in terms))
        return matched, sum(index.idf(t) for t in matched) / total

    out = []
    for rank, hit in enumerate(hits, start=1):
        matched, coverage = coverage_of(hit.path)
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
                gap = f"{name} ({', '.join(map(shown_path, sorted(definers)))})"
                if gap not in unresolved:
                    unresolved.append(gap)
        # What a judge (a model's, perhaps) reads of the file: redacted as a tool's output is.
        shown = [u.model_copy(update={"text": redact(u.text).text}) for u in hit.units]
        excerpt = "\n".join(
            f"# lines {u.start_line}-{u.end_line} ({u.kind} {u.name})\n{u.text}" for u in shown[:2]
        )
        out.append(
            Candidate(
                path=hit.path,
                rank=rank,
                hit=hit.model_copy(update={"units": tuple(shown)}),
                excerpt=excerpt,
                matched=matched,
                coverage=coverage,
                top_score=top,
                unresolved=tuple(unresolved[:_GAPS_PER_FILE]),
            )
        )
    return out


def _answer(answer: object, candidates: Sequence[Candidate]) -> list[Judgement]:
    """A judge's answer as judgements of the candidates, each judged once, in rank order
    (the order :attr:`RetrievalResult.files` keeps, whatever order the judge answers in).

    Raises:
        ConfigError: the answer is not a list of judgements, or judges a file that is not a
            candidate, or one twice.
    """
    # Anything but Judgements would stop the loop at the first attribute it lacks.
    judged: list[Judgement] = instances(
        answer,
        "the judge's answer",
        Judgement,
        hint="; a judge returns Judgement(path=..., relevance=..., reason=...) per candidate",
    )
    rank = {c.path: c.rank for c in candidates}
    seen: set[str] = set()
    for j in judged:
        if j.path not in rank:
            shown = ", ".join(shown_path(c.path) for c in candidates[:5])
            raise ConfigError(
                f"the judge's answer judges {shown_path(j.path)!r}, which is not one of the "
                f"candidates ({shown}{', ...' if len(candidates) > 5 else ''}); a judge "
                "returns a Judgement per candidate it was given"
            )
        if j.path in seen:
            raise ConfigError(
                f"the judge's answer judges {shown_path(j.path)!r} twice; a judge returns one "
                "Judgement per candidate"
            )
        seen.add(j.path)
    return sorted(judged, key=lambda j: rank[j.path])


def _check_arguments(
    task: object, judge: object, max_cycles: object, candidates: object, budget: object
) -> None:
    nonblank(task, "task")
    check_tokens(max_cycles, "max_cycles", unit="cycles")
    check_tokens(candidates, "candidates", unit="files")
    check_tokens(budget, "budget")
    if judge is not None:
        callback(judge, "judge", "(task, candidates) -> judgements", 2)


def _new_terms(
    index: CodeIndex,
    task: str,
    high: Sequence[str],
    boost: dict[str, float],
    task_terms: set[str],
) -> dict[str, float]:
    """The codebase's own words for the task, with weights: the words of the docstrings and
    the names (defined, called, used) of the units of the highly relevant files that match the
    task best, each weighed by how well its unit matches the task, how often it is used there
    and its rarity in the repository, among the words some other file holds (a word only the
    files in hand hold leads nowhere new). Not a unit's whole body: its local variable names
    drift from the task."""
    if not high:
        return {}
    weights: dict[str, float] = {}
    scored = index.unit_scores(task, high, boost=boost)
    top = max((score for units in scored.values() for _, score in units[:1]), default=0.0)
    if top <= 0:
        return {}
    for path in high:
        for unit, score in scored.get(path, [])[:_UNITS_PER_FILE]:
            names = [unit.name] if unit.kind != "module" else []
            for term in code_terms(" ".join([unit.docstring, *names, *unit.references])):
                weights[term] = weights.get(term, 0.0) + score / top
    fresh = [t for t in weights if t not in task_terms and t not in boost and len(t) > 2]
    # A word found only in the files in hand leads nowhere new.
    others = [index.file_terms(p) for p in index.files if p not in high]
    useful = [t for t in fresh if any(t in terms for terms in others)]
    ranked = sorted(useful, key=lambda t: (-weights[t] * index.idf(t), t))[:_NEW_TERMS]
    if not ranked:
        return {}
    best = max(weights[t] * index.idf(t) for t in ranked)
    return {t: _NEW_TERM_WEIGHT * weights[t] * index.idf(t) / best for t in ranked}
