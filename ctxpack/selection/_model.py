"""Selection: what a selector chose from a workspace, in the shape a small model can produce."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from .._internal.jsontext import read_json
from .._internal.options import CheckedModel, FieldErrorModel
from ..cost import Price
from ..errors import ConfigError, SelectionError

__all__ = ["FileRequest", "ItemReason", "Selection", "SelectorUsage"]

_LINES = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")


class FileRequest(FieldErrorModel):
    """A file, or part of one, to show the large model.

    Give ``lines`` (``"48-126"``, or ``"48"`` for one line) or ``match`` (text whose matching
    lines are shown with a few lines around each), or neither for the start of the file.

    Example:
        >>> FileRequest(path="src/auth.ts", lines="48-126").line_range
        (48, 126)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str = Field(min_length=1)
    lines: str | None = None
    match: str | None = None

    @field_validator("lines")
    @classmethod
    def _check_lines(cls, value: str | None) -> str | None:
        if value is None:
            return None
        found = _LINES.fullmatch(value)
        if not found:
            raise ValueError(
                f"lines {value!r} is not a range such as '48-126' or a line such as '48'"
            )
        start, end = int(found.group(1)), int(found.group(2) or found.group(1))
        if start < 1 or end < start:
            raise ValueError(
                f"lines {value!r}: lines count from 1 and a range ends at or after its start"
            )
        return value

    @field_validator("match")
    @classmethod
    def _check_match(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("match is empty; give the text to look for, or null")
        return value

    @model_validator(mode="after")
    def _one_way(self) -> FileRequest:
        if self.lines is not None and self.match is not None:
            raise ValueError(
                f"{self.path}: give either lines or match, not both (two requests for both)"
            )
        return self

    @property
    def line_range(self) -> tuple[int, int] | None:
        """``lines`` as ``(first, last)``, both 1-based and inclusive; ``None`` without lines."""
        if self.lines is None:
            return None
        found = _LINES.fullmatch(self.lines)
        assert found is not None  # checked on construction
        return int(found.group(1)), int(found.group(2) or found.group(1))


class ItemReason(FieldErrorModel):
    """Why one item was included: ``item`` names it as the selection does (a message index or
    id, a tool call id, a file path)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    item: str
    reason: str


class SelectorUsage(FieldErrorModel):
    """The tokens a selector spent choosing, to bill it at its own (small) model's price.

    Attributes:
        model: The selector's model, when it used one.
        calls: Requests made (a retry counts).
        input_tokens: Prompt tokens over all calls, the cached ones included.
        output_tokens: Answer tokens over all calls (reasoning tokens included, as billed).
        cache_read_tokens: Of the prompt tokens, those the provider reported read from its
            prompt cache (OpenAI caches a repeated prefix of 1,024 tokens or more on its own).
        cache_write_tokens: Of the prompt tokens, those written to the cache (Anthropic's, with
            a ``cache_control`` in the selector's ``request_options``).
        cache_write_1h_tokens: Of the cache writes, those with a 1-hour lifetime (a cache_control
            with ``"ttl": "1h"``; Anthropic's ``cache_creation.ephemeral_1h_input_tokens``).
        exact: Whether the counts come from the provider's reported usage (else counted locally).

    Example:
        >>> from ctxpack.cost import Price
        >>> usage = SelectorUsage(model="small", calls=1, input_tokens=40_000, output_tokens=500)
        >>> round(usage.cost(Price(input=0.25, output=1.5, cache_write_5m=0.3125,
        ...                        cache_write_1h=0.5, cache_read=0.025)), 5)
        0.01075
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str | None = None
    calls: int = Field(default=0, ge=0)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)
    cache_write_1h_tokens: int = Field(default=0, ge=0)
    exact: bool = True

    def cost(self, price: Price) -> float:
        """Dollars at ``price``: cache reads at ``cache_read``, cache writes at
        ``cache_write_1h`` for those with a 1-hour lifetime and ``cache_write_5m`` for the
        others, the rest of the input at ``input``."""
        uncached = self.input_tokens - self.cache_read_tokens - self.cache_write_tokens
        minutes = self.cache_write_tokens - self.cache_write_1h_tokens
        return (
            uncached * price.input
            + self.cache_read_tokens * price.cache_read
            + minutes * price.cache_write_5m
            + self.cache_write_1h_tokens * price.cache_write_1h
            + self.output_tokens * price.output
        ) / 1e6

    @model_validator(mode="after")
    def _cached_within_input(self) -> SelectorUsage:
        if self.cache_read_tokens + self.cache_write_tokens > self.input_tokens:
            raise ValueError(
                f"cache_read_tokens ({self.cache_read_tokens}) + cache_write_tokens "
                f"({self.cache_write_tokens}) exceed input_tokens ({self.input_tokens}): the "
                "cached tokens are part of the input"
            )
        if self.cache_write_1h_tokens > self.cache_write_tokens:
            raise ValueError(
                f"cache_write_1h_tokens ({self.cache_write_1h_tokens}) exceed "
                f"cache_write_tokens ({self.cache_write_tokens}): the 1-hour writes are part "
                "of the writes"
            )
        return self

    def __add__(self, other: SelectorUsage) -> SelectorUsage:
        return SelectorUsage(
            model=self.model or other.model,
            calls=self.calls + other.calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cache_write_1h_tokens=self.cache_write_1h_tokens + other.cache_write_1h_tokens,
            exact=self.exact and other.exact,
        )


# The fields a selector (a small model) fills; the others say who chose and at what cost.
ANSWER_FIELDS = (
    "include_messages",
    "include_files",
    "include_tool_results",
    "durable_notes",
    "omit_reason",
    "include_reason",
    "uncertain",
    "reasons",
)


class Selection(CheckedModel):
    """What a selector chose from a :class:`~ctxpack.selection.Workspace` for the large model's next
    step.

    Items are named the way the selector's listing shows them: messages by index (their position in
    ``Workspace.messages``, from 0) or by id, tool results by call id, files by path relative to the
    workspace root. :func:`~ctxpack.selection.apply_selection` turns it into the context to send,
    with a decision per item.

    Attributes:
        include_messages: Message indexes or ids to include.
        include_files: Files or parts of files to include.
        include_tool_results: Tool call ids whose results to include (or artifact ids of stored
            originals, when the workspace has a store).
        durable_notes: Short facts to keep in front of the large model from now on; they stay
            in the workspace across later selections.
        omit_reason: Why the rest was left out.
        include_reason: Why the included items were chosen, when ``reasons`` does not say.
        uncertain: Items the selector is unsure about: included, and labelled as uncertain.
        reasons: Per-item reasons, which win over ``include_reason``.
        selector: Who chose (set by the selector, not by the model).
        goal: What the selection was made for.
        fallback: Why a model selector fell back to another selector, if it did.
        usage: What choosing cost, for a selector that calls a model.

    Example:
        >>> s = Selection.model_validate_json(
        ...     '{"include_messages": [2, 7], "include_files": [{"path": "src/auth.ts",'
        ...     ' "lines": "48-126"}], "omit_reason": "build logs"}'
        ... )
        >>> s.include_files[0].line_range, s.include_messages
        ((48, 126), [2, 7])
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    include_messages: list[int | str] = Field(default_factory=list)
    include_files: list[FileRequest] = Field(default_factory=list)
    include_tool_results: list[str] = Field(default_factory=list)
    durable_notes: list[str] = Field(default_factory=list)
    omit_reason: str = ""
    include_reason: str = ""
    uncertain: list[str] = Field(default_factory=list)
    reasons: list[ItemReason] = Field(default_factory=list)
    selector: str = "manual"
    goal: str | None = None
    fallback: str | None = None
    usage: SelectorUsage | None = None

    @field_validator("include_messages", mode="before")
    @classmethod
    def _no_bools(cls, value: Any) -> Any:
        # Before pydantic's coercion, which would take true for the index 1.
        for item in value if isinstance(value, list) else ():
            if isinstance(item, bool) or (isinstance(item, int) and item < 0):
                raise ValueError(f"{item!r} is not a message index (0 or more)")
        return value

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The JSON schema of a selector's answer, usable as an OpenAI structured-outputs
        ``json_schema`` with ``strict: true`` and as an Anthropic tool's ``input_schema``.

        Strict mode wants every property required and no other property allowed, so optional
        values are ``null``-able instead of absent.
        """
        text = {"type": "string"}
        texts = {"type": "array", "items": text}
        file_request = {
            "type": "object",
            "properties": {
                "path": {**text, "description": "Path relative to the repository root."},
                "lines": {
                    "type": ["string", "null"],
                    "description": "A line range such as '48-126', or null.",
                },
                "match": {
                    "type": ["string", "null"],
                    "description": "Text whose lines are shown with a few around, or null.",
                },
            },
            "required": ["path", "lines", "match"],
            "additionalProperties": False,
        }
        item_reason = {
            "type": "object",
            "properties": {"item": text, "reason": text},
            "required": ["item", "reason"],
            "additionalProperties": False,
        }
        properties: dict[str, Any] = {
            "include_messages": {
                "type": "array",
                "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                "description": "Indexes [n] of the messages listed, or their ids.",
            },
            "include_files": {"type": "array", "items": file_request},
            "include_tool_results": {**texts, "description": "Tool call ids."},
            "durable_notes": {
                **texts,
                "description": "Short facts and decisions to keep for every later step.",
            },
            "omit_reason": {**text, "description": "Why the rest is left out."},
            "include_reason": {**text, "description": "Why the included items matter."},
            "uncertain": {
                **texts,
                "description": "Items you are unsure about (index, call id or path): included.",
            },
            "reasons": {"type": "array", "items": item_reason},
        }
        assert tuple(properties) == ANSWER_FIELDS
        return {
            "type": "object",
            "properties": properties,
            "required": list(ANSWER_FIELDS),
            "additionalProperties": False,
        }

    @classmethod
    def from_answer(cls, answer: str | dict[str, Any]) -> Selection:
        """Validate a selector's answer (JSON text or an already parsed object).

        Only the answer fields are accepted: ``selector``, ``goal``, ``fallback`` and ``usage``
        are set by the selector, never by the model.

        Raises:
            SelectionError: the text is not JSON, or not an object of the schema; the problems
                name each offending field.
        """
        if isinstance(answer, str):
            try:
                data = read_json(answer)
            except ValueError as exc:
                shown = answer if len(answer) <= 80 else answer[:77] + "..."
                raise SelectionError([f"the answer is not JSON ({exc}): {shown!r}"]) from exc
        else:
            data = answer
        if not isinstance(data, dict):
            raise SelectionError([f"the answer is a JSON {type(data).__name__}, not an object"])
        extra = sorted(set(data) - set(ANSWER_FIELDS))
        if extra:
            raise SelectionError(
                [f"unknown field(s) {', '.join(extra)}; fields are {', '.join(ANSWER_FIELDS)}"]
            )
        # Strict structured outputs send null-able fields as null: null means "not given".
        present = {key: value for key, value in data.items() if value is not None}
        try:
            return cls.model_validate(present)
        except ConfigError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            # Every problem, not only the first that ConfigError names: one retry fixes all.
            problems = []
            for err in exc.__cause__.errors():
                where = ".".join(str(part) for part in err["loc"])
                problems.append(f"{where}: {str(err['msg']).removeprefix('Value error, ')}")
            raise SelectionError(problems) from exc.__cause__

    def answer(self) -> dict[str, Any]:
        """The answer fields as a JSON-ready dict (what a model selector would have produced)."""
        return self.model_dump(mode="json", include=set(ANSWER_FIELDS))
