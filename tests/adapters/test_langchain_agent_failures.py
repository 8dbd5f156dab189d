"""SessionMiddleware when an agent step fails: a model call that raises (retried by LangChain's
middleware, by the checkpointer, or replaced by a fallback), a tool that raises, a run
interrupted for a human and resumed, runs of one thread at once, an async run cancelled. After
each, the thread's session holds every message once and the next run works."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, cast

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import (
    HumanInTheLoopMiddleware,
    ModelFallbackMiddleware,
    ModelRetryMiddleware,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import PrivateAttr

from ctxpack import ConfigError
from ctxpack.filters import RETRIEVE_TOOL_NAME
from ctxpack.integrations.langchain_agent import SessionMiddleware

SYSTEM = "You are a travel agent."


class RateLimitError(Exception):
    """What a provider's client raises for a 429."""


class ScriptedModel(BaseChatModel):
    """Replies, or raises, as scripted; records the texts of every call's messages."""

    script: list[Any]
    delay: float = 0.0
    _calls: list[list[str]] = PrivateAttr(default_factory=list)
    _started: asyncio.Event | None = PrivateAttr(default=None)

    @property
    def calls(self) -> list[list[str]]:
        return self._calls

    def started_calls(self) -> asyncio.Event:
        """An event set as each later async call starts, before its ``delay``: for a test that
        acts in the middle of a call (made in the event loop that awaits it)."""
        self._started = asyncio.Event()
        return self._started

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _step(self, messages: list[BaseMessage]) -> ChatResult:
        self.calls.append([m.text for m in messages])
        step = self.script.pop(0)
        if isinstance(step, BaseException):
            raise step
        return ChatResult(generations=[ChatGeneration(message=step)])

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        time.sleep(self.delay)
        return self._step(messages)

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        if self._started is not None:
            self._started.set()
        await asyncio.sleep(self.delay)
        return self._step(messages)

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self


@tool
def forecast(city: str) -> str:
    """The weather forecast of a city."""
    return f"{city}: rain, 4 degrees. " * 40


@tool
def book(city: str) -> str:
    """Book a hotel."""
    raise RuntimeError("the booking service is down")


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def call(name: str, args: dict[str, Any], ident: str = "c1") -> AIMessage:
    return AIMessage(
        "", tool_calls=[{"name": name, "args": args, "id": ident, "type": "tool_call"}]
    )


def held(sessions: SessionMiddleware, thread_id: str | int) -> list[tuple[str, str]]:
    return [(m.role, m.text[:12]) for m in sessions.session(thread_id).transcript()]


def agent_with(model: ScriptedModel, *middleware: Any) -> Any:
    return create_agent(
        model,
        tools=[forecast, book],
        system_prompt=SYSTEM,
        middleware=list(middleware),
        checkpointer=InMemorySaver(),
    )


def test_a_failed_model_call_resumed_by_the_checkpointer_gives_nothing_twice() -> None:
    sessions = SessionMiddleware(window=4_000, model="gpt-4")
    model = ScriptedModel(
        script=[RateLimitError("429"), AIMessage("Pack a coat."), AIMessage("Ok.")]
    )
    agent = agent_with(model, sessions)
    with pytest.raises(RateLimitError):
        agent.invoke({"messages": [HumanMessage("Oslo?")]}, thread("t"))
    assert agent.invoke(None, thread("t"))["messages"][-1].text == "Pack a coat."
    agent.invoke({"messages": [HumanMessage("Bergen?")]}, thread("t"))
    assert held(sessions, "t") == [
        ("system", SYSTEM[:12]),
        ("user", "Oslo?"),
        ("assistant", "Pack a coat."),
        ("user", "Bergen?"),
    ]
    assert model.calls == [[SYSTEM, "Oslo?"]] * 2 + [[SYSTEM, "Oslo?", "Pack a coat.", "Bergen?"]]


@pytest.mark.parametrize("outer", [True, False], ids=["retry-outside", "retry-inside"])
def test_model_retries_around_or_inside_the_session_give_nothing_twice(outer: bool) -> None:
    sessions = SessionMiddleware(window=4_000, model="gpt-4")
    model = ScriptedModel(script=[RateLimitError("429")] * 2 + [AIMessage("A."), AIMessage("B.")])
    retry = ModelRetryMiddleware(
        max_retries=3, retry_on=(RateLimitError,), initial_delay=0, jitter=False
    )
    agent = agent_with(model, *([retry, sessions] if outer else [sessions, retry]))
    agent.invoke({"messages": [HumanMessage("Oslo?")]}, thread("t"))
    agent.invoke({"messages": [HumanMessage("Bergen?")]}, thread("t"))
    assert [m for _, m in held(sessions, "t")] == [SYSTEM[:12], "Oslo?", "A.", "Bergen?"]
    assert model.calls[-1] == [SYSTEM, "Oslo?", "A.", "Bergen?"]


