"""Tokens of an image content part, by the formulas the providers publish, for each model.

OpenAI bills an image by one of two rules, chosen by the model. Tiles (gpt-4o, gpt-4.1, gpt-5,
o1, o3): a low-detail image costs the base; a high-detail one is scaled to fit 2048x2048, then
its short side to 768, and costs the base plus a price per 512 px tile. Patches (the mini and
nano models since gpt-4.1, o4-mini, gpt-5.2 and later): the 32 px patches covering the image,
scaled down to a model's budget of patches, times a model's multiplier. The prices differ by
model: gpt-4o-mini bills 2,833 + 5,667 a tile, 33 times gpt-4o's 85 + 170, for the same dollars.
The figures are those of OpenAI's vision guide ("Calculating costs"), but for gpt-5.2 and later,
which bill 1.2 tokens a patch where the guide says nothing of a multiplier (bills reported on
OpenAI's developer forum), and ``detail: "original"``, which gpt-5.4 and later take up to 10,000
patches (the budget OpenAI's own agent, Codex, counts for it).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from collections.abc import Mapping
from typing import Any, NamedTuple

from .base64_data import base64_start
from .encodings import model_key

__all__: list[str] = []

# The content part types of an image: OpenAI's Chat Completions and Responses API, Anthropic's.
IMAGE_TYPES = frozenset({"image_url", "input_image", "image"})


class ImageRule(NamedTuple):
    """How the models named ``name`` bill an image: ``base`` + ``tile`` per 512 px tile, or,
    with a ``multiplier``, its 32 px patches (at most ``patches``, or ``original`` at that detail)
    times the multiplier; or, for Claude (``edge``), width x height / 750 once its long side fits
    ``edge``, at most ``patches``."""

    name: str
    base: int
    tile: int
    multiplier: float = 0.0
    patches: int = 0
    edge: int = 0
    original: int = 0  # the budget of patches at detail "original", when the model takes it


GPT_4O_IMAGES = ImageRule("gpt-4o", 85, 170)


def _patches(name: str, multiplier: float, budget: int = 1536, original: int = 0) -> ImageRule:
    return ImageRule(name, 0, 0, multiplier, budget, original=original)


# What gpt-5.2 and later bill a patch: the guide gives no multiplier (so 1), but bills reported on
# OpenAI's forum for gpt-5.2, gpt-5.3-codex and gpt-5.4 come to 1.2 tokens a patch.
_GPT_5_2_PATCH = 1.2
# "gpt-5.4 and future models": 2,500 patches at high detail, 10,000 at "original".
_FUTURE = (2500, 10_000)

# The first name a model's name starts with (not followed by a digit) wins: the longer names
# come first.
IMAGE_RULES: tuple[ImageRule, ...] = (
    ImageRule("gpt-4o-mini", 2833, 5667),
    _patches("gpt-4.1-mini", 1.62),
    _patches("gpt-4.1-nano", 2.46),
    _patches("gpt-5-mini", 1.62),
    _patches("gpt-5-nano", 2.46),
    _patches("gpt-5.4-mini", 1.62),
    _patches("gpt-5.4-nano", 2.46),
    _patches("gpt-5.4", _GPT_5_2_PATCH, *_FUTURE),
    _patches("gpt-5.5", _GPT_5_2_PATCH, *_FUTURE),
    _patches("gpt-5.2", _GPT_5_2_PATCH),
    _patches("gpt-5.3", _GPT_5_2_PATCH),
    ImageRule("gpt-5", 70, 140),
    _patches("o4-mini", 1.72),
    _patches("codex-mini", 1.72),  # a fine-tuned o4-mini, its images read alike
    ImageRule("o1", 75, 150),
    ImageRule("o3", 75, 150),
    ImageRule("computer-use-preview", 65, 129),
    # Anthropic's high-resolution models take an image up to 2,576 px and 4,784 tokens (two
    # public sources quoting its vision guide; none other is known to take more than 1,600).
    *(
        ImageRule(name, 0, 0, patches=4784, edge=2576)
        for name in ("claude-opus-4-7", "claude-opus-4-8", "claude-sonnet-5", "claude-opus-5")
    ),
)

# Anthropic's published image cost: width x height / 750 tokens, after scaling the image to at
# most 1568 px on its long side; about 1600 tokens at most, which we assume without dimensions.
CLAUDE_IMAGES = ImageRule("claude", 0, 0, patches=1600, edge=1568)


# A gpt-5 point release newer than the rules above: billed as "future models" are, not as
# gpt-5's tiles, which its name also starts with.
_LATER_GPT_5 = re.compile(r"gpt-5\.(\d+)")
_NEWEST_GPT_5 = 5


def image_rule(model: str) -> ImageRule:
    """How ``model`` bills an image; gpt-4o's tiles for a model not listed, and gpt-5.4's
    rules for a gpt-5 point release past those listed (``gpt-5.6``, ``gpt-5.6-mini``)."""
    key = model_key(model)
    later = _LATER_GPT_5.match(key)
    if later is not None and int(later[1]) > _NEWEST_GPT_5:
        key = f"gpt-5.4{key[later.end() :]}"
    default = CLAUDE_IMAGES if key.startswith("claude") else GPT_4O_IMAGES
    return next((rule for rule in IMAGE_RULES if _names(key, rule.name)), default)


def _names(key: str, name: str) -> bool:
    # gpt-5.2's rule is not gpt-5.20's.
    return key.startswith(name) and not key[len(name) : len(name) + 1].isdigit()


# Without known dimensions we assume a 1024x1024 image at high detail.
DEFAULT_SIDE = 1024


def image_tokens(part: Mapping[str, Any], rule: ImageRule = GPT_4O_IMAGES) -> int:
    """Tokens of an image content part by ``rule`` (Anthropic's formula for an Anthropic
    ``image`` block, which has a ``source``).

    The size is read from the part (``width``/``height``, at the top level or inside
    ``image_url``), else from the header of an image sent as data (PNG, JPEG, GIF, WebP); else
    a 1024x1024 image is assumed.
    """
    source = part.get("source")
    inner = part.get("image_url")
    info: Mapping[str, Any] = inner if isinstance(inner, Mapping) else {}
    url = info.get("url") if inner is info else inner
    detail = info.get("detail", part.get("detail", "auto"))
    if isinstance(source, Mapping):
        data = source.get("data")
        size = _given_size(part) or (base64_size(data) if isinstance(data, str) else None)
    else:
        size = _given_size(info) or _given_size(part) or data_url_size(url)
        inline = langchain_base64(part)
        size = size or (base64_size(inline) if inline else None)
    if rule.edge or isinstance(source, Mapping):
        return _claude_tokens(size, rule if rule.edge else CLAUDE_IMAGES)
    width, height = size or (DEFAULT_SIDE, DEFAULT_SIDE)
    if rule.multiplier:
        budget = rule.original if detail == "original" and rule.original else rule.patches
        return math.ceil(_patch_count(width, height, budget) * rule.multiplier)
    if detail == "low":
        return rule.base
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return rule.base + rule.tile * math.ceil(w / 512) * math.ceil(h / 512)


def langchain_base64(block: Mapping[str, Any]) -> str | None:
    """The base64 data of a LangChain content block (``{"type": "image", "base64": ...}``, or
    ``"source_type": "base64"`` with ``"data"``), which LangChain's chat models send on."""
    data = block.get("base64")
    if data is None and block.get("source_type") == "base64":
        data = block.get("data")
    return data if isinstance(data, str) and data else None


