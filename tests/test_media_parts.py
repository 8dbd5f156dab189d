"""The fields of OpenAI's media parts (an image's data URL, an audio clip, a file's data) are
checked alike in a message dict and in a built ``Message``, each problem naming the field (and
the index where a list is read); base64 found valid is remembered, in a cache
``clear_caches()`` empties."""

from __future__ import annotations

import base64
from typing import Any

import pytest

import ctxpack
from ctxpack import InvalidMessageError, Message
from ctxpack.adapters import validate_openai
from ctxpack.caches import CacheStats, cache_stats, clear_caches
from ctxpack.messages import ensure_messages

_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAIAAAUAAU8hG80AAAAASUVORK5CYII="
)


_URL_HEAD = "data:image/png;base64,"


def _image(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def _audio(data: Any) -> dict[str, Any]:
    return {"type": "input_audio", "input_audio": {"data": data, "format": "wav"}}


def _file(data: Any) -> dict[str, Any]:
    return {"type": "file", "file": {"filename": "a.pdf", "file_data": data}}


# (part, the field named, what the error says); each part follows a text part.
MALFORMED = [
    (_image("data:image/png;base64,iVBO%20w0K!"), "content[1].image_url.url", "valid base64"),
    (_image("data:image/jpeg;base64,/9j/\n4AAQ"), "content[1].image_url.url", "valid base64"),
    ({"type": "image_url", "image_url": "https://x/a.png"}, "content[1].image_url", "an object"),
    ({"type": "image_url", "image_url": {"detail": "low"}}, "content[1].image_url.url", "missing"),
    (
        {"type": "input_image", "image_url": "data:image/png;base64,é=="},
        "content[1].image_url",
        "valid base64",
    ),
    ({"type": "input_image", "image_url": 5}, "content[1].image_url", "must be a string"),
    ({"type": "input_image", "file_id": "f", "detail": 1}, "content[1].detail", "must be a string"),
    (_audio("UklGR!=="), "content[1].input_audio.data", "valid base64"),
    # The API takes the clip as bare base64, not as a data URL.
    (_audio("data:audio/wav;base64,UklGRg=="), "content[1].input_audio.data", "valid base64"),
    (_audio(5), "content[1].input_audio.data", "must be a string"),
    (_file("data:application/pdf;base64,JVBER i0="), "content[1].file.file_data", "valid base64"),
    (_file("JVBER\ni0="), "content[1].file.file_data", "valid base64"),
    (
        {"type": "input_file", "filename": "a.pdf", "file_data": "data:application/pdf;base64,%%"},
        "content[1].file_data",
        "valid base64",
    ),
    ({"type": "refusal", "refusal": None}, "content[1].refusal", "must be a string"),
]


def _parts(part: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": "Look:"}, part]


@pytest.mark.parametrize(("part", "field", "says"), MALFORMED)
def test_a_dict_s_malformed_media_part_is_refused_naming_index_and_field(
    part: dict[str, Any], field: str, says: str
) -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        {"role": "user", "content": _parts(part)},
    ]
    for read in (
        lambda: ctxpack.pack(history, budget=50_000, model="gpt-4o"),
        lambda: ctxpack.count_tokens(history, model="gpt-4o"),
        lambda: validate_openai(history),
        lambda: ctxpack.to_anthropic(history),
    ):
        with pytest.raises(InvalidMessageError, match=says) as caught:
            read()
        assert (caught.value.index, caught.value.field) == (1, field)


@pytest.mark.parametrize(("part", "field", "says"), MALFORMED)
def test_a_built_message_holds_the_rules_of_a_dict(
    part: dict[str, Any], field: str, says: str
) -> None:
    # Built by hand, it passed pack(), count_tokens() and both conversions, and reached the
    # provider, which refused the request.
    with pytest.raises(InvalidMessageError, match=says) as caught:
        Message(role="user", content=_parts(part))
    assert caught.value.field == field
    with pytest.raises(InvalidMessageError, match=says) as caught:
        Message.model_validate({"role": "user", "content": _parts(part)})
    assert caught.value.field == field


@pytest.mark.parametrize(("part", "field", "says"), MALFORMED)
def test_messages_read_from_a_list_name_the_index_too(
    part: dict[str, Any], field: str, says: str
) -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        {"role": "user", "content": _parts(part)},
    ]
    with pytest.raises(InvalidMessageError, match=says) as caught:
        ensure_messages(history)
    assert (caught.value.index, caught.value.field) == (1, field)


