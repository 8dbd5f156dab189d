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

from .apply import CONTEXT_ID, apply_selection, check_selection
from .lexical_selector import LexicalSelector, Selector
from .model import FileRequest, ItemReason, Selection, SelectorUsage
from .model_selector import SYSTEM_PROMPT, TOOL_NAME, ModelSelector, selection_prompt
from .search import FileSearch, keywords
from .workspace import Passage, Workspace

__all__ = [
    "CONTEXT_ID",
    "SYSTEM_PROMPT",
    "TOOL_NAME",
    "FileRequest",
    "FileSearch",
    "ItemReason",
    "LexicalSelector",
    "ModelSelector",
    "Passage",
    "Selection",
    "Selector",
    "SelectorUsage",
    "Workspace",
    "apply_selection",
    "check_selection",
    "keywords",
    "selection_prompt",
]
