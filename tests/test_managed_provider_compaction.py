"""A client-side managed window over a history the provider compacted: Anthropic reads it from
the last compaction block on, and the window measures and edits the request as it is read."""

from __future__ import annotations

from ctxpack import Session, count_tokens

from .test_server_side_audit import COUNTER, _compacted_loop, _reply, _result


def _block_position(session: Session) -> int:
    """The position in the transcript of the message holding the compaction block."""
    return next(
        k
        for k, m in enumerate(session.transcript())
        if isinstance(m.content, list) and any(b.get("type") == "compaction" for b in m.content)
    )


def test_a_managed_window_does_not_compact_the_history_the_provider_skips() -> None:
    # render() counted an Anthropic history from its last compaction block (unread()), but the
    # managed window measured every message before it too: at 9,679 tokens against the 1,068
    # the API reads, it summarised the 50 messages the provider had compacted already (a
    # summary the API skips too), and rewrote the prompt cache for nothing.
    session = Session(model="claude-sonnet-4-5", counter=COUNTER, window=20_000)
    session.append({"role": "system", "content": "You are a coding agent."})
    session.append({"role": "user", "content": "Find why probe 3 fails."}, provider="anthropic")
    for i in range(30):  # a request per step, as an agent renders them
        session.record_response(_reply(i, compaction=i == 25))
        session.append(_result(i), provider="anthropic")
        result = session.render()
    assert not session.window_state.events
    assert not session.window_state.compacted and not session.window_state.cleared
    # The window's measure is render()'s, and count_tokens' on the transcript.
    read = result.tokens - result.tool_tokens
    assert session.window_state.last_tokens == read
    assert read == count_tokens(session.transcript(), counter=COUNTER)


def test_a_managed_window_edits_only_what_the_provider_reads() -> None:
    # Past the block the session grows again: the window clears and compacts from the block
    # on, never the messages before it (sent as the record holds them, at 0 tokens).
    session = Session(model="claude-sonnet-4-5", counter=COUNTER, window=20_000)
    _compacted_loop(session, turns=25, at=25)
    session.record_response(_reply(25, compaction=True))
    session.append(_result(25), provider="anthropic")
    block = _block_position(session)
    for i in range(26, 120):
        session.record_response(_reply(i))
        session.append(_result(i), provider="anthropic")
        result = session.render()
        assert result.tokens <= 20_000
        assert result.tokens - result.tool_tokens == session.window_state.last_tokens
    state = session.window_state
    assert [e.action for e in state.events].count("compacted") >= 2
    positions = {m.id: k for k, m in enumerate(session.transcript())}
    edited = [*state.compacted, *state.cleared]
    assert edited and min(positions[m] for m in edited) > block
    # Every event measured the request as read: none saw more than the window.
    assert all(e.tokens_before <= 20_000 for e in state.events)
    # The messages before the block are still sent, as the requests before sent them, and
    # cost nothing: the request counts as count_tokens counts what it sends.
    assert [m.id for m in result.messages[:block]] == [m.id for m in session.transcript()[:block]]
    read = count_tokens(result.messages, counter=COUNTER)
    assert read == result.tokens - result.tool_tokens


def test_pins_a_compaction_re_injects_go_after_the_providers_compaction_block() -> None:
    # The window re-injects the pins it summarises right after the system prompt: with the
    # provider's compaction block further on, they were sent where the provider never reads.
    session = Session(model="claude-sonnet-4-5", counter=COUNTER, window=20_000)
    session.append({"role": "system", "content": "You are a coding agent."})
    session.append({"role": "user", "content": "Find why probe 3 fails."}, provider="anthropic")
    skill = "SKILL: always run the probes with -v and read line 88 first."
    for i in range(120):
        session.record_response(_reply(i, compaction=i == 25))
        session.append(_result(i), provider="anthropic")
        if i == 30:
            session.pin(skill, name="probing")
        result = session.render()
    assert "compacted" in {e.action for e in session.window_state.events}
    ids = [m.id for m in result.messages]
    block = next(
        k
        for k, m in enumerate(result.messages)
        if isinstance(m.content, list) and any(b.get("type") == "compaction" for b in m.content)
    )
    pins = ids.index("ctxpack-pinned")
    assert pins > block and skill in (result.messages[pins].text or "")
    # Read, so counted; the request Anthropic takes carries it after the block.
    assert count_tokens(result.messages, counter=COUNTER) == result.tokens - result.tool_tokens
    sent = result.to_anthropic()["messages"]
    after = sent[next(k for k, m in enumerate(sent) if "compaction" in str(m["content"])) :]
    assert skill in str(after)
