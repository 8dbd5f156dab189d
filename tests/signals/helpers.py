"""A signal's input without the relevance stage: the query and the conversation's index."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxpack.messages import ensure_messages
from ctxpack.signals import Query
from ctxpack.signals.bm25 import InvertedIndex
from ctxpack.signals.lexical import Language, terms


def query_of(
    history: Sequence[str | Mapping[str, Any]], text: str, language: Language = "en"
) -> Query:
    """The query ``text`` on ``history`` (plain strings are user messages), indexed as
    ``language``."""
    messages = tuple(
        ensure_messages(
            [{"role": "user", "content": m} if isinstance(m, str) else m for m in history]
        )
    )
    index = InvertedIndex(language)
    index.sync([m.text for m in messages])
    return Query(text, terms(text, language), language, messages, index)
