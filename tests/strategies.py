"""Hypothesis strategies for random conversations and budgets.

A conversation starts with a system message, then mixes user, assistant and developer turns,
tool exchanges (an assistant turn with 1-3 tool calls followed by their results), exact
repetitions of earlier turns, pinned and prioritised messages and sourced messages. Each message
is a plain dict or a ``Message``, with or without an explicit id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

import ctxpack

WORDS = (
    "budget",
    "token",
    "refresh",
    "login",
    "Paris",
    "Marie",
    "report",
    "deadline",
    "42",
    "2025",
    "cache",
    "tests",
    "auth.py",
    "the",
    "and",
    "migration",
    "# Heading",
    "- item",
)

SOURCES = ("https://fr.wikipedia.org/wiki/PIB", "doc:handbook", "acme/login/config/auth.yaml")


@st.composite
def texts(draw: st.DrawFn, *, max_lines: int = 3) -> str:
    """Short texts of a few lines built from a small vocabulary, so repeats and query hits
    happen often."""
    lines = draw(
        st.lists(
            st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join),
            min_size=1,
            max_size=max_lines,
        )
    )
    return "\n".join(lines)


@st.composite
def long_texts(draw: st.DrawFn) -> str:
    """Tool outputs long enough (many lines, > 200 tokens) for the compressor to act on."""
    n = draw(st.integers(min_value=14, max_value=40))
    # Few distinct lines: the compressor's per-line spaCy cache keeps the suite fast.
    seed = draw(st.integers(min_value=0, max_value=10))
    return "\n".join(
        f"{'- ' if (i + seed) % 5 == 0 else ''}line {i} of the log: status ok for module "
        f"{(i * 7 + seed) % 11} with Marie and the refresh token cache"
        for i in range(n)
    )


@dataclass
class Conversation:
    """A generated conversation and what the properties need to know about it."""

    items: list[Any]  # dicts and Message objects, as passed to pack()


def _finish(
    draw: st.DrawFn, index: int, data: dict[str, Any], *, explicit_ids: bool
) -> dict[str, Any] | ctxpack.Message:
    if explicit_ids or draw(st.booleans()):
        data["id"] = f"msg{index}"
    if draw(st.booleans()):
        return data
    return ctxpack.Message.model_validate(data)


@st.composite
def conversations(draw: st.DrawFn, *, max_turns: int = 14) -> Conversation:
    """Random conversations: system first, then a mix of turn kinds (see the module doc)."""
    # All explicit ids, all generated ids, or a mix.
    explicit_ids = draw(st.booleans())
    items: list[Any] = []
    said: list[tuple[str, str]] = []

    def add(data: dict[str, Any]) -> None:
        items.append(_finish(draw, len(items), data, explicit_ids=explicit_ids))

    system: dict[str, Any] = {"role": "system", "content": draw(texts(max_lines=2))}
    add(system)
    kinds = draw(
        st.lists(
            st.sampled_from(["user", "assistant", "developer", "tools", "repeat", "long"]),
            max_size=max_turns,
        )
    )
    for kind in kinds:
        data: dict[str, Any]
        if kind == "tools":
            n_calls = draw(st.integers(min_value=1, max_value=3))
            calls = [
                {
                    "id": f"call_{len(items)}_{k}",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": f'{{"q": "{k}"}}'},
                }
                for k in range(n_calls)
            ]
            content = draw(st.one_of(st.none(), texts(max_lines=1)))
            add({"role": "assistant", "content": content, "tool_calls": calls})
            for call in calls:
                result = draw(st.one_of(texts(), long_texts()))
                add({"role": "tool", "tool_call_id": call["id"], "content": result})
            continue
        if kind == "repeat" and said:
            role, text = draw(st.sampled_from(said))
            data = {"role": role, "content": text}
        elif kind == "long":
            data = {"role": "assistant", "content": draw(long_texts())}
        else:
            role = kind if kind in ("user", "assistant", "developer") else "user"
            data = {"role": role, "content": draw(texts())}
        if draw(st.integers(min_value=0, max_value=7)) == 0:
            data["pinned"] = True
        if draw(st.integers(min_value=0, max_value=4)) == 0:
            data["priority"] = draw(st.sampled_from([-2.0, 0.5, 1.0, 3.0]))
        if draw(st.integers(min_value=0, max_value=4)) == 0:
            data["source"] = draw(st.sampled_from(SOURCES))
        said.append((data["role"], data["content"]))
        add(data)
    return Conversation(items=items)


@st.composite
def pack_cases(draw: st.DrawFn) -> tuple[Conversation, int, int]:
    """A conversation with a budget (from far too small to roomy) and a reserve below it."""
    conv = draw(conversations())
    total = ctxpack.count_tokens(conv.items, model="gpt-4")
    budget = draw(st.integers(min_value=10, max_value=total + 40))
    reserve = draw(st.integers(min_value=0, max_value=min(budget - 1, 60)))
    return conv, budget, reserve
