from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import ConfigError
from ctxpack.code import (
    Candidate,
    CodeIndex,
    JudgeError,
    Judgement,
    ModelJudge,
    RankingJudge,
    RefreshStats,
    band,
    iterative_retrieve,
)
from ctxpack.store import SQLiteArtifactStore

RATE_LIMIT = "Add rate limiting to the API endpoints"


def test_the_loop_learns_the_codebase_vocabulary(repo: Path) -> None:
    """The task says "rate limiting", the code says "throttle": the first cycle finds the file
    that uses both words, learns "throttle" from it, and the next cycle finds throttle.py."""
    result = iterative_retrieve(RATE_LIMIT, CodeIndex(repo, db=":memory:"))
    first, second = result.cycles[0], result.cycles[1]
    assert "api/middleware.py" in first.high
    assert "api/throttle.py" not in first.high
    assert "throttl" in first.added_terms
    assert "throttl" in second.terms
    assert "api/throttle.py" in second.high
    assert "api/throttle.py" in result.files
    assert result.files[0] == "api/middleware.py"


def test_without_refinement_the_throttle_file_is_missed(repo: Path) -> None:
    # One cycle is plain ranking: the file that only speaks of throttling is not found.
    result = iterative_retrieve(RATE_LIMIT, CodeIndex(repo, db=":memory:"), max_cycles=1)
    assert "api/throttle.py" not in result.files
    assert result.cycles[0].stop == "max_cycles (1) reached"


def test_every_cycle_is_recorded(repo: Path) -> None:
    result = iterative_retrieve(RATE_LIMIT, CodeIndex(repo, db=":memory:"))
    assert 1 <= len(result.cycles) <= 3
    assert [c.cycle for c in result.cycles] == list(range(1, len(result.cycles) + 1))
    for cycle in result.cycles:
        assert [j.path for j in cycle.judgements] == [c.path for c in cycle.candidates]
        assert all(j.reason for j in cycle.judgements)
        assert set(cycle.high) == {j.path for j in cycle.judgements if j.relevance >= 0.7}
        if not cycle.stop.startswith("enough"):  # a cycle that ends the loop refines nothing
            assert set(cycle.newly_excluded) <= {
                j.path for j in cycle.judgements if j.relevance < 0.2
            }
    # Excluded files never come back.
    gone: set[str] = set()
    for cycle in result.cycles:
        assert not gone & {c.path for c in cycle.candidates}
        gone |= set(cycle.newly_excluded)
    assert result.cycles[-1].stop
    assert all(not c.stop for c in result.cycles[:-1])
    assert "cycle 1:" in result.report()


def test_result_files_context_and_tokens(repo: Path) -> None:
    store = SQLiteArtifactStore(":memory:")
    index = CodeIndex(repo, db=":memory:")
    result = iterative_retrieve(RATE_LIMIT, index, store=store)
    # The first ranking less what the judge ruled out, in rank order, with the later cycles'
    # highly relevant files placed among them.
    first = [j.path for j in result.cycles[0].judgements if j.relevance >= 0.2]
    assert [p for p in result.files if p in first] == first
    later = {p for c in result.cycles[1:] for p in c.high}
    assert later and set(result.files) == set(first) | later
    assert all(result.relevance[p] >= 0.2 for p in result.files)
    assert result.tokens == index.counter.count(result.context)
    assert result.repository_tokens == index.tokens()
    for path in result.files:
        assert f"### {path}:" in result.context
        # The whole file is kept: the passage header names it, the store gives it back.
        assert result.artifacts[path] in result.context
        assert store.get(result.artifacts[path]) == (repo / path).read_text()


def test_an_index_passed_in_is_brought_up_to_date_first(repo: Path) -> None:
    # Its files were read at its first search: the context quoted a function as it was then,
    # beside the whole file as it is now, and a file deleted since stopped the loop.
    index = CodeIndex(repo, db=":memory:")
    index.rank_files(RATE_LIMIT)
    (repo / "api" / "quota.py").write_text(
        "def rate_limit_endpoint(request):\n    return 'RATE_LIMIT_V2'\n"
    )
    first = iterative_retrieve(RATE_LIMIT, index)
    assert "RATE_LIMIT_V2" in first.context
    for path in first.files:
        os.remove(repo / path)
    again = iterative_retrieve(RATE_LIMIT, index)
    assert not set(again.files) & set(first.files)
    assert all(f"### {path}:" not in again.context for path in first.files)


