"""AsyncSession.handle takes what Session.handle takes, in its type hints as at run time: a call
as a dict, as the SDK's own object, or its arguments as JSON."""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import Any

from anthropic.types import ToolUseBlock
from openai.types.chat import ChatCompletion

from ctxpack import AsyncSession, Session
from ctxpack.retrieval import RETRIEVE_TOOL_NAME

from .sdk_mock import chat_completion
from .store.test_sessions import PYTEST, turn

# The one parameter an AsyncSession method may take more of: open()'s store, an async one too.
_WIDER = {("open", "store")}


def test_every_shared_method_has_the_session_methods_parameter_types() -> None:
    # AsyncSession.handle was hinted call: Mapping[str, Any] where Session.handle takes
    # Mapping[str, Any] | SDKObject | str: under mypy --strict, a caller passing the SDK's
    # tool call (what the docs show, `response.choices[0].message.tool_calls[0]`) to the
    # async session was refused, though it runs.
    shared = {
        n
        for n in dir(AsyncSession)
        if not n.startswith("_")
        and all(callable(getattr(cls, n, None)) for cls in (AsyncSession, Session))
    }
    assert "handle" in shared
    for name in sorted(shared):
        mine = inspect.signature(getattr(AsyncSession, name)).parameters
        theirs = inspect.signature(getattr(Session, name)).parameters
        for parameter, hint in ((p, q.annotation) for p, q in mine.items() if p in theirs):
            if (name, parameter) not in _WIDER:
                assert hint == theirs[parameter].annotation, (name, parameter)


def _calls(artifact: str) -> list[Any]:
    """One retrieve call as each form Session.handle takes: a dict, the SDK's object, the
    arguments' JSON, and an Anthropic tool_use block (a dict, the SDK's object)."""
    arguments = json.dumps({"artifact": artifact, "lines": "1-2"})
    call = {
        "id": "r1",
        "type": "function",
        "function": {"name": RETRIEVE_TOOL_NAME, "arguments": arguments},
    }
    reply = chat_completion({"role": "assistant", "content": None, "tool_calls": [call]})
    sdk_call = ChatCompletion.model_validate(reply).choices[0].message.tool_calls[0]  # type: ignore[index]
    tool_use = {"type": "tool_use", "id": "r2", "name": RETRIEVE_TOOL_NAME}
    sdk_block = ToolUseBlock.model_validate({**tool_use, "input": json.loads(arguments)})
    block = {**tool_use, "input": json.loads(arguments)}
    return [call, sdk_call, arguments, block, sdk_block]


def test_async_handle_answers_every_call_form_session_handle_takes() -> None:
    async def answers() -> list[str]:
        session = await AsyncSession.open("h", store="memory://", model="gpt-4o")
        await session.extend(turn(1))
        (record,) = [r for r in await session.records() if r.shortened]
        assert record.artifact is not None
        return [await session.handle(c) for c in _calls(record.artifact)]

    first, *others = asyncio.run(answers())
    assert PYTEST.splitlines()[0] in first
    assert others == [first] * len(others)
