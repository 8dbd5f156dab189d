"""Images inside messages: each model's published rule, the size read from an image sent as data.

gpt-4o-mini bills an image 33 times the tokens gpt-4o does (for the same dollars), and the mini
and nano models since gpt-4.1 count 32 px patches: counted as gpt-4o's tiles, six images sent to
gpt-4o-mini came to 4,600 tokens when the model billed 153,000, past its window.
"""

from __future__ import annotations

import base64
import io
import math
from typing import Any

import pytest

import ctxpack
from ctxpack._internal.images import image_rule

Image = pytest.importorskip("PIL.Image")


def image_bytes(width: int, height: int, fmt: str, **save: Any) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, fmt, **save)
    return out.getvalue()


def data_url(width: int, height: int, fmt: str = "PNG", **save: Any) -> str:
    media = {"PNG": "png", "JPEG": "jpeg", "GIF": "gif", "WEBP": "webp"}[fmt]
    encoded = base64.b64encode(image_bytes(width, height, fmt, **save)).decode()
    return f"data:image/{media};base64,{encoded}"


def with_image(url: str, detail: str | None = None) -> list[dict[str, Any]]:
    image: dict[str, Any] = {"url": url} if detail is None else {"url": url, "detail": detail}
    return [{"role": "user", "content": [{"type": "image_url", "image_url": image}]}]


FRAMING = 3 + 1 + 3  # a user message (3 + its role) and the reply priming


def tiles(width: int, height: int) -> int:
    """512 px tiles of an image after OpenAI's two scalings (fit 2048, short side 768)."""
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    return math.ceil(w * scale / 512) * math.ceil(h * scale / 512)


@pytest.mark.parametrize(
    ("model", "base", "tile"),
    [
        ("gpt-4o", 85, 170),
        ("gpt-4o-2024-08-06", 85, 170),
        ("gpt-4.1", 85, 170),
        ("gpt-4o-mini", 2833, 5667),
        ("gpt-4o-mini-2024-07-18", 2833, 5667),
        ("openai/gpt-4o-mini", 2833, 5667),
        ("gpt-5", 70, 140),
        ("o1", 75, 150),
        ("o3-2025-04-16", 75, 150),
    ],
)
@pytest.mark.parametrize(("width", "height"), [(128, 64), (1024, 1024), (2880, 1800)])
def test_a_tiled_model_bills_its_base_and_tiles(
    model: str, base: int, tile: int, width: int, height: int
) -> None:
    url = data_url(width, height)
    expected = base + tile * tiles(width, height)
    assert ctxpack.count_tokens(with_image(url), model=model) == FRAMING + expected
    assert ctxpack.count_tokens(with_image(url, "low"), model=model) == FRAMING + base


@pytest.mark.parametrize(
    ("model", "multiplier"),
    [
        ("gpt-4.1-mini", 1.62),
        ("gpt-4.1-nano", 2.46),
        ("gpt-5-mini", 1.62),
        ("o4-mini", 1.72),
        ("codex-mini-latest", 1.72),
    ],
)
@pytest.mark.parametrize(("width", "height"), [(128, 64), (1000, 700), (1800, 2400)])
def test_a_patch_model_bills_its_patches_times_its_multiplier(
    model: str, multiplier: float, width: int, height: int
) -> None:
    patches = min(1536, math.ceil(width / 32) * math.ceil(height / 32))
    expected = FRAMING + math.ceil(patches * multiplier)
    # Patch models have no low detail: the same count either way.
    for detail in (None, "low"):
        assert ctxpack.count_tokens(with_image(data_url(width, height), detail), model=model) == (
            expected
        )


@pytest.mark.parametrize(
    ("fmt", "save"),
    [("PNG", {}), ("JPEG", {}), ("GIF", {}), ("WEBP", {}), ("WEBP", {"lossless": True})],
    ids=["png", "jpeg", "gif", "webp", "webp lossless"],
)
def test_the_size_is_read_from_an_image_sent_as_data(fmt: str, save: dict[str, Any]) -> None:
    url = data_url(3000, 1000, fmt, **save)  # fits 2048 as 2048x683: 4 x 2 tiles
    assert ctxpack.count_tokens(with_image(url), model="gpt-4o") == FRAMING + 85 + 170 * 8


