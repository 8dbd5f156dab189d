"""Managed mode: a session whose every request fits its window, and stays cheap with a prompt cache.

:class:`WindowPolicy` says how (the window, the room kept for the reply, when to clear, when to
compact); :class:`WindowState` is everything the managed mode remembers between requests, one
JSON-serialisable object (:meth:`WindowState.to_json`, :meth:`WindowState.from_json`) that a
session store can keep next to the messages. :func:`render_window` builds one request.

Each request is the session's compact record (tool outputs already filtered at arrival), with
three kinds of edit, each applied rarely because each makes the provider's prompt cache write
again what follows the edit point:

1. **Clearing.** Once the prompt passes ``clear_at`` of the room, the old tool results (all but
   the ``keep`` most recent) are replaced by a placeholder naming their stored original, in one
   batch, once re-sending them has cost twice the cache write the batch causes (what follows
   the edit point is written again), or at once when the prompt passes ``compact_at`` and the
   batch brings it back down.
2. **Compaction.** Once the prompt passes ``compact_at`` of the room even so, everything before
   the last ``keep_recent`` messages is replaced by a summary (the extractive digest, with the
   names the summarised tool outputs showed, unless a summarizer is given), except the system
   prompt and the user instructions, which stay verbatim (the oldest but the first join the
   summary once together they pass ``instructions_share`` of the room, or leave no request
   room to be sent); pinned content (memory
   files, skills) is then re-injected within its budgets.
3. **Emergency clearing.** A request that would still not fit has every tool result cleared,
   then, if that is not enough, the agent's answers after the summary (the last call's among
   them), largest first, each sent as a note naming its stored original with its calls'
   arguments ``{}``; then the summary is cut, then everything after it is summarised (the
   last call too), and last the summary is left out of a request its header alone would
   pass.

Every removed message stays in the session's store, named by the placeholder or the summary's
index artifact, and every edit is a decision with the tokens the cache writes again.
"""

from __future__ import annotations

from ._compaction import (
    fit_digest as fit_digest,
)
from ._policy import (
    DEFAULT_PINNED_BUDGET as DEFAULT_PINNED_BUDGET,
)
from ._policy import (
    DEFAULT_SKILL_BUDGET as DEFAULT_SKILL_BUDGET,
)
from ._policy import (
    PinnedText as PinnedText,
)
from ._policy import (
    WindowPolicy,
)
from ._state import (
    WindowEvent,
    WindowState,
)
from ._state import (
    cache_warnings as cache_warnings,
)
from ._window import (
    render_window as render_window,
)

__all__ = [
    "WindowEvent",
    "WindowPolicy",
    "WindowState",
]
