"""A citation quotes its source: the text it cites, a search result's source and a page's URL
came from a tool's output, and are redacted as that output is, though they sit in the
assistant's turn."""

from __future__ import annotations

import json
from typing import Any

import pytest

import ctxpack
from ctxpack import Session, pack

TOKEN = "ghp_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"
SAID = f"token {TOKEN}"


def _web_fetch_turn() -> list[dict[str, Any]]:
    # The provider fetched the page, so the citation quotes the page as fetched, secret and all.
    document = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": SAID},
        "title": "CI settings",
        "citations": {"enabled": True},
    }
    cite = {
        "type": "char_location",
        "cited_text": SAID,
        "document_index": 0,
        "document_title": "CI settings",
        "start_char_index": 0,
        "end_char_index": len(SAID),
    }
    return [
        {"role": "user", "content": "What does the CI page say?"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_1",
                    "name": "web_fetch",
                    "input": {"url": "https://ci.example.com/settings"},
                },
                {
                    "type": "web_fetch_tool_result",
                    "tool_use_id": "srvtoolu_1",
                    "content": {
                        "type": "web_fetch_result",
                        "url": "https://ci.example.com/settings",
                        "content": document,
                    },
                },
                {"type": "text", "text": "It sets a token.", "citations": [cite]},
            ],
        },
        {"role": "user", "content": "Thanks."},
    ]


def _search_result_turn(source: str, quoted: str) -> list[dict[str, Any]]:
    result = {
        "type": "search_result",
        "source": source,
        "title": "Runbook",
        "content": [{"type": "text", "text": quoted}],
        "citations": {"enabled": True},
    }
    cite = {
        "type": "search_result_location",
        "source": source,
        "title": "Runbook",
        "cited_text": quoted,
        "search_result_index": 0,
        "start_block_index": 0,
        "end_block_index": 0,
    }
    return [
        {"role": "user", "content": "Find the deploy token."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "kb", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [result]}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Found.", "citations": [cite]}]},
        {"role": "user", "content": "Thanks."},
    ]


def _sent(history: list[dict[str, Any]]) -> list[str]:
    """What each path sends (and a session keeps) of ``history``, as JSON."""
    session = Session(model="claude-sonnet-4-5", counter="approx")
    session.extend(history)
    managed = Session(model="claude-sonnet-4-5", counter="approx", window=200_000)
    managed.extend(history)
    packed = pack(ctxpack.from_anthropic(history), budget=50_000, counter="approx")
    return [
        json.dumps(session.render().to_anthropic()),
        repr(session.transcript()),
        json.dumps(managed.render().to_anthropic()),
        json.dumps(packed.to_anthropic()),
    ]


@pytest.mark.parametrize(
    "history",
    [
        _web_fetch_turn(),
        _search_result_turn("https://kb.example.com/runbook", SAID),
        _search_result_turn(f"https://kb.example.com/runbook?access_token={TOKEN}", "no secret"),
    ],
    ids=["web fetch citation", "search result citation", "search result source"],
)
def test_no_secret_a_citation_quotes_is_sent(history: list[dict[str, Any]]) -> None:
    for sent in _sent(history):
        assert TOKEN not in sent


def test_a_citation_keeps_its_shape_and_the_assistants_words() -> None:
    packed = pack(ctxpack.from_anthropic(_web_fetch_turn()), budget=50_000, counter="approx")
    said = packed.to_anthropic()["messages"][1]["content"][-1]
    (cite,) = said["citations"]
    assert said["text"] == "It sets a token."
    assert cite["cited_text"] == "token [REDACTED github-pat]"
    assert cite["document_title"] == "CI settings" and cite["end_char_index"] == len(SAID)
    decisions = [d.reason for d in packed.decisions if d.action == "redacted"]
    assert decisions == ["2 secrets replaced: github-pat"]


def test_a_search_results_source_and_its_citation_stay_paired() -> None:
    # The citation names its search result by source: both get the same placeholder.
    source = f"https://kb.example.com/runbook?access_token={TOKEN}"
    packed = pack(
        ctxpack.from_anthropic(_search_result_turn(source, "no secret")),
        budget=50_000,
        counter="approx",
    )
    messages = packed.to_anthropic()["messages"]
    result = messages[2]["content"][0]["content"][0]
    (cite,) = messages[3]["content"][0]["citations"]
    assert result["source"] == cite["source"] == source.replace(TOKEN, "[REDACTED github-pat]")


def test_the_pages_an_openai_web_search_found_are_redacted_its_query_kept() -> None:
    found = f"https://kb.example.com/runbook?access_token={TOKEN}"
    search = {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {
            "type": "search",
            "query": "deploy runbook",
            "sources": [{"type": "url", "url": found}],
        },
    }
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "Search the runbook."},
        search,
        {"role": "user", "content": "Go on."},
    ]
    session = Session(model="gpt-4o", counter="approx")
    session.extend(items)
    packed = pack(items, budget=50_000, counter="approx")
    for result in (session.render(), packed):
        (sent,) = [
            i for i in result.to_openai(api="responses") if i.get("type") == "web_search_call"
        ]
        assert sent["action"]["query"] == "deploy runbook"
        assert sent["action"]["sources"] == [
            {"type": "url", "url": found.replace(TOKEN, "[REDACTED github-pat]")}
        ]
