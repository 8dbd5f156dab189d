"""Tokens of an image content part, by the formulas the providers publish."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["image_tokens"]

# OpenAI's published image formula: a low-detail image costs 85 tokens; a high-detail one is
# scaled to fit 2048x2048, then its short side to 768, and costs 85 + 170 per 512px tile.
IMAGE_BASE_TOKENS = 85
IMAGE_TILE_TOKENS = 170
# Without known dimensions we assume a 1024x1024 image at high detail (4 tiles): 765 tokens.
IMAGE_DEFAULT_TOKENS = IMAGE_BASE_TOKENS + 4 * IMAGE_TILE_TOKENS


def image_tokens(part: Mapping[str, Any]) -> int:
    """Tokens of an image content part by OpenAI's published formula (Anthropic's for an
    Anthropic ``image`` block, which has a ``source``).

    Width and height are read from the part (``width``/``height``, at the top level or inside
    ``image_url``); without them a 1024x1024 image is assumed.
    """
    if isinstance(part.get("source"), Mapping):
        return _anthropic_image_tokens(part)
    inner = part.get("image_url")
    info: Mapping[str, Any] = inner if isinstance(inner, Mapping) else {}
    detail = info.get("detail", part.get("detail", "auto"))
    if detail == "low":
        return IMAGE_BASE_TOKENS
    width = info.get("width", part.get("width"))
    height = info.get("height", part.get("height"))
    if not isinstance(width, int) or not isinstance(height, int) or width <= 0 or height <= 0:
        return IMAGE_DEFAULT_TOKENS
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return IMAGE_BASE_TOKENS + IMAGE_TILE_TOKENS * tiles


# Anthropic's published image cost: width x height / 750 tokens, after scaling the image to at
# most 1568 px on its long side; about 1600 tokens at most, which we assume without dimensions.
ANTHROPIC_IMAGE_MAX_TOKENS = 1600


def _anthropic_image_tokens(block: Mapping[str, Any]) -> int:
    width, height = block.get("width"), block.get("height")
    if not isinstance(width, int) or not isinstance(height, int) or width <= 0 or height <= 0:
        return ANTHROPIC_IMAGE_MAX_TOKENS
    scale = min(1.0, 1568 / max(width, height))
    return min(ANTHROPIC_IMAGE_MAX_TOKENS, math.ceil(width * scale * height * scale / 750))
