"""ctxpack.code's public names: a change to them is deliberate and shows up here."""

from __future__ import annotations

import inspect

import ctxpack.code


def test_code_all() -> None:
    assert set(ctxpack.code.__all__) == {
        "CodeIndex",
        "JudgeError",
        "Judgement",
        "ModelJudge",
        "RankingJudge",
        "decide_loading",
        "grep",
        "iterative_retrieve",
        "parse_source",
    }
    assert ctxpack.code.__all__ == sorted(ctxpack.code.__all__, key=lambda n: (n.upper() != n, n))
    for name in ctxpack.code.__all__:
        assert getattr(ctxpack.code, name) is not None


def test_the_names_scripts_rely_on() -> None:
    from ctxpack.code import CodeIndex, iterative_retrieve

    assert callable(CodeIndex.search)
    parameters = inspect.signature(iterative_retrieve).parameters
    assert list(parameters)[:2] == ["task", "root"]
    assert parameters["judge"].default is None
    assert parameters["max_cycles"].default == 3
    assert parameters["max_cycles"].kind is inspect.Parameter.KEYWORD_ONLY
    assert set(ctxpack.code.RetrievalResult.model_fields) >= {"files", "context", "tokens"}
