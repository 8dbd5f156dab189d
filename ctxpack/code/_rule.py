"""Load the whole repository, or retrieve from it: the rule, with its reasons and numbers.

Retrieve when the part of the repository the task needs is smaller than the repository (most
tasks: a bug, a feature, a question about one path). Load everything only when the task is the
whole repository (a review, a summary, an architecture question) and the repository fits in the
first ``share`` (15%) of the model's window, where models still read reliably.
"""

from __future__ import annotations

import os
import re
from typing import Literal

from pydantic import ConfigDict

from .._internal.arguments import flag, nonblank, number, string
from .._internal.arguments import tokens as check_tokens
from .._internal.options import FieldErrorModel
from ..errors import ConfigError
from ._index import CodeIndex

__all__ = ["LoadDecision", "decide_loading", "is_whole_repository_task"]

# A task is about the whole repository when it says so (a subject) and asks for a whole-reading
# action (a verb).
_WHOLE_SUBJECT = re.compile(
    r"\b(whole|entire|all|every|architecture|codebase|code base|repository|repo|project)\b",
    re.IGNORECASE,
)
_WHOLE_VERB = re.compile(
    r"\b(review|summari[sz]e|overview|audit|explain|describe|document|map)\b", re.IGNORECASE
)


class LoadDecision(FieldErrorModel):
    """The decision: ``action`` is ``"load"`` (send the whole repository) or ``"retrieve"``.

    Attributes:
        action: ``"load"`` or ``"retrieve"``.
        whole_task: Whether the task concerns the whole repository.
        repository_tokens: Tokens of the repository's source files.
        window: The model's context window, in tokens.
        threshold: ``share * window``: the most the repository may take to be loaded.
        reasons: Why, in sentences.
    """

    model_config = ConfigDict(frozen=True)

    action: Literal["load", "retrieve"]
    whole_task: bool
    repository_tokens: int
    window: int
    threshold: int
    reasons: tuple[str, ...]


def is_whole_repository_task(task: str) -> bool:
    """Whether a task reads as being about the whole repository: a verb such as review,
    summarise or explain with a subject such as the codebase, the architecture, every file.

    Raises:
        ConfigError: ``task`` is not a string.

    Example:
        >>> is_whole_repository_task("Review the whole codebase for unsafe SQL")
        True
        >>> is_whole_repository_task("Fix the session refresh bug in auth")
        False
    """
    string(task, "task")
    return bool(_WHOLE_VERB.search(task) and _WHOLE_SUBJECT.search(task))


def decide_loading(
    task: str,
    root: str | os.PathLike[str] | CodeIndex,
    *,
    window: int,
    share: float = 0.15,
    whole_task: bool | None = None,
) -> LoadDecision:
    """Decide whether to load the whole repository or retrieve from it.

    Args:
        task: The task.
        root: The repository's root folder, or a :class:`CodeIndex` over it.
        window: The model's context window, in tokens.
        share: The share of the window a loaded repository may take.
        whole_task: Whether the task concerns the whole repository; ``None`` reads it from the
            task's words (see :func:`is_whole_repository_task`).

    Raises:
        ConfigError: ``window`` is not positive or ``share`` is not in (0, 1].

    Example:
        >>> import pathlib, tempfile
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (root / "app.py").write_text("def main():\\n    return 0\\n")
        >>> index = CodeIndex(root, db=":memory:")
        >>> decide_loading("Summarise the architecture of this repository", index,
        ...                window=200_000).action
        'load'
        >>> decide_loading("Fix the crash in main", index, window=200_000).action
        'retrieve'
    """
    nonblank(task, "task")
    check_tokens(window, "window")
    if not 0 < number(share, "share") <= 1:
        raise ConfigError(f"share must be in (0, 1], got {share}")
    if whole_task is not None:
        flag(whole_task, "whole_task")
    if isinstance(root, CodeIndex):
        tokens = root.tokens()
    else:
        index = CodeIndex(root)
        try:
            tokens = index.tokens()
        finally:
            index.close()  # made for this call: its connection is not left for the collector
    threshold = int(share * window)
    whole = is_whole_repository_task(task) if whole_task is None else whole_task
    fits = tokens <= threshold
    reasons = [
        f"the repository's source is {tokens} tokens; {share:.0%} of the {window}-token window "
        f"is {threshold} tokens, so it {'fits' if fits else 'does not fit'} there"
    ]
    if whole:
        reasons.append("the task concerns the whole repository")
    else:
        reasons.append("the task needs a part of the repository, smaller than the whole")
    action: Literal["load", "retrieve"] = "load" if whole and fits else "retrieve"
    reasons.append(
        "load it whole"
        if action == "load"
        else "retrieve: " + ("only part of it is needed" if not whole else "it is too large")
    )
    return LoadDecision(
        action=action,
        whole_task=whole,
        repository_tokens=tokens,
        window=window,
        threshold=threshold,
        reasons=tuple(reasons),
    )
