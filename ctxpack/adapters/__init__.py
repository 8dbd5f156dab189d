"""Provider adapters: convert between ctxpack messages and OpenAI, Anthropic and LangChain."""

from .openai import from_openai as from_openai
from .openai import to_openai as to_openai

__all__ = ["from_openai", "to_openai"]
