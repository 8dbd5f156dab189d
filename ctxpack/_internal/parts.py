"""Tokens of a content part: a text, an image, a document, a model's reasoning or thinking, or
a part we cannot see into."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .audio import audio_tokens
from .documents import DOCUMENT_TYPES, document_tokens
from .images import ImageRule, image_tokens
from .reasoning import REASONING, reasoning_tokens, thinking_tokens

__all__: list[str] = []

IMAGE_TYPES = frozenset({"image_url", "input_image", "image"})
THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})


def part_tokens(part: Mapping[str, Any], count: Callable[[str], int], images: ImageRule) -> int:
    """The tokens of one content part; ``count`` counts a text, ``images`` is how the model
    bills an image."""
    kind = part.get("type")
    if kind in ("text", "input_text"):
        return count(str(part.get("text", "")))
    if kind in IMAGE_TYPES:
        return image_tokens(part, images)
    if kind in DOCUMENT_TYPES:
        return document_tokens(part, count) + _source_images(part, images)
    if kind == REASONING:
        return reasoning_tokens(part, count)
    if kind in THINKING_TYPES:
        return thinking_tokens(part, count)
    if kind == "input_audio" and (audio := audio_tokens(part)) is not None:
        return audio
    # Unknown part types are billed in ways we cannot see: never free.
    return count(str(part))


def _source_images(part: Mapping[str, Any], images: ImageRule) -> int:
    """The images of an Anthropic document's content source, billed as images are (its text
    blocks are the document's text)."""
    source = part.get("source")
    blocks = source.get("content") if isinstance(source, Mapping) else None
    if not isinstance(blocks, list):
        return 0
    return sum(
        image_tokens(b, images)
        for b in blocks
        if isinstance(b, Mapping) and b.get("type") == "image"
    )
