"""LexicalSelector: the offline default, from relevance scoring and a file search."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxpack import ConfigError
from ctxpack.code import ripgrep_path
from ctxpack.selection import (
    FileSearch,
    LexicalSelector,
    Workspace,
    apply_selection,
    check_selection,
    keywords,
    selection_prompt,
)

from .helpers import make_repo, session_messages


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def test_it_selects_the_relevant_messages_and_tool_results(repo: Path) -> None:
    ws = Workspace(session_messages(), root=repo)
    sel = LexicalSelector(budget=150, recent=1, max_files=0)(
        ws, "refreshes expired token test failing"
    )
    # The failing test's output is chosen by call id, the build log is not.
    assert sel.include_tool_results == ["call_2"]
    assert 7 in sel.include_messages  # the last message
    reasons = {r.item: r.reason for r in sel.reasons}
    assert reasons["call_2"].startswith("relevance")
    assert sel.selector == "LexicalSelector" and sel.goal
    result = apply_selection(sel, ws)
    assert ws.messages[3].id in result.dropped_ids  # the build log


def test_each_reason_lands_on_its_own_message_when_ids_are_numbers() -> None:
    # Ids counted from 1: the reason written for index 1 (as "1") used to name the message
    # whose id is "1", index 0, and the last message got no reason of its own.
    ws = Workspace(
        [
            {"role": "user", "content": f"note {i} about topic {i}", "id": str(i + 1)}
            for i in range(4)
        ]
    )
    sel = LexicalSelector(budget=1_000, recent=1)(ws, "topic 2")
    assert sel.include_messages == [0, 1, 2, 3]  # one reason each, in order
    said = [r.reason for r in sel.reasons]
    assert said[1] != said[0]
    result = apply_selection(sel, ws)
    for i, msg in enumerate(ws.messages):
        (decision,) = result.decisions_for(msg.id)
        assert decision.reason.startswith(f"selected by LexicalSelector: {said[i]}")


def test_a_reason_names_a_message_by_its_index_as_the_listing_shows_it() -> None:
    # The answer stands for a model selector's, which reads [index] in its listing (never the
    # ids a workspace gives messages): naming each message by its id made the benchmarked
    # answers 14% longer (m-ba1fdbd8dcee for 12). The id only where the index text is an id.
    ws = Workspace(
        [
            {"role": "user", "content": "The deploy fails with error E42."},
            {"role": "assistant", "content": "E42: the build image is missing.", "id": "3"},
            {"role": "user", "content": "Rebuilt, still E42."},
            {"role": "assistant", "content": "Then E42 is the registry."},
        ]
    )
    sel = LexicalSelector(budget=1_000, recent=4)(ws, "error E42")
    assert [r.item for r in sel.reasons] == ["0", "1", "2", ws.messages[3].id]
    assert ws.messages[3].id not in selection_prompt(ws, "error E42")
    result = apply_selection(sel, ws)
    for i, msg in enumerate(ws.messages):
        (decision,) = result.decisions_for(msg.id)
        assert decision.reason.startswith(f"selected by LexicalSelector: {sel.reasons[i].reason}")


def test_a_recent_message_is_said_to_be_recent_not_pinned() -> None:
    # The selector pins the recent messages for pack(), whose reason, "pinned", was passed on
    # as if the caller had pinned them.
    ws = Workspace(
        [
            {"role": "user", "content": "The deploy fails with error E42."},
            {"role": "assistant", "content": "E42: the build image is missing."},
            {"role": "user", "content": "Thanks.", "pinned": True},
            {"role": "assistant", "content": "Anything else?"},
        ]
    )
    sel = LexicalSelector(budget=1_000, recent=2)(ws, "error E42")
    said = {r.item: r.reason for r in sel.reasons}
    assert said["3"] == "one of the last 2 messages"
    assert said["2"] == "pinned"  # pinned by the caller: that is why


def test_it_finds_files_by_their_words_and_shows_them_around_a_match(repo: Path) -> None:
    ws = Workspace(
        [{"role": "user", "content": "Why does the expired token test fail?"}], root=repo
    )
    sel = LexicalSelector(max_files=2)(ws, "refreshes expired token")
    paths = [f.path for f in sel.include_files]
    assert paths[0] == "tests/auth.test.ts"  # the only file with "refreshes" and "expired"
    assert "src/auth.ts" in paths
    assert all(f.match for f in sel.include_files)
    assert "node_modules/lib/index.js" not in paths
    check_selection(sel, ws)  # everything it names exists


def test_a_file_the_goal_names_is_included(repo: Path) -> None:
    ws = Workspace([], root=repo)
    sel = LexicalSelector(max_files=0)(ws, "read src/session.ts first")
    assert [(f.path, f.match, f.lines) for f in sel.include_files] == [
        ("src/session.ts", None, None)
    ]


def test_without_a_root_there_are_no_files() -> None:
    sel = LexicalSelector()(Workspace(session_messages()), "token")
    assert sel.include_files == []


def test_an_empty_workspace_selects_nothing() -> None:
    sel = LexicalSelector()(Workspace([]), "anything")
    assert (sel.include_messages, sel.include_tool_results) == ([], [])


def test_keywords_keep_identifiers_whole() -> None:
    assert keywords("Fix `refresh_token` in auth.ts: the token expires") == [
        "refresh_token",
        "auth.ts",
        "fix",
        "expires",
    ]


def test_the_python_search_counts_matching_lines(repo: Path) -> None:
    ws = Workspace([], root=repo, search="python")
    counts = ws.searcher().counts(["token", "expired"])
    assert counts["src/auth.ts"] == {"token": 6, "expired": 2}
    assert "logo.png" not in counts and "node_modules/lib/index.js" not in counts


@pytest.mark.skipif(ripgrep_path() is None, reason="ripgrep is not installed")
def test_ripgrep_and_python_give_the_same_counts(repo: Path) -> None:
    words = ["token", "expired", "refresh", "session", "nothing-matches-this"]
    python = FileSearch(repo, Workspace([], root=repo).files(), engine="python", max_bytes=10**6)
    ripgrep = FileSearch(repo, Workspace([], root=repo).files(), engine="ripgrep", max_bytes=10**6)
    assert ripgrep.engine == "ripgrep"
    assert ripgrep.counts(words) == python.counts(words)
    assert ripgrep.search(words, most=5) == python.search(words, most=5)


def test_an_unknown_engine_is_a_config_error(repo: Path) -> None:
    with pytest.raises(ConfigError, match="engine must be"):
        FileSearch(repo, [], engine="grep", max_bytes=1)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="LexicalSelector: budget=0"):
        LexicalSelector(budget=0)


def test_keywords_of_arguments_of_the_wrong_type_are_a_config_error() -> None:
    # AttributeError: 'NoneType' object has no attribute 'split', and TypeError: slice
    # indices must be integers, before.
    with pytest.raises(ConfigError, match="goal must be a string, got None"):
        keywords(None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="most must be an int >= 0"):
        keywords("refresh token", most="3")  # type: ignore[arg-type]


def test_keywords_of_a_chinese_goal_are_pairs_of_characters(tmp_path: Path) -> None:
    # Chinese writes no space between words: the whole goal was one keyword, found nowhere.
    assert keywords("为什么登录失败？") == ["为什", "什么", "么登", "登录", "录失", "失败"]
    assert keywords("修复 login 错误") == ["修复", "login", "错误"]
    root = tmp_path / "repo"
    root.mkdir()
    (root / "auth.py").write_text("# 用户登录：密码错误时登录失败\ndef login(): ...\n", "utf-8")
    (root / "pay.py").write_text("# 支付模块\ndef pay(): ...\n", "utf-8")
    ws = Workspace([], root=root, search="python")
    sel = LexicalSelector(max_files=1)(ws, "为什么登录失败？")
    assert [f.path for f in sel.include_files] == ["auth.py"]
