"""Wire formats: convert between ctxpack messages and OpenAI, Anthropic and LangChain, and check
a payload before it is sent.

The adapters sit below packing: they know messages and nothing of stages or sessions. What uses
them from above (the SDK client wrappers, the LangChain agent middleware) is in
:mod:`ctxpack.integrations`; which provider a model, client or payload belongs to is
:mod:`ctxpack.providers`. The LangChain adapter imports ``langchain-core`` only when called, so
ctxpack works without it.
"""

from ..sdk import RESPONSES_META as _RESPONSES_META
from ._anthropic import META as _ANTHROPIC_META
from ._anthropic import AnthropicPayload as AnthropicPayload
from ._anthropic import from_anthropic as from_anthropic
from ._anthropic import to_anthropic as to_anthropic
from ._converted import has_anthropic_blocks as has_anthropic_blocks
from ._converted import provider_from_message as provider_from_message
from ._openai import from_openai as from_openai
from ._openai import to_openai as to_openai
from ._unsent import unsent_reasoning as unsent_reasoning
from ._unsent import unsent_reasoning_parts as unsent_reasoning_parts
from ._validate import ANTHROPIC_BLOCKS as ANTHROPIC_BLOCKS
from ._validate import OPENAI_PART_TYPES as OPENAI_PART_TYPES
from ._validate import check_openai_message as check_openai_message
from ._validate import validate_anthropic as validate_anthropic
from ._validate import validate_openai as validate_openai
from .langchain import META as _LANGCHAIN_META
from .langchain import from_langchain as from_langchain
from .langchain import to_langchain as to_langchain
from .read import NO_CONTENT as _NO_CONTENT

SENT_METADATA = (_ANTHROPIC_META, _RESPONSES_META, _LANGCHAIN_META, _NO_CONTENT)
"""The metadata keys whose values the adapters write back into a request (Anthropic's block
details, a Responses API item, a LangChain message's fields, an OpenAI turn sent without
content); the rest of a message's metadata is the caller's, never sent."""

__all__ = [
    "AnthropicPayload",
    "from_anthropic",
    "from_langchain",
    "from_openai",
    "to_anthropic",
    "to_langchain",
    "to_openai",
    "validate_anthropic",
    "validate_openai",
]
