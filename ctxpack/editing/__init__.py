"""Context editing: clear old tool results and compact the history, without breaking the cache.

Two operations, two stages, each usable alone in a :class:`~ctxpack.Pipeline`:

- :class:`ToolResultClearer` replaces old tool results by a short placeholder (the calls stay,
  so the model still sees what it did), the client's and those of the tools the provider ran
  (in their blocks), with the names and defaults of Anthropic's ``clear_tool_uses_20250919``
  edit.
- :class:`Compactor` replaces the older history by a summary; system and developer messages and
  user messages are never summarised, they stay verbatim.

Both keep every original: in ``result.artifacts`` (``result.original(message_id)``) and, when a
store is given, in an :class:`~ctxpack.store.ArtifactStore` (in a :class:`~ctxpack.Session`'s
pipeline, the session's own).

**The cache-aware rule.** An edit rewrites the prompt from the first edited message on, so the
provider's prompt cache is lost from there: the next request pays the cache-write price for
everything after the last cache entry it still finds before the edit point (the edit point
where every message boundary is cached; for a Claude model, whose one breakpoint ends each
request and is found within 20 blocks, often the whole prompt) instead of the cache-read
price. Clearing pays only when::

    removed tokens x expected re-sends x cache-read price
        > (cache-write price - cache-read price) x tokens written again

and then it should happen rarely, in batches, at points that do not depend on when ``pack()``
happens to be called. Both stages therefore replay the history from its start, request by
request (a request is sent before each assistant message, and one is being prepared now), and
edit where the prompt as it would have been sent then crosses the trigger. Each decision depends
only on the messages before that request, so packing a longer version of the same history
reaches the same edits at the same places: appending messages never moves an earlier boundary,
it can only add a new batch.
"""

from .._internal import thinking as _thinking
from . import _clear as _clear
from . import _compact as _compact
from ._clear import (
    DEFAULT_PLACEHOLDER as DEFAULT_PLACEHOLDER,
)
from ._clear import (
    ClearBatch as ClearBatch,
)
from ._clear import (
    ToolResultClearer,
)
from ._compact import (
    COMPACTION_FLOOR as COMPACTION_FLOOR,
)
from ._compact import (
    NOT_ENOUGH_MESSAGES as NOT_ENOUGH_MESSAGES,
)
from ._compact import (
    CompactionPoint as CompactionPoint,
)
from ._compact import (
    Compactor,
)
from ._compact import (
    Summarizer as Summarizer,
)
from ._compact import (
    SummarizerOption as SummarizerOption,
)
from ._compact import (
    summarized_or_digest as summarized_or_digest,
)
from ._digest import (
    evidence_terms as evidence_terms,
)
from ._digest import (
    extractive_digest,
)
from ._digest import (
    window_digest as window_digest,
)

# For the managed window (another package), which clears and compacts by the same rules: named
# here, out of __all__, so that it never imports a private name of this package.
without_thinking = _thinking.without_thinking
verbatim = _compact._verbatim
summary_id_of = _compact.summary_id_of
resolve_price = _clear._resolve_price
DEFAULT_PRICED_MODEL = _clear._DEFAULT_PRICED_MODEL
PATIENCE = _clear._PATIENCE
rewrite_pays = _clear._rewrite_pays

__all__ = [
    "Compactor",
    "ToolResultClearer",
    "extractive_digest",
]
