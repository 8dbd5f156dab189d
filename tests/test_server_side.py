"""Server-side context management from the same WindowPolicy, through the real SDKs on a mock
transport: the request fields they send, and what comes back read into the session."""

from __future__ import annotations

import pytest

from ctxpack import (
    BudgetExceededError,
    ConfigError,
    InvalidMessageError,
    Message,
    Session,
    count_tokens,
    get_counter,
    to_openai,
)
from ctxpack.adapters import from_anthropic
from ctxpack.managed import WindowPolicy
from ctxpack.server_side import (
    ANTHROPIC_BETAS,
    anthropic_context_management,
    openai_context_management,
    response_decisions,
)

from .sdk_mock import Capture, anthropic_client, anthropic_message, openai_client

COUNTER = get_counter(counter="cl100k_base")
POLICY = WindowPolicy(
    window=200_000,
    keep=4,
    keep_thinking=2,
    clear_at=0.35,
    compact_at=0.6,
    server_side=True,
    instructions="x",
)


def test_anthropic_edits_follow_the_policy() -> None:
    edits = anthropic_context_management(POLICY)["edits"]
    room = 200_000 - POLICY.reserve
    assert edits == [
        {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}},
        {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": int(POLICY.clear_at * room)},
            "keep": {"type": "tool_uses", "value": 4},
        },
        {
            "type": "compact_20260112",
            "trigger": {"type": "input_tokens", "value": int(POLICY.compact_at * room)},
            "instructions": "x",
        },
    ]


def test_keep_thinking_0_is_refused_server_side_anthropic_takes_no_such_edit() -> None:
    # It was sent as {"type": "thinking_turns", "value": 0}; Anthropic's context-editing docs
    # take thinking_turns N > 0 only (or "all"), so every request would have been refused.
    with pytest.raises(ConfigError, match=r"keep_thinking=0 cannot be sent server-side"):
        WindowPolicy(window=200_000, server_side=True, keep_thinking=0)
    assert WindowPolicy(window=200_000, keep_thinking=0).keep_thinking == 0  # client-side: fine
    edits = anthropic_context_management(POLICY.model_copy(update={"keep_thinking": 1}))["edits"]
    assert edits[0]["keep"] == {"type": "thinking_turns", "value": 1}


def test_compaction_trigger_never_goes_under_anthropics_floor() -> None:
    edits = anthropic_context_management(WindowPolicy(window=32_000))["edits"]
    assert edits[-1]["trigger"]["value"] == 50_000
    assert [e["type"] for e in edits] == ["clear_tool_uses_20250919", "compact_20260112"]


@pytest.mark.parametrize(
    ("model", "window", "warned"),
    [
        ("claude-sonnet-4-5", 16_000, True),
        ("claude-sonnet-4-5", 128_000, False),
        ("gpt-4o", 16_000, False),  # OpenAI's compaction has no floor
    ],
)
def test_the_first_request_says_when_compaction_cannot_trigger_in_the_window(
    model: str, window: int, warned: bool
) -> None:
    session = Session(model=model, window=WindowPolicy(window=window, server_side=True))
    session.extend([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Go"}])
    notes = [d.reason for d in session.render().decisions if d.stage == "room"]
    assert bool(notes) is warned
    assert all("compaction cannot trigger under 50000" in (n or "") for n in notes)
    session.append({"role": "assistant", "content": "ok"})
    again = [d.reason for d in session.render().decisions if d.stage == "room"]
    assert again == notes  # said once, at the first request


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "gpt-4o"])
def test_a_system_prompt_over_the_window_is_refused_server_side_too(model: str) -> None:
    # The provider never edits it: the request would fail at the API, and rendered silently.
    session = Session(model=model, window=WindowPolicy(window=4_000, server_side=True))
    session.extend(
        [{"role": "system", "content": "rule " * 5_000}, {"role": "user", "content": "Go"}]
    )
    with pytest.raises(BudgetExceededError, match="the system prompt, which the provider"):
        session.render()


def test_openai_compaction_threshold_follows_the_policy() -> None:
    field = openai_context_management(POLICY)
    threshold = int(POLICY.compact_at * (200_000 - 8_192))
    assert field == [{"type": "compaction", "compact_threshold": threshold}]


