"""Tokens of a content part: a text, an image, a document, a model's reasoning or thinking, the
result of a tool the provider ran (the images and documents in it too), or a part we cannot see
into."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .audio import audio_reference, audio_tokens
from .compaction import anthropic_compaction_tokens, compaction_tokens, is_openai_compaction
from .documents import DOCUMENT_TYPES, document_tokens
from .images import IMAGE_TYPES, ImageRule, image_tokens
from .part_texts import is_provider_tool_result
from .reasoning import REASONING, reasoning_tokens, thinking_tokens
from .tool_items import item_type
from .tool_schemas import compact_json

__all__: list[str] = []

THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})


def part_tokens(part: Mapping[str, Any], count: Callable[[str], int], images: ImageRule) -> int:
    """The tokens of one content part; ``count`` counts a text, ``images`` is how the model
    bills an image."""
    kind = part.get("type")
    if kind in ("text", "input_text"):
        return count(str(part.get("text", "")))
    if kind == "refusal":
        # As the message's refusal field: its text.
        return count(str(part.get("refusal", "")))
    if kind in IMAGE_TYPES:
        return image_tokens(part, images)
    if kind in DOCUMENT_TYPES:
        return document_tokens(part, count) + _source_images(part, images)
    if kind == REASONING:
        return reasoning_tokens(part, count)
    if is_openai_compaction(part):
        return compaction_tokens(part)
    if kind == "compaction":
        return anthropic_compaction_tokens(part, count)
    if kind in THINKING_TYPES:
        return thinking_tokens(part, count)
    if kind == "input_audio" and (audio := audio_tokens(part)) is not None:
        return audio
    if is_provider_tool_result(part):
        return _with_media(part, count, images)
    # Unknown part types are billed in ways we cannot see: never free.
    return count(str(part))


def extras_tokens(extras: Mapping[str, Any], count: Callable[[str], int]) -> int:
    """The tokens of the provider fields a message carries beside its content: an assistant's
    ``refusal``, its ``audio`` reference, and the thinking LiteLLM returns beside an OpenAI
    message (``thinking_blocks``, else ``reasoning_content``)."""
    total = _litellm_thinking_tokens(extras, count)
    if isinstance(refusal := extras.get("refusal"), str):
        # Sent back with its turn (to Claude as its text): the model reads it.
        total += count(refusal)
    if isinstance(audio := extras.get("audio"), Mapping):
        # The model reads the answer it names, whose length only OpenAI knows: never free.
        # Counted as it is sent, by its id alone.
        total += count(compact_json(audio_reference(audio)))
    return total


def _litellm_thinking_tokens(extras: Mapping[str, Any], count: Callable[[str], int]) -> int:
    """LiteLLM sends ``thinking_blocks`` back to Claude as its thinking blocks, counted as
    those are; ``reasoning_content`` is the same thinking as text, and is what a model without
    blocks (DeepSeek's) is sent back, so it counts only without blocks."""
    blocks = extras.get("thinking_blocks")
    if isinstance(blocks, list) and blocks:
        return sum(thinking_tokens(b, count) for b in blocks if item_type(b) in THINKING_TYPES)
    reasoning = extras.get("reasoning_content")
    return count(reasoning) if isinstance(reasoning, str) else 0


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


# What a provider's tool result may hold that is billed as media, not as the text of its data.
_MEDIA_TYPES = IMAGE_TYPES | DOCUMENT_TYPES


def _with_media(part: Mapping[str, Any], count: Callable[[str], int], images: ImageRule) -> int:
    """The tokens of a provider's tool result (an MCP tool's screenshot, a fetched PDF): each
    image or document in it as such a part, the rest as text."""
    media: list[Mapping[str, Any]] = []

    def rest(value: Any) -> Any:
        if isinstance(value, Mapping):
            if item_type(value) in _MEDIA_TYPES and value is not part:
                media.append(value)
                return {"type": value["type"]}
            return {k: rest(v) for k, v in value.items()}
        if isinstance(value, list):
            return [rest(v) for v in value]
        return value

    text = str(rest(part))
    return count(text) + sum(part_tokens(m, count, images) for m in media)
