"""Selection: a selector (a small model, or a lexical search) chooses what the large model reads.

Before each important step of an agent, a selector looks at the agent's
:class:`~ctxpack.selection.Workspace` (its messages and tool results, a repository, stored
originals) and answers with a :class:`~ctxpack.selection.Selection`: message indexes, file passages
by line range or match, tool results by call id, durable notes, and why the rest is left out.
:func:`~ctxpack.selection.apply_selection` turns it into the context to send, with a decision per
item; user instructions are always kept.

- :class:`~ctxpack.selection.LexicalSelector` chooses offline, with no model.
- :class:`~ctxpack.selection.ModelSelector` asks a small model through structured outputs (OpenAI)
  or a forced tool call (Anthropic), validates, retries once, and falls back to the lexical
  selector.
"""

from ._apply import (
    CONTEXT_ID as CONTEXT_ID,
)
from ._apply import (
    apply_selection,
)
from ._apply import (
    check_selection as check_selection,
)
from ._lexical_selector import (
    LexicalSelector,
)
from ._lexical_selector import (
    Selector as Selector,
)
from ._model import (
    FileRequest as FileRequest,
)
from ._model import (
    ItemReason as ItemReason,
)
from ._model import (
    Selection,
)
from ._model import (
    SelectorUsage as SelectorUsage,
)
from ._model_selector import (
    SYSTEM_PROMPT,
    ModelSelector,
    selection_prompt,
)
from ._model_selector import (
    TOOL_NAME as TOOL_NAME,
)
from ._search import (
    FileSearch as FileSearch,
)
from ._search import (
    keywords as keywords,
)
from ._workspace import (
    Passage as Passage,
)
from ._workspace import (
    Workspace,
)

__all__ = [
    "SYSTEM_PROMPT",
    "LexicalSelector",
    "ModelSelector",
    "Selection",
    "Workspace",
    "apply_selection",
    "selection_prompt",
]
