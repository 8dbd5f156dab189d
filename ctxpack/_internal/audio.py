"""Tokens of an audio content part (``input_audio``), as OpenAI bills it: by its length; and an
assistant's audio reply as Chat Completions takes it back (by its id).

Counted as its base64 text, one second of 16 kHz speech came to some 30,000 tokens, and a clip of
ten seconds passed gpt-4o-audio's window. OpenAI publishes no per-second formula; its price of
audio input, about $0.06 a minute at $100 a million tokens, puts it at some 10 tokens a second
(one per 100 ms).
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Mapping
from typing import Any

__all__: list[str] = []

AUDIO_TOKENS_PER_SECOND = 10
# A compressed file's length is read from its size at this rate (32 kbps, low for speech), so
# that it errs on the side of fitting: an mp3 of 128 kbps counts four times its length.
_LOW_BYTE_RATE = 4_000


def audio_tokens(part: Mapping[str, Any]) -> int | None:
    """The tokens of an ``input_audio`` part sent as base64 data; ``None`` when it holds none
    (the caller counts it as its text)."""
    inner = part.get("input_audio")
    data = inner.get("data") if isinstance(inner, Mapping) else None
    if not isinstance(data, str) or not data:
        return None
    size = len(data) * 3 // 4 - data.endswith("=") - data.endswith("==")
    rate = _wav_byte_rate(data) or _LOW_BYTE_RATE
    return max(1, math.ceil(size / rate * AUDIO_TOKENS_PER_SECOND))


def audio_reference(audio: Any) -> Any:
    """An assistant's ``audio`` reply as it is sent back and counted: ``{"id": ...}`` alone,
    which is all a request's assistant ``audio`` holds (the SDK's reply adds the base64
    ``data``, ``expires_at`` and the ``transcript``, which the message keeps); anything
    without an id as it is.

    Example:
        >>> audio_reference({"id": "audio_abc", "data": "UklGR...", "transcript": "Hi!"})
        {'id': 'audio_abc'}
    """
    if isinstance(audio, Mapping) and "id" in audio:
        return {"id": audio["id"]}
    return audio


def _wav_byte_rate(data: str) -> int | None:
    """The bytes a second of a WAV file's header (``None`` for any other file)."""
    try:
        head = base64.b64decode(data[:48])  # the 36 bytes of the RIFF and fmt headers
    except (binascii.Error, ValueError):
        return None
    if len(head) < 32 or head[:4] != b"RIFF" or head[8:16] != b"WAVEfmt ":
        return None
    rate = int.from_bytes(head[28:32], "little")
    return rate or None
