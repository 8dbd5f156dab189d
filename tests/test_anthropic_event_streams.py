"""Anthropic's event stream (``messages.create(stream=True)``) behind a server-side session.

The wrapper watches the events pass on their way to the caller and, as ``message_stop`` passes,
records what the provider's context management did (the applied edits of ``message_delta``, a
compaction block), once, as it does for OpenAI's Responses events. The caller gets the SDK's
own stream, its events unchanged; a stream left early, or broken by an error event, records
nothing.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

import ctxpack
from tests.sdk_mock import Capture, anthropic_client, anthropic_message, async_anthropic_client

QUESTION = {"role": "user", "content": "Why does the auth test fail?"}
SUMMARY = "Summary: the auth test fails on a stale token in cache.py."
CLEARED = {
    "type": "clear_tool_uses_20250919",
    "cleared_tool_uses": 3,
    "cleared_input_tokens": 4_200,
}
REQUEST: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 1_000}
# A reply opening with a compaction block (its summary in a delta), then text, its applied
# edits in message_delta.
EVENTS: list[dict[str, Any]] = [
    {"type": "message_start", "message": {**anthropic_message([]), "stop_reason": None}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "compaction"}},
    {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "compaction_delta", "content": SUMMARY},
    },
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}},
    {"type": "content_block_stop", "index": 1},
    {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 2},
        "context_management": {"applied_edits": [CLEARED]},
    },
    {"type": "message_stop"},
]
TYPES = [e["type"] for e in EVENTS]
RECORDED = [("cleared", 4_200), ("merged", None)]
FAILED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


def sse(events: list[dict[str, Any]]) -> httpx2.Response:
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)


def server_side_session() -> ctxpack.Session:
    policy = ctxpack.managed.WindowPolicy(window=200_000, server_side=True)
    return ctxpack.Session(model="claude-sonnet-4-5", counter="cl100k_base", window=policy)


def recorded(session: ctxpack.Session) -> list[tuple[str, int | None]]:
    """The server's decisions the session holds: those its next render reports."""
    return [(d.action, d.tokens_before) for d in session.render().decisions if d.stage == "server"]


def wrapped(events: list[dict[str, Any]] = EVENTS) -> tuple[ctxpack.Session, Any, Capture]:
    capture = Capture(lambda body: sse(events))
    session = server_side_session()
    return session, ctxpack.wrap_anthropic(anthropic_client(capture), session=session), capture


READS = ["for", "next()", "with"]


@pytest.mark.parametrize("how", READS)
def test_the_event_stream_read_to_its_end_records_the_edits_and_the_compaction_once(
    how: str,
) -> None:
    # The wrapper left create(stream=True)'s events to the caller: a streamed turn's
    # compaction and clearings never reached the session's decisions.
    session, client, capture = wrapped()
    stream = client.beta.messages.create(**REQUEST, messages=[QUESTION], stream=True)
    assert isinstance(stream, anthropic.Stream)  # the SDK's own, as without a session
    if how == "for":
        events = [event for event in stream]
    elif how == "next()":
        events = []
        with pytest.raises(StopIteration):
            while True:
                events.append(next(stream))
    else:
        with stream as entered:
            events = list(entered)
    assert [event.type for event in events] == TYPES
    # Unchanged: the caller's compaction block still as it started, its summary in its delta.
    assert events[1].content_block.content is None and events[2].delta.content == SUMMARY
    assert capture.body["stream"] is True and "context_management" in capture.body
    assert recorded(session) == RECORDED
    assert recorded(session) == RECORDED  # read, not consumed: once


def test_the_edits_are_recorded_before_the_caller_sees_message_stop() -> None:
    session, client, _ = wrapped()
    stream = client.beta.messages.create(**REQUEST, messages=[QUESTION], stream=True)
    for event in stream:
        if event.type == "message_stop":
            assert recorded(session) == RECORDED
            break
    else:
        pytest.fail("no message_stop")


