"""The limits a wrapper packs each request under: the context window and the prompt's budget.

``window`` is the model's context window, prompt and reply together: each request's
``max_tokens`` comes out of it. ``budget`` is what it is in :func:`ctxpack.pack`, the most the
prompt may take whatever the reply asks. With both, the tighter one holds. The client wrappers
and the LangChain middleware share these rules.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..errors import ConfigError
from .arguments import shown, tokens

__all__ = ["check_limits", "pack_limits"]


def check_limits(owner: str, window: Any, budget: Any, reserve: Any) -> None:
    """Raise for invalid limits; warn for the old use of ``budget`` as the context window.

    ``owner`` names what was called (``"wrap_openai()"``), for the messages; the warning points
    at the caller of ``owner``.
    """
    if window is None and budget is None:
        raise ConfigError(
            f"{owner} needs window= (the model's context window: prompt and reply together) or "
            "budget= (the most the prompt may take, as in pack())"
        )
    for name, value in (("window", window), ("budget", budget)):
        if value is not None:
            tokens(value, name)
    if window is not None and budget is not None and budget > window:
        # The tighter limit holds, so such a budget would never apply: most likely the two were
        # swapped, or budget= is the old spelling of the window.
        raise ConfigError(
            f"budget ({budget}) is more than window ({window}): the tighter limit holds, so it "
            "would never apply; budget= caps the prompt within the window, so give one below "
            "it, or leave it out"
        )
    smallest = min(v for v in (window, budget) if v is not None)
    if isinstance(reserve, bool) or not isinstance(reserve, int) or not 0 <= reserve < smallest:
        raise ConfigError(
            f"reserve must be an int in [0, {'budget' if smallest == budget else 'window'}), "
            f"got {shown(reserve)}"
        )
    if window is None:
        warnings.warn(
            f"{owner} with budget={budget} and no window=: budget now means what it means in "
            "pack(), the most the prompt may take, and a request's max_tokens is no longer "
            "taken out of it. For the model's context window (prompt and reply together, as "
            f"budget= meant before), pass window={budget}; pass both to cap the prompt within "
            "the window.",
            FutureWarning,
            stacklevel=3,
        )


def pack_limits(
    window: int | None,
    budget: int | None,
    reserve: int,
    room: int,
    *,
    asked: str = "max_tokens",
    schema: int = 0,
) -> tuple[int, int]:
    """The ``budget`` and ``reserve`` to give :func:`ctxpack.pack` for a reply of ``room``
    tokens (the request's argument ``asked``): the tighter of the window (prompt and reply)
    and the budget (the prompt alone). ``schema`` is the tokens of the reply's output format,
    which the provider adds to the prompt: reserved beside ``reserve``.

    Raises:
        ConfigError: ``room``, ``schema`` and ``reserve`` leave nothing of the window for the
            prompt.
    """
    options = []
    if window is not None:
        if reserve + schema + room >= window:
            format_said = f", the output format's schema ({schema} tokens)," if schema else ""
            raise ConfigError(
                f"{asked} ({room}){format_said} plus reserve ({reserve}) leaves nothing of the "
                f"context window ({window}) for the prompt"
            )
        options.append((window, reserve + schema + room))
    if budget is not None:
        options.append((budget, reserve + schema))
    return min(options, key=lambda option: option[0] - option[1])
