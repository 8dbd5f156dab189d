"""``check_provider()``: a ``provider`` argument checked, below the adapters, which read a
message in the format a caller names (:mod:`ctxpack.providers` sits above them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ConfigError
from .arguments import shown

if TYPE_CHECKING:
    from ..providers import Provider

__all__ = ["check_provider"]


def check_provider(value: object, argument: str = "provider") -> Provider:
    """``value`` as a :data:`~ctxpack.providers.Provider`.

    Raises:
        ConfigError: anything but ``"openai"`` or ``"anthropic"`` (``argument`` named).
    """
    if value == "anthropic":
        return "anthropic"
    if value == "openai":
        return "openai"
    raise ConfigError(f"{argument} must be 'openai' or 'anthropic', got {shown(value)}")