@pytest.mark.parametrize("outer", [True, False], ids=["fallback-outside", "fallback-inside"])
def test_a_fallback_model_is_sent_what_the_session_renders(outer: bool) -> None:
    sessions = SessionMiddleware(window=4_000, model="gpt-4")
    model = ScriptedModel(script=[RateLimitError("429"), AIMessage("Second.")])
    fallback = ScriptedModel(script=[AIMessage("First.")])
    middleware = ModelFallbackMiddleware(fallback)
    agent = agent_with(model, *([middleware, sessions] if outer else [sessions, middleware]))
    agent.invoke({"messages": [HumanMessage("Oslo?")]}, thread("t"))
    agent.invoke({"messages": [HumanMessage("Bergen?")]}, thread("t"))
    assert fallback.calls == [[SYSTEM, "Oslo?"]]
    assert model.calls[-1] == [SYSTEM, "Oslo?", "First.", "Bergen?"]
    assert [m for _, m in held(sessions, "t")] == [SYSTEM[:12], "Oslo?", "First.", "Bergen?"]


def test_after_a_tool_raised_the_next_run_works_and_the_retrieve_tool_answers() -> None:
    sessions = SessionMiddleware(window=4_000, model="gpt-4")
    model = ScriptedModel(
        script=[
            call("book", {"city": "Oslo"}),
            call(RETRIEVE_TOOL_NAME, {"artifact": "art_missing", "regex": "x"}, "c2"),
            AIMessage("Sorry."),
        ]
    )
    agent = agent_with(model, sessions)
    with pytest.raises(RuntimeError, match="booking service"):
        agent.invoke({"messages": [HumanMessage("Book Oslo.")]}, thread("t"))
    state = agent.invoke({"messages": [HumanMessage("Try again?")]}, thread("t"))
    # The retrieve tool answered (an error the model can read), and the run went on.
    assert "art_missing" in state["messages"][-2].text
    assert state["messages"][-1].text == "Sorry."
    # The call left without a result is not sent again: a provider refuses it.
    assert model.calls[1] == [SYSTEM, "Book Oslo.", "Try again?"]
    roles = [role for role, _ in held(sessions, "t")]
    assert roles == ["system", "user", "assistant", "user", "assistant", "tool"]


def test_a_run_interrupted_for_approval_and_resumed_gives_each_message_once() -> None:
    sessions = SessionMiddleware(window=4_000, model="gpt-4")
    model = ScriptedModel(script=[call("forecast", {"city": "Oslo"}), AIMessage("Rain.")])
    approval = HumanInTheLoopMiddleware(interrupt_on={"forecast": True})
    agent = agent_with(model, sessions, approval)
    state = agent.invoke({"messages": [HumanMessage("Oslo?")]}, thread("t"))
    assert state["__interrupt__"]
    resume: Command[Any] = Command(resume={"decisions": [{"type": "approve"}]})
    assert agent.invoke(resume, thread("t"))["messages"][-1].text == "Rain."
    roles = [role for role, _ in held(sessions, "t")]
    assert roles == ["system", "user", "assistant", "tool"]


class RacingSaver(InMemorySaver):
    """A checkpointer whose next two reads wait for each other: two runs of a thread started
    at once, both from the thread's last checkpoint."""

    def __init__(self) -> None:
        super().__init__()
        self.barrier: threading.Barrier | None = None

    def get_tuple(self, config: Any) -> Any:
        barrier = self.barrier
        read = super().get_tuple(config)
        if barrier is not None:
            # Both runs have read before either goes on: waiting before the read let one run,
            # late to be scheduled, read the checkpoint the other had already written (its
            # question in it), a history that grew, rightly served.
            barrier.wait(timeout=60)  # a loaded machine may start the second run late
            self.barrier = None  # the runs' later reads go as they come
        return read


