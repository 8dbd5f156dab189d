"""ModelSelector: a small model chooses, through structured outputs or a forced tool call."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._internal.arguments import nonblank, shown
from .._internal.arguments import tokens as check_tokens
from .._internal.paths import shown_path
from .._internal.tool_schemas import compact_json
from ..adapters import from_anthropic
from ..errors import ConfigError, SelectionError
from ..providers import (
    Provider,
    provider_from_client,
    read_field,
    response_answer,
    response_cache_usage,
    response_usage,
    tool_definition,
)
from ..tokens import TokenCounter, tool_definition_tokens
from ._apply import check_selection
from ._lexical_selector import LexicalSelector, Selector
from ._model import Selection, SelectorUsage
from ._search import keywords
from ._workspace import Workspace, check_workspace

__all__ = ["SYSTEM_PROMPT", "TOOL_NAME", "ModelSelector", "selection_prompt"]


#: The name of the structured-output schema (OpenAI) and of the forced tool (Anthropic).
TOOL_NAME = "select_context"

SYSTEM_PROMPT = """\
You choose what a large model reads before its next step. You see a numbered listing of the \
agent's workspace: its messages (with tool calls and their results), candidate files, and the \
durable notes so far. Answer with JSON matching the schema, and nothing else.

Rules:
- Include what the next step needs: the messages by their [index], tool results by call id, \
files by path with a line range ("48-126") or a match (text whose lines are shown in context).
- Prefer precise file passages to whole files, and recent evidence to stale versions of it.
- User instructions and constraints are always kept for you: you never need to list them, and \
you must never rephrase them.
- When unsure whether something matters, put it in "uncertain": it will be included.
- durable_notes: short facts or decisions that must survive every later step (for example \
"The user rejected cookie-based sessions."); leave empty when there is nothing new.
- Say in omit_reason why the rest is left out, and per item in reasons when it helps.
- Use only indexes, call ids and paths that appear in the listing."""


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def selection_prompt(
    workspace: Workspace,
    goal: str,
    *,
    preview_chars: int = 160,
    candidate_files: int = 20,
    listed_files: int = 200,
) -> str:
    """The user prompt a model selector sends: the goal and a compact numbered listing of the
    workspace (each message's index, role, tokens and start; tool calls with their ids; the
    durable notes; the best files for the goal, then other files).

    Example:
        >>> ws = Workspace([{"role": "user", "content": "Fix the login bug."}])
        >>> print(selection_prompt(ws, "login"))
        Goal: login
        <BLANKLINE>
        Messages ([index] role, tokens: start of the text):
        [0] user, 9 tokens: Fix the login bug.
    """
    check_workspace(workspace, goal)
    check_tokens(preview_chars, "preview_chars", unit="characters")
    check_tokens(candidate_files, "candidate_files", minimum=0, unit="files")
    check_tokens(listed_files, "listed_files", minimum=0, unit="files")
    counter = workspace.counter
    lines = [f"Goal: {goal}", "", "Messages ([index] role, tokens: start of the text):"]
    for i, msg in enumerate(workspace.messages):
        head = f"[{i}] {msg.role}"
        if msg.role == "tool":
            head += f" result of {msg.tool_call_id}"
        head += f", {counter.count_message(msg)} tokens"
        for call in msg.tool_calls or ():
            head += (
                f", calls {call.id} {call.function.name}({_one_line(call.function.arguments, 80)})"
            )
        text = _one_line(msg.text, preview_chars)
        lines.append(f"{head}: {text}" if text else head)
    if workspace.notes:
        lines += ["", "Durable notes so far:", *(f"- {n}" for n in workspace.notes)]
    if workspace.root is not None:
        files = workspace.files()
        shown: list[str] = []
        if files and candidate_files:
            words = keywords(goal)
            hits = workspace.searcher().search(words, most=candidate_files)
            if hits:
                lines += ["", "Candidate files (path: lines matching the goal's words):"]
                for hit in hits:
                    counts = ", ".join(f"{w} x{n}" for w, n in sorted(hit.counts.items()))
                    lines.append(f"{shown_path(hit.path)}: {counts}")
                    shown.append(hit.path)
        others = [f for f in files if f not in shown]
        if others:
            rest = len(others) - listed_files
            lines += [
                "",
                f"Other files ({len(others)}):",
                *map(shown_path, others[:listed_files]),
            ]
            if rest > 0:
                lines.append(f"... and {rest} more")
    return "\n".join(lines)


class ModelSelector:
    """A small model chooses the large model's context, with a validated, structured answer.

    The model gets :data:`SYSTEM_PROMPT` and :func:`selection_prompt` and must answer with a
    :class:`~ctxpack.selection.Selection`: through structured outputs (``response_format`` with the
    JSON schema, ``strict``) on an OpenAI-compatible client, or through a forced tool call
    (``tool_choice`` naming :data:`TOOL_NAME`) on an Anthropic client. The answer is validated, and
    checked against the workspace (every index, call id and path must exist, every range fit its
    file); when it fails, the model is asked once more with the problems, and if the second answer
    fails too (or a call raises), the ``fallback`` selector chooses instead and the selection
    records why. The tokens spent are in ``selection.usage``: the provider's reported usage when it
    gives one, else counted locally (``exact=False``).

    Args:
        client: An ``openai.OpenAI``-like client (``client.chat.completions.create``) or an
            ``anthropic.Anthropic``-like client (``client.messages.create``).
        model: The small model's name.
        provider: ``"openai"`` or ``"anthropic"``; detected from the client when ``None``.
        fallback: The selector used when the model fails; :class:`LexicalSelector` by default.
        max_tokens: The answer's token limit (Anthropic requires one; sent to OpenAI as
            ``max_completion_tokens`` only when given).
        request_options: Extra arguments for every request (``temperature``, ``extra_headers``...).
        preview_chars: Characters of each message shown in the listing.

    Example:
        >>> class Fake:  # stands for openai.OpenAI(); see the docs for a real client
        ...     class chat:
        ...         class completions:
        ...             @staticmethod
        ...             def create(**request):
        ...                 answer = '{"include_messages": [0], "omit_reason": "nothing else"}'
        ...                 return {"choices": [{"message": {"content": answer}}],
        ...                         "usage": {"prompt_tokens": 310, "completion_tokens": 12}}
        >>> ws = Workspace([{"role": "user", "content": "Fix the login bug."}])
        >>> s = ModelSelector(Fake(), model="small-model")(ws, "login")
        >>> s.include_messages, s.usage.input_tokens, s.selector
        ([0], 310, 'ModelSelector(small-model)')
    """

    def __init__(
        self,
        client: Any,
        *,
        model: str,
        provider: Provider | None = None,
        fallback: Selector | None = None,
        max_tokens: int | None = None,
        request_options: Mapping[str, Any] | None = None,
        preview_chars: int = 160,
    ) -> None:
        if provider is None:
            provider = provider_from_client(client)
        elif provider not in ("openai", "anthropic"):
            raise ConfigError(f"provider must be 'openai' or 'anthropic', got {shown(provider)}")
        self.client = client
        # Sent as the request's model and shown in every decision: None would reach the API.
        self.model = nonblank(model, "model")
        self.provider: Provider = provider
        if fallback is not None and not callable(fallback):
            raise ConfigError(
                "fallback must be a selector, callable as fallback(workspace, goal), got "
                f"{type(fallback).__name__}"
            )
        self.fallback: Selector = fallback if fallback is not None else LexicalSelector()
        self.max_tokens = max_tokens
        if request_options is not None and not isinstance(request_options, Mapping):
            raise ConfigError(
                "request_options must be a mapping of request fields, got "
                f"{type(request_options).__name__}"
            )
        self.request_options = dict(request_options or {})
        self.preview_chars = check_tokens(preview_chars, "preview_chars", unit="characters")
        if max_tokens is not None:
            check_tokens(max_tokens, "max_tokens")

    def __repr__(self) -> str:
        return f"ModelSelector(model={self.model!r}, provider={self.provider!r})"

    @property
    def name(self) -> str:
        """How selections and decisions name this selector: ``ModelSelector(<model>)``."""
        return f"ModelSelector({self.model})"

    def __call__(self, workspace: Workspace, goal: str, /) -> Selection:
        prompt = selection_prompt(workspace, goal, preview_chars=self.preview_chars)
        counter = workspace.counter
        turns: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        usage = SelectorUsage(model=self.model)
        problem = ""
        attempts = 0
        for attempt in (1, 2):
            attempts = attempt
            try:
                answer, raw, spent = self._ask(turns, counter)
            except Exception as exc:  # the provider failed: fall back, and say why
                problem = f"the call failed ({type(exc).__name__}: {exc})"
                break
            usage = usage + spent
            try:
                selection = Selection.from_answer(answer)
                check_selection(selection, workspace)
            except SelectionError as exc:
                problem = "; ".join(exc.problems)
                if attempt == 1:
                    turns += self._retry_turns(raw, answer, problem)
                continue
            return selection.model_copy(
                update={"selector": self.name, "goal": goal, "usage": usage}
            )
        chosen = self.fallback(workspace, goal)
        if not isinstance(chosen, Selection):
            raise ConfigError(
                f"fallback must return a Selection, got {type(chosen).__name__} from "
                f"{self.fallback!r}"
            )
        why = f"{self.name} failed after {attempts} attempt(s): {problem}"
        return chosen.model_copy(
            update={
                "selector": f"{chosen.selector} (fallback)",
                "goal": goal,
                "fallback": why,
                "usage": usage,
            }
        )

    # -- the providers -------------------------------------------------------------------

    def request(self, turns: list[dict[str, Any]]) -> dict[str, Any]:
        """The keyword arguments of one request, for the provider (what tests snapshot)."""
        schema = Selection.json_schema()
        if self.provider == "openai":
            request: dict[str, Any] = {
                "model": self.model,
                "messages": [{"role": "system", "content": SYSTEM_PROMPT}, *turns],
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": TOOL_NAME, "schema": schema, "strict": True},
                },
            }
            if self.max_tokens is not None:
                request["max_completion_tokens"] = self.max_tokens
        else:
            request = {
                "model": self.model,
                "max_tokens": self.max_tokens or 2048,
                "system": SYSTEM_PROMPT,
                "messages": turns,
                "tools": [
                    tool_definition(
                        TOOL_NAME,
                        "Record which workspace items the large model reads next.",
                        schema,
                        "anthropic",
                    )
                ],
                "tool_choice": {"type": "tool", "name": TOOL_NAME},
            }
        return {**request, **self.request_options}

    def _ask(
        self, turns: list[dict[str, Any]], counter: TokenCounter
    ) -> tuple[str | dict[str, Any], Any, SelectorUsage]:
        request = self.request(turns)
        if self.provider == "openai":
            response = self.client.chat.completions.create(**request)
        else:
            response = self.client.messages.create(**request)
        answer = response_answer(response, self.provider, TOOL_NAME)
        n_in, n_out = response_usage(response, self.provider)
        if isinstance(n_in, int) and isinstance(n_out, int):
            read, written, hour = response_cache_usage(response, self.provider)
            # Within the prompt, whatever a provider (or a proxy) reports.
            read = min(read, n_in)
            written = min(written, n_in - read)
            spent = SelectorUsage(
                model=self.model,
                calls=1,
                input_tokens=n_in,
                output_tokens=n_out,
                cache_read_tokens=read,
                cache_write_tokens=written,
                cache_write_1h_tokens=min(hour, written),
            )
        else:
            # No usage reported: count what was sent and received.
            text = answer if isinstance(answer, str) else json.dumps(answer)
            spent = SelectorUsage(
                model=self.model,
                calls=1,
                input_tokens=self._sent_tokens(request, counter),
                output_tokens=counter.count(text),
                exact=False,
            )
        return answer, response, spent

    def _sent_tokens(self, request: Mapping[str, Any], counter: TokenCounter) -> int:
        """A request's prompt as sent: its messages with their framing, and the answer's
        schema (Anthropic's forced tool, with its tool-use prompt; OpenAI's output format)."""
        if self.provider == "anthropic":
            history = from_anthropic(request["messages"], system=request.get("system"))
            tools = request.get("tools") or []
            return counter.count_messages(history) + tool_definition_tokens(tools, counter)
        output = read_field(request.get("response_format"), "json_schema")
        schema = counter.count(compact_json(output)) if isinstance(output, Mapping) else 0
        return counter.count_messages(request["messages"]) + schema

    def _retry_turns(
        self, raw: Any, answer: str | dict[str, Any], problem: str
    ) -> list[dict[str, Any]]:
        """The turns that show the model its answer and what was wrong with it."""
        fix = (
            f"That answer is not valid: {problem}. Answer again, following the schema and using "
            "only indexes, call ids and paths from the listing."
        )
        if self.provider == "anthropic":
            for block in read_field(raw, "content") or []:
                if read_field(block, "type") == "tool_use":
                    use = {
                        "type": "tool_use",
                        "id": read_field(block, "id"),
                        "name": read_field(block, "name"),
                        "input": read_field(block, "input"),
                    }
                    result = {
                        "type": "tool_result",
                        "tool_use_id": read_field(block, "id"),
                        "content": fix,
                        "is_error": True,
                    }
                    return [
                        {"role": "assistant", "content": [use]},
                        {"role": "user", "content": [result]},
                    ]
        text = answer if isinstance(answer, str) else json.dumps(answer)
        return [
            {"role": "assistant", "content": text or "(empty)"},
            {"role": "user", "content": fix},
        ]