def test_a_jpeg_with_metadata_before_its_frame_is_read() -> None:
    exif = Image.Exif()
    exif[0x010E] = "x" * 20_000  # an image description ahead of the frame header
    url = data_url(200, 100, "JPEG", exif=exif.tobytes())
    assert ctxpack.count_tokens(with_image(url), model="gpt-4o") == FRAMING + 85 + 170


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/cat.png",
        "data:image/png;base64,AAAA",
        # Headers cut before the size (a truncated upload): a struct.error from inside.
        "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").decode(),
        "data:image/gif;base64," + base64.b64encode(b"GIF89a\x01\x00").decode(),
    ],
    ids=["a link", "not an image", "a cut png", "a cut gif"],
)
def test_an_image_of_unknown_size_is_taken_as_1024_square(url: str) -> None:
    assert ctxpack.count_tokens(with_image(url), model="gpt-4o") == FRAMING + 765
    assert ctxpack.count_tokens(with_image(url), model="gpt-4o-mini") == FRAMING + 2833 + 4 * 5667


def test_an_image_whose_data_is_not_base64_is_refused_not_counted() -> None:
    """The provider would refuse it: counting it as an image of unknown size hid the mistake."""
    with pytest.raises(ctxpack.InvalidMessageError, match="not valid base64") as info:
        ctxpack.count_tokens(with_image("data:image/png;base64,@@@@"), model="gpt-4o")
    assert (info.value.index, info.value.field) == (0, "content[0].image_url.url")


def test_an_anthropic_image_sent_as_data_costs_its_pixels() -> None:
    png = base64.b64encode(image_bytes(300, 150, "PNG")).decode()
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    counter = ctxpack.get_counter("gpt-4o")
    bare = counter.count_message(ctxpack.Message(role="user", content=[]))
    assert counter.count_message(ctxpack.Message(role="user", content=[block])) == (
        bare + math.ceil(300 * 150 / 750)
    )


def test_packing_for_gpt_4o_mini_keeps_within_the_window_its_images_fill() -> None:
    history: list[dict[str, Any]] = [{"role": "system", "content": "Describe the photos."}]
    for i in range(6):
        history.append(
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": data_url(1024, 1024)}}],
            }
        )
        history.append({"role": "assistant", "content": f"Photo {i}: a red square."})
    history.append({"role": "user", "content": "Which one was brightest?"})
    mini = ctxpack.pack(history, budget=100_000, model="gpt-4o-mini")
    assert mini.tokens <= 100_000
    sent = mini.to_openai()
    kept = sum(isinstance(m["content"], list) for m in sent)
    assert kept == 3  # 25,501 tokens each: a fourth would pass the budget
    assert ctxpack.count_tokens(sent, model="gpt-4o-mini") == mini.tokens
    assert "gpt-4o-mini images" in mini.counter
    # The same history fits whole for gpt-4o, whose tokens for an image are 33 times fewer.
    assert len(ctxpack.pack(history, budget=100_000, model="gpt-4o").messages) == len(history)


def test_models_that_bill_images_alike_share_a_counter_and_text_counts() -> None:
    assert ctxpack.get_counter("gpt-4o") is ctxpack.get_counter("gpt-4.1")
    mini = ctxpack.get_counter("gpt-4o-mini")
    assert mini is ctxpack.get_counter("gpt-4o-mini-2024-07-18")
    assert mini.count("hello world") == ctxpack.get_counter("gpt-4o").count("hello world") == 2
    assert image_rule("gpt-4o-mini").name == "gpt-4o-mini"


def anthropic_image(width: int, height: int) -> dict[str, Any]:
    data = base64.b64encode(image_bytes(width, height, "PNG")).decode()
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


def claude_image_tokens(model: str, block: dict[str, Any]) -> int:
    counter = ctxpack.get_counter(model)
    bare = counter.count_message(ctxpack.Message(role="user", content=[]))
    return counter.count_message(ctxpack.Message(role="user", content=[block])) - bare


BY_LINK = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}


@pytest.mark.filterwarnings("ignore::ctxpack.tokens.ApproximateTokenCountWarning")
@pytest.mark.parametrize(
    ("model", "edge", "most"),
    [
        ("claude-sonnet-4-5", 1568, 1600),
        ("claude-haiku-4-5", 1568, 1600),
        ("claude-opus-4-7", 2576, 4784),
        ("claude-opus-4-8", 2576, 4784),
        ("claude-sonnet-5-5", 2576, 4784),
    ],
)
def test_a_claude_image_costs_its_pixels_up_to_its_models_limits(
    model: str, edge: int, most: int
) -> None:
    assert claude_image_tokens(model, anthropic_image(600, 300)) == math.ceil(600 * 300 / 750)
    scale = min(1.0, edge / 2400)
    big = min(most, math.ceil(2400 * scale * 1200 * scale / 750))
    assert claude_image_tokens(model, anthropic_image(2400, 1200)) == big
    assert claude_image_tokens(model, BY_LINK) == most  # its size unknown: the most it costs
    # An OpenAI image part sent to Claude becomes an image block, billed as one.
    part = {"type": "image_url", "image_url": {"url": data_url(600, 300)}}
    assert claude_image_tokens(model, part) == math.ceil(600 * 300 / 750)