@pytest.mark.parametrize(
    "part",
    [
        _image("data:image/png;base64," + _PNG),
        _image("data:image/png;base64," + _PNG.rstrip("=")),  # padding left out
        _image("data:text/plain,hello"),  # not base64: the provider's to judge
        _image("https://example.com/a.png"),
        {"type": "input_image", "file_id": "file-1"},
        _audio(base64.b64encode(b"RIFF\x00\x00\x00\x00WAVE").decode()),
        _file("data:application/pdf;base64,JVBERi0xLjQ"),
        _file("JVBERi0xLjQ="),
        {"type": "file", "file": {"file_id": "file-1"}},
        {"type": "input_file", "file_url": "https://example.com/a.pdf"},
        # LangChain's own file block: its type is OpenAI's, its shape is not.
        {"type": "file", "base64": "JVBERi0xLjQ=", "mime_type": "application/pdf"},
        {"type": "file", "source_type": "url", "url": "https://example.com/a.pdf"},
    ],
)
def test_valid_media_parts_pass_built_and_as_dicts(part: dict[str, Any]) -> None:
    built = Message(role="user", content=_parts(part))
    assert built.content == _parts(part)
    assert ctxpack.count_tokens([built], model="gpt-4o") > 0
    if part.get("type") != "file" or "file" in part:  # LangChain's block is not OpenAI's
        validate_openai([{"role": "user", "content": _parts(part)}])


def test_a_bare_file_part_is_still_refused_built() -> None:
    # Not LangChain's block (none of its keys): OpenAI's part without its file object.
    with pytest.raises(InvalidMessageError, match="must be an object") as caught:
        Message(role="user", content=[{"type": "file"}])
    assert caught.value.field == "content[0].file"


def _valid_stats() -> CacheStats:
    return next(s for s in cache_stats() if s.name == "valid base64 data")


def test_large_base64_found_valid_is_remembered_and_cleared() -> None:
    clear_caches()
    data = base64.b64encode(bytes(range(256)) * 200).decode()
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    history = ctxpack.from_anthropic([{"role": "user", "content": [block]}])
    for _ in range(3):
        ctxpack.to_anthropic(history)
    stats = _valid_stats()
    assert stats.entries == 1
    # Remembered by its length and hash: the cache holds nothing of a user's file.
    assert stats.nbytes < 1_000 < len(data)
    assert stats.nbytes <= stats.max_bytes
    clear_caches()
    assert _valid_stats().entries == 0


def test_the_memory_of_valid_base64_is_keyed_by_the_text_and_its_use() -> None:
    data = base64.b64encode(bytes(range(256)) * 200).decode()
    ctxpack.to_anthropic([{"role": "user", "content": [_image("data:image/png;base64," + data)]}])
    # The same length, one character off: decoded, refused.
    bad = data[:100] + "!" + data[101:]
    with pytest.raises(InvalidMessageError, match="valid base64"):
        ctxpack.to_anthropic([{"role": "user", "content": [_image(_URL_HEAD + bad)]}])
    # The data URL found valid is no bare base64 (its "data:" head is not).
    url = "data:image/png;base64," + data
    ctxpack.to_anthropic([{"role": "user", "content": [_image(url)]}])
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": url}}
    with pytest.raises(InvalidMessageError, match="valid base64") as caught:
        ctxpack.from_anthropic([{"role": "user", "content": [block]}])
    assert caught.value.field == "content[0].source.data"
