"""What clearing and compaction share: the request points of a history, and originals as text."""

from __future__ import annotations

import json
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from pydantic import ConfigDict

from ..errors import ConfigError
from ..messages import Message, message_objects
from ..stages import StageModel
from ..tokens import check_counter


def _history(messages: object, counter: object, protected: object) -> tuple[Message, ...]:
    """``messages`` as a tuple, once checked with the counter and the protected ids that a
    planner (``batches``, ``points``) is given: it reads their fields without asking."""
    items = message_objects(messages)
    check_counter(counter)
    if not isinstance(protected, AbstractSet):
        raise ConfigError(f"protected must be a set of message ids, got {type(protected).__name__}")
    return items


def _request_points(messages: Sequence[Message]) -> list[int]:
    """Where requests were sent: before each assistant message, and now (the end)."""
    points = [i for i, m in enumerate(messages) if m.role == "assistant" and i > 0]
    if not points or points[-1] != len(messages):
        points.append(len(messages))
    return points


def _original_text(msg: Message) -> str:
    content = msg.content
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


class _StoreModel(StageModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