@pytest.mark.parametrize("async_session", [False, True], ids=["Session", "AsyncSession"])
def test_an_async_event_stream_is_recorded_once(async_session: bool) -> None:
    policy = ctxpack.managed.WindowPolicy(window=200_000, server_side=True)

    async def main() -> list[tuple[str, int | None]]:
        capture = Capture(lambda body: sse(EVENTS))
        session: Any = server_side_session()
        if async_session:
            session = await ctxpack.AsyncSession.open(
                "s",
                store="memory://",
                model="claude-sonnet-4-5",
                counter="cl100k_base",
                window=policy,
            )
        client = ctxpack.wrap_anthropic(async_anthropic_client(capture), session=session)
        stream = await client.beta.messages.create(**REQUEST, messages=[QUESTION], stream=True)
        assert isinstance(stream, anthropic.AsyncStream)
        assert [event.type async for event in stream] == TYPES
        result = await session.render() if async_session else session.render()
        return [(d.action, d.tokens_before) for d in result.decisions if d.stage == "server"]

    assert asyncio.run(main()) == RECORDED


@pytest.mark.parametrize("breaks", ["left early", "closed", "error event"])
def test_a_stream_left_early_or_broken_records_nothing(breaks: str) -> None:
    events = [*EVENTS[:5], FAILED] if breaks == "error event" else EVENTS
    session, client, _ = wrapped(events)
    stream = client.beta.messages.create(**REQUEST, messages=[QUESTION], stream=True)
    if breaks == "error event":
        with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
            list(stream)
    else:
        # Up to the message_delta, which holds the edits, but not its message_stop.
        assert [e.type for e in itertools.islice(stream, len(EVENTS) - 1)] == TYPES[:-1]
        if breaks == "closed":
            stream.close()
    assert recorded(session) == []


def test_the_next_request_goes_through_with_the_reply_given_once() -> None:
    replies = iter([sse(EVENTS), httpx2.Response(200, json=anthropic_message([]))])
    capture = Capture(lambda body: next(replies))
    session = server_side_session()
    client = ctxpack.wrap_anthropic(anthropic_client(capture), session=session)
    stream = client.beta.messages.create(**REQUEST, messages=[QUESTION], stream=True)
    assert [event.type for event in stream] == TYPES
    compaction = {"type": "compaction", "content": SUMMARY}
    reply = {"role": "assistant", "content": [compaction, {"type": "text", "text": "Hi"}]}
    history = [QUESTION, reply, {"role": "user", "content": "Go."}]
    client.beta.messages.create(**REQUEST, messages=history)
    result = client.last_result
    assert result is not None
    assert [(d.action, d.tokens_before) for d in result.decisions if d.stage == "server"] == (
        RECORDED
    )
    assert [m.role for m in session.transcript()] == ["user", "assistant", "user"]
    assert capture.body["messages"][1]["content"][0] == compaction  # verbatim, in its place


def test_a_streamed_reply_given_again_to_record_response_is_read_once() -> None:
    # Before the wrapper read create(stream=True)'s events, the guide said to give the message
    # they hold to record_response yourself: code that still does must not count the edits
    # twice, nor append the reply (it reaches the session with the next request).
    session, client, _ = wrapped()
    stream = client.beta.messages.create(**REQUEST, messages=[QUESTION], stream=True)
    assert [event.type for event in stream] == TYPES
    compaction = {"type": "compaction", "content": SUMMARY}
    message = {
        **anthropic_message([compaction, {"type": "text", "text": "Hi"}]),
        "context_management": {"applied_edits": [CLEARED]},
    }
    assert session.record_response(message, append=False) == []
    assert session.record_response(message) == []
    assert recorded(session) == RECORDED
    assert [m.role for m in session.transcript()] == ["user"]
    # Another reply (its own id) is another turn's edits.
    assert len(session.record_response({**message, "id": "msg_2"})) == 2
    assert recorded(session) == [*RECORDED, *RECORDED]
    assert [m.role for m in session.transcript()] == ["user", "assistant"]


