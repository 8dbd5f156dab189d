"""Tokens of a request's structured output format: the provider adds its schema to the prompt.

``response_format`` (Chat Completions), ``text.format`` / ``text_format`` (the Responses API),
``output_config.format`` / ``output_format`` (Anthropic): each is given as the API's dict or as
a pydantic model the SDK turns into a JSON schema. Neither provider publishes how it renders the
schema into the prompt, so it is counted as its compact JSON with its name and description, an
estimate of the same kind as a tool definition's with no published rendering.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..providers import Provider

__all__: list[str] = []

# What each API calls the argument, in the order the SDK reads them: a model class first.
_OPENAI = ("response_format",)
_RESPONSES = ("text_format", "text")
_ANTHROPIC = ("output_format", "output_config")


def output_format(kwargs: Mapping[str, Any], *, provider: Provider, responses: bool) -> str | None:
    """The schema a request asks its reply to follow, as the text to count; ``None`` for none
    (plain text, or JSON mode without a schema)."""
    keys = _ANTHROPIC if provider == "anthropic" else _RESPONSES if responses else _OPENAI
    for key in keys:
        value = kwargs.get(key)
        if isinstance(value, type):
            return _compact(_model_schema(value))
        if isinstance(value, Mapping):
            if key in ("text", "output_config"):
                value = value.get("format")
                if not isinstance(value, Mapping):
                    continue
            # Chat Completions nests the schema under "json_schema"; the others do not.
            nested = value.get("json_schema")
            described = nested if isinstance(nested, Mapping) else value
            shown = {k: described[k] for k in ("name", "description", "schema") if k in described}
            return _compact(shown) if "schema" in shown else None
    return None


def strategy_format(strategy: Any) -> str | None:
    """A LangChain agent's ``response_format`` (``ToolStrategy``, ``ProviderStrategy``,
    ``AutoStrategy``) as the text to count: its schema, which reaches the model as a tool or as
    the provider's output format; ``None`` for none."""
    schema = getattr(strategy, "schema", None)
    if schema is None:
        return None
    return _compact(schema if isinstance(schema, Mapping) else _model_schema(schema))


def _model_schema(model: Any) -> Any:
    """The JSON schema of a pydantic model (or any type pydantic reads), as the SDKs send it."""
    from pydantic import TypeAdapter

    try:
        return TypeAdapter(model).json_schema()
    except Exception:  # a type pydantic cannot read is the SDK's to refuse
        return {}


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