def test_two_runs_of_one_thread_at_once_are_refused_by_name() -> None:
    sessions = SessionMiddleware(window=4_000, model="gpt-4")
    model = ScriptedModel(script=[AIMessage(f"r{k}") for k in range(4)], delay=0.2)
    saver = RacingSaver()
    agent: Any = create_agent(
        model, system_prompt=SYSTEM, middleware=[sessions], checkpointer=saver
    )
    agent.invoke({"messages": [HumanMessage("q0")]}, thread("t"))
    errors: list[Exception] = []
    others: list[BaseException] = []

    def run(question: str) -> None:
        try:
            agent.invoke({"messages": [HumanMessage(question)]}, thread("t"))
        except ConfigError as error:
            errors.append(error)
        except BaseException as error:  # reported below, not lost in the thread
            others.append(error)

    saver.barrier = threading.Barrier(2)
    runs = [threading.Thread(target=run, args=(q,)) for q in ("qA", "qB")]
    for each in runs:
        each.start()
    for each in runs:
        each.join()
    # One run was served; the other is refused before its model call, naming the message as
    # the agent's state holds it (index 2: q0, r0, the question) and the likely cause.
    assert others == []
    assert len(errors) == 1, held(sessions, "t")
    (error,) = errors
    assert "message 2 of the agent's messages" in str(error)
    assert "two runs of the thread at once" in str(error)
    won = [m for _, m in held(sessions, "t")][-1]
    assert won in ("qA", "qB")
    agent.invoke({"messages": [HumanMessage("q3")]}, thread("t"))
    assert [m for _, m in held(sessions, "t")] == [SYSTEM[:12], "q0", "r0", won, "r1", "q3"]


def test_an_async_run_cancelled_mid_model_call_leaves_the_thread_usable() -> None:
    sessions = SessionMiddleware(window=4_000, model="gpt-4")
    model = ScriptedModel(script=[AIMessage("r0"), AIMessage("lost"), AIMessage("r2")], delay=0.2)
    agent = agent_with(model, sessions)

    async def main() -> dict[str, Any]:
        await agent.ainvoke({"messages": [HumanMessage("q0")]}, thread("t"))
        started = model.started_calls()
        task = asyncio.create_task(agent.ainvoke({"messages": [HumanMessage("q1")]}, thread("t")))
        # Cancelled once the model call is under way: a fixed pause let a busy machine cancel
        # the run before it, while it packed the request.
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        state: dict[str, Any] = await agent.ainvoke({"messages": [HumanMessage("q2")]}, thread("t"))
        return state

    assert asyncio.run(main())["messages"][-1].text == "lost"  # the script's next reply
    assert [m for _, m in held(sessions, "t")] == [SYSTEM[:12], "q0", "r0", "q1", "q2"]
    assert model.calls[-1] == [SYSTEM, "q0", "r0", "q1", "q2"]


def test_a_history_that_diverged_names_the_message_in_the_agent_s_state() -> None:
    sessions = SessionMiddleware(window=4_000, model="gpt-4")
    model = ScriptedModel(script=[AIMessage("Hi.")] * 2)
    agent_with(model, sessions).invoke({"messages": [HumanMessage("a")]}, thread("t"))
    # Another checkpointer (a lost one, or a run from an earlier checkpoint): another history.
    other = agent_with(model, sessions)
    with pytest.raises(ConfigError, match="message 0 of the agent's messages") as caught:
        other.invoke({"messages": [HumanMessage("b")]}, thread("t"))
    assert "delete_thread('t')" in str(caught.value)
    assert "to retry a request" not in str(caught.value)  # a client wrapper's advice


@pytest.mark.parametrize("bad", [None, "", True, 1.5, b"t"])
def test_a_bad_thread_id_is_refused_by_name(bad: Any) -> None:
    sessions = SessionMiddleware(window=4_000, model="gpt-4")
    for method in (sessions.session, sessions.delete_thread, sessions.last_result_for):
        with pytest.raises(ConfigError, match="thread_id"):
            method(bad)


def test_a_thread_id_that_is_a_number_is_the_same_thread_everywhere() -> None:
    sessions = SessionMiddleware(window=4_000, model="gpt-4")
    agent = agent_with(ScriptedModel(script=[AIMessage("Hi.")]), sessions)
    agent.invoke({"messages": [HumanMessage("a")]}, {"configurable": {"thread_id": 7}})
    assert [m for _, m in held(sessions, 7)] == [SYSTEM[:12], "a"]
    assert sessions.last_result_for(7) is sessions.last_result_for("7") is not None


def test_an_empty_thread_id_in_the_config_is_refused_by_name() -> None:
    sessions = SessionMiddleware(window=4_000, model="gpt-4")
    agent = agent_with(ScriptedModel(script=[AIMessage("Hi.")]), sessions)
    with pytest.raises(ConfigError, match="thread_id"):
        agent.invoke({"messages": [HumanMessage("a")]}, thread(""))


def test_no_window_is_refused_without_naming_an_argument_it_does_not_take() -> None:
    with pytest.raises(ConfigError, match="window") as caught:
        SessionMiddleware(window=cast(Any, None))
    assert "budget" not in str(caught.value)
