"""An adversarial audit of server-side context management: what a session reports and sends
once the provider compacted, and the warnings it owes, as a real user's session meets them."""

from __future__ import annotations

from typing import Any

import pytest

from ctxpack import InvalidMessageError, Session, count_tokens, get_counter
from ctxpack.managed import WindowPolicy

COUNTER = get_counter(counter="cl100k_base")
SUMMARY = "SUMMARY: probes 0 to 24 ran; the bug is in probe 3, line 88."


def _reply(i: int, compaction: bool = False) -> dict[str, Any]:
    content: list[dict[str, Any]] = [
        {"type": "tool_use", "id": f"tu{i}", "name": "bash", "input": {"command": f"./probe {i}"}}
    ]
    if compaction:
        content.insert(0, {"type": "compaction", "content": SUMMARY})
    return {
        "id": f"msg_{i}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _result(i: int) -> dict[str, Any]:
    rows = "\n".join(f"probe {i} row {j}: value_{i}_{j}" for j in range(25))
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": f"tu{i}", "content": rows}],
    }


def _compacted_loop(session: Session, turns: int = 30, at: int = 25) -> None:
    session.append({"role": "system", "content": "You are a coding agent."})
    session.append({"role": "user", "content": "Find why probe 3 fails."}, provider="anthropic")
    for i in range(turns):
        session.record_response(_reply(i, compaction=i == at))
        session.append(_result(i), provider="anthropic")


@pytest.mark.parametrize("window", [None, 200_000, "server"])
def test_a_render_counts_the_history_from_the_last_compaction_block_as_count_tokens_does(
    window: Any,
) -> None:
    # Anthropic reads the history from the last compaction block on (ctxpack's count_tokens,
    # from_anthropic and to_openai all read it so), but render() counted every message before
    # it too: a server-side session reported several times the tokens the API reads.
    policy = WindowPolicy(window=200_000, server_side=True) if window == "server" else window
    session = Session(model="claude-sonnet-4-5", counter=COUNTER, window=policy)
    _compacted_loop(session)
    result = session.render()
    payload = result.to_anthropic()
    read = count_tokens(
        [{"role": "system", "content": payload["system"]}, *payload["messages"]], counter=COUNTER
    )
    assert (
        result.tokens - result.tool_tokens
        == read
        == count_tokens(session.transcript(), counter=COUNTER)
    )
    # Each message still has its decision, those the API skips at 0 tokens, saying why.
    unread = [d for d in result.decisions if d.stage == "session" and d.tokens_after == 0]
    assert unread and all("compaction block" in (d.reason or "") for d in unread)
    ids = [m.id for m in result.messages]
    start = next(
        i
        for i, m in enumerate(result.messages)
        if isinstance(m.content, list) and any(b.get("type") == "compaction" for b in m.content)
    )
    assert {d.message_id for d in unread} <= set(ids[1:start])  # the system prompt is read


@pytest.mark.parametrize("model", [None, "gpt-4o"])
def test_a_session_sending_anthropics_field_warns_when_its_compaction_cannot_trigger(
    model: str | None,
) -> None:
    # context_management() gives Anthropic's field to the provider render() targets (the
    # messages' when the model is not Claude's), with a compaction trigger raised to the
    # 50,000-token floor, over this 16,000-token window; the warning went by the model's
    # name alone, so such a session was never told its compaction cannot trigger.
    session = Session(
        model=model, counter=COUNTER, window=WindowPolicy(window=16_000, server_side=True)
    )
    session.append({"role": "user", "content": "Go"}, provider="anthropic")
    edits = session.context_management()["context_management"]["edits"]
    assert edits[-1]["trigger"]["value"] == 50_000
    notes = [d.reason for d in session.render().decisions if d.stage == "room"]
    assert len(notes) == 1 and "compaction cannot trigger under 50000" in (notes[0] or "")
    # Rendered for OpenAI, whose compaction has no floor, it says nothing.
    other = Session(
        model=model, counter=COUNTER, window=WindowPolicy(window=16_000, server_side=True)
    )
    other.append({"role": "user", "content": "Go"}, provider="anthropic")
    assert not [d for d in other.render(provider="openai").decisions if d.stage == "room"]


@pytest.mark.parametrize("encrypted", [None, 5, ""])
def test_an_openai_compaction_item_without_its_context_is_refused_naming_the_field(
    encrypted: Any,
) -> None:
    # It was read as a `merged` decision (the history compacted), and the item, which carries
    # the whole compacted context, was then refused when appended: the decision told of a
    # compaction no request could send back.
    session = Session(
        model="gpt-5", counter=COUNTER, window=WindowPolicy(window=200_000, server_side=True)
    )
    session.append({"role": "user", "content": "Go on."})
    item: dict[str, Any] = {"type": "compaction", "id": "cmp_1"}
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    response = {"id": "resp_1", "object": "response", "status": "completed", "output": [item]}
    with pytest.raises(InvalidMessageError, match=r"^output\[0\]\.encrypted_content: ") as caught:
        session.record_response(response)
    assert caught.value.field == "output[0].encrypted_content"
    assert session.window_state.decisions == [] and session.window_state.replies == []


def _b64(n_bytes: int, seed: int = 0) -> str:
    import base64
    import random

    return base64.b64encode(random.Random(seed).randbytes(n_bytes)).decode()