def test_the_anthropic_sdk_sends_the_field_and_the_session_reads_the_reply() -> None:
    reply = anthropic_message(
        [
            {"type": "compaction", "content": "Summary: the bug is in cache.py line 88."},
            {"type": "text", "text": "Continuing from the summary."},
        ]
    )
    reply["context_management"] = {
        "applied_edits": [
            {
                "type": "clear_thinking_20251015",
                "cleared_thinking_turns": 3,
                "cleared_input_tokens": 1_200,
            },
            {
                "type": "clear_tool_uses_20250919",
                "cleared_tool_uses": 5,
                "cleared_input_tokens": 40_000,
            },
        ]
    }
    capture = Capture(reply)
    client = anthropic_client(capture)
    session = Session(counter=COUNTER, window=POLICY)
    session.append({"role": "user", "content": "Fix the cache bug."}, provider="anthropic")
    fields = session.context_management()
    assert fields["betas"] == list(ANTHROPIC_BETAS)
    request = session.render().to_anthropic()
    response = client.beta.messages.create(
        model="claude-sonnet-4-5", max_tokens=1024, **request, **fields
    )
    sent = capture.body
    assert sent["context_management"] == anthropic_context_management(POLICY)
    assert "context-management-2025-06-27" in capture.headers[-1]["anthropic-beta"]
    decisions = session.record_response(response)
    assert [d.action for d in decisions] == ["cleared", "cleared", "merged"]
    assert decisions[1].tokens_before == 40_000 and "5 tool uses" in decisions[1].reason
    # The reply is in both records, its compaction block verbatim, and goes back next time.
    assert session.transcript()[-1].content[0]["type"] == "compaction"  # type: ignore[index]
    again = session.render()
    blocks = again.to_anthropic()["messages"][-1]["content"]
    assert blocks[0] == {
        "type": "compaction",
        "content": "Summary: the bug is in cache.py line 88.",
    }
    assert [d for d in again.decisions if d.stage == "server"] == decisions


def test_the_openai_sdk_sends_the_field_and_the_session_records_the_compaction() -> None:
    body = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1_700_000_000,
        "model": "gpt-5",
        "status": "completed",
        "output": [
            {"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque"},
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
            },
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    capture = Capture(body)
    client = openai_client(capture)
    session = Session(counter=COUNTER, window=POLICY)
    session.append({"role": "user", "content": "Go on."})
    fields = session.context_management()
    response = client.responses.create(model="gpt-5", input="Go on.", **fields)
    assert capture.body["context_management"] == openai_context_management(POLICY)
    decisions = session.record_response(response)
    assert [d.action for d in decisions] == ["merged"]
    assert decisions[0].message_id == "resp_1"
    assert "opaque summary" in decisions[0].reason


def test_client_side_sessions_send_no_field() -> None:
    assert Session(window=64_000).context_management() == {}
    assert Session().context_management() == {}


def test_a_reply_without_context_management_records_nothing() -> None:
    assert (
        response_decisions(anthropic_message([{"type": "text", "text": "hi"}]), message_id="m")
        == []
    )
    with pytest.raises(InvalidMessageError, match=r"^response: not an Anthropic Messages or"):
        response_decisions("not a response", message_id="m")


def test_recording_a_reply_without_appending_it_reads_only_the_decisions() -> None:
    # For a reply that reaches the session another way: a client wrapper gives it the history.
    session = Session(counter=COUNTER, window=POLICY)
    session.append({"role": "user", "content": "Fix the cache bug."}, provider="anthropic")
    reply = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Done."}],
        "context_management": {
            "applied_edits": [
                {
                    "type": "clear_thinking_20251015",
                    "cleared_thinking_turns": 2,
                    "cleared_input_tokens": 900,
                }
            ]
        },
    }
    (decision,) = session.record_response(reply, append=False)
    assert decision.action == "cleared" and decision.tokens_before == 900
    assert [m.role for m in session.transcript()] == ["user"]
    with pytest.raises(ConfigError, match="append must be True or False, got 'no'"):
        session.record_response(reply, append="no")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "message",
    [
        {"role": "assistant", "content": "Done."},
        {"role": "assistant", "content": None, "tool_calls": []},
    ],
)
def test_a_chat_completions_message_is_no_response_to_record(message: dict[str, object]) -> None:
    with pytest.raises(InvalidMessageError, match="a Chat Completions message"):
        Session().record_response(message, append=False)


