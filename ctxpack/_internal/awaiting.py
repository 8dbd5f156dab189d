"""Work a coroutine waits for to its end, even when cancelled meanwhile: a worker thread cannot
be stopped, nor a store's write left in the middle, and what they change must be neither read
nor let go of before they end."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

__all__: list[str] = []

_T = TypeVar("_T")


async def to_end(work: asyncio.Future[Any]) -> asyncio.CancelledError | None:
    """Wait for ``work`` to end, however often the caller is cancelled meanwhile; return the
    first cancellation, for the caller to raise once it is done."""
    cancelled: asyncio.CancelledError | None = None
    while not work.done():
        try:
            await asyncio.wait([work])  # cancelling this wait leaves the work running
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    return cancelled


async def in_thread(
    func: Callable[..., _T], /, *args: Any, undo: Callable[[_T], None] | None = None, **kwargs: Any
) -> _T:
    """``func(*args, **kwargs)`` in a worker thread, awaited to its end even if the caller is
    cancelled: the thread cannot be stopped, and the state it changes must be neither read nor
    let go of (a lock released) before it ends. Cancelled, ``undo`` is given what
    the thread returned, and the cancellation is raised."""
    work = asyncio.ensure_future(asyncio.to_thread(func, *args, **kwargs))
    cancelled = await to_end(work)
    if cancelled is None:
        return work.result()
    # Read even when nothing is undone: a thread's error nobody reads is logged by asyncio
    # ("Task exception was never retrieved") once the caller has long gone.
    failed = work.exception()
    if undo is not None and failed is None:
        undo(work.result())
    raise cancelled
