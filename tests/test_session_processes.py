"""Sessions and the objects around them given to another process: pickled (they do not travel,
and say what to pass instead) or copied by ``os.fork`` while another thread is using them (the
child's copy works, or says that it cannot be used; it never hangs)."""

from __future__ import annotations

import asyncio
import pickle
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxpack import AsyncSession, Session
from ctxpack._internal import forks
from ctxpack.code import CodeIndex
from ctxpack.errors import CtxpackError, ForkedWhileBusyError, NotPicklableError
from ctxpack.pipeline import PackContext
from ctxpack.store import open_store

from .forks import fork, forked_while_held, needs_fork, succeeded


def test_a_session_in_memory_does_not_pickle_and_says_what_to_do() -> None:
    session = Session(model="gpt-4")
    session.append({"role": "user", "content": "hi"})
    with pytest.raises(NotPicklableError, match=r"Session does not pickle.*Session\.open"):
        pickle.dumps(session)


def test_a_stored_session_does_not_pickle_and_names_its_id(tmp_path: Path) -> None:
    session = Session.open("u1", store=f"sqlite:///{tmp_path / 's.db'}", model="gpt-4")
    with pytest.raises(TypeError, match=r"Session\.open\('u1', store=") as caught:
        pickle.dumps(session)
    assert isinstance(caught.value, CtxpackError)
    session.close()


