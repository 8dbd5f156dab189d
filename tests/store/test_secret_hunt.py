"""A stored session hunts the secret values any replica found, after a restart too, without
the store ever holding them; erasing the session erases what it found."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ctxpack import AsyncSession, Session
from ctxpack.store import MemoryStore, SessionStore, open_async_store

from ..threads import run_threads, switching_often
from .backends import backend_url

PASSWORD = "Vq8nT2zLp4Rw"
ENV = f"DB_HOST=db.internal\nDB_PASSWORD={PASSWORD}\n"


def _exchange(i: int, output: str) -> list[dict[str, Any]]:
    call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": output},
    ]


def test_a_replica_hunts_what_another_found(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    first = Session.open(session_id, store=replicas(), model="gpt-4", filters=False)
    second = Session.open(session_id, store=replicas(), model="gpt-4", filters=False)
    first.extend(_exchange(1, ENV))
    second.extend(_exchange(2, f"{PASSWORD}\n"))
    assert second.transcript()[-1].text == "[REDACTED secret-assignment]\n"
    # A replica opened later, and the first one after its next append, hunt it too.
    first.extend(_exchange(3, PASSWORD))
    third = Session.open(session_id, store=replicas(), model="gpt-4", filters=False)
    third.extend(_exchange(4, f"pw={PASSWORD}"))
    texts = [m.text for m in third.transcript()]
    assert texts[-3] == "[REDACTED secret-assignment]"
    assert PASSWORD not in json.dumps([m.model_dump() for m in third.transcript()])


def test_erasing_the_session_erases_what_it_found(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    store = replicas()
    session = Session.open(session_id, store=store, model="gpt-4", filters=False)
    session.extend(_exchange(1, ENV))
    store.delete_session(session_id)
    stored = store.load(session_id)
    assert stored.version == 0 and stored.state is None and not stored.entries
    again = Session.open(session_id, store=replicas(), model="gpt-4", filters=False)
    again.extend(_exchange(2, PASSWORD))
    assert again.transcript()[-1].text == PASSWORD
    # The live object that found it forgets it with the erasure.
    session.extend(_exchange(3, PASSWORD))
    assert session.transcript()[-1].text == PASSWORD


def test_the_sqlite_file_never_holds_the_value(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    first = Session.open("s", store=url, model="gpt-4", filters=False)
    first.extend(_exchange(1, ENV))
    second = Session.open("s", store=url, model="gpt-4", filters=False)
    second.extend(_exchange(2, f"{PASSWORD}\n"))
    assert second.transcript()[-1].text == "[REDACTED secret-assignment]\n"
    first.close()
    second.close()
    restarted = Session.open("s", store=url, model="gpt-4", filters=False)
    restarted.extend(_exchange(3, f"echo {PASSWORD}"))
    assert restarted.transcript()[-1].text == "echo [REDACTED secret-assignment]"
    restarted.close()
    raw = b"".join(path.read_bytes() for path in tmp_path.iterdir())
    assert PASSWORD.encode() not in raw


def test_async_replicas_hunt_what_another_found(
    backend: str, tmp_path: Path, session_id: str
) -> None:
    url = backend_url(backend, tmp_path)
    shared = MemoryStore()

    def store() -> Any:
        return shared if backend == "memory" else open_async_store(url)

    async def main() -> str:
        first = await AsyncSession.open(session_id, store=store(), model="gpt-4", filters=False)
        second = await AsyncSession.open(session_id, store=store(), model="gpt-4", filters=False)
        await first.extend(_exchange(1, ENV))
        await second.extend(_exchange(2, PASSWORD))
        text = (await second.transcript())[-1].text
        for s in (first, second):
            await s.store.close()
        return text

    assert asyncio.run(main()) == "[REDACTED secret-assignment]"


def test_replicas_finding_secrets_at_once_lose_none(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    writers = 4
    sessions = [
        Session.open(session_id, store=replicas(), model="gpt-4", filters=False)
        for _ in range(writers)
    ]
    values = [f"Zq{w}xT7mLp4Rw9k" for w in range(writers)]

    def work(w: int) -> None:
        for k in range(3):
            sessions[w].extend(_exchange(10 * w + k, f"API_SECRET_{w}_{k}={values[w]}{k}"))

    with switching_often():
        run_threads(work, writers)
    reader = Session.open(session_id, store=replicas(), model="gpt-4", filters=False)
    echoed = " ".join(f"{v}{k}" for v in values for k in range(3))
    reader.extend(_exchange(99, echoed))
    assert reader.transcript()[-1].text == " ".join(["[REDACTED generic-api-key]"] * 12)


def test_no_replica_sends_a_value_another_found_after_it_was_printed(
    replicas: Callable[[], SessionStore], session_id: str
) -> None:
    first = Session.open(session_id, store=replicas(), model="gpt-4", filters=False)
    second = Session.open(session_id, store=replicas(), model="gpt-4", filters=False)
    first.extend(_exchange(1, f"{PASSWORD}\n"))
    assert first.render().messages[1].text == f"{PASSWORD}\n"  # not yet known
    second.extend(_exchange(2, ENV))
    for replica in (first, second):
        sent = replica.render()
        assert PASSWORD not in json.dumps(sent.to_openai())
        assert sent.messages[1].text == "[REDACTED secret-assignment]\n"
    restarted = Session.open(session_id, store=replicas(), model="gpt-4", filters=False)
    assert PASSWORD not in json.dumps(restarted.render().to_openai())


def test_two_sqlite_replicas_never_send_a_value_found_after_it_was_printed(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    first = Session.open("s", store=url, model="gpt-4", filters=False)
    second = Session.open("s", store=url, model="gpt-4", filters=False)
    first.extend(_exchange(1, f"echo done: {PASSWORD}\n"))
    second.extend(_exchange(2, ENV))
    assert first.render().messages[1].text == "echo done: [REDACTED secret-assignment]\n"
    assert PASSWORD not in json.dumps(second.render(budget=2_000).to_openai())
    first.close()
    second.close()


def test_async_replicas_never_send_a_value_found_after_it_was_printed(
    backend: str, tmp_path: Path, session_id: str
) -> None:
    url = backend_url(backend, tmp_path)
    shared = MemoryStore()

    def store() -> Any:
        return shared if backend == "memory" else open_async_store(url)

    async def main() -> list[str]:
        first = await AsyncSession.open(session_id, store=store(), model="gpt-4", filters=False)
        second = await AsyncSession.open(session_id, store=store(), model="gpt-4", filters=False)
        await first.extend(_exchange(1, PASSWORD))
        await second.extend(_exchange(2, ENV))
        sent = [json.dumps((await s.render()).to_openai()) for s in (first, second)]
        for s in (first, second):
            await s.store.close()
        return sent

    assert not [sent for sent in asyncio.run(main()) if PASSWORD in sent]


def test_an_async_replica_retrieves_an_earlier_original_without_a_value_found_elsewhere(
    backend: str, tmp_path: Path, session_id: str
) -> None:
    url = backend_url(backend, tmp_path)
    shared = MemoryStore()
    log = "\n".join(f"12:00:{i % 60:02d} INFO worker {i} connected" for i in range(400))

    def store() -> Any:
        return shared if backend == "memory" else open_async_store(url)

    async def main() -> tuple[str, str]:
        first = await AsyncSession.open(session_id, store=store(), model="gpt-4")
        second = await AsyncSession.open(session_id, store=store(), model="gpt-4")
        await first.extend(_exchange(1, f"{log}\nERROR bad password {PASSWORD}\n"))
        (artifact,) = [r.artifact for r in await first.records() if r.artifact]
        await second.extend(_exchange(2, ENV))
        read = (await first.retrieve(artifact, lines="401")).text
        answer = await first.handle({"artifact": artifact, "lines": "401"})
        for s in (first, second):
            await s.store.close()
        return read, answer

    read, answer = asyncio.run(main())
    assert read == "ERROR bad password [REDACTED secret-assignment]"
    assert PASSWORD not in answer