def _given_size(entry: Mapping[str, Any]) -> tuple[int, int] | None:
    width, height = entry.get("width"), entry.get("height")
    if type(width) is int and type(height) is int and width > 0 and height > 0:
        return width, height
    return None


def _patch_count(width: int, height: int, budget: int) -> int:
    # Past the budget OpenAI's guide shrinks the image to fit it, a few patches under it; bills
    # measured on such images show the budget itself, the figure that errs on fitting.
    return min(budget, math.ceil(width / 32) * math.ceil(height / 32))


# The bytes that hold an image's size sit in its first few hundred bytes (a JPEG's frame
# header may follow its metadata, further in).
_HEADER_CHARS = 64 * 1024


def data_url_size(url: Any) -> tuple[int, int] | None:
    """The width and height of an image sent as a base64 data URL, read from its header."""
    start = base64_start(url, within=100) if isinstance(url, str) else None
    if start is None:
        return None
    return base64_size(url[start : start + _HEADER_CHARS])


def base64_size(data: str) -> tuple[int, int] | None:
    """The width and height of the base64 image ``data`` (its start is enough)."""
    chunk = data[:_HEADER_CHARS]
    try:
        head = base64.b64decode(chunk[: len(chunk) // 4 * 4])
    except (binascii.Error, ValueError):
        return None
    try:
        size = _image_size(head)
    except struct.error:  # a header cut before the size (a truncated upload): none to read
        return None
    return size if size and size[0] > 0 and size[1] > 0 else None


def _pair(layout: str, data: bytes) -> tuple[int, int]:
    first, second = struct.unpack(layout, data)
    return int(first), int(second)


def _image_size(head: bytes) -> tuple[int, int] | None:
    if head.startswith(b"\x89PNG\r\n\x1a\n") and head[12:16] == b"IHDR":
        return _pair(">II", head[16:24])
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return _pair("<HH", head[6:10])
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return _webp_size(head)
    if head.startswith(b"\xff\xd8"):
        return _jpeg_size(head)
    return None


def _webp_size(head: bytes) -> tuple[int, int] | None:
    kind = head[12:16]
    if kind == b"VP8X" and len(head) >= 30:
        return (
            int.from_bytes(head[24:27], "little") + 1,
            int.from_bytes(head[27:30], "little") + 1,
        )
    if kind == b"VP8L" and len(head) >= 25:
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if kind == b"VP8 " and len(head) >= 30:
        width, height = _pair("<HH", head[26:30])
        return width & 0x3FFF, height & 0x3FFF
    return None


# Start-of-frame markers: every SOFn but DHT (C4), JPG (C8) and DAC (CC).
_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(head: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 <= len(head):
        if head[i] != 0xFF:
            return None
        marker = head[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in _JPEG_FRAMES:
            height, width = _pair(">HH", head[i + 5 : i + 9])
            return width, height
        i += 2 + int.from_bytes(head[i + 2 : i + 4], "big")
    return None


def _claude_tokens(size: tuple[int, int] | None, rule: ImageRule) -> int:
    if size is None:
        return rule.patches  # the most an image costs: its size is unknown
    width, height = size
    scale = min(1.0, rule.edge / max(width, height))
    return min(rule.patches, math.ceil(width * scale * height * scale / 750))
