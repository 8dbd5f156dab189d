"""SessionMiddleware on a stored session that replicas share: LangGraph threads served by
either replica, on threads switching often, on every backend; each message reaches its
thread's session once, and every model call fits the window."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from ctxpack.integrations.langchain_agent import SessionMiddleware
from ctxpack.store import MemoryStore, SessionStore

from ..adapters.test_langchain_agent import prompt_tokens
from ..adapters.test_langchain_session import SYSTEM, WINDOW, AgentModel, agent_with, thread
from ..threads import run_threads, switching_often


def test_replicas_serve_threads_with_one_session_each(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    saver = InMemorySaver()  # the graph's state, shared as a database checkpointer would be
    model = AgentModel(reads=2)
    middlewares = [SessionMiddleware(window=WINDOW, model="gpt-4", store=replicas()) for _ in "ab"]
    agents = [agent_with(m, model, saver) for m in middlewares]
    workers, turns = 4, 3

    def work(worker: int) -> None:
        config = thread(f"{session_id}-{worker}")
        for turn in range(turns):
            # Behind a load balancer: a thread's turns land on either replica.
            agent = agents[(worker + turn) % len(agents)]
            agent.invoke({"messages": [HumanMessage(f"Worker {worker}, task {turn}.")]}, config)

    with switching_often():
        run_threads(work, workers)

    for worker in range(workers):
        name = f"{session_id}-{worker}"
        state = agents[0].get_state(thread(name)).values["messages"]
        # What either replica reads: the system prompt and the graph's history, each message
        # once, in order; only the last reply is still to come, with the next request.
        for middleware in middlewares:
            held = [(m.role, m.text) for m in middleware.session(name).transcript()]
            graph = [(SystemMessage(SYSTEM).type, SYSTEM)] + [
                ({"human": "user", "ai": "assistant"}.get(m.type, m.type), m.text)
                for m in state[:-1]
            ]
            assert held == [("system", SYSTEM), *graph[1:]]
    policy = middlewares[0].policy
    assert policy is not None and model.seen
    for seen in model.seen:
        assert prompt_tokens(seen) <= WINDOW - policy.reserve
    for worker in range(workers):
        # The replica that served a thread's last turn holds that turn's request, whatever the
        # other threads did meanwhile.
        name = f"{session_id}-{worker}"
        last = middlewares[(worker + turns - 1) % len(middlewares)].last_result_for(name)
        assert last is not None
        # A compaction's summary of the turn's own reads may follow its task.
        asked = [
            m.text
            for m in last.messages
            if m.role == "user" and "summary_of" not in m.metadata.get("ctxpack", {})
        ]
        assert asked[-1] == f"Worker {worker}, task {turns - 1}."
    # Erasing a thread from one replica erases it for the other.
    erased = f"{session_id}-0"
    middlewares[0].delete_thread(erased)
    for middleware in middlewares:
        assert middleware.session(erased).transcript() == []
    assert middlewares[1].session(f"{session_id}-1").transcript()


class _HeldStore(MemoryStore):
    """A store whose appends wait for ``release``, in the worker thread packing."""

    def __init__(self) -> None:
        super().__init__()
        self.started, self.release = threading.Event(), threading.Event()
        self.appended = 0

    def append(self, *args: Any, **kwargs: Any) -> None:
        self.started.set()
        assert self.release.wait(10)
        super().append(*args, **kwargs)
        self.appended += 1


def test_an_async_run_cancelled_while_its_session_is_written_raises_once_it_is_written() -> None:
    # An async agent's request is packed (its session written) in a worker thread: cancelled
    # meanwhile, the run raised at once while the thread went on writing the session's store.
    store = _HeldStore()
    agent = agent_with(
        SessionMiddleware(window=WINDOW, model="gpt-4", store=store),
        AgentModel(reads=0),
        InMemorySaver(),
    )

    async def main() -> tuple[bool, int]:
        run = agent.ainvoke({"messages": [HumanMessage("Fix the auth test.")]}, thread("t"))
        task = asyncio.ensure_future(run)
        assert await asyncio.to_thread(store.started.wait, 10)
        task.cancel()
        for _ in range(50):  # loop steps, for the cancellation to reach the run
            await asyncio.sleep(0)
        left_early = task.done() and not store.appended
        store.release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        return left_early, store.appended

    left_early, appended = asyncio.run(main())
    assert not left_early
    assert appended
