"""Decisions built without validation, for the stages that record one per message."""

from __future__ import annotations

from ..pipeline import Action, Decision
from .trusted import trusted_frozen_instance

__all__ = ["trusted_decision"]

# Shared by every trusted decision (see trusted_frozen_instance); never mutated.
_ALL_FIELDS = set(Decision.model_fields)


def trusted_decision(
    stage: str,
    action: Action,
    message_id: str,
    reason: str,
    score: float | None = None,
    tokens_before: int | None = None,
    tokens_after: int | None = None,
) -> Decision:
    """A :class:`~ctxpack.Decision` built without validation, for values already known to be
    valid: the packer records one decision per message, thousands per call on a long history.
    Everywhere else, use the normal constructor."""
    return trusted_frozen_instance(
        Decision,
        {
            "stage": stage,
            "action": action,
            "message_id": message_id,
            "reason": reason,
            "score": score,
            "tokens_before": tokens_before,
            "tokens_after": tokens_after,
        },
        _ALL_FIELDS,
    )
