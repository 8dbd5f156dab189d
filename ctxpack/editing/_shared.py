"""What clearing and compaction share: the request points of a history, and originals as text."""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import ConfigDict

from ..messages import Message
from ..stages import StageModel


def _request_points(messages: Sequence[Message]) -> list[int]:
    """Where requests were sent: before each assistant message, and now (the end)."""
    points = [i for i, m in enumerate(messages) if m.role == "assistant" and i > 0]
    if not points or points[-1] != len(messages):
        points.append(len(messages))
    return points


def _original_text(msg: Message) -> str:
    content = msg.content
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def _as_json(msg: Message) -> str:
    """A message whole, tool calls included, as the store keeps an original that is not a tool
    output."""
    return json.dumps(msg.model_dump(mode="json"), ensure_ascii=False)


class _StoreModel(StageModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