def test_the_default_claude_counter_keeps_its_name() -> None:
    with pytest.warns(ctxpack.tokens.ApproximateTokenCountWarning):
        counter = ctxpack.get_counter("claude-sonnet-4-5")
    assert counter is ctxpack.tokens.anthropic_approx_counter()
    with pytest.warns(ctxpack.tokens.ApproximateTokenCountWarning, match="claude-opus-4-7 images"):
        high = ctxpack.get_counter("claude-opus-4-7")
    # Opus 4.7's newer tokenizer has its own factor (see tests/test_tokens.py).
    assert high.count("hello world") == ctxpack.tokens.anthropic_approx_counter(1.91).count(
        "hello world"
    )


@pytest.mark.parametrize(
    "block",
    [
        lambda data: {"type": "image", "base64": data, "mime_type": "image/png"},
        lambda data: {
            "type": "image",
            "source_type": "base64",
            "data": data,
            "mime_type": "image/png",
        },
    ],
    ids=["langchain v1 block", "langchain v0.3 block"],
)
def test_a_langchain_image_block_is_counted_by_its_size(block: Any) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.messages import HumanMessage

    from ctxpack.adapters.langchain import from_langchain

    data = base64.b64encode(image_bytes(3000, 1000, "PNG")).decode()
    history = from_langchain([HumanMessage(content=[block(data)])])
    assert ctxpack.count_tokens(history, model="gpt-4o") == FRAMING + 85 + 170 * 8
    assert ctxpack.count_tokens(history, model="gpt-4o-mini") == FRAMING + 2833 + 5667 * 8


@pytest.mark.parametrize("model", ["gpt-5.2", "gpt-5.3-codex", "gpt-5.4", "gpt-5.5-2026-04-23"])
def test_gpt_5_2_and_later_bill_1_2_tokens_a_patch(model: str) -> None:
    """The guide gives these models no multiplier, but OpenAI bills them 1.2 tokens a patch
    (forum reports for gpt-5.2, gpt-5.3-codex and gpt-5.4): counted at 1, a 1920 x 1080
    screenshot was 308 tokens short for gpt-5.2."""
    patches = min(image_rule(model).patches, 60 * 34)
    assert ctxpack.count_tokens(with_image(data_url(1920, 1080)), model=model) == (
        FRAMING + math.ceil(patches * 1.2)
    )


@pytest.mark.parametrize("model", ["gpt-5.4", "gpt-5.5", "gpt-5.6", "openai/gpt-5.7-2027-01-01"])
def test_original_detail_bills_up_to_10000_patches(model: str) -> None:
    """gpt-5.4 and later take an image at ``detail: "original"`` up to 10,000 patches: counted
    at high detail's 2,500, a 4000 x 3000 photo was 9,500 tokens short."""
    url = data_url(4000, 3000)  # 125 x 94 = 11,750 patches
    original = ctxpack.count_tokens(with_image(url, "original"), model=model)
    assert original == FRAMING + math.ceil(10_000 * 1.2)
    assert ctxpack.count_tokens(with_image(url, "high"), model=model) == FRAMING + 2500 * 1.2


@pytest.mark.parametrize(
    ("model", "rule"),
    [("gpt-5.6", "gpt-5.4"), ("gpt-5.6-mini", "gpt-5.4-mini"), ("gpt-5.20", "gpt-5.4")],
)
def test_a_newer_gpt_5_release_is_billed_as_future_models_not_as_gpt_5_tiles(
    model: str, rule: str
) -> None:
    """OpenAI's guide gives gpt-5.4's budgets to "future models"; a newer point release was
    billed as gpt-5's tiles (910 tokens for a 1920 x 1080 screenshot that costs 2,448)."""
    assert image_rule(model) == image_rule(rule)
    assert image_rule("gpt-5.1").name == "gpt-5"  # gpt-5.1 keeps gpt-5's tiles
