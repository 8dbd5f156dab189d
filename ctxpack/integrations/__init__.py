"""Integrations: ctxpack inside other software, above packing and the session.

- :mod:`ctxpack.integrations.clients`: ``wrap_openai()``, ``wrap_anthropic()``, the official SDK
  clients packing every request first;
- :mod:`ctxpack.integrations.langchain_agent`: ``PackingMiddleware`` for LangChain v1 agents
  (needs ``langchain``; imported from its module, so that this package needs nothing optional).

The wire formats these send are converted by :mod:`ctxpack.adapters`, below packing.
"""

from .clients import PackedClient as PackedClient
from .clients import wrap_anthropic as wrap_anthropic
from .clients import wrap_openai as wrap_openai

__all__ = ["PackedClient", "wrap_anthropic", "wrap_openai"]
