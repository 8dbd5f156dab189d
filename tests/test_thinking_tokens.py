"""Anthropic thinking blocks count as what the model reads of them, not as their JSON."""

from __future__ import annotations

import base64
import math
import random
from typing import Any

import ctxpack
from ctxpack.tokens import anthropic_approx_counter

COUNTER = anthropic_approx_counter()


def signature(n_bytes: int, seed: int = 0) -> str:
    """A signature as the API returns one: the base64 of an opaque, encrypted payload."""
    return base64.b64encode(random.Random(seed).randbytes(n_bytes)).decode()


def encrypted_estimate(text: str) -> int:
    """What the encrypted payload may hold: its bytes less an envelope, 4 bytes a token."""
    return math.ceil(max(0, len(text) * 3 // 4 - 650) / 4)


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def thinking(value: str, sig: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, "signature": sig}


THOUGHT = "The user wants the weather in Oslo; I should call the weather tool first. " * 20


def added_by(block: dict[str, Any]) -> int:
    """Tokens one block adds to an assistant message of a short answer."""
    with_block = COUNTER.count_message(assistant(block, text("Checking.")))
    return with_block - COUNTER.count_message(assistant(text("Checking.")))


def test_a_thinking_block_counts_its_thinking_not_its_signature_as_text() -> None:
    sig = signature(1_500)
    # Counted as JSON, the signature's base64 cost more than the thinking itself.
    assert COUNTER.count(sig) > COUNTER.count(THOUGHT) > encrypted_estimate(sig)
    assert added_by(thinking(THOUGHT, sig)) == COUNTER.count(THOUGHT)


def test_a_long_signature_counts_what_it_can_hold_not_its_base64_as_text() -> None:
    sig = signature(12_000)
    assert added_by(thinking(THOUGHT, sig)) == encrypted_estimate(sig) > COUNTER.count(THOUGHT)
    assert added_by(thinking(THOUGHT, sig)) < COUNTER.count(sig) / 4


def test_a_thinking_block_without_its_text_counts_what_its_signature_can_hold() -> None:
    # Display "omitted": the text is empty, the thinking the model reads rides in the signature.
    sig = signature(6_000)
    assert added_by(thinking("", sig)) == encrypted_estimate(sig) > 0


def test_a_redacted_thinking_block_counts_what_its_data_can_hold() -> None:
    data = signature(6_000, seed=1)
    block = {"type": "redacted_thinking", "data": data}
    assert added_by(block) == encrypted_estimate(data)
    assert added_by(block) < COUNTER.count(data) / 4


def test_the_thinking_of_the_current_tool_use_turn_still_counts() -> None:
    call = {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}}
    history = [
        {"role": "user", "content": "Weather in Oslo?"},
        assistant(thinking(THOUGHT, signature(3_000)), call),
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "3 C"}],
        },
    ]
    as_text = [history[0], assistant(text(THOUGHT), call), history[2]]
    # Never under what the API bills for the block it must be sent back: the thinking itself.
    assert ctxpack.count_tokens(history, counter=COUNTER) >= ctxpack.count_tokens(
        as_text, counter=COUNTER
    )
