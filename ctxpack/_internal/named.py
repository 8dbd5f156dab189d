"""How an error names a message whose id is ctxpack's own: by its role and first words."""

from __future__ import annotations

from ..messages import Message

__all__ = ["named"]

_SHOWN = 30


def named(message: Message) -> str:
    """``system`` for a system prompt, else ``the user 'first words…'``: what the caller can
    find in the request they built."""
    if message.role == "system":
        return "system"
    words = " ".join(message.text.split())
    shown = words if len(words) <= _SHOWN else words[: _SHOWN - 1] + "…"
    return f"the {message.role} {shown!r}"