def test_a_failed_anthropic_compaction_block_is_read_and_keeps_the_history_before_it() -> None:
    # Null content marks a compaction that produced no summary, which the API takes back as a
    # no-op: record_response refused the reply ('content[0].content: must be a string, got
    # null'), and had it been read, the history before the block would have been dropped.
    history = [
        {"role": "user", "content": "The secret word is PAPAYA."},
        {"role": "assistant", "content": [{"type": "compaction", "content": None}]},
        {"role": "user", "content": "What is the secret word?"},
    ]
    assert from_anthropic(history)[0].text == "The secret word is PAPAYA."
    session = Session(counter=COUNTER, window=POLICY)
    session.append(history[0], provider="anthropic")
    session.record_response(anthropic_message([{"type": "compaction", "content": None}]))
    session.append(history[2], provider="anthropic")
    sent = session.render().to_anthropic()["messages"]
    assert sent == history


def test_a_failed_anthropic_compaction_is_no_merge() -> None:
    # It was recorded as "the provider compacted the history into an opaque summary".
    failed = anthropic_message(
        [{"type": "compaction", "content": None}, {"type": "text", "text": "Going on."}]
    )
    session = Session(counter=COUNTER, window=POLICY)
    session.append({"role": "user", "content": "Fix the cache bug."}, provider="anthropic")
    (decision,) = session.record_response(failed)
    assert decision.action == "warned" and "nothing was compacted" in (decision.reason or "")
    done = anthropic_message([{"type": "compaction", "content": "Summary."}])
    assert [d.action for d in response_decisions(done, message_id="m")] == ["merged"]


def test_a_claude_session_of_plain_messages_gets_anthropics_field() -> None:
    # Its messages say no provider (plain strings), its model does: render() took Anthropic's
    # rules, context_management() gave OpenAI's compaction list, which Anthropic refuses.
    capture = Capture(anthropic_message([{"type": "text", "text": "ok"}]))
    session = Session(model="claude-sonnet-4-5", counter=COUNTER, window=POLICY)
    session.append({"role": "user", "content": "Fix the cache bug."})
    fields = session.context_management()
    assert fields == {
        "context_management": anthropic_context_management(POLICY),
        "betas": list(ANTHROPIC_BETAS),
    }
    anthropic_client(capture).beta.messages.create(
        model="claude-sonnet-4-5", max_tokens=1024, **session.render().to_anthropic(), **fields
    )
    assert capture.body["context_management"]["edits"][-1]["type"] == "compact_20260112"
    assert session.context_management(provider="openai") == {
        "context_management": openai_context_management(POLICY)
    }


def test_an_empty_claude_reply_records_its_edits_and_appends_nothing() -> None:
    # Claude may end a turn with no content: record_response raised ('content: an empty list
    # of blocks') and the 40,000 tokens the provider cleared went unrecorded.
    reply = anthropic_message([])
    reply["context_management"] = {
        "applied_edits": [
            {
                "type": "clear_tool_uses_20250919",
                "cleared_tool_uses": 5,
                "cleared_input_tokens": 40_000,
            }
        ]
    }
    session = Session(counter=COUNTER, window=POLICY)
    session.append({"role": "user", "content": "Fix the cache bug."}, provider="anthropic")
    response = anthropic_client(Capture(reply)).beta.messages.create(
        model="claude-sonnet-4-5", max_tokens=1024, messages=[{"role": "user", "content": "x"}]
    )
    (decision,) = session.record_response(response)
    assert decision.tokens_before == 40_000
    assert decision.message_id == session.transcript()[-1].id
    assert [m.role for m in session.transcript()] == ["user"]


