"""Session: an agent's history kept twice, the full transcript and the compact record to send.

Messages are appended as the agent produces them (OpenAI or Anthropic dicts). Each tool output
is filtered once, when it arrives (:mod:`ctxpack.filters`), and its original is stored
(:mod:`ctxpack.store`); the compact record links every shortened message to its original. The
compact record grows at its end, so a provider's prompt cache keeps working from turn to turn;
the one exception, file views made obsolete by a later view of the same lines, is applied in
rare batches.

The package is split by job: ``_arrival`` (conversion, guarding and filtering as messages
arrive), ``_supersede`` (obsolete file views), ``_render`` (the request), ``_state`` (the state,
changed all or nothing and stored), ``_records`` (what was done to each tool output) and
``_session`` (the class itself).
"""

from ._arrival import extend_batch as extend_batch
from ._arrival import pinned_message as pinned_message
from ._records import FilterRecord as FilterRecord
from ._render import system_opening as system_opening
from ._session import Session as Session

__all__ = [
    "Session",
]