def test_a_store_an_index_and_an_async_session_do_not_pickle(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    with pytest.raises(NotPicklableError, match="store URL"):
        pickle.dumps(store)
    store.close()
    with pytest.raises(NotPicklableError, match=r"CodeIndex\("):
        pickle.dumps(CodeIndex(tmp_path, db=":memory:"))

    async def main() -> None:
        session = await AsyncSession.open("u1", store="memory://", model="gpt-4")
        with pytest.raises(NotPicklableError, match=r"AsyncSession\.open"):
            pickle.dumps(session)
        await session.close()

    asyncio.run(main())


class Blocking:
    """A stage that holds its session's render until told to go on."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.go_on = threading.Event()

    def __call__(self, ctx: PackContext) -> PackContext:
        if not self.entered.is_set():
            self.entered.set()
            self.go_on.wait(30)
        return ctx


@pytest.fixture
def short_wait(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(forks, "CALL_WAIT", 0.2)
    yield


def _rendering_in_another_thread() -> tuple[Session, Blocking, threading.Thread]:
    """A session that another thread renders, held inside its pipeline until
    ``stage.go_on`` is set; that thread."""
    stage = Blocking()
    session = Session(model="gpt-4", pipeline=stage)
    session.append({"role": "user", "content": "hello"})
    rendering = threading.Thread(target=session.render)
    rendering.start()
    stage.entered.wait(30)
    return session, stage, rendering


@needs_fork
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # forking with threads (3.12+)
def test_a_fork_waits_for_another_threads_session_call_and_the_child_goes_on() -> None:
    # The session's lock, held by a thread the child does not have, was never released there:
    # the child's first call hung.
    session, stage, rendering = _rendering_in_another_thread()
    threading.Timer(0.3, stage.go_on.set).start()  # the call ends while the fork waits

    def child() -> None:
        session.append({"role": "assistant", "content": "hi there"})
        assert [m.text for m in session.render().messages] == ["hello", "hi there"]

    pid = fork(child)
    rendering.join()
    assert succeeded(pid, timeout=20)


@needs_fork
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_session_busy_past_the_wait_at_a_fork_is_refused_in_the_child(short_wait: None) -> None:
    session, stage, rendering = _rendering_in_another_thread()

    def child() -> None:
        with pytest.raises(ForkedWhileBusyError, match="another thread"):
            session.append({"role": "assistant", "content": "hi there"})

    pid = fork(child)
    stage.go_on.set()
    rendering.join()
    assert succeeded(pid, timeout=20)
    session.append({"role": "assistant", "content": "hi there"})  # the parent's goes on


@needs_fork
def test_an_async_session_busy_at_a_fork_is_refused_in_the_child() -> None:
    # A task held its lock at the fork: in the child, which runs none of the parent's tasks,
    # the lock was never released, and the child's first call waited for ever.
    async def main() -> int:
        session = await AsyncSession.open("u1", store="memory://", model="gpt-4")
        await session.append({"role": "user", "content": "hello"})
        async with session._turn():  # a task of the parent in the middle of a call

            def child() -> None:
                async def use() -> None:
                    await session.append({"role": "assistant", "content": "hi"})

                with pytest.raises(ForkedWhileBusyError, match="task"):
                    asyncio.run(use())

            pid = fork(child)
        await session.append({"role": "assistant", "content": "hi"})
        return pid

    assert succeeded(asyncio.run(main()), timeout=20)


@needs_fork
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_fork_waits_for_another_threads_code_index_call(tmp_path: Path) -> None:
    # The index's lock, held by a thread the child does not have, hung the child's search.
    (tmp_path / "limits.py").write_text("def throttle(request):\n    return request\n")
    index = CodeIndex(tmp_path, db=str(tmp_path / "index.db"), workers=1)
    index.refresh()

    def child() -> None:
        assert [hit.path for hit in index.search("throttle", k=1)] == ["limits.py"]

    # The lock held by a call in the middle of a refresh, which ends while the fork waits.
    assert succeeded(forked_while_held(index._lock, child=child, release_after=0.3), timeout=20)


@needs_fork
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_fork_waits_for_another_threads_wrapped_request_with_a_session() -> None:
    # The wrapper's lock over feeding and rendering its session, held by a thread the child
    # does not have, hung the child's first request.
    from ctxpack.integrations import wrap_openai

    from .sdk_mock import Capture, chat_completion, openai_client

    capture = Capture(chat_completion({"role": "assistant", "content": "hi"}))
    stage = Blocking()
    session = Session(model="gpt-4", pipeline=stage)
    sdk = openai_client(capture)
    client = wrap_openai(sdk, session=session, window=8_000)
    # The SDK builds what it sends lazily, under locks of its own (its headers name the
    # platform, read once by running `uname -p` under functools.cached_property's lock):
    # forked while the asking thread was there, the child waited on such a lock for ever, and
    # the thread on the pipe the child held open. One request first, past the wrapper.
    sdk.chat.completions.create(model="gpt-4", messages=[{"role": "user", "content": "warm"}])

    first = [{"role": "user", "content": "hello"}]
    then = [*first, {"role": "assistant", "content": "hi"}, {"role": "user", "content": "and?"}]

    def ask(messages: list[dict[str, str]]) -> None:
        client.chat.completions.create(model="gpt-4", max_tokens=100, messages=messages)

    asking = threading.Thread(target=ask, args=(first,))
    asking.start()
    stage.entered.wait(30)
    threading.Timer(0.3, stage.go_on.set).start()
    pid = fork(lambda: ask(then))
    asking.join()
    assert succeeded(pid, timeout=20)


@needs_fork
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_cache_busy_in_another_thread_at_a_fork_works_in_the_child() -> None:
    # A cache's lock (a token count being stored) and the caches' registry lock, held by a
    # thread the child does not have, hung the child's first count and clear_caches().
    from ctxpack import caches

    @caches.memoize(maxsize=10, maxbytes=10_000)
    def shout(text: str) -> str:
        return text.upper()

    shout("hi")

    def child() -> None:
        assert shout("hi") == "HI"
        caches.clear_caches()
        assert shout("ho") == "HO"

    # In the middle of a put and of a register.
    locks = (shout._cache._lock, caches._REGISTRY_LOCK)
    assert succeeded(forked_while_held(*locks, child=child), timeout=20)
    assert shout("hi") == "HI"


@needs_fork
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_memory_store_busy_past_the_wait_at_a_fork_is_refused_in_the_child(
    short_wait: None,
) -> None:
    # Its lock, held by a thread the child does not have, hung the child's first call.
    from ctxpack.errors import StoreError

    store = open_store("memory://")
    store.append("u1", "e0", version=0, state="{}")

    def child() -> None:
        with pytest.raises(StoreError, match="in-memory store when the process forked"):
            store.load("u1")

    # The lock held in the middle of an append.
    pid = forked_while_held(store._lock, child=child)  # type: ignore[attr-defined]
    assert succeeded(pid, timeout=20)
    assert store.load("u1").version == 1


@needs_fork
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_messages_converted_in_another_thread_at_a_fork_do_not_hang_the_child() -> None:
    # The lock over the histories converted last, held by a thread the child does not have
    # (in the middle of remembering one), hung the child's first pack.
    from ctxpack import pack
    from ctxpack.messages import _owned

    history = [{"role": "user", "content": "hello"}]
    pack(history, budget=1_000, model="gpt-4")

    def child() -> None:
        assert [m.text for m in pack(history, budget=1_000, model="gpt-4").messages] == ["hello"]

    # The lock held in the middle of remembering a history.
    assert succeeded(forked_while_held(_owned._RECENT.lock, child=child), timeout=20)
