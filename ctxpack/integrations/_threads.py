"""LangGraph threads as the agent middlewares see them: the thread a call runs in, a thread id
given by the application, and what to say when a thread's history is not its session's."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from .._internal.arguments import shown
from ..errors import ConfigError
from ._session_feed import HistoryChangedError

__all__: list[str] = []


def thread_key(thread_id: Any) -> str:
    """``thread_id`` as the key of its session and results: LangGraph takes a str, an int or a
    UUID in ``config["configurable"]["thread_id"]``, and a thread is the same whichever the
    application spells it with."""
    if isinstance(thread_id, bool) or not isinstance(thread_id, (str, int, uuid.UUID)):
        raise ConfigError(
            f"thread_id must be a LangGraph thread id (a non-empty str, an int or a UUID), "
            f"got {shown(thread_id)}"
        )
    key = str(thread_id)
    if not key:
        raise ConfigError("thread_id must be a non-empty str, got ''")
    return key


def thread_id(runtime: Any) -> str:
    """The LangGraph thread a model or tool call runs in."""
    thread = thread_id_or_none(runtime)
    if thread is None:
        raise ConfigError(
            "SessionMiddleware keeps one session per LangGraph thread: invoke the agent with "
            "config={'configurable': {'thread_id': ...}} (and a checkpointer, so that the "
            "thread's history is kept between invocations)"
        )
    try:
        return thread_key(thread)
    except ConfigError as error:
        raise ConfigError(f"config['configurable']['thread_id']: {error}") from None


def thread_id_or_none(runtime: Any) -> Any:
    """The LangGraph thread id a model or tool call runs in, as given; ``None`` for a run
    without one."""
    thread = getattr(getattr(runtime, "execution_info", None), "thread_id", None)
    if thread is None:
        config = getattr(runtime, "config", None)  # a tool's runtime has the run's config
        if not isinstance(config, Mapping):
            try:
                from langgraph.config import get_config

                config = get_config()
            except RuntimeError:  # outside a graph run
                config = {}
        configurable = config.get("configurable")
        thread = configurable.get("thread_id") if isinstance(configurable, Mapping) else None
    return thread


def diverged(thread: str, error: HistoryChangedError, system: bool) -> ConfigError:
    """The error for a request of ``thread`` whose history is not the one its session was
    given, naming the message as the agent's state holds it (``system``: the request has a
    system message, first in the history the session is given)."""
    if system and error.index == 0:  # a system prompt the session's history opened without
        return ConfigError(f"LangGraph thread {thread!r}: {error}")
    index = error.index - 1 if system else error.index
    return ConfigError(
        f"LangGraph thread {thread!r}: message {index} of the agent's messages is not the one "
        "the thread's session was given, and a thread's history may only grow. The causes: "
        "two runs of the thread at once (run one at a time per thread_id); a run from an "
        "earlier checkpoint (give the fork a thread_id of its own); a thread deleted from the "
        f"checkpointer alone (SessionMiddleware.delete_thread({thread!r}) erases its session "
        "too); a history rewritten in place (LangChain's SummarizationMiddleware, which cannot "
        "go through a session)"
    )