@pytest.mark.parametrize(
    "block",
    [
        {
            "type": "mcp_tool_use",
            "id": "mcptoolu_1",
            "name": "search",
            "server_name": "gh",
            "input": {},
        },
        {
            "type": "mcp_tool_result",
            "tool_use_id": "mcptoolu_1",
            "is_error": False,
            "content": [{"type": "text", "text": "3 issues"}],
        },
        {"type": "mcp_tool_listing", "mcp_server_name": "gh", "tools": []},
        {
            "type": "fallback",
            "from": {"model": "claude-opus-4-5"},
            "to": {"model": "claude-sonnet-4-5"},
            "trigger": {"type": "refusal"},
        },
    ],
)
def test_a_reply_with_the_mcp_connectors_or_a_fallbacks_blocks_is_recorded(
    block: dict[str, object],
) -> None:
    # record_response raised "content[0].type: unknown block type 'mcp_tool_use'" for blocks
    # the SDK parses and takes back.
    session = Session(counter=COUNTER, window=POLICY)
    session.append({"role": "user", "content": "Any open issues?"}, provider="anthropic")
    session.record_response(anthropic_message([block, {"type": "text", "text": "Three."}]))
    session.append({"role": "user", "content": "Thanks."}, provider="anthropic")
    assert session.render().to_anthropic()["messages"][1]["content"][0] == block


_COMPACTED = [
    {"role": "user", "content": "Find the bug."},
    {"role": "assistant", "content": [{"type": "text", "text": "Reading cache.py."}]},
    {"role": "user", "content": "And?"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Dropped by the API too."},
            {"type": "compaction", "content": "Summary: the bug is in cache.py line 88."},
            {"type": "text", "text": "Fixing it."},
        ],
    },
    {"role": "user", "content": "Go on."},
]


def test_an_anthropic_history_goes_to_openai_from_its_compaction_block_on() -> None:
    # Anthropic reads the history from the last compaction block on; to_openai read each
    # message alone, so OpenAI was sent the whole history the summary replaced, and not the
    # summary itself.
    sent = to_openai([{"role": "system", "content": "Be brief."}, *_COMPACTED])
    summary = {"type": "text", "text": "Summary: the bug is in cache.py line 88."}
    assert sent == [
        {"role": "system", "content": "Be brief."},
        {"role": "assistant", "content": [summary, {"type": "text", "text": "Fixing it."}]},
        {"role": "user", "content": "Go on."},
    ]
    assert [m.text for m in from_anthropic(_COMPACTED)[1:]] == ["Go on."]
    assert count_tokens(_COMPACTED, model="gpt-4o") == count_tokens(
        from_anthropic(_COMPACTED), model="gpt-4o"
    )


def test_messages_holding_a_compaction_block_go_to_openai_from_it_on_as_dicts_do() -> None:
    # to_openai read a history of dicts from its last compaction block on, but a history of
    # Messages (a session's, read one message at a time as Session.append reads them) was
    # sent whole: the history the summary replaced went to OpenAI, and was counted.
    dicts = [{"role": "system", "content": "Be brief."}, *_COMPACTED]
    system = Message(role="system", content="Be brief.")
    messages = [system, *(m for entry in _COMPACTED for m in from_anthropic([entry]))]
    assert len(messages) == 6 and messages[4].content[0]["type"] == "compaction"
    assert to_openai(messages) == to_openai(dicts)
    assert to_openai(messages, api="responses") == to_openai(dicts, api="responses")
    assert count_tokens(messages, model="gpt-4o") == count_tokens(dicts, model="gpt-4o")
    # The blocks before it in its message (one a stage rebuilt, say) are left out too.
    said = {"type": "text", "text": "Dropped by the API too."}
    rebuilt = messages[4].model_copy(update={"content": [said, *messages[4].content]})
    assert to_openai([*messages[:4], rebuilt, messages[5]]) == to_openai(dicts)
    # A failed compaction (null content) leaves the history before it.
    failed = messages[4].model_copy(update={"content": [{"type": "compaction", "content": None}]})
    assert len(to_openai([*messages[:4], failed])) == 5


def test_a_failed_compaction_block_sends_the_history_before_it_to_openai() -> None:
    history = [
        *_COMPACTED[:3],
        {"role": "assistant", "content": [{"type": "compaction", "content": None}]},
    ]
    assert [m["role"] for m in to_openai(history)] == ["user", "assistant", "user", "assistant"]
