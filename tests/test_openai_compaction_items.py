"""OpenAI Responses ``compaction`` items: read into a session, kept verbatim, counted, stored and
sent back in place.

With ``context_management=[{"type": "compaction", ...}]`` a Responses reply starts with a
``compaction`` item whose ``encrypted_content`` carries the context the next window needs. A
stateless loop appends the reply's output items to its input as usual; the item must go back
byte for byte, and only to OpenAI's Responses API.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import warnings
from pathlib import Path
from typing import Any

import httpx2
import pydantic
import pytest

import ctxpack
from ctxpack import InvalidMessageError, Session, to_anthropic, to_openai
from ctxpack.managed import WindowPolicy
from ctxpack.tokens import ApproximateTokenCountWarning
from tests.sdk_mock import Capture, async_openai_client, openai_client
from tests.test_clients_responses import response

openai_responses = pytest.importorskip("openai.types.responses")
ITEM = pydantic.TypeAdapter(openai_responses.ResponseInputItem)
OUTPUT = pydantic.TypeAdapter(openai_responses.ResponseOutputItem)

ENCRYPTED = "gAAAAABp" + "Q29tcGFjdGVk" * 400  # the shape of a Fernet token, 4,808 characters
COMPACTION = {"type": "compaction", "id": "cmp_1", "encrypted_content": ENCRYPTED}
DONE = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
}
OPENING = [{"role": "system", "content": "sys"}, {"role": "user", "content": "Fix it."}]


def server_side(**options: Any) -> Session:
    return Session(model="gpt-5", window=WindowPolicy(window=200_000, server_side=True), **options)


def sent(session: Session) -> list[dict[str, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        return session.render().to_openai(api="responses")


@pytest.mark.parametrize("typed", [False, True], ids=["dict", "sdk"])
def test_a_reply_with_a_compaction_item_enters_the_session_and_goes_back_in_place(
    typed: bool,
) -> None:
    output: list[Any] = [COMPACTION, DONE]
    if typed:
        output = [OUTPUT.validate_python(item) for item in output]
    session = server_side()
    session.extend(OPENING)
    session.extend(output)
    session.append({"role": "user", "content": "And the tests?"})
    items = sent(session)
    assert items[2] == COMPACTION  # verbatim, where it came
    assert items[3] == {"role": "assistant", "content": "Done."}
    assert items[-1]["content"] == "And the tests?"
    for item in items:
        ITEM.validate_python(item)


def test_a_compaction_item_appended_alone_goes_back_with_the_items_around_it() -> None:
    session = server_side()
    session.extend(OPENING)
    session.append(dict(COMPACTION))
    session.append({"role": "user", "content": "Go on."})
    assert sent(session)[1:] == [OPENING[1], COMPACTION, {"role": "user", "content": "Go on."}]


def test_a_compaction_item_is_counted_from_its_encrypted_content_with_a_warning() -> None:
    # Billed as input: the context it carries, estimated from the encrypted text's length as
    # an encrypted reasoning item is (the base64 decoded, less its envelope, 4 bytes a token).
    session = server_side()
    session.extend(OPENING)
    before = session.render().tokens
    session.append(dict(COMPACTION))
    with pytest.warns(ApproximateTokenCountWarning, match="compaction item"):
        after = session.render().tokens
    hidden = -(-(len(ENCRYPTED) * 3 // 4 - 650) // 4)
    assert hidden <= after - before <= hidden + 20  # the item's few framing tokens beside


@pytest.mark.parametrize(
    "render",
    [
        pytest.param(lambda msgs: to_openai(msgs), id="chat"),
        pytest.param(lambda msgs: to_anthropic(msgs), id="anthropic"),
    ],
)
def test_a_compaction_item_is_refused_where_only_openai_responses_reads_it(render: Any) -> None:
    session = server_side()
    session.extend(OPENING)
    session.extend([COMPACTION, DONE])
    messages = session.transcript()
    with pytest.raises(InvalidMessageError) as info:
        render(messages)
    assert info.value.index == 2
    assert info.value.field == "content[0]"
    assert "compaction item" in str(info.value) and 'api="responses"' in str(info.value)


def test_a_compaction_item_survives_the_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    window = WindowPolicy(window=200_000, server_side=True)
    first = Session.open("s1", store=url, model="gpt-5", window=window)
    first.extend(OPENING)
    first.extend([COMPACTION, DONE])
    again = Session.open("s1", store=url, model="gpt-5", window=window)
    assert sent(again) == sent(first)
    assert sent(again)[2] == COMPACTION


def test_secret_redaction_leaves_the_encrypted_content_as_it_came() -> None:
    # A long base64 run looks like a secret; the provider must read it back byte for byte.
    session = server_side(redact_secrets="all")
    session.extend(OPENING)
    session.extend([COMPACTION, DONE])
    assert sent(session)[2] == COMPACTION


def test_recording_the_reply_then_extending_its_output_gives_one_decision_and_one_item() -> None:
    session = server_side()
    session.extend(OPENING)
    reply = response(COMPACTION, DONE)
    (decision,) = session.record_response(reply)
    assert decision.action == "merged"
    assert "compaction item" in decision.reason and "block" not in decision.reason
    session.extend(reply["output"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        result = session.render()
    assert [d for d in result.decisions if d.stage == "server"] == [decision]
    items = result.to_openai(api="responses")
    assert [item.get("type") for item in items].count("compaction") == 1


def test_a_wrapped_client_sends_the_compaction_item_back_in_the_next_request() -> None:
    replies = iter([response(COMPACTION, DONE), response({**DONE, "id": "msg_2"})])
    capture = Capture(lambda body: httpx2.Response(200, json=next(replies)))
    session = server_side()
    client = ctxpack.wrap_openai(openai_client(capture), session=session)
    history: list[Any] = [{"role": "user", "content": "Fix it."}]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        first = client.responses.create(model="gpt-5", input=history)
        history += first.output  # the SDK's objects, the compaction item among them
        history.append({"role": "user", "content": "And the tests?"})
        client.responses.create(model="gpt-5", input=history)
        decisions = session.render().decisions
    assert (
        capture.requests[0]["context_management"]
        == session.context_management()["context_management"]
    )
    second = capture.requests[1]["input"]
    assert second[1] == COMPACTION
    assert second[2] == {"role": "assistant", "content": "Done."}
    assert second[-1]["content"] == "And the tests?"
    merged = [d for d in decisions if d.action == "merged"]
    assert len(merged) == 1 and "compaction item" in merged[0].reason


def test_a_client_side_compaction_summarises_around_the_item_and_keeps_it_verbatim() -> None:
    session = Session(model="gpt-5", window=WindowPolicy(window=12_000))
    session.extend([*OPENING, COMPACTION])
    for i in range(40):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "grep", "arguments": "{}"}}
        session.extend(
            [
                {"role": "user", "content": f"Question {i} about invoices. " * 30},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{i}", "content": f"line {i}\n" * 200},
                {"role": "assistant", "content": f"Answer {i}."},
            ]
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ApproximateTokenCountWarning)
            result = session.render()
    assert "merged" in {d.action for d in result.decisions}  # the session summarised
    items = result.to_openai(api="responses")
    assert [item for item in items if item.get("type") == "compaction"] == [COMPACTION]


def test_an_async_wrapped_client_and_session_send_the_item_back_and_record_it_once() -> None:
    replies = iter([response(COMPACTION, DONE), response({**DONE, "id": "msg_2"})])
    capture = Capture(lambda body: httpx2.Response(200, json=next(replies)))
    window = WindowPolicy(window=200_000, server_side=True)

    async def main() -> list[ctxpack.Decision]:
        session = await ctxpack.AsyncSession.open(
            "s1", store="memory://", model="gpt-5", window=window
        )
        client = ctxpack.wrap_openai(async_openai_client(capture), session=session)
        history: list[Any] = [{"role": "user", "content": "Fix it."}]
        first = await client.responses.create(model="gpt-5", input=history)
        history += [*first.output, {"role": "user", "content": "And the tests?"}]
        await client.responses.create(model="gpt-5", input=history)
        return (await session.render()).decisions

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        decisions = asyncio.run(main())
    assert "context_management" in capture.requests[0]
    assert capture.requests[1]["input"][1] == COMPACTION
    assert [d.action for d in decisions if d.stage == "server"] == ["merged"]


def stream_events(*, output_on_completion: bool = True) -> list[dict[str, Any]]:
    """The events of a streamed Responses reply holding ``COMPACTION`` then ``DONE``: each item
    added then done, the text in deltas, the whole response at the end (with its output, or,
    as OpenAI may send it, without: the items are then the ones done before)."""
    part = {"type": "output_text", "text": "", "annotations": []}
    at = {"item_id": "msg_1", "output_index": 1, "content_index": 0}
    completed = response(COMPACTION, DONE)
    if not output_on_completion:
        del completed["output"]
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**response(), "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": COMPACTION},
        {"type": "response.output_item.done", "output_index": 0, "item": COMPACTION},
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {**DONE, "status": "in_progress", "content": []},
        },
        {"type": "response.content_part.added", **at, "part": part},
        {"type": "response.output_text.delta", **at, "delta": "Done.", "logprobs": []},
        {"type": "response.output_item.done", "output_index": 1, "item": DONE},
        {"type": "response.completed", "response": completed},
    ]
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


def sse(events: list[dict[str, Any]]) -> httpx2.Response:
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)


def server_decisions(session: Session) -> list[ctxpack.Decision]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        return [d for d in session.render().decisions if d.stage == "server"]


STREAMED = ["create(stream=True)", "stream()"]


def read_sync(client: Any, how: str, *, to_the_end: bool = True) -> list[str]:
    request = {"model": "gpt-5", "input": [{"role": "user", "content": "Fix it."}]}
    if how == "stream()":
        with client.responses.stream(**request) as stream:
            return [event.type for event in itertools.islice(stream, None if to_the_end else 3)]
    stream = client.responses.create(**request, stream=True)
    return [event.type for event in itertools.islice(stream, None if to_the_end else 3)]


async def read_async(client: Any, how: str) -> list[str]:
    request = {"model": "gpt-5", "input": [{"role": "user", "content": "Fix it."}]}
    if how == "stream()":
        async with client.responses.stream(**request) as stream:
            return [event.type async for event in stream]
    return [event.type async for event in await client.responses.create(**request, stream=True)]


@pytest.mark.parametrize("output_on_completion", [True, False], ids=["full", "no-output"])
@pytest.mark.parametrize("how", STREAMED)
def test_a_streamed_reply_read_to_its_end_has_its_compaction_item_recorded(
    how: str, output_on_completion: bool
) -> None:
    # The wrapper recorded a compaction from a reply object only: a streamed reply's went
    # unrecorded, and the session's decisions said nothing of what OpenAI compacted.
    events = stream_events(output_on_completion=output_on_completion)
    capture = Capture(lambda body: sse(events))
    session = server_side()
    client = ctxpack.wrap_openai(openai_client(capture), session=session)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        seen = read_sync(client, how)
    assert seen[-1] == "response.completed"
    assert capture.requests[0]["stream"] is True and "context_management" in capture.requests[0]
    (decision,) = server_decisions(session)
    assert decision.action == "merged" and "compaction item" in decision.reason


@pytest.mark.parametrize("how", STREAMED)
def test_an_async_streamed_reply_has_its_compaction_item_recorded_once(how: str) -> None:
    window = WindowPolicy(window=200_000, server_side=True)

    async def main(stored: bool) -> list[ctxpack.Decision]:
        capture = Capture(lambda body: sse(stream_events()))
        if stored:
            session: Any = await ctxpack.AsyncSession.open(
                "s1", store="memory://", model="gpt-5", window=window
            )
        else:
            session = server_side()
        client = ctxpack.wrap_openai(async_openai_client(capture), session=session)
        await read_async(client, how)
        result = await session.render() if stored else session.render()
        return [d for d in result.decisions if d.stage == "server"]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        for stored in (False, True):
            assert [d.action for d in asyncio.run(main(stored))] == ["merged"]


@pytest.mark.parametrize("how", STREAMED)
def test_a_stream_left_before_its_end_records_nothing(how: str) -> None:
    capture = Capture(lambda body: sse(stream_events()))
    session = server_side()
    client = ctxpack.wrap_openai(openai_client(capture), session=session)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        assert len(read_sync(client, how, to_the_end=False)) == 3
    assert server_decisions(session) == []


@pytest.mark.parametrize(("end", "recorded"), [("incomplete", ["merged"]), ("failed", [])])
def test_a_reply_cut_short_keeps_its_compaction_and_a_failed_one_records_nothing(
    end: str, recorded: list[str]
) -> None:
    # Cut short by max_output_tokens, the reply still holds the compaction OpenAI did first
    # (a reply object with that status is recorded too); a failed one is an error.
    events = stream_events()
    last = events[-1]
    events[-1] = {
        **last,
        "type": f"response.{end}",
        "response": {**last["response"], "status": end},
    }
    capture = Capture(lambda body: sse(events))
    session = server_side()
    client = ctxpack.wrap_openai(openai_client(capture), session=session)
    stream = client.responses.create(model="gpt-5", input=OPENING[1:], stream=True)
    assert [event.type for event in stream][-1] == f"response.{end}"
    assert [d.action for d in server_decisions(session)] == recorded


def test_a_streamed_reply_given_again_to_record_response_is_recorded_once() -> None:
    # Before the wrapper read streams, the guide said to record a stream's final response
    # yourself: code that still does must not count the compaction twice.
    capture = Capture(lambda body: sse(stream_events()))
    session = server_side()
    client = ctxpack.wrap_openai(openai_client(capture), session=session)
    with client.responses.stream(model="gpt-5", input=OPENING[1:]) as stream:
        final = stream.get_final_response()
    assert session.record_response(final, append=False) == []
    assert session.record_response(response(COMPACTION, DONE), append=False) == []
    assert [d.action for d in server_decisions(session)] == ["merged"]
    # Another response (its own id) is another compaction.
    assert len(session.record_response({**response(COMPACTION), "id": "resp_2"})) == 1
    assert [d.action for d in server_decisions(session)] == ["merged", "merged"]
