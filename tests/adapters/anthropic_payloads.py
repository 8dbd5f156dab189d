"""Hypothesis strategies for Anthropic Messages payloads as the API takes them: text, images
and documents, thinking blocks with their signatures, tool calls and their results (text,
images, errors), ``cache_control`` marks (at most four), in alternating turns."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.strategies import texts

_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kg"
    "AAAABJRU5ErkJggg=="
)
_CACHE = {"type": "ephemeral"}


@st.composite
def _text(draw: st.DrawFn, marks: list[int]) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": draw(texts(max_lines=2))}
    _maybe_mark(draw, block, marks)
    return block


def _maybe_mark(draw: st.DrawFn, block: dict[str, Any], marks: list[int]) -> None:
    if marks[0] < 4 and draw(st.integers(0, 5)) == 0:
        marks[0] += 1
        block["cache_control"] = dict(_CACHE)


@st.composite
def _media(draw: st.DrawFn, marks: list[int]) -> dict[str, Any]:
    kind = draw(st.sampled_from(["png", "url", "pdf", "text"]))
    block: dict[str, Any]
    if kind == "png":
        source = {"type": "base64", "media_type": "image/png", "data": _PNG}
        block = {"type": "image", "source": source}
    elif kind == "url":
        block = {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}}
    elif kind == "pdf":
        source = {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK"}
        block = {"type": "document", "source": source, "title": "report.pdf"}
    else:
        source = {"type": "text", "media_type": "text/plain", "data": draw(texts())}
        block = {"type": "document", "source": source, "title": "notes"}
    _maybe_mark(draw, block, marks)
    return block


@st.composite
def _result(draw: st.DrawFn, call_id: str, marks: list[int]) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
    shape = draw(st.sampled_from(["text", "blocks", "none", "empty"]))
    if shape == "text":
        block["content"] = draw(texts())
    elif shape == "blocks":
        inner = [draw(_text(marks))]
        if draw(st.booleans()):
            inner.append(
                {"type": "image", "source": {"type": "url", "url": "https://x.test/s.png"}}
            )
        block["content"] = inner
    elif shape == "empty":
        block["content"] = draw(st.sampled_from(["", []]))
    # The API refuses a failure with empty content.
    if shape != "empty" and draw(st.integers(0, 3)) == 0:
        block["is_error"] = True
    _maybe_mark(draw, block, marks)
    return block


@st.composite
def anthropic_payloads(draw: st.DrawFn) -> dict[str, Any]:
    """A payload the API takes: ``{"system": ..., "messages": [...]}``."""
    marks = [0]
    system: Any = draw(
        st.one_of(st.none(), texts(max_lines=2), st.lists(_text(marks), min_size=1, max_size=2))
    )
    messages: list[dict[str, Any]] = []
    pending: list[str] = []
    turns = draw(st.integers(1, 10))
    for turn in range(turns):
        # user turn: results of the calls before, then text and media
        blocks: list[dict[str, Any]] = [draw(_result(c, marks)) for c in pending]
        pending = []
        extra = draw(st.lists(st.one_of(_text(marks), _media(marks)), max_size=2))
        if not blocks and not extra and draw(st.booleans()):
            messages.append({"role": "user", "content": draw(texts())})
        else:
            messages.append({"role": "user", "content": blocks + extra or [draw(_text(marks))]})
        if turn == turns - 1 and draw(st.booleans()):
            break
        # assistant turn
        out: list[dict[str, Any]] = []
        if draw(st.booleans()):
            thought = draw(texts(max_lines=1))
            out.append({"type": "thinking", "thinking": thought, "signature": f"sig{turn}"})
        if draw(st.integers(0, 5)) == 0:
            out.append({"type": "redacted_thinking", "data": "ZW5j" + str(turn)})
        if draw(st.booleans()):
            out.append(draw(_text(marks)))
        for k in range(draw(st.integers(0, 2))):
            call_id = f"toolu_{turn}_{k}"
            call: dict[str, Any] = {
                "type": "tool_use",
                "id": call_id,
                "name": draw(st.sampled_from(["lookup", "read_file", "mcp__git__log"])),
                "input": draw(
                    st.dictionaries(
                        st.sampled_from(["q", "path", "n"]),
                        st.one_of(st.integers(), texts(max_lines=1), st.lists(st.integers())),
                        max_size=2,
                    )
                ),
            }
            _maybe_mark(draw, call, marks)
            out.append(call)
            pending.append(call_id)
        if not out:
            out.append(draw(_text(marks)))
        if all(b["type"] in ("thinking", "redacted_thinking") for b in out):
            out.append(draw(_text(marks)))
        messages.append({"role": "assistant", "content": out})
    if pending:
        messages.append({"role": "user", "content": [draw(_result(c, marks)) for c in pending]})
    if messages[-1]["role"] == "user" and draw(st.integers(0, 4)) == 0:
        # A prefill: the start of the answer, for the model to continue.
        messages.append({"role": "assistant", "content": draw(st.sampled_from(["{", "Sure:"]))})
    return {"system": system, "messages": messages}