def test_a_file_deleted_while_the_loop_runs_is_left_out(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = CodeIndex(repo, db=":memory:")
    gone = iterative_retrieve(RATE_LIMIT, index).files[0]
    refresh = index.refresh

    def refresh_then_delete() -> RefreshStats:
        stats = refresh()
        (repo / gone).unlink(missing_ok=True)  # after the loop's refresh, before its reads
        return stats

    monkeypatch.setattr(index, "refresh", refresh_then_delete)
    result = iterative_retrieve(RATE_LIMIT, index)
    assert gone not in result.artifacts and f"### {gone}:" not in result.context


def test_what_the_loop_shows_a_model_is_redacted(repo: Path) -> None:
    # The context goes to a model, as a tool's output does: a key in a settings file was in it,
    # in the judge's excerpts and in the whole files stored for the model to read.
    token = "ghp_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"
    (repo / "api" / "limits_settings.py").write_text(
        f'"""Rate limiting settings for the API endpoints."""\n\nGITHUB_TOKEN = "{token}"\n\n'
        "def rate_limit_settings():\n    return GITHUB_TOKEN\n"
    )
    seen: list[str] = []

    def judge(task: str, candidates: Sequence[Candidate]) -> list[Judgement]:
        seen.extend(c.excerpt for c in candidates)
        return RankingJudge()(task, candidates)

    result = iterative_retrieve(RATE_LIMIT, CodeIndex(repo, db=":memory:"), judge=judge)
    assert "api/limits_settings.py" in result.files
    assert "[REDACTED github-pat]" in result.context
    assert token not in repr(result.cycles) and token not in result.report()
    assert not any(token in excerpt for excerpt in seen)
    assert not any(token in result.store.get(a) for a in result.artifacts.values())


def test_budget_bounds_the_context(repo: Path) -> None:
    result = iterative_retrieve(RATE_LIMIT, CodeIndex(repo, db=":memory:"), budget=60)
    assert result.tokens <= 60
    assert result.files  # the files are found whatever the budget


def test_stops_when_three_files_are_highly_relevant_without_gaps(repo: Path) -> None:
    def generous(task: str, candidates: Sequence[Candidate], /) -> list[Judgement]:
        return [Judgement(path=c.path, relevance=0.9, reason="all good") for c in candidates]

    result = iterative_retrieve(RATE_LIMIT, CodeIndex(repo, db=":memory:"), judge=generous)
    assert len(result.cycles) == 1
    assert result.cycles[0].stop.startswith("enough")
    assert len(result.files) == 10


def test_critical_gaps_keep_the_loop_going_and_are_targeted(repo: Path) -> None:
    def gappy(task: str, candidates: Sequence[Candidate], /) -> list[Judgement]:
        return [
            Judgement(path=c.path, relevance=0.9, reason="ok", missing=("fetch_record",))
            if c.rank <= 3
            else Judgement(path=c.path, relevance=0.3, reason="tangential")
            for c in candidates
        ]

    result = iterative_retrieve(RATE_LIMIT, CodeIndex(repo, db=":memory:"), judge=gappy)
    first = result.cycles[0]
    assert first.gaps and first.focus == ("fetch_record",) * 3
    assert not first.stop  # a gap keeps the loop going past 3 highly relevant files
    # The gap's words are targeted next.
    assert result.cycles[1].terms["fetch"] == 1.0
    assert "api/storage.py" in {c.path for c in result.cycles[1].candidates}
    # Cycle 2 finds more files at 0.9, which leaves the judge no surer than 0.9: the loop stops.
    assert len(result.cycles) == 2
    assert result.cycles[1].stop == "cycle 2 did not raise the confidence (0.90)"


@pytest.mark.parametrize(("later", "position"), [(0.95, 2), (0.75, 5)])
def test_a_later_find_needs_a_band_more_to_pass_the_first_ranking(
    repo: Path, later: float, position: int
) -> None:
    """The first ranking's order holds against a later file judged about as relevant (0.75 and
    0.6 are both medium), and gives way to one judged a band higher (0.95 is high)."""

    scripted = {"api/middleware.py": 0.8, "api/routes.py": 0.8, "api/throttle.py": later}

    def judge(task: str, candidates: Sequence[Candidate], /) -> list[Judgement]:
        return [
            Judgement(
                path=c.path,
                relevance=scripted.get(c.path, 0.6),
                reason="scripted",
            )
            for c in candidates
        ]

    index = CodeIndex(repo, db=":memory:")
    result = iterative_retrieve(RATE_LIMIT, index, judge=judge, max_cycles=2, candidates=5)
    first = [j.path for j in result.cycles[0].judgements]
    assert first[:2] == ["api/middleware.py", "api/routes.py"]
    assert "api/throttle.py" not in first
    assert "api/throttle.py" in result.cycles[1].high
    assert result.files.index("api/throttle.py") == position
    assert [p for p in result.files if p in first] == first


def test_the_loop_never_drops_a_file_of_the_first_ranking(repo: Path) -> None:
    index = CodeIndex(repo, db=":memory:")
    for task in (RATE_LIMIT, "load_profile of a user", "fetch a record from storage"):
        ranking = [h.path for h in index.rank_files(task, k=10)]
        result = iterative_retrieve(task, index)
        kept = [p for p in ranking if result.relevance.get(p, 0.0) >= 0.2]
        assert [p for p in result.files if p in ranking] == kept


_BAND_ORDER = ("none", "low", "medium", "high")


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    task=st.sampled_from([RATE_LIMIT, "load_profile of a user", "fetch a record from storage"]),
    scores=st.lists(st.sampled_from([0.1, 0.3, 0.6, 0.75, 0.9]), min_size=12, max_size=12),
)
def test_only_a_band_higher_passes_a_file_of_the_first_ranking(
    repo: Path, task: str, scores: list[float]
) -> None:
    """Whatever the judge says, a file of the first ranking it kept (>= 0.2) is preceded in the
    loop's files only by files ahead of it in the first ranking, or by later finds the judge put
    a band higher: the loop's top 5 holds rank_files' top 5 unless the judge had evidence."""
    index = CodeIndex(repo, db=":memory:")
    paths = sorted(index.files)
    scripted = dict(zip(paths, scores * (len(paths) // len(scores) + 1), strict=False))

    def judge(task: str, candidates: Sequence[Candidate], /) -> list[Judgement]:
        return [Judgement(path=c.path, relevance=scripted[c.path], reason="s") for c in candidates]

    first = [h.path for h in index.rank_files(task, k=10)]
    result = iterative_retrieve(task, index, judge=judge, candidates=10)
    for at, path in enumerate(result.files):
        if path not in first:
            continue
        for ahead in result.files[:at]:
            if ahead in first:
                assert first.index(ahead) < first.index(path)
            else:
                level = _BAND_ORDER.index(band(result.relevance[ahead]))
                assert level > _BAND_ORDER.index(band(result.relevance[path]))
    kept_top = [p for p in first[:5] if scripted[p] >= 0.2]
    later_high = [p for p in result.files[:5] if p not in first]
    assert set(kept_top) <= set(result.files[: 5 + len(later_high)])


def test_with_the_default_judge_later_finds_come_after_the_first_ranking(repo: Path) -> None:
    """The default judge's scores are relative to each dispatch, so no later find passes a
    file of the first ranking: the loop's files start with rank_files' kept files, in order."""
    index = CodeIndex(repo, db=":memory:")
    assert RankingJudge.relative_to_dispatch
    for task in (RATE_LIMIT, "load_profile of a user", "fetch a record from storage"):
        ranking = [h.path for h in index.rank_files(task, k=10)]
        result = iterative_retrieve(task, index)
        kept = [p for p in ranking if result.relevance.get(p, 0.0) >= 0.2]
        assert list(result.files[: len(kept)]) == kept
    # The vocabulary task does find a file in a later cycle: it comes last.
    result = iterative_retrieve(RATE_LIMIT, index)
    later = [p for p in result.files if p not in [j.path for j in result.cycles[0].judgements]]
    assert later == ["api/throttle.py"]
    assert result.files[-1] == "api/throttle.py"


def test_the_default_judge_reports_unresolved_names(repo: Path) -> None:
    index = CodeIndex(repo, db=":memory:")
    result = iterative_retrieve("load_profile of a user", index, max_cycles=1)
    judged = {j.path: j for j in result.cycles[0].judgements}
    assert judged["api/users.py"].relevance >= 0.7
    assert RankingJudge()("task", []) == []


class FakeClient:
    """A model client that answers from a script and keeps the prompts it was sent."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.prompts: list[str] = []

    def complete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.answer


def test_model_judge_through_a_fake_client(repo: Path) -> None:
    verdicts = [
        {"path": "api/throttle.py", "relevance": 0.95, "reason": "token bucket", "missing": []},
        {"path": "api/middleware.py", "relevance": 0.8, "reason": "installs it"},
        {"path": "api/routes.py", "relevance": 0.75, "reason": "the endpoints"},
        {"path": "not/a/candidate.py", "relevance": 1.0, "reason": "made up"},
    ]
    client = FakeClient("Here you go:\n" + json.dumps(verdicts))
    result = iterative_retrieve(
        RATE_LIMIT, CodeIndex(repo, db=":memory:"), judge=ModelJudge(client.complete)
    )
    prompt = client.prompts[0]
    assert RATE_LIMIT in prompt and "0.8-1.0" in prompt and "--- api/middleware.py" in prompt
    assert "not/a/candidate.py" not in result.files
    if "api/throttle.py" in {c.path for c in result.cycles[0].candidates}:
        assert result.files[0] == "api/throttle.py"
    judged = {j.path: j for j in result.cycles[0].judgements}
    left_out = [j for j in judged.values() if j.reason == "not judged by the model"]
    assert all(j.relevance == 0.0 for j in left_out)


@pytest.mark.parametrize(
    "answer",
    ["I cannot tell.", "[{'path': 'a.py'}]", '[{"path": "api/db.py", "relevance": 7}]'],
)
def test_model_judge_rejects_unreadable_answers(repo: Path, answer: str) -> None:
    judge = ModelJudge(FakeClient(answer).complete)
    with pytest.raises(JudgeError, match="JSON list") as info:
        iterative_retrieve(RATE_LIMIT, CodeIndex(repo, db=":memory:"), judge=judge)
    assert info.value.answer == answer
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("answer", ["[" + "9" * 5000 + "]", "[" * 100_000 + "]" * 100_000])
def test_model_judge_rejects_json_python_cannot_read(repo: Path, answer: str) -> None:
    # A number past Python's digit limit, nesting past the recursion limit: they escaped as a
    # bare ValueError and a RecursionError.
    judge = ModelJudge(FakeClient(answer).complete)
    with pytest.raises(JudgeError, match="unreadable judgements") as info:
        iterative_retrieve(RATE_LIMIT, CodeIndex(repo, db=":memory:"), judge=judge)
    assert info.value.answer == answer


def test_bands_and_arguments(repo: Path) -> None:
    assert [band(x) for x in (1.0, 0.8, 0.7, 0.5, 0.4, 0.2, 0.19, 0.0)] == [
        "high",
        "high",
        "medium",
        "medium",
        "low",
        "low",
        "none",
        "none",
    ]
    index = CodeIndex(repo, db=":memory:")
    for bad in ({"max_cycles": 0}, {"candidates": 0}, {"budget": 0}):
        with pytest.raises(ConfigError, match="must be a positive int"):
            iterative_retrieve(RATE_LIMIT, index, **bad)  # type: ignore[arg-type]
    # A folder works as well as an index.
    assert iterative_retrieve(RATE_LIMIT, repo).files


def test_learning_words_looks_each_file_up_without_scanning_the_file_list(
    tmp_path: Path,
) -> None:
    """Learning words asks, for each other file of the repository, which words it holds. Each
    of these looked the file up by a scan of the sorted file list, so the step grew with the
    square of the files: 19 s of a 20 s loop on 50,000 files."""
    import sys
    from types import FrameType

    for i in range(300):
        (tmp_path / f"mod{i}.py").write_text(f"def helper_{i}():\n    return {i}\n")
    (tmp_path / "throttle.py").write_text(
        "def throttle(request):\n    '''Rate limit a request.'''\n    return bucket(request)\n"
    )
    (tmp_path / "bucket.py").write_text("def bucket(request):\n    return request\n")
    index = CodeIndex(tmp_path, db=":memory:")
    index.refresh()
    scans = 0
    # ctxpack's calls only: numpy 1.24 calls list.index itself (find_common_type).
    package = str(Path(ctxpack.__file__).parent)

    def count(frame: FrameType, event: str, arg: object) -> None:
        nonlocal scans
        if event == "c_call" and getattr(arg, "__qualname__", "") == "list.index":
            scans += frame.f_code.co_filename.startswith(package)

    sys.setprofile(count)
    try:
        result = iterative_retrieve("rate limit a request", index)
    finally:
        sys.setprofile(None)
    assert result.cycles[0].added_terms  # the step ran
    assert scans == 0