def _added_by(block: dict[str, Any]) -> int:
    """Tokens ``block`` adds to an assistant message (the first: nothing before it to skip)."""
    said = {"type": "text", "text": "Continuing."}
    return count_tokens(
        [{"role": "assistant", "content": [block, said]}], counter=COUNTER
    ) - count_tokens([{"role": "assistant", "content": [said]}], counter=COUNTER)


def test_a_compaction_block_counts_its_summary_not_its_opaque_fields_as_text() -> None:
    # A compaction block was counted as the text of its Python repr: its encrypted_content and
    # signature, base64, cost a token for every 1.3 characters, four times what the bytes
    # can hold (the rule thinking signatures and OpenAI's compaction items are counted by).
    summary = "Summary: the bug is in cache.py line 88; the fix is to evict on write. " * 8
    plain = {"type": "compaction", "content": summary}
    assert _added_by(plain) == COUNTER.count(summary)
    encrypted = _b64(6_000)
    carried = -(-(len(encrypted) * 3 // 4 - 650) // 4)  # the bytes less an envelope, 4 a token
    sealed = {**plain, "encrypted_content": encrypted, "signature": _b64(200, seed=1)}
    assert _added_by(sealed) == COUNTER.count(summary) + carried
    assert _added_by(sealed) < COUNTER.count(summary) + COUNTER.count(encrypted) / 3
    # A failed compaction (null content) carries no summary.
    assert _added_by({"type": "compaction", "content": None}) == 0
    # The tool changes of the compacted range are read: counted as their JSON.
    changes = [{"type": "tool_addition", "name": "grep"}]
    assert _added_by({**plain, "tool_changes": changes}) > _added_by(plain)


def test_a_compaction_block_with_an_empty_summary_is_refused_naming_the_field() -> None:
    # Anthropic refuses a compaction block whose content is "" (null marks a failed one): it
    # was read as a `merged` decision and appended, and every later request was refused.
    session = Session(
        model="claude-sonnet-4-5",
        counter=COUNTER,
        window=WindowPolicy(window=200_000, server_side=True),
    )
    session.append({"role": "user", "content": "Go on."}, provider="anthropic")
    reply = _reply(0)
    reply["content"].insert(0, {"type": "compaction", "content": ""})
    with pytest.raises(InvalidMessageError, match=r"content\[0\]\.content: .*empty") as caught:
        session.record_response(reply)
    assert caught.value.field == "content[0].content"
    assert len(session.transcript()) == 1 and session.window_state.decisions == []
    with pytest.raises(InvalidMessageError, match=r"content\[0\]\.content: .*empty"):
        session.append({"role": "assistant", "content": reply["content"]}, provider="anthropic")


@pytest.mark.parametrize("tokens", [None, "missing"])
def test_an_applied_edit_without_its_token_count_is_recorded_as_unreported_not_as_zero(
    tokens: Any,
) -> None:
    # A clearing whose cleared_input_tokens is null or absent was recorded as clearing 0
    # tokens: a decision claiming the provider removed nothing, beside "3 tool uses".
    from ctxpack.server_side import response_decisions

    edit: dict[str, Any] = {"type": "clear_tool_uses_20250919", "cleared_tool_uses": 3}
    if tokens is None:
        edit["cleared_input_tokens"] = None
    reply = {**_reply(0), "context_management": {"applied_edits": [edit]}}
    (decision,) = response_decisions(reply, message_id="m")
    assert decision.action == "cleared" and decision.tokens_before is None
    assert "3 tool uses" in (decision.reason or "") and "0 input tokens" not in (
        decision.reason or ""
    )
    assert "unreported" in (decision.reason or "")


def test_a_policys_clear_at_least_is_sent_in_anthropics_clearing_edit() -> None:
    # Anthropic's clear_tool_uses_20250919 takes clear_at_least ({"type": "input_tokens",
    # "value": N}: a clearing that would free fewer tokens is not made, so that it does not
    # break the prompt cache for a few tokens), as ToolResultClearer(clear_at_least=...) does
    # client-side; the policy the field is built from had no such option, and the field never
    # carried it.
    from ctxpack.server_side import anthropic_context_management

    policy = WindowPolicy(window=200_000, server_side=True, clear_at_least=20_000)
    session = Session(model="claude-sonnet-4-5", counter=COUNTER, window=policy)
    for field in (
        anthropic_context_management(policy),
        session.context_management()["context_management"],
    ):
        (clear,) = [e for e in field["edits"] if e["type"] == "clear_tool_uses_20250919"]
        assert clear["clear_at_least"] == {"type": "input_tokens", "value": 20_000}
    # Unset (0), nothing is sent: Anthropic's own default applies.
    plain = anthropic_context_management(WindowPolicy(window=200_000, server_side=True))
    assert all("clear_at_least" not in e for e in plain["edits"])


def test_a_client_side_window_makes_no_clearing_under_its_clear_at_least() -> None:
    # The same option client-side: a batch that would remove fewer tokens waits (its rent
    # goes on), as ToolResultClearer's does; the request still fits the window.
    from .test_managed import CLEARING, run

    def cleared(policy: WindowPolicy) -> list[int]:
        session = Session(counter=COUNTER, filters=False, window=policy)
        results = run(session, 30)
        assert max(r.tokens for r in results) <= policy.window - policy.reserve
        events = session.window_state.events
        return [e.tokens_before - e.tokens_after for e in events if e.action == "cleared"]

    freed = cleared(CLEARING)
    assert freed and min(freed) < 4_500
    bigger = cleared(CLEARING.model_copy(update={"clear_at_least": 4_500}))
    assert bigger and bigger != freed and all(tokens >= 4_500 for tokens in bigger)
