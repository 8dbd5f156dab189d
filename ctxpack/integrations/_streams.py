"""A server-side session's reply read from a stream, as a wrapper returns it to the caller.

What the provider's context management did comes with the end of the reply: Anthropic's stream
helper (``messages.stream``) holds it once the stream reached its stop reason, read as its
``with`` block is left; Anthropic's events (``messages.create(stream=True)``) carry it in
``message_delta`` (the applied edits) and the content blocks (a compaction), read as
``message_stop`` passes; OpenAI's Responses events (``responses.create(stream=True)``, and the
stream helper ``responses.stream``) end with the whole response (``response.completed``), read
as that event passes. A stream left early, or broken, says nothing of the edits: nothing is read.
The stream itself is the SDK's, returned as it made it.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Iterator
from typing import Any, Protocol

from ..sdk import is_sdk_object

__all__ = ["RecordedStream", "event_stream", "stream_helper", "watch"]


class _Recorder(Protocol):
    """The session feed, which reads a reply into its session."""

    @property
    def provider(self) -> str: ...

    def _record(self, reply: Any) -> Any: ...

    async def arecord(self, reply: Any) -> Any: ...


# The Responses events that carry the whole response at the reply's end: completed, or cut
# short by max_output_tokens (whose compaction, done first, stands). A failed one is an error.
_ENDS = frozenset({"response.completed", "response.incomplete"})


class RecordedStream:
    """A stream helper's context manager (sync or async) whose reply, once the stream reached
    its end, is read into a server-side session's decisions."""

    def __init__(self, manager: Any, feed: _Recorder) -> None:
        self._manager = manager
        self._feed = feed
        self._stream: Any = None

    def __enter__(self) -> Any:
        self._stream = self._entered(self._manager.__enter__())
        return self._stream

    def __exit__(self, *exc: Any) -> Any:
        reply = _finished(self._stream) if exc[0] is None else None
        outcome = self._manager.__exit__(*exc)
        if reply is not None:
            self._feed._record(reply)
        return outcome

    async def __aenter__(self) -> Any:
        self._stream = self._entered(await self._manager.__aenter__())
        return self._stream

    async def __aexit__(self, *exc: Any) -> Any:
        reply = _finished(self._stream) if exc[0] is None else None
        outcome = await self._manager.__aexit__(*exc)
        if reply is not None:
            await self._feed.arecord(reply)
        return outcome

    def _entered(self, stream: Any) -> Any:
        # OpenAI's helper holds its response only as a private state: its events tell it.
        return watch(stream, self._feed) if self._feed.provider == "openai" else stream

    def __getattr__(self, name: str) -> Any:
        return getattr(self._manager, name)


def stream_helper(response: Any) -> bool:
    """Whether ``response`` is a stream helper's manager (``messages.stream(...)``), entered
    with ``with``; not the event stream of ``create(stream=True)``, which is iterated as it
    is (a context manager too)."""
    if is_sdk_object(response) or hasattr(response, "__iter__") or hasattr(response, "__aiter__"):
        return False
    return hasattr(response, "__exit__") or hasattr(response, "__aexit__")


def event_stream(response: Any) -> bool:
    """Whether ``response`` is an SDK's event stream (``create(stream=True)``'s), whose events
    :func:`watch` can see pass; not a raw response (``with_raw_response``), left to the caller."""
    events = getattr(response, "_iterator", None)
    return not is_sdk_object(response) and (
        hasattr(events, "__next__") or hasattr(events, "__anext__")
    )


def watch(stream: Any, feed: _Recorder) -> Any:
    """``stream``, an SDK's event stream, its events now passing by ``feed`` on their way to
    the caller: the reply is recorded as its last event passes, before the caller sees that
    event (a caller that stops there has it recorded). The SDK's stream object is kept, so
    that it is still what the SDK returns (its type, ``close()``, ``response``); its iterator
    is the one place all its reading goes through (``for``, ``next()``, ``until_done()``)."""
    events: Any = getattr(stream, "_iterator", None)
    if hasattr(events, "__anext__"):
        stream._iterator = _awatched(events, feed)
    elif hasattr(events, "__next__"):
        stream._iterator = _watched(events, feed)
    return stream


def _watched(events: Iterator[Any], feed: _Recorder) -> Iterator[Any]:
    ended = _ResponseEnd() if feed.provider == "openai" else _MessageEnd()
    for event in events:
        reply = ended(event)
        if reply is not None:
            feed._record(reply)
        yield event


async def _awatched(events: AsyncIterator[Any], feed: _Recorder) -> AsyncIterator[Any]:
    ended = _ResponseEnd() if feed.provider == "openai" else _MessageEnd()
    async for event in events:
        reply = ended(event)
        if reply is not None:
            await feed.arecord(reply)
        yield event


class _ResponseEnd:
    """The response a Responses event ends the reply with, else ``None``."""

    def __init__(self) -> None:
        # The output items finished so far, by place, for a response sent without its output.
        self.done: dict[int, Any] = {}

    def __call__(self, event: Any) -> Any:
        kind = getattr(event, "type", None)
        if kind == "response.output_item.done":
            self.done[event.output_index] = event.item
        elif kind in _ENDS:
            reply = event.response
            if not getattr(reply, "output", None) and self.done:
                done = self.done
                reply = reply.model_copy(update={"output": [done[i] for i in sorted(done)]})
            return reply
        return None


class _MessageEnd:
    """The Anthropic message an event stream has built once ``message_stop`` comes, else
    ``None``: the message as the session reads it, from ``message_start`` on, its content
    blocks as they started and a compaction block's summary from its delta, with the stop
    reason and the applied edits of ``message_delta``. Text, thinking and tool input are left
    as they started: the session reads no edit from them, and the caller reads the events.
    Built on copies: the caller's events are never changed. A block or delta the SDK does
    not know (a newer API's, left a dict) is copied as it is, never the cause of an error in
    the caller's stream."""

    def __init__(self) -> None:
        self.message: Any = None

    def __call__(self, event: Any) -> Any:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            self.message = copy.deepcopy(event.message)
        elif self.message is None:
            return None  # no message_start (not a Messages stream): nothing to build
        elif kind == "content_block_start":
            self.message.content.append(copy.deepcopy(event.content_block))
        elif kind == "content_block_delta":
            delta = event.delta
            if getattr(delta, "type", None) == "compaction_delta":
                block = self.message.content[event.index]
                _set(block, "content", delta.content)
                # Older SDKs' deltas lack it; the session reads the summary only.
                if getattr(delta, "encrypted_content", None) is not None:
                    _set(block, "encrypted_content", delta.encrypted_content)
        elif kind == "message_delta":
            self.message.stop_reason = event.delta.stop_reason
            management = getattr(event, "context_management", None)
            if management is not None:
                self.message.context_management = copy.deepcopy(management)
        elif kind == "message_stop":
            message, self.message = self.message, None
            return message
        return None


def _set(block: Any, name: str, value: Any) -> None:
    if isinstance(block, dict):
        block[name] = value
    else:
        setattr(block, name, value)


def _finished(stream: Any) -> Any:
    """The reply an Anthropic stream holds once it reached its end (its stop reason, which
    comes with what context management did, arrived), else ``None``: a stream left early says
    nothing of what the provider edited."""
    try:
        snapshot = stream.current_message_snapshot
    except (AssertionError, AttributeError):  # no event read yet, or not a message stream
        return None
    return snapshot if getattr(snapshot, "stop_reason", None) is not None else None
