"""context_usage: the five buckets add up to the request's count, and the warnings and
suggestions say what /context says."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import ConfigError, context_usage, count_tokens
from tests.strategies import Conversation, conversations

BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a shell command.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command."}},
        },
    },
}


def mcp_tool(server: str, name: str, words: int) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": f"mcp__{server}__{name}",
            "description": " ".join(["describe"] * words),
            "parameters": {"type": "object", "properties": {}},
        },
    }


CLAUDE_MD = "# Project rules\n" + "\n".join(f"- rule {i}: keep it short" for i in range(250))


def session() -> list[dict[str, Any]]:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": "pytest -q"})},
    }
    return [
        {"role": "system", "content": "You are a coding agent.\n\n" + CLAUDE_MD},
        {"role": "user", "content": "Fix the failing test in auth.py."},
        {"role": "assistant", "content": "Running the tests.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "FAILED test_auth.py:88 " * 400},
        {"role": "assistant", "content": "expiresAt is undefined at line 88."},
    ]


def test_the_buckets_add_up_to_count_tokens_for_the_same_request() -> None:
    tools = [BASH, mcp_tool("github", "search", 300), mcp_tool("github", "issue", 50)]
    messages = session()
    usage = context_usage(
        messages, model="gpt-4", tools=tools, memory_files={"CLAUDE.md": CLAUDE_MD}
    )
    assert usage.total == count_tokens(messages, model="gpt-4", tools=tools)
    assert sum(b.tokens for b in usage.buckets) == usage.total
    assert [b.name for b in usage.buckets] == [
        "system prompt",
        "tool definitions",
        "memory files",
        "tool results",
        "message history",
    ]
    assert [b.fixed for b in usage.buckets] == [True, True, True, False, False]
    assert usage.fixed_tokens + usage.growing_tokens == usage.total
    memory = usage.bucket("memory files")
    assert memory.tokens == ctxpack.get_counter("gpt-4").count(CLAUDE_MD)
    assert usage.bucket("system prompt").tokens > 0
    assert usage.bucket("tool results").tokens == count_tokens(messages[3:4], model="gpt-4") - 3


@settings(max_examples=40, deadline=None)
@given(conversations(), st.sampled_from(["cl100k_base", "approx"]))
def test_the_sum_is_exact_on_any_conversation(conv: Conversation, counter: str) -> None:
    usage = context_usage(conv.items, counter=counter, tools=[BASH])
    assert usage.total == count_tokens(conv.items, counter=counter, tools=[BASH])
    assert sum(b.tokens for b in usage.buckets) == usage.total


def test_tools_are_listed_per_tool_and_per_mcp_server() -> None:
    tools = [BASH, mcp_tool("github", "search", 600), mcp_tool("github", "issue", 600)]
    usage = context_usage([{"role": "user", "content": "hi"}], tools=tools)
    items = usage.bucket("tool definitions").items
    assert [i.name for i in items] == ["MCP server github (2 tools)", "bash"]
    assert items[0].tokens > items[1].tokens
    assert any("MCP server github (2 tools)" in s for s in usage.suggestions)


@pytest.mark.parametrize("model", ["gpt-4", "claude-sonnet-4-5"])
def test_tool_items_are_their_definitions_without_the_framing(
    model: str,
) -> None:
    # Each group used to be counted alone, framing included: with Claude's 346-token tool
    # prompt, bash and a small MCP server made 765 tokens of items in a 419-token bucket.
    tools = [BASH, mcp_tool("github", "search", 20), mcp_tool("github", "issue", 20)]
    usage = context_usage([{"role": "user", "content": "hi"}], model=model, tools=tools)
    bucket = usage.bucket("tool definitions")
    assert sum(i.tokens for i in bucket.items) < bucket.tokens
    without_bash = context_usage(
        [{"role": "user", "content": "hi"}], model=model, tools=tools[1:]
    ).bucket("tool definitions")
    bash = next(i for i in bucket.items if i.name == "bash")
    assert bash.tokens == bucket.tokens - without_bash.tokens
    alone = context_usage([{"role": "user", "content": "hi"}], model=model, tools=[BASH])
    assert alone.bucket("tool definitions").items[0].tokens == bash.tokens
    assert bash.tokens < alone.bucket("tool definitions").tokens  # the framing is the bucket's


def test_tool_items_of_a_counter_that_asks_the_provider_are_what_each_saves() -> None:
    from ctxpack.tokens import TiktokenCounter

    class Asking(TiktokenCounter):
        def count_tools(self, tools: list[Any]) -> int:  # 300 of framing, 10 a tool
            return 300 + 10 * len(tools) if tools else 0

    tools = [BASH, mcp_tool("github", "search", 20), mcp_tool("github", "issue", 20)]
    usage = context_usage([{"role": "user", "content": "hi"}], counter=Asking(), tools=tools)
    bucket = usage.bucket("tool definitions")
    assert bucket.tokens == 330
    assert [(i.name, i.tokens) for i in bucket.items] == [
        ("MCP server github (2 tools)", 20),
        ("bash", 10),
    ]


def test_free_space_and_the_two_warnings_of_context() -> None:
    big = [{"role": "user", "content": "word " * 5000}]  # 5,007 tokens
    usage = context_usage(big, window=4_000, compaction_window=3_000)
    assert usage.free == 4_000 - usage.total
    assert usage.warnings == [
        "Context exceeds the 4k-token limit by 1k tokens",
        "Context is 2k tokens past the 3k-token compaction window",
    ]
    roomy = context_usage(big, window=200_000, compaction_window=150_000)
    assert roomy.warnings == [] and roomy.free == 200_000 - roomy.total


def test_the_window_comes_from_the_price_table_when_the_model_is_known() -> None:
    with pytest.warns(ctxpack.tokens.ApproximateTokenCountWarning):
        usage = context_usage([{"role": "user", "content": "hi"}], model="claude-sonnet-4-5")
    assert usage.window == 200_000 and not usage.exact
    assert context_usage([{"role": "user", "content": "hi"}], model="gpt-4").window is None


def test_suggestions_name_the_largest_tool_result_and_a_long_memory_file() -> None:
    usage = context_usage(session(), memory_files={"CLAUDE.md": CLAUDE_MD})
    assert usage.suggestions[0].startswith("Tool result 3: bash pytest -q takes ")
    assert any("CLAUDE.md has 251 lines (over 200)" in s for s in usage.suggestions)
    quiet = context_usage(session()[:3])
    assert quiet.suggestions == []


@pytest.mark.parametrize("copies", [1, 2])
def test_memory_files_with_the_same_text_share_its_copies(copies: int) -> None:
    # Two CLAUDE.md files with one text (a repository's and a folder's): sent once, its tokens
    # are one file's, not the first file's plus the rest of the message holding it.
    rules = "Always run the tests with pytest -q before committing. " * 20
    messages = [{"role": "user", "content": f"{rules}\n\nhello"}]
    messages += [{"role": "user", "content": rules}] * (copies - 1)
    files = {"a/CLAUDE.md": rules, "b/CLAUDE.md": rules}
    usage = context_usage(messages, model="gpt-4o", memory_files=files)
    one = ctxpack.get_counter(model="gpt-4o").count(rules)
    assert [i.tokens for i in usage.bucket("memory files").items] == [
        one,
        one if copies == 2 else 0,
    ]
    assert usage.total == count_tokens(messages, model="gpt-4o")
    hello = next(i for i in usage.bucket("message history").items if i.name == "0: user")
    assert hello.tokens > 0  # "hello" and the framing stay the message's


def test_a_memory_file_inside_another_is_counted_once() -> None:
    rules = "Use tabs. " * 30
    usage = context_usage(
        [{"role": "user", "content": rules + "Never push to main. hi"}],
        model="gpt-4o",
        memory_files={"CLAUDE.md": rules + "Never push to main.", "tabs.md": rules},
    )
    assert [i.tokens for i in usage.bucket("memory files").items][1] == 0


def test_a_memory_file_missing_from_the_request_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"memory file 'AGENTS\.md' is not in any message"):
        context_usage(session(), memory_files={"AGENTS.md": "never sent"})
    with pytest.raises(ConfigError, match="window must be a positive"):
        context_usage(session(), window=0)
    with pytest.raises(ConfigError, match="no bucket 'files'"):
        context_usage(session()).bucket("files")


def test_the_report_and_the_json_views() -> None:
    usage = context_usage(session(), window=10_000)
    report = usage.report().splitlines()
    assert report[0].split() == ["bucket", "tokens", "share", "kind"]
    assert any(line.startswith("free") for line in report)
    data = json.loads(usage.to_json())
    assert data["total"] == usage.total
    assert data["fixed_tokens"] + data["growing_tokens"] == usage.total
    assert data["buckets"][0]["name"] == "system prompt"


def test_the_plot_draws_one_segment_per_non_empty_bucket_and_the_free_space() -> None:
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from ctxpack.cost import price, simulate
    from ctxpack.plot import plot_bills, plot_context_usage

    usage = context_usage(session(), window=20_000, compaction_window=15_000)
    ax = plot_context_usage(usage)
    non_empty = sum(1 for b in usage.buckets if b.tokens)
    assert len(ax.patches) == non_empty + 1
    bill = simulate([session()[:2], session()[:4]], price=price("gpt-5"))
    ax = plot_bills({"raw": bill})
    (line,) = ax.get_lines()
    assert list(line.get_ydata())[-1] == pytest.approx(bill.cost)


def test_the_plot_without_matplotlib_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ctxpack.plot import plot_context_usage

    # None in sys.modules makes the import fail, as if matplotlib were not installed.
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install 'ctxpack\[plot\]'"):
        plot_context_usage(context_usage(session()))
