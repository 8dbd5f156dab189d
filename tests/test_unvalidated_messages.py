"""A ``Message`` pydantic did not validate (``model_construct()``, ``model_copy(update=...)``)
is checked where ctxpack takes it in (``pack()``, the converters, a session), naming the message
and the field, as a message built with ``Message(...)`` is when it is built; a validated
message is not checked again; a dict's parts are checked once, by the dict's check."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import ctxpack
from ctxpack import InvalidMessageError, Message, Session
from ctxpack._internal import base64_data
from ctxpack.adapters import to_anthropic, to_openai
from ctxpack.caches import clear_caches

_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAIAAAUAAU8hG80AAAAASUVORK5CYII="
)
_BAD_AUDIO = [{"type": "input_audio", "input_audio": {"data": "UklGR!==", "format": "wav"}}]
_GOOD = Message(role="user", content="hi", id="a")


def _read(messages: list[Any]) -> list[Callable[[], Any]]:
    def session() -> None:
        Session(model="gpt-4o").extend(messages)

    def appended() -> None:
        s = Session(model="gpt-4o")
        for m in messages:
            s.append(m)

    return [
        lambda: ctxpack.pack(messages, budget=50_000, model="gpt-4o"),
        lambda: ctxpack.count_tokens(messages, model="gpt-4o"),
        lambda: to_openai(messages),
        lambda: to_openai(messages, api="responses"),
        lambda: to_anthropic(messages),
        session,
        appended,
    ]


_UNVALIDATED = [
    (
        Message.model_construct(role="user", content=_BAD_AUDIO, id="b"),
        "content[0].input_audio.data",
        "valid base64",
    ),
    (
        _GOOD.model_copy(update={"id": "b", "content": _BAD_AUDIO}),
        "content[0].input_audio.data",
        "valid base64",
    ),
    (
        _GOOD.model_copy(update={"id": "b", "content": [{"type": "text", "text": 3}]}),
        "content[0].text",
        "string",
    ),
    (_GOOD.model_copy(update={"id": "b", "pinned": "yes"}), "pinned", "pinned"),
    (
        Message.model_construct(role="tool", content="out", id="b"),
        "tool_call_id",
        "tool_call_id",
    ),
]


@pytest.mark.parametrize(("message", "field", "says"), _UNVALIDATED)
def test_an_unvalidated_message_is_refused_where_ctxpack_takes_it_in(
    message: Message, field: str, says: str
) -> None:
    # It reached the provider (or failed deep inside a stage) before.
    for read in _read([_GOOD, message]):
        clear_caches()
        with pytest.raises(InvalidMessageError, match=says) as caught:
            read()
        assert (caught.value.index, caught.value.field) == (1, field)
        assert caught.value.field is not None
        assert "model_construct" in str(caught.value)


def test_an_unvalidated_message_that_is_valid_passes_and_its_copies_are_not_checked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = Message.model_construct(role="user", content="fine", id="b")
    copied = _GOOD.model_copy(update={"id": "c", "content": "also fine"})
    result = ctxpack.pack([_GOOD, made, copied], budget=50_000, model="gpt-4o")
    assert [m.id for m in result.messages] == ["a", "b", "c"]
    assert [m.text for m in result.messages] == ["hi", "fine", "also fine"]
    # What ctxpack hands out was checked: passing it again checks nothing.
    built = [_GOOD, Message(role="user", content="x", id="d")]
    calls: list[Any] = []
    validator = Message.__pydantic_validator__
    monkeypatch.setattr(
        Message,
        "__pydantic_validator__",
        _Spy(validator, calls),
    )
    clear_caches()
    ctxpack.pack(result.messages, budget=50_000, model="gpt-4o")
    ctxpack.pack(built, budget=50_000, model="gpt-4o")
    assert calls == []


class _Spy:
    def __init__(self, inner: Any, calls: list[Any]) -> None:
        self.inner, self.calls = inner, calls

    def validate_python(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(args)
        return self.inner.validate_python(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_dict_s_image_part_is_checked_once_when_packed(monkeypatch: pytest.MonkeyPatch) -> None:
    checked: list[str] = []
    real = base64_data._problem

    def counting(kind: Any, text: str, start: int) -> str | None:
        checked.append(text)
        return real(kind, text, start)

    monkeypatch.setattr(base64_data, "_problem", counting)
    clear_caches()
    url = "data:image/png;base64," + _PNG
    part = {"type": "image_url", "image_url": {"url": url}}
    ctxpack.pack(
        [{"role": "user", "content": [{"type": "text", "text": "see"}, part]}],
        budget=50_000,
        model="gpt-4o",
    )
    assert checked == [url]


def test_the_error_names_the_argument_that_held_the_message() -> None:
    made = Message.model_construct(role="user", content=_BAD_AUDIO, id="b")
    with pytest.raises(InvalidMessageError) as caught:
        ctxpack.pack([_GOOD, made], budget=50_000, model="gpt-4o")
    assert str(caught.value).startswith("message 1: content[0].input_audio.data: ")
    assert "in the argument messages" in str(caught.value)


def test_a_wrapped_client_refuses_an_unvalidated_message_before_sending_it() -> None:
    pytest.importorskip("openai")
    from tests.sdk_mock import Capture, chat_completion, openai_client

    capture = Capture(chat_completion({"role": "assistant", "content": "ok"}))
    client = ctxpack.wrap_openai(openai_client(capture), window=4_000)
    made = Message.model_construct(role="user", content=_BAD_AUDIO, id="b")
    with pytest.raises(InvalidMessageError) as caught:
        client.chat.completions.create(model="gpt-4o", messages=[_GOOD, made])
    assert (caught.value.index, caught.value.field) == (1, "content[0].input_audio.data")
    assert capture.requests == []
