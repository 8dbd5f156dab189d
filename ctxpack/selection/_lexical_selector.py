"""LexicalSelector: choose without a model, from ctxpack's relevance scoring and a file search."""

from __future__ import annotations

import re
from typing import ClassVar, Protocol, runtime_checkable

from pydantic import Field

from ..errors import BudgetExceededError
from ..packing import default_pipeline, pack
from ..stages import StageModel, exchange_units
from ._model import FileRequest, ItemReason, Selection
from ._search import keywords
from ._workspace import Workspace, check_workspace

__all__ = ["LexicalSelector", "Selector"]


@runtime_checkable
class Selector(Protocol):
    """Anything that chooses from a workspace for a goal: ``selector(workspace, goal)``."""

    def __call__(self, workspace: Workspace, goal: str, /) -> Selection: ...


# A path-like token in a goal: "src/auth.ts", "tests/test_x.py:88".
_PATHLIKE = re.compile(r"[\w.\-]+(?:/[\w.\-]+)+|[\w\-]+\.[A-Za-z]{1,5}\b")


class LexicalSelector(StageModel):
    """Choose messages and file passages for a goal, offline, with no model.

    Messages: those :func:`ctxpack.pack` keeps for the goal under ``budget`` tokens without
    compression (the relevance scoring: BM25 with related words, neighbouring turns; the recent
    turns; the system prompt and the last user message; tool exchanges whole), the last
    ``recent`` messages always among them (when they alone exceed the budget, they are ranked
    like the others, and added after). Tool results are named by call id. Files (when the
    workspace has a root): files the goal names by path, then the ``max_files`` best files of a
    search of the goal's keywords (ripgrep when installed, else Python), each shown around the
    keyword it matches on the fewest lines.

    Args:
        budget: Tokens the selected messages may take.
        recent: The last this many messages are always selected.
        max_files: At most this many files found by search.

    Example:
        >>> ws = Workspace([
        ...     {"role": "user", "content": "The deploy fails with error E42."},
        ...     {"role": "assistant", "content": "E42 means the build image is missing."},
        ...     {"role": "user", "content": "Unrelated: how do I change my invoice address?"},
        ...     {"role": "assistant", "content": "Under Billing, then Profile."},
        ...     {"role": "user", "content": "Thanks. Anything else?"},
        ... ])
        >>> LexicalSelector(budget=40, recent=1)(ws, "Why error E42?").include_messages
        [0, 1, 4]
    """

    name: ClassVar[str] = "lexical"

    budget: int = Field(default=16_000, ge=1)
    recent: int = Field(default=4, ge=0)
    max_files: int = Field(default=3, ge=0)

    def __call__(self, workspace: Workspace, goal: str, /) -> Selection:
        check_workspace(workspace, goal)
        messages = workspace.messages
        reasons = self._messages(workspace, goal) if messages else {}
        include_messages: list[int | str] = []
        include_tool_results: list[str] = []
        items: list[ItemReason] = []
        calls = workspace.calls()
        for i in sorted(reasons):
            msg = messages[i]
            # By call id when that id names this result: an id the agent reused names its
            # last call, so an earlier result of it goes by index, with its call.
            if (
                msg.role == "tool"
                and msg.tool_call_id
                and calls.get(msg.tool_call_id, (0, -1))[1] == i
            ):
                include_tool_results.append(msg.tool_call_id)
                items.append(ItemReason(item=msg.tool_call_id, reason=reasons[i]))
            else:
                include_messages.append(i)
                items.append(ItemReason(item=_message_name(workspace, i), reason=reasons[i]))
        files = self._files(workspace, goal, items)
        return Selection(
            include_messages=include_messages,
            include_tool_results=include_tool_results,
            include_files=files,
            include_reason="relevant to the goal, or recent",
            omit_reason=(
                f"not among the messages most relevant to the goal within {self.budget} tokens, "
                f"nor among the last {self.recent}"
            ),
            reasons=items,
            selector="LexicalSelector",
            goal=goal,
        )

    def _messages(self, workspace: Workspace, goal: str) -> dict[int, str]:
        """The messages chosen, by index, with why: those pack() keeps, and the recent ones."""
        messages = workspace.messages
        reasons: dict[int, str] = {}
        # The recent messages are pinned, so that they count within the budget; but not a
        # tool result no request can carry (its call is not there, or an earlier result
        # answers it): pack() would have to keep it, and cannot.
        first_recent = max(0, len(messages) - self.recent)
        units = exchange_units(messages)
        stray = {*units.orphans, *units.repeats}
        pinned = [
            m.model_copy(update={"pinned": True}) if i >= first_recent and i not in stray else m
            for i, m in enumerate(messages)
        ]
        result = None
        for candidates in (pinned, messages):
            try:
                result = pack(
                    candidates,
                    budget=self.budget,
                    counter=workspace.counter,
                    query=goal,
                    pipeline=default_pipeline().without("compress"),
                )
                break
            except BudgetExceededError:
                continue  # the recent messages alone overflow: ranked like the others
        if result is not None:
            position = {m.id: i for i, m in enumerate(messages)}
            for msg in result.messages:
                i = position[msg.id]
                if i >= first_recent and not messages[i].pinned:
                    continue  # pinned here for being recent: pack() would say "pinned"
                said = [d for d in result.decisions_for(msg.id) if d.stage == "relevance"]
                said = said or result.decisions_for(msg.id)
                reasons[i] = said[0].reason if said else "kept by pack()"
        for i in range(first_recent, len(messages)):
            if i not in stray:
                reasons.setdefault(i, f"one of the last {self.recent} messages")
        return reasons

    def _files(self, workspace: Workspace, goal: str, items: list[ItemReason]) -> list[FileRequest]:
        if workspace.root is None:
            return []
        chosen: list[FileRequest] = []
        listed = set(workspace.files())
        for token in _PATHLIKE.findall(goal):
            path = token.strip("./") if token.startswith("./") else token
            if path in listed and all(f.path != path for f in chosen):
                chosen.append(FileRequest(path=path))
                items.append(ItemReason(item=path, reason="the goal names this file"))
        if not self.max_files:
            return chosen
        words = keywords(goal)
        found = 0
        for hit in workspace.searcher().search(words, most=self.max_files + len(chosen)):
            if found == self.max_files:
                break
            if any(f.path == hit.path for f in chosen):
                continue
            found += 1
            # Shown around its most distinctive keyword: the one fewest lines of it match,
            # among those it matches.
            best = min(hit.counts, key=lambda w: (hit.counts[w], words.index(w)))
            chosen.append(FileRequest(path=hit.path, match=best))
            counts = ", ".join(f"{w} x{n}" for w, n in sorted(hit.counts.items()))
            items.append(
                ItemReason(item=hit.path, reason=f"lines matching the goal's words: {counts}")
            )
        return chosen


def _message_name(workspace: Workspace, index: int) -> str:
    """How the answer names message ``index``: by its [index], as the listing a model selector
    reads shows it (the answer stands for that selector's, and is billed as such), unless that
    text names another message by id ("3" is read as the id "3" first); then by its id."""
    name = str(index)
    return name if workspace.index_of(name) == index else workspace.messages[index].id
