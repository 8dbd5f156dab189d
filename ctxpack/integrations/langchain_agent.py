"""A LangChain v1 agent middleware that packs every model request with ctxpack.

Beside LangChain's own ``SummarizationMiddleware`` (which rewrites the agent's state) and
``ContextEditingMiddleware`` (which clears old tool results), :class:`PackingMiddleware` packs
what the model is about to see: the system message and the messages of the request, under a token
budget, keeping tool exchanges whole and recording every cut. The agent's state is left as it is:
the full history stays in the graph, and each model call sees a packed view of it.

Needs ``langchain`` v1 (``pip install 'ctxpack[langchain]'``); importing this module without it
raises an ``ImportError`` that says so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from .._internal.budgets import check_limits, pack_limits
from ..adapters.langchain import from_langchain
from ..errors import ConfigError
from ..packing import pack
from ..pipeline import Stage
from ..providers import Provider, check_provider, provider_from_chat_model
from ..result import PackResult
from ..tokens import CounterLike, get_counter

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
    from langchain.agents.middleware.types import ModelResponse
    from langchain_core.messages import SystemMessage
    from langchain_core.utils.function_calling import convert_to_openai_tool
except ImportError as exc:  # pragma: no cover - exercised only without langchain
    raise ImportError(
        "ctxpack's agent middleware needs langchain v1; install it with "
        "pip install 'ctxpack[langchain]' (or pip install 'langchain>=1')"
    ) from exc

__all__ = ["PackingMiddleware"]


class PackingMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Pack each model request of a LangChain agent under a token budget.

    The request's system message and messages are packed by :func:`ctxpack.pack` (the system
    message and the current question always kept, tool calls and their results kept or dropped
    together, the original order kept) so that they, the tool definitions and the reply fit the
    context ``window``: the prompt never exceeds ``window - reserve - max_tokens`` tokens,
    ``max_tokens`` being the request's ``model_settings["max_tokens"]`` or the chat model's
    ``max_tokens`` (0 when neither is set). ``budget`` caps the prompt alone, as in
    :func:`ctxpack.pack`; with both, the tighter limit holds. Messages that are kept are the
    agent's own objects, unchanged.

    Args:
        budget: The most the prompt may take, as in :func:`ctxpack.pack`, whatever the reply
            asks. Given alone it warns (:class:`FutureWarning`): it used to mean the window.
        window: The model's context window: tokens the prompt and the reply may take together.
        reserve: Tokens to leave free beyond ``max_tokens``.
        model: An OpenAI model name to count with (its exact tokenizer); see
            :func:`ctxpack.get_counter`. Neither ``model`` nor ``counter``: ``cl100k_base``.
        counter: A token counter instead.
        pipeline: The stages to run; :func:`ctxpack.default_pipeline` when ``None``.
        provider: Whose rules the packed request follows (``"anthropic"``: a user turn first,
            alternating turns). By default ``"anthropic"`` when the chat model's class name says
            Anthropic, else ``"openai"``.

    Attributes:
        last_result: The last request's :class:`~ctxpack.PackResult` (``None`` before the
            first): what was kept, dropped or compressed, and why.

    Example:
        >>> from langchain.agents import create_agent
        >>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> packing = PackingMiddleware(window=200, model="gpt-4")
        >>> model = GenericFakeChatModel(messages=iter([AIMessage("Hi!")]))
        >>> agent = create_agent(model, system_prompt="Be brief.", middleware=[packing])
        >>> history = [HumanMessage("tell me about cats " * 80), AIMessage("Cats purr."),
        ...            HumanMessage("Say hi.")]
        >>> agent.invoke({"messages": history})["messages"][-1].content
        'Hi!'
        >>> [m.role for m in packing.last_result.messages], packing.last_result.tokens <= 200
        (['system', 'assistant', 'user'], True)
    """

    def __init__(
        self,
        budget: int | None = None,
        *,
        window: int | None = None,
        reserve: int = 0,
        model: str | None = None,
        counter: CounterLike | None = None,
        pipeline: Stage | None = None,
        provider: Provider | None = None,
    ) -> None:
        super().__init__()
        check_limits("PackingMiddleware()", window, budget, reserve)
        self.window = window
        self.budget = budget
        self.reserve = reserve
        self.counter = get_counter(model, counter)
        if pipeline is not None and not callable(pipeline):
            raise ConfigError(f"pipeline must be a stage, got {type(pipeline).__name__}")
        self.pipeline = pipeline
        self.provider = None if provider is None else check_provider(provider)
        self.last_result: PackResult | None = None

    def pack_request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """The request with its system message and messages packed (a new request).

        Raises:
            ConfigError: ``max_tokens`` and ``reserve`` leave no room in the window.
            BudgetExceededError: the system message and the current question alone do not fit.
        """
        if not hasattr(request, "messages"):
            raise ConfigError(
                f"request must be LangChain's ModelRequest, got {type(request).__name__}"
            )
        if not request.messages:
            return request
        history: list[Any] = list(request.messages)
        if request.system_message is not None:
            history.insert(0, request.system_message)
        budget, reserve = pack_limits(self.window, self.budget, self.reserve, _reply_room(request))
        result = pack(
            from_langchain(history),
            budget=budget,
            reserve=reserve,
            counter=self.counter,
            tools=_tool_definitions(request.tools),
            pipeline=self.pipeline,
            provider=self.provider or provider_from_chat_model(request.model),
        )
        self.last_result = result
        packed = result.to_langchain()
        system: SystemMessage | None = None
        if request.system_message is not None and packed and isinstance(packed[0], SystemMessage):
            system = packed.pop(0)
        return request.override(messages=packed, system_message=system)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Pack the request, then call the model."""
        return handler(self.pack_request(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Pack the request, then call the model (async agents)."""
        return await handler(self.pack_request(request))


def _reply_room(request: ModelRequest[Any]) -> int:
    for value in (
        request.model_settings.get("max_tokens"),
        getattr(request.model, "max_tokens", None),
    ):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0


def _tool_definitions(tools: Sequence[Any]) -> list[Mapping[str, Any]] | None:
    """The request's tools as OpenAI definitions, to count them (LangChain sends them so)."""
    if not tools:
        return None
    out: list[Mapping[str, Any]] = []
    for tool in tools:
        if isinstance(tool, Mapping) and ("input_schema" in tool or "function" in tool):
            out.append(tool)  # already a provider definition
        else:
            out.append(convert_to_openai_tool(tool))
    return out
