"""ctxpack.code's public names: a change to them is deliberate and shows up here."""

from __future__ import annotations

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
    assert list(iterative_retrieve.__code__.co_varnames[:2]) == ["task", "root"]
    assert iterative_retrieve.__kwdefaults__ is not None
    assert iterative_retrieve.__kwdefaults__["judge"] is None
    assert iterative_retrieve.__kwdefaults__["max_cycles"] == 3
    assert set(ctxpack.code.RetrievalResult.model_fields) >= {"files", "context", "tokens"}
