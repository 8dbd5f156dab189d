"""Pictures of a context window and of a bill, with matplotlib (optional).

Install it with ``pip install 'ctxpack[plot]'``. Each function draws on the ``ax`` it is given,
or on a new figure, and returns the axes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .cost import Bill
from .errors import ConfigError
from .usage import ContextUsage

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_bills", "plot_context_usage"]

# One colour per bucket, in the order of the prompt; free space is light grey.
BUCKET_COLOURS = {
    "system prompt": "#4c72b0",
    "tool definitions": "#8172b2",
    "memory files": "#64b5cd",
    "tool results": "#dd8452",
    "message history": "#55a868",
}
FREE_COLOUR = "#e6e6e6"


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "ctxpack's plots need matplotlib: pip install 'ctxpack[plot]' (or pip install "
            "matplotlib)"
        ) from exc
    return plt


def _axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is not None:
        if not callable(getattr(ax, "plot", None)):
            raise ConfigError(f"ax must be matplotlib axes, got {type(ax).__name__}")
        return ax
    _, new = _pyplot().subplots(figsize=size)
    return new  # type: ignore[no-any-return]


def plot_context_usage(usage: ContextUsage, ax: Axes | None = None) -> Axes:
    """One stacked bar: each bucket's tokens, then the free space up to the window.

    The fixed buckets (hatched) come first, as in the prompt. A compaction window is drawn as a
    dashed line, the window as a solid one.

    Raises:
        ImportError: matplotlib is not installed (with the install command).
        ConfigError: ``usage`` is not a :class:`~ctxpack.usage.ContextUsage`, or ``ax`` not axes.
    """
    if not isinstance(usage, ContextUsage):
        raise ConfigError(
            f"usage must be a ContextUsage (see ctxpack.context_usage), got {type(usage).__name__}"
        )
    ax = _axes(ax, (8, 1.8))
    left = 0
    for bucket in usage.buckets:
        if bucket.tokens <= 0:
            continue
        ax.barh(
            0,
            bucket.tokens,
            left=left,
            color=BUCKET_COLOURS.get(bucket.name, "#999999"),
            hatch="//" if bucket.fixed else None,
            edgecolor="white",
            label=f"{bucket.name} ({bucket.tokens:,})",
        )
        left += bucket.tokens
    if usage.window is not None and usage.free is not None and usage.free > 0:
        ax.barh(0, usage.free, left=left, color=FREE_COLOUR, label=f"free ({usage.free:,})")
    if usage.window is not None:
        ax.axvline(usage.window, color="black", linewidth=1)
    if usage.compaction_window is not None:
        ax.axvline(usage.compaction_window, color="black", linewidth=1, linestyle="--")
    ax.set_yticks([])
    ax.set_xlabel("tokens")
    ax.set_title(f"Context window: {usage.total:,} tokens used")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=3, fontsize=8, frameon=False)
    return ax


def plot_bills(bills: Mapping[str, Bill], ax: Axes | None = None) -> Axes:
    """Cumulative dollars request by request, one line per bill (a strategy, a price).

    Raises:
        ImportError: matplotlib is not installed (with the install command).
        ConfigError: ``bills`` is not a mapping of names to bills, or ``ax`` not axes.
    """
    if not isinstance(bills, Mapping):
        hint = "; name it: {'session': bill}" if isinstance(bills, Bill) else ""
        raise ConfigError(
            f"bills must map names to bills (see ctxpack.simulate), got {type(bills).__name__}"
            + hint
        )
    for name, bill in bills.items():
        if not isinstance(bill, Bill):
            raise ConfigError(f"bills[{name!r}] must be a Bill, got {type(bill).__name__}")
    ax = _axes(ax, (7, 4))
    for name, bill in bills.items():
        running, total = [], 0.0
        for row in bill.requests:
            total += row.cost
            running.append(total)
        ax.plot(range(1, len(running) + 1), running, label=f"{name} (${bill.cost:.2f})")
    ax.set_xlabel("request")
    ax.set_ylabel("cumulative cost, $")
    ax.set_title("What the session cost, request by request")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return ax