def test_a_fake_model_answering_with_one_id_has_each_answer_appended() -> None:
    # A test's fake model often gives every reply the same id: recorded by hand with the
    # default append, each is a turn of its own, none remembered.
    session = ctxpack.Session(model="claude-sonnet-4-5", counter="cl100k_base")
    for turn in range(3):
        session.append({"role": "user", "content": f"Question {turn}?"}, provider="anthropic")
        session.record_response(anthropic_message([{"type": "text", "text": "Same answer."}]))
    assert [m.role for m in session.transcript()] == ["user", "assistant"] * 3
    assert session.window_state.replies == []


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_reply_read_once_is_known_to_a_replica_and_a_later_process(
    kind: str, tmp_path: Path
) -> None:
    policy = ctxpack.managed.WindowPolicy(window=200_000, server_side=True)
    url = "memory://" if kind == "memory" else f"sqlite:///{tmp_path / 'sessions.db'}"
    store = ctxpack.store.open_store(url)

    def opened() -> ctxpack.Session:
        return ctxpack.Session.open(
            "s", store=store, model="claude-sonnet-4-5", counter="cl100k_base", window=policy
        )

    first, second = opened(), opened()
    first.append(QUESTION, provider="anthropic")
    message = {**anthropic_message([]), "context_management": {"applied_edits": [CLEARED]}}
    assert len(first.record_response(message, append=False)) == 1
    assert second.record_response(message, append=False) == []
    assert opened().record_response(message, append=False) == []
    assert recorded(opened()) == [("cleared", 4_200)]


def tool_turn_events() -> list[dict[str, Any]]:
    """A streamed turn calling get_weather (its input in a JSON delta), with EVENTS' edits."""
    call = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
    delta = {"type": "input_json_delta", "partial_json": '{"city": "Oslo"}'}
    return [
        EVENTS[0],
        {"type": "content_block_start", "index": 0, "content_block": call},
        {"type": "content_block_delta", "index": 0, "delta": delta},
        {"type": "content_block_stop", "index": 0},
        {**EVENTS[-2], "delta": {"stop_reason": "tool_use", "stop_sequence": None}},
        EVENTS[-1],
    ]


def test_a_streaming_tool_runner_has_each_turn_s_edits_recorded() -> None:
    # The SDK's runner streams each turn with create(stream=True) through the wrapper, and
    # reads the events with its own helpers: the edits of every turn reach the session.
    from anthropic import beta_tool

    @beta_tool
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        return "3 C"

    second = [{**EVENTS[0], "message": {**EVENTS[0]["message"], "id": "msg_2"}}, *EVENTS[1:]]
    replies = iter([sse(tool_turn_events()), sse(second)])
    capture = Capture(lambda body: next(replies))
    session = server_side_session()
    client = ctxpack.wrap_anthropic(anthropic_client(capture), session=session)
    runner = client.beta.messages.tool_runner(
        tools=[get_weather], thread=False, stream=True, **REQUEST, messages=[QUESTION]
    )
    finals = []
    for stream in runner:
        finals.append(stream.get_final_message())
    assert [m.content[-1].type for m in finals] == ["tool_use", "text"]
    assert [body["stream"] for body in capture.requests] == [True, True]
    assert recorded(session) == [("cleared", 4_200), *RECORDED]


# The SDK types an unknown block as another (a text block with the unknown fields beside), and
# pydantic warns when the session reads the message, as it does for such a reply object.
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
def test_a_block_the_sdk_does_not_know_passes_and_the_edits_are_still_recorded() -> None:
    # A newer API's block (or delta) the installed SDK cannot type: the wrapper reading the
    # events must not break the caller's stream on it.
    unknown = {"type": "future_block", "payload": {"x": 1}}
    events = [
        *EVENTS[:4],
        {"type": "content_block_start", "index": 1, "content_block": unknown},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "future_delta", "y": 2}},
        {"type": "content_block_stop", "index": 1},
        *EVENTS[-2:],
    ]
    session, client, _ = wrapped(events)
    stream = client.beta.messages.create(**REQUEST, messages=[QUESTION], stream=True)
    assert [event.type for event in stream] == [e["type"] for e in events]
    assert recorded(session) == RECORDED
